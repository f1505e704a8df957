"""pallas-flash: jax.experimental.pallas.ops.tpu.flash_attention.flash_attention.

Conventions mapped (flash_attention.py):
- layout [B, H, L, D]: q, k, v are transposed from [B, S, H, D] once, outside timing;
- sm_scale defaults to 1.0: attngate's scale is always passed;
- the bias `ab` is added BEFORE scaling, s = (q.k + ab) * sm_scale; attngate adds it
  after, so ab = bias / scale (computed in float64, rounded once to float32): exact when
  the scale is a power of two, otherwise within an ulp of the bias. ab must be the full
  [B, H, Lq, Lk]: a broadcast bias is expanded;
- causal is top-left (col <= row), declared as causal_alignment "top_left": the adapter
  declines a bottom-right case unless Sq == Sk (where both alignments coincide);
- segment ids: SegmentIds(q=[B, Lq], kv=[B, Lk]), equal ids attend, ANDed with causal;
- no GQA (equal head counts), no soft-cap, no window, no separate value head_dim;
- tiles: block_q <= Lq, Lk divisible by block_k_major = block_k, block_k a multiple of
  128, head_dim <= 128 or a multiple of 128. block_k == Lk selects a different,
  single-step kernel (no online softmax): S = 128 and S >= 256 take different paths.
- masking adds a large negative value to the score (s + where(mask, 0, -0.7 * f32max)),
  so a NaN in a masked key's k reaches the row, and P.V multiplies 0 by a masked NaN in v.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental.pallas.ops.tpu import flash_attention as fa

from ..api import Case, KernelAdapter, Mode, Tensors, as_output, operand

DEFAULT_BLOCK = 128
LANES = 128


class PallasFlash(KernelAdapter):
    api_version = 1
    name = "pallas-flash"
    features = ("causal", "segment_ids", "bias", "f32", "bf16")
    masked_nan_leaks = ("k", "v")
    rounds_to_case_dtype = ("output", "probabilities")  # a bf16 case's output is bf16
    causal_alignment = "top_left"  # the adapter declines bottom-right cases with seq_q != seq_k
    fully_masked_row = "mean_of_v"
    notes = {"layout": "[B, H, L, D]", "scale": "sm_scale (default 1.0) applied after the bias: ab = bias / scale",
             "probabilities": "exp(s - max) rounded to the value dtype before P.V"}

    def description(self, mode: Mode) -> str:
        return f"jax.experimental.pallas.ops.tpu.flash_attention ({mode.description})"

    @staticmethod
    def blocks(case: Case) -> tuple[int, int]:
        return case.block_q or DEFAULT_BLOCK, case.block_k or DEFAULT_BLOCK

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        # GQA, soft-cap, windows and head_dim_v are not among its features: declined before this.
        d = case.head_dim
        if d > LANES and d % LANES:
            return f"head_dim {d}: flash_attention needs head_dim <= 128 or a multiple of 128"
        bq, bk = self.blocks(case)
        if bq > case.seq_q:
            return f"seq_q {case.seq_q} is smaller than flash_attention's block_q {bq}"
        if case.seq_k % bk:
            return f"seq_k {case.seq_k} is not a multiple of flash_attention's block_k {bk}"
        if bk % LANES:
            return f"block_k {bk}: flash_attention needs a multiple of 128"
        return None

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        sizes = None
        if case.block_q or case.block_k:
            bq, bk = self.blocks(case)
            sizes = fa.BlockSizes(block_q=bq, block_k_major=bk, block_k=bk, block_b=1)
        causal = case.causal

        def run(q: jax.Array, k: jax.Array, v: jax.Array, ab: jax.Array | None,
                seg_q: jax.Array | None, seg_kv: jax.Array | None) -> jax.Array:
            seg = None if seg_q is None or seg_kv is None else fa.SegmentIds(q=seg_q, kv=seg_kv)
            return fa.flash_attention(q, k, v, ab, seg, causal=causal, sm_scale=case.scale, block_sizes=sizes)
        return jax.jit(run)

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        def to_bhld(x: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(operand(x, case).transpose(0, 2, 1, 3))
        ab = None
        if case.bias_shape is not None:
            full = (case.batch, case.heads_q, case.seq_q, case.seq_k)
            ab = np.broadcast_to((t["bias"].astype(np.float64) / case.scale).astype(np.float32), full)
            ab = np.ascontiguousarray(ab)
        seg_q = seg_kv = None
        if case.segment_ids:
            seg_q, seg_kv = t["segment_ids_q"], t["segment_ids_kv"]
        return tuple(jax.device_put((to_bhld(t["q"]), to_bhld(t["k"]), to_bhld(t["v"]), ab, seg_q, seg_kv)))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out).transpose(0, 2, 1, 3)
