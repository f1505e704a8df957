"""End-to-end tests of the fingerprint: it records what actually runs (the shared objects
loaded, with their packages), so a library swapped under an unchanged binary shows in
"What changed", for a run against its baseline and for the two builds of an A/B run; a run
is compared with the fingerprint of the baselines it used, a plugin's included."""
import hashlib
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, developer_env, main, read_json, suite_with_goldens  # noqa: E402

SUITE = {
    "name": "fp",
    "seed": 5,
    "kernels": ["reference", "flash"],
    "cases": [{"id": "mha_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16, "causal": True}],
}
SWAPPED = "libsleef.so.3"  # the kernels' exp and tanh: a swap changes their numerics


class FingerprintTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-fp-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.baselines = os.path.join(self.dir, "baselines")
        self.suite = suite_with_goldens(os.path.join(self.dir, "fp.json"), SUITE, self.baselines)
        env = attngate("env", "--json")
        self.assertEqual(env.returncode, 0, env.stderr)
        self.system = json.loads(env.stdout)["loaded"][SWAPPED]
        # A copy of the library in a directory of its own, found first through LD_LIBRARY_PATH.
        self.libdir = os.path.join(self.dir, "lib")
        os.makedirs(self.libdir)
        shutil.copy(self.system["path"], os.path.join(self.libdir, SWAPPED))
        self.swapped_env = dict(os.environ, LD_LIBRARY_PATH=self.libdir)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_swap_listed(self, markdown, since):
        with open(markdown) as f:
            text = f.read().replace("\\", "")
        self.assertIn(f"### What changed (since the {since})", text)
        self.assertIn(f"loaded.{SWAPPED}.path: {self.system['path']} → {os.path.join(self.libdir, SWAPPED)}", text)
        return text

    def test_a_library_swapped_at_run_time_shows_in_what_changed(self):
        out, md = self.path("swapped.json"), self.path("swapped.md")
        p = attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--checks", "golden", "--out", out, "--markdown", md,
                     env=self.swapped_env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lib = read_json(out)["fingerprint"]["loaded"][SWAPPED]
        self.assertEqual(lib["path"], os.path.join(self.libdir, SWAPPED))
        self.assertNotIn("package", lib, "no package owns the copy")
        with open(self.system["path"], "rb") as f:
            self.assertEqual(lib["sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assert_swap_listed(md, "baseline")
        if "package" in self.system:  # dpkg knows the system's copy: its package is what went away
            with open(md) as f:
                self.assertIn(f"loaded.{SWAPPED}.package: removed (was {self.system['package']})", f.read().replace("\\", ""))

    def test_a_library_swapped_at_run_time_marks_a_fingerprint_change_in_the_history(self):
        # Two runs appended to a directory store's history, the second with the library
        # swapped: the history's bump marker names it.
        store = self.path("store")
        shutil.copytree(self.baselines, store)
        for name, env in (("before", None), ("after", self.swapped_env)):
            p = attngate("run", "--suite", self.suite, "--store", store, "--checks", "golden", "--append-history",
                         "--out", self.path(name + ".json"), env=env)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = attngate("history", "--suite", "fp", "--store", store)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        marker = [line for line in p.stdout.splitlines() if line.startswith("fingerprint changed at run 2")]
        self.assertEqual(len(marker), 1, p.stdout)
        self.assertIn(f"loaded.{SWAPPED}.path: {self.system['path']} → {os.path.join(self.libdir, SWAPPED)}", marker[0])

    def test_the_same_libraries_show_no_change(self):
        md = self.path("same.md")
        p = attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--checks", "golden", "--out", self.path("same.json"),
                     "--markdown", md)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(md) as f:
            self.assertIn("Nothing: the fingerprint is identical.", f.read())

    def read_markdown(self, md):
        with open(md) as f:
            return f.read().replace("\\", "")

    def test_goldens_generated_with_the_plugin_make_its_run_show_no_change(self):
        # A team makes its goldens with its plugin loaded: the goldens' fingerprint has it, so
        # "What changed" of a run of it is empty instead of listing the plugin as added.
        store = self.path("with-plugin")
        p = attngate("golden", "generate", "--suite", self.suite, "--baselines", store, "--plugin", ARGS.user_plugin)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        plugin = os.path.basename(ARGS.user_plugin)
        with open(os.path.join(store, "goldens", "fp", "fingerprint.json")) as f:
            golden_fp = json.load(f)
        self.assertIn("mine", golden_fp["kernels"])
        self.assertIn(plugin, golden_fp["plugins"])
        out, md = self.path("plugin-run.json"), self.path("plugin-run.md")
        p = attngate("run", "--suite", self.suite, "--baselines", store, "--plugin", ARGS.user_plugin, "--checks", "golden", "--out", out,
                     "--markdown", md)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(read_json(out)["baseline_fingerprint"], golden_fp)
        self.assertIn("Nothing: the fingerprint is identical.", self.read_markdown(md))

    def test_what_changed_compares_with_the_fingerprint_of_the_baselines_the_run_used(self):
        # The goldens were made without the plugin; the memory baselines were accepted from a
        # run with it. A run checked against those memory baselines is compared with their
        # fingerprint, which has the plugin.
        store = self.path("store")
        shutil.copytree(self.baselines, store)
        run = ["run", "--suite", self.suite, "--baselines", store, "--plugin", ARGS.user_plugin, "--kernel", "mine", "--checks", "golden,memory"]
        first, md = self.path("first.json"), self.path("first.md")
        p = attngate(*run, "--out", first, "--markdown", md)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("kernels.mine: added 0.1.0", self.read_markdown(md))  # against the goldens': true, they lack it
        p = attngate("baseline", "update", "--results", first, "--baselines", store, "--checks", "memory", "--yes", env=developer_env())
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        second, md = self.path("second.json"), self.path("second.md")
        p = attngate(*run, "--out", second, "--markdown", md)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = read_json(second)
        self.assertIn(os.path.basename(ARGS.user_plugin), r["baseline_fingerprint"]["plugins"])
        self.assertEqual(r["baseline_fingerprint"], read_json(first)["fingerprint"])
        self.assertIn("Nothing: the fingerprint is identical.", self.read_markdown(md))

    def test_ab_of_two_builds_diffs_each_sides_own_fingerprint(self):
        # Side B is the same binary with the library swapped: each side's `env --json` is
        # collected, A's is what B is compared with, and the command lines are no change.
        out, md = self.path("ab.json"), self.path("ab.md")
        b = f"env LD_LIBRARY_PATH={self.libdir} {ARGS.attngate}"
        p = attngate("ab", "--suite", self.suite, "--baselines", self.baselines, "--a", ARGS.attngate, "--b", b, "--rounds", "2",
                     "--max-rounds", "0", "--min-time", "0.001", "--out", out, "--markdown", md)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = read_json(out)
        self.assertEqual(r["ab"], {"a": ARGS.attngate, "b": b})
        self.assertNotIn("ab", r["fingerprint"])
        self.assertEqual(r["baseline_fingerprint"]["loaded"][SWAPPED]["path"], self.system["path"])
        self.assertEqual(r["fingerprint"]["loaded"][SWAPPED]["path"], os.path.join(self.libdir, SWAPPED))
        for side in ("fingerprint", "baseline_fingerprint"):
            self.assertTrue(r[side]["toolchain"]["compiler"], side)
        text = self.assert_swap_listed(md, "A side")
        self.assertNotIn("ab.a", text)
        self.assertNotIn("ab.b", text)

    def test_an_ab_side_that_cannot_give_its_fingerprint_is_noted_not_fatal(self):
        # A build whose `env` fails (older, or broken): the A/B still decides, and says why
        # there is nothing to compare.
        script = self.path("no-env.sh")
        with open(script, "w") as f:
            f.write('if [ "$1" = env ]; then echo "no env here" >&2; exit 2; fi\n'
                    f'exec {ARGS.attngate} "$@"\n')
        out = self.path("ab-noenv.json")
        p = attngate("ab", "--suite", self.suite, "--baselines", self.baselines, "--a", f"/bin/sh {script}", "--b", ARGS.attngate,
                     "--rounds", "2", "--max-rounds", "0", "--min-time", "0.001", "--out", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = read_json(out)
        self.assertIn("no env here", r["ab"]["a_fingerprint_error"])
        self.assertEqual(r["baseline_fingerprint"], {})
        self.assertIn("loaded", r["fingerprint"])


class WhatChangedTest(unittest.TestCase):
    """The checked-in smoke baseline's fingerprint against this machine: the machine's
    differences grouped after the dependencies, and a one-package bump first."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-changed-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def diff(self, before, after):
        paths = []
        for name, fp in (("before.json", before), ("after.json", after)):
            paths.append(os.path.join(self.dir, name))
            with open(paths[-1], "w") as f:
                json.dump(fp, f)
        r = attngate("env", "--diff", *paths)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()[1:]

    def test_a_fresh_machine_changes_no_dependency_and_a_bump_is_the_first_line(self):
        baseline = read_json(os.path.join(ARGS.source_dir, "baselines", "memory", "smoke.json"))
        self.assertEqual(len(baseline["fingerprints"]), 1, "the checked-in baseline was recorded in one run")
        recorded = next(iter(baseline["fingerprints"].values()))
        # A fresh machine with the dependencies the baseline was recorded with, and another
        # machine's CPU and OS: the Xeon the AVX-512 numerics baselines were recorded on.
        other = read_json(os.path.join(ARGS.source_dir, "baselines", "numerics", "avx512bf16_g___12.2.0", "smoke.json"))
        here = next(iter(other["fingerprints"].values()))
        fresh = dict(recorded, cpu=here["cpu"], os=here["os"])
        moved = sorted(f"{s}.{k}" for s in ("cpu", "os") for k in set(recorded[s]) | set(here[s]) if recorded[s].get(k) != here[s].get(k))
        lines = self.diff(recorded, fresh)
        self.assertIn("cpu.model", moved)
        self.assertEqual(lines[0], "No dependency changed.")
        self.assertEqual(lines[1], f"a different machine: {len(moved)} difference(s):")
        self.assertEqual([line.split()[1].rstrip(":") for line in lines[2:]], moved)
        # One package bumped on that machine: the first line, and the only one before the machine's group.
        bumped = json.loads(json.dumps(fresh))
        lib = next(name for name, o in sorted(bumped["loaded"].items()) if "version" in o)
        bumped["loaded"][lib]["version"] += "+bump1"
        lines = self.diff(recorded, bumped)
        self.assertEqual(lines[0], "1 dependency change(s):")
        self.assertIn(f"loaded.{lib}.version: ", lines[1])
        self.assertTrue(lines[1].endswith("+bump1"), lines[1])
        self.assertEqual(lines[2], f"a different machine: {len(moved)} difference(s):")


if __name__ == "__main__":
    main()
