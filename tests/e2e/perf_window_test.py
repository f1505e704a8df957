"""End to end: perf windows from the store's history (docs/perf-gate.md#window-baselines).

Six runs appended to the history fill each row's window ("collecting: k of 6 runs" until
then). A run in which every row is twice as slow (a slower machine: the test plugin doubles
every call) has that run-wide shift taken out and flags no row; the same slowdown of one
row is a regression. `baseline update --checks perf` then starts that row's window again.

The verdicts asserted hold under any load: the slowdowns are 100% of each call's own time,
judged against a 20% threshold, and a slower machine is what the shift removal is for."""
import glob
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, write_json  # noqa: E402

MIN_RUNS = 6  # kMinWindowRuns (harness/stats/perf_window.hpp)
SEQS = [48, 64, 80, 96, 112, 128]
SUITE = {
    "name": "window", "seed": 3, "threads": 1,
    "perf": {"repetitions": 9, "min_time_s": 0.005, "threshold_pct": 20},
    "kernels": ["flash-slowdown"],
    "cases": [{"id": f"s{s}", "seq_q": s, "heads_q": 2, "head_dim": 32} for s in SEQS],
}


class PerfWindowTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-window-")
        cls.suite = os.path.join(cls.dir, "window.json")
        cls.store = os.path.join(cls.dir, "baselines")
        os.makedirs(cls.store)
        write_json(cls.suite, SUITE)
        cls.collecting = []
        for i in range(MIN_RUNS):
            r, out = cls.run_perf(f"fill{i}", "--append-history")
            assert r.returncode == 0, r.stdout + r.stderr
            cls.collecting.append(cls.perf(out))
        cls.filled = sorted(glob.glob(os.path.join(cls.store, "history", "window", "*", "*", "*.json")))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def run_perf(cls, name, *extra, pct=0, seq_q=None):
        out = os.path.join(cls.dir, name + ".json")
        env = dict(os.environ, ATTNGATE_TEST_SLOWDOWN_PCT=str(pct))
        if seq_q is not None:
            env["ATTNGATE_TEST_SLOWDOWN_SEQ_Q"] = str(seq_q)
        r = attngate("run", "--suite", cls.suite, "--baselines", cls.store, "--checks", "perf",
                     "--plugin", ARGS.faulty_plugin, "--out", out, *extra, env=env)
        return r, out

    @staticmethod
    def perf(path):
        """Each case's perf metrics, with the check's reason."""
        rows = {}
        for e in read_json(path)["results"]:
            check = [c for c in e["checks"] if c["check"] == "perf"][0]
            rows[e["case"]] = dict(check["metrics"], reason=check.get("reason", ""))
        return rows

    def test_rows_collect_runs_before_they_are_gated(self):
        first = self.collecting[0]
        self.assertEqual({m["status"] for m in first.values()}, {"no_baseline"})
        for k in range(1, MIN_RUNS):
            for case, m in self.collecting[k].items():
                self.assertEqual(m["status"], "collecting", (k, case, m.get("reason")))
                self.assertEqual(m["window_runs"], k)
                self.assertIn(f"collecting: {k} of {MIN_RUNS} runs", m["reason"])
        self.assertEqual(len(self.filled), MIN_RUNS)
        with open(self.filled[0]) as f:
            rows = json.load(f)["rows"]
        self.assertEqual(len(rows), len(SEQS))
        self.assertTrue(all(row["cal"] > 0 for row in rows), rows)

    def test_a_slower_machine_is_not_flagged_but_one_slower_row_is(self):
        r, out = self.run_perf("machine", pct=100)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.perf(out)
        for case, m in rows.items():
            self.assertEqual(m["mode"], "window", (case, m.get("reason")))
            self.assertEqual(m["window_runs"], MIN_RUNS)
            self.assertNotIn(m["status"], ("regression", "improvement"), (case, m["reason"]))
            # Every row ran about twice as slow: the run-wide shift says so, and was taken out.
            self.assertGreater(m["run_shift"], 1.6, m)
            self.assertLess(m["run_shift"], 2.6, m)

        r, out = self.run_perf("one-row", pct=100, seq_q=SEQS[2])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = self.perf(out)
        slow = f"s{SEQS[2]}"
        self.assertEqual(rows[slow]["status"], "regression", rows[slow]["reason"])
        self.assertGreater(rows[slow]["ratio"], 1.5)
        self.assertIn("window", rows[slow]["reason"])
        for case, m in rows.items():
            if case != slow:
                self.assertNotIn(m["status"], ("regression", "improvement"), (case, m["reason"]))
                self.assertLess(m["run_shift"], 1.25, m)  # one slow row does not move the median
        self.assertIn(slow, r.stdout)

        # Accepting the slower row starts its window again: a record holding only it, marked "b".
        before = set(glob.glob(os.path.join(self.store, "history", "window", "*", "*", "*.json")))
        u = attngate("baseline", "update", "--results", out, "--baselines", self.store, "--checks", "perf",
                     "--yes", "--allow-in-ci", "--reason", "slower on purpose")
        self.assertEqual(u.returncode, 0, u.stdout + u.stderr)
        self.assertIn("perf windows: recorded", u.stdout)
        added = set(glob.glob(os.path.join(self.store, "history", "window", "*", "*", "*.json"))) - before
        self.assertEqual(len(added), 1)
        with open(added.pop()) as f:
            record = json.load(f)
        marked = [(row["c"], row.get("b")) for row in record["rows"]]
        self.assertIn((slow, 1), marked)
        self.assertTrue(all(b == 1 for case, b in marked if case == slow))

        r, out = self.run_perf("after-accept", pct=100, seq_q=SEQS[2])
        rows = self.perf(out)
        self.assertNotEqual(rows[slow]["status"], "regression", rows[slow]["reason"])
        self.assertNotEqual(rows[slow].get("mode"), "window", rows[slow]["reason"])  # its single-run baseline until 6 runs


if __name__ == "__main__":
    main()
