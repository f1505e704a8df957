"""Opens the HTML report of a real run with one injected failure in headless Chromium and
checks what a person sees: the verdict, the failing case first and highlighted, the error
heatmap and a trend chart drawn, the filter narrowing the table, a passing case's details
drawn from the report's data when it opens, with the numbers of results.json, memory, perf
and cost charts, and no script errors. Saves a screenshot as a CI artifact."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from selenium.webdriver.common.by import By

from chromium import browser_args, open_page, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import reports_test  # noqa: E402
import results_schema  # noqa: E402

ARGS = None

SUITE = {
    "name": "browser",
    "seed": 5,
    "kernels": ["native", "causal_off_by_one"],
    "cases": [
        {"id": "causal_f32", "seq_q": 200, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "plain_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16},
    ],
}


def attngate(*args):
    with results_schema.watch(args):  # its outputs checked against docs/results.schema.json
        return subprocess.run([ARGS.attngate, *args], capture_output=True, text=True, timeout=300)


class ReportInBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-browser-")
        suite = os.path.join(cls.dir, "browser.json")
        with open(suite, "w") as f:
            json.dump(SUITE, f)
        base = os.path.join(cls.dir, "baselines")
        r = attngate("golden", "generate", "--suite", suite, "--baselines", base)
        assert r.returncode == 0, r.stderr
        run = ["run", "--suite", suite, "--baselines", base, "--plugin", ARGS.faulty_plugin]
        history = os.path.join(cls.dir, "history")
        os.makedirs(history)
        r = attngate(*run, "--out", os.path.join(history, "earlier.json"))
        assert r.returncode == 1, r.stdout + r.stderr
        cls.html = os.path.join(cls.dir, "report.html")
        cls.results = os.path.join(cls.dir, "results.json")
        r = attngate(*run, "--out", cls.results, "--html", cls.html, "--history", history)
        assert r.returncode == 1, r.stdout + r.stderr

        cls.driver = open_page(cls.html, ARGS.chromium, ARGS.chromedriver, 1100)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def visible_rows(self):
        return [r for r in self.driver.find_elements(By.CSS_SELECTOR, "#results tbody tr") if r.is_displayed()]

    def test_1_verdict_says_fail(self):
        verdict = self.driver.find_element(By.ID, "verdict")
        self.assertTrue(verdict.is_displayed())
        self.assertIn("FAIL", verdict.text)
        self.assertIn("1 of 4", verdict.text)

    def test_2_failing_case_is_first_and_highlighted(self):
        first = self.visible_rows()[0]
        self.assertIn("causal_f32", first.text)
        self.assertIn("causal_off_by_one", first.text)
        self.assertIn("fail", first.get_attribute("class"))
        colour = first.find_element(By.TAG_NAME, "td").value_of_css_property("background-color")
        passing = [r for r in self.visible_rows() if "pass" in r.get_attribute("class")][0]
        self.assertNotEqual(colour, passing.find_element(By.TAG_NAME, "td").value_of_css_property("background-color"))

    def test_3_heatmap_drawn_with_drift_in_the_last_block(self):
        section = self.driver.find_element(By.CSS_SELECTOR, "details.case.fail")
        self.assertIn("causal_off_by_one", section.find_element(By.TAG_NAME, "summary").text)
        heatmap = section.find_element(By.CSS_SELECTOR, "svg.heatmap")
        self.assertTrue(heatmap.is_displayed())
        cells = heatmap.find_elements(By.CSS_SELECTOR, "path.cell")
        self.assertGreater(len(cells), 0)
        box = self.driver.execute_script("var b = arguments[0].getBBox(); return [b.y, b.height, b.width];",
                                         heatmap.find_element(By.CSS_SELECTOR, "path.cell.l10"))
        all_box = self.driver.execute_script(
            "var s = arguments[0].querySelectorAll('path.cell'), top = 1e9; "
            "s.forEach(function (p) { top = Math.min(top, p.getBBox().y); }); return top;", heatmap)
        self.assertGreater(box[2], 0)
        # The fault only touches keys of the last 128-block: no red in the first rows.
        self.assertGreater(box[0], all_box)

    def test_4_trend_chart_drawn(self):
        section = self.driver.find_element(By.CSS_SELECTOR, "details.case.fail")
        line = section.find_element(By.CSS_SELECTOR, ".trend svg.chart polyline.line")
        points = line.get_attribute("points").split()
        self.assertEqual(len(points), 2)  # one earlier run and this one
        width = self.driver.execute_script("return arguments[0].getBBox().width;", line)
        self.assertGreater(width, 0)

    def test_5_filter_narrows_the_table(self):
        total = len(self.visible_rows())
        box = self.driver.find_element(By.ID, "filter")
        box.send_keys("plain_f32")
        rows = self.visible_rows()
        self.assertTrue(0 < len(rows) < total, (len(rows), total))
        for r in rows:
            self.assertIn("plain_f32", r.text)
        box.clear()
        box.send_keys(" ")
        box.send_keys("\b")
        self.assertEqual(len(self.visible_rows()), total)

    def test_6_no_script_errors_and_screenshot(self):
        severe = [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(severe, [])
        os.makedirs(os.path.dirname(ARGS.screenshot), exist_ok=True)
        self.driver.execute_script("window.scrollTo(0, 0);")
        self.assertTrue(self.driver.save_screenshot(ARGS.screenshot))
        self.assertGreater(os.path.getsize(ARGS.screenshot), 10000)
        # A second artifact showing the failing case's heatmap and trend.
        section = self.driver.find_element(By.CSS_SELECTOR, "details.case.fail")
        self.driver.execute_script("arguments[0].scrollIntoView();", section)
        self.assertTrue(self.driver.save_screenshot(ARGS.screenshot.replace(".png", "-case.png")))

    def test_7_a_passing_case_is_drawn_when_it_opens_with_the_numbers_of_the_results(self):
        with open(self.results) as f:
            entry = next(e for e in json.load(f)["results"] if (e["case"], e["kernel"]) == ("plain_f32", "native"))
        link = next(a for a in self.driver.find_elements(By.CSS_SELECTOR, "#results a") if a.text == "plain_f32"
                    and a.find_element(By.XPATH, "../../td[2]").text == "native")
        section = self.driver.find_element(By.ID, link.get_attribute("href").split("#")[1])
        self.assertEqual(section.find_elements(By.CSS_SELECTOR, ".check"), [])  # nothing drawn before it opens
        self.driver.execute_script("arguments[0].scrollIntoView();", link)
        link.click()
        golden = wait_for(self.driver, section, ".check[data-check=golden]")[0]
        shown = dict(tuple(r.text.split(" ", 1)) for r in golden.find_elements(By.CSS_SELECTOR, "table.metrics tr"))
        want = next(k for k in entry["checks"] if k["check"] == "golden")["metrics"]
        for name in ("max_abs_error", "tolerance", "margin", "rms_error", "nmse"):
            self.assertEqual(shown[name], "%.3g" % want[name], name)
        self.assertEqual(shown["worst_index"], str(want["worst_index"]))
        cells = self.driver.execute_script("return arguments[0].querySelectorAll('svg.heatmap path.cell').length;", golden)
        bins = self.driver.execute_script("var n = 0; arguments[0].querySelectorAll('svg.heatmap path.cell').forEach("
                                          "function (p) { n += p.getAttribute('d').split('M').length - 1; }); return n;", golden)
        self.assertGreater(cells, 0)
        self.assertEqual(bins, want["error_map"]["rows"] * want["error_map"]["cols"])  # one square per bin
        self.assertIn("plain_f32 / native", section.find_element(By.TAG_NAME, "summary").text)
        self.driver.execute_script("history.replaceState(null, '', location.pathname); window.scrollTo(0, 0);")

    def test_8_memory_perf_and_cost_are_drawn(self):
        with open(self.results) as f:
            results = reports_test.with_memory_perf_cost(json.load(f))
        edited = os.path.join(self.dir, "edited.json")
        with open(edited, "w") as f:
            json.dump(results, f)
        html = os.path.join(self.dir, "edited.html")
        r = attngate("report", edited, "--html", html)
        self.assertEqual(r.returncode, 0, r.stderr)
        driver = open_page(html, ARGS.chromium, ARGS.chromedriver, 1100)
        try:
            section = driver.find_element(By.ID, "r-%d" % (len(results["results"]) - 1))
            driver.execute_script("arguments[0].open = true;", section)
            perf = wait_for(driver, section, ".check[data-check=perf]")[-1]  # the added checks come after the run's own
            self.assertIn("time ratio (this run / baseline) 1.08, 95% CI [1.05, 1.11], p = 0.004 (adjusted 0.02), status regression", perf.text)
            # The perf decision drawn: ratio, its interval and the 5% threshold on one axis, in that order.
            ratio = perf.find_element(By.CSS_SELECTOR, "svg.ratio")
            self.assertIn("time ratio 1.08, CI [1.05, 1.11]; grey 1 = baseline, red dashed 1.05 = threshold", ratio.text)
            x = {c: float(ratio.find_element(By.CSS_SELECTOR, "." + c).get_attribute("x1")) for c in ("base", "ref", "ci")}
            self.assertLess(x["base"], x["ref"])
            self.assertAlmostEqual(x["ref"], x["ci"], delta=0.11)  # the interval starts at the threshold here
            self.assertEqual(len(perf.find_elements(By.CSS_SELECTOR, "circle.s1")), 3)  # baseline samples drawn
            memory = section.find_elements(By.CSS_SELECTOR, ".check[data-check=memory]")[-1]
            self.assertIn("live heap bytes after each call", memory.text)
            self.assertEqual(len(memory.find_elements(By.CSS_SELECTOR, "svg.chart polyline.line")), 2)  # live heap, RSS
            self.assertIn("4096 bytes", memory.text)  # peak against its baseline's bars
            cost = section.find_elements(By.CSS_SELECTOR, ".check[data-check=cost]")[-1]
            self.assertIn("0.42 USD per million tokens (baseline 0.39) on v5e-1 at 1.2 per hour — price source: pricing/gcp-2026-11.json (2026-11-01)",
                          cost.text)
            # The workload's monthly cost before and after, as bars.
            bars = driver.find_element(By.CSS_SELECTOR, "table.workloads td.bars svg").text
            self.assertRegex(bars, r"baseline\s+1150 USD\s+this run\s+123[45] USD")
            self.assertEqual([e for e in driver.get_log("browser") if e["level"] == "SEVERE"], [])
        finally:
            driver.quit()


if __name__ == "__main__":
    ARGS, rest = browser_args(with_plugin=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
