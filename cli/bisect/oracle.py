"""attngate as the oracle of `attngate bisect`: one `attngate ab` of the old side against a
candidate, reduced to each row's signature (B's golden verdict, B's output hash, the paired perf
status, an error), cached by the candidate's and the run's identity so that a resumed bisect does
not run a candidate twice."""
import hashlib
import json
import os
import subprocess
import time


class OracleFailed(Exception):
    """attngate ab exited with bad input (2) or infrastructure failure (3)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def signatures(results, checks):
    """{"case/kernel": {check: what B showed}} from an ab results.json."""
    out = {}
    for r in results.get("results", []):
        sig = {}
        if r.get("verdict") == "error":
            sig["error"] = "error"
        for c in r.get("checks", []):
            name, metrics = c.get("check"), c.get("metrics") or {}
            if name not in checks:
                continue
            if name == "golden":
                sig["golden"] = c.get("verdict")
            elif name == "numerics":
                sig["numerics"] = metrics.get("sha256") or c.get("verdict")
            elif name == "perf":
                sig["perf"] = metrics.get("status") or c.get("verdict")
            elif name == "program":
                sig["program"] = metrics.get("hash") or metrics.get("sha256") or c.get("verdict")
        out[f"{r.get('case')}/{r.get('kernel')}"] = sig
    return out


class Oracle:
    """Runs `attngate ab` with side A fixed (the old environment or build) against candidates."""

    def __init__(self, attngate, suite, cases, kernels, checks, cache_dir, extra_args, log):
        self.attngate, self.suite, self.checks = attngate, suite, checks
        self.cases, self.kernels = list(cases), list(kernels)
        self.cache_dir, self.extra, self.log = cache_dir, list(extra_args), log
        os.makedirs(cache_dir, exist_ok=True)
        self.runs = 0

    def restrict(self, rows):
        """Later runs time only the changed rows' cases and kernels."""
        self.cases = sorted({r.split("/", 1)[0] for r in rows})
        self.kernels = sorted({r.split("/", 1)[1] for r in rows})

    def side_args(self, a, b):
        """ab's arguments for the two sides; a and b are (kind, value) pairs."""
        args = []
        for which, (kind, value) in (("a", a), ("b", b)):
            args += [f"--{which}-{kind}", value]
        return args

    def run(self, a, b, identity, fresh=False):
        """{row: signature} of B (against A); cached under `identity` unless fresh."""
        rounds = ["--rounds", "2", "--max-rounds", "0"] if "perf" not in self.checks else []
        filters = [x for c in self.cases for x in ("--case", c)] + [x for k in self.kernels for x in ("--kernel", k)]
        key = hashlib.sha256(json.dumps([identity, self.suite, self.cases, self.kernels, sorted(self.checks), self.extra,
                                         rounds]).encode()).hexdigest()[:20]
        cached = os.path.join(self.cache_dir, key + ".json")
        if not fresh and os.path.exists(cached):
            with open(cached) as f:
                return json.load(f)["signatures"]
        out_dir = os.path.join(self.cache_dir, key + ".run")
        os.makedirs(out_dir, exist_ok=True)
        results = os.path.join(out_dir, "ab.json")
        argv = [self.attngate, "ab", "--suite", self.suite, *self.side_args(a, b), *filters, *rounds, *self.extra,
                "--out", results, "-q"]
        started = time.time()
        done = subprocess.run(argv, capture_output=True, text=True)
        self.runs += 1
        if done.returncode not in (0, 1) or not os.path.exists(results):
            tail = (done.stderr or done.stdout).strip().splitlines()[-6:]
            raise OracleFailed("attngate ab failed (exit {}): {}".format(done.returncode, "\n  ".join(tail)),
                               2 if done.returncode == 2 else 3)
        with open(results) as f:
            run = json.load(f)
        if run.get("load_errors"):  # a side's kernel source did not load there: nothing was compared
            raise OracleFailed("attngate ab: a kernel source did not load: " + "; ".join(run["load_errors"]), 3)
        sigs = signatures(run, self.checks)
        if not fresh:
            tmp = cached + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"signatures": sigs, "seconds": round(time.time() - started, 1), "argv": argv}, f, indent=1)
            os.replace(tmp, cached)
        return sigs


def changed_rows(old_sigs, new_sigs):
    """{row: [components]} where the new side differs from the old side run against itself."""
    rows = {}
    for row, sig in new_sigs.items():
        base = old_sigs.get(row, {})
        moved = sorted(k for k in set(sig) | set(base) if sig.get(k) != base.get(k))
        if moved:
            rows[row] = moved
    return rows


def moves_like_new(sig, new_sig, components):
    """A candidate moves the row when every component that moved shows what the new side showed."""
    return all(sig.get(c) == new_sig.get(c) for c in components)


def describe_change(old_sig, new_sig, components):
    """"golden fail → pass", "output bits changed", "perf ok → regression"."""
    said = []
    for c in components:
        if c == "numerics":
            said.append("output bits changed")
        else:
            said.append(f"{c} {old_sig.get(c, 'none')} → {new_sig.get(c, 'none')}")
    return ", ".join(said)
