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


if __name__ == "__main__":
    main()
