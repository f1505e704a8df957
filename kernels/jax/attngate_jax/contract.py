"""The TPU interpreter's contract checks for Pallas kernels (--interpret-checks): one more
call per case in TPU interpret mode with race detection on 2 simulated cores (the parallel
grid order randomised by a fixed seed), out-of-bounds reads raising and uninitialised
memory filled with NaN. A race or an out-of-bounds read is a violation, in the
interpreter's own words (the first race: the buffer, the ranges, the two cores).
"""
from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.experimental.pallas.tpu as pltpu

SEED = 36
MAX_MESSAGE = 1500


def available() -> str | None:
    """Why the checks cannot run with this jax, or None."""
    if not hasattr(pltpu, "force_tpu_interpret_mode"):
        return f"jax {jax.__version__} has no pltpu.force_tpu_interpret_mode"
    try:
        pltpu.InterpretParams(detect_races=True, num_cores_or_threads=2, random_seed=SEED)
    except TypeError as e:
        return f"jax {jax.__version__}: InterpretParams does not take race detection on 2 cores ({e})"
    return None


def uses_pallas(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    return "pallas_call" in str(jax.make_jaxpr(fn)(*args))


def _races_found() -> bool:
    try:
        from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc  # private: guarded
    except ImportError:
        return False
    return bool(getattr(ipc, "races", None) is not None and ipc.races.races_found)


def check(build: Callable[[], Callable[..., Any]], args: tuple[Any, ...]) -> dict[str, Any]:
    """Runs a freshly built kernel once under the checking interpreter; its violations."""
    params = pltpu.InterpretParams(detect_races=True, num_cores_or_threads=2, out_of_bounds_reads="raise",
                                   uninitialized_memory="nan", random_seed=SEED)
    printed = io.StringIO()
    violations: list[str] = []
    start = time.perf_counter()
    pltpu.reset_tpu_interpret_mode_state()
    try:
        with contextlib.redirect_stdout(printed), pltpu.force_tpu_interpret_mode(params):
            jax.block_until_ready(build()(*args))
    except Exception as e:  # an out-of-bounds read raises inside the interpreter
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        message = lines[-1] if lines else ""  # a callback's traceback ends with the interpreter's error
        violations.append(f"TPU interpreter: {type(e).__name__}: {message[:MAX_MESSAGE]}")
    finally:
        races = _races_found()
        pltpu.reset_tpu_interpret_mode_state()
    text = printed.getvalue()
    first = text.find("RACE DETECTED")
    if first >= 0 or races:
        detail = " ".join(text[first:].split("RACE DETECTED")[1].split()) if first >= 0 else "(no message printed)"
        violations.append(f"TPU interpreter: data race on 2 simulated cores (seed {SEED}): {detail[:MAX_MESSAGE]}")
    return {"violations": violations, "seconds": time.perf_counter() - start,
            "watched": "TPU interpreter: races on 2 simulated cores, out-of-bounds reads, uninitialised memory as NaN"}
