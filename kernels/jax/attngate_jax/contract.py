"""The TPU interpreter's contract checks for Pallas kernels (--interpret-checks): one more
call per case in TPU interpret mode with race detection on 2 simulated cores (the parallel
grid order randomised by a fixed seed), out-of-bounds reads raising and uninitialised
memory filled with NaN. A race or an out-of-bounds read is a violation, in the
interpreter's own words. Each distinct race is one violation, keyed by a signature that
leaves out what changes between runs (the clocks, the cores' order) and names the buffer by
its role: "write/write on output 0 of pallas_call splash_mha_fwd_no_residuals, which the
caller discards", which a suite's reviewed `known_races` can name.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import re
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


_ACCESS = re.compile(r"(read|write) of \('(\w+)', (\d+), \d+, \d+\)\[(.*?)\] from ")


@dataclasses.dataclass(frozen=True)
class _Role:
    """What an HBM buffer of the interpreter holds: an input or output of one pallas_call."""
    call: str                  # the pallas_call's name (its kernel function's)
    kind: str                  # "input" or "output"
    index: int
    discarded: bool = False    # an output no later equation reads and the function does not return

    def __str__(self) -> str:
        return (f"{self.kind} {self.index} of pallas_call {self.call}"
                + (", which the caller discards" if self.discarded else ""))


def _inner_jaxprs(eqn: Any) -> list[Any]:
    found = []
    for value in eqn.params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(v, "jaxpr", v)
            if hasattr(inner, "eqns") and hasattr(inner, "outvars"):
                found.append(inner)
    return found


def _calls(jaxpr: Any, used_outside: list[bool]) -> list[tuple[str, list[Any], list[Any], set[int], list[bool]]]:
    """The pallas_calls in program order: (name, input shapes, output shapes, aliased outputs,
    each output's use). An output is discarded when nothing after it reads it and it is not returned, followed
    positionally into calls whose inner function returns what the equation does (pjit,
    custom_vjp); any other nesting counts as used."""
    calls = []
    for n, eqn in enumerate(jaxpr.eqns):
        later = {id(v) for e in jaxpr.eqns[n + 1:] for v in e.invars}
        returned = {id(v): used_outside[i] for i, v in enumerate(jaxpr.outvars) if i < len(used_outside)}
        used = [not type(v).__name__ == "DropVar" and (id(v) in later or returned.get(id(v), False)) for v in eqn.outvars]
        if eqn.primitive.name == "pallas_call":
            gm = eqn.params["grid_mapping"]
            aliased = {o for _, o in eqn.params.get("input_output_aliases", ())}
            ins = [tuple(v.aval.shape) for v in eqn.invars[gm.num_index_operands:][:gm.num_inputs]]
            inner_debug = getattr(eqn.params.get("jaxpr"), "debug_info", None)
            name = eqn.params.get("name") or getattr(inner_debug, "func_name", None) or "?"
            calls.append((str(name), ins, [tuple(v.aval.shape) for v in eqn.outvars], aliased, used))
        for inner in _inner_jaxprs(eqn):
            calls += _calls(inner, used if len(inner.outvars) == len(eqn.outvars) else [True] * len(inner.outvars))
    return calls


def _roles(fn: Callable[..., Any], args: tuple[Any, ...], allocations: list[tuple[int, tuple[int, ...]]]) -> dict[int, _Role]:
    """Each HBM buffer's role, from the order the interpreter allocates them (a pallas_call's
    inputs, then its outputs that alias none) and the pallas_calls in program order, repeated
    while they run again. {} when the allocations do not follow that order (their count, or a
    shape that is not the slot's, padded up to its blocks)."""
    try:
        jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
        calls = _calls(jaxpr, [True] * len(jaxpr.outvars))  # the kernel's results are used
    except Exception:  # a kernel whose jaxpr cannot be made outside its call: no roles
        return {}
    slots = [(_Role(name, kind, i, kind == "output" and not used[i]), shape)
             for name, ins, outs, aliased, used in calls
             for kind, i, shape in [("input", i, s) for i, s in enumerate(ins)]
             + [("output", o, s) for o, s in enumerate(outs) if o not in aliased]]
    if not slots or len(allocations) % len(slots):
        return {}
    roles = {}
    for n, (buf, shape) in enumerate(allocations):
        role, want = slots[n % len(slots)]
        if len(shape) != len(want) or any(got < w for got, w in zip(shape, want)):
            return {}
        roles[buf] = role
    return roles


def races(printed: str, roles: dict[int, _Role] | None = None) -> list[str]:
    """The distinct races in the interpreter's output, each "`<signature>` (<n> times): <first
    message>". The signature names the two accesses' kinds, sorted so that the order the seed
    gave the cores does not change it, and the buffer by its role where known ("write/write on
    output 0 of pallas_call splash_mha_fwd_no_residuals, which the caller discards"), else by
    the interpreter's buffer id, which depends on allocation order."""
    found: dict[str, tuple[int, str]] = {}
    for block in printed.split("RACE DETECTED")[1:]:
        accesses = _ACCESS.findall(block)
        if len(accesses) < 2:
            continue
        (k1, space, buf, _), (k2, _, _, _) = accesses[:2]
        role = (roles or {}).get(int(buf))
        where = f"on {role}" if role else f"on {space} buffer {buf}"
        signature = f"{'/'.join(sorted((k1, k2)))} {where}"
        count, message = found.get(signature, (0, " ".join(block.split())))
        found[signature] = (count + 1, message)
    return [f"`{sig}` ({n} time{'s' if n > 1 else ''}): {msg[:MAX_MESSAGE]}" for sig, (n, msg) in found.items()]


@contextlib.contextmanager
def _recording_hbm_allocations() -> Any:
    """Records the interpreter's HBM buffers in allocation order: [(buffer id, shape)]."""
    recorded: list[tuple[int, tuple[int, ...]]] = []
    try:
        from jax._src.pallas.mosaic.interpret import shared_memory  # private: guarded
        cls = shared_memory.SharedMemory
        original = cls.allocate_buffer
    except (ImportError, AttributeError):
        yield recorded
        return

    def allocate_buffer(self: Any, key: Any, *a: Any, **kw: Any) -> Any:
        # every core allocates an HBM buffer; the first makes it
        if isinstance(key, tuple) and len(key) == 4 and key[0] in ("hbm", "any") and key not in self.mem:
            value = kw.get("value", a[1] if len(a) > 1 else None)
            recorded.append((int(key[1]), tuple(kw.get("logical_shape") or getattr(value, "shape", ()))))
        return original(self, key, *a, **kw)

    cls.allocate_buffer = allocate_buffer
    try:
        yield recorded
    finally:
        cls.allocate_buffer = original


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
    fn = build()
    allocations: list[tuple[int, tuple[int, ...]]] = []
    try:
        with contextlib.redirect_stdout(printed), pltpu.force_tpu_interpret_mode(params), \
                _recording_hbm_allocations() as recorded:
            allocations = recorded
            jax.block_until_ready(fn(*args))
    except Exception as e:  # an out-of-bounds read raises inside the interpreter
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        message = lines[-1] if lines else ""  # a callback's traceback ends with the interpreter's error
        violations.append(f"TPU interpreter: {type(e).__name__}: {message[:MAX_MESSAGE]}")
    finally:
        raced = _races_found()
        pltpu.reset_tpu_interpret_mode_state()
    found = races(printed.getvalue(), _roles(fn, args, allocations) if "RACE DETECTED" in printed.getvalue() else None)
    if not found and raced:
        found = ["unparsed (the interpreter flagged a race and printed no message this parser reads)"]
    violations += [f"TPU interpreter: data race on 2 simulated cores (seed {SEED}), race {r}" for r in found]
    return {"violations": violations, "seconds": time.perf_counter() - start,
            "watched": "TPU interpreter: races on 2 simulated cores, out-of-bounds reads, uninitialised memory as NaN"}
