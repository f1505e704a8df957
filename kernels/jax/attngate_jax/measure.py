"""Process and device memory readings, and device-side timing of a kernel call."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def reset_peak_rss() -> bool:
    """Resets the kernel's high-water mark of this process's RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def live_arrays() -> tuple[int, int]:
    """(count, bytes) of the jax arrays alive in this process."""
    arrays = jax.live_arrays()
    return len(arrays), sum(a.nbytes for a in arrays)


def device_stats() -> dict[str, Any] | None:
    """device.memory_stats() of the first device, or None where the backend has none (CPU)."""
    try:
        return jax.devices()[0].memory_stats()
    except Exception:
        return None


Fn = Callable[..., Any]


def timed_call(fn: Fn, args: Sequence[Any]) -> tuple[float, Any]:
    """Seconds of one call, ended with block_until_ready, and its output."""
    start = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - start, out


def timed_first_call(fn: Fn, args: Sequence[Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, output) of a call that may trace and compile. The CPU
    time of the process is what compiling costs; unlike the wall time it does not grow
    when other jobs share the machine, so a compile-time gate can stand on one sample."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - start, time.process_time() - cpu, out


def time_samples(fn: Fn, args: Sequence[Any], warmup: int, repetitions: int,
                 min_time_s: float) -> tuple[list[float], int]:
    """(samples, calls per sample): per-call seconds, one sample per repetition: each the mean over as many
    back-to-back calls as it takes to fill min_time_s (calibrated on a warm call)."""
    single = 0.0
    for _ in range(max(warmup, 1)):
        single, out = timed_call(fn, args)
        del out
    calls = max(1, int(min_time_s / single) + 1) if single < min_time_s else 1
    samples = []
    for _ in range(repetitions):
        total = 0.0
        for _ in range(calls):
            t, out = timed_call(fn, args)
            del out
            total += t
        samples.append(total / calls)
    return samples, calls
