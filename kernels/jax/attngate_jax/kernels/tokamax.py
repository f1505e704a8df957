"""tokamax (Google's Pallas kernel library): tokamax.dot_product_attention per implementation,
served through the public kernel API like a team's own kernels:

    adapter.py --kernels attngate_jax.kernels.tokamax:make

tokamax 0.0.12 needs jax >= 0.9.2, so it is pinned in requirements-new.lock only; with
jax 0.7.2 this module does not import and the adapter reports that source as an error
while its other kernels serve.

Conventions mapped (tokamax/_src/ops/attention/api.py, base.py), checked by `attngate conform`:
- layout [*B, T, N, H] is attngate's [B, S, H, D]; `scale` multiplies q.k before the bias;
- is_causal is top-left: used when Sq == Sk or the case is top-left; otherwise causal,
  windows (its local_window_size assumes Sq == Sk) and segment ids go into one boolean
  `mask` [B, 1, Sq, Sk] computed from attngate's semantics;
- GQA with K < N without repeating K and V; a value head_dim of its own;
- logits_soft_cap caps `scale * q.k + bias`, i.e. AFTER the bias, where attngate caps
  before adding it: a case with both is declined;
- xla and xla_chunked keep the probabilities in f32 before P.V, and fill a row without
  keys with the mean of V; a NaN in V at a masked key reaches the row (0 * NaN);
- "mosaic" raises NotImplementedError off a TPU (measured: "Not supported on cpu", also
  inside pltpu.force_tpu_interpret_mode()): the reason is measured once per process.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import tokamax  # type: ignore[import-untyped]  # tokamax 0.0.12 ships no py.typed
from absl import flags as absl_flags

from ..api import Case, KernelAdapter, Mode, Tensors, as_output, operand


# tokamax reads absl flags, which parse sys.argv on first use: the adapter's own command line
# (--interpret ...) is not absl's, and made every call raise UnrecognizedFlagError.
if not absl_flags.FLAGS.is_parsed():
    absl_flags.FLAGS.mark_as_parsed()


@functools.cache
def _not_implemented_here(implementation: str, mode_name: str) -> str | None:
    """The NotImplementedError a tiny call raises on this backend, or None when it runs."""
    del mode_name  # part of the cache key: the measurement holds for one interpret mode
    q = jnp.zeros((1, 128, 1, 64), jnp.float32)
    try:
        jax.block_until_ready(tokamax.dot_product_attention(q, q, q, implementation=implementation))
    except NotImplementedError as e:
        return f"NotImplementedError: {e}"
    return None


class TokamaxAttention(KernelAdapter):
    api_version = 1
    features = ("causal", "window", "segment_ids", "bias", "softcap", "gqa", "head_dim_v", "f32", "bf16")
    packages = ("tokamax",)
    rounds_to_case_dtype = ("output",)  # probabilities stay f32 (measured by attngate conform)
    fully_masked_row = "mean_of_v"
    masked_nan_leaks = ("v",)
    implementation = ""
    version = f"tokamax {tokamax.__version__}"

    def description(self, mode: Mode) -> str:
        return (f"tokamax.dot_product_attention, implementation={self.implementation!r} "
                f"(tokamax {tokamax.__version__} on {jax.default_backend()}, {mode.description})")

    def unsupported(self, case: Case, mode: Mode) -> str | None:
        if case.softcap > 0 and case.bias_shape is not None:
            return ("soft-cap with a bias: tokamax caps scale * q.k + bias (after the bias), "
                    "attngate caps scale * q.k and adds the bias after")
        if self.implementation == "mosaic":
            with mode.context():
                measured = _not_implemented_here(self.implementation, mode.mode)
            if measured is not None:
                return f"tokamax {self.implementation} on {jax.default_backend()}: {measured} (it runs on a TPU)"
        return None

    @staticmethod
    def native_causal(case: Case) -> bool:
        return case.causal and case.offset == 0 and not case.has_window

    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        is_causal, impl = self.native_causal(case), self.implementation
        cap = case.softcap or None

        def run(q: jax.Array, k: jax.Array, v: jax.Array, bias: jax.Array | None, mask: jax.Array | None) -> jax.Array:
            return tokamax.dot_product_attention(q, k, v, bias=bias, mask=mask, scale=case.scale, is_causal=is_causal,
                                                 logits_soft_cap=cap, implementation=impl)
        return jax.jit(run)

    def mask(self, case: Case, t: Tensors) -> np.ndarray | None:
        """attngate's mask as tokamax's boolean `mask` [B or 1, 1, Sq, Sk], or None when is_causal suffices."""
        geometric = (case.causal and not self.native_causal(case)) or case.has_window
        if not geometric and not case.segment_ids:
            return None
        m = np.ones((1, case.seq_q, case.seq_k), dtype=bool)
        if geometric:
            lo, hi = case.key_range(np.arange(case.seq_q))
            j = np.arange(case.seq_k)
            m = m & ((j[None, :] >= lo[:, None]) & (j[None, :] <= hi[:, None]))[None]
        if case.segment_ids:
            m = m & (t["segment_ids_q"][:, :, None] == t["segment_ids_kv"][:, None, :])
        return np.ascontiguousarray(m[:, None])

    def prepare(self, case: Case, t: Tensors, mode: Mode) -> tuple[Any, ...]:
        bias = None if case.bias_shape is None else np.ascontiguousarray(t["bias"], np.float32)
        args = (operand(t["q"], case), operand(t["k"], case), operand(t["v"], case), bias, self.mask(case, t))
        return tuple(jax.device_put(args))

    def finish(self, case: Case, out: Any) -> np.ndarray:
        return as_output(out)


class TokamaxXla(TokamaxAttention):
    name = "tokamax-xla"
    implementation = "xla"
    workspace_growth = "quadratic"


class TokamaxXlaChunked(TokamaxAttention):
    name = "tokamax-xla-chunked"
    implementation = "xla_chunked"


class TokamaxMosaic(TokamaxAttention):
    name = "tokamax-mosaic"
    implementation = "mosaic"


def make() -> list[KernelAdapter]:
    return [TokamaxXla(), TokamaxXlaChunked(), TokamaxMosaic()]
