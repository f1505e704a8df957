"""How Pallas kernels run here: natively, in TPU interpret mode, or in the generic interpreter.

"tpu":  Pallas TPU interpret mode (the Mosaic interpreter: TPU semantics, simulated
        memory, DMA and semaphores) via pltpu.force_tpu_interpret_mode (jax >= 0.7.2), or
        pallas_call(interpret=pltpu.InterpretParams()) where only that exists (0.6.x).
"hlo":  the generic interpreter (pallas_call(interpret=True): the kernel body as a jitted
        scan over the grid on the host backend). Works from jax 0.4.x on.
"none": compiled for the real backend (a TPU). On CPU every Pallas kernel then raises
        "Only interpret mode is supported on CPU backend".
"""
from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Any

import jax
import jax.experimental.pallas as pallas_module
import jax.experimental.pallas.tpu as pltpu

MODES = ("auto", "tpu", "hlo", "none")


class ModeError(RuntimeError):
    """The requested mode cannot run with this jax."""


def has_tpu_interpret() -> bool:
    return hasattr(pltpu, "force_tpu_interpret_mode") or hasattr(pltpu, "InterpretParams")


def resolve(requested: str, backend: str) -> str:
    if requested == "auto":
        if backend == "tpu":
            return "none"
        return "tpu" if has_tpu_interpret() else "hlo"
    if requested == "tpu" and not has_tpu_interpret():
        raise ModeError(f"jax {jax.__version__} has no TPU interpret mode "
                        "(pltpu.force_tpu_interpret_mode or pltpu.InterpretParams): use --interpret hlo")
    if requested not in MODES:
        raise ModeError(f"unknown interpret mode {requested!r}: expected one of {', '.join(MODES)}")
    return requested


def describe(mode: str) -> str:
    return {"tpu": "TPU interpret mode", "hlo": "generic Pallas interpreter",
            "none": "compiled for the device"}[mode]


class PallasMode:
    """Applies a resolved mode. Install once, before the first kernel is traced: a jitted
    function traced without the interpreter keeps its non-interpreted jaxpr."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._context: Any = None
        if mode == "tpu" and hasattr(pltpu, "force_tpu_interpret_mode"):
            self._context = pltpu.force_tpu_interpret_mode
        elif mode == "tpu":
            self._patch_pallas_call(pltpu.InterpretParams())
        elif mode == "hlo":
            self._patch_pallas_call(True)

    @staticmethod
    def _patch_pallas_call(interpret: Any) -> None:
        # flash_attention.py and splash look up pl.pallas_call at call time, and flash
        # has no interpret argument of its own.
        original = pallas_module.pallas_call
        if getattr(original, "_attngate_patched", False):
            return

        def pallas_call(*args: Any, **kwargs: Any) -> Any:
            kwargs["interpret"] = interpret
            return original(*args, **kwargs)

        pallas_call._attngate_patched = True  # type: ignore[attr-defined]
        pallas_module.pallas_call = pallas_call

    @property
    def description(self) -> str:
        return describe(self.mode)

    @property
    def interpret(self) -> bool:
        """The `interpret=` argument of a pallas_call or kernel factory (splash's is a bool):
        True in hlo mode; in TPU interpret mode the context wins over it."""
        return self.mode == "hlo"

    @property
    def batch_with_map(self) -> bool:
        """jax.vmap over a splash kernel fails in TPU interpret mode when B > 1
        (safe_zip in _get_randomized_grid_coordinates): loop with lax.map there."""
        return self.mode == "tpu"

    def context(self) -> AbstractContextManager[Any]:
        return self._context() if self._context else contextlib.nullcontext()

    def after_error(self) -> None:
        """TPU interpret mode keeps global simulated-memory state; drop it after a failure."""
        if self.mode == "tpu" and hasattr(pltpu, "reset_tpu_interpret_mode_state"):
            try:
                pltpu.reset_tpu_interpret_mode_state()
            except Exception:  # the reset is best effort; the next call reports its own error
                pass
