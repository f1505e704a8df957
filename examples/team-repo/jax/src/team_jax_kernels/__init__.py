"""The team's JAX attention: softmax(Q K^T * scale) V with an optional causal mask, in f32,
mapped onto attngate's case through attngate_jax.api."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from attngate_jax.api import Case, KernelAdapter, Mode, Tensors, as_output, operand


def attention(q: jax.Array, k: jax.Array, v: jax.Array, *, scale: float, causal: bool, offset: int) -> jax.Array:
    """q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D]; grouped-query heads share a key head."""
    group = q.shape[2] // k.shape[2]
    k = jnp.repeat(k, group, axis=2)
    v = jnp.repeat(v, group, axis=2)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        i = jnp.arange(q.shape[1])[:, None]
        j = jnp.arange(k.shape[1])[None, :]
        s = jnp.where(j <= i + offset, s, -jnp.inf)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)


class TeamJax(KernelAdapter):
    api_version = 1
    name = "team-jax"
    features = ("causal", "gqa", "f32")

    def description(self, mode: Mode) -> str:
        return f"team_jax_kernels.attention, jnp ({mode.description})"

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        return None

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        return jax.jit(functools.partial(attention, scale=case.scale, causal=case.causal, offset=case.offset))

    def prepare(self, case: Case, tensors: Tensors, mode: Mode) -> tuple[Any, ...]:
        return tuple(jax.device_put(tuple(np.ascontiguousarray(operand(tensors[r], case)) for r in ("q", "k", "v"))))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)


def make() -> list[KernelAdapter]:
    return [TeamJax()]
