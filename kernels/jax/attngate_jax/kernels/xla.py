"""jax-xla: jax.nn.dot_product_attention(implementation="xla").

Conventions mapped (jax/_src/nn/functions.py):
- layout [B, T, N, H] is attngate's [B, S, H, D]: no transpose;
- `scale` multiplies q.k before the bias is added (logits * scale + bias): passed as is;
- is_causal is top-left (jnp.tril); bottom-right causal with Sq != Sk is expressed through
  local_window_size, whose mask is `i <= j + left` and `i >= j - right`: shifting both
  sides by the offset Sk - Sq gives exactly attngate's p - l <= j <= p + r (and causal is
  a right side of `offset`). Unbounded sides become Sq + Sk, which never binds;
- segment ids become the boolean `mask` [B, 1, Sq, Sk] = (ids_q == ids_kv);
- GQA: N % K == 0 and query head h reads kv head h // (N / K), as attngate;
- no soft-cap and no separate value head_dim (value must have key's shape).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ..api import Case, KernelAdapter, Mode, Tensors, as_output, operand


class XlaDotProductAttention(KernelAdapter):
    api_version = 1
    name = "jax-xla"
    features = ("causal", "window", "segment_ids", "bias", "gqa", "f32", "bf16")
    workspace_growth = "quadratic"  # materialises the [B, N, T, S] logits
    masked_nan_leaks = ("v",)  # masked logits are replaced (jnp.where); probs 0 * NaN in V is NaN
    rounds_to_case_dtype = ("output", "probabilities")  # a bf16 case's output is bf16
    fully_masked_row = "mean_of_v"  # every masked score becomes the same large negative number
    notes = {"layout": "[B, T, N, H]", "is_causal": "top-left; bottom-right expressed exactly through local_window_size",
             "scale": "scale * q.k, then + bias", "probabilities": "rounded to the value dtype before P.V"}

    def description(self, mode: Mode) -> str:
        return (f"jax.nn.dot_product_attention, implementation=\"xla\" (XLA on {jax.default_backend()}; "
                f"no Pallas, so interpret mode {mode.mode!r} does not apply)")

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        return None  # no soft-cap, no head_dim_v (value must have key's shape): not among its features

    @staticmethod
    def _masking(case: Case) -> tuple[bool, tuple[int, int] | None]:
        """(is_causal, local_window_size) giving exactly attngate's causal and window."""
        off = case.offset
        native_causal = case.causal and off == 0
        left, right = case.window
        if not case.has_window and not (case.causal and off != 0):
            return native_causal, None
        unbounded = case.seq_q + case.seq_k
        lo = left - off if left >= 0 else unbounded
        hi = right + off if right >= 0 else unbounded
        if case.causal and not native_causal:
            hi = min(hi, off)
        return native_causal, (lo, hi)

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        is_causal, window = self._masking(case)

        def run(q: jax.Array, k: jax.Array, v: jax.Array, bias: jax.Array | None, mask: jax.Array | None) -> jax.Array:
            return jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, scale=case.scale,
                                                is_causal=is_causal, local_window_size=window,
                                                implementation="xla")
        return jax.jit(run)

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        bias = None if case.bias_shape is None else np.ascontiguousarray(t["bias"], np.float32)
        mask = None
        if case.segment_ids:
            mask = (t["segment_ids_q"][:, None, :, None] == t["segment_ids_kv"][:, None, None, :])
        args = (operand(t["q"], case), operand(t["k"], case), operand(t["v"], case), bias, mask)
        return tuple(jax.device_put(args))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)
