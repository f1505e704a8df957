"""The kernel-calling side of the protocol: supports, run, time, memory and profile.

One lock serialises every kernel call, so timings never share the machine with another
request of this adapter. A kernel that raises is a result ({"ok": false, ...}); a request
that does not follow the protocol raises BadRequest (400) or NotFound (404).

A kernel's declared conventions (api.KernelAdapter) decide which cases the adapter
declines on its behalf: a case needing a feature it lacks, a causal alignment it does
not apply, rows without keys it does not fill with zeros, a NaN at a masked key it lets
through. A request with "conformance": true skips the declaration-driven refusals (not
the kernel's own `unsupported`), so that `attngate conform` sees what the kernel does.
"""
from __future__ import annotations

import collections
import io
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterable
from typing import Any

import jax
import ml_dtypes
import numpy as np

from . import contract, measure, paged, program
from .api import KernelAdapter, Tensors
from .case import INT_ROLES, Case, CaseError, first_row_without_keys, nan_at_masked_key, parse_case
from .modes import PallasMode
from .store import NAME, Store

MAX_ERROR_CHARS = 4000
PREPARED_KEPT = 4
EMPTY_ROW_TEXT = {"mean_of_v": "the mean of V", "nan": "NaN"}

Request = dict[str, Any]
Reply = dict[str, Any]


class BadRequest(ValueError):
    status = 400


class NotFound(LookupError):
    status = 404


class Unsupported(Exception):
    """The kernel cannot express this case; the message is the reason."""


def _int_field(req: Request, name: str, default: int, lo: int) -> int:
    v = req.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise BadRequest(f"{name}: expected an integer >= {lo}, got {v!r}")
    return v


def _number_field(req: Request, name: str, default: float, lo: float) -> float:
    v = req.get(name, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= lo:
        raise BadRequest(f"{name}: expected a number >= {lo}, got {v!r}")
    return float(v)


def _conformance(req: Request) -> bool:
    v = req.get("conformance", False)
    if not isinstance(v, bool):
        raise BadRequest(f"conformance: expected true or false, got {v!r}")
    return v


def error_result(exc: BaseException) -> Reply:
    text = f"{type(exc).__name__}: {exc}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + " ..."
    return {"ok": False, "error": text, "error_type": type(exc).__name__}


def declared_reason(kernel: KernelAdapter, case: Case) -> str | None:
    """Why the kernel's declared conventions rule out `case` (judged from the case alone)."""
    align = kernel.causal_alignment
    if align != "case" and (case.causal or case.has_window) and case.seq_q != case.seq_k:
        wanted = "top_left" if case.top_left else "bottom_right"
        if align != wanted:
            side = align.replace("_", "-")
            return (f"causal alignment is {side}: {kernel.name} aligns causal masks and windows {side} always, "
                    f"the case is {wanted.replace('_', '-')} with seq_q {case.seq_q} != seq_k {case.seq_k}")
    if kernel.fully_masked_row != "zeros" and not case.segment_ids:
        row = first_row_without_keys(case)
        if row is not None:
            return empty_row_reason(kernel, row)
    return None


def empty_row_reason(kernel: KernelAdapter, row: tuple[int, int]) -> str:
    fill = EMPTY_ROW_TEXT.get(kernel.fully_masked_row, kernel.fully_masked_row)
    return (f"query row {row[1]} (batch {row[0]}) has no allowed key: {kernel.name} outputs {fill} there, "
            "attngate requires zeros")


Body = Callable[[KernelAdapter, Case, tuple[Any, ...]], Reply]


class Engine:
    def __init__(self, mode: PallasMode, store: Store, kernels: Iterable[KernelAdapter],
                 tpu_target: str = program.DEFAULT_TARGET, interpret_checks: bool = False) -> None:
        self.mode = mode
        self.tpu_target = tpu_target
        self.interpret_checks = interpret_checks
        self._contract: dict[tuple[str, Case], dict[str, Any]] = {}
        self.store = store
        self.kernels = {k.name: k for k in kernels}
        self.lock = threading.Lock()
        self._fns: dict[tuple[str, Case], Callable[..., Any]] = {}
        self._compile_s: dict[tuple[str, Case], float] = {}
        self._compile_cpu_s: dict[tuple[str, Case], float] = {}
        self._prepared: collections.OrderedDict[tuple[Any, ...], tuple[str, Any]] = collections.OrderedDict()
        self._profiles = 0

    # -- request pieces -------------------------------------------------------------

    def kernel(self, req: Request) -> KernelAdapter:
        name = req.get("kernel")
        if not isinstance(name, str):
            raise BadRequest("kernel: expected a kernel name")
        if name not in self.kernels:
            raise NotFound(f"unknown kernel {name!r}: this adapter serves {', '.join(self.kernels)}")
        return self.kernels[name]

    @staticmethod
    def case(req: Request) -> Case:
        try:
            return parse_case(req.get("case"))
        except CaseError as e:
            raise BadRequest(str(e)) from None

    def static_reason(self, kernel: KernelAdapter, case: Case, conformance: bool = False) -> str | None:
        for feature, use in case.required_features().items():
            if feature not in kernel.features:
                return f"{use}: {kernel.name} does not declare the {feature} feature"
        reason = kernel.unsupported(case, self.mode)
        if reason is None and not conformance:
            reason = declared_reason(kernel, case)
        return reason

    def _inputs(self, case: Case, req: Request) -> tuple[dict[str, np.ndarray], tuple[Any, ...]]:
        inputs = req.get("inputs")
        if not isinstance(inputs, dict):
            raise BadRequest("inputs: expected an object of input name -> tensor name")
        shapes = case.input_shapes()
        extra = set(inputs) - set(shapes)
        if extra:
            raise BadRequest(f"inputs: unexpected {sorted(extra)} for this case (expected {sorted(shapes)})")
        tensors: dict[str, np.ndarray] = {}
        versions = []
        for role, shape in shapes.items():
            name = inputs.get(role)
            if not isinstance(name, str):
                raise BadRequest(f"inputs.{role}: missing (the case needs {sorted(shapes)})")
            held = self.store.get(name)
            if held is None:
                raise NotFound(f"inputs.{role}: no tensor named {name!r}")
            arr, version = held
            want = np.int32 if role in INT_ROLES else np.float32
            if arr.dtype != want or arr.shape != tuple(shape):
                raise BadRequest(f"inputs.{role} ({name!r}): expected {np.dtype(want).name} {list(shape)}, "
                                 f"got {arr.dtype.name} {list(arr.shape)}")
            tensors[role] = arr
            versions.append((role, name, version))
        return tensors, tuple(versions)

    def _check_tensors(self, kernel: KernelAdapter, case: Case, t: Tensors, conformance: bool) -> None:
        """Raises BadRequest for inputs that break the protocol, Unsupported for inputs
        (segment ids, NaN) that make this case inexpressible for the kernel."""
        if case.paged is not None:
            why = paged.check_tables(case, t["page_table"], t["kv_lens"], t["cu_q_lens"])
            if why is not None:
                raise BadRequest(why)
        if case.dtype == "bf16":
            for role in ("q", "k_pages", "v_pages") if case.paged is not None else ("q", "k", "v"):
                x = t[role]
                back = x.astype(ml_dtypes.bfloat16).astype(np.float32)
                bad = ~((back == x) | np.isnan(x))
                if bad.any():
                    idx = [int(i) for i in np.argwhere(bad)[0]]
                    raise BadRequest(f"inputs.{role}: a bf16 case needs bf16-exact float32 values; "
                                     f"{x[tuple(idx)]!r} at {idx} is not")
        if conformance:
            return
        seg_q = t.get("segment_ids_q")
        seg_kv = t.get("segment_ids_kv")
        if seg_q is not None and kernel.fully_masked_row != "zeros":
            row = first_row_without_keys(case, seg_q, seg_kv)
            if row is not None:
                raise Unsupported(empty_row_reason(kernel, row) + " (segment ids)")
        for role in kernel.masked_nan_leaks:
            if case.paged is not None:
                hit = paged.nan_at_masked_key(case, t[role + "_pages"], t["page_table"])
            else:
                hit = nan_at_masked_key(case, t[role], seg_q, seg_kv)
            if hit is not None:
                b, j, h = hit
                raise Unsupported(f"NaN in {role} at key {j} (batch {b}, kv head {h}), which some query rows "
                                  f"may not attend: {kernel.name} lets it reach them, attngate ignores masked keys")

    @staticmethod
    def _declared(kernel: KernelAdapter, case: Case, t: dict[str, np.ndarray], conformance: bool) -> Tensors:
        """The inputs as the kernel's declarations ask: a paged kernel that loads whole pages
        and masks after the dot (reads_unreadable_slots) gets zeros, not attngate's NaN,
        in the slots it declares it loads; a NaN there would reach its output as 0 * NaN."""
        if case.paged is None or not kernel.reads_unreadable_slots or conformance:
            return t
        pools = {r: t[r] for r in ("k_pages", "v_pages")}
        return {**t, **paged.with_zeros(case.paged, pools, t["page_table"], kernel.reads_unreadable_slots)}

    def _prepare(self, kernel: KernelAdapter, case: Case, req: Request, conformance: bool) -> tuple[Any, ...]:
        tensors, versions = self._inputs(case, req)
        key = (kernel.name, case, versions, conformance)
        hit = self._prepared.get(key)
        if hit is None:
            try:
                self._check_tensors(kernel, case, tensors, conformance)
                hit = ("args", kernel.prepare(case, self._declared(kernel, case, tensors, conformance), self.mode))
            except Unsupported as e:
                hit = ("unsupported", str(e))
            self._prepared[key] = hit
            while len(self._prepared) > PREPARED_KEPT:
                self._prepared.popitem(last=False)
        self._prepared.move_to_end(key)
        if hit[0] == "unsupported":
            raise Unsupported(hit[1])
        return tuple(hit[1])

    def _fn(self, kernel: KernelAdapter, case: Case) -> Callable[..., Any]:
        key = (kernel.name, case)
        if key not in self._fns:
            self._fns[key] = kernel.build(case, self.mode)
        return self._fns[key]

    def _call(self, kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> tuple[float, Any, bool]:
        """(seconds, output, compiled): the first call of a configuration is its compile."""
        fn = self._fn(kernel, case)
        with self.mode.context():
            seconds, cpu, out = measure.timed_first_call(fn, args)
        key = (kernel.name, case)
        compiled = key not in self._compile_s
        if compiled:
            self._compile_s[key] = seconds
            self._compile_cpu_s[key] = cpu
        return seconds, out, compiled

    def drop_prepared(self) -> None:
        """Forgets prepared arguments (the tensors they came from were deleted)."""
        with self.lock:
            self._prepared.clear()

    # -- endpoints ------------------------------------------------------------------

    def supports(self, req: Request) -> Reply:
        kernel, case = self.kernel(req), self.case(req)
        reason = self.static_reason(kernel, case, _conformance(req))
        return {"supported": True} if reason is None else {"supported": False, "reason": reason}

    def _guarded(self, req: Request, body: Body, lowers_only: bool = False) -> Reply:
        """body(kernel, case, args) for a case the kernel expresses; `lowers_only`: the body
        only lowers it for the TPU, so a kernel that cannot run here (cannot_run) is asked too."""
        kernel, case, conformance = self.kernel(req), self.case(req), _conformance(req)
        reason = self.static_reason(kernel, case, conformance)
        if reason is not None:
            return {"ok": False, "unsupported": reason}
        if not lowers_only:
            with self.lock:
                reason = kernel.cannot_run(case, self.mode)
            if reason is not None:  # "lowers": the harness then asks POST /v1/program
                return {"ok": False, "unsupported": reason, "lowers": True}
        with self.lock:
            try:
                args = self._prepare(kernel, case, req, conformance)
                return body(kernel, case, args)
            except Unsupported as e:
                return {"ok": False, "unsupported": str(e)}
            except (BadRequest, NotFound):
                raise
            except Exception as e:  # the kernel raised: a result, not an HTTP error
                self.mode.after_error()
                return error_result(e)

    def run(self, req: Request) -> Reply:
        out_name = req.get("output")
        if not isinstance(out_name, str) or not NAME.match(out_name):
            raise BadRequest("output: expected a tensor name matching [A-Za-z0-9_.-]{1,128}")

        def body(kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> Reply:
            checked = None  # before the plain call: an out-of-bounds read also fails that one
            if self.interpret_checks and self.mode.mode == "tpu":
                checked = self._interpret_checks(kernel, case, args)
            try:
                seconds, out, compiled = self._call(kernel, case, args)
                if compiled:
                    del out
                    seconds, out, _ = self._call(kernel, case, args)
            except Exception as e:
                if not checked or not checked["violations"]:
                    raise
                self.mode.after_error()
                return {**error_result(e), "contract": checked}
            result = np.ascontiguousarray(kernel.finish(case, out), dtype=np.float32)
            if result.shape != case.output_shape():
                raise RuntimeError(f"{kernel.name} returned shape {list(result.shape)}, "
                                   f"expected {list(case.output_shape())}")
            self.store.put(out_name, result)
            reply = {"ok": True, "output": {"name": out_name, "shape": list(result.shape), "dtype": "float32"},
                     "compile_s": self._compile_s[(kernel.name, case)],
                     "compile_cpu_s": self._compile_cpu_s[(kernel.name, case)], "run_s": seconds}
            if checked is not None:
                reply["contract"] = checked
            return reply
        return self._guarded(req, body)

    def time(self, req: Request) -> Reply:
        warmup = _int_field(req, "warmup", 1, 0)
        reps = _int_field(req, "repetitions", 15, 1)
        min_time = _number_field(req, "min_time_s", 0.0, 0.0)

        def body(kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> Reply:
            compile_s = None
            if (kernel.name, case) not in self._compile_s:
                compile_s, out, _ = self._call(kernel, case, args)
                del out
            fn = self._fn(kernel, case)
            with self.mode.context():
                samples, calls = measure.time_samples(fn, args, warmup, reps, min_time)
            return {"ok": True, "samples_s": samples, "calls_per_sample": calls, "compile_s": compile_s}
        return self._guarded(req, body)

    def memory(self, req: Request) -> Reply:
        warmup = _int_field(req, "warmup_calls", 2, 0)
        calls = _int_field(req, "calls", 10, 1)

        def body(kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> Reply:
            fn = self._fn(kernel, case)
            if (kernel.name, case) not in self._compile_s:
                _, out, _ = self._call(kernel, case, args)
                del out
            series: dict[str, Any] = {"live_arrays": [], "live_array_bytes": [], "rss_bytes": [],
                                      "device_bytes_in_use": []}
            with self.mode.context():
                for _ in range(warmup):
                    jax.block_until_ready(fn(*args))
                peak_reset = measure.reset_peak_rss()
                for _ in range(calls):
                    out = fn(*args)
                    jax.block_until_ready(out)
                    del out
                    count, nbytes = measure.live_arrays()
                    stats = measure.device_stats()
                    series["live_arrays"].append(count)
                    series["live_array_bytes"].append(nbytes)
                    series["rss_bytes"].append(measure.rss_bytes())
                    series["device_bytes_in_use"].append(stats.get("bytes_in_use") if stats else None)
            stats = measure.device_stats()
            peak_rss = measure.peak_rss_bytes() if peak_reset else None
            if peak_rss is None:
                peak_rss = max(series["rss_bytes"])
            if stats is None:
                series["device_bytes_in_use"] = None
            return {"ok": True, "source": "device" if stats else "rss", **series,
                    "device_peak_bytes": stats.get("peak_bytes_in_use") if stats else None,
                    "peak_rss_bytes": peak_rss, "peak_rss_source": "VmHWM" if peak_reset else "samples"}
        return self._guarded(req, body)

    def _interpret_checks(self, kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> dict[str, Any] | None:
        """contract.check once per kernel and case, for Pallas kernels only (None for others)."""
        key = (kernel.name, case)
        if key not in self._contract:
            if not contract.uses_pallas(self._fn(kernel, case), args):
                return None
            self._contract[key] = contract.check(lambda: kernel.build(case, self.mode), args)
        return self._contract[key]

    def program(self, req: Request) -> Reply:
        """The kernel lowered for the TPU (program.py): its Mosaic bodies and StableHLO, hashed."""
        def body(kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> Reply:
            if self.mode.mode == "hlo" and contract.uses_pallas(self._fn(kernel, case), args):
                return {"ok": False, "unsupported": "--interpret hlo replaces pallas_call with the generic "
                                                    "interpreter, so nothing lowers for the TPU (use tpu or none)"}
            try:
                lowered = program.lower(self._fn(kernel, case), args)
            except program.ProgramError as e:
                return {"ok": False, "unsupported": f"does not lower for TPU {self.tpu_target}: {e}"}
            return {"ok": True, "target": self.tpu_target, **lowered}
        return self._guarded(req, body, lowers_only=True)

    def profile(self, req: Request) -> Reply:
        calls = _int_field(req, "calls", 3, 1)

        def body(kernel: KernelAdapter, case: Case, args: tuple[Any, ...]) -> Reply:
            fn = self._fn(kernel, case)
            _, out, _ = self._call(kernel, case, args)  # compiled and warm before the trace
            del out
            with tempfile.TemporaryDirectory(prefix="attngate-profile-") as tmp:
                with self.mode.context(), jax.profiler.trace(tmp):
                    for _ in range(calls):
                        jax.block_until_ready(fn(*args))
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                    tar.add(tmp, arcname="trace")
            self._profiles += 1
            name = f"profile-{self._profiles}-{kernel.name}.tar.gz"
            self.store.put_file(name, buf.getvalue())
            return {"ok": True, "archive": name, "bytes": len(buf.getvalue())}
        return self._guarded(req, body)

