"""An adapter that attacks the harness, for the second hardening pass (issue 24).

It serves docs/protocol.md v1 like fault_adapter.py (whose numpy kernels it reuses), plus
kernels whose answers are hostile in the ways an attacker or a broken adapter can be:

  hx-absurd-memory   /v1/memory counts of 1e19 and 1e300, growing every call
  hx-absurd-times    /v1/run times of -1e308 (run_s) and 1e308 (compile_s)
  hx-absurd-samples  /v1/time samples that are negative
  hx-endless-output  GET /v1/tensors/<its output> sends a chunked body that never ends

Options: --hostile-names lists kernels whose names and texts carry terminal escapes and
markup; --hostile-load-errors adds kernel sources that "failed to load" with such texts to
GET /v1/kernels; --spawn-orphan FILE starts a process in its own session (setsid) at start-up and
writes "<adapter pid> <orphan pid>" to FILE.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fault_adapter as fa  # noqa: E402

HOSTILE = ["hx-absurd-memory", "hx-absurd-times", "hx-absurd-samples", "hx-endless-output"]
HOSTILE_NAMES = ["np-ok\x1b[2K\rGATE PASSED", "x\x1b]0;pwned\x07", "<img src=x onerror=alert(1)>", "../../x"]
endless = set()  # output names served as a chunked body that never ends


HOSTILE_LOAD_ERRORS = [{"source": "evil.mod:make\x1b]0;pwned\x07", "error": "cannot import\x1b[2J\x1b[H GATE PASSED"}]


class Hostile(fa.Handler):
    hostile_names = False
    hostile_load_errors = False

    def do_GET(self):
        if not self.authorized():
            return
        if self.path == "/v1/kernels" and self.hostile_names:
            return self.reply(200, {"kernels": [{"name": n, "version": "0.1\x1b[31m", "description": n, "features": fa.FEATURES}
                                                for n in HOSTILE_NAMES]})
        if self.path == "/v1/kernels":
            answer = {"kernels": [{"name": k, "version": "0.1", "description": k, "features": fa.FEATURES,
                                   "workspace_growth": "unspecified"} for k in fa.KERNELS + HOSTILE]}
            if self.hostile_load_errors:
                answer["errors"] = HOSTILE_LOAD_ERRORS
            return self.reply(200, answer)
        if self.path.startswith("/v1/tensors/") and self.path[len("/v1/tensors/"):] in endless:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                while True:  # a byte now and then, never the last chunk
                    self.wfile.write(b"1\r\nx\r\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                return
        return super().do_GET()

    def do_POST(self):
        if not self.authorized():
            return
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        req = json.loads(raw or b"{}")
        kernel = req.get("kernel")
        if kernel not in HOSTILE or self.path == "/v1/supports":
            self.body = lambda: raw  # the base class reads the body again
            return super().do_POST()
        case = req["case"]
        if self.path == "/v1/run":
            out = fa.compute(case, req["inputs"])
            fa.tensors[req["output"]] = out
            answer = {"ok": True, "output": {"name": req["output"], "shape": list(out.shape), "dtype": "float32"},
                      "compile_s": 0.01, "run_s": 0.001}
            if kernel == "hx-absurd-times":
                answer.update(run_s=-1e308, compile_s=1e308)
            if kernel == "hx-endless-output":
                endless.add(req["output"])
            return self.reply(200, answer)
        if self.path == "/v1/memory":
            n = req["calls"]
            big = [1e19 * (i + 1) for i in range(n)]
            return self.reply(200, {"ok": True, "source": "rss", "live_arrays": big, "live_array_bytes": big,
                                    "rss_bytes": [1e300 * (i + 1) for i in range(n)], "device_bytes_in_use": None,
                                    "device_peak_bytes": None})
        if self.path == "/v1/time":
            samples = [-1.0] + [0.001] * (req["repetitions"] - 1)
            return self.reply(200, {"ok": True, "samples_s": samples if kernel == "hx-absurd-samples" else [0.001] * req["repetitions"],
                                    "compile_s": 0.01})
        return self.reply(404, {"error": "no such path"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", default="127.0.0.1:0")
    parser.add_argument("--token-env", default="ATTNGATE_ADAPTER_TOKEN")
    parser.add_argument("--hostile-names", action="store_true")
    parser.add_argument("--hostile-load-errors", action="store_true")
    parser.add_argument("--spawn-orphan")
    args = parser.parse_args()
    if args.spawn_orphan:
        orphan = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(args.spawn_orphan, "w") as f:
            f.write(f"{os.getpid()} {orphan.pid}\n")
    Hostile.hostile_names = args.hostile_names
    Hostile.hostile_load_errors = args.hostile_load_errors
    fa.serve(Hostile, args.http, os.environ.get(args.token_env))


if __name__ == "__main__":
    main()
