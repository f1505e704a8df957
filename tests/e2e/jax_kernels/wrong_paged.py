"""Two pallas-paged mappings, each with one convention deliberately wrong, for the paged
goldens to catch: `adapter.py --kernels wrong_paged:make`.

- wrong-paged-gqa-modulo: query head h reads kv head h % Hkv (attngate: h // (Hq / Hkv)):
  the real paged_attention, given the query heads in the order that makes its h // g
  grouping read kv head h % Hkv;
- wrong-paged-unscaled: q handed to paged_attention without the scale (it has no scale
  argument, so forgetting to pre-scale is the mistake its API invites);
- wrong-paged-undeclared-reads: the right mapping without the reads_unreadable_slots
  declaration, so attngate's NaN in the slots past kv_len reach it (it loads whole pages)."""
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from attngate_jax.api import Case, Mode, Tensors, as_output, operand
from attngate_jax.kernels.paged import PallasPaged


def modulo_order(case: Case) -> np.ndarray:
    """Query heads ordered so that positions c*g .. c*g+g-1 hold the heads h with h % Hkv == c."""
    g = case.heads_q // case.heads_kv
    return np.array([c + m * case.heads_kv for c in range(case.heads_kv) for m in range(g)])


class GqaModulo(PallasPaged):
    name = "wrong-paged-gqa-modulo"

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        q, *rest = super().prepare(case, t, mode)
        return (q[:, modulo_order(case)], *rest)

    def finish(self, case: Case, out: Any) -> np.ndarray:
        wrong = as_output(out)
        back = np.empty_like(wrong)
        back[:, modulo_order(case)] = wrong
        return back


class Unscaled(PallasPaged):
    name = "wrong-paged-unscaled"

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        k = np.ascontiguousarray(operand(t["k_pages"], case).transpose(2, 0, 1, 3))
        v = np.ascontiguousarray(operand(t["v_pages"], case).transpose(2, 0, 1, 3))
        return tuple(jax.device_put((t["q"].astype(np.float32), k, v, t["kv_lens"], t["page_table"])))


class UndeclaredReads(PallasPaged):
    name = "wrong-paged-undeclared-reads"
    reads_unreadable_slots = ()


def make() -> list[PallasPaged]:
    return [GqaModulo(), Unscaled(), UndeclaredReads()]
