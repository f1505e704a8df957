"""tpu-inference's ragged paged attention v3 as tpu-inference-rpa (issue 36): its TPU program
lowered for v6e on this CPU and checked on jax-smoke's paged cases, deterministic across two
runs; its golden rows skips naming what the TPU interpreter raised (measured by the adapter's
probe, not written here); head_dim 64 declined naming kernel_hd64; the loader imports the
kernel without the package's `__init__` (no vLLM, no torch) and refuses another release by
name; the jax 0.7.2 venv, which lacks it, says so while its other kernels serve.

Skips (exit 77) when ci/install-deps.sh has not made the venvs."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ARGS, TempDirTest, attngate, jax_venv_python, main, read_json, require_jax_venvs,  # noqa: E402
                    suite_with_goldens)

RPA = "attngate_jax.kernels.tpu_inference:make"
REFERENCE = "tpu-inference-rpa-reference"
# Paged cases beyond jax-smoke's: f32 and bf16, GQA, a window, soft-cap, non-causal prefill
# chunks (use_causal_mask off), head_dim 128, and the two declines.
MAPPING_CASES = [
    {"id": "decode_gqa_softcap_f32", "paged": {"kv_lens": [33, 96], "page_size": 16}, "heads_q": 8, "heads_kv": 2,
     "head_dim": 32, "causal": True, "softcap": 20.0, "qk_amplitude": 4.0},
    {"id": "mixed_window_bf16", "paged": {"q_lens": [1, 8, 3], "kv_lens": [50, 64, 90], "page_size": 16}, "heads_q": 4,
     "heads_kv": 1, "head_dim": 32, "causal": True, "window": [32, 0], "dtype": "bf16"},
    {"id": "mixed_noncausal_f32", "paged": {"q_lens": [4, 1, 6], "kv_lens": [20, 48, 33], "page_size": 16,
     "layout": "contiguous"}, "heads_q": 4, "heads_kv": 2, "head_dim": 32},
    {"id": "decode_d128_bf16", "paged": {"kv_lens": [40, 70, 17], "page_size": 16}, "heads_q": 2, "heads_kv": 1,
     "head_dim": 128, "causal": True, "dtype": "bf16"},
    {"id": "mixed_noncausal_window_f32", "paged": {"q_lens": [3, 2], "kv_lens": [20, 30], "page_size": 8}, "heads_q": 2,
     "heads_kv": 1, "head_dim": 32, "window": [-1, 0]},
    {"id": "decode_d64_f32", "paged": {"kv_lens": [20, 30], "page_size": 8}, "heads_q": 2, "heads_kv": 1, "head_dim": 64},
]


def adapter(*args, line="new"):
    return " ".join([jax_venv_python(line), os.path.join(ARGS.source_dir, "kernels", "jax", "adapter.py"), "--interpret",
                     "tpu", *args])


def paged_cases():
    suite = read_json(os.path.join(ARGS.source_dir, "suites", "jax-smoke.json"))
    return {c["id"]: c for c in suite["cases"] if "paged" in c}


def in_venv(code, env_extra=None):
    """Runs code in .venv/jax-new with the adapter's package importable; its last stdout line is JSON."""
    env = {**os.environ, "PYTHONPATH": os.path.join(ARGS.source_dir, "kernels", "jax"), **(env_extra or {})}
    r = subprocess.run([jax_venv_python("new"), "-c", code], env=env, capture_output=True, text=True, timeout=600)
    return r


class TpuInferenceRpaTest(TempDirTest):
    def run_smoke(self, out):
        # jax-smoke names the adapter's own kernels, so they come from one adapter (not run:
        # --kernel) and tpu-inference-rpa from a second one, whose kernel joins every case.
        t0 = time.monotonic()
        r = attngate("run", "--suite", "jax-smoke", "--adapter", adapter(), "--adapter", adapter("--no-builtins", "--kernels", RPA),
                     "--kernel", "tpu-inference-rpa", "--checks", "golden", "--progress-every", "0", "--out", out,
                     cwd=ARGS.source_dir, timeout=900)
        print(f"jax-smoke with tpu-inference-rpa alone: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        rows = {(e["case"], c["check"]): c for e in read_json(out)["results"] if e["kernel"] == "tpu-inference-rpa"
                for c in e["checks"]}
        return read_json(out), rows

    def test_program_checked_on_the_paged_cases_goldens_skip_with_the_measured_cause(self):
        out = self.path("run", "results.json")
        results, rows = self.run_smoke(out)
        self.assertEqual(results["fingerprint"]["adapters"]["attngate-jax"]["kernel_packages"].get("tpu-inference"), "0.25.0",
                         results["fingerprint"]["adapters"])
        cases = paged_cases()
        lowered = []
        for case_id, case in cases.items():
            golden = rows[(case_id, "golden")]
            self.assertEqual(golden["verdict"], "skip", golden)
            if case["head_dim"] == 64:  # vLLM runs kernel_hd64 there: declined before anything runs, lowered neither
                self.assertIn("kernel_hd64", golden["reason"])
                self.assertNotIn((case_id, "program"), rows)
                continue
            program = rows[(case_id, "program")]
            # The interpreter's own failure, measured by the probe (jax 0.10.2's DMA path).
            self.assertRegex(golden["reason"], r"raises in TPU interpret mode on jax 0\.10\.2 .*: \w+Error: .+")
            self.assertEqual(program["verdict"], "pass", program)
            m = program["metrics"]
            self.assertEqual(m["target"], "v6e")
            mosaic = [n for n in m["part_names"] if n.startswith("mosaic ")]
            # Two Mosaic bodies (decode and mixed), named by the kernel with its block sizes.
            self.assertEqual(len(mosaic), 2, m["part_names"])
            self.assertTrue(all(n.startswith("mosaic RPA") for n in mosaic), mosaic)
            if case.get("window"):  # the window reaches the kernel: its bodies are named for it
                self.assertTrue(all(f"sw_{case['window'][0] + 1}" in n for n in mosaic), mosaic)
            for sha in m["part_sha256"]:
                self.assertTrue(os.path.exists(self.path("run", "programs", sha + ".mlir")), sha)
            lowered.append(case_id)
        self.assertGreaterEqual(len(lowered), 4, lowered)
        # A second run at the same --out: every program identical (the lowering is deterministic).
        _, again = self.run_smoke(out)
        for case_id in lowered:
            c = again[(case_id, "program")]
            self.assertEqual((c["verdict"], c["metrics"]["status"]), ("pass", "identical"), (case_id, c))

    def test_the_mapping_passes_goldens_through_the_kernels_own_reference(self):
        # The kernel cannot run here; its reference can, on the same prepared arguments and
        # keyword arguments (tests/e2e/jax_kernels/rpa_reference.py): a wrong layout, page
        # table, distribution or mask fails attngate's goldens.
        baselines = self.path("baselines")
        suite = suite_with_goldens(self.path("rpa.json"), {"name": "rpa-mapping", "seed": 36, "timeout_s": 300,
                                                           "kernels": [REFERENCE], "cases": MAPPING_CASES}, baselines)
        env = dict(os.environ, PYTHONPATH=os.path.join(ARGS.source_dir, "tests", "e2e", "jax_kernels"))
        out = self.path("mapping.json")
        r = attngate("run", "--suite", suite, "--baselines", baselines, "--adapter",
                     adapter("--no-builtins", "--kernels", "rpa_reference:make"), "--checks", "golden", "--progress-every", "0",
                     "--out", out, cwd=ARGS.source_dir, env=env, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        golden = {e["case"]: c for e in read_json(out)["results"] for c in e["checks"] if c["check"] == "golden"}
        for case_id in ("decode_gqa_softcap_f32", "mixed_window_bf16", "mixed_noncausal_f32", "decode_d128_bf16"):
            self.assertEqual(golden[case_id]["verdict"], "pass", (case_id, golden[case_id]))
        self.assertEqual(golden["mixed_noncausal_window_f32"]["verdict"], "skip")
        self.assertIn("without causal on a ragged batch", golden["mixed_noncausal_window_f32"]["reason"])
        self.assertIn("kernel_hd64", golden["decode_d64_f32"]["reason"])

    def test_the_loader_skips_the_package_init_and_refuses_another_release(self):
        probe = ("import json, sys\n"
                 "from attngate_jax.kernels import tpu_inference as t\n"
                 "print(json.dumps({'kernel': t.rpa.__name__, 'vllm': 'vllm' in sys.modules, 'torch': 'torch' in sys.modules,"
                 " 'init_ran': hasattr(sys.modules['tpu_inference'], '__file__'), 'version': t.rpa.get_tpu_version()}))")
        r = in_venv(probe)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        got = json.loads(r.stdout.splitlines()[-1])
        self.assertEqual(got, {"kernel": "tpu_inference.kernels.ragged_paged_attention.v3.kernel", "vllm": False,
                               "torch": False, "init_ran": False, "version": -1})  # -1: no target registered here
        # The package's own __init__ needs vLLM, which is not installed: the loader is what makes it importable.
        r = in_venv("import tpu_inference")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ModuleNotFoundError", r.stderr)
        # Another release, as importlib.metadata sees it first on sys.path: refused by name.
        other = self.path("other")
        os.makedirs(os.path.join(other, "tpu_inference-0.32.0.dist-info"))
        with open(os.path.join(other, "tpu_inference-0.32.0.dist-info", "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: tpu-inference\nVersion: 0.32.0\n")
        env = {"PYTHONPATH": other + os.pathsep + os.path.join(ARGS.source_dir, "kernels", "jax")}
        r = in_venv("from attngate_jax.kernels import tpu_inference", env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError: tpu-inference 0.32.0 is installed; attngate_jax.kernels.tpu_inference loads "
                      "tpu-inference 0.25.0 only", r.stderr)

    def test_absent_from_the_old_venv_and_says_so(self):
        r = attngate("kernels", "--adapter", adapter("--kernels", RPA, line="old"), cwd=ARGS.source_dir, timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"--kernels {RPA}: cannot import attngate_jax.kernels.tpu_inference: ImportError: tpu-inference is not "
                      "installed", r.stderr)
        self.assertIn("pallas-flash", r.stdout)


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    require_jax_venvs("new", "old")
    main()
