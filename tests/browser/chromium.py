"""Headless Chromium for the browser tests: one place that knows the flags and where the
binaries are (Debian's chromium and chromedriver; override with --chromium/--chromedriver)."""
import argparse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def open_page(path, chromium, chromedriver, height, scripts=True):
    """A headless Chromium 1400 px wide and `height` tall showing the file, its console logged;
    with scripts=False, JavaScript is off (as a reader who blocks it sees the report)."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,%d" % height):
        options.add_argument(flag)
    if not scripts:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    driver.get("file://" + path)
    return driver


def browser_args(with_plugin):
    """The command line ctest gives a browser test: (the parsed options, the rest for unittest)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--attngate", required=True)
    if with_plugin:
        parser.add_argument("--faulty-plugin", required=True)
    parser.add_argument("--screenshot", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    return parser.parse_known_args()


def first_paint_ms(driver, timeout=30):
    """When the page first painted content, in ms from the start of its navigation (waiting
    for the entry: a page can paint after its load event)."""
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
        "var p = performance.getEntriesByName('first-contentful-paint'); return p.length ? p[0].startTime : null;"))


def wait_for(driver, element, selector, timeout=30):
    """The elements matching selector under element, once there are any (the report draws a
    section's details when it opens)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout).until(lambda _: element.find_elements(By.CSS_SELECTOR, selector))
