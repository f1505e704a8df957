"""Shared plumbing of the end-to-end tests: the command line they are given by ctest and
a way to run the real attngate binary."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest


class Args:
    attngate = None
    faulty_plugin = None
    user_plugin = None
    picky_plugin = None
    source_dir = None


ARGS = Args()


def attngate(*args, cwd=None, env=None, timeout=600, stdin=None):
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


def suite_with_goldens(path, suite, baselines):
    """Writes suite to path and generates its goldens into baselines: the start of most tests."""
    write_json(path, suite)
    p = attngate("golden", "generate", "--suite", path, "--baselines", baselines)
    if p.returncode != 0:
        raise AssertionError(f"golden generate --suite {path}: exit {p.returncode}\n{p.stderr}")
    return path


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
