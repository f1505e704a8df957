"""Shared plumbing of the end-to-end tests: the command line they are given by ctest, a way
to run the real attngate binary, and the workspace most tests start from."""
import argparse
import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unittest

import results_schema


class Args:
    attngate = None
    faulty_plugin = None
    user_plugin = None
    picky_plugin = None
    source_dir = None


ARGS = Args()

# An adapter's JAX import takes seconds on an idle machine and minutes on a loaded one: the
# tests give every adapter they start 600 s to listen (the built-in 120 s once failed
# e2e_ci_templates under load), still below each test's own ctest TIMEOUT.
os.environ.setdefault("ATTNGATE_ADAPTER_READY_TIMEOUT", "600")


def attngate(*args, cwd=None, env=None, timeout=600, stdin=None):
    """Runs the real binary; every results file, baseline and history record it writes is
    then validated against docs/results.schema.json (results_schema.watch)."""
    with results_schema.watch(args, cwd):
        return subprocess.run([ARGS.attngate, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL)


def jax_venv_python(line):
    """The pinned JAX venv's interpreter (.venv/jax-new or .venv/jax-old, made by ci/install-deps.sh)."""
    return os.path.join(ARGS.source_dir, ".venv", f"jax-{line}", "bin", "python")


def require_jax_venvs(*lines):
    """Exits 77 (a CTest skip that says why) unless the named JAX venvs exist."""
    missing = [line for line in lines if not os.path.exists(jax_venv_python(line))]
    if missing:
        print(f"SKIPPED: .venv/jax-{missing[0]} is missing; bash ci/install-deps.sh creates it")
        sys.exit(77)


class TempDirTest(unittest.TestCase):
    """A test class with one temporary directory for all its tests, removed at the end."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=f"attngate-{cls.__name__}-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, *names):
        return os.path.join(self.dir, *names)


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def html_report_rows(path):
    """The rows of an HTML report as its script reads them from the embedded data (the report's
    table and details are drawn from it): per row its case, kernel and verdict, and per check
    its verdict, reason, metrics by name (as the tables show them), figures and notes."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    start = page.index('<script type="application/json" id="row-data">') + len('<script type="application/json" id="row-data">')
    data = json.loads(page[start:page.index("</script>", start)])
    strings = data["strings"]
    return [{"case": strings[r[0]], "kernel": strings[r[1]], "verdict": r[2],
             "checks": [{"check": data["checks"][k[0]], "verdict": k[1], "reason": strings[k[2]],
                         "metrics": {n: v for n, v in zip(data["metric_names"][k[0]], k[3]) if v is not None},
                         "figures": (k[4:5] or [{}])[0], "notes": (k[5:6] or [[]])[0]} for k in r[6]]} for r in data["rows"]]


def suite_with_goldens(path, suite, baselines):
    """Writes suite to path and generates its goldens into baselines: the start of most tests."""
    write_json(path, suite)
    p = attngate("golden", "generate", "--suite", path, "--baselines", baselines)
    if p.returncode != 0:
        raise AssertionError(f"golden generate --suite {path}: exit {p.returncode}\n{p.stderr}")
    return path


def developer_env():
    """A developer's machine: CI itself runs with CI=true, which baseline update refuses."""
    return {k: v for k, v in os.environ.items() if k != "CI"}


def on_a_terminal(argv, answers=(), prompt=b"? [a]ccept", timeout=300, columns=None):
    """Runs argv (on a developer's machine) with stdin, stdout and stderr on a pseudo-terminal
    (`columns` wide when given), answering each prompt in turn (Ctrl-D once the answers run out).
    Returns (exit code, transcript, prompts answered)."""
    pid, fd = pty.fork()
    if pid == 0:
        if columns:  # before the program asks: set on its own terminal
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        os.execve(argv[0], argv, developer_env())
    answers = list(answers)
    transcript = b""
    answered = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        transcript += chunk
        while transcript.count(prompt) > answered:
            os.write(fd, answers.pop(0) if answers else b"\x04")
            answered += 1
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), transcript.decode(errors="replace"), answered


class GoldenWorkspace(unittest.TestCase):
    """Each test gets a scratch directory holding SUITE (written as <SUITE["name"]>.json) and
    its goldens: self.dir, self.suite, self.baselines (the store) and self.results (where a
    run's results.json goes). Removed after the test."""

    SUITE = None  # the suite each test starts from; a subclass sets it

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=f"attngate-{self.SUITE['name']}-")
        self.baselines = os.path.join(self.dir, "baselines")
        self.results = os.path.join(self.dir, "results.json")
        self.suite = suite_with_goldens(os.path.join(self.dir, self.SUITE["name"] + ".json"), self.SUITE, self.baselines)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attngate", required=True)
    parser.add_argument("--faulty-plugin", required=True)
    parser.add_argument("--user-plugin")
    parser.add_argument("--picky-plugin")
    parser.add_argument("--source-dir", required=True)
    parsed, rest = parser.parse_known_args()
    ARGS.attngate = os.path.abspath(parsed.attngate)
    ARGS.faulty_plugin = os.path.abspath(parsed.faulty_plugin)
    ARGS.user_plugin = parsed.user_plugin and os.path.abspath(parsed.user_plugin)
    ARGS.picky_plugin = parsed.picky_plugin and os.path.abspath(parsed.picky_plugin)
    ARGS.source_dir = parsed.source_dir
    unittest.main(module="__main__", argv=[sys.argv[0], *rest], verbosity=2)
