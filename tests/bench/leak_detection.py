"""Leak-detection limit: the smallest leak per call the memory gate reliably flags.

Runs the test plugin's kernels that keep 1, 2, 4, 8, 16 and 64 bytes per call (leak-N,
leaky-slow) and the clean built-in flash kernel, each on a few small cases, many times,
with the default series of 20 measured calls, and prints how often each is flagged.

    python3 tests/bench/leak_detection.py --attngate build/attngate \
        --plugin build/tests/libattngate_faulty_kernels.so --runs 10
"""
import argparse
import json
import os
import subprocess
import tempfile

KERNELS = ["flash", "leak-1", "leak-2", "leak-4", "leak-8", "leak-16", "leaky-slow"]
SUITE = {
    "name": "leak-detection", "seed": 9,
    "kernels": KERNELS,
    "cases": [
        {"id": "mha", "seq_q": 64, "heads_q": 2, "head_dim": 16},
        {"id": "causal_bf16", "seq_q": 96, "heads_q": 2, "head_dim": 16, "causal": True, "dtype": "bf16"},
        {"id": "decode", "seq_q": 1, "seq_k": 200, "heads_q": 4, "heads_kv": 1, "head_dim": 32, "causal": True},
    ],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attngate", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    flagged = {k: 0 for k in KERNELS}
    slopes = {k: [] for k in KERNELS}
    total = {k: 0 for k in KERNELS}
    with tempfile.TemporaryDirectory(prefix="attngate-leaks-") as d:
        suite = os.path.join(d, "suite.json")
        with open(suite, "w") as f:
            json.dump(SUITE, f)
        out = os.path.join(d, "results.json")
        for _ in range(args.runs):
            subprocess.run([os.path.abspath(args.attngate), "run", "--suite", suite, "--checks", "memory",
                            "--plugin", os.path.abspath(args.plugin), "--out", out], capture_output=True, check=False)
            with open(out) as f:
                for entry in json.load(f)["results"]:
                    memory = [c for c in entry["checks"] if c["check"] == "memory"][0]
                    total[entry["kernel"]] += 1
                    flagged[entry["kernel"]] += memory["verdict"] == "fail"
                    slopes[entry["kernel"]].append(memory["metrics"].get("leak_bytes_per_call", float("nan")))
    for k in KERNELS:
        s = sorted(slopes[k])
        print(f"{k:>11}: flagged {flagged[k]:>3}/{total[k]} case runs; heap slope {s[0]:.1f} to {s[-1]:.1f} B/call")


if __name__ == "__main__":
    main()
