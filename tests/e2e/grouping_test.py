"""End-to-end test of the failures grouped by cause: on a real run where three faulty
plugin kernels fail differently, the HTML report, the Markdown summary, the console's
closing lines and the JUnit messages show the same groups in the same words; each group's
count, cases and range agree with results.json; the Markdown fits a pull-request comment
(under 80 lines before its <details> blocks, under 60 KB) however many failures."""
import copy
import html
import os
import re
import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

from common import ARGS, attngate, main, write_json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from three_faults import run_three_faults  # noqa: E402

GROUP_LI = re.compile(r'<li class="group (fail|error)" data-kernel="([^"]*)" data-check="([^"]*)" data-count="(\d+)">'
                      r'<details><summary><span class="v [a-z]+">[A-Z]+</span> <span class="group-line">([^<]*)</span>')
MD_GROUP = re.compile(r"^- \*\*(FAIL|ERROR)\*\* (.*) — ")
CONSOLE_GROUP = re.compile(r"^  (FAIL|ERROR) (\S.*)$")


def lines_before_details(md):
    return md[:md.index("<details>")].count("\n") if "<details>" in md else md.count("\n")


class GroupingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-grouping-")
        cls.out = {k: os.path.join(cls.dir, "report." + k) for k in ("html", "md", "xml")}
        cls.proc, cls.results = run_three_faults(ARGS.attngate, ARGS.faulty_plugin, cls.dir, "--html", cls.out["html"],
                                                "--markdown", cls.out["md"], "--junit", cls.out["xml"])
        cls.text = {}
        for k, path in cls.out.items():
            with open(path, encoding="utf-8") as f:
                cls.text[k] = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def failing_checks(self):
        return [(e["kernel"], k) for e in self.results["results"] for k in e["checks"] if k["verdict"] in ("fail", "error")]

    def html_groups(self):
        return [(v.upper(), html.unescape(line)) for v, _, _, _, line in GROUP_LI.findall(self.text["html"])]

    def test_three_kernels_fail_for_different_reasons(self):
        causes = {(kernel, k["check"], k["verdict"]) for kernel, k in self.failing_checks()}
        self.assertEqual({kernel for kernel, _, _ in causes}, {"leaky", "causal_off_by_one", "crashy"})
        self.assertIn(("leaky", "memory", "fail"), causes)
        self.assertIn(("causal_off_by_one", "golden", "fail"), causes)
        self.assertIn(("crashy", "golden", "error"), causes)

    def test_the_grouping_is_identical_in_html_markdown_console_and_junit(self):
        groups = self.html_groups()
        self.assertGreaterEqual(len(groups), 3)
        md = [(m.group(1), m.group(2).replace("\\", "")) for m in map(MD_GROUP.match, self.text["md"].splitlines()) if m]
        console = [(m.group(1), m.group(2)) for m in map(CONSOLE_GROUP.match, self.proc.stdout.splitlines()) if m]
        self.assertEqual(md, groups)
        self.assertEqual(console, groups)
        suites = ET.fromstring(self.text["xml"])
        junit = set()
        for tc in suites.iter("testcase"):
            for tag, verdict in (("failure", "FAIL"), ("error", "ERROR")):
                el = tc.find(tag)
                if el is not None and not tc.get("classname").endswith(".workload"):
                    junit.add((verdict, el.get("message")))
        self.assertEqual(junit, set(groups))

    def test_groups_count_every_failing_check_once_with_its_cases_and_range(self):
        found = GROUP_LI.findall(self.text["html"])
        failing = self.failing_checks()
        self.assertEqual(sum(int(n) for *_, n, _ in found), len(failing))
        per_pair = {}
        for _, kernel, check, n, _ in found:
            per_pair[(kernel, check)] = per_pair.get((kernel, check), 0) + int(n)
        expected = {}
        for kernel, k in failing:
            expected[(kernel, k["check"])] = expected.get((kernel, k["check"]), 0) + 1
        self.assertEqual(per_pair, expected)
        for _, kernel, check, n, line in found:
            ran = sum(1 for e in self.results["results"] if e["kernel"] == kernel for k in e["checks"] if k["check"] == check)
            self.assertIn(" on %s/%d cases" % (n, ran), html.unescape(line))
        leaks = [k["metrics"]["leak_bytes_per_call"] for kernel, k in failing if kernel == "leaky" and k["check"] == "memory"]
        leak_line = [html.unescape(l) for _, kernel, check, _, l in found if (kernel, check) == ("leaky", "memory")][0]
        self.assertIn("heap leak on", leak_line)
        shown = [float(x) for x in re.search(r"cases, ([0-9.e+]+)(?:–([0-9.e+]+))? B/call$", leak_line).groups(default="nan")]
        self.assertAlmostEqual(shown[0], min(leaks), delta=0.005 * min(leaks) + 0.5)
        if len(set("%.0f" % x for x in leaks)) > 1:
            self.assertAlmostEqual(shown[1], max(leaks), delta=0.005 * max(leaks) + 0.5)

    def test_markdown_fits_a_pull_request_comment(self):
        md = self.text["md"]
        self.assertLess(lines_before_details(md), 80)
        self.assertLess(len(md.encode()), 60 * 1024)
        top = md[:md.index("<details>")]
        self.assertIn("FAIL", top.splitlines()[0])
        self.assertIn("Failures by cause", top)
        self.assertIn("What changed", top)
        self.assertIn("<summary>Every failure with its numbers</summary>", md)

    def test_markdown_stays_on_one_screen_with_hundreds_of_causes(self):
        # A leak and a golden failure each made 300 kernels' cause: with the golden one, every
        # kernel fails every case, so each would also be pointed at `attngate conform`.
        for kernel, check in (("leaky", "memory"), ("causal_off_by_one", "golden")):
            with self.subTest(template=kernel):
                results = copy.deepcopy(self.results)
                template = next(e for e in results["results"] if e["kernel"] == kernel and e["verdict"] == "fail"
                                and any(k["check"] == check and k["verdict"] == "fail" for k in e["checks"]))
                results["results"] = []
                for i in range(3000):
                    e = copy.deepcopy(template)
                    e["kernel"] = "kernel_%03d" % (i % 300)  # 300 kernels: 300 groups
                    e["case"] = "case_%04d_with_a_long_descriptive_name" % i
                    results["results"].append(e)
                edited = os.path.join(self.dir, "many.json")
                write_json(edited, results)
                md_path = os.path.join(self.dir, "many-%s.md" % kernel)
                r = attngate("report", edited, "--markdown", md_path)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(md_path, encoding="utf-8") as f:
                    md = f.read()
                self.assertLess(lines_before_details(md), 80)
                self.assertLess(len(md.encode()), 60 * 1024)
                causes = 300 * sum(1 for k in template["checks"] if k["verdict"] in ("fail", "error"))
                self.assertIn("and %d more group(s)" % (causes - 10), md)
                if check == "golden":
                    self.assertEqual(md.count("**Try:**"), 4, "three kernels named, then the rest counted")
                    self.assertIn("and 297 more kernel(s) that failed their golden on every case they computed", md)

if __name__ == "__main__":
    main()
