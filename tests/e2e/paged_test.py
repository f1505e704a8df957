"""Paged KV caches and ragged batches end to end: the inputs export with its NaN slots, the
numpy oracle against every paged golden, a version-2 plugin skipped with its reason, the
wrong paged kernels each caught with the right reason beside the built-ins that pass, and
the bench's decode row as JSON."""
import json
import math
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from common import ARGS, attngate, main, read_json, suite_with_goldens  # noqa: E402

PAGED_SUITE = {
    "name": "paged",
    "seed": 31,
    "kernels": ["reference", "native", "flash", {"kernel": "flash", "block_q": 16, "block_k": 32}, "flash-decode"],
    "cases": [
        {"id": "decode_scattered_f32", "paged": {"kv_lens": [40, 70, 128, 1], "page_size": 16, "pages": 20},
         "heads_q": 8, "heads_kv": 2, "head_dim": 32},
        {"id": "mixed_causal_bf16", "paged": {"q_lens": [1, 9, 1], "kv_lens": [33, 50, 64], "page_size": 16},
         "heads_q": 4, "heads_kv": 1, "head_dim": 16, "causal": True, "dtype": "bf16"},
        {"id": "window_softcap_f32", "paged": {"q_lens": [3, 1], "kv_lens": [90, 47], "page_size": 8, "layout": "contiguous"},
         "heads_q": 4, "heads_kv": 2, "head_dim": 16, "head_dim_v": 8, "causal": True, "window": [20, 0],
         "softcap": 5.0, "qk_amplitude": 4.0},
        {"id": "nan_readable_f32", "paged": {"q_lens": [2, 1], "kv_lens": [20, 30], "page_size": 16},
         "heads_q": 2, "heads_kv": 2, "head_dim": 8, "causal": True, "nan": {"tensor": "k", "index": [1, 29, 0, 3]}},
    ],
}

# The wrong kernels' case: ragged kv_lens (the longest not a whole number of pages), some
# whole pages, GQA, a scattered pool with unused pages between the sequences' pages.
FAULT_SUITE = {
    "name": "paged-faults",
    "seed": 9,
    "kernels": ["reference", "native", "flash", "flash-decode"],
    "cases": [
        {"id": "decode_gqa_f32", "paged": {"kv_lens": [37, 64, 100, 16], "page_size": 16, "pages": 24},
         "heads_q": 8, "heads_kv": 2, "head_dim": 16},
    ],
}

WRONG = {
    "paged_past_kv_len": "read past kv_len",
    "paged_page_off_by_one": "read a page outside its table",
    "paged_pages_in_order": "read a page outside its table",
    "paged_gqa_modulo": "max abs error",
}


class PagedWorkspace(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-paged-")
        self.baselines = os.path.join(self.dir, "baselines")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def suite(self, suite):
        return suite_with_goldens(os.path.join(self.dir, suite["name"] + ".json"), suite, self.baselines)

    def export(self, suite_path, case_id):
        out = os.path.join(self.dir, "inputs", case_id)
        r = attngate("inputs", "--suite", suite_path, "--case", case_id, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        return oracle.load_case(out)


class InputsAndOracleTest(PagedWorkspace):
    def test_export_describes_the_layout_and_fills_every_unreadable_slot_with_nan(self):
        path = self.suite(PAGED_SUITE)
        desc, t = self.export(path, "decode_scattered_f32")
        paged = desc["paged"]
        self.assertEqual(set(desc["files"]), {"q", "k_pages", "v_pages", "page_table", "kv_lens", "cu_q_lens"})
        self.assertEqual(t["k_pages"].shape, (20, 16, 2, 32))
        self.assertEqual(t["page_table"].shape, (4, 8))
        self.assertEqual(list(t["kv_lens"]), [40, 70, 128, 1])
        self.assertEqual(list(t["cu_q_lens"]), [0, 1, 2, 3, 4])
        self.assertEqual(paged["layout"], "scattered")
        readable = np.zeros((20, 16), dtype=bool)
        for b, kv_len in enumerate(t["kv_lens"]):
            for j in range(kv_len):
                readable[t["page_table"][b, j // 16], j % 16] = True
        slot_nan = np.isnan(t["k_pages"]).all(axis=(2, 3)) & np.isnan(t["v_pages"]).all(axis=(2, 3))
        np.testing.assert_array_equal(slot_nan, ~readable)
        self.assertFalse(np.isnan(t["k_pages"][readable]).any())

    def test_numpy_oracle_reproduces_every_paged_golden(self):
        path = self.suite(PAGED_SUITE)
        for case in PAGED_SUITE["cases"]:
            with self.subTest(case=case["id"]):
                desc, t = self.export(path, case["id"])
                golden = np.load(os.path.join(self.baselines, "goldens", "paged", case["id"] + ".npy"))
                self.assertIsNone(oracle.golden_mismatch(golden, oracle.attention(desc, t)))


    def test_numpy_oracle_reproduces_every_checked_in_smoke_paged_golden(self):
        root = ARGS.source_dir
        smoke = os.path.join(root, "suites", "smoke.json")
        paged = [c["id"] for c in read_json(smoke)["cases"] if "paged" in c]
        self.assertGreaterEqual(len(paged), 6)
        for case_id in paged:
            with self.subTest(case=case_id):
                desc, t = self.export(smoke, case_id)
                golden = np.load(os.path.join(root, "baselines", "goldens", "smoke", case_id + ".npy"))
                self.assertIsNone(oracle.golden_mismatch(golden, oracle.attention(desc, t)))


class KernelsTest(PagedWorkspace):
    def test_built_in_kernels_pass_every_paged_case(self):
        path = self.suite(PAGED_SUITE)
        out = os.path.join(self.dir, "r.json")
        html = os.path.join(self.dir, "r.html")
        r = attngate("run", "--suite", path, "--baselines", self.baselines, "--checks", "golden,memory", "--out", out, "--html", html)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        rows = read_json(out)["results"]
        self.assertEqual(len(rows), 4 * 5)
        with open(html, encoding="utf-8") as f:
            report = f.read()
        for case in PAGED_SUITE["cases"]:  # each row keeps its case's lengths, and the report shows them
            want = case["paged"]
            q_lens = want.get("q_lens", [1] * len(want["kv_lens"]))
            for row in (x for x in rows if x["case"] == case["id"]):
                got = row["params"]["paged"]
                self.assertEqual((got["q_lens"], got["kv_lens"], got["page_size"], got["layout"]),
                                 (q_lens, want["kv_lens"], want["page_size"], want.get("layout", "scattered")), row["case"])
                self.assertEqual((row["params"]["batch"], row["params"]["seq_q"], row["params"]["seq_k"]),
                                 (len(want["kv_lens"]), sum(q_lens), max(want["kv_lens"])))
            said = f"q_lens [{', '.join(map(str, q_lens))}], kv_lens [{', '.join(map(str, want['kv_lens']))}]"
            self.assertIn(said, report, case["id"])
        for row in rows:
            for check in row["checks"]:  # numerics has no baseline of its own yet: a skip that says so
                self.assertEqual(check["verdict"], "skip" if check["check"] == "numerics" else "pass",
                                 (row["case"], row["kernel"], check["check"], check["reason"]))

    def test_version_2_plugin_loads_and_skips_paged_cases_with_the_reason(self):
        suite = dict(PAGED_SUITE, name="mixed-abi", cases=PAGED_SUITE["cases"][:1] + [
            {"id": "dense_f32", "seq_q": 32, "heads_q": 2, "head_dim": 16, "causal": True}])
        path = self.suite(suite)
        out = os.path.join(self.dir, "r.json")
        r = attngate("run", "--suite", path, "--baselines", self.baselines, "--checks", "golden", "--out", out,
                     "--plugin", ARGS.v2_plugin)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        rows = {(x["case"], x["kernel"]): x for x in read_json(out)["results"]}
        dense = rows[("dense_f32", "old-abi")]["checks"][0]
        self.assertEqual(dense["verdict"], "pass")
        paged = rows[("decode_scattered_f32", "old-abi")]["checks"][0]
        self.assertEqual(paged["verdict"], "skip")
        self.assertIn("ABI version 2", paged["reason"])
        self.assertIn("version 3", paged["reason"])
        listed = attngate("kernels", "--plugin", ARGS.v2_plugin)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("old-abi", listed.stdout)

    def test_wrong_paged_kernels_are_caught_with_the_right_reason(self):
        path = self.suite(FAULT_SUITE)
        out = os.path.join(self.dir, "r.json")
        r = attngate("run", "--suite", path, "--baselines", self.baselines, "--checks", "golden", "--out", out,
                     "--plugin", ARGS.faulty_plugin, *[a for k in [*FAULT_SUITE["kernels"], *WRONG] for a in ("--kernel", k)])
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr)
        rows = {x["kernel"]: x for x in read_json(out)["results"]}
        for innocent in FAULT_SUITE["kernels"]:
            golden = next(c for c in rows[innocent]["checks"] if c["check"] == "golden")
            self.assertEqual(golden["verdict"], "pass", (innocent, golden["reason"]))
        for kernel, why in WRONG.items():
            with self.subTest(kernel=kernel):
                golden = next(c for c in rows[kernel]["checks"] if c["check"] == "golden")
                self.assertEqual(golden["verdict"], "fail", golden["reason"])
                self.assertIn(why, golden["reason"])


class BenchJsonTest(unittest.TestCase):
    def test_decode_row_stands_beside_the_bandwidth_of_the_same_run(self):
        r = attngate("bench", "--rows", "decode", "--decode-sequences", "2", "--decode-kv-len", "512", "--decode-heads", "8",
                     "--decode-kv-heads", "2", "--decode-d", "64", "--threads", "1", "--repetitions", "2",
                     "--min-time", "0.01", "--stream-mib", "64", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["schema"], "attngate-bench/1")
        self.assertEqual(doc["rows"], [])
        bandwidth = doc["memory_bandwidth"]
        self.assertEqual([b["threads"] for b in bandwidth], [1])
        self.assertEqual(bandwidth[0]["array_bytes"], 64 << 20)
        self.assertEqual({d["kernel"] for d in doc["decode"]}, {"flash-decode", "flash"})
        for d in doc["decode"]:
            self.assertEqual(d["kv_bytes"], 2 * 512 * 2 * 2 * 64 * 2)  # sequences x kv_len x Hkv x (K, V) x D x bf16
            self.assertEqual(len(d["samples_s"]), 2)
            self.assertTrue(math.isclose(d["kv_gb_per_s"], d["kv_bytes"] / d["seconds"] / 1e9, rel_tol=1e-9))
            best = max(d["bandwidth"]["copy_gb_per_s"], d["bandwidth"]["triad_gb_per_s"])
            self.assertTrue(math.isclose(d["ratio"], d["kv_gb_per_s"] / best, rel_tol=1e-9))
            self.assertTrue(math.isclose(d["tokens_per_s"], 2 / d["seconds"], rel_tol=1e-9))
        self.assertIn("kernel_path", doc["machine"])

    def test_bad_decode_shape_is_a_usage_error(self):
        r = attngate("bench", "--rows", "decode", "--decode-heads", "6", "--decode-kv-heads", "4", "--json")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--decode-kv-heads 4: expected a divisor of --decode-heads 6", r.stderr)


if __name__ == "__main__":
    import argparse
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--v2-plugin", required=True)
    known, rest = extra.parse_known_args()
    ARGS.v2_plugin = os.path.abspath(known.v2_plugin)
    sys.argv = [sys.argv[0], *rest]
    main()
