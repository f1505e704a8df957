"""Five kernels, each with one convention deliberately wrong (and everything else right),
for the conformance check to name: `adapter.py --kernels wrong_conventions:make`.

Plain jax.numpy attention in f32 (no Pallas: they are about mappings, not tiles)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from attngate_jax.api import Case, KernelAdapter, Mode, Tensors, as_output


def attention(q: jax.Array, k: jax.Array, v: jax.Array, bias: jax.Array | None, seg_q: jax.Array | None,
              seg_kv: jax.Array | None, *, case: Case, offset: int, scale_power: int = 1, softcap_after_bias: bool = False,
              gqa_modulo: bool = False, empty_mean_of_v: bool = False) -> jax.Array:
    """[B, S, H, D] in, [B, Sq, Hq, Dv] out, f32 throughout; the switches are the wrong conventions."""
    heads = jnp.arange(case.heads_q)
    kv_head = heads % case.heads_kv if gqa_modulo else heads // (case.heads_q // case.heads_kv)
    k, v = k[:, :, kv_head], v[:, :, kv_head]
    s = jnp.einsum("bihd,bjhd->bhij", q, k) * case.scale ** scale_power
    cap = case.softcap
    if cap > 0 and not softcap_after_bias:
        s = cap * jnp.tanh(s / cap)
    if bias is not None:
        s = s + bias
    if cap > 0 and softcap_after_bias:
        s = cap * jnp.tanh(s / cap)
    i = jnp.arange(case.seq_q)[:, None] + offset
    j = jnp.arange(case.seq_k)[None, :]
    left, right = case.window
    allowed = jnp.ones((case.seq_q, case.seq_k), bool)
    if case.causal:
        allowed &= j <= i
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    allowed = allowed[None, None]
    if seg_q is not None:
        allowed = allowed & (seg_q[:, None, :, None] == seg_kv[:, None, None, :])
    if empty_mean_of_v:  # a large finite mask value: an empty row averages every V
        s = jnp.where(allowed, s, -1e30)
        p = jax.nn.softmax(s, axis=-1)
    else:
        s = jnp.where(allowed, s, -jnp.inf)
        m = jnp.max(s, axis=-1, keepdims=True)
        e = jnp.exp(s - jnp.where(jnp.isfinite(m), m, 0.0))
        den = e.sum(axis=-1, keepdims=True)
        p = e / jnp.where(den > 0, den, 1.0)
    return jnp.einsum("bhij,bjhd->bihd", p, v)


class WrongKernel(KernelAdapter):
    api_version = 1
    features = ("causal", "window", "segment_ids", "bias", "softcap", "gqa", "head_dim_v", "f32", "bf16")
    masked_nan_leaks = ("v",)  # p = 0 times a NaN in V is NaN
    switches: dict[str, Any] = {}
    top_left_always = False

    def description(self, mode: Mode) -> str:
        return f"jax.numpy attention with {self.name.removeprefix('wrong-')} wrong"

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        return None

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        offset = 0 if self.top_left_always else case.offset
        return jax.jit(lambda *a: attention(*a, case=case, offset=offset, **self.switches))

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        return tuple(jax.device_put((t["q"], t["k"], t["v"], t.get("bias"), t.get("segment_ids_q"), t.get("segment_ids_kv"))))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)


class TopLeftDeclaredBottomRight(WrongKernel):
    name = "wrong-causal-alignment"
    top_left_always = True  # declares "case" (the default): honours bottom-right, it says


class ScaleTwice(WrongKernel):
    name = "wrong-scale-twice"
    switches = {"scale_power": 2}


class SoftcapAfterBias(WrongKernel):
    name = "wrong-softcap-after-bias"
    switches = {"softcap_after_bias": True}


class GqaModulo(WrongKernel):
    name = "wrong-gqa-modulo"
    switches = {"gqa_modulo": True}


class EmptyRowsMeanOfV(WrongKernel):
    name = "wrong-empty-rows"
    switches = {"empty_mean_of_v": True}  # declares fully_masked_row "zeros" (the default)


def make() -> list[KernelAdapter]:
    return [TopLeftDeclaredBottomRight(), ScaleTwice(), SoftcapAfterBias(), GqaModulo(), EmptyRowsMeanOfV()]
