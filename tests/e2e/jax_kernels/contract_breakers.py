"""Two Pallas kernels that break the TPU's contract on purpose, for the interpreter's checks
(adapter.py --interpret-checks --kernels contract_breakers:make):
- racy-pallas: a grid of 2 "parallel" points both writing output block 0 (a write-write
  race once the points run on 2 cores);
- oob-pallas: each grid point reads 8 rows starting 4 rows before its block's end, so 4 rows
  past the block's bounds.
Each copies V instead of attending (its golden fails too: the contract is what is tested).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from attngate_jax.api import Case, KernelAdapter, Mode, Tensors, as_output
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS = 8


class ContractBreaker(KernelAdapter):
    api_version = 1
    features = ("f32",)

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        if case.paged is not None or case.head_dim_v != case.head_dim or case.heads_q != case.heads_kv:
            return f"{self.name} copies V: dense cases with one head_dim and equal head counts only"
        if (case.batch * case.seq_q * case.heads_q) % (2 * ROWS):
            return f"{self.name} needs B*S*H divisible by {2 * ROWS}"
        return None

    def prepare(self, case: Case, tensors: Tensors, mode: Mode) -> tuple[Any, ...]:
        v = np.ascontiguousarray(tensors["v"], np.float32)
        return (jnp.asarray(v.reshape(-1, v.shape[-1])),)

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out).reshape(case.batch, case.seq_q, case.heads_q, case.head_dim_v)

    def call(self, x: jax.Array, body: Callable[..., None], out_block: Callable[[Any], tuple[int, int]]) -> jax.Array:
        half = x.shape[0] // 2
        return pl.pallas_call(
            body, grid=(2,),
            in_specs=[pl.BlockSpec((half, x.shape[1]), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((half, x.shape[1]), out_block),
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(x)


class Racy(ContractBreaker):
    name = "racy-pallas"

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        def body(x_ref: Any, o_ref: Any) -> None:
            o_ref[...] = x_ref[...]
        return jax.jit(lambda x: self.call(x, body, lambda i: (0, 0)))  # both points write block 0


class OutOfBounds(ContractBreaker):
    name = "oob-pallas"

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        def body(x_ref: Any, o_ref: Any) -> None:
            o_ref[...] = x_ref[...]
            start = x_ref.shape[0] - ROWS // 2 + pl.program_id(0) * 0  # dynamic: checked when it runs
            o_ref[pl.ds(0, ROWS), :] = x_ref[pl.ds(start, ROWS), :]
        return jax.jit(lambda x: self.call(x, body, lambda i: (i, 0)))


def make() -> list[KernelAdapter]:
    return [Racy(), OutOfBounds()]
