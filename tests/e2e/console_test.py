"""The command line as people and scripts expect it (issue 26, section 4), through the real
binary: progress on stderr (plain lines in a log, one live line on a terminal) for run and
ab; -o and --out everywhere; kernels --json and compare --json; --quiet; and a baseline
review that asks only about the rows that changed and says what q does."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, GoldenWorkspace, attngate, developer_env, main, on_a_terminal, read_json, write_json  # noqa: E402

SUITE = {
    "name": "console", "seed": 13, "memory_calls": 3, "warmup_calls": 1,
    "kernels": ["flash", "native"],
    "cases": [
        {"id": "a_f32", "seq_q": 32, "heads_q": 2, "head_dim": 8, "causal": True},
        {"id": "b_f32", "seq_q": 24, "seq_k": 40, "heads_q": 2, "head_dim": 8},
        {"id": "c_bf16", "seq_q": 16, "heads_q": 2, "heads_kv": 1, "head_dim": 8, "dtype": "bf16"},
    ],
}
ROWS = 6  # cases x kernels
REPETITIONS = ROWS * 3  # the perf phase's, in a suite that times each row 3 times


def progress_lines(stderr, what):
    """(done, total) of each plain progress line of `what`, in order."""
    return [(int(m.group(1)), int(m.group(2))) for m in re.finditer(rf"^progress: {re.escape(what)}: (\d+) of (\d+) ", stderr, re.M)]


class ConsoleTest(GoldenWorkspace):
    SUITE = SUITE

    def run_suite(self, *extra, checks="golden,memory"):
        return attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--checks", checks, *extra)

    # --- progress ------------------------------------------------------------------------

    def test_run_writes_plain_progress_lines_to_stderr_when_it_is_not_a_terminal(self):
        r = self.run_suite("--out", self.results, "--progress-every", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(progress_lines(r.stderr, "run console"), [(i, ROWS) for i in range(1, ROWS + 1)])
        for line in r.stderr.splitlines():
            if line.startswith("progress: "):
                self.assertRegex(line, r"case x kernels \(\d+%\) · elapsed [0-9.]+s · (about [0-9.ms ]+ left|time left unknown) · \w+ / \w+$")
        # One row's rate (it also loaded the goldens) is no guide: the estimate waits for two.
        shown = [line for line in r.stderr.splitlines() if line.startswith("progress: run console: ")]
        self.assertIn("time left unknown", shown[0])
        self.assertTrue(all(" left · " in line and "unknown" not in line for line in shown[1:]), shown)
        self.assertNotIn("\r", r.stderr)
        self.assertNotIn("progress:", r.stdout)  # the table stays on stdout, one line per row
        self.assertEqual(len(re.findall(r"^\s+\d+/6 ", r.stdout, re.M)), ROWS)

    def test_the_default_interval_still_ends_with_the_last_row(self):
        r = self.run_suite("--out", self.results)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = progress_lines(r.stderr, "run console")
        self.assertEqual(lines[-1], (ROWS, ROWS))
        self.assertRegex(r.stderr, r"6 of 6 case x kernels \(100%\) · elapsed [0-9.]+s · about 0\.0s left")

    def test_the_perf_phase_tells_its_repetitions_after_the_rows(self):
        suite = self.path("perf-suite.json")
        write_json(suite, dict(SUITE, perf={"repetitions": 3, "min_time_s": 0.001}))

        def run(*extra):
            return attngate("run", "--suite", suite, "--baselines", self.baselines, "--checks", "perf", "--out", self.results, *extra)

        r = run("--progress-every", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Every repetition is a step, the timing child's and the last (this process's) alike,
        # and the phase starts once every row is done.
        self.assertEqual(progress_lines(r.stderr, "run console perf"), [(i, REPETITIONS) for i in range(0, REPETITIONS + 1)])
        self.assertLess(r.stderr.index(f"run console: {ROWS} of {ROWS} "), r.stderr.index("run console perf: 0 of "))
        self.assertRegex(r.stderr, rf"run console perf: {REPETITIONS} of {REPETITIONS} repetitions timed \(100%\) · elapsed [0-9.]+s"
                                   rf" · about 0\.0s left · 6 case x kernels, 3 repetitions each\n")
        # The default interval still says when the phase starts and when it ends.
        r = run()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = progress_lines(r.stderr, "run console perf")
        self.assertEqual((lines[0], lines[-1]), ((0, REPETITIONS), (REPETITIONS, REPETITIONS)))
        code, text, _ = on_a_terminal([ARGS.attngate, "run", "--suite", suite, "--baselines", self.baselines, "--checks", "perf",
                                       "--out", self.path("tty.json")])
        self.assertEqual(code, 0, text)
        self.assertIn(f"\r\x1b[Krun console perf: 0 of {REPETITIONS} repetitions timed", text)
        self.assertIn(f"\r\x1b[Krun console perf: {REPETITIONS} of {REPETITIONS} repetitions timed (100%)", text)
        self.assertNotIn("progress:", text)

    def ab(self, *extra, out=None):
        return attngate("ab", "--suite", self.suite, "--baselines", self.baselines, "--a", ARGS.attngate, "--b", ARGS.attngate,
                        "--rounds", "3", "--max-rounds", "0", "--min-time", "0.0001", "-o", out or self.path("ab.json"), *extra)

    def test_ab_writes_plain_progress_lines_to_stderr_when_it_is_not_a_terminal(self):
        r = self.ab("--progress-every", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = progress_lines(r.stderr, "A/B console")
        # Each round is announced, then every row timed on both sides is a step: 3 rounds x 6 rows.
        steps = sorted(set(lines))
        self.assertEqual(steps, [(i, 3 * ROWS) for i in range(0, 3 * ROWS + 1)])
        self.assertEqual(lines[-1], (3 * ROWS, 3 * ROWS))
        self.assertRegex(r.stderr, r"rows timed on both sides \(100%\) · elapsed [0-9.]+s · about 0\.0s left · round 3 of 3")
        self.assertEqual(read_json(self.path("ab.json"))["complete"], True)  # -o is --out

    def test_ab_shows_one_live_line_on_a_terminal(self):
        code, text, _ = on_a_terminal([ARGS.attngate, "ab", "--suite", self.suite, "--baselines", self.baselines,
                                       "--a", ARGS.attngate, "--b", ARGS.attngate, "--rounds", "2", "--max-rounds", "0",
                                       "--min-time", "0.0001", "--out", self.path("ab-tty.json")])
        self.assertEqual(code, 0, text)
        self.assertIn("\r\x1b[KA/B console: 0 of 12 rows timed on both sides", text)
        self.assertIn("12 of 12 rows timed on both sides (100%)", text)
        self.assertNotIn("progress:", text)

    def test_the_live_line_stays_within_the_terminals_width(self):
        # A line wider than the terminal wraps, and each \r then returns to its last row only:
        # the first rows pile up. A long case id is cut in the middle, as in the table.
        long_id = "paged_" + "ragged_" * 10 + "tail_f32"
        write_json(self.suite, dict(SUITE, cases=[dict(SUITE["cases"][0], id=long_id)]))
        r = attngate("golden", "generate", "--suite", self.suite, "--baselines", self.baselines)
        self.assertEqual(r.returncode, 0, r.stderr)
        code, text, _ = on_a_terminal([ARGS.attngate, "run", "--suite", self.suite, "--baselines", self.baselines, "--checks",
                                       "golden", "--out", self.path("tty.json")], columns=60)
        self.assertEqual(code, 0, text)
        live = [seg.split("\r\n")[0] for seg in text.split("\r\x1b[K")[1:]]
        self.assertTrue(any(seg.startswith("run console: ") for seg in live), text)
        for seg in live:
            self.assertLessEqual(len(seg), 59, seg)
        self.assertTrue(any(seg.endswith("tail_f32 / native") for seg in live), live)  # the id's tail, where ids differ

    # --- -o everywhere, --json, --quiet --------------------------------------------------

    def test_o_and_out_are_the_same_option_everywhere(self):
        shards = [self.path(f"shard-{i}.json") for i in (1, 2)]
        for i, out in enumerate(shards, 1):
            self.assertEqual(self.run_suite("--shard", f"{i}/2", "-o", out).returncode, 0)
        self.assertTrue(all(read_json(out)["complete"] for out in shards))
        for flag in ("-o", "--out"):
            merged = self.path(f"merged{flag}.json")
            r = attngate("merge", *shards, flag, merged, "--baselines", self.baselines)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(len(read_json(merged)["results"]), ROWS)
        inputs = self.path("inputs")
        r = attngate("inputs", "--suite", self.suite, "--case", "a_f32", "-o", inputs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(inputs, "case.json")))
        samples = self.path("samples.json")
        r = attngate("time", "--suite", self.suite, "--kernel", "flash", "--case", "a_f32", "-o", samples)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([(s["case"], s["kernel"]) for s in read_json(samples)], [("a_f32", "flash")])

    def test_kernels_json_lists_each_kernel_with_its_features(self):
        r = attngate("kernels", "--json", "--plugin", ARGS.faulty_plugin)
        self.assertEqual(r.returncode, 0, r.stderr)
        kernels = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
        self.assertEqual(kernels["flash"]["origin"], "built-in")
        self.assertIn("causal", kernels["flash"]["features"])
        self.assertIn("bf16", kernels["flash"]["features"])
        self.assertEqual(kernels["crashy"]["origin"], ARGS.faulty_plugin)
        # The text listing says the same.
        text = attngate("kernels", "--plugin", ARGS.faulty_plugin).stdout
        for name, k in kernels.items():
            self.assertIn(name, text)
            self.assertIn("supports: " + ", ".join(k["features"]), text)

    def timed_pair(self):
        a = self.path("timed-a.json")
        r = self.run_suite("--out", a, "--kernel", "flash", "--machine", "console", checks="perf")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        # The timings a loaded machine gives can be too noisy to decide on; the test is about
        # compare's output, not this machine: each row's samples become its median with a 1%
        # spread on side A, and twice that on side B.
        def settled(doc, factor):
            for e in doc["results"]:
                for c in e["checks"]:
                    if c["check"] == "perf":
                        samples = sorted(c["metrics"]["samples_s"])
                        median = samples[len(samples) // 2]
                        c["metrics"]["samples_s"] = [factor * median * (1 + 0.0025 * (i % 5)) for i in range(len(samples))]
            return doc
        write_json(a, settled(read_json(a), 1))
        b = self.path("timed-b.json")
        write_json(b, settled(read_json(a), 2))
        return a, b

    def test_compare_json_says_what_the_table_says(self):
        a, b = self.timed_pair()
        text = attngate("compare", a, b)
        r = attngate("compare", a, b, "--json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(text.returncode, 1)
        report = json.loads(r.stdout)
        self.assertTrue(report["regression"])
        self.assertEqual((report["a"], report["b"]), (a, b))
        self.assertEqual({(p["case"], p["status"]) for p in report["perf"]}, {(c["id"], "regression") for c in SUITE["cases"]})
        for p in report["perf"]:
            self.assertGreater(p["ratio"], 1.5)
            self.assertIn(f"{p['case']}/flash", text.stdout)
        self.assertIn("REGRESSION", text.stdout)
        same = attngate("compare", a, a, "--json")
        self.assertEqual(same.returncode, 0, same.stderr)
        self.assertFalse(json.loads(same.stdout)["regression"])
        self.assertNotIn("regression", {p["status"] for p in json.loads(same.stdout)["perf"]})

    def test_quiet_prints_nothing_but_errors_and_json(self):
        r = self.run_suite("--out", self.results, "--quiet")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        self.assertTrue(read_json(self.results)["complete"])
        r = attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--checks", "golden", "-q",
                     "--plugin", ARGS.faulty_plugin, "--kernel", "causal_off_by_one", "--out", self.path("fail.json"))
        self.assertEqual((r.returncode, r.stdout, r.stderr), (1, "", ""))  # the exit code is the answer
        a, b = self.timed_pair()
        r = attngate("compare", a, b, "--quiet")
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        r = attngate("kernels", "--json", "--quiet")
        self.assertEqual(r.returncode, 0)
        self.assertIn("flash", [k["name"] for k in json.loads(r.stdout)["kernels"]])
        r = attngate("run", "--suite", self.path("missing.json"), "--quiet")
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.json", r.stderr)

    # --- baseline review ---------------------------------------------------------------

    def accepted(self):
        """The memory baselines after a first accept of every row, and their file."""
        self.assertEqual(self.run_suite("--out", self.results).returncode, 0)
        r = attngate("baseline", "update", "--results", self.results, "--baselines", self.baselines, "--yes", "--reason", "first",
                     env=developer_env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"memory baselines: {ROWS} of {ROWS} row(s) changed", r.stdout)
        return os.path.join(self.baselines, "memory", "console.json")

    def grow(self, labels, by=64):
        """The results with these rows' ABI peak grown: their baselines changed."""
        results = read_json(self.results)
        for e in results["results"]:
            if f"{e['case']}/{e['kernel']}" in labels:
                for c in e["checks"]:
                    if c["check"] == "memory":
                        c["metrics"]["abi_peak_bytes"] += by
        write_json(self.results, results)

    def review(self, *extra, answers=()):
        return on_a_terminal([ARGS.attngate, "baseline", "update", "--results", self.results, "--baselines", self.baselines,
                              "--checks", "memory", "--reason", "review", *extra], answers)

    def test_unchanged_rows_are_kept_as_stored(self):
        path = self.accepted()
        with open(path, "rb") as f:
            before = f.read()
        r = attngate("baseline", "update", "--results", self.results, "--baselines", self.baselines, "--yes", env=developer_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"memory baselines: 0 of {ROWS} row(s) changed ({ROWS} unchanged kept as stored; --all reviews them too)", r.stdout)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)  # not rewritten: the provenance of every row is the first accept's

    def test_the_review_asks_only_about_the_changed_rows_and_q_writes_what_was_accepted(self):
        path = self.accepted()
        before = {(e["case"], e["kernel"]): e for e in read_json(path)["entries"]}
        self.grow({"a_f32/flash", "c_bf16/native"})
        code, text, prompts = self.review(answers=[b"a\n", b"q\n"])
        self.assertEqual(code, 0, text)
        self.assertIn(f"memory baselines: 2 of {ROWS} row(s) changed (4 unchanged kept as stored", text)
        self.assertLess(text.index("2 of 6"), text.index("accept "))  # the count comes first
        self.assertEqual(prompts, 2)
        self.assertIn("accept a_f32/flash (+", text)
        self.assertIn("[q]uit (nothing accepted yet: writes nothing)", text)
        self.assertIn("accept c_bf16/native (+", text)
        self.assertIn("[q]uit (writes the 1 accepted so far, skips the rest)", text)
        self.assertIn("quit: wrote 1 memory baseline(s)", text)
        self.assertIn("1 row(s) not reviewed", text)
        after = {(e["case"], e["kernel"]): e for e in read_json(path)["entries"]}
        self.assertEqual(after[("a_f32", "flash")]["values"]["abi_peak_bytes"],
                         before[("a_f32", "flash")]["values"]["abi_peak_bytes"] + 64)
        self.assertEqual(after[("a_f32", "flash")]["provenance"]["reason"], "review")
        for label, entry in before.items():
            if label != ("a_f32", "flash"):
                self.assertEqual(after[label], entry, label)  # the quit row and the unchanged ones as they were

    def test_q_before_any_accept_writes_nothing(self):
        path = self.accepted()
        with open(path, "rb") as f:
            before = f.read()
        self.grow({"b_f32/flash"})
        code, text, prompts = self.review(answers=[b"q\n"])
        self.assertEqual((code, prompts), (0, 1), text)
        self.assertIn("[q]uit (nothing accepted yet: writes nothing)", text)
        self.assertIn("quit: nothing accepted for memory", text)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_all_reviews_the_unchanged_rows_too(self):
        path = self.accepted()
        code, text, prompts = self.review("--all", answers=[b"s\n", b"A\n"])
        self.assertEqual(code, 0, text)
        self.assertIn(f"memory baselines: 0 of {ROWS} row(s) changed; --all: reviewing the {ROWS} unchanged too", text)
        self.assertEqual(prompts, 2)  # the second answer accepted it and the rest
        reasons = [e["provenance"]["reason"] for e in read_json(path)["entries"]]
        self.assertEqual(sorted(reasons), ["first"] + ["review"] * (ROWS - 1))


if __name__ == "__main__":
    main()
