"""A measurement, not a test: a report's size and when headless Chromium first painted it
(first-contentful-paint, ms from the start of navigation), median of five loads.
    /usr/bin/python3 tests/browser/first_paint.py reports/report.html"""
import os
import statistics
import sys

from chromium import first_paint_ms, open_page

for path in sys.argv[1:]:
    times = []
    for _ in range(5):
        driver = open_page(os.path.abspath(path), "/usr/bin/chromium", "/usr/bin/chromedriver", 1000)
        times.append(first_paint_ms(driver))
        driver.quit()
    print(f"{path}: {os.path.getsize(path)} bytes, first paint {statistics.median(times):.0f} ms (of {', '.join('%.0f' % t for t in times)})")
