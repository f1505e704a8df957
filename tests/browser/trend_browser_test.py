"""A synthetic history of 40 nightly runs (a real run's results, its timings scaled by
+-0.4% noise and a 3% step at run 26, where a jaxlib bump changes the fingerprint) is
appended to a directory store; the HTML report of the last run, with --trends, is opened
in headless Chromium: the trends table names the change point and the fingerprint change
it is attributed to, and the trend chart marks both. Saves a screenshot."""
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

from selenium.webdriver.common.by import By

from chromium import browser_args, open_page, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import results_schema  # noqa: E402

ARGS = None
SUITE = {"name": "trend", "seed": 3, "perf": {"repetitions": 5, "min_time_s": 0.002}, "kernels": ["flash"],
         "cases": [{"id": "mha_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16},
                   {"id": "causal_f32", "seq_q": 96, "heads_q": 2, "head_dim": 16, "causal": True}]}
RUNS, STEP_AT = 40, 25


def attngate(*args):
    with results_schema.watch(args):  # its outputs checked against docs/results.schema.json
        return subprocess.run([ARGS.attngate, *args], capture_output=True, text=True, timeout=300)


class TrendReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-trends-")
        suite = os.path.join(cls.dir, "trend.json")
        with open(suite, "w") as f:
            json.dump(SUITE, f)
        store = os.path.join(cls.dir, "store")
        assert attngate("golden", "generate", "--suite", suite, "--store", store).returncode == 0
        real = os.path.join(cls.dir, "real.json")
        r = attngate("run", "--suite", suite, "--store", store, "--checks", "golden,perf", "--machine", "nightly", "--out", real)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(real) as f:
            base = json.load(f)
        rng = random.Random(5)
        for i in range(RUNS):
            run = copy.deepcopy(base)
            run["started_at"] = f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T02:00:00Z"
            # The shape attngate itself writes (format and packages), which the schema checks.
            run["fingerprint"]["lockfiles"] = {"requirements.txt": {"format": "pip", "packages": {"jaxlib": "0.4.31" if i >= STEP_AT else "0.4.30"}}}
            factor = (1.03 if i >= STEP_AT else 1.0) * (1 + rng.uniform(-0.004, 0.004))
            for e in run["results"]:
                for c in e["checks"]:
                    if c["check"] == "perf":
                        c["metrics"]["samples_s"] = [s * factor for s in c["metrics"]["samples_s"]]
            path = os.path.join(cls.dir, f"run-{i:02d}.json")
            with open(path, "w") as f:
                json.dump(run, f)
            r = attngate("history", "--append", path, "--store", store)
            assert r.returncode == 0, r.stdout + r.stderr
        cls.html = os.path.join(cls.dir, "trends.html")
        r = attngate("report", path, "--html", cls.html, "--store", store, "--trends")
        assert r.returncode == 0, r.stdout + r.stderr
        cls.history = attngate("history", "--suite", "trend", "--machine", "nightly", "--store", store, "--case", "mha_f32")

        cls.driver = open_page(cls.html, ARGS.chromium, ARGS.chromedriver, 1000)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_1_history_command_marks_the_step(self):
        self.assertEqual(self.history.returncode, 0, self.history.stderr)
        self.assertIn(f"mha_f32 / flash — median_s over {RUNS} run(s)", self.history.stdout)
        self.assertIn("<- change +3.", self.history.stdout)
        self.assertIn("fingerprint changed at run 26", self.history.stdout)

    def test_2_trends_table_names_the_change_and_its_cause(self):
        section = self.driver.find_element(By.ID, "trends")
        self.assertTrue(section.is_displayed())
        rows = self.driver.find_elements(By.CSS_SELECTOR, "table.trends tr")
        timing = [r.text for r in rows if "median_s" in r.text]
        self.assertEqual(len(timing), 2, [r.text for r in rows])  # both cases
        for text in timing:
            self.assertIn(f"from run {STEP_AT + 1}", text)
            self.assertIn("jaxlib: 0.4.30 → 0.4.31", text)
            change = float(text.split("%")[0].split()[-1])
            self.assertAlmostEqual(change, 3.0, delta=0.6)

    def test_3_chart_marks_change_point_and_fingerprint_change(self):
        case = self.driver.find_element(By.CSS_SELECTOR, "details.case")
        self.driver.execute_script("arguments[0].open = true;", case)
        chart = [c for c in wait_for(self.driver, case, "svg.trend-chart") if c.find_elements(By.CSS_SELECTOR, "line.cp")][0]
        points = chart.find_element(By.CSS_SELECTOR, "polyline.line").get_attribute("points").split()
        self.assertEqual(len(points), RUNS)
        cp = chart.find_element(By.CSS_SELECTOR, "line.cp")
        fp = chart.find_element(By.CSS_SELECTOR, "line.fp")
        # Both sit between run 25 and run 26.
        x25, x26 = float(points[STEP_AT - 1].split(",")[0]), float(points[STEP_AT].split(",")[0])
        for line in (cp, fp):
            self.assertTrue(x25 < float(line.get_attribute("x1")) < x26)
        self.assertIn("+3", chart.find_element(By.CSS_SELECTOR, "text.cp-label").text)

    def test_4_no_script_errors_and_screenshot(self):
        severe = [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(severe, [])
        os.makedirs(os.path.dirname(ARGS.screenshot), exist_ok=True)
        case = self.driver.find_element(By.CSS_SELECTOR, "details.case")
        self.driver.execute_script("arguments[0].open = true; document.getElementById('trends').scrollIntoView();", case)
        wait_for(self.driver, case, ".trend")
        self.assertTrue(self.driver.save_screenshot(ARGS.screenshot))
        self.assertGreater(os.path.getsize(ARGS.screenshot), 10000)
        chart = case.find_element(By.CSS_SELECTOR, ".trend")
        self.driver.execute_script("arguments[0].scrollIntoView();", chart)
        self.assertTrue(self.driver.save_screenshot(ARGS.screenshot.replace(".png", "-chart.png")))


if __name__ == "__main__":
    ARGS, rest = browser_args(with_plugin=False)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
