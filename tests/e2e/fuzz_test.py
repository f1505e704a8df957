"""Deterministic mutation fuzzing of attngate's input readers through the real CLI: suites,
results files, perf baselines and lock files, each mutated structurally (values of the wrong
type, huge, negative or non-finite numbers, deleted and duplicated keys) and byte-wise
(truncation, flipped and inserted bytes). Every run must end with an exit code of the
contract (0, 1, 2 or 3) within its time limit: never a signal, never a hang.

The seed is fixed, so a failure reproduces; ATTNGATE_FUZZ_SECONDS (default 40) bounds the
time, ATTNGATE_FUZZ_SEED picks another seed for a longer local run."""
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, suite_with_goldens  # noqa: E402
import results_schema  # noqa: E402

SUITE = {"name": "fz", "seed": 1, "timeout_s": 10, "memory_budget_mb": 64,
         "perf": {"repetitions": 3, "min_time_s": 0.001, "threshold_pct": 10, "alpha": 0.01},
         "kernels": ["reference"],
         "cases": [{"id": "c1", "seq_q": 8, "seq_k": 16, "heads_q": 2, "heads_kv": 1, "head_dim": 4, "causal": True,
                    "window": [4, 0], "segments": 2, "bias": True, "dtype": "bf16", "scale": 0.5}]}

ODD_VALUES = [None, True, "", "x" * 300, "\u202e\x1b[2K", -1, 0, 2 ** 31, 2 ** 62, 2 ** 63 - 1, 2 ** 64 - 1, 1e300, -1e300,
              1e-320, 0.5, [], [1, 2, 3, 4], {}, {"a": 1}, [[[[]]]]]


def mutate_structure(doc, rng):
    """One structural change at a random place in a JSON document (in place)."""
    containers = []

    def walk(v):
        if isinstance(v, dict):
            containers.append(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            containers.append(v)
            for x in v:
                walk(x)
    walk(doc)
    c = rng.choice(containers)
    keys = list(c.keys()) if isinstance(c, dict) else list(range(len(c)))
    if not keys:
        return doc
    k = rng.choice(keys)
    op = rng.randrange(4)
    if op == 0:
        c[k] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif op == 1 and isinstance(c, dict):
        del c[k]
    elif op == 2 and isinstance(c[k], (int, float)) and not isinstance(c[k], bool):
        c[k] = rng.choice([-c[k], c[k] * 2 ** 40, c[k] + 1, 0])
    else:
        c[k] = rng.choice(ODD_VALUES) if isinstance(c[k], (dict, list)) else [c[k]]
    return doc


def mutate_bytes(data, rng):
    data = bytearray(data)
    op = rng.randrange(4)
    at = rng.randrange(len(data) + 1)
    if op == 0:
        del data[at:]
    elif op == 1 and data:
        data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
    elif op == 2:
        data[at:at] = rng.choice([b"\xff\xfe", b"\xef\xbb\xbf", b"\x00", b"{", b"]", b'"', b"1e999", b"-"])
    else:
        data[at:at] = data[:rng.randrange(len(data) + 1)][:64]
    return bytes(data)


def duplicate_a_key(text):
    """A JSON object with one key twice."""
    return text.replace('"seed": 1', '"seed": 1, "seed": 2', 1).replace('"name": "x"', '"name": "x", "name": 5', 1)


class FuzzTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-fuzz-")
        cls.seed = int(os.environ.get("ATTNGATE_FUZZ_SEED", "20261130"))
        cls.budget = float(os.environ.get("ATTNGATE_FUZZ_SECONDS", "40"))
        cls.bl = os.path.join(cls.dir, "bl")
        suite = suite_with_goldens(os.path.join(cls.dir, "fz.json"), SUITE, cls.bl)
        cls.results = os.path.join(cls.dir, "results.json")
        p = attngate("run", "--suite", suite, "--baselines", cls.bl, "--checks", "golden,perf", "--machine", "fz", "--out", cls.results)
        assert p.returncode == 0, p.stderr
        assert attngate("baseline", "update", "--results", cls.results, "--baselines", cls.bl, "--yes", "--machine", "fz", "--allow-in-ci").returncode == 0
        perf_dir = os.path.join(cls.bl, "perf")
        cls.perf_baseline = os.path.join(perf_dir, os.listdir(perf_dir)[0], "fz.json")
        cls.runs = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        # One generator per test, so that each test's inputs do not depend on which others ran.
        self.rng = random.Random(f"{self.seed}/{self.id()}")

    def tearDown(self):
        print(f"{self.id()}: {self.runs} runs", file=sys.stderr)

    def check(self, what, args, timeout=60):
        self.runs += 1
        try:
            # Bytes, not text: what a mutated input makes attngate print need not be UTF-8.
            with results_schema.watch(args):  # what it wrote, from mutated input, still fits docs/results.schema.json
                p = subprocess.run([ARGS.attngate, *args], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.fail(f"{what}: hung past {timeout} s: {args}")
        stderr = p.stderr.decode(errors="replace")
        self.assertIn(p.returncode, (0, 1, 2, 3), f"{what}: {args}\n{stderr[-2000:]}")
        if p.returncode == 2:
            self.assertIn("error:", stderr, what)

    def mutants(self, original, seconds):
        """Mutated texts of a JSON document until `seconds` have passed."""
        end = time.monotonic() + seconds
        text = json.dumps(original)
        while time.monotonic() < end:
            kind = self.rng.randrange(5)
            if kind <= 2:
                doc = copy.deepcopy(original)
                for _ in range(1 + self.rng.randrange(3)):
                    doc = mutate_structure(doc, self.rng)
                yield json.dumps(doc).encode()
            elif kind == 3:
                yield mutate_bytes(text.encode(), self.rng)
            else:
                yield duplicate_a_key(text).encode()

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_suites(self):
        out = os.path.join(self.dir, "inputs")
        for data in self.mutants(SUITE, self.budget * 0.35):
            path = self.write("mut-suite.json", data)
            self.check("suite", ["inputs", "--suite", path, "--case", "c1", "--out", out])

    def test_results_files(self):
        with open(self.results) as f:
            original = json.load(f)
        md = os.path.join(self.dir, "r.md")
        for i, data in enumerate(self.mutants(original, self.budget * 0.35)):
            path = self.write("mut-results.json", data)
            if i % 2:
                self.check("results", ["compare", self.results, path])
            else:
                self.check("results", ["report", path, "--markdown", md, "--gbench", md + ".json", "--html", md + ".html",
                                       "--junit", md + ".xml"])

    def test_perf_baselines_and_lockfiles(self):
        with open(self.perf_baseline) as f:
            original = f.read()
        lock_dir = os.path.join(self.dir, "locks")
        os.makedirs(lock_dir, exist_ok=True)
        vcpkg = {"name": "x", "dependencies": ["fmt", {"name": "zlib", "version>=": "1.2"}],
                 "overrides": [{"name": "fmt", "version": "9"}], "builtin-baseline": "abc"}
        suite = os.path.join(self.dir, "fz.json")
        try:
            for i, data in enumerate(self.mutants(vcpkg, self.budget * 0.15)):
                with open(os.path.join(lock_dir, "vcpkg.json"), "wb") as f:
                    f.write(data)
                self.check("lockfile", ["env", "--lockfile", os.path.join(lock_dir, "vcpkg.json"), "--json"])
                if i % 5 == 0:
                    with open(self.perf_baseline, "wb") as f:
                        f.write(mutate_bytes(original.encode(), self.rng) if i % 10 else
                                json.dumps(mutate_structure(json.loads(original), self.rng)).encode())
                    self.check("perf baseline", ["run", "--suite", suite, "--baselines", self.bl, "--checks", "perf",
                                                 "--machine", "fz", "--out", os.path.join(self.dir, "pb.json")])
        finally:
            with open(self.perf_baseline, "w") as f:
                f.write(original)
        self.assertGreater(self.runs, 0)


if __name__ == "__main__":
    main()
