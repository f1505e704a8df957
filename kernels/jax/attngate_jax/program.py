"""The program a kernel would run on a TPU: lowered with jax.export for platform "tpu" on
whatever backend the adapter runs (a CPU here), without running anything.

Each Pallas kernel lowers to a `stablehlo.custom_call @tpu_custom_call` whose backend_config
holds the Mosaic kernel as MLIR bytecode. The bytecode's header names the MLIR version, so
the body is compared as text: parsed with jaxlib's MLIR bindings (the tpu dialect
registered, mosaic-serde undone) and printed without locations. The StableHLO around it is
printed without locations too, each body replaced by its hash. What libtpu's compiler does
after Mosaic (layouts, scheduling, the LLO) is not seen: it needs libtpu and a TPU.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import traceback
from collections.abc import Callable
from typing import Any

import jax

# --tpu-target names and tpu_info.ChipVersion members (jax >= 0.8 has tpu_info).
TARGETS = {"v4": "TPU_V4", "v5e": "TPU_V5E", "v5p": "TPU_V5P", "v6e": "TPU_V6E", "7x": "TPU_7X"}
DEFAULT_TARGET = "v6e"


class ProgramError(RuntimeError):
    """The kernel does not lower for the TPU here; the message is the lowering's own."""


def register_target(target: str, backend: str) -> str:
    """Makes Mosaic's lowering rules that ask for the TPU generation (tpu_info.get_tpu_info)
    see `target` on a non-TPU backend; returns what the fingerprint records. jax 0.7 has no
    tpu_info (its rules do not ask): the target is then recorded as not applied."""
    if backend == "tpu":
        return "the TPU's own"
    try:
        from jax._src.pallas.mosaic import tpu_info  # private: guarded, and tested per venv
    except ImportError:
        return f"{target} (not applied: jax {jax.__version__} has no tpu_info)"
    chip = getattr(tpu_info.ChipVersion, TARGETS[target])
    tpu_info.registry[backend] = lambda: tpu_info.get_tpu_info_for_chip(chip, 1)
    return target


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _part(kind: str, name: str, text: str) -> dict[str, Any]:
    return {"kind": kind, "name": name, "sha256": _sha(text), "lines": text.count("\n") + 1, "text": text}


def _custom_calls(op: Any) -> list[Any]:
    found = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "stablehlo.custom_call":
                    found.append(inner)
                found.extend(_custom_calls(inner.operation))
    return found


def _mosaic_text(body: bytes) -> tuple[str, str]:
    """The Mosaic module's text without locations, and its first function's name."""
    from jax._src.interpreters import mlir
    from jax._src.lib import tpu
    from jaxlib.mlir import ir
    from jaxlib.mlir.passmanager import PassManager
    ctx = mlir.make_ir_context()
    tpu.register_dialect(ctx)
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(body)
        PassManager.parse("builtin.module(mosaic-serde{serialize=false})").run(module.operation)
        name = "mosaic"
        for op in module.body.operations:
            if "sym_name" in op.attributes:
                name = ir.StringAttr(op.attributes["sym_name"]).value
                break
        return module.operation.get_asm(enable_debug_info=False), name


def decode(stablehlo: str) -> list[dict[str, Any]]:
    """The parts of an exported module: each Mosaic body, then the StableHLO around them."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir
    ctx = mlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    parts: list[dict[str, Any]] = []
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(stablehlo)
        for call in _custom_calls(module.operation):
            if ir.StringAttr(call.attributes["call_target_name"]).value != "tpu_custom_call":
                continue
            config = json.loads(ir.StringAttr(call.attributes["backend_config"]).value)
            custom = config.get("custom_call_config", {})
            body = custom.pop("body", None)
            if body is None:
                continue
            text, name = _mosaic_text(base64.b64decode(body))
            part = _part("mosaic", name, text)
            parts.append(part)
            custom["body_sha256"] = part["sha256"]
            call.attributes["backend_config"] = ir.StringAttr.get(json.dumps(config, sort_keys=True))
        parts.append(_part("stablehlo", "stablehlo", module.operation.get_asm(enable_debug_info=False)))
    return parts


def _abstract(x: Any) -> Any:
    return jax.ShapeDtypeStruct(x.shape, x.dtype) if hasattr(x, "shape") and hasattr(x, "dtype") else x


def _raised_at(e: BaseException) -> str:
    """Where an exception without a message (a bare assert) was raised: "file.py:570: the line"."""
    while e.__cause__ is not None and not str(e).strip():
        e = e.__cause__
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return "(no message)"
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno}: {(last.line or '').strip()}"


def lower(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    """Lowers fn(*args) for the TPU; raises ProgramError with the lowering's message."""
    from jax import export  # jax 0.7 does not import it with jax
    start = time.perf_counter()
    jitted = fn if hasattr(fn, "trace") else jax.jit(fn)
    try:
        exported = export.export(jitted, platforms=["tpu"])(*jax.tree.map(_abstract, args))
        text = exported.mlir_module()
    except Exception as e:  # the lowering's message is the reason: a skip, not an adapter bug
        message = " ".join(line.strip() for line in str(e).splitlines() if line.strip()) or _raised_at(e)
        raise ProgramError(f"{type(e).__name__}: {message[:1000]}") from e
    parts = decode(text)
    return {"parts": parts, "seconds": time.perf_counter() - start}
