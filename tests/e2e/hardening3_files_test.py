"""End-to-end tests of the third hardening pass (issue 38), its memory and file defects: paged
cases whose page table blows the memory budget, bench sizes beyond the machine, a symlink
planted where the atomic write puts its temporary file, a golden generation that fails or is
killed part-way, and --baselines naming a file. Each test fails on the code before its fix."""
import glob
import hashlib
import os
import resource
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, TempDirTest, attngate, main, read_json, suite_with_goldens, write_json  # noqa: E402

# The case: one sequence of 2^24 keys among 65,535 of one key. Its pools fit the
# default 1 GiB budget; its page table, 65,536 rows of 2^20 pages, is 256 GiB.
LONG_AND_SHORT = {"id": "long_and_short", "paged": {"kv_lens": [1 << 24] + [1] * 65535}, "heads_q": 1, "head_dim": 1}

# Big enough that golden generate takes a while (a kill lands part-way), small enough to be quick.
GENERATIONS = {"name": "generations", "seed": 1, "timeout_s": 60, "kernels": ["reference"],
               "cases": [{"id": f"c{i}", "seq_q": 256, "heads_q": 4, "head_dim": 64} for i in range(24)]}


def tree_hashes(directory):
    """{relative path: SHA-256} of every file below directory."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return out


class Hardening3FilesTest(TempDirTest):

    def assert_refused(self, p, *names):
        """Exit 2 with a message naming each of names, and no abort on the way."""
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        for name in names:
            self.assertIn(name, p.stderr)
        self.assertNotIn("terminate", p.stderr)
        self.assertNotIn("bad_alloc", p.stderr)

    # 1: the memory budget counts the page table, so the case is refused before anything is allocated.
    def test_01_paged_case_over_budget_by_its_page_table_is_exit_2_naming_the_case(self):
        suite = self.path("huge_table.json")
        write_json(suite, {"name": "huge_table", "kernels": ["reference"], "cases": [LONG_AND_SHORT]})
        bl = self.path("huge_table_bl")
        for args in (["inputs", "--suite", suite, "--case", "long_and_short", "--out", self.path("huge_inputs")],
                     ["golden", "generate", "--suite", suite, "--baselines", bl],
                     ["run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--out", self.path("huge.json")]):
            with self.subTest(args[0]):
                p = attngate(*args, timeout=300)
                self.assert_refused(p, "long_and_short", "memory_budget_mb")

    # 7: has_padding() was O(n^2): a pool of exactly the pages needed made the check run, and
    # three 65,536-sequence cases took about 30 s of CPU to parse.
    def test_07_a_suite_of_65536_sequence_cases_parses_in_seconds(self):
        suite = self.path("wide.json")
        cases = [{"id": f"wide{i}", "paged": {"kv_lens": [4] * 65536, "page_size": 4, "pages": 65536}, "heads_q": 1, "head_dim": 1}
                 for i in range(3)]
        write_json(suite, {"name": "wide", "kernels": ["reference"], "cases": cases})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = attngate("inputs", "--suite", suite, "--case", "wide0", "--out", self.path("wide_inputs"), timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        self.assertEqual(p.returncode, 0, p.stderr)
        # CPU time, not wall time, so that load does not matter: well under a second after the
        # fix, about 9.5 s a case before it.
        self.assertLess(cpu, 5.0, f"parsing the suite and writing one case's inputs took {cpu:.1f} s of CPU")
        print(f"inputs of a 3 x 65,536-sequence suite: {cpu:.2f} s of CPU")

    # 3: bench's sizes are checked, and so is their product against the machine's memory.
    def test_03_bench_refuses_sizes_out_of_range_or_beyond_the_machine(self):
        for args, names in ((["--s", "-5"], ["--s"]), (["--d", "-1"], ["--d"]), (["--s", str(1 << 40)], ["--s"]),
                            (["--threads", "-3"], ["--threads"]),
                            (["--rows", "decode", "--stream-mib", "65536"], ["--stream-mib", "GiB"]),
                            (["--rows", "decode", "--decode-sequences", "4096", "--decode-kv-len", str(1 << 22)], ["--decode-", "GiB"]),
                            (["--rows", "attention", "--s", "1", "--d", "1024"], ["--s and --d", "GiB"]),
                            (["--native-max-mib", "-1"], ["--native-max-mib"])):
            with self.subTest(args=args):
                p = attngate("bench", *args, timeout=120)
                self.assert_refused(p, *names)

    def test_counts_of_history_runs_are_in_range(self):
        # An unsigned count read from "-5" used to wrap to 2^64 - 5 and be accepted.
        for args, name in ((["history", "--suite", "smoke", "--last", "-5"], "--last"),
                           (["run", "--suite", "suites/smoke.json", "--history-last", "-1", "--out", self.path("hl.json")], "--history-last")):
            with self.subTest(option=name):
                self.assert_refused(attngate(*args, cwd=ARGS.source_dir), name)

    # 4: the temporary file of an atomic write is created exclusively, so a planted symlink
    # at its name cannot redirect the write out of --out.
    def test_04_a_symlink_planted_at_the_temporary_name_redirects_nothing(self):
        suite = suite_with_goldens(self.path("planted.json"), dict(GENERATIONS, name="planted", cases=GENERATIONS["cases"][:1]),
                                   self.path("planted_bl"))
        victim = self.path("victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        out = self.path("planted_out")
        os.mkdir(out)
        results = os.path.join(out, "results.json")
        # The child waits until the link is planted at the name its pid gave (PATH.tmp-<pid>).
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_w)
            os.read(ready_r, 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1), os.dup2(devnull, 2)
            os.execv(ARGS.attngate, [ARGS.attngate, "run", "--suite", suite, "--baselines", self.path("planted_bl"),
                                     "--checks", "golden", "--out", results])
        os.close(ready_r)
        os.symlink(victim, f"{results}.tmp-{pid}")
        os.write(ready_w, b"x")
        os.close(ready_w)
        _, status = os.waitpid(pid, 0)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertFalse(os.path.islink(results))
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertTrue(read_json(results)["complete"])

    # 5: a generation is all or nothing: a later case that fails leaves the old goldens whole.
    def test_05_a_failing_later_case_leaves_the_old_goldens(self):
        bl = self.path("failing_bl")
        suite = suite_with_goldens(self.path("generations.json"), GENERATIONS, bl)
        before = tree_hashes(bl)
        # New inputs for every case, then one whose reference output is all NaN (exit 2).
        broken = dict(GENERATIONS, seed=2, cases=GENERATIONS["cases"][:3] + [
            {"id": "all_nan", "seq_q": 8, "heads_q": 1, "head_dim": 8, "scale": 1e300}])
        os.makedirs(self.path("broken"), exist_ok=True)
        write_json(self.path("broken", "generations.json"), broken)
        p = attngate("golden", "generate", "--suite", self.path("broken", "generations.json"), "--baselines", bl)
        self.assert_refused(p, "all_nan")
        self.assertEqual(tree_hashes(bl), before)
        self.assertEqual(glob.glob(os.path.join(bl, "goldens", "*.tmp-*")), [])
        r = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--out", self.path("failing.json"))
        self.assertEqual(r.returncode, 0, r.stderr)

    # 5: ... and so does a kill part-way through the new goldens.
    def test_05_a_killed_generation_leaves_the_old_goldens(self):
        bl = self.path("killed_bl")
        suite = suite_with_goldens(self.path("killed.json"), dict(GENERATIONS, name="killed"), bl)
        before = tree_hashes(bl)
        os.makedirs(self.path("reseeded"), exist_ok=True)
        reseeded = self.path("reseeded", "killed.json")
        write_json(reseeded, dict(GENERATIONS, name="killed", seed=2))
        child = subprocess.Popen([ARGS.attngate, "golden", "generate", "--suite", reseeded, "--baselines", bl],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = child.stdout.readline()  # written once the first new golden is
            self.assertTrue(line.startswith("golden c0"), line)
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=60)
            child.stdout.close()
        self.assertEqual(child.returncode, -signal.SIGKILL, "golden generate finished before the kill; the suite is too small")
        after = tree_hashes(bl)
        self.assertEqual({k: v for k, v in after.items() if ".tmp-" not in k.split(os.sep)[1]}, before)
        r = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--out", self.path("killed_results.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        # The next generation succeeds beside what the killed one left.
        g = attngate("golden", "generate", "--suite", reseeded, "--baselines", bl)
        self.assertEqual(g.returncode, 0, g.stderr)

    # 19: --baselines naming a regular file is a usage error naming the option.
    def test_19_baselines_naming_a_file_is_exit_2_naming_the_option(self):
        suite = self.path("tiny19.json")
        write_json(suite, dict(GENERATIONS, name="tiny19", cases=GENERATIONS["cases"][:1]))
        not_a_dir = self.path("baselines_file")
        with open(not_a_dir, "w") as f:
            f.write("not a directory\n")
        for option, args in (("--baselines", ["golden", "generate", "--suite", suite, "--baselines", not_a_dir]),
                             ("--baselines", ["run", "--suite", suite, "--baselines", not_a_dir, "--checks", "golden",
                                              "--out", self.path("r19.json")]),
                             ("--store", ["golden", "generate", "--suite", suite, "--store", not_a_dir])):
            with self.subTest(command=args[0], option=option):
                p = attngate(*args)
                self.assert_refused(p, f"{option} {not_a_dir}: expected a directory")
        with open(not_a_dir) as f:
            self.assertEqual(f.read(), "not a directory\n")


if __name__ == "__main__":
    main()
