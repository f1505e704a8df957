"""End-to-end tests of two builds of a team's plugin. The user's plugin
(tests/plugins/user_kernels.cpp) is built here with g++ and with clang++-19, as a team's CI
would build it at the PR's base and head, and a broken build of the same kernel. `ab
--a-plugin OLD.so --b-plugin NEW.so` runs each build in an attngate process of its own:
"What changed" names the compiler, and the last line agrees with the exit code, on a green
run and on a red one. `baseline update` of the numerics the broken build moved shows the
outputs' hashes, old -> new."""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, developer_env, main, read_json, suite_with_goldens  # noqa: E402

SUITE = {
    "name": "abplug",
    "seed": 11,
    "kernels": ["reference"],
    "cases": [
        {"id": "causal", "seq_q": 64, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "gqa", "seq_q": 32, "heads_q": 4, "heads_kv": 2, "head_dim": 16},
    ],
}
FAST = ["--rounds", "2", "--max-rounds", "0", "--min-time", "0.001"]
CLANG = shutil.which("clang++-19")
GXX = shutil.which("g++")


class Extra:
    kernels_lib = None


def build_plugin(cxx, source, out, *defines):
    """The plugin as a team builds it: its source, attngate's ABI header, and (as tests/plugins
    do) the built-in kernels it delegates to."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [cxx, "-std=c++20", "-O2", "-shared", "-fPIC", *defines, "-I", os.path.join(ARGS.source_dir, "kernels", "include"),
           "-I", os.path.join(ARGS.source_dir, "tests", "plugins"), os.path.join(ARGS.source_dir, "tests", "plugins", source),
           Extra.kernels_lib, "-lsleef", "-pthread", "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return out


def compiler_ident(cxx):
    """The compiler's own name for itself ("Debian clang version 19.1.7 (3~deb12u1)"), which is
    what it writes into .comment."""
    return subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]


class AbPluginsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not GXX:
            raise unittest.SkipTest("g++ is not on PATH: the plugin's base build needs it")
        cls.dir = tempfile.mkdtemp(prefix="attngate-abplug-")
        cls.baselines = os.path.join(cls.dir, "baselines")
        cls.suite = suite_with_goldens(os.path.join(cls.dir, "abplug.json"), SUITE, cls.baselines)
        # Each build in a directory of its own, under the same file name, as a CI's base and head.
        cls.gcc = build_plugin(GXX, "user_kernels.cpp", os.path.join(cls.dir, "base", "libuser.so"))
        cls.wrong = build_plugin(GXX, "wrong_mine_kernels.cpp", os.path.join(cls.dir, "broken", "libuser.so"))
        cls.clang = CLANG and build_plugin(CLANG, "user_kernels.cpp", os.path.join(cls.dir, "head", "libuser.so"))
        cls.leaky = build_plugin(GXX, "user_kernels.cpp", os.path.join(cls.dir, "leaky", "libuser.so"), "-DATTNGATE_TEST_LEAK_BYTES=64")
        cls.bigger = build_plugin(GXX, "user_kernels.cpp", os.path.join(cls.dir, "bigger", "libuser.so"), "-DATTNGATE_TEST_EXTRA_SCRATCH")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def ab(self, *args, out="ab.json"):
        p = attngate("ab", "--suite", self.suite, "--baselines", self.baselines, *FAST, "--out", self.path(out), *args)
        self.assertGreaterEqual(p.returncode, 0, f"killed by a signal\n{p.stderr}")
        return p

    def assert_last_line_agrees(self, p):
        """The closing line says what the exit code says."""
        last = p.stdout.rstrip("\n").splitlines()[-1]
        if p.returncode == 0:
            self.assertTrue(last.startswith("passed: no regression"), last)
        else:
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertTrue(last.startswith("FAILED: "), last)
            self.assertNotIn("no regression", last)
        return last

    @unittest.skipUnless(CLANG, "clang++-19 is not installed (bash ci/install-deps.sh installs clang-19): no clang build of the plugin")
    def test_a_g_plus_plus_to_clang_rebuild_names_the_compiler_in_what_changed(self):
        md = self.path("toolchain.md")
        p = self.ab("--a-plugin", self.gcc, "--b-plugin", self.clang, "--markdown", md, out="toolchain.json")
        # Both builds delegate to the same built-in kernel: the same bits, and 2 rounds gate no timing.
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assert_last_line_agrees(p)
        r = read_json(self.path("toolchain.json"))
        self.assertEqual(r["ab"], {"a": f"attngate --plugin {self.gcc}", "b": f"attngate --plugin {self.clang}"})
        self.assertEqual({row["kernel"] for row in r["results"]}, {"mine"}, "the plugin's kernels, not the shared built-ins")
        gcc_ident, clang_ident = compiler_ident(GXX), compiler_ident(CLANG)
        a = r["baseline_fingerprint"]["plugins"]["libuser.so"]["compilers"]
        b = r["fingerprint"]["plugins"]["libuser.so"]["compilers"]
        self.assertIn("GCC: " + gcc_ident.split(" ", 1)[1], a)  # "g++ (Debian 12.2.0-14) 12.2.0" -> "GCC: (Debian ...) 12.2.0"
        self.assertFalse(any("clang" in c for c in a), a)
        self.assertIn(clang_ident, b)
        self.assertIn("libstdc++.so.6", r["fingerprint"]["plugins"]["libuser.so"]["needed"])
        want = f"plugins.libuser.so.compilers: +{clang_ident}"
        with open(md) as f:
            self.assertIn(want, f.read().replace("\\", ""))
        self.assertIn("What changed from A to B", p.stdout)
        self.assertIn(want, p.stdout)

    def test_a_red_ab_of_two_plugin_builds_says_failed_on_its_last_line(self):
        p = self.ab("--a-plugin", self.gcc, "--b-plugin", self.wrong, out="red.json")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        last = self.assert_last_line_agrees(p)
        self.assertTrue(last.startswith(f"FAILED: golden failed on {len(SUITE['cases'])} case x kernel(s)"), last)
        self.assertIn(f"B (attngate --plugin {self.wrong}) against A (attngate --plugin {self.gcc})", last)

    def memory_checks(self, out):
        """(case, verdict, reason, notes, metrics) of each memory check in an A/B's results."""
        r = read_json(self.path(out))
        self.assertIn("memory", r["checks"])
        got = [(row["case"], c["verdict"], c["reason"], c.get("notes", []), c.get("metrics", {}))
               for row in r["results"] for c in row["checks"] if c["check"] == "memory"]
        self.assertEqual(sorted(case for case, *_ in got), sorted(c["id"] for c in SUITE["cases"]), got)  # one row per case
        return got

    def test_ab_compares_memory_and_passes_the_same_build_against_itself(self):
        md = self.path("same.md")
        p = self.ab("--a-plugin", self.gcc, "--b-plugin", self.gcc, "--markdown", md, out="same.json")
        got = self.memory_checks("same.json")
        for case, verdict, reason, notes, m in got:
            self.assertEqual(verdict, "pass", (case, reason))
            self.assertRegex(reason, r"^no leak; peak \d+ B \(\+0\.0% against side A\)$")
            self.assertEqual(m["peak_baseline_bytes"], m["abi_peak_bytes"])
            self.assertEqual(notes, [])
        self.assertNotIn("memory failed", p.stdout)
        with open(md) as f:  # what an A/B leaves unchecked is cost alone
            self.assertIn("not checked: cost (`attngate ab` compares golden, numerics, memory and perf", f.read().replace("\\`", "`"))

    def test_a_build_that_leaks_fails_abs_memory_check_on_every_case(self):
        p = self.ab("--a-plugin", self.gcc, "--b-plugin", self.leaky, out="leaky.json")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        last = self.assert_last_line_agrees(p)
        self.assertTrue(last.startswith(f"FAILED: memory failed on {len(SUITE['cases'])} case x kernel(s)"), last)
        for case, verdict, reason, notes, m in self.memory_checks("leaky.json"):
            self.assertEqual(verdict, "fail", (case, reason))
            self.assertTrue(reason.startswith("heap leak: "), reason)
            self.assertGreaterEqual(m["leak_bytes_per_call"], 64, reason)  # glibc hands back at least what was asked
            self.assertEqual(notes, [])  # side A does not leak
            # The console names each failing row, as `run` does (only the Markdown named them).
            self.assertRegex(p.stdout, rf"FAIL {case} / \S+: memory: heap leak: ")
        # The same leak on both sides still fails B (a leak is a leak), and says A has it too.
        p = self.ab("--a-plugin", self.leaky, "--b-plugin", self.leaky, out="both-leak.json")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        for case, verdict, reason, notes, m in self.memory_checks("both-leak.json"):
            self.assertEqual(verdict, "fail", (case, reason))
            self.assertEqual(len(notes), 1, notes)
            self.assertRegex(notes[0], r"^side A fails its memory check here \(heap leak: .*\); side B does too$")

    def test_a_build_that_holds_more_memory_fails_on_its_peak_against_side_a(self):
        p = self.ab("--a-plugin", self.gcc, "--b-plugin", self.bigger, out="bigger.json")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assert_last_line_agrees(p)
        shapes = {c["id"]: c for c in SUITE["cases"]}
        for case, verdict, reason, notes, m in self.memory_checks("bigger.json"):
            c = shapes[case]
            extra = 4 * c["heads_q"] * c["seq_q"] * c.get("seq_k", c["seq_q"])  # the second scratch, held through the call
            self.assertEqual(verdict, "fail", (case, reason))
            self.assertEqual(m["abi_peak_bytes"] - m["peak_baseline_bytes"], extra, reason)
            self.assertTrue(reason.startswith("peak memory grew ") and
                            f"% over side A ({m['peak_baseline_bytes']} B -> {m['abi_peak_bytes']} B; limit 10%)" in reason, reason)

    def test_a_build_older_than_time_memory_still_compares_and_says_memory_was_not_compared(self):
        # An older attngate's `time` rejects --memory as CLI11 does; ab then runs it without.
        old = self.path("old-attngate")
        with open(old, "w") as f:
            f.write("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --memory ] && { echo 'The following argument was not expected: --memory' >&2; "
                    f"exit 109; }}; done\nexec {ARGS.attngate} \"$@\"\n")
        os.chmod(old, 0o755)
        p = self.ab("--a", old, "--a-plugin", self.gcc, "--b-plugin", self.gcc, out="old.json")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for case, verdict, reason, notes, m in self.memory_checks("old.json"):
            self.assertEqual(verdict, "pass", (case, reason))
            self.assertRegex(reason, r"^no leak; peak \d+ B \(no peak to compare with: side A: its build is older than `attngate time --memory`\)$")
        p = self.ab("--b", old, "--a-plugin", self.gcc, "--b-plugin", self.gcc, out="old-b.json")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for case, verdict, reason, notes, m in self.memory_checks("old-b.json"):
            self.assertEqual((verdict, reason), ("skip", "side B: its build is older than `attngate time --memory`"))

    def test_a_sides_own_build_replaces_a_plugin_both_sides_load(self):
        # A --plugin both sides load (as attngate.toml's `plugins` gives it) providing the same
        # kernel as a side's own build is replaced by it, not "already registered".
        p = self.ab("--plugin", self.gcc, "--a-plugin", self.gcc, "--b-plugin", self.wrong, out="replaced.json")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertNotIn("already registered", p.stderr)
        self.assert_last_line_agrees(p)

    def test_the_sides_take_their_settings_from_ab_not_from_attngate_toml_again(self):
        # A team's attngate.toml: its plugin (ab's --plugin, replaced by each side's own build)
        # and an adapter that would fail to start. The sides' processes must not start it.
        repo = self.path("repo")
        os.makedirs(repo, exist_ok=True)
        with open(os.path.join(repo, "attngate.toml"), "w") as f:
            f.write(f'plugins = ["{self.gcc}"]\nadapters = ["/bin/false"]\n')
        p = attngate("ab", "--suite", self.suite, "--baselines", self.baselines, *FAST, "--out", self.path("toml.json"),
                     "--a-plugin", self.gcc, "--b-plugin", self.wrong, cwd=repo)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertNotIn("/bin/false", p.stderr)
        self.assert_last_line_agrees(p)

    def test_each_sides_lock_files_show_in_what_changed(self):
        for side, numpy in (("base", "1.26.4"), ("head", "2.0.0")):
            os.makedirs(self.path("locks", side), exist_ok=True)
            with open(self.path("locks", side, "requirements.lock"), "w") as f:
                f.write(f"numpy=={numpy}\njax==0.4.30\n")
        md = self.path("locks.md")
        p = self.ab("--a-plugin", self.gcc, "--b-plugin", self.gcc, "--a-lockfile", self.path("locks", "base", "requirements.lock"),
                    "--b-lockfile", self.path("locks", "head", "requirements.lock"), "--markdown", md, out="locks.json")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assert_last_line_agrees(p)
        with open(md) as f:
            text = f.read().replace("\\", "")
        self.assertIn("lockfiles.requirements.lock.packages.numpy: 1.26.4 → 2.0.0", text)
        self.assertNotIn("packages.jax:", text)

    def test_a_plugin_whose_section_table_is_corrupt_is_an_error_naming_it(self):
        # The loader reads program headers only: such a plugin loads and runs, but its
        # toolchain cannot be read. The fingerprint says so, naming the file, and nothing crashes.
        corrupt = self.path("corrupt", "libuser.so")
        os.makedirs(os.path.dirname(corrupt), exist_ok=True)
        shutil.copy(self.gcc, corrupt)
        with open(corrupt, "r+b") as f:
            f.seek(0x28)  # ELF64 e_shoff
            f.write(struct.pack("<Q", 1 << 40))
        p = attngate("env", "--json", "--plugin", corrupt)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertRegex(p.stderr, re.escape(corrupt) + r".*malformed ELF")
        p = self.ab("--a-plugin", corrupt, "--b-plugin", self.gcc, out="corrupt.json")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)  # the A/B itself still decides
        self.assert_last_line_agrees(p)
        r = read_json(self.path("corrupt.json"))
        self.assertIn(corrupt, r["ab"]["a_fingerprint_error"])
        self.assertIn("malformed ELF", r["ab"]["a_fingerprint_error"])

    def test_the_numerics_review_shows_the_output_hashes_old_to_new_not_the_element_count(self):
        store = self.path("review-store")
        shutil.copytree(self.baselines, store)
        sha = {}
        for name, plugin in (("good", self.gcc), ("broken", self.wrong)):
            out = self.path(f"review-{name}.json")
            p = attngate("run", "--suite", self.suite, "--baselines", store, "--plugin", plugin, "--kernel", "mine", "--checks", "golden",
                         "--out", out)
            self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
            sha[name] = {r["case"]: c["metrics"]["sha256"] for r in read_json(out)["results"] for c in r["checks"]
                         if c["check"] == "numerics"}
            p = attngate("baseline", "update", "--results", out, "--baselines", store, "--checks", "numerics", "--yes", "--force",
                         env=developer_env())
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(set(sha["good"]), {c["id"] for c in SUITE["cases"]})
        rows = [line for line in p.stdout.splitlines() if "/mine " in line]
        self.assertEqual(len(rows), len(SUITE["cases"]), p.stdout)
        for case_id in sha["good"]:
            row = next(line for line in rows if line.strip().startswith(f"{case_id}/mine "))
            old, new = sha["good"][case_id][:12], sha["broken"][case_id][:12]
            self.assertNotEqual(old, new)
            self.assertRegex(row, rf"{old}\s+{new}\s+bits moved \(\d+ of \d+ sampled\)", p.stdout)
            self.assertNotIn("+0.0%", row)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--kernels-lib", required=True)
    parsed, sys.argv[1:] = parser.parse_known_args()
    Extra.kernels_lib = os.path.abspath(parsed.kernels_lib)
    main()
