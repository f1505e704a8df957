"""The team kernel's mapping onto attngate's case (attngate_jax.api, version 1): what the
adapter imports through the entry point `team-blocked = team_attention.gate:make`."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from attngate_jax.api import Case, KernelAdapter, Mode, Tensors, as_output, operand

from .blocked import blocked_attention

BLOCK = 128


class TeamBlocked(KernelAdapter):
    api_version = 1
    name = "team-blocked"
    features = ("causal", "gqa", "f32", "bf16")
    rounds_to_case_dtype = ("output", "probabilities")  # bf16 output; exp(s - max) cast to V's dtype
    masked_nan_leaks = ("v",)  # a masked key's p is 0, and 0 * NaN in V is NaN
    notes = {"layout": "[B, H, S, D]", "causal": "offset = Sk - Sq (bottom-right) or 0 (top-left)"}

    def description(self, mode: Mode) -> str:
        return f"team_attention.blocked_attention, Pallas, {BLOCK}x{BLOCK} blocks ({mode.description})"

    @staticmethod
    def blocks(case: Case) -> tuple[int, int]:
        return case.block_q or BLOCK, case.block_k or BLOCK

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        bq, bk = self.blocks(case)
        if case.seq_q % bq or case.seq_k % bk:
            return f"seq_q {case.seq_q} and seq_k {case.seq_k} must be multiples of the blocks ({bq}, {bk})"
        return None

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        bq, bk = self.blocks(case)
        return jax.jit(functools.partial(blocked_attention, sm_scale=case.scale, causal=case.causal, offset=case.offset,
                                         block_q=bq, block_k=bk, interpret=mode.interpret))

    def prepare(self, case: Case, tensors: Tensors, mode: Mode) -> tuple[Any, ...]:
        return tuple(jax.device_put(tuple(np.ascontiguousarray(operand(tensors[r], case).transpose(0, 2, 1, 3))
                                          for r in ("q", "k", "v"))))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out).transpose(0, 2, 1, 3)


def make() -> list[KernelAdapter]:
    return [TeamBlocked()]
