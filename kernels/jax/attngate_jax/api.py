"""attngate's kernel API for the JAX adapter, version 1: what a kernel of the adapter is.

This module is attngate-jax's public surface: a team's kernel package imports from it
alone (`from attngate_jax.api import KernelAdapter, Case, ...`), and type-checks against it
(the distribution ships `py.typed`). Its names are `__all__`; the API version below covers
them. Every other module of attngate_jax is the adapter's own and may change in any release.

A kernel is an instance of a `KernelAdapter` subclass, handed to the adapter by a factory:
a function of no arguments returning one kernel or a list of them, named `module:function`
(`--kernels team_attention.gate:make`) or published as an entry point of the group
`attngate.kernels` by an installed package. The adapter's own kernels use this API too.

It maps attngate's case (layout [B, S, H, D], the semantics of kernel_abi.h) onto the
kernel's library. Per case configuration the adapter calls `unsupported` (why it cannot
express the case exactly, or None), `prepare` once per set of inputs (numpy in, the
kernel's own layout and dtype out, outside any timing), `build` once (a jitted function:
only it is timed) and `finish` on its output ([B, Sq, Hq, Dv] float32 out). A kernel that
expresses a case but cannot run it here says why in `cannot_run`: its TPU program is still
checked.

The declared conventions say where the kernel departs from attngate's semantics; the
adapter then declines the cases where that matters (so the gate never passes what the
kernel does not do), and `attngate conform` checks each declaration against what the
kernel actually computes. Leave a convention at its default when the kernel follows
attngate.

Versioned like the C ABI: a kernel states the API version it was written against in
`api_version` (no default, so that a newer adapter never assumes it), and a kernel of
another version is refused by name.

Forward compatibility: a new case field (paged KV, ragged q_lens) arrives as a new
attribute of `Case` with a default, new tensors as new roles in `tensors`, and a new
feature name in `FEATURES`; a case needing a feature the kernel does not declare is
declined before the kernel sees it, so an existing kernel never meets a field it does
not know.
"""
from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Final, Protocol, TypeAlias

import ml_dtypes
import numpy as np

from .case import Case

API_VERSION: Final = 1

FEATURES: Final[frozenset[str]] = frozenset({
    "causal", "window", "segment_ids", "bias", "softcap", "gqa", "head_dim_v", "f32", "bf16",
    "paged_kv", "ragged"})  # paged_kv: Case.paged set; ragged: some q_len != 1
WORKSPACE_GROWTHS: Final[frozenset[str]] = frozenset({"unspecified", "constant", "linear", "quadratic"})
# What a kernel may round to a bf16 case's dtype; the golden tolerance widens by its cost.
ROUNDINGS: Final[frozenset[str]] = frozenset({"output", "probabilities"})
# "case": the case's causal_alignment is honoured (attngate's); otherwise the one the kernel applies always.
CAUSAL_ALIGNMENTS: Final[frozenset[str]] = frozenset({"case", "top_left", "bottom_right"})
# What a query row with no allowed key gets; attngate's is "zeros".
FULLY_MASKED_ROWS: Final[frozenset[str]] = frozenset({"zeros", "mean_of_v", "nan"})
# Inputs in which a NaN at a key that some row masks still reaches that row; attngate's is none.
MASKED_NAN_INPUTS: Final[frozenset[str]] = frozenset({"k", "v"})
# Unreadable slots of a paged case (attngate's NaN) a kernel loads and masks: "past_kv_len", "outside_table".
UNREADABLE_SLOTS: Final[frozenset[str]] = frozenset({"past_kv_len", "outside_table"})

Tensors: TypeAlias = Mapping[str, np.ndarray]


class Mode(Protocol):
    """How the adapter runs Pallas kernels in this process (modes.PallasMode)."""

    mode: str  # "tpu" (TPU interpret mode), "hlo" (generic interpreter) or "none" (compiled)

    @property
    def description(self) -> str: ...

    @property
    def interpret(self) -> bool:
        """The `interpret=` argument for a pallas_call or kernel factory that takes one."""
        ...

    @property
    def batch_with_map(self) -> bool:
        """True where jax.vmap over a Pallas kernel fails (TPU interpret mode): loop with jax.lax.map."""
        ...

    def context(self) -> AbstractContextManager[Any]: ...


class KernelAdapter(abc.ABC):
    """One kernel served by the adapter. Subclasses set the class attributes and the four methods."""

    # Required: the registry refuses a kernel without them.
    api_version: ClassVar[int]        # the version of this API the kernel was written against
    name: ClassVar[str]               # unique among the adapter's kernels: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}
    features: ClassVar[frozenset[str] | tuple[str, ...]]  # names from FEATURES

    version: ClassVar[str | None] = None  # None: its distribution's version (or "unversioned")
    # Distributions whose versions go into the fingerprint beside the kernel's own (e.g. the library it wraps).
    packages: ClassVar[tuple[str, ...]] = ()
    workspace_growth: ClassVar[str] = "unspecified"
    rounds_to_case_dtype: ClassVar[tuple[str, ...]] = ()
    causal_alignment: ClassVar[str] = "case"
    fully_masked_row: ClassVar[str] = "zeros"
    masked_nan_leaks: ClassVar[tuple[str, ...]] = ()
    # Paged: the unreadable slots it loads and masks after the dot; the adapter gives it zeros there.
    reads_unreadable_slots: ClassVar[tuple[str, ...]] = ()
    notes: ClassVar[Mapping[str, str]] = {}  # free-form conventions for reports (layout, scale, ...)

    def description(self, mode: Mode) -> str:
        """One line for `attngate kernels`: what the kernel calls, and how it runs here."""
        return f"{self.name} ({mode.description})"

    @abc.abstractmethod
    def unsupported(self, case: Case, mode: Mode) -> str | None:
        """Why the kernel cannot express `case` exactly (shown as the skip reason), or None."""

    def cannot_run(self, case: Case, mode: Mode) -> str | None:
        """Why the kernel cannot run `case` on this backend in this mode although it expresses
        it (a Mosaic kernel off a TPU, one the TPU interpreter fails on: say what was measured),
        or None. Its outputs, timings and memory are then skips with this reason, while its TPU
        program is still lowered and checked. Asked only after `unsupported` returned None."""
        return None

    @abc.abstractmethod
    def prepare(self, case: Case, tensors: Tensors, mode: Mode) -> tuple[Any, ...]:
        """The arguments of the built function (device arrays) from the protocol's inputs:
        float32 q, k, v [B, S, H, D] (bf16-exact on a bf16 case; see `operand`), and bias,
        segment_ids_q / segment_ids_kv when the case has them. A paged case (case.paged)
        has q [total_q, Hq, D], k_pages / v_pages [pages, page_size, Hkv, D(v)] and int32
        page_table [B, pages_per_seq], kv_lens [B], cu_q_lens [B + 1] instead."""

    @abc.abstractmethod
    def build(self, case: Case, mode: Mode) -> Callable[..., Any]:
        """A jitted function of the prepared arguments returning the kernel's output."""

    @abc.abstractmethod
    def finish(self, case: Case, out: Any) -> np.ndarray:
        """The output as [B, Sq, Hq, Dv] float32 (see `as_output`); a paged case's [total_q, Hq, Dv]."""

    def conventions(self) -> dict[str, Any]:
        """The declarations and notes as /v1/kernels reports them."""
        return {"causal_alignment": self.causal_alignment, "fully_masked_row": self.fully_masked_row,
                "masked_nan_leaks": list(self.masked_nan_leaks), "notes": dict(self.notes),
                "reads_unreadable_slots": list(self.reads_unreadable_slots)}


Factory: TypeAlias = Callable[[], "KernelAdapter | list[KernelAdapter] | tuple[KernelAdapter, ...] | Iterator[KernelAdapter]"]


def operand(x: np.ndarray, case: Case) -> np.ndarray:
    """q, k or v in the case's dtype: a bf16 case's inputs hold bf16-exact float32 values
    (the adapter checked), so the cast is exact."""
    return x.astype(ml_dtypes.bfloat16) if case.dtype == "bf16" else np.ascontiguousarray(x, np.float32)


def as_output(x: Any) -> np.ndarray:
    """A kernel's output (any float dtype, bf16 included) widened to float32 numpy."""
    return np.asarray(x).astype(np.float32)


def tpu_generation() -> int | None:
    """The TPU generation the kernel's program is for: the TPU's own on a TPU, the adapter's
    `--tpu-target` elsewhere (6 for v6e); None where jax has no tpu_info (jax 0.7) or no
    target is registered (outside the adapter). A kernel that picks block sizes or code paths
    from `jax.devices()[0].device_kind` (a CPU here) asks this instead, so that the program
    checked on a CPU runner is the target's."""
    try:
        from jax._src.pallas.mosaic import tpu_info  # private; the adapter registers its target there
    except ImportError:
        return None
    try:
        return int(tpu_info.get_tpu_info().generation)
    except ValueError:  # "Unsupported TPU device kind: cpu": nothing registered for this backend
        return None


__all__ = [
    "API_VERSION", "CAUSAL_ALIGNMENTS", "FEATURES", "FULLY_MASKED_ROWS", "MASKED_NAN_INPUTS", "ROUNDINGS",
    "UNREADABLE_SLOTS", "WORKSPACE_GROWTHS",
    "Case", "Factory", "KernelAdapter", "Mode", "Tensors",
    "as_output", "operand", "tpu_generation",
]
