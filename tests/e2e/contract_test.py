"""Kernels that break the ABI's contract around a correct output (issue 9, section 1):
each is caught by the right check, with its reason, blamed on itself, while the built-in
kernels in the same run pass, isolated and in-process alike."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, GoldenWorkspace, attngate, main, read_json, write_json  # noqa: E402

CONTRACT_PLUGIN = None

# Each faulty kernel runs just before an innocent flash, so a kernel that damages shared
# state would show as flash's failure.
KERNELS = ["writes-q", "flash", "writes-past-out", "reads-out", "nondeterministic", "retains-2mib", "retains-4kib",
           "overruns-abi", "frees-foreign", "leaves-last-row", "native"]
SUITE = {
    "name": "contract", "seed": 5, "memory_calls": 4, "warmup_calls": 1,
    "kernels": KERNELS,
    "cases": [
        {"id": "f32", "seq_q": 96, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "bf16", "seq_q": 64, "seq_k": 80, "heads_q": 2, "heads_kv": 1, "head_dim": 16, "dtype": "bf16"},
    ],
}

# kernel -> (check that fails, words of its reason)
EXPECTED = {
    "writes-q": ("contract", "wrote to its input q"),
    "writes-past-out": ("contract", "out-of-bounds write, 4 bytes past out"),
    "reads-out": ("contract", "output element(s) unwritten, or reads them before writing them"),
    # From a new user's trial: a kernel that forgot a row was told it "reads its output before writing it".
    "leaves-last-row": ("contract", "leaves 16 output element(s) unwritten, or reads them before writing them"),
    "retains-2mib": ("memory", "kept 2097152 B of ABI memory from its first call on"),
    "overruns-abi": ("contract", "out-of-bounds write, 1 bytes past an ABI allocation of 100 B"),
    "frees-foreign": ("contract", "freed a pointer the ABI allocator did not give it"),
}


class ContractTest(GoldenWorkspace):
    SUITE = SUITE

    def run_suite(self, *extra):
        r = attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--out", self.results, "--checks",
                     "golden,memory", "--plugin", CONTRACT_PLUGIN, *extra)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        return {(e["case"], e["kernel"]): e for e in read_json(self.results)["results"]}

    def assert_each_fault_blamed_right(self, v):
        for case in ("f32", "bf16"):
            for innocent in ("flash", "native"):
                self.assertEqual(v[(case, innocent)]["verdict"], "pass", (case, innocent, v[(case, innocent)]["reason"]))
            for kernel, (check, words) in EXPECTED.items():
                failed = {c["check"]: c for c in v[(case, kernel)]["checks"] if c["verdict"] == "fail"}
                self.assertIn(check, failed, (case, kernel, v[(case, kernel)]["reason"]))
                self.assertIn(words, failed[check]["reason"], (case, kernel))
            # A one-time retention under the limit is a note, not a failure.
            small = {c["check"]: c for c in v[(case, "retains-4kib")]["checks"]}
            self.assertEqual(small["memory"]["verdict"], "pass")
            self.assertIn("keeps 4096 B of ABI memory from its first call on", " ".join(small["memory"]["notes"]))
            # Non-determinism is reported, and is a note unless the suite asks for determinism.
            nd = {c["check"]: c for c in v[(case, "nondeterministic")]["checks"]}
            self.assertEqual(nd["numerics"]["metrics"]["deterministic"], False)
            self.assertIn("non-deterministic: max |Δ|", " ".join(nd["numerics"]["notes"]))
            self.assertEqual(v[(case, "nondeterministic")]["verdict"], "pass")
            # The reads-out kernel's NaN-poisoned output fails its golden too, and so does the unwritten row.
            for kernel in ("reads-out", "leaves-last-row"):
                self.assertEqual({c["check"]: c for c in v[(case, kernel)]["checks"]}["golden"]["verdict"], "fail", kernel)

    def test_isolated(self):
        self.assert_each_fault_blamed_right(self.run_suite())

    def test_in_process_the_next_kernel_still_gets_pristine_inputs(self):
        self.assert_each_fault_blamed_right(self.run_suite("--no-isolation"))

    def test_a_suite_that_asks_for_determinism_fails_the_nondeterministic_kernel(self):
        write_json(self.suite, dict(SUITE, deterministic=True))
        v = self.run_suite("--kernel", "nondeterministic", "--kernel", "flash")
        for case in ("f32", "bf16"):
            nd = {c["check"]: c for c in v[(case, "nondeterministic")]["checks"]}
            self.assertEqual(nd["numerics"]["verdict"], "fail")
            self.assertIn("elements differ across calls", nd["numerics"]["reason"])
            self.assertEqual(v[(case, "flash")]["verdict"], "pass")


if __name__ == "__main__":
    i = sys.argv.index("--contract-plugin")
    CONTRACT_PLUGIN = os.path.abspath(sys.argv[i + 1])
    del sys.argv[i:i + 2]
    main()
