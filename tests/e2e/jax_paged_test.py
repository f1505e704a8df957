"""The paged kernels through the JAX adapter (issue 22): jax-smoke's paged cases run by
`attngate run` with an adapter in `--interpret auto` (TPU interpret mode on this CPU):
pallas-paged passes its goldens on the decode cases, pallas-ragged-paged is a skip naming
what ragged_paged_attention raises here, xla-paged passes every paged case; two wrong
mappings of paged_attention (GQA heads modulo Hkv, q not pre-scaled) fail their goldens
while pallas-paged passes beside them; jax 0.7.2 against 0.10.2 on a paged case through
`ab`. (nightly's paged cases are validated by verdicts_test; never executed in CI.)

Skips (exit 77) when ci/install-deps.sh has not made the venvs."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, TempDirTest, attngate, jax_venv_python, main, read_json, require_jax_venvs  # noqa: E402

PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_kernels")
DECODE = ("paged_decode_ragged_kv_bf16", "paged_decode_gqa_softcap_bf16", "paged_decode_nan_readable_bf16")
MIXED = ("paged_mixed_window_softcap_f32", "paged_mixed_contiguous_bf16")


def adapter(*args, line="new", mode="auto"):
    return " ".join([jax_venv_python(line), os.path.join(ARGS.source_dir, "kernels", "jax", "adapter.py"),
                     "--interpret", mode, *args])


def cases(*ids):
    return [a for i in ids for a in ("--case", i)]


def verdicts(rows):
    return {(e["case"], e["kernel"]): e for e in rows}


class JaxPagedTest(TempDirTest):
    def assertGoldenPass(self, row):
        self.assertEqual(row["verdict"], "pass", row.get("reason"))
        golden = {c["check"]: c for c in row["checks"]}["golden"]
        self.assertEqual(golden["verdict"], "pass")
        self.assertLessEqual(golden["metrics"]["max_abs_error"], golden["metrics"]["tolerance"])

    def test_paged_kernels_on_jax_smoke_in_tpu_interpret_mode(self):
        out = self.path("paged.json")
        r = attngate("run", "--suite", "jax-smoke", "--adapter", adapter(), *cases(*DECODE, *MIXED), "--checks", "golden",
                     "--out", out, cwd=ARGS.source_dir, timeout=1200)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        results = read_json(out)
        self.assertEqual(results["fingerprint"]["adapters"]["attngate-jax"]["interpret_mode"], "tpu")
        rows = verdicts(results["results"])
        self.assertEqual(len(rows), 15)
        for case in DECODE:
            self.assertGoldenPass(rows[(case, "pallas-paged")])
        for case in MIXED:  # prefill chunks are not among its features: the harness skips them, naming it
            skip = rows[(case, "pallas-paged")]
            self.assertEqual(skip["verdict"], "skip")
            self.assertIn("kernel does not support: ", skip["reason"])
            self.assertIn("ragged", skip["reason"])
        for case in (*DECODE, *MIXED):
            self.assertGoldenPass(rows[(case, "xla-paged")])
            ragged = rows[(case, "pallas-ragged-paged")]
            self.assertEqual(ragged["verdict"], "skip")
            self.assertIn("ragged_paged_attention raises in TPU interpret mode on jax 0.10.2", ragged["reason"])
            self.assertIn("AttributeError: 'ReshapeTransform' object has no attribute 'indices'", ragged["reason"])
        # The readable NaN still reaches its sequence's outputs (the golden has them and the
        # pass matched them NaN for NaN): zeros replace only the unreadable slots pallas-paged
        # declares it loads.
        golden = np.load(os.path.join(ARGS.source_dir, "baselines", "goldens", "jax-smoke", "paged_decode_nan_readable_bf16.npy"))
        self.assertTrue(np.isnan(golden).any())
        for kernel in ("pallas-paged", "xla-paged"):
            metrics = {c["check"]: c for c in rows[("paged_decode_nan_readable_bf16", kernel)]["checks"]}["golden"]["metrics"]
            self.assertFalse(metrics.get("dropped_nan"), kernel)

    def test_wrong_paged_mappings_fail_their_goldens_beside_the_right_one(self):
        out = self.path("wrong.json")
        env = dict(os.environ, PYTHONPATH=PLUGINS)
        wrong = ("wrong-paged-gqa-modulo", "wrong-paged-unscaled", "wrong-paged-undeclared-reads")
        only = [a for k in ("pallas-paged", *wrong) for a in ("--kernel", k)]
        r = attngate("run", "--suite", "jax-smoke", "--adapter", adapter(mode="hlo"),
                     "--adapter", adapter("--no-builtins", "--kernels", "wrong_paged:make", mode="hlo"),
                     *only, *cases("paged_decode_gqa_softcap_bf16"), "--checks", "golden", "--out", out,
                     cwd=ARGS.source_dir, env=env, timeout=900)
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr)
        rows = verdicts(read_json(out)["results"])
        self.assertGoldenPass(rows[("paged_decode_gqa_softcap_bf16", "pallas-paged")])
        for kernel in wrong[:2]:
            row = rows[("paged_decode_gqa_softcap_bf16", kernel)]
            self.assertEqual(row["verdict"], "fail", kernel)
            self.assertIn("golden: max abs error", row["reason"])
        # kv_len 33 is not a whole number of pages: the NaN past it reach the outputs.
        row = rows[("paged_decode_gqa_softcap_bf16", "wrong-paged-undeclared-reads")]
        self.assertEqual(row["verdict"], "fail")
        golden = {c["check"]: c for c in row["checks"]}["golden"]["metrics"]
        self.assertGreater(golden["new_nonfinite"], 0)

    def test_ab_from_jax_0_7_2_to_0_10_2_on_a_paged_case(self):
        out = self.path("ab.json")
        only = [a for k in ("pallas-paged", "xla-paged") for a in ("--kernel", k)]
        r = attngate("ab", "--suite", "jax-smoke", "--a-adapter", adapter(line="old", mode="hlo"),
                     "--b-adapter", adapter(mode="hlo"), *only, *cases("paged_decode_ragged_kv_bf16"), "--rounds", "2",
                     "--min-time", "0.001", "--out", out, cwd=ARGS.source_dir, timeout=900)
        self.assertIn(r.returncode, (0, 1), r.stdout[-3000:] + r.stderr)
        rows = read_json(out)["results"]
        seen = set()
        for e in rows:
            for c in e["checks"]:
                if c["check"] == "numerics" and c["metrics"].get("status") in ("changed", "identical"):
                    self.assertTrue(c["metrics"]["exact"])  # both outputs at hand: diffed element by element
                    seen.add(e["kernel"])
        self.assertEqual(seen, {"pallas-paged", "xla-paged"})


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    require_jax_venvs("new", "old")
    main()
