#!/usr/bin/env python3
"""Diff two results.json files apart from what changes from run to run: times, timing
samples and everything computed from them (medians, ratios, CIs, p-values, the perf
decision's status and reason, cost per token, the calibration workload), the run's start,
a regression's second timing (there only after a first one), and the process's memory
(RSS moves with the allocator and the page cache; the heap level with the harness's own
allocations, which a forked kernel child inherits).
A case's verdict and reason and the run's verdict and counts are left out too: they are
derived from the checks' verdicts and reasons, which are compared. Everything else, key
order included, must be identical: the proof that a change of the code that writes
results.json did not change its format.

    python3 tests/support/results_diff.py before.json after.json

Exit 0 when identical, 1 with a unified diff of the normalised files otherwise."""
import difflib
import json
import re
import sys

# Keys whose values are timings or follow from timings, anywhere in the document.
TIMING_KEYS = {
    "started_at", "seconds", "compile_s", "date", "at",
    "samples_s", "median_s", "mad_s", "tokens_per_s", "gflops",
    "baseline_samples_s", "baseline_median_s", "ratio", "ci_low", "ci_high", "p_value", "p_adjusted",
    "relative_noise", "required_repetitions",
    "calibration_s", "parallel_calibration_s", "baseline_calibration_s", "baseline_parallel_calibration_s",
    "calibration_ratio", "parallel_calibration_ratio", "absolute_ratio",
    "usd_per_million_tokens", "baseline_usd_per_million_tokens",
    "monthly_cost", "device_hours_per_month", "baseline_monthly_cost", "change", "change_pct", "change_pct_ci_low",
}
# There only when the timing was so: a regression's second timing (reproduction_*), and a
# workload's cost at the CIs' lower ends (only when every shape's ratio is confident).
REPRODUCTION_PREFIX = "reproduction_"
TIMED_PRESENCE = {"change_pct_ci_low"}
# Derived from the checks' verdicts and reasons, which are compared (a perf check's blanked):
# a case's verdict and reason, and the run's verdict and counts.
DERIVED = {"verdict", "reason", "summary"}
# The process's resident memory, and what is fitted to it; and the process heap, which the
# kernel's child inherits from the harness when it forks (its level moves with the harness's
# own allocations; its slope, leak_bytes_per_call, is what the memory check reads).
RSS_KEYS = {"rss_bytes", "rss_slope_bytes_per_call", "rss_peak_delta_bytes", "probe_rss_peak_delta_bytes", "heap_live_bytes"}
# Checks whose verdict, reason and notes are the timing's (a perf decision on a shared machine).
TIMED_CHECKS = {"perf", "cost"}
# Keys that are the timing's only inside such a check: the perf decision's status and mode
# (a numerics check's status is its bits' and is compared), and the repetitions it took.
TIMED_CHECK_KEYS = {"status", "mode", "repetitions"}
BLANK = "<run-to-run>"


class Obj(list):
    """A JSON object as its (key, value) pairs, in file order."""


def normalise(v, key=None, timed=False, top=False):
    """`timed`: inside a perf or cost check, or a workload, whose verdict and reason are the
    timing's; `top`: the document or a case x kernel, whose verdict is derived."""
    if key in TIMING_KEYS or key in RSS_KEYS or (timed and key in TIMED_CHECK_KEYS):
        return BLANK
    if isinstance(v, Obj):
        here = timed or dict(v).get("check") in TIMED_CHECKS
        blank = ("verdict", "reason", "notes") if here else DERIVED if top else ()
        return Obj((k, BLANK if k in blank else normalise(x, k, here, k == "results"))
                   for k, x in v if not k.startswith(REPRODUCTION_PREFIX) and k not in TIMED_PRESENCE)
    if isinstance(v, list):
        return [normalise(x, None, timed or key == "workloads", top) for x in v]
    return v


def dump(v, indent=0):
    pad = "  " * indent
    if isinstance(v, Obj):
        if not v:
            return "{}"
        return "{\n" + ",\n".join(f"{pad}  {json.dumps(k)}: {dump(x, indent + 1)}" for k, x in v) + f"\n{pad}}}"
    if isinstance(v, list):
        if all(not isinstance(x, list) for x in v):
            return json.dumps(v)
        return "[\n" + ",\n".join(f"{pad}  {dump(x, indent + 1)}" for x in v) + f"\n{pad}]"
    return json.dumps(v)


def lines(path):
    with open(path) as f:
        doc = json.load(f, object_pairs_hook=Obj)
    return dump(normalise(doc, top=True)).splitlines()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = lines(sys.argv[1]), lines(sys.argv[2])
    diff = list(difflib.unified_diff(a, b, sys.argv[1], sys.argv[2], lineterm="", n=2))
    if diff:
        print("\n".join(diff))
        return 1
    print(f"identical apart from run-to-run values: {len(a)} normalised lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
