"""The run that the reports' first screen is judged on: tests/support/three_faults_suite.json
(a passing kernel, a leaking one, one with a wrong causal mask and one that crashes), its
goldens generated, run with the golden and memory checks. Shared by the grouping e2e test
and the matrix browser test."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import results_schema  # noqa: E402


def run_three_faults(attngate, faulty_plugin, workdir, *report_args):
    """Generates the goldens and runs the suite in workdir; returns (the run's completed
    process, the results as a dict). report_args are extra `run` options (--html ...)."""
    suite = os.path.join(os.path.dirname(os.path.abspath(__file__)), "three_faults_suite.json")
    base = os.path.join(workdir, "baselines")
    with results_schema.watch(["golden", "generate", "--baselines", base]):  # what it writes fits docs/results.schema.json
        r = subprocess.run([attngate, "golden", "generate", "--suite", suite, "--baselines", base], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    results = os.path.join(workdir, "results.json")
    args = ["run", "--suite", suite, "--baselines", base, "--plugin", faulty_plugin, "--checks", "golden,memory", "--out", results,
            *report_args]
    with results_schema.watch(args):
        r = subprocess.run([attngate, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    with open(results) as f:
        return r, json.load(f)
