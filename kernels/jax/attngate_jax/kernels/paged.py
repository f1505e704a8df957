"""The paged kernels: pallas-paged, pallas-ragged-paged and xla-paged (docs/paged.md).

attngate's paged case: q [total_q, Hq, D], pools [pages, page_size, Hkv, D], page_table
[B, pages_per_seq], kv_lens [B], cu_q_lens [B + 1]; bottom-right per sequence; query head h
reads kv head h // (Hq / Hkv).

pallas-paged (jax.experimental.pallas.ops.tpu.paged_attention, paged_attention_kernel.py):
- decode only (q [B, Hq, D], one query per sequence): "ragged" is not among its features;
  causal changes nothing for a last-position query; no window;
- no scale argument: q is pre-scaled in float32 (q * scale) before the kernel, which then
  computes softcap(q.k) exactly as attngate's softcap(scale * q.k);
- pages as [Hkv, pages, page_size, D]: the pools are transposed once, outside timing;
- GQA: query heads h*g .. h*g+g-1 form kv head h's block: h // g, as attngate;
- it loads each page as float32 and then casts it to bfloat16 (MultiPageAsyncCopyDescriptor
  ._maybe_dequantize's default dtype), so an f32 case's K and V would be rounded: f32 cases
  are declined, saying so. On a bf16 case the cast is exact; q stays float32, the dots
  accumulate in float32 and the output is float32 (nothing rounded);
- it loads whole pages and masks slots past kv_len by adding mask_value to the score, so
  it reads the slots past kv_len (reads_unreadable_slots) and a NaN there, in K or V,
  reaches the row; pages_per_compute_block = 1, so it never loads a page outside the table;
- head_dim_v must equal head_dim (k_pages and v_pages of one shape).

pallas-ragged-paged (ragged_paged_attention): mixed prefill and decode; sm_scale,
sliding_window, soft_cap; K and V interleaved per head in one pool [pages, page_size,
2 Hkv, D]. It fails in TPU interpret mode on jax 0.10.2 and 0.12.0.1
(jax-notes 12: "'ReshapeTransform' object has no attribute 'indices'"), and has no
interpret argument for the generic interpreter: the adapter probes it once per process on
a small case and, where the probe raises, skips its runs with what it raised (cannot_run)
while its TPU program is still checked; compiled on a TPU (`--interpret none`) it runs.

xla-paged (ref_ragged_paged_attention, the module's XLA reference): the same conventions as
pallas-ragged-paged; it slices each sequence's keys to kv_len after gathering its pages, so
it never uses an unreadable slot. Always causal (bottom-right): a non-causal ragged case
is declined. sliding_window W keeps kv > pos - W, attngate's window left l is W = l + 1.
On a bf16 case it rounds the probabilities to bf16 before P.V and the output to bf16.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention
from jax.experimental.pallas.ops.tpu.ragged_paged_attention import kernel as rpa

from ..api import Case, KernelAdapter, Mode, Tensors, as_output, operand, tpu_generation

DENSE = "a dense case: {} takes paged cases only (a page table over a pool of K and V pages)"


def _interleaved(case: Case, t: Tensors) -> np.ndarray:
    """[pages, page_size, 2 Hkv, D]: K of kv head h at 2h, V at 2h + 1 (ragged_paged_attention's pool)."""
    k, v = operand(t["k_pages"], case), operand(t["v_pages"], case)
    pages, size, hkv, d = k.shape
    return np.ascontiguousarray(np.stack([k, v], axis=3).reshape(pages, size, 2 * hkv, d))


def _ragged_reason(kernel: KernelAdapter, case: Case) -> str | None:
    """What ragged_paged_attention's conventions cannot express in a paged case, or None."""
    if case.paged is None:
        return DENSE.format(kernel.name)
    if not case.causal and case.paged.ragged:
        return f"not causal with q_lens {list(case.paged.q_lens)}: {kernel.name} is always causal (bottom-right)"
    if case.head_dim_v != case.head_dim:
        return f"head_dim_v {case.head_dim_v} != head_dim {case.head_dim}: one interleaved K/V pool"
    return None


def _target_blocks(case: Case) -> dict[str, int]:
    """The block sizes ragged_paged_attention's own lookup (tuned_block_sizes) picks on the TPU
    the program is for. That lookup reads jax.devices()[0]: off a TPU it raises ("TPU version
    must be 4 or higher"), so the adapter looks the target up in the same table, by the same
    key. Empty (the kernel's own lookup) where jax has no tpu_info or no such table."""
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import tuned_block_sizes as tuned

    gen, paged = tpu_generation(), case.paged
    if gen is None or paged is None or not hasattr(tuned, "TUNED_BLOCK_SIZES"):
        return {}
    dtype = jnp.bfloat16 if case.dtype == "bf16" else jnp.float32
    try:
        q_heads, kv_heads_x2 = rpa.get_min_heads_per_blk(case.heads_q, 2 * case.heads_kv, dtype, dtype)
    except ValueError:  # heads it cannot tile: the kernel's own call raises it again, while lowering
        return {}
    tokens = sum(paged.q_lens)
    key = tuned.simplify_key((dtype, dtype, q_heads, kv_heads_x2 // 2, case.head_dim, paged.page_size, tokens,
                              paged.pages_per_seq))
    kv_pages, queries = (32, 32) if gen == 4 else tuned.TUNED_BLOCK_SIZES.get(f"TPU v{gen}", {}).get(key, (128, 32))
    return {"num_kv_pages_per_block": min(paged.pages_per_seq, kv_pages), "num_queries_per_block": min(tokens, queries)}


def _sliding_window(case: Case) -> int | None:
    left = case.window[0]
    return None if left < 0 else left + 1


class XlaPaged(KernelAdapter):
    api_version = 1
    name = "xla-paged"
    features = ("paged_kv", "ragged", "causal", "window", "softcap", "gqa", "f32", "bf16")
    workspace_growth = "quadratic"  # each sequence's [Hq, q_len, kv_len] logits
    masked_nan_leaks = ("k", "v")  # masks by adding mask_value to the score; 0 * NaN in V
    rounds_to_case_dtype = ("output", "probabilities")
    notes = {"layout": "q [T, Hq, D], kv_pages [pages, page_size, 2 Hkv, D] (K, V interleaved)",
             "scale": "sm_scale after q.k, then soft_cap", "window": "sliding_window = left + 1",
             "precision": "matmuls at float32 precision (jax.default_matmul_precision)"}

    def description(self, mode: Mode) -> str:
        return (f"jax.experimental.pallas.ops.tpu.ragged_paged_attention.ref_ragged_paged_attention (XLA on "
                f"{jax.default_backend()}; no Pallas, so interpret mode {mode.mode!r} does not apply)")

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        return _ragged_reason(self, case)

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        return tuple(jax.device_put((operand(t["q"], case), _interleaved(case, t), t["page_table"])))

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        assert case.paged is not None
        # The lengths are the case's (checked against the uploaded tables): static, so the
        # reference's per-sequence slices are static under jit (numpy, not jax.Array: Any).
        kv_lens: Any = np.asarray(case.paged.kv_lens, np.int32)
        cu_q_lens: Any = np.asarray(case.paged.cu_q_lens, np.int32)
        num_seqs: Any = np.asarray([case.batch], np.int32)

        def run(q: jax.Array, kv_pages: jax.Array, page_table: jax.Array) -> jax.Array:
            with jax.default_matmul_precision("float32"):
                return rpa.ref_ragged_paged_attention(q, kv_pages, kv_lens, page_table, cu_q_lens, num_seqs,
                                                      sm_scale=case.scale, sliding_window=_sliding_window(case),
                                                      soft_cap=case.softcap or None)
        return jax.jit(run)

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)


class PallasPaged(KernelAdapter):
    api_version = 1
    name = "pallas-paged"
    features = ("paged_kv", "causal", "softcap", "gqa", "f32", "bf16")  # f32 declined below, saying why
    masked_nan_leaks = ("k", "v")
    reads_unreadable_slots = ("past_kv_len",)
    workspace_growth = "constant"  # one page of K and V per step, m, l, acc per head group
    notes = {"layout": "q [B, Hq, D], pages [Hkv, pages, page_size, D]", "scale": "q pre-scaled in float32",
             "pages": "loaded as float32, then cast to bfloat16 (f32 cases declined)",
             "pages_per_compute_block": "1: never loads a page outside the table"}

    def description(self, mode: Mode) -> str:
        return f"jax.experimental.pallas.ops.tpu.paged_attention ({mode.description})"

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        # ragged, window and head_dim_v are not among its features: declined before this.
        if case.paged is None:
            return DENSE.format(self.name)
        if case.dtype == "f32":
            return ("f32: paged_attention loads each page as float32 and casts it to bfloat16 "
                    "(MultiPageAsyncCopyDescriptor._maybe_dequantize), so K and V would be rounded")
        return None

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        q = (t["q"] * np.float32(case.scale)).astype(np.float32)
        k = np.ascontiguousarray(operand(t["k_pages"], case).transpose(2, 0, 1, 3))
        v = np.ascontiguousarray(operand(t["v_pages"], case).transpose(2, 0, 1, 3))
        return tuple(jax.device_put((q, k, v, t["kv_lens"], t["page_table"])))

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        return jax.jit(functools.partial(paged_attention, pages_per_compute_block=1,
                                         attn_logits_soft_cap=case.softcap or None))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)


# Probe outcomes per interpret mode: None (runs) or what it raised.
_PROBED: dict[str, str | None] = {}


def probe_failure(mode: Mode, what: str, call: Callable[[], Any]) -> str | None:
    """None when call() runs in `mode`, else what it raised: a `cannot_run` reason."""
    try:
        with mode.context():
            jax.block_until_ready(call())
    except Exception as e:  # noqa: BLE001 - the failure is the reason
        if hasattr(mode, "after_error"):
            mode.after_error()
        # A callback's error carries the interpreter's traceback: its last line names the failure.
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        last = lines[-1] if lines else ""
        return (f"{what} raises in {mode.description} on jax {jax.__version__} "
                f"(probed on a 2-sequence case): {type(e).__name__}: {last[:300]}")
    return None


class PallasRaggedPaged(KernelAdapter):
    api_version = 1
    name = "pallas-ragged-paged"
    features = XlaPaged.features
    masked_nan_leaks = ("k", "v")
    reads_unreadable_slots = ("past_kv_len", "outside_table")  # whole kv blocks of pages
    rounds_to_case_dtype = ("output", "probabilities")
    workspace_growth = "constant"
    notes = dict(XlaPaged.notes, precision="the kernel's own")

    def description(self, mode: Mode) -> str:
        return f"jax.experimental.pallas.ops.tpu.ragged_paged_attention ({mode.description})"

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        return _ragged_reason(self, case)

    def cannot_run(self, case: Case, mode: Mode) -> str | None:
        if mode.mode not in _PROBED:
            _PROBED[mode.mode] = self._probe(mode)
        return _PROBED[mode.mode]

    def _probe(self, mode: Mode) -> str | None:
        """None when the kernel runs here, else what it raised on a 2-sequence case."""
        q = jnp.zeros((3, 2, 128), jnp.float32)
        kv = jnp.zeros((4, 16, 2, 128), jnp.float32)
        lens, table = jnp.array([16, 20], jnp.int32), jnp.array([[0, 1], [2, 3]], jnp.int32)
        return probe_failure(mode, "ragged_paged_attention", lambda: rpa.ragged_paged_attention(
            q, kv, lens, table, jnp.array([0, 1, 3], jnp.int32), jnp.array([2], jnp.int32),
            num_kv_pages_per_block=1, num_queries_per_block=8))

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        return tuple(jax.device_put((operand(t["q"], case), _interleaved(case, t), t["kv_lens"],
                                     t["page_table"], t["cu_q_lens"], np.asarray([case.batch], np.int32))))

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        return jax.jit(functools.partial(rpa.ragged_paged_attention, sm_scale=case.scale,
                                         sliding_window=_sliding_window(case), soft_cap=case.softcap or None,
                                         **_target_blocks(case)))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)
