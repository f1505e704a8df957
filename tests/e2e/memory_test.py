"""End-to-end tests of the memory gate and crash/hang isolation: faulty kernels from the
test plugin are caught with the right reason while everything else in the same run still
passes, clean kernels are never flagged, and baselines are accepted deliberately."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, GoldenWorkspace, attngate, main, on_a_terminal, read_json, write_json  # noqa: E402

FAULTY = ["leaky", "leaky-slow", "leaky-abi", "bloated", "crashy", "hangy"]
MEM_SUITE = {
    "name": "mem", "seed": 3, "timeout_s": 3, "memory_calls": 10,
    "kernels": ["flash", "native", "reference", *FAULTY],
    "cases": [
        {"id": "plain", "seq_q": 96, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "crash_shape", "seq_q": 77, "heads_q": 2, "heads_kv": 1, "head_dim": 16, "dtype": "bf16"},
        {"id": "hang_shape", "seq_q": 33, "seq_k": 70, "heads_q": 2, "head_dim": 16, "window": [8, 0]},
    ],
}


class MemoryGateTest(GoldenWorkspace):
    SUITE = MEM_SUITE

    def run_suite(self, *extra, env=None, plugin=True):
        # A loaded plugin runs all its kernels unless the suite names some of them.
        return attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--out", self.results,
                        "--checks", "golden,memory", *(["--plugin", ARGS.faulty_plugin] if plugin else []), *extra, env=env)

    def verdicts(self):
        results = read_json(self.results)
        self.assertTrue(results["complete"])
        return {(e["case"], e["kernel"]): e for e in results["results"]}

    def test_each_faulty_kernel_is_caught_with_its_reason_and_the_rest_pass(self):
        start = time.monotonic()
        r = self.run_suite()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertLess(time.monotonic() - start, 60)
        v = self.verdicts()
        self.assertEqual(len(v), 3 * 9)
        for case in ("plain", "crash_shape", "hang_shape"):
            for clean in ("flash", "native", "reference"):
                self.assertEqual(v[(case, clean)]["verdict"], "pass", v[(case, clean)]["reason"])
            self.assertIn("memory: heap leak: 41", v[(case, "leaky")]["reason"])  # 4 KiB + malloc's header
            self.assertIn("memory: heap leak:", v[(case, "leaky-slow")]["reason"])
            self.assertIn("memory: ABI allocator leak", v[(case, "leaky-abi")]["reason"])
            self.assertIn("broke its constant promise", v[(case, "bloated")]["reason"])
            leak = [c for c in v[(case, "leaky-slow")]["checks"] if c["check"] == "memory"][0]["metrics"]
            self.assertGreaterEqual(leak["leak_bytes_per_call"], 64)
        crash = v[("crash_shape", "crashy")]
        self.assertEqual(crash["verdict"], "error")  # not drift: it never answered
        self.assertIn("crashed with SIGSEGV", crash["reason"])
        self.assertIn("dereferencing a dangling pointer", crash["reason"])
        self.assertEqual(crash["checks"][0]["metrics"]["crash"]["signal"], "SIGSEGV")
        hang = v[("hang_shape", "hangy")]
        self.assertEqual(hang["verdict"], "error")
        self.assertIn("hung: killed after 3.0 s", hang["reason"])
        self.assertIn("waiting forever", hang["reason"])
        for case in ("plain", "hang_shape"):
            self.assertEqual(v[(case, "crashy")]["verdict"], "pass")
        for case in ("plain", "crash_shape"):
            self.assertEqual(v[(case, "hangy")]["verdict"], "pass")
        self.assertIn("ERROR crash_shape / crashy", r.stdout)
        self.assertIn("FAIL plain / leaky", r.stdout)

    def test_clean_kernels_are_never_flagged_across_repeated_runs(self):
        write_json(self.suite, dict(MEM_SUITE, kernels=["reference", "native", "flash",
                                                        {"kernel": "flash", "block_q": 16, "block_k": 32}]))
        for attempt in range(5):
            r = self.run_suite(plugin=False)
            self.assertEqual(r.returncode, 0, f"run {attempt}: " + r.stdout + r.stderr)
            for entry in self.verdicts().values():
                memory = [c for c in entry["checks"] if c["check"] == "memory"][0]
                self.assertEqual(memory["metrics"]["leak_bytes_per_call"], 0.0)
                self.assertEqual(memory["metrics"]["abi_leaked_bytes"], 0)

    def test_no_isolation_runs_in_process(self):
        write_json(self.suite, dict(MEM_SUITE, kernels=["flash", "leaky-abi"]))
        r = self.run_suite("--no-isolation")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        v = self.verdicts()
        self.assertEqual(v[("plain", "flash")]["verdict"], "pass")
        self.assertIn("ABI allocator leak", v[("plain", "leaky-abi")]["reason"])

    def accept(self, *extra, env=None, stdin=None):
        # A developer's machine unless a test says otherwise: CI itself runs with CI=true.
        developer = {k: v for k, v in os.environ.items() if k != "CI"}
        return attngate("baseline", "update", "--results", self.results, "--baselines", self.baselines, *extra,
                        env=env if env is not None else developer, stdin=stdin)

    def test_peak_growth_against_an_accepted_baseline(self):
        write_json(self.suite, dict(MEM_SUITE, kernels=["flash", "native"]))
        self.assertEqual(self.run_suite(plugin=False).returncode, 0)
        r = self.accept("--yes", "--reason", "first")
        self.assertEqual(r.returncode, 0, r.stderr)
        path = os.path.join(self.baselines, "memory", "mem.json")
        stored = read_json(path)
        self.assertEqual(len(stored["entries"]), 6)
        provenance = stored["entries"][0]["provenance"]
        self.assertEqual(provenance["reason"], "first")
        for key in ("date", "user", "git_commit", "machine_class"):
            self.assertTrue(provenance[key], key)
        # The run's dependency fingerprint, kept once in the file and named by each entry.
        self.assertEqual({e["provenance"]["fingerprint_id"] for e in stored["entries"]}, set(stored["fingerprints"]))
        self.assertIn("compiler", stored["fingerprints"][provenance["fingerprint_id"]]["toolchain"])
        self.assertEqual(self.run_suite(plugin=False).returncode, 0)
        # Shrink one baseline by 20%: the same kernel now looks 25% bigger than its baseline.
        stored["entries"][0]["values"]["abi_peak_bytes"] = int(stored["entries"][0]["values"]["abi_peak_bytes"] * 0.8)
        write_json(path, stored)
        r = self.run_suite(plugin=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("peak memory grew 25.0% over its baseline", r.stdout)

    def test_baseline_update_refuses_ci_and_non_terminals_and_limits_with_only(self):
        write_json(self.suite, dict(MEM_SUITE, kernels=["flash", "native"]))
        self.run_suite(plugin=False)
        path = os.path.join(self.baselines, "memory", "mem.json")
        for value in ("true", "1", "yes", "True"):  # each CI system's way of saying so
            r = self.accept("--yes", env=dict(os.environ, CI=value))
            self.assertEqual(r.returncode, 2, value)
            self.assertIn(f"refusing to write baselines in CI (CI={value})", r.stderr)
            self.assertFalse(os.path.exists(path))
        env = dict(os.environ, CI="true")
        r = self.accept()  # stdin is not a terminal and no --yes
        self.assertEqual(r.returncode, 2)
        self.assertFalse(os.path.exists(path))
        self.assertEqual(self.accept("--yes", "--allow-in-ci", "--only", "plain/*", env=env).returncode, 0)
        self.assertEqual({(e["case"], e["kernel"]) for e in read_json(path)["entries"]},
                         {("plain", "flash"), ("plain", "native")})

    def refused_beside_flash(self, kernel):
        """Runs flash and `kernel` on the plain case and accepts with --yes: flash's memory row is
        written, `kernel`'s refused, and the update exits 1, never a silent 0. Returns its stdout."""
        write_json(self.suite, dict(MEM_SUITE, kernels=["flash", kernel], cases=MEM_SUITE["cases"][:1]))
        self.assertEqual(self.run_suite().returncode, 1)
        r = self.accept("--yes")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        said = r.stdout.count(f"refused plain/{kernel}: ")  # once per check reviewed
        self.assertGreater(said, 0, r.stdout)
        self.assertIn(f"error: {said} row(s) refused (case × kernel × check): a failed golden check or a leak is not a baseline to accept", r.stderr)
        self.assertEqual({e["kernel"] for e in read_json(os.path.join(self.baselines, "memory", "mem.json"))["entries"]}, {"flash"})
        return r.stdout

    def test_baseline_update_refuses_failed_goldens_unless_forced(self):
        self.refused_beside_flash("causal_off_by_one")
        path = os.path.join(self.baselines, "memory", "mem.json")
        r = self.accept("--yes", "--only", "plain/causal_off_by_one")  # nothing else to write
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(self.accept("--yes", "--force").returncode, 0)
        self.assertEqual({e["kernel"] for e in read_json(path)["entries"]}, {"flash", "causal_off_by_one"})

    def test_baseline_update_refuses_a_leak_but_accepts_a_grown_peak(self):
        # A leak fails every run whatever its baseline says: accepting one would only make the
        # review read as if it had been dealt with. A grown peak is what a baseline is for.
        said = self.refused_beside_flash("leaky")
        self.assertRegex(said, r"refused plain/leaky: a baseline does not change this memory failure: heap leak: \d")
        path = os.path.join(self.baselines, "memory", "mem.json")
        # flash's peak grows past its baseline: that is accepted.
        baseline = read_json(path)
        for e in baseline["entries"]:
            e["values"]["abi_peak_bytes"] = e["values"]["abi_peak_bytes"] // 2
        write_json(path, baseline)
        write_json(self.suite, dict(MEM_SUITE, kernels=["flash"], cases=MEM_SUITE["cases"][:1]))
        self.assertEqual(self.run_suite(plugin=False).returncode, 1)
        r = self.accept("--yes")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("refused", r.stdout)

    def test_baseline_update_asks_per_case_on_a_terminal(self):
        write_json(self.suite, dict(MEM_SUITE, kernels=["flash", "native"]))
        self.run_suite(plugin=False)
        code, transcript, _ = on_a_terminal([ARGS.attngate, "baseline", "update", "--results", self.results, "--baselines",
                                             self.baselines, "--only", "plain/*", "--checks", "memory"], answers=[b"s\n", b"a\n"])
        self.assertEqual(code, 0, transcript)
        self.assertIn("accept plain/flash (new)?", transcript)
        entries = read_json(os.path.join(self.baselines, "memory", "mem.json"))["entries"]
        self.assertEqual([(e["case"], e["kernel"]) for e in entries], [("plain", "native")])


if __name__ == "__main__":
    main()
