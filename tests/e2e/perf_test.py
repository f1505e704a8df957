"""End-to-end tests of the perf and cost gate: baselines per machine class, an injected
slowdown caught in baseline mode (calibrated and absolute), paired A/B and compare, "too
noisy" reported instead of passed, workload cost projections with their price source, and
Google Benchmark JSON.

None of them depends on the machine's speed or load (they pass with stress-ng loading
every core): the injected slowdown is ten times the kernel's own time, far beyond what a
loaded runner does to one side of a comparison, and the verdicts they assert about
unchanged kernels are ones no timing can move (no baseline, another machine, too few
repetitions)."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, write_json  # noqa: E402

SUITE = {
    # One kernel thread: a two-thread kernel's calls wait for each other, and on a runner whose
    # cores are all busy such a wait can cost more than the 10x slowdown below (seen under
    # stress-ng --cpu 2). The gate's logic, not the thread pool, is under test here.
    "name": "perf", "seed": 5, "threads": 1,
    "perf": {"repetitions": 15, "min_time_s": 0.01, "threshold_pct": 5},
    "kernels": ["flash-slowdown"],
    "cases": [
        {"id": "mha", "seq_q": 128, "heads_q": 2, "head_dim": 32},
        {"id": "causal_bf16", "seq_q": 160, "heads_q": 2, "head_dim": 32, "causal": True, "dtype": "bf16"},
    ],
}
COMPARE_PY = "/usr/share/benchmark/compare.py"  # Debian's libbenchmark-tools
TOOLS_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv", "tools", "bin", "python")
# Percent of extra work: 10x the kernel's time. A loaded runner (stress-ng on every core)
# slows one side of a comparison by 2-4x at most here, so no load can hide it.
SLOW = 900


class PerfGateTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-perf-")
        self.suite = os.path.join(self.dir, "perf.json")
        self.baselines = os.path.join(self.dir, "baselines")
        os.makedirs(os.path.join(self.baselines, "workloads"))
        shutil.copy(os.path.join(ARGS.source_dir, "baselines", "pricing.json"), self.baselines)
        write_json(os.path.join(self.baselines, "workloads", "serving.json"), {
            "name": "serving", "description": "test workload", "device_class": "gcp-e2-standard-2",
            "kernel": "flash-slowdown",
            "shapes": [{"case": "mha", "requests_per_second": 50, "calls_per_request": 10},
                       {"case": "causal_bf16", "requests_per_second": 50, "calls_per_request": 10}],
            "memory_headroom_bytes": 1e9, "restart_interval_hours": 24, "cost_budget_pct": 5})
        write_json(self.suite, SUITE)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_row_a_kernel_cannot_run_says_why_it_was_not_timed(self):
        """flash-decode declares no bias: its perf and cost rows say so, not that it failed."""
        suite = dict(SUITE, name="nobias", kernels=["flash-decode", "flash"], cases=[
            {"id": "biased", "seq_q": 4, "seq_k": 64, "heads_q": 2, "head_dim": 32, "bias": True}])
        path = os.path.join(self.dir, "nobias.json")
        write_json(path, suite)
        out = os.path.join(self.dir, "nobias-results.json")
        for checks in ("perf", "golden,memory,perf,cost"):
            if "golden" in checks:
                self.assertEqual(attngate("golden", "generate", "--suite", path, "--baselines", self.baselines).returncode, 0)
            r = attngate("run", "--suite", path, "--baselines", self.baselines, "--checks", checks, "--out", out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            row = next(x for x in read_json(out)["results"] if x["kernel"] == "flash-decode")
            for c in row["checks"]:
                if c["check"] in ("perf", "cost"):
                    self.assertEqual((c["verdict"], c["reason"]), ("skip", "not timed: kernel does not support: bias"), checks)
            self.assertIn("1 not timed", r.stdout)

    def run_perf(self, name, slowdown=0, *extra, env_extra=None):
        out = os.path.join(self.dir, name + ".json")
        env = dict(os.environ, ATTNGATE_TEST_SLOWDOWN_PCT=str(slowdown), **(env_extra or {}))
        r = attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--checks", "perf,cost",
                     "--plugin", ARGS.faulty_plugin, "--out", out, *extra, env=env)
        return r, out

    def accept(self, results, *extra, checks="perf"):
        r = attngate("baseline", "update", "--results", results, "--baselines", self.baselines, "--checks", checks,
                     "--yes", "--allow-in-ci", "--reason", "test", *extra)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    @staticmethod
    def perf_checks(path, name="perf"):
        return {e["case"]: [c for c in e["checks"] if c["check"] == name][0] for e in read_json(path)["results"]}

    def test_baseline_mode_catches_an_injected_slowdown_and_prices_it(self):
        r, first = self.run_perf("first")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for check in self.perf_checks(first).values():
            self.assertEqual(check["metrics"]["status"], "no_baseline")
            self.assertEqual(len(check["metrics"]["samples_s"]), 15)
            self.assertGreater(check["metrics"]["gflops"], 0)
        self.accept(first)
        stored = [p for p in os.listdir(os.path.join(self.baselines, "perf"))]
        self.assertEqual(len(stored), 1)  # one machine-class directory

        r, slow = self.run_perf("slow", SLOW)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for case, check in self.perf_checks(slow).items():
            self.assertEqual(check["metrics"]["status"], "regression", (case, check["reason"]))
            self.assertEqual(check["metrics"]["mode"], "calibrated")
            self.assertGreater(check["metrics"]["ci_low"], 1.05)
            self.assertLessEqual(check["metrics"]["p_adjusted"], 0.01)
            # The absolute samples stay beside the calibrated verdict, for reports.
            self.assertEqual(len(check["metrics"]["calibration_s"]), 15)
            self.assertEqual(len(check["metrics"]["baseline_calibration_s"]), 15)
            self.assertGreater(check["metrics"]["absolute_ratio"], 1.05)
            # Timed once more in a fresh child, and there too a regression.
            self.assertEqual(len(check["metrics"]["reproduction_samples_s"]), 15)
            self.assertEqual(len(check["metrics"]["reproduction_calibration_s"]), 15)
            self.assertEqual(check["metrics"]["reproduction_status"], "regression")
            self.assertGreater(check["metrics"]["reproduction_ci_low"], 1.05)
            self.assertIn("reproduced in a second timing", check["reason"])
        workload = read_json(slow)["workloads"][0]
        self.assertEqual(workload["verdict"], "fail")
        self.assertGreater(workload["change_pct"], 5)
        self.assertIn("cloud.google.com", workload["reason"])
        cost = [c for c in read_json(slow)["results"][0]["checks"] if c["check"] == "cost"][0]
        self.assertGreater(cost["metrics"]["usd_per_million_tokens"], cost["metrics"]["baseline_usd_per_million_tokens"])
        self.assertIn("cloud.google.com", cost["metrics"]["price_source"])
        # A row's cost is its time priced: gated exactly when the time was, never a pass beside a skip.
        for path in (first, slow):
            for row in read_json(path)["results"]:
                verdicts = {c["check"]: c for c in row["checks"]}
                self.assertEqual(verdicts["cost"]["verdict"], verdicts["perf"]["verdict"], (path, row["case"], verdicts["cost"]["reason"]))
                if verdicts["perf"]["verdict"] == "skip":
                    self.assertIn("not gated: the time it is priced from was not", verdicts["cost"]["reason"])

        r = attngate("compare", first, slow)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("REGRESSION", r.stdout)
        self.assertEqual(attngate("compare", first, first).returncode, 0)

    def test_a_baseline_without_calibration_still_gates_on_absolute_time(self):
        r, first = self.run_perf("first")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for check in self.perf_checks(first).values():
            self.assertEqual(len(check["metrics"]["calibration_s"]), 15)
            self.assertTrue(all(x > 0 for x in check["metrics"]["calibration_s"]))
        self.accept(first)
        # Make the stored baseline look like one recorded before calibrated baselines.
        machine_dir = os.path.join(self.baselines, "perf", os.listdir(os.path.join(self.baselines, "perf"))[0])
        path = os.path.join(machine_dir, os.listdir(machine_dir)[0])
        doc = read_json(path)
        stripped = 0
        for entry in doc["entries"]:
            for key in ("calibration_s", "parallel_calibration_s", "calibration_workload"):
                stripped += entry["values"].pop(key, None) is not None
        self.assertEqual(stripped, 6, "the baseline stored both calibrations of both cases")
        write_json(path, doc)

        r, slow = self.run_perf("slow", SLOW)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for case, check in self.perf_checks(slow).items():
            self.assertEqual(check["metrics"]["status"], "regression", (case, check["reason"]))
            self.assertEqual(check["metrics"]["mode"], "absolute")
            self.assertIn("no calibration samples", " ".join(check["notes"]))

    def test_no_calibration_gates_absolute_time(self):
        r, first = self.run_perf("first", 0, "--no-calibration")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.accept(first)
        r, slow = self.run_perf("slow", SLOW, "--no-calibration")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for case, check in self.perf_checks(slow).items():
            self.assertEqual(check["metrics"]["status"], "regression", (case, check["reason"]))
            self.assertEqual(check["metrics"]["mode"], "absolute")
            # Not divided by, but still timed: the machine-speed guard reads it.
            self.assertEqual(len(check["metrics"]["calibration_s"]), 15)
            self.assertGreater(check["metrics"]["calibration_ratio"], 0)
            # And on the suite's threads: the guard's second sensor, kept in the baseline.
            self.assertEqual(len(check["metrics"]["baseline_parallel_calibration_s"]), 15)
            self.assertGreater(check["metrics"]["parallel_calibration_ratio"], 0)
            self.assertAlmostEqual(check["metrics"]["ratio"], check["metrics"]["absolute_ratio"], places=9)

    @unittest.skipUnless(shutil.which("valgrind"), "valgrind is not installed: instructions cannot be counted")
    def test_instruction_counts_are_deterministic_and_catch_a_small_slowdown(self):
        # The work-based slowdown adds the same loop iterations every call, in every process.
        work = {"ATTNGATE_TEST_SLOWDOWN_WORK": "1"}
        r, first = self.run_perf("first", 0, "--perf-metric", "instructions", env_extra=work)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for case, check in self.perf_checks(first, "instructions").items():
            self.assertEqual(check["verdict"], "skip", (case, check["reason"]))
            self.assertEqual(check["metrics"]["status"], "no_baseline")
            self.assertGreater(check["metrics"]["instructions"], 10000)
        self.accept(first, checks="instructions")
        self.assertTrue(os.path.isdir(os.path.join(self.baselines, "instructions")))

        r, again = self.run_perf("again", 0, "--perf-metric", "instructions", env_extra=work)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for case, check in self.perf_checks(again, "instructions").items():
            self.assertEqual(check["metrics"]["status"], "ok", (case, check["reason"]))
            self.assertEqual(check["metrics"]["ratio"], 1.0, "the same binary and inputs count the same instructions")

        r, slow = self.run_perf("slow", 30, "--perf-metric", "instructions", env_extra=work)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for case, check in self.perf_checks(slow, "instructions").items():
            self.assertEqual(check["verdict"], "fail", (case, check["reason"]))
            self.assertEqual(check["metrics"]["status"], "regression")
            self.assertGreater(check["metrics"]["ratio"], 1.05)

    def test_instruction_counts_skip_with_the_reason_when_valgrind_is_missing(self):
        r, out = self.run_perf("novalgrind", 0, "--perf-metric", "instructions", env_extra={"PATH": "/nonexistent"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for case, check in self.perf_checks(out, "instructions").items():
            self.assertEqual(check["verdict"], "skip")
            self.assertIn("valgrind", check["reason"])
            self.assertIn("not found", check["reason"])

    def test_a_baseline_from_another_machine_class_is_not_compared(self):
        r, first = self.run_perf("first", 0, "--machine", "big-box")
        self.accept(first, "--machine", "big-box")
        r, other = self.run_perf("other", SLOW, "--machine", "small-box")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for check in self.perf_checks(other).values():
            self.assertEqual(check["verdict"], "skip")
            self.assertEqual(check["metrics"]["status"], "other_machine")
            self.assertIn("big-box", check["reason"])
            self.assertIn("not compared", check["reason"])

    def test_a_baseline_timed_on_other_threads_is_not_compared(self):
        """perf.threads changes what a time means: a baseline of the suite's threads (from before
        perf.threads was set) is not compared with a run on other threads, even 10x slower; the
        check says why and how to re-record it. Set back, the same baseline gates again."""
        r, first = self.run_perf("first")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual({c["metrics"]["threads"] for c in self.perf_checks(first).values()}, {1})
        self.accept(first)
        # Make the stored baseline look like one recorded before "threads" was kept: the suite's threads.
        machine_dir = os.path.join(self.baselines, "perf", os.listdir(os.path.join(self.baselines, "perf"))[0])
        path = os.path.join(machine_dir, os.listdir(machine_dir)[0])
        doc = read_json(path)
        self.assertEqual([e["values"].pop("threads") for e in doc["entries"]], [1, 1])
        write_json(path, doc)
        write_json(self.suite, dict(SUITE, perf=dict(SUITE["perf"], threads=2)))
        r, other = self.run_perf("two-threads", SLOW)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for case, check in self.perf_checks(other).items():
            self.assertEqual(check["metrics"]["threads"], 2)
            self.assertEqual((check["verdict"], check["metrics"]["status"]), ("skip", "no_baseline"), (case, check["reason"]))
            self.assertIn("was timed on 1 kernel threads, this run on 2", check["reason"])
            self.assertIn("attngate baseline update --checks perf", check["reason"])
        write_json(self.suite, SUITE)
        r, slow = self.run_perf("one-thread-again", SLOW)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for case, check in self.perf_checks(slow).items():
            self.assertEqual(check["metrics"]["status"], "regression", (case, check["reason"]))

    def test_too_few_repetitions_are_too_noisy_to_gate_never_a_pass(self):
        write_json(self.suite, dict(SUITE, perf=dict(SUITE["perf"], repetitions=4)))
        r, first = self.run_perf("first")
        self.accept(first)
        r, slow = self.run_perf("slow", SLOW)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for check in self.perf_checks(slow).values():
            self.assertEqual(check["verdict"], "skip")
            self.assertEqual(check["metrics"]["status"], "too_noisy")
            self.assertIn("too few repetitions to gate: 4 current, 4 baseline; need at least", check["reason"])
        self.assertEqual(read_json(slow)["workloads"][0]["verdict"], "skip")

    def test_paired_ab_detects_the_slowdown_and_names_a_side_that_cannot_start(self):
        out = os.path.join(self.dir, "ab.json")
        html = os.path.join(self.dir, "ab.html")
        r = attngate("ab", "--a", ARGS.attngate, "--b", f"env ATTNGATE_TEST_SLOWDOWN_PCT={SLOW} {ARGS.attngate}",
                     "--suite", self.suite, "--plugin", ARGS.faulty_plugin, "--min-time", "0.01", "--out", out, "--html", html)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("REGRESSION", r.stdout)
        checks = self.perf_checks(out)
        self.assertEqual(set(checks), {"mha", "causal_bf16"})
        for check in checks.values():
            self.assertEqual(check["metrics"]["mode"], "ab")
            # Sequential rounds by default: 13 pairs, more (up to 61) only while the row is undecided.
            self.assertIn(len(check["metrics"]["samples_s"]), range(13, 62))
            self.assertEqual(len(check["metrics"]["baseline_samples_s"]), len(check["metrics"]["samples_s"]))
            self.assertEqual(check["metrics"]["looks"], 6)
            self.assertGreater(check["metrics"]["ratio"], 1.2)
        self.assertIn("paired rounds", r.stdout)
        self.assertTrue(os.path.getsize(html) > 0)
        # A build directory names its attngate; a side that is not there is bad input naming its
        # flag (2), and one that is there but cannot start is infrastructure (3).
        r = attngate("ab", "--a", os.path.dirname(ARGS.attngate), "--b", "/nonexistent/attngate", "--suite", self.suite,
                     "--plugin", ARGS.faulty_plugin, "--rounds", "2", "--out", out)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--b /nonexistent/attngate: /nonexistent/attngate does not exist", r.stderr)
        r = attngate("ab", "--a", os.path.dirname(ARGS.attngate), "--b", "/bin/false", "--suite", self.suite,
                     "--plugin", ARGS.faulty_plugin, "--rounds", "2", "--out", out)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("/bin/false", r.stderr)

    def test_google_benchmark_json_of_the_samples(self):
        gbench = os.path.join(self.dir, "gbench.json")
        r, out = self.run_perf("first", 0, "--gbench", gbench)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc, results = read_json(gbench), read_json(out)
        rows = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
        self.assertEqual({b["name"] for b in rows}, {"mha/flash-slowdown", "causal_bf16/flash-slowdown"})
        self.assertEqual(len(rows), 30)
        self.assertTrue(all(b["time_unit"] == "ns" and b["repetitions"] == 15 for b in doc["benchmarks"]))
        self.assertTrue(all("iterations" not in b for b in rows), "a repetition's call count is not known: left out")
        for e in results["results"]:  # measured, not copied: the process's CPU time of each repetition
            perf = [c for c in e["checks"] if c["check"] == "perf"][0]["metrics"]
            mine = [b for b in rows if b["name"] == f"{e['case']}/{e['kernel']}"]
            self.assertEqual([b["real_time"] for b in mine], [ns(x) for x in perf["samples_s"]])
            self.assertEqual([b["cpu_time"] for b in mine], [ns(x) for x in perf["cpu_samples_s"]])
            self.assertNotEqual(perf["cpu_samples_s"], perf["samples_s"])
            self.assertTrue(all(x > 0 for x in perf["cpu_samples_s"]))
        aggregates = {(b["run_name"], b["aggregate_name"]): b for b in doc["benchmarks"] if b["run_type"] == "aggregate"}
        self.assertEqual(set(aggregates), {(n, a) for n in ("mha/flash-slowdown", "causal_bf16/flash-slowdown")
                                           for a in ("mean", "median", "stddev", "cv")})
        mha = sorted(b["real_time"] for b in rows if b["name"] == "mha/flash-slowdown")
        self.assertAlmostEqual(aggregates[("mha/flash-slowdown", "median")]["real_time"], mha[7], delta=mha[7] * 1e-9)
        self.assertEqual(aggregates[("mha/flash-slowdown", "cv")]["aggregate_unit"], "percentage")
        context = doc["context"]
        self.assertEqual(context["json_schema_version"], 1)
        self.assertEqual(context["num_cpus"], results["fingerprint"]["cpu"]["cores"])
        self.assertEqual(context["host_name"], results["host_name"])
        self.assertEqual(context["host_name"], socket.gethostname())
        for made_up in ("mhz_per_cpu", "cpu_scaling_enabled", "caches", "library_build_type"):
            self.assertNotIn(made_up, context)

    @unittest.skipUnless(os.path.exists(COMPARE_PY) and os.path.exists(TOOLS_PYTHON),
                         f"{COMPARE_PY} (apt libbenchmark-tools) or {TOOLS_PYTHON} (its scipy; bash ci/install-deps.sh) is missing")
    def test_google_benchmarks_compare_py_agrees_with_attngate_compare_on_a_2x_slowdown(self):
        # One run times flash and flash-slowdown (flash plus as much again: +100%) with their
        # repetitions interleaved, so a loaded machine slows both alike (two runs side by side
        # or one after the other differ by up to 10x under load here). Each kernel's rows then
        # make one results file under one label, "flash", and each is exported as Google
        # Benchmark JSON: the same case x kernel names in both, as compare.py matches them.
        suite = dict(SUITE, kernels=["flash", "flash-slowdown"])
        write_json(self.suite, suite)
        r, out = self.run_perf("both", 100)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        both = read_json(out)
        files = {}
        for kernel in ("flash", "flash-slowdown"):
            part = dict(both, results=[dict(e, kernel="flash") for e in both["results"] if e["kernel"] == kernel])
            self.assertEqual(len(part["results"]), 2)
            files[kernel] = (os.path.join(self.dir, kernel + ".json"), os.path.join(self.dir, kernel + ".gbench.json"))
            write_json(files[kernel][0], part)
            p = attngate("report", files[kernel][0], "--gbench", files[kernel][1])
            self.assertEqual(p.returncode, 0, p.stderr)
        decided = 0
        for a, b, slower in (("flash", "flash-slowdown", True), ("flash-slowdown", "flash", False)):
            dump = os.path.join(self.dir, f"{a}-{b}.compare.json")
            p = subprocess.run([TOOLS_PYTHON, COMPARE_PY, "--no-color", "--dump_to_json", dump, "benchmarks", files[a][1], files[b][1]],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("U Test, Repetitions: 15 vs 15", p.stdout)
            rows = [d for d in read_json(dump) if d["run_type"] == "iteration"]
            self.assertEqual({d["name"] for d in rows}, {"mha/flash", "causal_bf16/flash"})
            ours = attngate("compare", files[a][0], files[b][0])
            self.assertIn(ours.returncode, (0, 1), ours.stdout + ours.stderr)
            for d in rows:
                # The CPU time is measured apart from the wall time, and no load hides twice the work in it.
                cpu_change = sorted(m["cpu"] for m in d["measurements"])[len(d["measurements"]) // 2]
                self.assertLess(d["utest"]["cpu_pvalue"], 0.05, (a, b, d["name"], d["utest"]))
                self.assertEqual(cpu_change > 0, slower, (a, b, d["name"], cpu_change))
                # compare.py's verdict: its U test on the wall times significant at 0.05, in the
                # direction of the median change. attngate compare's: its row's status, which it
                # may decline to give on a machine too loaded for 15 repetitions ("too_noisy").
                change = sorted(m["time"] for m in d["measurements"])[len(d["measurements"]) // 2]
                theirs = "slower" if d["utest"]["time_pvalue"] < 0.05 and change > 0 else \
                    "faster" if d["utest"]["time_pvalue"] < 0.05 else "same"
                status = [line.split()[4] for line in ours.stdout.splitlines() if line.startswith(d["name"] + " ")][0]
                if status == "too_noisy":
                    continue
                decided += 1
                mine = {"regression": "slower", "improvement": "faster"}.get(status, "same")
                self.assertEqual(mine, theirs, f"{a} -> {b} {d['name']}: attngate {status}, compare.py {d['utest']} median change {change}")
                self.assertEqual(mine, "slower" if slower else "faster", ours.stdout)
        if not decided:
            self.skipTest("every row too noisy for attngate compare on this machine's load: no verdict to compare with compare.py's")


def ns(seconds):
    """Seconds as the export writes them: nanoseconds."""
    return seconds * 1e9


if __name__ == "__main__":
    main()
