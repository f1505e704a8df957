"""pallas-splash: jax.experimental.pallas.ops.tpu.splash_attention (make_splash_mha/_mqa).

Conventions mapped (splash_attention_kernel.py, splash_attention_mask.py):
- no batch dimension: one kernel call per example, [H, L, D] per call; batched with
  jax.vmap, except in TPU interpret mode where vmap fails for B > 1 and jax.lax.map loops;
- no softmax scale: q is pre-scaled, which is exact only when the product rounds to
  nothing. With a power-of-two scale (D = 64, 256, or a case's own scale) it is exact in
  both dtypes; otherwise f32 q is scaled in float64 and rounded once (the rounding the
  other kernels do when they scale the scores), and a bf16 case is declared unsupported
  (rounding scale * q to bf16 would change the operands by up to 2^-9 relative);
- soft-cap: attn_logits_soft_cap=c gives c * tanh(s / c) on the (pre-scaled) logits,
  before masking, as attngate;
- causal: CausalMask(offset) keeps q + offset >= kv, so offset = Sk - Sq is bottom-right
  and 0 top-left; a window is LocalMask((l, r), offset) = p - l <= j <= p + r, and causal
  with a window is LocalMask((l, 0)); unbounded sides are None;
- segment ids: SegmentIds(q=[Lq], kv=[Lk]) per example, equal ids attend;
- GQA: Hq % Hkv == 0, head h reads kv head h // (Hq / Hkv); Hkv == 1 < Hq uses
  make_splash_mqa (k, v [Lk, D]), the MQA code path;
- no additive bias; a separate value head_dim works;
- tiles: block_q divides Lq, block_kv divides Lk, block_kv a multiple of 128. Only the
  forward block sizes are given (the backward ones would build mask data no forward
  call uses). Fully masked kv blocks are skipped, so a fully masked row gets the mean
  of V over the visited blocks only, and NaN (0 / 0) when no block of its row is visited.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm

from ..api import Case, KernelAdapter, Mode, Tensors, as_output, operand

DEFAULT_BLOCK = 128
LANES = 128


class PallasSplash(KernelAdapter):
    api_version = 1
    name = "pallas-splash"
    features = ("causal", "window", "segment_ids", "softcap", "gqa", "head_dim_v", "f32", "bf16")
    masked_nan_leaks = ("v",)  # masked logits are replaced (jnp.where); 0 * NaN in V is NaN
    rounds_to_case_dtype = ("output",)  # a bf16 case's output is bf16
    fully_masked_row = "mean_of_v"
    notes = {"layout": "[H, L, D] per example", "causal": "CausalMask(offset=Sk - Sq): bottom-right, or 0 for top-left",
             "scale": "none: q is pre-scaled (exact for power-of-two scales)",
             "fully_masked_row": "mean of V over the visited kv blocks (NaN when none is visited)",
             "probabilities": "kept in f32, V upcast to f32"}

    def description(self, mode: Mode) -> str:
        batching = "jax.lax.map" if mode.batch_with_map else "jax.vmap"
        return (f"jax.experimental.pallas.ops.tpu.splash_attention, make_splash_mha/mqa over the batch "
                f"with {batching} ({mode.description})")

    @staticmethod
    def blocks(case: Case) -> tuple[int, int]:
        return case.block_q or DEFAULT_BLOCK, case.block_k or DEFAULT_BLOCK

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        if case.dtype == "bf16" and not case.scale_is_power_of_two:
            return (f"bf16 with scale {case.scale:.9g}, not a power of two: splash takes no softmax scale, "
                    "and pre-scaling bf16 q by it would round the operands")
        bq, bk = self.blocks(case)
        if case.seq_q % bq:
            return f"seq_q {case.seq_q} is not a multiple of splash's block_q {bq}"
        if case.seq_k % bk:
            return f"seq_k {case.seq_k} is not a multiple of splash's block_kv {bk}"
        if bk % LANES:
            return f"block_kv {bk}: splash needs a multiple of 128"
        return None

    @staticmethod
    def mask(case: Case) -> Any:
        shape, off = (case.seq_q, case.seq_k), case.offset
        left, right = (None if w < 0 else w for w in case.window)
        if case.has_window:
            right = 0 if case.causal else right
            return sm.LocalMask(shape, window_size=(left, right), offset=off)
        if case.causal:
            return sm.CausalMask(shape, offset=off)
        return sm.FullMask(shape)

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        bq, bk = self.blocks(case)
        mqa = case.heads_kv == 1 and case.heads_q > 1
        make = sk.make_splash_mqa if mqa else sk.make_splash_mha
        kernel = make(sm.MultiHeadMask([self.mask(case)] * case.heads_q),
                      block_sizes=sk.BlockSizes(block_q=bq, block_kv=bk, block_kv_compute=bk),
                      attn_logits_soft_cap=case.softcap or None,
                      head_shards=1, q_seq_shards=1, interpret=mode.interpret)

        def one(q: jax.Array, k: jax.Array, v: jax.Array, seg_q: jax.Array | None, seg_kv: jax.Array | None) -> jax.Array:
            seg = None if seg_q is None or seg_kv is None else sk.SegmentIds(q=seg_q, kv=seg_kv)
            return kernel(q, k, v, segment_ids=seg)

        def run(q: jax.Array, k: jax.Array, v: jax.Array, seg_q: jax.Array | None, seg_kv: jax.Array | None) -> jax.Array:
            if mode.batch_with_map:
                return jax.lax.map(lambda x: one(*x), (q, k, v, seg_q, seg_kv))
            return jax.vmap(one)(q, k, v, seg_q, seg_kv)
        return jax.jit(run)

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        def to_bhld(x: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(operand(x.astype(np.float32), case).transpose(0, 2, 1, 3))
        q, k, v = to_bhld(t["q"].astype(np.float64) * case.scale), to_bhld(t["k"]), to_bhld(t["v"])  # q: rounded once
        if case.heads_kv == 1 and case.heads_q > 1:
            k, v = k[:, 0], v[:, 0]  # make_splash_mqa takes k, v as [Lk, D] per example
        seg_q = seg_kv = None
        if case.segment_ids:
            seg_q, seg_kv = t["segment_ids_q"], t["segment_ids_kv"]
        return tuple(jax.device_put((q, k, v, seg_q, seg_kv)))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out).transpose(0, 2, 1, 3)

