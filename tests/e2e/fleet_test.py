"""End-to-end tests of the fleet features with the real binary and a directory store: a
4-shard run merged equals the unsharded run (cases, order and verdicts; timings aside),
merge refuses shards that do not belong together and names missing ones, every run can
append to the history, `history` prints a series, and `report --trends` draws it."""
import glob
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, write_json  # noqa: E402

SUITE = {
    "name": "fleet", "seed": 7,
    "perf": {"repetitions": 3, "min_time_s": 0.001},
    "memory_calls": 4,
    "kernels": ["native", "flash", "causal_off_by_one", "leaky"],
    "cases": [
        {"id": "causal_f32", "seq_q": 160, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "plain_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16},
        {"id": "gqa_bf16", "seq_q": 64, "seq_k": 96, "heads_q": 4, "heads_kv": 2, "head_dim": 16, "dtype": "bf16"},
        {"id": "window_f32", "seq_q": 96, "heads_q": 2, "head_dim": 32, "window": [16, 0]},
        {"id": "big_f32", "seq_q": 256, "heads_q": 4, "head_dim": 32},
    ],
}


def verdicts(path):
    """(case, kernel) -> [(check, verdict, perf status)] in file order, and the workloads' verdicts."""
    r = read_json(path)
    rows = []
    for e in r["results"]:
        checks = [(c["check"], c["verdict"], c["metrics"].get("status")) for c in e["checks"]]
        rows.append(((e["case"], e["kernel"]), checks))
    return rows, [(w["workload"], w["verdict"]) for w in r["workloads"]], r["verdict"]


class FleetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="attngate-fleet-")
        cls.suite = os.path.join(cls.dir, "fleet.json")
        write_json(cls.suite, SUITE)
        cls.store = os.path.join(cls.dir, "store")
        os.makedirs(os.path.join(cls.store, "workloads"))
        shutil.copy(os.path.join(ARGS.source_dir, "baselines", "pricing.json"), cls.store)
        write_json(os.path.join(cls.store, "workloads", "serving.json"), {
            "name": "serving", "device_class": "gcp-e2-standard-2", "kernel": "flash",
            "shapes": [{"case": "plain_f32", "requests_per_second": 5}, {"case": "big_f32", "requests_per_second": 1}],
            "memory_headroom_bytes": 1e9, "restart_interval_hours": 24})
        r = attngate("golden", "generate", "--suite", cls.suite, "--store", cls.store)
        assert r.returncode == 0, r.stdout + r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_suite(self, out, *extra):
        return attngate("run", "--suite", self.suite, "--store", self.store, "--plugin", ARGS.faulty_plugin,
                        "--machine", "fleet-test", "--out", out, *extra)

    def test_four_shards_merged_equal_the_unsharded_run(self):
        whole = os.path.join(self.dir, "whole.json")
        r = self.run_suite(whole)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # the faulty kernels fail
        shards = []
        for i in range(1, 5):
            out = os.path.join(self.dir, f"shard-{i}.json")
            md = os.path.join(self.dir, f"shard-{i}.md")
            r = self.run_suite(out, "--shard", f"{i}/4", "--markdown", md)
            self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
            shards.append(out)
            # A shard's PASS is not the suite's: each report says which part of the plan it holds.
            said = f"shard {i} of 4: {len(read_json(out)['shard']['mine'])} of the plan's 20 case × kernel rows ran here"
            self.assertIn(said, r.stdout)
            with open(md) as f:
                self.assertIn(said, f.read())
        planned = read_json(shards[0])["shard"]["plan"]
        self.assertEqual(len(planned), 20)
        mine = [read_json(s)["shard"]["mine"] for s in shards]
        self.assertEqual(sorted(sum(mine, [])), sorted(planned))  # a partition of the plan
        self.assertTrue(all(m for m in mine), mine)  # every runner has work
        merged = os.path.join(self.dir, "merged.json")
        html = os.path.join(self.dir, "merged.html")
        r = attngate("merge", *shards, "-o", merged, "--store", self.store, "--html", html)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(verdicts(merged), verdicts(whole))
        self.assertTrue(os.path.getsize(html) > 1000)
        self.assertNotIn("shard", read_json(merged))
        with open(html) as f:
            self.assertNotIn('id="shard"', f.read())  # the merge is the suite's verdict

        # A missing shard is named; shards of another suite are refused.
        r = attngate("merge", *shards[:3], "-o", os.path.join(self.dir, "x.json"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("missing shard(s) 4 of 4", r.stderr)
        other = read_json(shards[3])
        other["suite"] = "another"
        write_json(os.path.join(self.dir, "other.json"), other)
        r = attngate("merge", *shards[:3], os.path.join(self.dir, "other.json"), "-o", os.path.join(self.dir, "x.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("shards of different suites do not merge", r.stderr)
        reseeded = read_json(shards[3])
        reseeded["shard"]["seed"] = 8
        write_json(os.path.join(self.dir, "reseeded.json"), reseeded)
        r = attngate("merge", *shards[:3], os.path.join(self.dir, "reseeded.json"), "-o", os.path.join(self.dir, "x.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("--force", r.stderr)
        r = attngate("merge", *shards[:3], os.path.join(self.dir, "reseeded.json"), "-o", os.path.join(self.dir, "x.json"), "--force")
        self.assertEqual(r.returncode, 1, r.stderr)

    def test_history_append_print_and_trends(self):
        out = os.path.join(self.dir, "h.json")
        local = []
        for _ in range(2):
            r = self.run_suite(out, "--checks", "golden,memory", "--kernel", "flash", "--append-history")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("history: recorded this run as", r.stdout)
            local.append(read_json(out))
        records = glob.glob(os.path.join(self.store, "history", "fleet", "*", "*", "*.json"))
        self.assertEqual(len(records), 2)
        for rec in records:
            self.assertLess(os.path.getsize(rec), 2000)
            # The whole results sit beside each record in the store, under the same run id.
            full = rec.replace(os.path.join(self.store, "history"), os.path.join(self.store, "results"), 1)
            self.assertTrue(os.path.exists(full), full)
            self.assertIn(read_json(full), local)
        self.assertEqual(len(glob.glob(os.path.join(self.store, "history", "fleet", "fingerprints", "*.json"))), 1)
        for suite in ("fleet", self.suite):  # a name, or the suite's file (attngate.toml's `suite` is one)
            r = attngate("history", "--suite", suite, "--machine", "fleet-test", "--metric", "max_abs_error", "--store", self.store)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("plain_f32 / flash — max_abs_error over 2 run(s)", r.stdout)
        r = attngate("history", "--suite", "fleet", "--machine", "fleet-test", "--json", "--store", self.store, "--metric", "peak_bytes")
        series = json.loads(r.stdout)
        self.assertEqual(len(series), 5)
        self.assertEqual(len(series[0]["values"]), 2)
        html = os.path.join(self.dir, "trend.html")
        r = attngate("report", out, "--html", html, "--store", self.store, "--trends")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(html) as f:
            page = f.read()
        self.assertIn('id="trends"', page)
        self.assertIn("trend-chart", page)

    def test_a_suite_name_cannot_leave_the_store(self):
        bad = dict(SUITE, name="..")
        path = os.path.join(self.dir, "bad.json")
        write_json(path, bad)
        r = attngate("golden", "generate", "--suite", path, "--store", self.store)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("cannot name a stored object", r.stderr)


if __name__ == "__main__":
    main()
