"""Gate-accuracy benchmark: how often the perf gate cries wolf, and how often it catches a
real slowdown, per mode, on this machine, quiet and under a background load.

Modes: `baseline` (absolute time against a stored baseline, --no-calibration),
`calibrated` (time relative to the calibration workload timed in the same child, against a
single-run baseline), `window` (each row against the window of its past runs in the store's
history, docs/perf-gate.md#window-baselines: the default once a row has 6 runs), `ab`
(paired A/B of two builds, interleaved) and `instructions` (one call's instructions under
callgrind, plain threshold). Baselines are recorded once, on the quiet machine, before any
load starts: what a CI runner that is busy today compares against. Window mode starts from
--window-runs quiet runs appended to the history, and every A/A run appends itself
(`--append-history`, as main-branch runs do), so its window rolls through the loads as a
CI runner's would; runs with an injected slowdown are judged, never appended. With
--one-case, window mode's slowdown runs slow one case at a time (each of the four in turn,
ATTNGATE_TEST_SLOWDOWN_SEQ_Q and _HEADS_Q) instead of every case: a regression of one row, which
the run-wide shift cannot hide, where the default is a regression of every row at once.

For each load level (stress-ng --cpu N in the background; 0 = none) and mode, it runs A/A
comparisons of the same build (every regression flagged is a false alarm) and
comparisons against injected slowdowns (the test plugin's `flash-slowdown` adds that
percentage of extra work per call; in instructions mode a fixed, FLOP-proportional loop,
ATTNGATE_TEST_SLOWDOWN_WORK=1, whose actual instruction increase is reported as
`median_ratio`). Prints the false-alarm rate per suite run and the detection rate per
case and writes them as JSON.

    python3 tests/bench/gate_accuracy.py --attngate build/attngate \\
        --plugin build/tests/libattngate_faulty_kernels.so --loads 0,1,2 --aa-runs 100 --effect-runs 20
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SUITE = {
    "name": "gate-accuracy", "seed": 7,
    "perf": {"repetitions": 15, "min_time_s": 0.01, "threshold_pct": 5, "alpha": 0.01},
    "kernels": ["flash-slowdown"],
    "cases": [
        {"id": "mha_f32", "seq_q": 128, "heads_q": 2, "head_dim": 32},
        {"id": "causal_f32", "seq_q": 192, "heads_q": 2, "head_dim": 32, "causal": True},
        {"id": "gqa_bf16", "seq_q": 128, "heads_q": 4, "heads_kv": 2, "head_dim": 32, "dtype": "bf16"},
        {"id": "decode_bf16", "seq_q": 1, "seq_k": 512, "heads_q": 8, "heads_kv": 2, "head_dim": 64, "causal": True, "dtype": "bf16"},
    ],
}
MODES = ("baseline", "calibrated", "window", "ab", "instructions")
# With --one-case: the (seq_q, heads_q) that select one case alone, and that case.
ONE_CASE = {(128, 2): "mha_f32", (192, 2): "causal_f32", (128, 4): "gqa_bf16", (1, 8): "decode_bf16"}
# A perf check that the rule judged (the others are skips: too noisy, collecting, ...).
GATED = ("ok", "regression", "improvement")


def verdicts(results_path):
    """(case, status, ratio, reason) of every perf or instructions check."""
    with open(results_path) as f:
        results = json.load(f)
    out = []
    for entry in results["results"]:
        for check in entry["checks"]:
            if check["check"] in ("perf", "instructions"):
                out.append((entry["case"], check["metrics"].get("status", "?"), check["metrics"].get("ratio"),
                            check.get("reason", "")))
    return out


def env_with(pct, work=False, only=None):
    env = dict(os.environ, ATTNGATE_TEST_SLOWDOWN_PCT=str(pct))
    if work:
        env["ATTNGATE_TEST_SLOWDOWN_WORK"] = "1"
    if only is not None:  # (seq_q, heads_q) of the one case slowed
        env["ATTNGATE_TEST_SLOWDOWN_SEQ_Q"], env["ATTNGATE_TEST_SLOWDOWN_HEADS_Q"] = str(only[0]), str(only[1])
    return env


def run_checked(cmd, env=None):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r


def run_cmd(args, work, out, *extra):
    return [args.attngate, "run", "--suite", work["suite"], "--checks", "perf", "--baselines", work["baselines"],
            "--plugin", args.plugin, "--out", out, *extra]


def baseline_mode_run(args, work, pct, out, only=None):
    run_checked(run_cmd(args, work, out, "--no-calibration"), env_with(pct))
    return verdicts(out)


def calibrated_mode_run(args, work, pct, out, only=None):
    run_checked(run_cmd(args, work, out), env_with(pct))
    return verdicts(out)


def window_mode_run(args, work, pct, out, only=None):
    run_checked(run_cmd(args, dict(work, baselines=work["windows"]), out, *(["--append-history"] if pct == 0 else [])),
                env_with(pct, only=only))
    return verdicts(out)


def instructions_mode_run(args, work, pct, out, only=None):
    run_checked(run_cmd(args, work, out, "--perf-metric", "instructions"), env_with(pct, work=True))
    return verdicts(out)


def ab_mode_run(args, work, pct, out, only=None):
    run_checked([args.attngate, "ab", "--a", args.attngate, "--b", f"env ATTNGATE_TEST_SLOWDOWN_PCT={pct} {args.attngate}",
                 "--suite", work["suite"], "--plugin", args.plugin, "--rounds", str(args.rounds), "--max-rounds", str(args.max_rounds), "--min-time", "0.02",
                 "--out", out])
    return verdicts(out)


RUNNERS = {"baseline": baseline_mode_run, "calibrated": calibrated_mode_run, "window": window_mode_run, "ab": ab_mode_run,
           "instructions": instructions_mode_run}


def record_baselines(args, work):
    """Perf (with calibration samples) and instruction baselines of the unmodified kernel."""
    accept = [args.attngate, "baseline", "update", "--baselines", work["baselines"], "--yes", "--allow-in-ci",
              "--reason", "gate-accuracy benchmark"]
    first = os.path.join(work["dir"], "baseline-run.json")
    run_checked(run_cmd(args, work, first), env_with(0))
    subprocess.run([*accept, "--results", first, "--checks", "perf"], check=True, capture_output=True)
    if "window" in args.modes:
        for i in range(args.window_runs):
            run_checked(run_cmd(args, dict(work, baselines=work["windows"]), os.path.join(work["dir"], f"window-fill-{i}.json"),
                                "--append-history"), env_with(0))
    if "instructions" in args.modes:
        counted = os.path.join(work["dir"], "baseline-instructions.json")
        run_checked(run_cmd(args, work, counted, "--perf-metric", "instructions"), env_with(0, work=True))
        subprocess.run([*accept, "--results", counted, "--checks", "instructions"], check=True, capture_output=True)


def measure(mode, args, work, load, schedule):
    """Runs the suite once per entry of `schedule` (the injected slowdown of that run, in
    order) and returns one row of figures per slowdown."""
    tallies = {}
    for i, pct in enumerate(schedule):
        t = tallies.setdefault(pct, {"runs": 0, "cases": 0, "flagged": 0, "regressions": 0, "too_noisy": 0, "gated": 0,
                                     "seconds": 0.0, "ratios": [], "per_case": {}, "per_run": [], "false_alarms": [], "noisy_in_run": 0,
                                     "one": {"slowed_case_gated": 0, "slowed_case_caught": 0, "other_cases_flagged": 0,
                                             "slowed_case_missed": []}})
        only = list(ONE_CASE)[t["runs"] % len(ONE_CASE)] if args.one_case and pct else None
        start = time.monotonic()
        v = RUNNERS[mode](args, work, pct, os.path.join(work["dir"], f"{mode}-{load}-{pct}-{i}.json"), only)
        t["seconds"] += time.monotonic() - start
        for case, s, _, reason in v if only is not None else []:
            if case == ONE_CASE[only]:
                t["one"]["slowed_case_gated"] += s in GATED
                t["one"]["slowed_case_caught"] += s == "regression"
                if s in GATED and s != "regression":  # a slowed row judged and passed: say what the rule saw
                    t["one"]["slowed_case_missed"].append(f"{case}: {reason}")
            elif s == "regression":  # a case not slowed, flagged: a false alarm
                t["one"]["other_cases_flagged"] += 1
                t["false_alarms"].append(f"run {t['runs']}, {case} (not slowed): {reason}")
        statuses = [s for _, s, _, _ in v]
        if pct == 0:  # every regression of an A/A run is a false alarm: keep what the rule saw
            t["false_alarms"] += [f"run {t['runs']}, {case}: {reason}" for case, s, _, reason in v if s == "regression"]
        t["per_run"].append(statuses)
        for case, _, r, _ in v:
            if isinstance(r, (int, float)):
                t["ratios"].append(r)
                t["per_case"].setdefault(case, []).append(r)
        t["runs"] += 1
        t["cases"] += len(statuses)
        t["regressions"] += statuses.count("regression")
        t["too_noisy"] += statuses.count("too_noisy")
        t["noisy_in_run"] += sum(s == "too_noisy" and "in this run" in reason for _, s, _, reason in v)
        t["gated"] += sum(statuses.count(g) for g in GATED)
        t["flagged"] += "regression" in statuses
    rows = []
    for pct, t in sorted(tallies.items()):
        cases, runs = t["cases"], t["runs"]
        rows.append({"mode": mode, "load_cpus": load, "slowdown_pct": pct, "suite_runs": runs, "case_verdicts": cases,
                     "suite_runs_flagged": t["flagged"], "suite_flag_rate": t["flagged"] / runs,
                     "case_detection_rate": t["regressions"] / cases if cases else 0.0,
                     "too_noisy_rate": t["too_noisy"] / cases if cases else 0.0,
                     "too_noisy_in_run_rate": t["noisy_in_run"] / cases if cases else 0.0, "gated_rate": t["gated"] / cases if cases else 0.0,
                     "median_ratio": statistics.median(t["ratios"]) if t["ratios"] else None,
                     "median_ratio_per_case": {c: statistics.median(r) for c, r in t["per_case"].items()},
                     "seconds_per_suite_run": t["seconds"] / runs, "statuses_per_run": t["per_run"],
                     "false_alarms": t["false_alarms"],
                     "interleaved": len(tallies) > 1, **(t["one"] if args.one_case and pct else {})})
    return rows


def interleaved(runs_per_pct):
    """One schedule of every slowdown's runs, spread evenly among each other: {0: 100, 10: 20}
    puts a slowdown run after every fifth A/A run."""
    slots = [((k + 0.5) / n, pct) for pct, n in runs_per_pct.items() for k in range(n)]
    return [pct for _, pct in sorted(slots)]


class Load:
    """stress-ng --cpu N in the background for the duration of a with-block (N = 0: none)."""

    def __init__(self, cpus):
        self.cpus, self.proc = cpus, None

    def __enter__(self):
        if self.cpus:
            if not shutil.which("stress-ng"):
                sys.exit("stress-ng is not installed (apt install stress-ng)")
            self.proc = subprocess.Popen(["stress-ng", "--cpu", str(self.cpus), "--timeout", "0", "--quiet"],
                                         start_new_session=True)
            time.sleep(1.0)
        return self

    def __exit__(self, *exc):
        if self.proc:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attngate", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ", ".join(MODES))
    parser.add_argument("--loads", default="0", help="stress-ng --cpu levels, comma-separated (0: no load)")
    parser.add_argument("--effects", default="2,5,10", help="injected slowdowns in percent, comma-separated")
    parser.add_argument("--aa-runs", type=int, default=100)
    parser.add_argument("--effect-runs", type=int, default=20)
    parser.add_argument("--ab-runs", type=int, default=None, help="A/A and effect runs in ab mode (default: as the others)")
    parser.add_argument("--instruction-runs", type=int, default=None,
                        help="runs per row in instructions mode (default: as the others; its counts do not vary)")
    parser.add_argument("--window-runs", type=int, default=10, help="quiet runs that fill the windows before window mode is measured")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--max-rounds", type=int, default=0, help="ab --max-rounds (0 or at most --rounds: fixed rounds)")
    parser.add_argument("--threads", type=int, default=None,
                        help="the suite's kernel threads (default: the suites' default, 2)")
    parser.add_argument("--perf-threads", type=int, default=None,
                        help="the suite's perf.threads: the kernel threads the perf phase times on (default: --threads; smoke: 1)")
    parser.add_argument("--one-case", action="store_true",
                        help="window mode: slow one case per slowdown run (in turn), not every case")
    parser.add_argument("--interleave", action="store_true",
                        help="run each load's A/A and slowdown runs interleaved, not one block after the other: in window "
                             "mode the slowdown runs then meet the windows as the A/A runs do, not only as they end")
    parser.add_argument("--json", default="gate-accuracy.json")
    args = parser.parse_args()
    args.attngate, args.plugin = os.path.abspath(args.attngate), os.path.abspath(args.plugin)
    args.modes = [m for m in args.modes.split(",") if m]
    if unknown := set(args.modes) - set(MODES):
        sys.exit(f"--modes: unknown {sorted(unknown)}")
    if args.one_case and args.modes != ["window"]:
        sys.exit("--one-case: only with --modes window")
    loads = [int(x) for x in args.loads.split(",")]
    effects = [int(x) for x in args.effects.split(",") if x]
    rows = []
    suite = dict(SUITE, **({"threads": args.threads} if args.threads else {}))
    if args.perf_threads is not None:
        suite["perf"] = dict(suite["perf"], threads=args.perf_threads)
    with tempfile.TemporaryDirectory(prefix="attngate-accuracy-") as d:
        work = {"dir": d, "suite": os.path.join(d, "suite.json"), "baselines": os.path.join(d, "baselines"),
                "windows": os.path.join(d, "windows")}
        with open(work["suite"], "w") as f:
            json.dump(suite, f)
        for store in (work["baselines"], work["windows"]):  # a store must exist before a run reads it
            os.makedirs(store)
        record_baselines(args, work)  # quiet machine, before any load
        for load in loads:
            with Load(load):
                for mode in args.modes:
                    runs_per_pct = {}
                    for pct in [0, *effects]:
                        runs = args.aa_runs if pct == 0 else args.effect_runs
                        if mode == "ab" and args.ab_runs:
                            runs = args.ab_runs
                        if mode == "instructions" and args.instruction_runs:
                            runs = args.instruction_runs
                        runs_per_pct[pct] = runs
                    schedules = ([interleaved(runs_per_pct)] if args.interleave
                                 else [[pct] * runs for pct, runs in runs_per_pct.items()])
                    for schedule in schedules:
                        for r in measure(mode, args, work, load, schedule):
                            rows.append(r)
                            ratio = f"{r['median_ratio']:.3f}" if r["median_ratio"] is not None else "-"
                            print(f"load {load} {mode:12} slowdown {r['slowdown_pct']:>2}%: {r['suite_runs_flagged']:>3}/{r['suite_runs']} "
                                  f"suite runs flagged ({100 * r['suite_flag_rate']:.1f}%), case detection "
                                  f"{100 * r['case_detection_rate']:.1f}%, too noisy {100 * r['too_noisy_rate']:.1f}%, gated "
                                  f"{100 * r['gated_rate']:.1f}%, median ratio {ratio}, {r['seconds_per_suite_run']:.1f} s per suite run; "
                                  "per case " + ", ".join(f"{c} {x:.3f}" for c, x in r["median_ratio_per_case"].items())
                                  + (f"; the slowed case caught in {r['slowed_case_caught']} of the {r['slowed_case_gated']} runs "
                                     f"that gated it, other cases flagged {r['other_cases_flagged']}" if "slowed_case_gated" in r else ""),
                                  flush=True)
                        with open(args.json, "w") as f:  # after every schedule: an interrupted run keeps what it measured
                            json.dump({"suite": suite, "command": sys.argv, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
