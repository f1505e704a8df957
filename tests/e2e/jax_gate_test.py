"""The real TPU-targeted kernels through the real gate (issue 8's "done when"): the JAX
adapter's three kernels run by `attngate run` on suites/jax-smoke.json, started as a
child (--adapter) and reached on loopback (--remote), with goldens, numerics, memory,
compile time and timing in results and reports; and the dependency bump for real: jax
0.7.2 against 0.10.2, where the older release fails the window cases it silently
ignores, and A/B across the two venvs reports every kernel's numerics drift.

Skips (exit 77) when ci/install-deps.sh has not made the venvs."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, html_report_rows, main, read_json  # noqa: E402

KERNELS = {"jax-xla", "pallas-flash", "pallas-splash"}
PAGED = {"pallas-paged", "pallas-ragged-paged", "xla-paged"}  # on jax-smoke's paged cases (jax_paged_test)


def venv_python(line):
    return os.path.join(ARGS.source_dir, ".venv", f"jax-{line}", "bin", "python")


def adapter(line, mode="hlo"):
    return f"{venv_python(line)} {os.path.join(ARGS.source_dir, 'kernels', 'jax', 'adapter.py')} --interpret {mode}"


def local_window_cases():
    """The cases jax-xla can only express through local_window_size, which jax 0.7.2
    ignores unless a causal flag or a mask comes with it: windows without causal, and
    bottom-right causal masks with Sq < Sk (a shifted window; Sq > Sk leaves rows without keys, which the adapter declines)."""
    suite = read_json(os.path.join(ARGS.source_dir, "suites", "jax-smoke.json"))
    out = set()
    for c in suite["cases"]:
        if "paged" in c:  # not jax-xla's
            continue
        sq, sk = c["seq_q"], c.get("seq_k", c["seq_q"])
        top_left = c.get("causal_alignment") == "top_left"
        if ("window" in c and not c.get("causal")) or (c.get("causal") and not top_left and sq < sk and "window" not in c):
            if "segments" not in c:  # segment ids come as a mask, which 0.7.2 honours
                out.add(c["id"])
    return out


class JaxGateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-jax-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_jax(self, *args, out, timeout=900):
        return attngate("run", "--suite", "jax-smoke", *args, "--out", self.path(out), cwd=ARGS.source_dir, timeout=timeout)

    def test_the_three_kernels_are_gated_through_a_started_adapter(self):
        html = self.path("jax.html")
        r = self.run_jax("--adapter", adapter("new"), "--checks", "golden,memory,perf", "--html", html, "--progress-every", "0",
                         out="new.json")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        # The adapter's timing tells its progress case x kernel by case x kernel.
        steps = re.findall(r"^progress: run jax-smoke perf: (\d+) of (\d+) repetitions timed .* · (\d+) case x kernels, (\d+) repetitions each$",
                           r.stderr, re.M)
        self.assertTrue(steps, r.stderr[-3000:])
        timed, reps = int(steps[0][2]), int(steps[0][3])
        self.assertEqual([(int(d), int(t)) for d, t, _, _ in steps], [(k * reps, timed * reps) for k in range(timed + 1)])
        results = read_json(self.path("new.json"))
        self.assertTrue(results["complete"])
        rows = results["results"]
        self.assertEqual({e["kernel"] for e in rows}, KERNELS | PAGED)
        fp = results["fingerprint"]["adapters"]["attngate-jax"]
        self.assertEqual(fp["jax"], "0.10.2")
        self.assertEqual(fp["interpret_mode"], "hlo")
        for kernel in KERNELS:
            ran = [e for e in rows if e["kernel"] == kernel and e["verdict"] == "pass"]
            self.assertGreaterEqual(len(ran), 8, kernel)  # every kernel gated on many cases
            for e in ran:
                checks = {c["check"]: c for c in e["checks"]}
                self.assertEqual(checks["golden"]["verdict"], "pass")
                self.assertLessEqual(checks["golden"]["metrics"]["max_abs_error"], checks["golden"]["metrics"]["tolerance"])
                self.assertIn(checks["numerics"]["verdict"], ("pass", "skip"))
                self.assertEqual(checks["memory"]["metrics"]["source"], "rss")
                self.assertTrue(checks["memory"]["metrics"]["live_arrays"])
                self.assertGreater(checks["compile"]["metrics"]["compile_s"], 0)
                self.assertGreaterEqual(len(checks["perf"]["metrics"]["samples_s"]), 9)
        skipped = [e for e in rows if e["verdict"] == "skip"]
        self.assertTrue(any("top-left" in e["reason"] for e in skipped), "flash says why it skips bottom-right causal cases")
        self.assertReportHasEveryCheck(html, "golden", "memory", "compile", "perf")

    def assertReportHasEveryCheck(self, html, *checks):
        """Every kernel has a row of each check in the report's table of every case x kernel x check."""
        rows = html_report_rows(html)  # the data the report's table is drawn from
        for kernel in KERNELS:
            for check in checks:
                self.assertTrue(any(r["kernel"] == kernel and any(k["check"] == check for k in r["checks"]) for r in rows), f"{html}: no {check} row of {kernel}")

    def test_the_older_release_fails_exactly_the_window_cases_it_ignores(self):
        r = self.run_jax("--adapter", adapter("old"), "--checks", "golden", "--kernel", "jax-xla", out="old.json")
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr)
        rows = read_json(self.path("old.json"))["results"]
        failed = {e["case"] for e in rows if e["verdict"] == "fail"}
        self.assertEqual(failed, local_window_cases())
        for e in rows:
            if e["verdict"] == "fail":
                self.assertIn("golden: max abs error", e["reason"])

    def test_a_remote_adapter_on_loopback_in_tpu_interpret_mode(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(adapter("new", "tpu").split() + ["--http", f"127.0.0.1:{port}", "--exit-with-parent"],
                                  cwd=ARGS.source_dir, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            self.assertIn("LISTENING", server.stdout.readline())
            html = self.path("remote.html")
            r = self.run_jax("--remote", f"http://127.0.0.1:{port}", "--checks", "golden,memory,perf", "--html", html,
                             "--case", "mha_s128_f32", "--case", "causal_s256_bf16", out="remote.json")
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
            results = read_json(self.path("remote.json"))
            self.assertEqual(results["fingerprint"]["adapters"]["attngate-jax"]["interpret_mode"], "tpu")
            self.assertEqual(sum(e["verdict"] == "pass" for e in results["results"]), 6)
            for e in results["results"]:  # goldens, memory, compile time and timing, over HTTP
                checks = {c["check"]: c for c in e["checks"]}
                self.assertEqual(checks["golden"]["verdict"], "pass")
                self.assertEqual(checks["memory"]["metrics"]["source"], "rss")
                self.assertGreater(checks["compile"]["metrics"]["compile_s"], 0)
                self.assertGreaterEqual(len(checks["perf"]["metrics"]["samples_s"]), 9)
            self.assertReportHasEveryCheck(html, "golden", "memory", "compile", "perf")
        finally:
            server.kill()
            server.wait()
            server.stdout.close()

    def test_ab_across_the_two_releases_reports_every_kernels_numerics_drift(self):
        out = self.path("ab.json")
        r = attngate("ab", "--suite", "jax-smoke", "--a-adapter", adapter("old"), "--b-adapter", adapter("new"), "--rounds", "2",
                     "--min-time", "0.001", "--out", out, cwd=ARGS.source_dir, timeout=900)
        self.assertIn(r.returncode, (0, 1), r.stdout[-3000:] + r.stderr)
        rows = read_json(out)["results"]
        drift = {}
        for e in rows:
            for c in e["checks"]:
                if c["check"] == "numerics" and c["metrics"].get("status") in ("changed", "identical"):
                    drift.setdefault(e["kernel"], []).append(c["metrics"]["changed_share"])
                    self.assertTrue(c["metrics"]["exact"])  # both outputs at hand: diffed element by element
        self.assertEqual(set(drift), KERNELS | {"pallas-paged", "xla-paged"})
        for kernel, shares in ((k, s) for k, s in drift.items() if k in KERNELS):
            self.assertTrue(any(s > 0 for s in shares), f"{kernel}: no bit moved between jax 0.7.2 and 0.10.2")
        # The newer side passes the window cases the older one fails, and says so.
        notes = [n for e in rows for c in e["checks"] for n in c.get("notes", []) if "side A fails its golden" in n]
        self.assertTrue(notes)
        self.assertIn("numerics", r.stdout)


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    if not (os.path.exists(venv_python("new")) and os.path.exists(venv_python("old"))):
        print("SKIPPED: .venv/jax-new or .venv/jax-old is missing; bash ci/install-deps.sh creates them")
        sys.exit(77)
    main()
