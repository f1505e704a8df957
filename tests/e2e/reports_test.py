"""End-to-end tests of the reports and the fingerprint: HTML, Markdown and JUnit of one
real run say the same thing; inputs are escaped; memory, perf and cost checks render;
the Markdown stays small; `env --diff` names the packages that moved."""
import argparse
import copy
import hashlib
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_schema  # noqa: E402
from common import html_report_rows  # noqa: E402

ARGS = None

SUITE = {
    "name": "reports",
    "seed": 7,
    "kernels": ["native", "causal_off_by_one"],
    "cases": [
        {"id": "causal_f32", "seq_q": 200, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "plain_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16},
    ],
}
XSS = "<script>alert(1)</script>"


def attngate(*args, **kw):
    with results_schema.watch(args, kw.get("cwd")):  # its outputs checked against docs/results.schema.json
        return subprocess.run([ARGS.attngate, *args], capture_output=True, text=True, timeout=300, **kw)


def g3(x):
    """The reports' number format ({:.3g})."""
    return "%.3g" % x


def with_memory_perf_cost(results):
    """The results with a memory, a perf (an 8% regression) and a cost check added to the last row,
    and a workload."""
    entry = results["results"][-1]
    entry["checks"] += [
        {"check": "memory", "verdict": "pass", "reason": "no leak", "notes": [], "metrics": {
            "abi_peak_bytes": 4096, "abi_leaked_bytes": 0, "heap_live_bytes": [100, 100, 100, 100],
            "rss_bytes": [9000, 9100, 9100, 9100], "leak_bytes_per_call": 0.0, "leak_noise_floor_bytes_per_call": 8.0,
            "peak_baseline_bytes": 4000, "peak_growth_pct": 2.4}},
        {"check": "perf", "verdict": "fail", "reason": "8% slower than baseline", "notes": [], "metrics": {
            "samples_s": [0.0108, 0.0109, 0.0107], "median_s": 0.0108, "mad_s": 0.0001,
            "baseline_samples_s": [0.0100, 0.0101, 0.0099], "baseline_median_s": 0.0100, "ratio": 1.08,
            "ci_low": 1.05, "ci_high": 1.11, "p_value": 0.004, "p_adjusted": 0.02, "threshold_pct": 5.0,
            "status": "regression"}},
        {"check": "cost", "verdict": "pass", "reason": "within budget", "notes": [], "metrics": {
            "usd_per_million_tokens": 0.42, "baseline_usd_per_million_tokens": 0.39, "currency": "USD",
            "device_class": "v5e-1", "price_per_hour": 1.2, "price_source": "pricing/gcp-2026-11.json",
            "price_date": "2026-11-01"}},
    ]
    results["workloads"] = [{"workload": "chat-serving", "monthly_cost": 1234.5, "baseline_monthly_cost": 1150.0,
                             "change_pct": 7.3, "currency": "USD", "price_source": "pricing/gcp-2026-11.json",
                             "verdict": "fail", "reason": "monthly cost up 7.3%", "leak_survival_hours": 96}]
    results["checks"] = ["golden", "memory", "perf", "cost"]
    return results


class Workspace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-reports-")
        cls.suite = os.path.join(cls.dir, "reports.json")
        with open(cls.suite, "w") as f:
            json.dump(SUITE, f)
        cls.baselines = os.path.join(cls.dir, "baselines")
        r = attngate("golden", "generate", "--suite", cls.suite, "--baselines", cls.baselines)
        assert r.returncode == 0, r.stderr
        cls.results = os.path.join(cls.dir, "results.json")
        cls.out = {k: os.path.join(cls.dir, "report." + k) for k in ("html", "md", "xml")}
        r = cls.run_suite("--out", cls.results, "--html", cls.out["html"], "--markdown", cls.out["md"], "--junit", cls.out["xml"])
        assert r.returncode == 1, r.stdout + r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def run_suite(cls, *args):
        return attngate("run", "--suite", cls.suite, "--baselines", cls.baselines, "--plugin", ARGS.faulty_plugin, *args)

    def read(self, path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def report(self, results_obj, *extra):
        path = os.path.join(self.dir, "edited.json")
        with open(path, "w") as f:
            json.dump(results_obj, f)
        outs = {k: os.path.join(self.dir, "edited." + k) for k in ("html", "md", "xml")}
        r = attngate("report", path, "--html", outs["html"], "--markdown", outs["md"], "--junit", outs["xml"], *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return {k: self.read(v) for k, v in outs.items()}


class SameStoryTest(Workspace):
    def test_html_markdown_and_junit_name_the_same_failure_with_the_same_numbers(self):
        results = json.loads(self.read(self.results))
        failing = [e for e in results["results"] if e["verdict"] == "fail"]
        self.assertEqual([(e["case"], e["kernel"]) for e in failing], [("causal_f32", "causal_off_by_one")])
        m = failing[0]["checks"][0]["metrics"]
        numbers = ["max_abs_error=" + g3(m["max_abs_error"]), "tolerance=" + g3(m["tolerance"])]

        # The HTML's table and details are drawn from its data: every case x kernel x check, once.
        rows = html_report_rows(self.out["html"])
        self.assertEqual([(r["case"], r["kernel"], [k["check"] for k in r["checks"]]) for r in rows],
                         [(e["case"], e["kernel"], [k["check"] for k in e["checks"]]) for e in results["results"]])
        failed = [(r, k) for r in rows for k in r["checks"] if k["verdict"] == "fail"]
        self.assertEqual([(r["case"], r["kernel"], k["check"]) for r, k in failed], [("causal_f32", "causal_off_by_one", "golden")])
        html_numbers = " ".join(f"{n}={v}" for n, v in failed[0][1]["metrics"].items())

        md = self.read(self.out["md"]).replace("\\", "")  # Markdown escapes, not content
        self.assertIn("FAIL", md.splitlines()[0])
        md_rows = [l for l in md.splitlines() if l.startswith("| causal_f32 | causal_off_by_one |")]
        self.assertEqual(len(md_rows), 1)
        self.assertIn("Failures (1)", md)

        suites = ET.fromstring(self.read(self.out["xml"]))
        self.assertEqual(suites.get("failures"), "1")
        self.assertEqual(suites.get("tests"), str(sum(len(e["checks"]) for e in results["results"])))
        failures = [tc for tc in suites.iter("testcase") if tc.find("failure") is not None]
        self.assertEqual([(tc.get("name"), tc.get("classname")) for tc in failures],
                         [("causal_f32 / causal_off_by_one", "attngate.reports.golden")])
        text = failures[0].find("failure").text
        for n in numbers:
            self.assertIn(n, html_numbers)
            self.assertIn(n, md_rows[0])
            self.assertIn(n, text)

    def test_report_command_rewrites_the_same_files_and_mirrors_the_verdict_on_request(self):
        results = json.loads(self.read(self.results))
        again = self.report(results)
        self.assertEqual(again["xml"], self.read(self.out["xml"]))
        self.assertEqual(again["html"], self.read(self.out["html"]))
        r = attngate("report", self.results, "--junit", os.path.join(self.dir, "x.xml"), "--exit-code")
        self.assertEqual(r.returncode, 1)

    def test_report_on_bad_input_is_exit_2_and_names_the_file(self):
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write('{"schema_version": 1, "suite": 3}')
        r = attngate("report", bad, "--html", os.path.join(self.dir, "never.html"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.json", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "never.html")))
        self.assertEqual(attngate("report", self.results).returncode, 2)

    def test_names_from_inputs_are_escaped_everywhere(self):
        results = json.loads(self.read(self.results))
        results["results"][0]["case"] = XSS
        results["results"][0]["kernel"] = XSS
        out = self.report(results)
        self.assertNotIn(XSS, out["html"])
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", out["html"])
        self.assertEqual(out["html"].count("<script"), 2)  # the rows' data and the report's own script
        self.assertEqual(html_report_rows(os.path.join(self.dir, "edited.html"))[0]["case"], XSS)  # data, written as text by the script
        self.assertNotIn(XSS, out["md"])
        names = [tc.get("name") for tc in ET.fromstring(out["xml"]).iter("testcase")]
        self.assertIn(XSS + " / " + XSS, names)

    def test_console_progress_line_on_a_terminal(self):
        master, slave = pty.openpty()
        proc = subprocess.Popen([ARGS.attngate, "run", "--suite", self.suite, "--baselines", self.baselines, "--plugin",
                                 ARGS.faulty_plugin, "--out", os.path.join(self.dir, "tty.json")], stdout=slave, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=300)
        results_schema.validate_file(os.path.join(self.dir, "tty.json"))
        text = b"".join(chunks).decode()
        self.assertIn("\r\x1b[Krun reports: 1 of 4 case x kernels", text)
        self.assertIn("4 of 4 case x kernels (100%)", text)
        self.assertRegex(text, r"elapsed [0-9.]+s · about [0-9.]+s left")
        self.assertNotIn("progress:", text)  # the plain lines are for logs, not terminals
        self.assertIn("FAIL causal_f32 / causal_off_by_one", text)

    def test_one_plain_line_per_case_when_not_a_terminal(self):
        r = self.run_suite("--out", os.path.join(self.dir, "plain.json"))
        self.assertNotIn("\r", r.stdout)
        self.assertEqual(len([l for l in r.stdout.splitlines() if re.match(r"\s+\d+/4 ", l)]), 4)


class OtherChecksTest(Workspace):

    def test_memory_perf_cost_and_workloads_are_in_the_html_data(self):
        # Drawn by the report's script from this data (browser_report checks the drawing).
        out = self.report(with_memory_perf_cost(json.loads(self.read(self.results))))
        page = out["html"]
        row = html_report_rows(os.path.join(self.dir, "edited.html"))[-1]
        checks = {k["check"]: k for k in row["checks"]}
        self.assertEqual(checks["memory"]["figures"], {"live": [[100, 4]], "rss": [[9000, 1], [9100, 3]], "bars": [["peak", 4096], ["baseline", 4000]]})
        self.assertEqual(checks["memory"]["metrics"]["peak_growth_pct"], "2.4")
        perf = checks["perf"]
        self.assertEqual(perf["figures"], {"samples": [0.0108, 0.0109, 0.0107], "baseline": [0.01, 0.0101, 0.0099],
                                           "ratio": [1.08, 1.05, 1.11, 1.05], "ci_percent": "95"})
        self.assertEqual([perf["metrics"][n] for n in ("ratio", "ci_low", "ci_high", "p_value", "status")], ["1.08", "1.05", "1.11", "0.004", "regression"])
        self.assertEqual(checks["cost"]["metrics"]["price_source"], "pricing/gcp-2026-11.json")
        # The workload's monthly cost before and after, as bars from the cell's numbers; the price source once, in a footnote.
        self.assertRegex(page, r'<td class="bars" data-bars="\[\[&quot;baseline&quot;,1.15E3\],\[&quot;this run&quot;,1.2345E3\]\]" data-unit="USD">')
        self.assertEqual(page.count("Price source: pricing/gcp-2026-11.json"), 1)
        self.assertIn("chat-serving", page)
        perf_rows = [l for l in out["md"].replace("\\", "").splitlines() if l.startswith("| plain_f32 |") and "| perf |" in l]
        self.assertEqual(len(perf_rows), 1)
        self.assertIn("ratio=1.08 ci_low=1.05 ci_high=1.11", perf_rows[0])
        self.assertIn("chat-serving", out["md"])
        workload_rows = [l for l in out["md"].splitlines() if l.startswith("| chat-serving |")]
        self.assertEqual(len(workload_rows), 1, out["md"])
        self.assertTrue(workload_rows[0].endswith("| fail: monthly cost up 7.3% |"), workload_rows[0])  # a verdict says why
        suites = ET.fromstring(out["xml"])
        perf = [s for s in suites.iter("testsuite") if s.get("name") == "attngate.reports.perf"][0]
        self.assertEqual(perf.get("failures"), "1")
        self.assertIn("ratio=1.08 ci_low=1.05 ci_high=1.11", perf.find("testcase/failure").text)
        workload = [s for s in suites.iter("testsuite") if s.get("name") == "attngate.reports.workload"][0]
        self.assertEqual(workload.find("testcase").get("name"), "chat-serving")

    def test_markdown_stays_under_60kb_with_thousands_of_failures(self):
        results = json.loads(self.read(self.results))
        fail = next(e for e in results["results"] if e["verdict"] == "fail")
        results["results"] = []
        for i in range(5000):
            e = copy.deepcopy(fail)
            e["case"] = "case_%05d_with_a_long_descriptive_name" % i
            e["checks"][0]["metrics"].pop("error_map")
            results["results"].append(e)
        raw = self.report(results)["md"]
        self.assertLess(len(raw.encode()), 60 * 1024)
        md = raw.replace("\\", "")
        self.assertIn("Failures (5000)", md)
        shown = len([l for l in md.splitlines() if l.startswith("| case_")])
        self.assertGreater(shown, 50)
        self.assertIn("and %d more failures" % (5000 - shown), md)


class FingerprintTest(Workspace):
    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_env_prints_the_fingerprint_and_hashes_unknown_lockfiles(self):
        opaque = self.write("x/Gemfile.lock", "GEM\n  specs:\n    rake (13.0.6)\n")
        r = attngate("env", "--json", "--lockfile", opaque)
        self.assertEqual(r.returncode, 0, r.stderr)
        fp = json.loads(r.stdout)
        self.assertRegex(fp["toolchain"]["compiler"], r"^g\+\+ \d+")
        self.assertRegex(fp["toolchain"]["glibc"], r"^\d+\.\d+")
        self.assertRegex(fp["libraries"]["boost"], r"^1\.\d+\.\d+$")
        self.assertEqual(fp["cpu"]["cores"], os.cpu_count())
        self.assertEqual(fp["os"]["kernel"], "Linux " + os.uname().release)
        listed = attngate("kernels").stdout
        self.assertIn(f"flash {fp['kernels']['flash']}", " ".join(listed.split()))  # the version the kernel declares
        self.assertEqual(fp["lockfiles"]["Gemfile.lock"]["sha256"],
                         hashlib.sha256(open(opaque, "rb").read()).hexdigest())

    def test_diff_of_two_runs_with_different_lockfiles_names_the_packages_that_moved(self):
        a = self.write("a/requirements.txt", "numpy==1.26.0\njax==0.4.30\nscipy==1.11.0\n# comment\n")
        b = self.write("b/requirements.txt", "numpy==1.26.4\njax==0.4.30\njaxlib==0.4.30\n")
        npm_a = self.write("a/package-lock.json", json.dumps({"lockfileVersion": 3, "packages": {
            "": {"name": "app"}, "node_modules/left-pad": {"version": "1.3.0"}}}))
        npm_b = self.write("b/package-lock.json", json.dumps({"lockfileVersion": 3, "packages": {
            "": {"name": "app"}, "node_modules/left-pad": {"version": "1.3.1"}}}))
        ra, rb = os.path.join(self.dir, "ra.json"), os.path.join(self.dir, "rb.json")
        self.assertEqual(self.run_suite("--out", ra, "--lockfile", a, "--lockfile", npm_a).returncode, 1)
        self.assertEqual(self.run_suite("--out", rb, "--lockfile", b, "--lockfile", npm_b).returncode, 1)
        r = attngate("env", "--diff", ra, rb)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("lockfiles.requirements.txt.packages.numpy: 1.26.0 → 1.26.4", r.stdout)
        self.assertIn("lockfiles.requirements.txt.packages.jaxlib: added 0.4.30", r.stdout)
        self.assertIn("lockfiles.requirements.txt.packages.scipy: removed (was 1.11.0)", r.stdout)
        self.assertIn("lockfiles.package-lock.json.packages.left-pad: 1.3.0 → 1.3.1", r.stdout)
        self.assertNotIn("packages.jax:", r.stdout)
        self.assertIn("4 dependency change(s)", r.stdout)

    def test_reports_show_what_moved_since_the_baseline(self):
        base = os.path.join(self.dir, "fp-baselines")
        lock = self.write("c/requirements.txt", "libtpu==0.0.1\n")
        self.assertEqual(attngate("golden", "generate", "--suite", self.suite, "--baselines", base, "--lockfile", lock).returncode, 0)
        lock = self.write("c/requirements.txt", "libtpu==0.0.2\n")
        md = os.path.join(self.dir, "moved.md")
        r = attngate("run", "--suite", self.suite, "--baselines", base, "--plugin", ARGS.faulty_plugin, "--kernel", "native", "--lockfile", lock,
                     "--out", os.path.join(self.dir, "moved.json"), "--markdown", md)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        text = self.read(md)
        self.assertIn("What changed (since the baseline)", text)
        self.assertIn("libtpu: 0.0.1 → 0.0.2", text.replace("\\", ""))

    def test_malformed_lockfile_is_exit_2_names_the_file_and_writes_nothing(self):
        bad = self.write("d/package-lock.json", '{"packages": {')
        out = os.path.join(self.dir, "never.json")
        r = self.run_suite("--out", out, "--lockfile", bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn(bad, r.stderr)
        self.assertIn("byte", r.stderr)
        self.assertFalse(os.path.exists(out))
        r = attngate("env", "--lockfile", os.path.join(self.dir, "missing.lock"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.lock", r.stderr)


JUNIT_XSD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support", "junit-10.xsd")


class JUnitSchemaTest(Workspace):
    """The JUnit XML against the XSD Jenkins validates with (tests/support/junit-10.xsd, from
    its xUnit plugin), and times that add up: each case x kernel's observed call once."""

    def test_junit_validates_against_the_jenkins_xsd(self):
        import xmlschema  # python3-xmlschema
        schema = xmlschema.XMLSchema(JUNIT_XSD)
        xml = self.read(self.out["xml"])
        errors = list(schema.iter_errors(xml))
        self.assertEqual(errors, [], "\n".join(str(e) for e in errors[:3]))
        # ... and the XSD has teeth: the attributes the reporter used to put on <testsuites>, or a time that is not a number, fail.
        self.assertFalse(schema.is_valid(xml.replace("<testsuites ", '<testsuites skipped="0" ', 1)))
        self.assertFalse(schema.is_valid(re.sub(r'(<testsuite [^>]*time=")[^"]*', r"\g<1>1.5 s", xml, count=1)))

    def test_junit_times_add_up_to_the_runs_time_once(self):
        results = json.loads(self.read(self.results))
        root = ET.fromstring(self.read(self.out["xml"]))
        cases = list(root.iter("testcase"))
        self.assertEqual(len(cases), sum(len(e["checks"]) for e in results["results"]))
        observed = sum(e["seconds"] for e in results["results"])
        self.assertGreater(observed, 0)
        self.assertAlmostEqual(sum(float(tc.get("time")) for tc in cases), observed, delta=1e-5 * len(cases))
        self.assertAlmostEqual(float(root.get("time")), observed, delta=1e-5 * len(cases))
        for suite in root.iter("testsuite"):
            self.assertAlmostEqual(float(suite.get("time")), sum(float(tc.get("time")) for tc in suite.iter("testcase")),
                                   delta=1e-5 * len(cases))
            self.assertEqual(suite.get("timestamp"), results["started_at"])
        for e in results["results"]:  # its time on one of its testcases, not on each check's
            times = [float(tc.get("time")) for tc in cases if tc.get("name") == f"{e['case']} / {e['kernel']}"]
            self.assertEqual(len(times), len(e["checks"]))
            self.assertEqual(sum(1 for t in times if t > 0), 1 if e["seconds"] >= 5e-7 else 0, (e["case"], e["kernel"], times))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--attngate", required=True)
    parser.add_argument("--faulty-plugin", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
