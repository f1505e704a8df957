"""`attngate bisect` over lock files, on a package index served on loopback: tiny packages with
several releases each (bisect_support.py), an adapter whose kernels read them (bisect_adapter.py),
real pip, real venvs, the real binary. A bump that moves several packages, only one of which moves
a row, blames that one and its release; a row moved by two packages together names both; a change
that does not show again is flaky; an interrupted run resumes from its cache; --max-envs bounds
the work; bad input is exit 2 naming the file and line."""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bisect_support import serve, simple_index, wheel, write_lock  # noqa: E402
from common import ARGS, TempDirTest, attngate, main, read_json, suite_with_goldens  # noqa: E402

RELEASES = {  # name: [(version, requires, body)]
    "alpha": [("1.0", (), ""), ("1.1", (), ""), ("1.2", (), "BROKEN = True"), ("1.3", (), "BROKEN = True")],
    "beta": [("1.0", (), ""), ("1.5", (), ""), ("2.0", (), "FLAG = True")],
    "gamma": [("1.0", (), ""), ("2.0", (), "FLAG = True")],
    "delta": [("1.0", (), ""), ("2.0", (), "FLAG = True")],
    "core": [("1.0", ("corelib==1.0",), ""), ("1.5", ("corelib==1.5",), ""), ("2.0", ("corelib==2.0",), "")],
    "corelib": [("1.0", (), ""), ("1.5", (), ""), ("2.0", (), "")],
    "omega": [("1.0", (), ""), ("2.0", ("alpha>=1.3",), "")],
    "newpkg": [("0.1", (), "")],
    "zeta": [("1.0", (), ""), ("1.1", (), "raise RuntimeError('zeta 1.1 imports absl, which it does not declare')"),
             ("1.2", (), "BROKEN = True"), ("1.3", (), "BROKEN = True")],
    # eta 2.0 needs a zeta of 1.2 or later and does not say so: moved alone, the adapter cannot start.
    "eta": [("1.0", (), ""), ("2.0", (), "import zeta\nif not getattr(zeta, 'BROKEN', False):\n    raise RuntimeError('eta 2.0 needs zeta 1.2')")],
}
OLD = {"alpha": "1.0", "beta": "1.0", "gamma": "1.0", "delta": "1.0", "core": "1.0", "corelib": "1.0", "omega": "1.0"}
SUITE = {"name": "bisect-test", "seed": 7, "kernels": ["pkg-attn", "pair-attn", "flaky-attn", "zeta-attn"],
         "cases": [{"id": "c1", "seq_q": 16, "heads_q": 1, "head_dim": 8}]}


class BisectLocks(TempDirTest):
    first_run = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        root = cls.path(cls, "index")
        os.makedirs(os.path.join(root, "files"))
        wheels = [wheel(os.path.join(root, "files"), n, v, req, body) for n, rel in RELEASES.items() for v, req, body in rel]
        simple_index(root, wheels)
        cls.server, cls.url = serve(root)
        cls.suite = suite_with_goldens(cls.path(cls, "suite.json"), SUITE, cls.path(cls, "baselines"))
        os.environ["BISECT_FLAKY_MARKER"] = cls.path(cls, "flaky-marker")

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        super().tearDownClass()

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def lock(self, name, pins, extra=()):
        return write_lock(self.path(name), pins, extra)

    def argv(self, old, new, kernel, cache, out, *more):
        adapter = os.path.join(ARGS.source_dir, "tests", "e2e", "bisect_adapter.py")
        return [ARGS.attngate, "bisect", "--suite", self.suite, "--a-lock", old, "--b-lock", new, "--kernel", kernel,
                "--checks", "golden,numerics", "--store", self.path("baselines"), "--adapter", adapter,
                "--index-url", self.url, "--cache", cache, "--out", out, *more]

    def bisect(self, old, new, kernel, cache, name, *more):
        out = self.path(name)
        p = subprocess.run(self.argv(old, new, kernel, cache, out, *more), capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p, read_json(os.path.join(out, "bisect.json"))

    def bump_one(self):
        new = {**OLD, "alpha": "1.3", "core": "2.0", "corelib": "2.0", "omega": "2.0", "newpkg": "0.1"}
        return self.lock("old.lock", OLD), self.lock("new.lock", new)

    def test_a_bump_of_several_packages_blames_the_one_release(self):
        old, new = self.bump_one()
        md = self.path("bump.md")
        p, report = self.bisect(old, new, "pkg-attn", self.path("cache"), "bump", "--markdown", md)
        self.assertEqual(len(report["rows"]), 1, report)
        row = report["rows"][0]
        self.assertEqual(row["units"], [["alpha"]], row)
        self.assertEqual(row["change"], "golden pass → fail, output bits changed")
        rel = row["releases"][0]
        self.assertEqual((rel["package"], rel["before"], rel["after"]), ("alpha", "1.1", "1.2"), rel)
        self.assertIn(["core", "corelib"], report["units"], "core pins corelib: one unit, from core's own requirements")
        self.assertIn("pkg-attn on c1: golden pass → fail, output bits changed between alpha 1.1 and 1.2", p.stdout)
        with open(md) as f:
            self.assertIn("between alpha 1.1 and 1.2", f.read())
        with open(self.path("bump", "bisect.html")) as f:
            self.assertIn("<section class=\"bisect\">", f.read())
        self.assertLessEqual(report["environments"], 7, report)
        BisectLocks.first_run = report  # a cold run: the resume test compares with it

    def test_a_row_moved_by_two_packages_together_names_both(self):
        old = self.lock("old2.lock", OLD)
        new = self.lock("new2.lock", {**OLD, "beta": "2.0", "gamma": "2.0", "core": "2.0", "corelib": "2.0"})
        p, report = self.bisect(old, new, "pair-attn", self.path("cache"), "pair")
        row = report["rows"][0]
        self.assertEqual(sorted(u[0] for u in row["units"]), ["beta", "gamma"], row)
        said = {r["package"]: (r["before"], r["after"]) for r in row["releases"]}
        self.assertEqual(said, {"beta": ("1.5", "2.0"), "gamma": ("1.0", "2.0")}, row)
        self.assertIn("together with", p.stdout)
        self.assertIn("neither moves it alone", p.stdout)

    def test_a_change_that_does_not_show_again_is_flaky(self):
        old = self.lock("old3.lock", OLD)
        new = self.lock("new3.lock", {**OLD, "delta": "2.0", "core": "2.0", "corelib": "2.0"})
        if os.path.exists(os.environ["BISECT_FLAKY_MARKER"]):
            os.remove(os.environ["BISECT_FLAKY_MARKER"])
        p, report = self.bisect(old, new, "flaky-attn", self.path("cache-flaky"), "flaky")
        row = report["rows"][0]
        self.assertTrue(row.get("flaky"), row)
        self.assertNotIn("releases", row)
        self.assertIn("flaky", p.stdout)
        self.assertNotIn("between delta", p.stdout)

    def test_a_release_in_which_the_adapter_cannot_start_is_skipped_and_named(self):
        # From a new user's trial: jax 0.9.2 imports absl without declaring it, so the adapter
        # did not start in its venv, and the whole bisect stopped (exit 3, no answer) on it.
        old = self.lock("old5.lock", {**OLD, "zeta": "1.0"})
        new = self.lock("new5.lock", {**OLD, "zeta": "1.3"})
        p, report = self.bisect(old, new, "zeta-attn", self.path("cache-zeta"), "zeta")
        rel = report["rows"][0]["releases"][0]
        self.assertEqual((rel["package"], rel["before"], rel["after"], rel["skipped"]), ("zeta", "1.0", "1.2", ["1.1"]), rel)
        self.assertIn("cannot run zeta==1.1: ", p.stdout + p.stderr)
        self.assertIn("between zeta 1.0 and 1.2 (", p.stdout)
        self.assertIn("1.1 could not be installed or run, skipped)", p.stdout)
        self.assertNotIn("untested", report["rows"][0])  # every package set could be tried
        self.assertNotIn("package set(s) could not be installed", p.stdout)

    def test_a_package_set_that_cannot_run_is_named_beside_the_answer(self):
        # Review: the search for the packages that move a row took a set that could not be
        # installed or run as "does not move it", and said nothing: eta alone was never tried.
        old = self.lock("old6.lock", {**OLD, "zeta": "1.0", "eta": "1.0"})
        new = self.lock("new6.lock", {**OLD, "zeta": "1.3", "eta": "2.0"})
        p, report = self.bisect(old, new, "zeta-attn", self.path("cache-eta"), "eta")
        row = report["rows"][0]
        self.assertEqual(row["units"], [["zeta"]], row)
        self.assertEqual(row["untested"], [["eta"]], row)
        self.assertIn("cannot run moved: eta: ", p.stdout + p.stderr)
        self.assertIn("1 package set(s) could not be installed or run (eta), so this is the smallest set among those tried,"
                      " not surely the cause", p.stdout)

    def test_an_interrupted_bisect_resumes_from_its_cache(self):
        old, new = self.bump_one()
        full = BisectLocks.first_run or self.bisect(old, new, "pkg-attn", self.path("cache-cold"), "cold")[1]
        cache = self.path("cache-resume")
        child = subprocess.Popen(self.argv(old, new, "pkg-attn", cache, self.path("killed")), stderr=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, text=True, start_new_session=True)
        for line in child.stderr:
            if "building environment 4" in line:
                os.killpg(child.pid, signal.SIGKILL)
                break
        child.wait(timeout=60)
        self.assertNotEqual(child.returncode, 0, "killed part-way")
        answers = ["--markdown", self.path("resumed.md"), "--html", self.path("resumed.html")]
        p, resumed = self.bisect(old, new, "pkg-attn", cache, "resumed", *answers)
        self.assertEqual(resumed["rows"][0]["releases"][0]["after"], "1.2")
        self.assertGreaterEqual(resumed["reused"], 3, resumed)
        self.assertLess(resumed["built"], full["built"], (resumed, full))
        again_p, again = self.bisect(old, new, "pkg-attn", cache, "resumed", *answers)  # replaces its own answer
        self.assertEqual(again["built"], 0, again)
        self.assertEqual(again["ab_runs"], 1, "only the flakiness check runs again")
        self.assertIn("from the cache", again_p.stdout)

    def test_max_envs_bounds_the_work(self):
        old, new = self.bump_one()
        p, report = self.bisect(old, new, "pkg-attn", self.path("cache-bounded"), "bounded", "--max-envs", "3")
        self.assertLessEqual(report["environments"], 3, report)
        self.assertIn("--max-envs 3", report["rows"][0].get("unfinished", ""), report)
        self.assertIn("not found (--max-envs 3 reached)", p.stdout)

    def bad(self, old, new, *want):
        p = subprocess.run(self.argv(old, new, "pkg-attn", self.path("cache-bad"), self.path("bad")), capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        for w in want:
            self.assertIn(w, p.stderr)
        return p

    def test_bad_input_is_exit_2_naming_file_and_line(self):
        old = self.lock("ok.lock", OLD)
        loose = self.lock("loose.lock", {}, ["alpha>=1.0"])
        self.bad(old, loose, f"{loose}:2: 'alpha' is not pinned")
        empty = self.lock("empty.lock", {}, ["# nothing"])
        self.bad(old, empty, f"{empty}:1: no pinned requirement")
        self.bad(old, self.lock("same.lock", OLD), "an empty range")
        unknown = self.lock("unknown.lock", {**OLD, "nosuchpkg": "1.0"})
        self.bad(old, unknown, f"{unknown}:", "nosuchpkg==1.0 is not on the package index")
        clash = self.lock("clash.lock", {**OLD, "core": "1.0", "corelib": "2.0"})
        p = self.bad(old, clash, "cannot be installed together")
        self.assertRegex(p.stderr, r"clash\.lock:\d+")
        self.bad(old, self.path("missing.lock"), "missing.lock: cannot read")
        # An answer's path that holds a file bisect did not write: refused before any environment.
        mine = self.path("mine.md")
        with open(mine, "w") as f:
            f.write("# our notes\n")
        ok = self.lock("ok2.lock", {**OLD, "alpha": "1.2"})
        for extra in (["--markdown", mine], ["--html", mine]):
            p = subprocess.run(self.argv(old, ok, "pkg-attn", self.path("cache-bad"), self.path("bad"), *extra),
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(f"{extra[0]} {mine}: holds something other than an earlier `attngate bisect` answer", p.stderr)
            self.assertNotIn("building environment", p.stderr)
            with open(mine) as f:
                self.assertEqual(f.read(), "# our notes\n")
        for out in (mine, mine + "/", os.path.join(mine, "sub")):
            p = subprocess.run(self.argv(old, ok, "pkg-attn", self.path("cache-bad"), out), capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(f"--out {out}: not a directory", p.stderr)


if __name__ == "__main__":
    main()
