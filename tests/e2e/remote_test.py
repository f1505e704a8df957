"""End-to-end tests of the remote backend's failure modes (issue 8, section 4): an adapter
that dies, hangs, answers garbage or a malformed .npy, or raises becomes a failed case
with its message, never a hung or crashed harness, and the other cases still run; an
adapter that cannot be reached is exit 3; the bearer token never leaks."""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, GoldenWorkspace, attngate, main, read_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAULT_ADAPTER = f"{sys.executable} {os.path.join(HERE, 'fault_adapter.py')}"

SUITE = {
    "name": "remote", "seed": 3, "timeout_s": 20, "memory_calls": 4, "warmup_calls": 1,
    "kernels": ["np-ok", "np-raises", "np-dies", "np-hangs", "np-garbage", "np-bad-npy", "np-wrong-shape", "np-leaks"],
    "cases": [
        {"id": "first", "seq_q": 16, "heads_q": 2, "head_dim": 8, "causal": True},
        {"id": "dies_here", "seq_q": 77, "heads_q": 1, "head_dim": 8},
        {"id": "hangs_here", "seq_q": 33, "heads_q": 1, "head_dim": 8},
        {"id": "bf16_after", "seq_q": 24, "seq_k": 40, "heads_q": 2, "heads_kv": 1, "head_dim": 8, "dtype": "bf16"},
    ],
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RemoteTest(GoldenWorkspace):
    SUITE = SUITE

    def run_suite(self, *extra, env=None, timeout=300):
        return attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--out", self.results,
                        "--checks", "golden,memory", *extra, env=env, timeout=timeout)

    def test_every_failure_is_a_failed_case_and_the_other_cases_still_run(self):
        start = time.monotonic()
        r = self.run_suite("--adapter", FAULT_ADAPTER, "--timeout", "4")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertLess(time.monotonic() - start, 120)
        results = read_json(self.results)
        self.assertTrue(results["complete"])
        v = {(e["case"], e["kernel"]): e for e in results["results"]}
        self.assertEqual(len(v), 4 * 8)
        for case in ("first", "dies_here", "hangs_here", "bf16_after"):
            self.assertEqual(v[(case, "np-ok")]["verdict"], "pass", v[(case, "np-ok")]["reason"])
        # Raises: the kernel's own message, on the cases where it raises only.
        self.assertIn("BF16 x BF16 = F32", v[("bf16_after", "np-raises")]["reason"])
        self.assertEqual(v[("first", "np-raises")]["verdict"], "pass")
        # Dies: the adapter's exit and its last words; the adapter is restarted for the rest.
        died = v[("dies_here", "np-dies")]
        self.assertEqual(died["verdict"], "error")  # a crash, not drift
        self.assertIn("exited with code 3", died["reason"])
        self.assertIn("np-dies: seq_q is 77", died["reason"])
        self.assertEqual(v[("hangs_here", "np-dies")]["verdict"], "pass")
        # Hangs: killed at the time limit, then replaced.
        hung = v[("hangs_here", "np-hangs")]
        self.assertIn("hung: killed after 4.0 s", hung["reason"])
        self.assertEqual(v[("bf16_after", "np-hangs")]["verdict"], "pass")
        # Garbage, a malformed .npy, a wrong shape: outside the protocol, said so.
        for kernel, words in (("np-garbage", "not a JSON object"), ("np-bad-npy", "data bytes for shape"), ("np-wrong-shape", "shape")):
            for case in ("first", "bf16_after"):
                self.assertIn("adapter answered outside the protocol", v[(case, kernel)]["reason"], kernel)
                self.assertEqual(v[(case, kernel)]["verdict"], "error", kernel)
                self.assertIn(words, v[(case, kernel)]["reason"], kernel)
        # Leaks through live arrays: the memory check.
        self.assertIn("memory: live array leak: 1.0 arrays", v[("first", "np-leaks")]["reason"])
        self.assertEqual(results["fingerprint"]["adapters"]["fault-adapter"]["backend"], "numpy")

    def test_an_adapter_that_cannot_start_is_infrastructure_exit_3(self):
        r = self.run_suite("--adapter", FAULT_ADAPTER + " --fail-before-listening")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("exited with code 4 before it listened", r.stderr)
        self.assertIn("failing on purpose", r.stderr)
        self.assertFalse(os.path.exists(self.results))

    def test_an_unreachable_remote_is_infrastructure_exit_3(self):
        r = self.run_suite("--remote", f"http://127.0.0.1:{free_port()}")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("/v1/hello", r.stderr)
        self.assertFalse(os.path.exists(self.results))

    def test_remote_with_a_token_that_never_appears_in_output_or_files(self):
        secret = "s3cret-token-4711"
        port = free_port()
        server = subprocess.Popen([sys.executable, os.path.join(HERE, "fault_adapter.py"), "--http", f"127.0.0.1:{port}"],
                                  env=dict(os.environ, ATTNGATE_ADAPTER_TOKEN=secret), stdout=subprocess.PIPE, text=True)
        try:
            self.assertIn("LISTENING", server.stdout.readline())
            url = f"http://127.0.0.1:{port}"
            wrong = self.run_suite("--remote", url, env=dict(os.environ, ATTNGATE_ADAPTER_TOKEN="wrong"))
            self.assertEqual(wrong.returncode, 3, wrong.stdout + wrong.stderr)
            self.assertIn("HTTP 401", wrong.stderr)
            html = os.path.join(self.dir, "report.html")
            r = self.run_suite("--remote", url, "--kernel", "np-ok", "--html", html,
                               env=dict(os.environ, ATTNGATE_ADAPTER_TOKEN=secret))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(len(read_json(self.results)["results"]), 4)
            for path in (self.results, html):
                with open(path) as f:
                    self.assertNotIn(secret, f.read())
            for text in (r.stdout, r.stderr, wrong.stderr):
                self.assertNotIn(secret, text)
        finally:
            server.kill()
            server.wait()
            server.stdout.close()


if __name__ == "__main__":
    main()
