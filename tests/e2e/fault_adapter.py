"""A misbehaving adapter for the remote backend's failure tests.

It serves docs/protocol.md v1 with numpy kernels, each of which fails in one way a real
adapter can (the JAX adapter is tested for what it computes in jax_adapter_test.py; this
one is for what the harness does when an adapter goes wrong):

  np-ok        correct attention (the oracle's maths)
  np-raises    bf16 cases answer ok: false with an XLA-like error, as jax 0.7.2 does
  np-dies      the process exits when seq_q == 77
  np-hangs     never answers when seq_q == 33
  np-garbage   answers /v1/run with a body that is not JSON
  np-bad-npy   serves its output as a truncated .npy
  np-wrong-shape  serves an output of the wrong shape
  np-leaks     every memory call keeps one more array alive

Options: --fail-before-listening exits at once; --never-listen prints nothing and waits.
"""
import argparse
import io
import json
import os
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

KERNELS = ["np-ok", "np-raises", "np-dies", "np-hangs", "np-garbage", "np-bad-npy", "np-wrong-shape", "np-leaks"]
FEATURES = ["causal", "window", "segment_ids", "bias", "softcap", "gqa", "head_dim_v", "f32", "bf16"]

tensors = {}
truncated = set()  # outputs served as a truncated .npy
kept = []  # np-leaks keeps these alive


def compute(case, inputs):
    desc = {
        "shape": {k: case[k] for k in ("batch", "seq_q", "seq_k", "heads_q", "heads_kv", "head_dim", "head_dim_v")},
        "scale": case["scale"], "softcap": case["softcap"], "window": case["window"], "causal": case["causal"],
        "causal_alignment": case.get("causal_alignment", "bottom_right"),
    }
    t = {name: tensors[ref] for name, ref in inputs.items()}
    return oracle.attention(desc, t).astype(np.float32)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    token = None

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorized(self):
        if self.token and self.headers.get("Authorization") != "Bearer " + self.token:
            self.reply(401, {"error": "missing or wrong bearer token"})
            return False
        return True

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def do_GET(self):
        if not self.authorized():
            return
        if self.path == "/v1/hello":
            return self.reply(200, {"protocol": 1, "adapter": "fault-adapter", "adapter_version": "0.1",
                                    "fingerprint": {"numpy": np.__version__, "backend": "numpy"}})
        if self.path == "/v1/kernels":
            return self.reply(200, {"kernels": [{"name": k, "version": "0.1", "description": k, "features": FEATURES,
                                                 "workspace_growth": "unspecified"} for k in KERNELS]})
        if self.path.startswith("/v1/tensors/"):
            name = self.path[len("/v1/tensors/"):]
            if name not in tensors:
                return self.reply(404, {"error": "no tensor " + name})
            buf = io.BytesIO()
            np.save(buf, tensors[name])
            data = buf.getvalue()
            if name in truncated:
                data = data[: len(data) // 2]
            return self.reply(200, data, "application/octet-stream")
        self.reply(404, {"error": "no such path"})

    def do_PUT(self):
        if not self.authorized():
            return
        name = self.path[len("/v1/tensors/"):]
        tensors[name] = np.load(io.BytesIO(self.body()))
        self.reply(201, {"name": name, "shape": list(tensors[name].shape), "dtype": str(tensors[name].dtype)})

    def do_DELETE(self):
        if not self.authorized():
            return
        if self.path == "/v1/tensors":
            tensors.clear()
        else:
            tensors.pop(self.path[len("/v1/tensors/"):], None)
        self.reply(204, b"")

    def do_POST(self):
        if not self.authorized():
            return
        req = json.loads(self.body() or b"{}")
        if self.path == "/v1/shutdown":
            self.reply(200, {"ok": True})
            os._exit(0)
        if self.path == "/v1/supports":
            return self.reply(200, {"supported": True})
        kernel, case = req.get("kernel"), req.get("case", {})
        if kernel == "np-dies" and case["seq_q"] == 77:
            print("np-dies: seq_q is 77, exiting", file=sys.stderr, flush=True)
            os._exit(3)
        if kernel == "np-hangs" and case["seq_q"] == 33:
            time.sleep(3600)
        if kernel == "np-raises" and case["dtype"] == "bf16":
            return self.reply(200, {"ok": False, "error_type": "XlaRuntimeError",
                                    "error": "XlaRuntimeError: UNIMPLEMENTED: Unsupported element type for DotThunk::Execute: BF16 x BF16 = F32"})
        if self.path == "/v1/run":
            if kernel == "np-garbage":
                return self.reply(200, b"<html>surprise</html>", "text/html")
            out = compute(case, req["inputs"])
            name = req["output"]
            if kernel == "np-bad-npy":
                truncated.add(name)
            if kernel == "np-wrong-shape":
                out = out[:, :-1]
            tensors[name] = out
            return self.reply(200, {"ok": True, "output": {"name": name, "shape": list(out.shape), "dtype": "float32"},
                                    "compile_s": 0.01, "run_s": 0.001})
        if self.path == "/v1/memory":
            calls = req["calls"]
            base = len(kept)
            series = []
            for i in range(calls):
                if kernel == "np-leaks":
                    kept.append(np.zeros(1024, np.float32))
                series.append(10 + len(kept) - base + (base if kernel == "np-leaks" else 0))
            return self.reply(200, {"ok": True, "source": "rss", "live_arrays": series,
                                    "live_array_bytes": [n * 4096 for n in series], "rss_bytes": [100 << 20] * calls,
                                    "device_bytes_in_use": None, "device_peak_bytes": None})
        if self.path == "/v1/time":
            return self.reply(200, {"ok": True, "samples_s": [0.001] * req["repetitions"], "compile_s": 0.01})
        self.reply(404, {"error": "no such path"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", default="127.0.0.1:0")
    parser.add_argument("--token-env", default="ATTNGATE_ADAPTER_TOKEN")
    parser.add_argument("--fail-before-listening", action="store_true")
    parser.add_argument("--never-listen", action="store_true")
    args = parser.parse_args()
    if args.fail_before_listening:
        print("fault adapter: failing on purpose before listening", file=sys.stderr)
        sys.exit(4)
    if args.never_listen:
        time.sleep(3600)
    serve(Handler, args.http, os.environ.get(args.token_env))


def serve(handler, http, token):
    """Serves with `handler` on http (HOST:PORT) until killed, after the LISTENING line."""
    handler.token = token
    host, port = http.rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), handler)
    server.daemon_threads = True
    server.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    say_listening(f"http://{host}:{server.server_address[1]}")
    server.serve_forever()


def say_listening(url):
    """The readiness line, on the descriptor a harness passes in ATTNGATE_ADAPTER_READY_FD (else stdout)."""
    line = f"ATTNGATE-ADAPTER LISTENING {url}\n"
    fd = os.environ.pop("ATTNGATE_ADAPTER_READY_FD", None)
    if fd is None:
        print(line, end="", flush=True)
        return
    os.write(int(fd), line.encode())
    os.close(int(fd))


if __name__ == "__main__":
    main()
