"""Headless Chromium for the browser tests: one place that knows the flags and where the
binaries are (Debian's chromium and chromedriver; override with --chromium/--chromedriver)."""
import argparse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def open_page(path, chromium, chromedriver, height):
    """A headless Chromium 1400 px wide and `height` tall showing the file, its console logged."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,%d" % height):
        options.add_argument(flag)
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
