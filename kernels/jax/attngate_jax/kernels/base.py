"""What every JAX kernel of the adapter provides, and helpers they share.

A kernel maps attngate's case (layout [B, S, H, D], semantics of kernel_abi.h) onto its
library's conventions. It says why it cannot express a case (`unsupported`), converts the
inputs once into its own layout and dtype (`prepare`, outside any timing), builds one
jitted function per case configuration (`build`: only the kernel itself is timed), and
converts the output back to [B, Sq, Hq, Dv] float32 (`finish`). `case` is a
case.Case; `mode` is the process's modes.PallasMode.
"""
import ml_dtypes
import numpy as np

ALL_FEATURES = ("causal", "window", "segment_ids", "bias", "softcap", "gqa", "head_dim_v", "f32", "bf16")


class KernelAdapter:
    name = ""
    features = ()
    workspace_growth = "unspecified"
    conventions = {}
    # What the kernel rounds to the case's dtype on a bf16 case ("output", "probabilities"):
    # the gate widens its golden tolerance by exactly what that rounding can cost.
    rounds_to_case_dtype = ()
    # Inputs in which a NaN at a masked key still reaches the output (so attngate's
    # "a masked key changes nothing" does not hold and the case is declared unsupported).
    masked_nan_leaks = ("k", "v")

    def description(self, mode) -> str:
        raise NotImplementedError

    def unsupported(self, case, mode):
        """Why the kernel cannot express `case` exactly, or None."""
        raise NotImplementedError

    def build(self, case, mode):
        """A jitted function of the prepared arguments, returning the kernel's output."""
        raise NotImplementedError

    def prepare(self, case, tensors, mode):
        """The kernel's arguments (device arrays) from the protocol's numpy inputs."""
        raise NotImplementedError

    def finish(self, case, out) -> np.ndarray:
        """The output as [B, Sq, Hq, Dv] float32."""
        raise NotImplementedError


def operand(x: np.ndarray, case) -> np.ndarray:
    """q, k or v in the case's dtype: bf16 inputs hold bf16-exact float32 values, so the
    cast is exact (the engine checked that)."""
    return x.astype(ml_dtypes.bfloat16) if case.dtype == "bf16" else np.ascontiguousarray(x, np.float32)


def as_output(x) -> np.ndarray:
    return np.asarray(x).astype(np.float32)

