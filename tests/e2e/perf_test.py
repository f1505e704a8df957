"""End-to-end tests of the perf and cost gate: baselines per machine class, an injected
slowdown caught in baseline mode, paired A/B and compare, "too noisy" reported instead of
passed, workload cost projections with their price source, and Google Benchmark JSON."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, write_json  # noqa: E402

SUITE = {
    "name": "perf", "seed": 5,
    "perf": {"repetitions": 15, "min_time_s": 0.01, "threshold_pct": 5},
    "kernels": ["flash-slowdown"],
    "cases": [
        {"id": "mha", "seq_q": 128, "heads_q": 2, "head_dim": 32},
        {"id": "causal_bf16", "seq_q": 160, "heads_q": 2, "head_dim": 32, "causal": True, "dtype": "bf16"},
    ],
}
SLOW = 100  # percent of extra work: far beyond the 5% threshold and the machine's noise


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

    def run_perf(self, name, slowdown=0, *extra):
        out = os.path.join(self.dir, name + ".json")
        env = dict(os.environ, ATTNGATE_TEST_SLOWDOWN_PCT=str(slowdown))
        r = attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--checks", "perf,cost",
                     "--plugin", ARGS.faulty_plugin, "--out", out, *extra, env=env)
        return r, out

    def accept(self, results, *extra):
        r = attngate("baseline", "update", "--results", results, "--baselines", self.baselines, "--checks", "perf",
                     "--yes", "--allow-in-ci", "--reason", "test", *extra)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    @staticmethod
    def perf_checks(path):
        return {e["case"]: [c for c in e["checks"] if c["check"] == "perf"][0] for e in read_json(path)["results"]}

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
            self.assertGreater(check["metrics"]["ci_low"], 1.05)
            self.assertLessEqual(check["metrics"]["p_adjusted"], 0.01)
        workload = read_json(slow)["workloads"][0]
        self.assertEqual(workload["verdict"], "fail")
        self.assertGreater(workload["change_pct"], 5)
        self.assertIn("cloud.google.com", workload["reason"])
        cost = [c for c in read_json(slow)["results"][0]["checks"] if c["check"] == "cost"][0]
        self.assertGreater(cost["metrics"]["usd_per_million_tokens"], cost["metrics"]["baseline_usd_per_million_tokens"])
        self.assertIn("cloud.google.com", cost["metrics"]["price_source"])

        r = attngate("compare", first, slow)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("REGRESSION", r.stdout)
        self.assertEqual(attngate("compare", first, first).returncode, 0)

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
            self.assertEqual(len(check["metrics"]["samples_s"]), 21)
            self.assertGreater(check["metrics"]["ratio"], 1.2)
        self.assertTrue(os.path.getsize(html) > 0)
        # A build directory names its attngate; a side that cannot start is infrastructure (3).
        r = attngate("ab", "--a", os.path.dirname(ARGS.attngate), "--b", "/nonexistent/attngate", "--suite", self.suite,
                     "--plugin", ARGS.faulty_plugin, "--rounds", "2", "--out", out)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("/nonexistent/attngate", r.stderr)

    def test_google_benchmark_json_of_the_samples(self):
        gbench = os.path.join(self.dir, "gbench.json")
        r, _ = self.run_perf("first", 0, "--gbench", gbench)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = read_json(gbench)
        names = {b["name"] for b in doc["benchmarks"]}
        self.assertEqual(names, {"mha/flash-slowdown", "causal_bf16/flash-slowdown"})
        self.assertEqual(len(doc["benchmarks"]), 30)
        self.assertTrue(all(b["run_type"] == "iteration" and b["time_unit"] == "ns" for b in doc["benchmarks"]))


if __name__ == "__main__":
    main()
