"""End-to-end tests of the attngate CLI: real binary, real files, exit codes as the
architecture promises, and an independent numpy oracle for the checked-in goldens."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from common import ARGS, GoldenWorkspace, attngate, main  # noqa: E402

TINY_SUITE = {
    "name": "tiny",
    "seed": 11,
    "kernels": ["reference", "native", "flash", {"kernel": "flash", "block_q": 16, "block_k": 32}],
    "cases": [
        {"id": "causal_f32", "seq_q": 200, "heads_q": 2, "head_dim": 16, "causal": True},
        {"id": "gqa_bf16", "seq_q": 64, "seq_k": 96, "heads_q": 4, "heads_kv": 2, "head_dim": 16, "dtype": "bf16"},
        {"id": "large_logits_f32", "seq_q": 64, "heads_q": 2, "head_dim": 64, "qk_amplitude": 200.0},
        {"id": "nan_in_k_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16, "causal": True,
         "nan": {"tensor": "k", "index": [0, 10, 1, 2]}},
    ],
}


class TempWorkspace(GoldenWorkspace):
    """A scratch directory with the tiny suite and its goldens."""

    SUITE = TINY_SUITE

    def run_tiny(self, *extra):
        # The correctness checks are the subject here; perf and cost have tests of their own.
        checks = () if "--checks" in extra else ("--checks", "golden,memory")
        return attngate("run", "--suite", self.suite, "--baselines", self.baselines, "--out", self.results, *checks, *extra)


class RunTest(TempWorkspace):
    def test_run_passes_and_writes_results(self):
        r = self.run_tiny()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("GATE PASSED", r.stdout)
        with open(self.results) as f:
            results = json.load(f)
        self.assertEqual(results["schema_version"], 2)
        self.assertEqual(results["suite"], "tiny")
        self.assertTrue(results["complete"])
        self.assertEqual(len(results["results"]), 4 * 4)
        for entry in results["results"]:
            self.assertEqual(entry["verdict"], "pass", entry)
            golden = entry["checks"][0]
            self.assertEqual(golden["check"], "golden")
            for metric in ("max_abs_error", "max_rel_error", "rms_error", "nmse", "tolerance", "worst_index"):
                self.assertIn(metric, golden["metrics"])
            self.assertLessEqual(golden["metrics"]["max_abs_error"], golden["metrics"]["tolerance"])

    def test_a_plugin_is_gated_by_the_documented_command(self):
        # `attngate run --suite S --plugin libmine.so`: the user's kernel runs every case it
        # supports, with the suite's goldens, beside the suite's own kernels.
        r = self.run_tiny("--plugin", ARGS.user_plugin)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(self.results) as f:
            results = json.load(f)
        mine = [e for e in results["results"] if e["kernel"] == "mine"]
        self.assertEqual(sorted(e["case"] for e in mine), sorted(c["id"] for c in TINY_SUITE["cases"]))
        for e in mine:
            self.assertEqual(e["verdict"], "pass", e)
            self.assertEqual(e["kernel_origin"], ARGS.user_plugin)
            self.assertEqual([c["check"] for c in e["checks"]], ["golden", "numerics", "contract", "memory"])
        self.assertEqual(len(results["results"]), 5 * len(TINY_SUITE["cases"]))
        # --kernel may name a plugin's kernel although the suite does not.
        r = self.run_tiny("--plugin", ARGS.user_plugin, "--kernel", "mine", "--case", "gqa_bf16")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(self.results) as f:
            self.assertEqual([(e["case"], e["kernel"]) for e in json.load(f)["results"]], [("gqa_bf16", "mine")])

    def test_a_plugin_that_runs_nothing_is_bad_input_never_a_pass(self):
        suite = dict(TINY_SUITE, cases=[TINY_SUITE["cases"][0]])  # f32 only; picky takes bf16 only
        with open(self.suite, "w") as f:
            json.dump(suite, f)
        r = self.run_tiny("--plugin", ARGS.picky_plugin)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(ARGS.picky_plugin, r.stderr)
        self.assertIn("none of its kernels supports any case", r.stderr)
        self.assertNotIn("GATE PASSED", r.stdout)
        self.assertFalse(os.path.exists(self.results))

    def test_faulty_causal_mask_fails_and_names_the_case(self):
        suite = dict(TINY_SUITE, kernels=["causal_off_by_one"], cases=[TINY_SUITE["cases"][0]])
        with open(self.suite, "w") as f:
            json.dump(suite, f)
        r = self.run_tiny("--plugin", ARGS.faulty_plugin)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("FAIL causal_f32 / causal_off_by_one", r.stdout)
        self.assertIn("max abs error", r.stdout)
        with open(self.results) as f:
            self.assertEqual(json.load(f)["verdict"], "fail")

    def test_softmax_without_max_subtraction_fails_on_large_logits_only(self):
        suite = dict(TINY_SUITE, kernels=["softmax_no_max"], cases=TINY_SUITE["cases"][:1] + TINY_SUITE["cases"][2:3])
        with open(self.suite, "w") as f:
            json.dump(suite, f)
        r = self.run_tiny("--plugin", ARGS.faulty_plugin)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("FAIL large_logits_f32 / softmax_no_max: golden: ", r.stdout)
        self.assertIn("NaN/inf", r.stdout)
        self.assertNotIn("FAIL causal_f32", r.stdout)

    def test_kernel_that_drops_nan_is_drift(self):
        suite = dict(TINY_SUITE, kernels=["nan_to_zero"], cases=[TINY_SUITE["cases"][3]])
        with open(self.suite, "w") as f:
            json.dump(suite, f)
        r = self.run_tiny("--plugin", ARGS.faulty_plugin)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("golden is NaN", r.stdout)

    def test_flipped_byte_in_golden_is_corrupt_exit_2_nothing_written(self):
        golden = os.path.join(self.baselines, "goldens", "tiny", "causal_f32.npy")
        with open(golden, "r+b") as f:
            f.seek(300)
            byte = f.read(1)
            f.seek(300)
            f.write(bytes([byte[0] ^ 0x01]))
        r = self.run_tiny()
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("corrupt", r.stderr)
        self.assertIn(golden, r.stderr)
        self.assertFalse(os.path.exists(self.results))

    def test_missing_golden_names_the_command(self):
        shutil.rmtree(os.path.join(self.baselines, "goldens"))
        r = self.run_tiny()
        self.assertEqual(r.returncode, 2)
        self.assertIn("attngate golden generate --suite", r.stderr)

    def test_an_edited_mask_scale_or_softcap_is_a_stale_golden_not_drift(self):
        # The inputs stay the same, so only the golden's record of the case's rules can tell
        # that the suite changed under it; before, each edit failed every kernel (exit 1).
        edits = {"causal": False, "window": [8, 0], "scale": 0.5, "softcap": 20, "causal_alignment": "top_left"}
        for field, value in edits.items():
            case = dict(TINY_SUITE["cases"][0], **{field: value})
            with open(self.suite, "w") as f:
                json.dump(dict(TINY_SUITE, cases=[case]), f)
            r = self.run_tiny()
            self.assertEqual(r.returncode, 2, f"{field}: {r.stdout[-2000:]}{r.stderr}")
            self.assertIn('case "causal_f32": its scale, soft-cap, mask or dtype changed since the golden was made', r.stderr)
            self.assertIn("attngate golden generate --suite", r.stderr)
            self.assertFalse(os.path.exists(self.results))
        with open(self.suite, "w") as f:  # the case as the goldens were made: green
            json.dump(dict(TINY_SUITE, cases=[TINY_SUITE["cases"][0]]), f)
        r = self.run_tiny()
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr)

    def test_bad_suite_exit_2_names_file_and_path_and_writes_nothing(self):
        bad = dict(TINY_SUITE, cases=[dict(TINY_SUITE["cases"][1], heads_kv=3)])
        with open(self.suite, "w") as f:
            json.dump(bad, f)
        r = self.run_tiny()
        self.assertEqual(r.returncode, 2)
        self.assertIn(self.suite + ": $.cases[0].heads_kv: expected a divisor of heads_q (4), got 3", r.stderr)
        self.assertFalse(os.path.exists(self.results))

    def test_unknown_kernel_is_bad_input(self):
        with open(self.suite, "w") as f:
            json.dump(dict(TINY_SUITE, kernels=["reference", "nope"]), f)
        r = self.run_tiny()
        self.assertEqual(r.returncode, 2)
        self.assertIn("$.kernels[1]: unknown kernel \"nope\"", r.stderr)

    def test_a_kernel_flag_says_whether_the_kernel_is_loaded_or_unknown(self):
        with open(self.suite, "w") as f:
            json.dump(dict(TINY_SUITE, kernels=["native"]), f)
        r = self.run_tiny("--kernel", "flash")  # a built-in this suite does not list
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--kernel flash: loaded, but not a kernel of this run: suite tiny runs native", r.stderr)
        r = self.run_tiny("--kernel", "nope")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--kernel nope: no such kernel in suite tiny or any loaded plugin or adapter (this run's kernels: native)", r.stderr)

    def test_bad_usage_is_exit_2(self):
        self.assertEqual(attngate("run").returncode, 2)
        r = attngate("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn('unknown command "frobnicate" (commands: run, golden', r.stderr)
        r = self.run_tiny("--checks", "golden,vibes")
        self.assertEqual(r.returncode, 2)
        # As every bad input: "error: " first, one line, and where the command's help is.
        self.assertEqual(r.stderr, 'error: --checks: unknown check "vibes" (known: golden, memory, perf, cost) (see attngate run --help)\n')
        # A check that comes with another says which one brings it.
        r = self.run_tiny("--checks", "golden,numerics")
        self.assertEqual(r.returncode, 2)
        self.assertIn('--checks: "numerics" is not asked for on its own: it runs with golden', r.stderr)
        for empty in ("--machine", "--device-class"):  # an empty name would silently mean "not given"
            r = self.run_tiny(empty, "")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(f"{empty}: an empty name", r.stderr)
        r = self.run_tiny("--timeot", "5")
        self.assertEqual(r.returncode, 2)
        self.assertIn('unknown option --timeot for "run" (did you mean --timeout?)', r.stderr)
        r = attngate("baseline", "update", "--reslts=x")
        self.assertEqual(r.returncode, 2)
        self.assertIn('unknown option --reslts for "baseline update" (did you mean --results?)', r.stderr)
        nores = tempfile.mkdtemp(prefix="attngate-nores-")
        self.addCleanup(shutil.rmtree, nores, True)
        missing = os.path.join(nores, "results.json")  # before any run: say what comes first
        r = attngate("baseline", "update", "--results", missing)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{missing}: no results to review: run attngate run first", r.stderr)
        r = attngate("golden", "generate", "--sute", "x")  # also where --suite, which it lacks, is required
        self.assertEqual(r.returncode, 2)
        self.assertIn('unknown option --sute for "golden generate" (did you mean --suite?)', r.stderr)
        r = self.run_tiny("--vibes")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option --vibes for \"run\" (see attngate run --help)", r.stderr)

    def test_a_perf_metric_is_a_name_not_the_enum_it_becomes(self):
        # The name is parsed straight into the library's enum; its number is not a name.
        for bad in ("bogus", "1"):
            for sub in (("run", "--suite", self.suite, "--perf-metric", bad), ("time", "--suite", self.suite, "--metric", bad)):
                r = attngate(*sub)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(f'{sub[-2]}: expected time or instructions, got "{bad}"', r.stderr)
                self.assertFalse(os.path.exists(self.results))


class CliTest(unittest.TestCase):
    def test_help_for_every_subcommand(self):
        for sub in ([], ["run"], ["golden", "generate"], ["inputs"], ["kernels"]):
            r = attngate(*sub, "--help")
            self.assertEqual(r.returncode, 0, sub)
            self.assertIn("Usage", r.stdout)

    def test_kernels_lists_builtins_and_plugins(self):
        r = attngate("kernels", "--plugin", ARGS.faulty_plugin)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("reference", "native", "flash", "causal_off_by_one"):
            self.assertIn(name, r.stdout)
        self.assertIn("segment_ids", r.stdout)

    def test_conform_with_a_plugin_probes_its_kernels_and_a_named_built_in(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "conform.json")
            r = attngate("conform", "--plugin", ARGS.user_plugin, "--json", out, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
            with open(out) as f:
                self.assertEqual([k["kernel"] for k in json.load(f)["kernels"]], ["mine"])
            r = attngate("conform", "--plugin", ARGS.user_plugin, "--kernel", "mine", "--kernel", "flash", "--json", out, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
            with open(out) as f:
                self.assertEqual(sorted(k["kernel"] for k in json.load(f)["kernels"]), ["flash", "mine"])

    def test_a_plugin_named_without_a_directory_is_the_file_here(self):
        # dlopen() looks a bare name up in the system's library path: libm.so.6 loaded, and a
        # plugin beside the user was "No such file". A plugin is a file, so a bare name is ./name.
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(ARGS.user_plugin, os.path.join(d, "libmine.so"))
            r = attngate("kernels", "--plugin", "libmine.so", cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("mine", r.stdout)
            r = attngate("kernels", "--plugin", "libm.so.6", cwd=d)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("libm.so.6: cannot load plugin: no such file", r.stderr)


class SmokeSuiteTest(unittest.TestCase):
    """The checked-in smoke suite and goldens, as CI runs them."""

    def test_smoke_golden_and_memory_pass_on_builtin_kernels(self):
        # Perf against the checked-in baselines is the main job's (ci/smoke.sh): timings
        # depend on the machine of the day, which a test must not.
        with tempfile.TemporaryDirectory() as d:
            r = attngate("run", "--suite", "suites/smoke.json", "--checks", "golden,memory", "--out", os.path.join(d, "r.json"),
                         cwd=ARGS.source_dir)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)

    def test_numpy_oracle_reproduces_every_smoke_golden(self):
        with open(os.path.join(ARGS.source_dir, "suites", "smoke.json")) as f:
            suite = json.load(f)
        gdir = os.path.join(ARGS.source_dir, "baselines", "goldens", "smoke")
        with tempfile.TemporaryDirectory() as d:
            for case in suite["cases"]:
                with self.subTest(case=case["id"]):
                    out = os.path.join(d, case["id"])
                    r = attngate("inputs", "--suite", "suites/smoke.json", "--case", case["id"], "--out", out,
                                 cwd=ARGS.source_dir)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    desc, tensors = oracle.load_case(out)
                    golden = np.load(os.path.join(gdir, case["id"] + ".npy"))
                    self.assertIsNone(oracle.golden_mismatch(golden, oracle.attention(desc, tensors)))

    def test_inputs_never_replace_files_that_are_not_an_earlier_inputs_output(self):
        with tempfile.TemporaryDirectory() as d:
            mine = os.path.join(d, "mine")
            os.mkdir(mine)
            for name, text in (("q.npy", "my own array"), ("case.json", '{"mine": true}')):
                with open(os.path.join(mine, name), "w") as f:
                    f.write(text)
            toml = os.path.join(d, "attngate.toml")
            with open(toml, "w") as f:
                f.write('suite = "x"\n')
            base = ["inputs", "--suite", "suites/smoke.json", "--case", "mha_f32"]
            for out, said in ((mine, "its case.json is not one `attngate inputs` wrote"), (toml, "not a directory")):
                r = attngate(*base, "--out", out, cwd=ARGS.source_dir)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(f"--out {out}: {said}", r.stderr)
            os.remove(os.path.join(mine, "case.json"))
            r = attngate(*base, "--out", mine, cwd=ARGS.source_dir)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("holds q.npy, which is not an `attngate inputs` output", r.stderr)
            with open(os.path.join(mine, "q.npy")) as f:
                self.assertEqual(f.read(), "my own array")
            out = os.path.join(d, "fresh")
            for _ in range(2):  # a second run over its own output replaces it
                r = attngate(*base, "--out", out, cwd=ARGS.source_dir)
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_generator_is_reproduced_bit_for_bit_outside_attngate(self):
        with open(os.path.join(ARGS.source_dir, "suites", "smoke.json")) as f:
            suite = json.load(f)
        case = next(c for c in suite["cases"] if c["id"] == "large_logits_bf16")
        with tempfile.TemporaryDirectory() as d:
            r = attngate("inputs", "--suite", "suites/smoke.json", "--case", case["id"], "--out", d, cwd=ARGS.source_dir)
            self.assertEqual(r.returncode, 0, r.stderr)
            _, tensors = oracle.load_case(d)
            k = tensors["k"]
            mine = oracle.uniform_stream(suite["seed"], case["id"], "k", k.size, case["qk_amplitude"])
            # bf16 cases round to bf16, nearest-even: keep the top 16 bits of the float32.
            bits = mine.view(np.uint32).astype(np.uint64)
            rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
            mine = rounded.astype(np.uint32).view(np.float32)
            np.testing.assert_array_equal(mine.reshape(k.shape).view(np.uint32), k.view(np.uint32))


if __name__ == "__main__":
    main()
