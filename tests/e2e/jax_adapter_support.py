"""Plumbing for talking to the JAX adapter as the harness does: start it, speak the
protocol over HTTP, make a case's tensors with numpy, and judge outputs against the fp64
oracle with a tolerance of the harness's form. Used by jax_adapter_test.py and by
tests/bench/jax_suite_pass.py."""
import hashlib
import http.client
import io
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import oracle  # noqa: E402

ADAPTER = os.path.join(SOURCE_DIR, "kernels", "jax", "adapter.py")


def build_wheel(out_dir):
    """The attngate-jax wheel, as attngate's build makes it (kernels/jax/build-wheel.sh,
    offline, with this interpreter's pip, setuptools and wheel): its path."""
    build = subprocess.run(["bash", os.path.join(SOURCE_DIR, "kernels", "jax", "build-wheel.sh"), out_dir],
                           env=dict(os.environ, PYTHON=sys.executable), capture_output=True, text=True, timeout=300)
    if build.returncode != 0:
        raise AssertionError(f"kernels/jax/build-wheel.sh: exit {build.returncode}\n{build.stderr}")
    return build.stdout.strip()


def make_team_venv(venv, wheel, *packages):
    """A team's own venv made by .venv/jax-new's interpreter, without system site-packages:
    attngate-jax from `wheel` and the team's `packages` (source trees) installed by pip with no
    index; jax and its dependencies reached through a .pth to jax-new's site-packages, since
    installing jax anew needs the network. Returns the venv's python."""
    pinned_python = os.path.join(SOURCE_DIR, ".venv", "jax-new", "bin", "python")
    subprocess.run([pinned_python, "-m", "venv", venv], check=True, timeout=300)
    python = os.path.join(venv, "bin", "python")
    where = [subprocess.run([p, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True,
                            check=True).stdout.strip() for p in (python, pinned_python)]
    with open(os.path.join(where[0], "pinned-jax.pth"), "w") as f:
        f.write(where[1] + "\n")
    pip = [os.path.join(venv, "bin", "pip"), "install", "-q", "--no-index", "--disable-pip-version-check"]
    # As kernels/jax/README.md tells a team to pin it in a hashed lock (attngate-jax is not on
    # PyPI): the wheel's file by its hash, installed with --require-hashes.
    with open(wheel, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    lock = os.path.join(venv, "attngate-jax.lock")
    with open(lock, "w") as f:
        f.write(f"attngate-jax @ file://{os.path.abspath(wheel)} \\\n    --hash=sha256:{digest}\n")
    subprocess.run(pip + ["--require-hashes", "--no-deps", "-r", lock], check=True, timeout=300, cwd=venv)
    for package in packages:
        subprocess.run(pip + ["--no-build-isolation", package], check=True, timeout=300, cwd=venv)
    return python


class Adapter:
    """An adapter child process on a free loopback port, and one keep-alive connection."""

    def __init__(self, *args, env=None, python=None, start_timeout=120):
        self.proc = subprocess.Popen([python or sys.executable, ADAPTER, "--exit-with-parent", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                     env=dict(os.environ, **(env or {})))
        deadline = time.monotonic() + start_timeout
        line = self.proc.stdout.readline()
        if not line.startswith("ATTNGATE-ADAPTER LISTENING http://") or time.monotonic() > deadline:
            self.proc.kill()
            raise RuntimeError(f"adapter did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.split()[2]
        host, port = self.url[len("http://"):].rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.token = None
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)

    def request(self, method, path, body=None, headers=None, token=True):
        """(status, parsed JSON or raw bytes)."""
        hdrs = dict(headers or {})
        if token and self.token:
            hdrs.setdefault("Authorization", f"Bearer {self.token}")
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=hdrs)
                resp = self.conn.getresponse()
                data = resp.read()
                break
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()  # the adapter closed the connection (401, 413): reconnect once
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
                if attempt:
                    raise
        if resp.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        if resp.getheader("Content-Type") == "application/json" and data:
            return resp.status, json.loads(data)
        return resp.status, data

    def put(self, name, array):
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(array))
        return self.request("PUT", f"/v1/tensors/{name}", buf.getvalue(),
                            {"Content-Type": "application/octet-stream"})

    def get_tensor(self, name):
        status, data = self.request("GET", f"/v1/tensors/{name}")
        assert status == 200, (status, data)
        return np.load(io.BytesIO(data))

    def upload(self, prefix, tensors):
        names = {}
        for role, arr in tensors.items():
            status, reply = self.put(f"{prefix}.{role}", arr)
            assert status == 201, (status, reply)
            names[role] = f"{prefix}.{role}"
        return names

    def call(self, endpoint, kernel, case, inputs, **extra):
        status, reply = self.request("POST", f"/v1/{endpoint}",
                                     {"kernel": kernel, "case": case, "inputs": inputs, **extra})
        assert status == 200, (status, reply)
        return reply

    def shutdown(self, timeout=30):
        """Asks the adapter to exit; returns its exit code."""
        try:
            self.request("POST", "/v1/shutdown")
        except (ConnectionError, http.client.HTTPException):
            pass
        self.conn.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.stdout.close()
            self.proc.stderr.close()


# -- cases and tensors ------------------------------------------------------------------

def make_case(**kw):
    """A protocol case object with attngate's defaults (scale 1/sqrt(D) in float32)."""
    case = {"batch": 1, "seq_q": 128, "heads_q": 2, "head_dim": 32, "dtype": "f32", "softcap": 0.0,
            "causal": False, "causal_alignment": "bottom_right", "window": [-1, -1], "bias_shape": None,
            "segment_ids": False, "block_q": 0, "block_k": 0}
    case.update(kw)
    case.setdefault("seq_k", case["seq_q"])
    case.setdefault("heads_kv", case["heads_q"])
    case.setdefault("head_dim_v", case["head_dim"])
    case.setdefault("scale", float(np.float32(1.0 / np.sqrt(np.float32(case["head_dim"])))))
    return case


def bf16_round(x):
    import ml_dtypes
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def make_tensors(case, seed=0, amplitude=1.0, segments=3, bias_amplitude=1.0):
    rng = np.random.default_rng(seed)
    b, sq, sk = case["batch"], case["seq_q"], case["seq_k"]
    u = lambda *shape: rng.uniform(-amplitude, amplitude, size=shape).astype(np.float32)
    t = {"q": u(b, sq, case["heads_q"], case["head_dim"]), "k": u(b, sk, case["heads_kv"], case["head_dim"]),
         "v": rng.uniform(-1, 1, size=(b, sk, case["heads_kv"], case["head_dim_v"])).astype(np.float32)}
    if case["dtype"] == "bf16":
        t = {n: bf16_round(x) for n, x in t.items()}
    if case["bias_shape"] is not None:
        t["bias"] = rng.uniform(-bias_amplitude, bias_amplitude, size=case["bias_shape"]).astype(np.float32)
    if case["segment_ids"]:
        cuts = np.sort(rng.uniform(0, 1, size=(b, segments - 1)), axis=1)
        for name, seq in (("segment_ids_q", sq), ("segment_ids_kv", sk)):
            pos = (np.arange(seq) + 0.5) / seq
            t[name] = np.stack([np.searchsorted(c, pos) for c in cuts]).astype(np.int32)
    return t


def oracle_desc(case, **override):
    desc = {"shape": {k: case[k] for k in ("batch", "seq_q", "seq_k", "heads_q", "heads_kv", "head_dim_v")},
            "scale": case["scale"], "softcap": case["softcap"], "window": case["window"],
            "causal": case["causal"], "causal_alignment": case["causal_alignment"]}
    desc.update(override)
    return desc


def reference(case, t, **override):
    return oracle.attention(oracle_desc(case, **override), t)


def straightforward(case, t):
    """attngate's "straightforward implementation" at the case's precision: f32 scores and
    softmax, probabilities rounded to the operand dtype, then P.V in f32."""
    b, sq, sk = case["batch"], case["seq_q"], case["seq_k"]
    g = case["heads_q"] // case["heads_kv"]
    k = np.repeat(t["k"], g, axis=2)
    v = np.repeat(t["v"], g, axis=2)
    s = np.einsum("bihd,bjhd->bhij", t["q"], k).astype(np.float32) * np.float32(case["scale"])
    if case["softcap"] > 0:
        c = np.float32(case["softcap"])
        s = c * np.tanh(s / c)
    if "bias" in t:
        s = s + np.broadcast_to(t["bias"], s.shape)
    allowed = _allowed(case, t)
    s = np.where(allowed, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    den = p.sum(axis=-1, keepdims=True)
    p = np.where(den > 0, p / np.where(den > 0, den, 1), 0).astype(np.float32)
    if case["dtype"] == "bf16":
        p = bf16_round(p)
    return np.einsum("bhij,bjhd->bihd", p, v).astype(np.float64)


def _allowed(case, t):
    b, sq, sk = case["batch"], case["seq_q"], case["seq_k"]
    off = 0 if case["causal_alignment"] == "top_left" else sk - sq
    pos = np.arange(sq)[:, None] + off
    j = np.arange(sk)[None, :]
    ok = np.ones((sq, sk), dtype=bool)
    left, right = case["window"]
    if case["causal"]:
        ok &= j <= pos
    if left >= 0:
        ok &= j >= pos - left
    if right >= 0:
        ok &= j <= pos + right
    ok = np.broadcast_to(ok, (b, 1, sq, sk))
    if case["segment_ids"]:
        ok = ok & (t["segment_ids_q"][:, None, :, None] == t["segment_ids_kv"][:, None, None, :])
    return ok


def tolerance(case, golden, t):
    """2 x straightforward error + 2 ulp(dtype) x max |golden|: the harness's rule with the
    floor in the operand dtype's ulp, as it was before the gate moved to an f32 floor for
    every dtype. For bf16 cases it is looser than the gate; these adapter tests check each
    mapping's semantics, and the gate's own rule is applied by jax_gate_test.py through
    `attngate run`."""
    finite = np.isfinite(golden)
    sf = straightforward(case, t)
    sf_err = float(np.max(np.abs(np.where(finite, sf - golden, 0)), initial=0.0))
    ulp = 2.0 ** -7 if case["dtype"] == "bf16" else 2.0 ** -23
    return 2 * sf_err + 2 * ulp * float(np.max(np.abs(np.where(finite, golden, 0)), initial=0.0))


def max_error(out, golden):
    """max |out - golden|; inf when NaN/inf placement differs."""
    if not np.array_equal(np.isnan(out), np.isnan(golden)):
        return float("inf")
    finite = np.isfinite(golden)
    return float(np.max(np.abs(np.where(finite, out - golden, 0)), initial=0.0))
