"""Gate-accuracy benchmark: how often the perf gate cries wolf, and how often it catches a
real slowdown, in baseline mode and in paired A/B mode, on this machine.

Runs repeated A/A comparisons of the same build (every regression flagged is a false
alarm) and comparisons against injected slowdowns of 2, 5 and 10% (the test plugin's
`flash-slowdown` kernel adds that much extra work per call). Prints the false-alarm rate
per suite run and the detection rate per case and per suite run, and writes them as JSON.

    python3 tests/bench/gate_accuracy.py --attngate build/attngate \
        --plugin build/tests/libattngate_faulty_kernels.so --aa-runs 100 --effect-runs 20
"""
import argparse
import json
import os
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


def statuses(results_path):
    with open(results_path) as f:
        results = json.load(f)
    out = []
    for entry in results["results"]:
        for check in entry["checks"]:
            if check["check"] == "perf":
                out.append(check["metrics"].get("status", "?"))
    return out


def env_with(pct):
    return dict(os.environ, ATTNGATE_TEST_SLOWDOWN_PCT=str(pct))


def baseline_mode_run(args, work, pct, out):
    cmd = [args.attngate, "run", "--suite", work["suite"], "--checks", "perf", "--baselines", work["baselines"],
           "--plugin", args.plugin, "--out", out]
    r = subprocess.run(cmd, env=env_with(pct), capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"run failed: {r.stderr}")
    return statuses(out)


def ab_mode_run(args, work, pct, out):
    cmd = [args.attngate, "ab", "--a", args.attngate, "--b", f"env ATTNGATE_TEST_SLOWDOWN_PCT={pct} {args.attngate}",
           "--suite", work["suite"], "--plugin", args.plugin, "--rounds", str(args.rounds), "--min-time", "0.02", "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"ab failed: {r.stderr}")
    return statuses(out)


def measure(mode, runner, args, work, pct, runs):
    cases = suites_flagged = regressions = too_noisy = 0
    start = time.monotonic()
    for i in range(runs):
        s = runner(args, work, pct, os.path.join(work["dir"], f"{mode}-{pct}-{i}.json"))
        cases += len(s)
        regressions += s.count("regression")
        too_noisy += s.count("too_noisy")
        suites_flagged += any(x == "regression" for x in s)
    seconds = (time.monotonic() - start) / runs
    return {"mode": mode, "slowdown_pct": pct, "suite_runs": runs, "case_verdicts": cases,
            "suite_runs_flagged": suites_flagged, "suite_flag_rate": suites_flagged / runs,
            "case_detection_rate": regressions / cases if cases else 0.0, "too_noisy_rate": too_noisy / cases if cases else 0.0,
            "seconds_per_suite_run": seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attngate", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--aa-runs", type=int, default=100)
    parser.add_argument("--effect-runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--json", default="gate-accuracy.json")
    args = parser.parse_args()
    args.attngate, args.plugin = os.path.abspath(args.attngate), os.path.abspath(args.plugin)
    with tempfile.TemporaryDirectory(prefix="attngate-accuracy-") as d:
        work = {"dir": d, "suite": os.path.join(d, "suite.json"), "baselines": os.path.join(d, "baselines")}
        with open(work["suite"], "w") as f:
            json.dump(SUITE, f)
        # Baseline mode needs a recorded baseline of the unmodified kernel first.
        first = os.path.join(d, "baseline-run.json")
        baseline_mode_run(args, work, 0, first)
        subprocess.run([args.attngate, "baseline", "update", "--results", first, "--baselines", work["baselines"],
                        "--checks", "perf", "--yes", "--allow-in-ci", "--reason", "gate-accuracy benchmark"],
                       check=True, capture_output=True)
        rows = []
        for mode, runner in (("baseline", baseline_mode_run), ("ab", ab_mode_run)):
            for pct in (0, 2, 5, 10):
                rows.append(measure(mode, runner, args, work, pct, args.aa_runs if pct == 0 else args.effect_runs))
                r = rows[-1]
                print(f"{mode:8} slowdown {pct:>2}%: {r['suite_runs_flagged']:>3}/{r['suite_runs']} suite runs flagged "
                      f"({100 * r['suite_flag_rate']:.1f}%), case detection {100 * r['case_detection_rate']:.1f}%, "
                      f"too noisy {100 * r['too_noisy_rate']:.1f}%, {r['seconds_per_suite_run']:.1f} s per suite run", flush=True)
    with open(args.json, "w") as f:
        json.dump({"suite": SUITE, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
