"""One pass of the JAX adapter's kernels over a suite, as the harness would make it, and the
drift between two such passes. Measures what kernels/jax/README.md reports.

    # a pass: run + memory calls + timing repetitions per case x kernel, outputs saved
    .venv/jax-new/bin/python tests/bench/jax_suite_pass.py pass --suite suites/jax-smoke.json \
        --attngate build/attngate --interpret tpu --out /tmp/pass-new-tpu
    # drift between two passes (bit-identical or not, share of elements changed, max change)
    python3 tests/bench/jax_suite_pass.py drift /tmp/pass-old-tpu /tmp/pass-new-tpu

Inputs come from `attngate inputs` (the harness's own generator), outputs are judged
against the checked-in goldens with the harness's tolerance rule
(2 x straightforward error + 2 ulp x max |golden|).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))


def protocol_case(desc, tensors):
    s = desc["shape"]
    return {**{k: s[k] for k in ("batch", "seq_q", "seq_k", "heads_q", "heads_kv", "head_dim", "head_dim_v")},
            "dtype": desc["dtype"], "scale": desc["scale"], "softcap": desc["softcap"], "causal": desc["causal"],
            "causal_alignment": desc["causal_alignment"], "window": desc["window"],
            "bias_shape": list(tensors["bias"].shape) if "bias" in tensors else None,
            "segment_ids": "segment_ids_q" in tensors, "block_q": 0, "block_k": 0,
            # A paged case (docs/protocol.md#a-paged-case): the lengths and the pool from case.json.
            "paged": {k: desc["paged"][k] for k in ("q_lens", "kv_lens", "page_size", "pages", "pages_per_seq", "layout")}
            if "paged" in desc else None}


def judge(out, golden, entry):
    ulp = 2.0 ** -7 if entry["case_dtype"] == "bf16" else 2.0 ** -23
    tol = 2 * entry["straightforward_max_abs_error"] + 2 * ulp * entry["output_max_abs"]
    if not np.array_equal(np.isnan(out), np.isnan(golden)):
        return "fail", float("inf"), tol
    finite = np.isfinite(golden)
    err = float(np.max(np.abs(np.where(finite, out - golden, 0)), initial=0.0))
    return ("pass" if err <= tol else "fail"), err, tol


def run_pass(args):
    from jax_adapter_support import Adapter
    import oracle
    with open(args.suite) as f:
        suite = json.load(f)
    goldens = os.path.join(args.goldens or os.path.join("baselines", "goldens", suite["name"]))
    with open(os.path.join(goldens, "manifest.json")) as f:
        manifest = {c["case"]: c for c in json.load(f)["cases"]}
    os.makedirs(args.out, exist_ok=True)
    adapter = Adapter("--interpret", args.interpret)
    _, hello = adapter.request("GET", "/v1/hello")
    rows, started = [], time.monotonic()
    try:
        for case_spec in suite["cases"]:
            cid = case_spec["id"]
            if args.case and cid not in args.case:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([args.attngate, "inputs", "--suite", args.suite, "--case", cid, "--out", tmp],
                               check=True, capture_output=True)
                desc, tensors = oracle.load_case(tmp)
            case = protocol_case(desc, tensors)
            names = adapter.upload(cid, tensors)
            golden = np.load(os.path.join(goldens, manifest[cid]["file"]))
            if case["paged"] is not None:  # the harness stores [1, T, Hq, Dv]; the adapter answers [T, Hq, Dv]
                golden = golden[0]
            for kernel in case_spec.get("kernels", suite["kernels"]):
                t0 = time.monotonic()
                row = {"case": cid, "kernel": kernel}
                run = adapter.call("run", kernel, case, names, output=f"{cid}.out")
                if run.get("ok"):
                    out = adapter.get_tensor(f"{cid}.out")
                    np.save(os.path.join(args.out, f"{cid}.{kernel}.npy"), out)
                    row["verdict"], row["max_abs_error"], row["tolerance"] = judge(out, golden, manifest[cid])
                    row.update(compile_s=run["compile_s"], run_s=run["run_s"])
                    mem = adapter.call("memory", kernel, case, names, warmup_calls=suite.get("warmup_calls", 2),
                                       calls=args.memory_calls)
                    row["live_arrays"] = [min(mem["live_arrays"]), max(mem["live_arrays"])]
                    row["peak_rss_mb"] = round(mem["peak_rss_bytes"] / 2 ** 20, 1)
                    perf = adapter.call("time", kernel, case, names, warmup=1, repetitions=args.repetitions,
                                        min_time_s=args.min_time_s)
                    row["median_s"] = float(np.median(perf["samples_s"]))
                elif "unsupported" in run:
                    row["verdict"], row["reason"] = "unsupported", run["unsupported"]
                else:
                    row["verdict"], row["reason"] = "error", run["error"][:300]
                row["wall_s"] = round(time.monotonic() - t0, 2)
                rows.append(row)
                print(f"{cid:40s} {kernel:14s} {row['verdict']:11s} {row['wall_s']:7.2f}s "
                      f"{row.get('max_abs_error', ''):>10} {row.get('reason', '')[:90]}", flush=True)
            adapter.request("DELETE", "/v1/tensors")
    finally:
        adapter.shutdown()
    total = time.monotonic() - started
    per_kernel = {}
    for r in rows:
        per_kernel[r["kernel"]] = per_kernel.get(r["kernel"], 0.0) + r["wall_s"]
    summary = {"fingerprint": hello["fingerprint"], "interpret": args.interpret, "wall_s": round(total, 1),
               "wall_s_per_kernel": {k: round(v, 1) for k, v in per_kernel.items()}, "rows": rows}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"pass: {total:.1f} s; per kernel {summary['wall_s_per_kernel']}")


def drift(args):
    with open(os.path.join(args.a, "summary.json")) as f:
        rows_a = {(r["case"], r["kernel"]): r for r in json.load(f)["rows"]}
    with open(os.path.join(args.b, "summary.json")) as f:
        rows_b = {(r["case"], r["kernel"]): r for r in json.load(f)["rows"]}
    print(f"{'case':40s} {'kernel':14s} drift")
    for key in sorted(set(rows_a) | set(rows_b), key=lambda k: (k[1], k[0])):
        ra, rb = rows_a.get(key, {}), rows_b.get(key, {})
        va, vb = ra.get("verdict"), rb.get("verdict")
        fa, fb = (os.path.join(d, f"{key[0]}.{key[1]}.npy") for d in (args.a, args.b))
        if os.path.exists(fa) and os.path.exists(fb):
            a, b = np.load(fa), np.load(fb)
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            if same.all():
                text = "bit-identical"
            else:
                diff = np.abs(np.where(same, 0, a.astype(np.float64) - b))
                text = f"{100 * (~same).mean():.1f}% of elements changed, max |change| {np.nanmax(diff):.2e}"
        else:
            text = "-"
        if va != vb:
            text += f"  [{va} -> {vb}]"
        print(f"{key[0]:40s} {key[1]:14s} {text}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pass")
    a.add_argument("--suite", required=True)
    a.add_argument("--attngate", required=True)
    a.add_argument("--goldens")
    a.add_argument("--interpret", default="auto")
    a.add_argument("--out", required=True)
    a.add_argument("--case", action="append")
    a.add_argument("--memory-calls", type=int, default=10)
    a.add_argument("--repetitions", type=int, default=9)
    a.add_argument("--min-time-s", type=float, default=0.001)
    d = sub.add_parser("drift")
    d.add_argument("a")
    d.add_argument("b")
    args = p.parse_args()
    run_pass(args) if args.cmd == "pass" else drift(args)


if __name__ == "__main__":
    main()
