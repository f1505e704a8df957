"""The HTTP store against a real WebDAV server the test starts itself (Apache httpd with
mod_dav_fs, from Debian's apache2-bin, on loopback) and a fault-injecting proxy in front of
it: goldens and baselines round-trip, the bearer token never shows, and for the server
down, 500 answers, a slow server, a truncated body, a body over the size limit and a
conflicting writer, nothing stored is lost and the exit code is 3 (infrastructure), never
1 (regression)."""
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import dav_server  # noqa: E402
from common import ARGS, attngate, main, read_json, write_json  # noqa: E402
import results_schema  # noqa: E402

TOKEN = "s3cret-token-7f1c"
SUITE = {
    "name": "remote", "seed": 3, "memory_calls": 4,
    "kernels": ["native", "flash"],
    "cases": [
        {"id": "causal_f32", "seq_q": 96, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "plain_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16},
    ],
}


class HttpStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = dav_server.DavServer(TOKEN).start()
        cls.proxy = dav_server.FaultProxy(cls.server.port)
        cls.dir = tempfile.mkdtemp(prefix="attngate-http-")
        cls.suite = os.path.join(cls.dir, "remote.json")
        write_json(cls.suite, SUITE)
        r = cls.attngate_env("golden", "generate", "--suite", cls.suite, "--store", cls.server.url)
        assert r.returncode == 0, r.stdout + r.stderr

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @staticmethod
    def env(**extra):
        e = dict(os.environ, ATTNGATE_STORE_TOKEN=TOKEN, ATTNGATE_STORE_TIMEOUT="10", ATTNGATE_STORE_CONNECT_TIMEOUT="2",
                 ATTNGATE_STORE_RETRIES="2")
        e.pop("ATTNGATE_STORE", None)
        e.update(extra)
        return e

    @classmethod
    def attngate_env(cls, *args, **env):
        return attngate(*args, env=cls.env(**env), timeout=300)

    def run_remote(self, store, out="r.json", **env):
        return self.attngate_env("run", "--suite", self.suite, "--store", store, "--checks", "golden,memory",
                                 "--out", os.path.join(self.dir, out), **env)

    def assertNoToken(self, *texts):
        for t in texts:
            self.assertNotIn(TOKEN, t)

    def assertInfraAndNothingLost(self, r, before, why):
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn(why, r.stderr)
        self.assertEqual(self.server.files(), before)
        self.assertNoToken(r.stdout, r.stderr)

    def test_1_goldens_and_baselines_round_trip_without_showing_the_token(self):
        self.proxy.set(None)
        self.assertIn("goldens/remote/manifest.json", self.server.files())
        r = self.run_remote(self.server.url)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        results = os.path.join(self.dir, "r.json")
        r = self.attngate_env("baseline", "update", "--results", results, "--store", self.server.url, "--checks", "memory",
                              "--yes", "--allow-in-ci", "--reason", "first")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("memory/remote.json", self.server.files())
        html = os.path.join(self.dir, "r.html")
        r = self.attngate_env("run", "--suite", self.suite, "--store", self.server.url, "--checks", "golden,memory",
                              "--out", results, "--html", html, "--append-history")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        memory = [c for e in read_json(results)["results"] for c in e["checks"] if c["check"] == "memory"]
        self.assertTrue(all("peak_baseline_bytes" in c["metrics"] for c in memory), memory[0])
        with open(results) as f, open(html) as g:
            self.assertNoToken(r.stdout, r.stderr, f.read(), g.read())
        # Baselines, goldens, history and the whole results, under one base URL.
        stored = {k: v for k, v in self.server.files().items() if k.startswith("results/remote/")}
        self.assertEqual(len(stored), 1, sorted(self.server.files()))
        self.assertEqual(json.loads(next(iter(stored.values()))), read_json(results))
        r = self.attngate_env("history", "--suite", "remote", "--machine-class", read_json(results)["machine_class"],
                              "--store", self.server.url, "--metric", "peak_bytes")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("over 1 run(s)", r.stdout)

    def test_2_a_wrong_token_is_infrastructure_and_not_echoed(self):
        before = self.server.files()
        r = self.run_remote(self.server.url, ATTNGATE_STORE_TOKEN="wrong-token-x")
        self.assertInfraAndNothingLost(r, before, "not authorized")
        self.assertNotIn("wrong-token-x", r.stderr)

    def test_3_server_down(self):
        before = self.server.files()
        start = time.monotonic()
        r = self.run_remote(f"http://127.0.0.1:{dav_server.free_port()}/store/")
        self.assertInfraAndNothingLost(r, before, "store request failed")
        self.assertLess(time.monotonic() - start, 60)

    def test_4_500_answers_are_retried_then_infrastructure(self):
        before = self.server.files()
        self.proxy.set("500", count=2)  # two failures, then the real server: retries get through
        r = self.run_remote(self.proxy.url())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.proxy.set("500")
        r = self.run_remote(self.proxy.url())
        self.assertInfraAndNothingLost(r, before, "HTTP 500")
        self.assertEqual(self.proxy.requests.get("GET"), 3)  # one try and two retries, then it gave up

    def test_5_slow_server_times_out(self):
        before = self.server.files()
        self.proxy.set("slow", delay=4)
        start = time.monotonic()
        r = self.run_remote(self.proxy.url(), ATTNGATE_STORE_TIMEOUT="1", ATTNGATE_STORE_RETRIES="1")
        self.proxy.set(None)
        self.assertInfraAndNothingLost(r, before, "no complete answer within 1 s")
        self.assertLess(time.monotonic() - start, 30)

    def test_6_truncated_body(self):
        before = self.server.files()
        self.proxy.set("truncate")
        r = self.run_remote(self.proxy.url())
        self.proxy.set(None)
        self.assertInfraAndNothingLost(r, before, "store request failed")

    def test_7_body_over_the_size_limit(self):
        before = self.server.files()
        self.proxy.set("oversize", size=8 << 20)
        r = self.run_remote(self.proxy.url(), ATTNGATE_STORE_MAX_BYTES="1000000")
        self.proxy.set(None)
        self.assertInfraAndNothingLost(r, before, "larger than the 1000000 B limit")

    def test_8_a_conflicting_writer_loses_nothing(self):
        self.proxy.set(None)
        results = os.path.join(self.dir, "c.json")
        r = self.attngate_env("run", "--suite", self.suite, "--store", self.server.url, "--checks", "golden,memory", "--out", results)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        update = [ARGS.attngate, "baseline", "update", "--results", results, "--store", self.server.url, "--checks", "memory",
                  "--allow-in-ci", "--all"]  # every row is unchanged here: --all reviews them
        # Writer A reviews interactively and stops at its first question...
        master, slave = pty.openpty()
        a = subprocess.Popen(update + ["--reason", "writer A"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=self.env())
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 60
        while b"accept causal_f32" not in seen and time.monotonic() < deadline:
            if select.select([a.stdout], [], [], 1)[0]:
                seen += os.read(a.stdout.fileno(), 4096)
        self.assertIn(b"accept causal_f32", seen)
        # ... while writer B accepts the causal rows and writes first.
        r = self.attngate_env("baseline", "update", "--results", results, "--store", self.server.url, "--checks", "memory",
                              "--only", "causal*", "--all", "--yes", "--allow-in-ci", "--reason", "writer B")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        after_b = self.server.files()["memory/remote.json"]
        os.write(master, b"A\n")  # A accepts all: its write must be refused, naming B's change
        out, err = a.communicate(timeout=120)
        os.close(master)
        self.assertEqual(a.returncode, 3, (seen + out).decode() + err.decode())
        err = err.decode()
        self.assertIn("changed since it was read", err)
        self.assertIn("causal_f32/flash: changed by", err)
        self.assertIn('reason "writer B"', err)
        self.assertIn("re-run `attngate baseline update`", err)
        self.assertEqual(self.server.files()["memory/remote.json"], after_b)  # B's update intact
        # A re-runs against the new baselines and now writes.
        r = self.attngate_env("baseline", "update", "--results", results, "--store", self.server.url, "--checks", "memory",
                              "--all", "--yes", "--allow-in-ci", "--reason", "writer A again")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(b"writer A again", self.server.files()["memory/remote.json"])

    def test_9_concurrent_history_appends_all_land(self):
        self.proxy.set(None)
        # Six runs (one results file appended twice is one data point, refused the second time).
        with open(os.path.join(self.dir, "r.json")) as f:
            run = json.load(f)
        paths = []
        for i in range(6):
            paths.append(os.path.join(self.dir, f"r{i}.json"))
            with open(paths[-1], "w") as f:
                json.dump(dict(run, started_at=f"2026-12-04T10:0{i}:00Z"), f)
        procs = [subprocess.Popen([ARGS.attngate, "history", "--append", path, "--store", self.server.url],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env()) for path in paths]
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
        files = self.server.files()
        runs = [k for k in files if k.startswith("history/remote/") and "/fingerprints/" not in k and "/appended/" not in k]
        self.assertGreaterEqual(len(runs), 6)
        for k in runs:  # each record the concurrent appends stored
            results_schema.validate_doc(json.loads(files[k]), k)


if __name__ == "__main__":
    main()
