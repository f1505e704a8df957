"""Opens the HTML report of a real run where three faulty plugin kernels fail differently
(a leak, a wrong causal mask, a crash) in headless Chromium and checks the first screen:
the failures grouped by cause and the verdict matrix are both on it; the matrix has a
block for every case x kernel x check, coloured by its verdict; clicking a block opens
that case x kernel's details, drawn then from the report's data; the groups expand to
their rows; the console stays clean; with JavaScript off, the verdict, the groups and the
matrix are all still there. Saves a screenshot of the first screen as a CI artifact."""
import os
import re
import shutil
import sys
import tempfile
import unittest

from selenium.webdriver.common.by import By

from chromium import browser_args, open_page, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from three_faults import run_three_faults  # noqa: E402

ARGS = None
HEIGHT = 1000


def hue_family(css_colour):
    """"red", "green", "purple" or "grey" for an rgb()/rgba() colour."""
    r, g, b = (int(x) for x in re.findall(r"\d+", css_colour)[:3])
    if max(r, g, b) - min(r, g, b) < 24:
        return "grey"
    if g > r and g > b:
        return "green"
    if r > g and b > g and b > 0.5 * r:
        return "purple"
    return "red" if r > g else "other"


EXPECTED_FAMILY = {"pass": "green", "fail": "red", "error": "purple", "skip": "grey"}


class MatrixInBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-matrix-")
        cls.html = os.path.join(cls.dir, "report.html")
        _, results = run_three_faults(ARGS.attngate, ARGS.faulty_plugin, cls.dir, "--html", cls.html)
        cls.results = results["results"]
        cls.driver = open_page(cls.html, ARGS.chromium, ARGS.chromedriver, HEIGHT)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def cell(self, case, kernel):
        found = [a for a in self.driver.find_elements(By.CSS_SELECTOR, "#matrix a.mc")
                 if a.get_attribute("data-case") == case and a.get_attribute("data-kernel") == kernel]
        self.assertEqual(len(found), 1, (case, kernel))
        return found[0]

    def test_1_first_screen_shows_the_groups_and_the_matrix(self):
        self.driver.execute_script("window.scrollTo(0, 0);")
        inner = self.driver.execute_script("return window.innerHeight;")
        for sel in ("#groups", "#matrix"):
            top = self.driver.execute_script("return document.querySelector(arguments[0]).getBoundingClientRect().top;", sel)
            self.assertLess(top, inner - 200, sel)  # the start of it, at least, on the first screen
        kernels = [th.text for th in self.driver.find_elements(By.CSS_SELECTOR, "#matrix thead th.kernel")]
        self.assertEqual(kernels, ["flash", "leaky", "causal_off_by_one", "crashy"])

    def test_2_a_block_for_every_case_kernel_and_check_coloured_by_verdict(self):
        blocks = self.driver.find_elements(By.CSS_SELECTOR, "#matrix .ck[data-verdict]")
        self.assertEqual(len(blocks), sum(len(e["checks"]) for e in self.results))
        families = set()
        for e in self.results:
            spans = {s.get_attribute("data-check"): s for s in self.cell(e["case"], e["kernel"]).find_elements(By.CSS_SELECTOR, ".ck[data-verdict]")}
            self.assertEqual(sorted(spans), sorted(k["check"] for k in e["checks"]))
            for k in e["checks"]:
                span = spans[k["check"]]
                self.assertEqual(span.get_attribute("data-verdict"), k["verdict"])
                family = hue_family(span.value_of_css_property("background-color"))
                self.assertEqual(family, EXPECTED_FAMILY[k["verdict"]], (e["case"], e["kernel"], k["check"]))
                families.add(family)
        self.assertTrue({"green", "red", "purple"} <= families, families)

    def test_3_hover_names_the_numbers_and_click_opens_the_details(self):
        e = next(e for e in self.results if e["kernel"] == "causal_off_by_one" and e["verdict"] == "fail")
        a = self.cell(e["case"], e["kernel"])
        golden = a.find_element(By.CSS_SELECTOR, ".ck[data-check=golden]")
        # The title's numbers, written by the script from the data, are those the groups list (from C++).
        anchor = a.get_attribute("href").split("#")[1]
        listed = self.driver.find_element(By.CSS_SELECTOR, "#groups a[href='#%s']" % anchor).find_element(By.XPATH, "following-sibling::span[@class='num']")
        numbers = self.driver.execute_script("return arguments[0].textContent;", listed)
        self.assertIn("max_abs_error=", numbers)
        self.assertEqual(golden.get_attribute("title").split("\n")[1], numbers)
        passing = next(p for p in self.results if p["verdict"] == "pass")
        target = self.cell(passing["case"], passing["kernel"])
        anchor = target.get_attribute("href").split("#")[1]
        details = self.driver.find_element(By.ID, anchor)
        self.assertIsNone(details.get_attribute("open"))  # passing sections start closed
        self.assertEqual(details.find_elements(By.CSS_SELECTOR, ".check"), [])  # and are drawn when they open
        target.click()
        drawn = {c.get_attribute("data-check"): c for c in wait_for(self.driver, details, ".check")}
        self.assertEqual(sorted(drawn), sorted(k["check"] for k in passing["checks"]))
        self.assertEqual(self.driver.execute_script("return location.hash;"), "#" + anchor)
        self.assertEqual(details.get_attribute("open"), "true")
        summary = details.find_element(By.TAG_NAME, "summary").text
        self.assertIn(passing["case"], summary)
        self.assertIn(passing["kernel"], summary)
        top = self.driver.execute_script("return arguments[0].getBoundingClientRect().top;", details)
        self.assertTrue(-2 <= top < HEIGHT / 2, top)  # scrolled to it
        self.driver.execute_script("history.replaceState(null, '', location.pathname); window.scrollTo(0, 0);")

    def test_4_groups_expand_to_their_rows(self):
        groups = self.driver.find_elements(By.CSS_SELECTOR, "#groups > li.group")
        failing = sum(1 for e in self.results for k in e["checks"] if k["verdict"] in ("fail", "error"))
        self.assertEqual(sum(int(g.get_attribute("data-count")) for g in groups), failing)
        leak = next(g for g in groups if g.get_attribute("data-kernel") == "leaky")
        self.assertRegex(leak.text, r"leaky · memory: heap leak on \d+/\d+ cases, [0-9.]+(–[0-9.]+)? B/call")
        rows = leak.find_elements(By.CSS_SELECTOR, "ul li")
        details = leak.find_element(By.TAG_NAME, "details")
        # Collapsed means closed and its rows not rendered. checkVisibility() says so by the spec;
        # a row's own box is no witness, as Chromium may lay out hidden content when asked (16.8 px
        # once, under load, in CI).
        shown = "return arguments[0].checkVisibility();"
        closed_height = leak.size["height"]
        self.assertIsNone(details.get_attribute("open"))
        self.assertFalse(self.driver.execute_script(shown, rows[0]))
        leak.find_element(By.TAG_NAME, "summary").click()
        self.assertEqual(details.get_attribute("open"), "true")
        self.assertTrue(self.driver.execute_script(shown, rows[0]))
        self.assertGreater(leak.size["height"], closed_height)  # the rows take room once open
        self.assertIn(rows[0].find_element(By.TAG_NAME, "a").get_attribute("href").split("#")[1],
                      [a.get_attribute("href").split("#")[1] for a in self.driver.find_elements(By.CSS_SELECTOR, "#matrix a.mc")])
        self.assertEqual(len(rows), int(leak.get_attribute("data-count")))
        leak.find_element(By.TAG_NAME, "summary").click()

    def test_5_without_scripts_the_verdict_groups_and_matrix_are_all_there(self):
        plain = open_page(self.html, ARGS.chromium, ARGS.chromedriver, HEIGHT, scripts=False)
        try:
            self.assertEqual(plain.find_elements(By.CSS_SELECTOR, "#results tbody tr"), [])  # scripts are off indeed
            verdict = plain.find_element(By.ID, "verdict")
            self.assertTrue(verdict.is_displayed())
            self.assertIn("FAIL", verdict.text)
            self.assertIn("of %d case × kernel failed" % len(self.results), verdict.text)
            groups = plain.find_elements(By.CSS_SELECTOR, "#groups > li.group")
            failing = sum(1 for e in self.results for k in e["checks"] if k["verdict"] in ("fail", "error"))
            self.assertEqual(sum(int(g.get_attribute("data-count")) for g in groups), failing)
            self.assertTrue(all(g.is_displayed() and " · " in g.text for g in groups))
            blocks = plain.find_elements(By.CSS_SELECTOR, "#matrix .ck:not(.blank)")
            self.assertEqual(len(blocks), sum(len(e["checks"]) for e in self.results))
            families = {hue_family(b.value_of_css_property("background-color")) for b in blocks}
            self.assertTrue({"green", "red", "purple"} <= families, families)
        finally:
            plain.quit()

    def test_6_console_clean_and_screenshot_of_the_first_screen(self):
        severe = [e for e in self.driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        self.assertEqual(severe, [])
        os.makedirs(os.path.dirname(ARGS.screenshot), exist_ok=True)
        self.driver.execute_script("window.scrollTo(0, 0);")
        self.assertTrue(self.driver.save_screenshot(ARGS.screenshot))
        self.assertGreater(os.path.getsize(ARGS.screenshot), 10000)


if __name__ == "__main__":
    ARGS, rest = browser_args(with_plugin=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
