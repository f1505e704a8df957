"""attngate.toml: found from a subdirectory, flags beat it, `attngate config` names where each
value came from, and bad files are exit 2 naming file:line and the key, with nothing written."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import ARGS, attngate, developer_env  # noqa: E402


class ConfigTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-config-")
        self.sub = os.path.join(self.dir, "a", "b")
        os.makedirs(self.sub)
        os.makedirs(os.path.join(self.dir, "suites"))
        with open(os.path.join(ARGS.source_dir, "suites", "smoke.json")) as f:
            suite = json.load(f)
        suite["name"] = "mine"
        suite["cases"] = [c for c in suite["cases"] if c["id"] in ("mha_f32", "d1_f32")]
        with open(os.path.join(self.dir, "suites", "mine.json"), "w") as f:
            json.dump(suite, f)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, text):
        with open(os.path.join(self.dir, "attngate.toml"), "w") as f:
            f.write(text)

    def golden(self):
        r = attngate("golden", "generate", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_nearest_file_fills_flags_and_flags_win(self):
        self.write('suite = "mine"\nsuites = "suites"\nkernels = ["flash"]\nchecks = ["golden"]\n'
                   'baselines = "store"\n\n[report]\nmarkdown = "out/summary.md"\n')
        self.golden()
        self.assertTrue(os.path.exists(os.path.join(self.dir, "store", "goldens", "mine", "manifest.json")))
        r = attngate("run", "-o", "r.json", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.sub, "r.json")) as f:
            res = json.load(f)
        self.assertEqual(res["suite"], "mine")
        self.assertEqual({row["kernel"].split("[")[0] for row in res["results"]}, {"flash"})
        self.assertEqual({c["check"] for row in res["results"] for c in row["checks"]} - {"numerics", "contract"}, {"golden"})
        # [report]'s files are the repository's reports, of the results at the default --out: a
        # run sent elsewhere leaves them alone (a new user's scratch run of a crashing kernel
        # rewrote summary.md beside a results.json that still said pass).
        self.assertFalse(os.path.exists(os.path.join(self.dir, "out", "summary.md")), "-o r.json wrote the repository's report")
        r = attngate("config", "run", "-o", "r.json", cwd=self.sub)
        self.assertIn("not used: --out on the command line sends this run's results elsewhere", r.stdout)
        r = attngate("config", "ab", cwd=self.sub)  # ab's own results file: a run's reports are not its to replace
        self.assertIn("not used: ab's results go to reports/ab.json", r.stdout)
        r = attngate("run", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "out", "summary.md")), "[report] paths are relative to the file")
        # A flag replaces the file's value.
        r = attngate("run", "-o", "r2.json", "--kernel", "native", "--checks", "golden,memory", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.sub, "r2.json")) as f:
            res = json.load(f)
        self.assertEqual({row["kernel"] for row in res["results"]}, {"native"})
        self.assertIn("memory", {c["check"] for row in res["results"] for c in row["checks"]})

    def test_a_store_flag_or_the_environment_wins_over_the_files_store(self):
        # `store` and `baselines` are one setting: --store or --baselines on the command line,
        # then $ATTNGATE_STORE, replace the file's, so nothing is read from or written to it.
        self.write('suite = "mine"\nsuites = "suites"\nstore = "store"\nchecks = ["golden"]\n')
        manifest = os.path.join("goldens", "mine", "manifest.json")
        env = {k: v for k, v in os.environ.items() if k != "ATTNGATE_STORE"}
        for where, args, extra in (("by-flag", ["--baselines", "../../by-flag"], {}), ("by-store", ["--store", "../../by-store"], {}),
                                   ("by-env", [], {"ATTNGATE_STORE": os.path.join(self.dir, "by-env")})):
            r = attngate("golden", "generate", *args, cwd=self.sub, env={**env, **extra})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertTrue(os.path.exists(os.path.join(self.dir, where, manifest)), where)
            self.assertFalse(os.path.exists(os.path.join(self.dir, "store")), f"{where}: the file's store was written")
        r = attngate("golden", "generate", "--store", "", cwd=self.sub, env=env)  # a CI's --store "$UNSET": the file's store
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "store", manifest)))
        shutil.rmtree(os.path.join(self.dir, "store"))
        r = attngate("config", "run", cwd=self.sub, env={**env, "ATTNGATE_STORE": "/tmp/env-store"})
        self.assertIn("not used: $ATTNGATE_STORE wins", r.stdout)
        self.assertRegex(r.stdout, r"store +?= /tmp/env-store +\(\$ATTNGATE_STORE\)")
        r = attngate("config", "run", "--baselines", "elsewhere", cwd=self.sub, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = {line.split("=")[0].strip(): line for line in r.stdout.splitlines() if "=" in line}
        self.assertIn("not used: flag --baselines wins", lines["store"])
        r = attngate("run", "--baselines", "../../by-flag", "-o", "r.json", cwd=self.sub, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The file's store, mistyped (it does not exist): said with where it was set, before a golden is missed.
        r = attngate("run", "-o", "typo.json", cwd=self.sub, env=env)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        store = os.path.join(self.dir, "store")
        self.assertIn(f"error: --store {store}: no such directory (the store, where goldens and baselines live)", r.stderr)
        self.assertIn(f"(--store {store} is set at {os.path.join(self.dir, 'attngate.toml')}:3 (store))", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.sub, "typo.json")))
        # Both keys in the file: `store` wins, as --store does over --baselines, and the
        # `baselines` line says so rather than looking like the store in use.
        self.write('suite = "mine"\nsuites = "suites"\nstore = "store"\nbaselines = "bl"\nchecks = ["golden"]\n')
        r = attngate("golden", "generate", cwd=self.sub, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "store", manifest)))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "bl")))
        r = attngate("config", "run", cwd=self.sub, env=env)
        lines = {line.split("=")[0].strip(): line for line in r.stdout.splitlines() if "=" in line}
        self.assertIn(f"not used: store ({os.path.join(self.dir, 'attngate.toml')}:3) wins", lines["baselines"])
        self.assertNotIn("not used", lines["store"])

    def test_results_by_default_go_beside_the_reports_whatever_the_directory(self):
        # reports/results.json, like [report]'s paths, is the repository's: a run from a
        # subdirectory writes it there, and `baseline update` from another finds it.
        self.write('suite = "mine"\nsuites = "suites"\nkernels = ["flash"]\nchecks = ["golden", "memory"]\n'
                   'store = "store"\n\n[report]\nmarkdown = "reports/summary.md"\n')
        self.golden()
        r = attngate("run", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for name in ("results.json", "summary.md"):
            self.assertTrue(os.path.exists(os.path.join(self.dir, "reports", name)), name)
        self.assertFalse(os.path.exists(os.path.join(self.sub, "reports")), "results.json went to the working directory")
        r = attngate("baseline", "update", "--checks", "memory", "--yes", "--reason", "first", cwd=os.path.join(self.dir, "a"),
                     env=developer_env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "store", "memory", "mine.json")))
        r = attngate("config", "run", cwd=self.sub)
        self.assertIn(f"= {os.path.join(self.dir, 'reports', 'results.json')}", r.stdout)

    def test_report_keys_fill_the_report_table_not_bisects_own_pages(self):
        # bisect's --markdown and --html answer another question: given the run's
        # reports/summary.md, it replaced the run's summary with its own page.
        self.write('suite = "mine"\nsuites = "suites"\n\n[report]\nmarkdown = "reports/summary.md"\nhtml = "reports/report.html"\n')
        r = attngate("config", "bisect", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = {line.split("=")[0].strip(): line for line in r.stdout.splitlines() if "=" in line}
        for key in ("report.markdown", "report.html"):
            self.assertIn("not used by bisect", lines[key])
        r = attngate("config", "run", cwd=self.sub)
        lines = {line.split("=")[0].strip(): line for line in r.stdout.splitlines() if "=" in line}
        self.assertNotIn("not used", lines["report.markdown"])

    def test_config_names_each_origin(self):
        self.write('suite = "mine"\nsuites = "suites"\n\nkernels = ["flash"]\n')
        r = attngate("config", "run", "--checks", "golden", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stderr)
        toml = os.path.join(self.dir, "attngate.toml")
        lines = {line.split("=")[0].strip(): line for line in r.stdout.splitlines() if "=" in line}
        self.assertIn(f"({toml}:1)", lines["suite"])
        self.assertIn(f"({toml}:4)", lines["kernels"])
        self.assertIn("(flag --checks)", lines["checks"])
        self.assertIn("(default)", lines["device_class"])
        # Before the plugin is built, config still shows everything, and says what is missing.
        self.write('suite = "mine"\nsuites = "suites"\nplugins = ["build/libmine.so"]\n')
        r = attngate("config", cwd=self.sub)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no such file " + os.path.join(self.dir, "build", "libmine.so"), r.stdout)

    def bad(self, text, *expect):
        self.write(text)
        r = attngate("run", "-o", "r.json", cwd=self.sub)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.sub, "r.json")), "nothing is written")

    def test_bad_files_are_exit_2_with_file_line_and_key(self):
        toml = os.path.join(self.dir, "attngate.toml")
        self.bad('suite = "mine"\nsutie = "x"\n', f"{toml}:2", 'unknown key "sutie"')
        self.bad('suite = "mine"\n[report]\nhtlm = "x"\n', f"{toml}:3", 'unknown key "report.htlm"')
        self.bad('suite = 3\n', f"{toml}:1", "suite: expected a string, got a number")
        self.bad('suite = "mine"\nkernels = "flash"\n', f"{toml}:2", "kernels: expected an array of strings")
        self.bad('suite = "mine"\nplugins = ["missing.so"]\n', f"{toml}:2", "plugins: no such file")
        self.bad('suite = "mine\n', f"{toml}:1:", "closing quote is missing?")
        self.bad('suite = "mine"\n[report]\nhtml = "r.html"\nthreshold_pct = 5\n', f"{toml}:4",
                 'unknown key "report.threshold_pct": threshold_pct is a top-level key', "move it above [report]")
        # A value the flag would refuse is refused at its line, also where `run` does not use it (alpha).
        self.bad('suite = "mine"\nchecks = ["golden", "memroy"]\n', f"{toml}:2", 'checks: unknown check "memroy"')
        self.bad('suite = "mine"\nmachine = ""\n', f"{toml}:2", "machine: an empty name")
        # From a new user's trial: cost without perf gated throughput unasked (a 2x row failed the run).
        self.bad('suite = "mine"\nchecks = ["golden", "memory", "cost"]\n', f"{toml}:2: checks: cost without perf", "ask for perf as well")
        self.write('suite = "mine"\nsuites = "suites"\n')
        r = attngate("run", "-o", "r.json", "--checks", "golden,cost", cwd=self.sub)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--checks: cost without perf", r.stderr)
        r = attngate("config", "run", "--checks", "golden,cost", cwd=self.sub)  # says what run would refuse
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"checks +=  *golden, cost")
        self.assertIn("--checks: cost without perf", r.stderr)
        self.bad('suite = "mine"\nalpha = 7\n', f"{toml}:2", "alpha: expected a finite number in (0, 0.5], got 7")
        self.bad('suite = "mine"\nthreshold_pct = -5\n', f"{toml}:2", "threshold_pct: expected a finite number")
        self.bad('suite = "mine"\ntimeout = nan\n', f"{toml}:2", "timeout: expected a finite number")
        self.bad('suite = "mine"\nsuites = "nowhere"\n', f"{toml}:2", "suites: ")
        # A value the file gave that the run finds wrong later is named with its line too.
        self.bad('suite = "mine"\nsuites = "suites"\nkernels = ["flash", "nope"]\n', "--kernel nope: ", f"(--kernel nope is set at {toml}:3 (kernels))")
        self.bad('suite = "mine"\nsuites = "suites"\ncases = ["nope*"]\n', "--case nope*: ", f"(--case nope* is set at {toml}:3 (cases))")
        self.bad('suite = "yours"\n', "--suite yours: no such suite file", f"(--suite yours is set at {toml}:1 (suite))")
        none = os.path.join(self.dir, "none.toml")
        r = attngate("--config", none, "run", cwd=self.sub)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"--config names {none}, which does not exist", r.stderr)
        r = attngate("run", cwd=self.sub, env=dict(os.environ, ATTNGATE_CONFIG=none))  # says which setting named it
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"$ATTNGATE_CONFIG names {none}, which does not exist", r.stderr)

    def test_a_suite_name_says_where_it_looked(self):
        r = attngate("run", "--suite", "nosuch", cwd=self.sub)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nosuch.json", r.stderr)
        self.assertIn(os.path.join(self.sub, "suites", "nosuch.json"), r.stderr)


if __name__ == "__main__":
    common.main()
