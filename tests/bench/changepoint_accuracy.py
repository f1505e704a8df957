"""How well the history's change-point detection works under this machine's real noise.

1. Noise: `attngate run --checks perf` of a 4-case suite, RUNS times, two ways:
   - run to run: each run's median time per case relative to that case's median over all
     runs (what a history on this shared machine sees, load from other jobs included);
   - within a run: each run's timing samples relative to their own median, resampled 9 at
     a time and their median taken (what a history sees on a quiet, dedicated runner,
     where only the repetitions' own noise moves the median).
2. Synthetic histories of LENGTH runs, SERIES series per scenario, each value drawn from
   that noise: no change (false alarms), a 3% step at run 31, and a ramp of 1% per 10 runs
   from run 31. They are written as history records into a directory store and analysed
   by the real `attngate history --json` (E-divisive, permutation test, >= 1% change).
3. Prints the detection rate and false alarms as a Markdown table.

    python3 tests/bench/changepoint_accuracy.py --attngate build/attngate [--runs 12] [--series 200]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile

SUITE = {"name": "cpnoise", "seed": 9, "perf": {"repetitions": 9, "min_time_s": 0.01}, "kernels": ["flash"],
         "cases": [{"id": "mha_f32", "seq_q": 128, "heads_q": 2, "head_dim": 32},
                   {"id": "causal_f32", "seq_q": 192, "heads_q": 2, "head_dim": 32, "causal": True},
                   {"id": "gqa_bf16", "seq_q": 128, "heads_q": 4, "heads_kv": 2, "head_dim": 32, "dtype": "bf16"},
                   {"id": "long_f32", "seq_q": 384, "heads_q": 1, "head_dim": 32}]}
LENGTH, CHANGE_AT = 60, 30


def measure_noise(attngate, workdir, runs):
    suite = os.path.join(workdir, "cpnoise.json")
    with open(suite, "w") as f:
        json.dump(SUITE, f)
    store = os.path.join(workdir, "noise-store")
    subprocess.run([attngate, "golden", "generate", "--suite", suite, "--store", store], check=True, capture_output=True)
    medians, within = {}, []
    for i in range(runs):
        out = os.path.join(workdir, f"noise-{i}.json")
        subprocess.run([attngate, "run", "--suite", suite, "--store", store, "--checks", "perf", "--out", out],
                       check=True, capture_output=True)
        with open(out) as f:
            for e in json.load(f)["results"]:
                for c in e["checks"]:
                    if c["check"] == "perf":
                        medians.setdefault(e["case"], []).append(c["metrics"]["median_s"])
                        samples = c["metrics"]["samples_s"]
                        center = statistics.median(samples)
                        within.append([x / center - 1 for x in samples])
    pool = []
    for values in medians.values():
        center = statistics.median(values)
        pool += [v / center - 1 for v in values]
    return pool, within


def run_to_run(pool):
    return lambda rng: rng.choice(pool)


def within_run(sets):
    """The median of 9 of one run's relative sample deviations, drawn with replacement."""
    return lambda rng: statistics.median(rng.choice(s) for s in [rng.choice(sets)] * 9)


def write_history(store, suite, scenario, series, noise, rng):
    """LENGTH run records, each with one row per series."""
    values = []
    for _ in range(series):
        v = []
        for i in range(LENGTH):
            effect = 0.0
            if scenario == "step" and i >= CHANGE_AT:
                effect = 0.03
            if scenario == "ramp" and i >= CHANGE_AT:
                effect = 0.01 * (i - CHANGE_AT + 1) / 10
            v.append((1 + effect) * (1 + noise(rng)))
        values.append(v)
    folder = os.path.join(store, "history", suite, "bench", "2026-01")
    os.makedirs(folder, exist_ok=True)
    for i in range(LENGTH):
        rows = [{"c": f"s{j:03d}", "k": "flash", "t": [round(values[j][i], 6)], "v": {}} for j in range(series)]
        at = f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00Z"
        run = f"20260101T{i // 60:02d}{i % 60:02d}00Z-{i:08x}"
        with open(os.path.join(folder, run + ".json"), "w") as f:
            f.write(json.dumps({"schema": 1, "run": run, "at": at, "suite": suite, "machine": "bench", "tool": "bench",
                                "fp": "", "verdict": "pass", "rows": rows}) + "\n")


def analyse(attngate, store, suite):
    r = subprocess.run([attngate, "history", "--suite", suite, "--machine-class", "bench", "--metric", "median_s", "--last", "0",
                        "--json", "--store", store], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--attngate", default="build/attngate")
    p.add_argument("--runs", type=int, default=12)
    p.add_argument("--series", type=int, default=200)
    a = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="attngate-cp-")
    try:
        pool, within = measure_noise(os.path.abspath(a.attngate), workdir, a.runs)
        rng = random.Random(20261130)
        models = {"run to run": run_to_run(pool), "within a run": within_run(within)}
        for name, noise in models.items():
            draws = [noise(rng) for _ in range(2000)]
            sigma = 1.4826 * statistics.median(abs(x - statistics.median(draws)) for x in draws)
            print(f"noise model {name}: robust sigma {100 * sigma:.2f}%, 95th percentile |dev| "
                  f"{100 * sorted(abs(x) for x in draws)[1899]:.2f}%")
        print()
        store = os.path.join(workdir, "store")
        print("| noise | scenario | series | flagged (any change point) | detected near the change | median detection run |")
        print("|---|---|---|---|---|---|")
        for (name, noise), scenario in [(m, s) for m in models.items() for s in ("none", "step", "ramp")]:
            suite = f"cp-{scenario}-{'r2r' if name == 'run to run' else 'within'}"
            write_history(store, suite, scenario, a.series, noise, rng)
            result = analyse(os.path.abspath(a.attngate), store, suite)
            flagged = sum(1 for s in result if s["change_points"])
            near, runs = 0, []
            for s in result:
                up = [c for c in s["change_points"] if c["relative_change"] > 0]
                if scenario == "step":
                    hit = [c for c in up if abs(c["run"] - (CHANGE_AT + 1)) <= 3]
                else:
                    hit = [c for c in up if c["run"] > CHANGE_AT - 3]
                if hit:
                    near += 1
                    runs.append(hit[0]["run"])
            med = statistics.median(runs) if runs else "-"
            label = {"none": "no change (false alarms)", "step": "3% step at run 31", "ramp": "1% per 10 runs from run 31"}[scenario]
            print(f"| {name} | {label} | {len(result)} | {flagged} ({100 * flagged / len(result):.1f}%) | "
                  f"{'-' if scenario == 'none' else f'{near} ({100 * near / len(result):.1f}%)'} | {med} |")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
