"""Kernels from outside the adapter's own list (issue 23): sources that fail to load are
named while the others serve; the conformance check names the convention each of five
deliberately wrong kernels follows, and passes the built-in, adapter and tokamax kernels;
tokamax xla and xla_chunked pass jax-smoke's goldens, mosaic is a skip with its measured
reason, and tokamax is absent from the jax 0.7.2 venv.

Skips (exit 77) when ci/install-deps.sh has not made the venvs."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ARGS, TempDirTest, attngate, jax_venv_python, main, read_json, require_jax_venvs  # noqa: E402

PLUGINS = os.path.join(HERE, "jax_kernels")
TOKAMAX = "attngate_jax.kernels.tokamax:make"
PAGED = {"pallas-paged", "pallas-ragged-paged", "xla-paged"}
BUILTIN = {"jax-xla", "pallas-flash", "pallas-splash"} | PAGED
# The wrong kernel, the probe case its flaw shows in, and the convention it must be named for.
WRONG = {
    "wrong-causal-alignment": ("bottom_right_q128_k256", "top_left"),
    "wrong-scale-twice": ("scale_0.3_d64", "scale_twice"),
    "wrong-softcap-after-bias": ("softcap_2_bias", "bias_then_softcap"),
    "wrong-gqa-modulo": ("gqa_4q_2kv", "modulo"),
    "wrong-empty-rows": ("empty_rows_segment_ids", "mean_of_v"),
}


def adapter(*args, line="new"):
    return " ".join([jax_venv_python(line), os.path.join(ARGS.source_dir, "kernels", "jax", "adapter.py"), "--interpret", "hlo", *args])


def with_plugins_path():
    return dict(os.environ, PYTHONPATH=PLUGINS)


class JaxKernelsTest(TempDirTest):
    def conform(self, *adapter_args, out, env=None, line="new"):
        r = attngate("conform", "--adapter", adapter(*adapter_args, line=line), "--json", self.path(out), cwd=ARGS.source_dir,
                     env=env, timeout=1200)
        return r, read_json(self.path(out)) if os.path.exists(self.path(out)) else None

    def test_sources_that_fail_are_named_and_the_other_kernels_serve(self):
        bad = ["broken_import:make", "bad_sources:make_raises", "bad_sources:make_duplicate", "bad_sources:make_next_api",
               "bad_sources:make_unknown_feature", "bad_sources:make_not_a_kernel"]
        args = [a for spec in bad for a in ("--kernels", spec)]
        r = attngate("kernels", "--adapter", adapter(*args), cwd=ARGS.source_dir, env=with_plugins_path(), timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for name in [*BUILTIN, "fine-beside-broken"]:
            self.assertIn(name, r.stdout, "the other kernels still serve")
        errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
        self.assertEqual(len(errors), 6, r.stderr)
        expected = {
            "--kernels broken_import:make": "cannot import broken_import: ImportError",
            "--kernels bad_sources:make_raises": "the factory raised RuntimeError: the team's factory failed",
            "--kernels bad_sources:make_duplicate": "kernel name 'jax-xla' is already served (from attngate-jax (built in))",
            "--kernels bad_sources:make_next_api": "kernel 'from-the-future' declares API version 2; this adapter speaks "
                                                   "attngate kernel API version 1",
            "--kernels bad_sources:make_unknown_feature": "kernel 'sparse-too-early': unknown features 'block_sparse'",
            "--kernels bad_sources:make_not_a_kernel": "the factory returned object, not an attngate_jax.api.KernelAdapter",
        }
        for source, words in expected.items():
            hits = [e for e in errors if f"{source}: " in e]
            self.assertEqual(len(hits), 1, (source, errors))
            self.assertIn(words, hits[0])
        self.assertNotIn("sparse-too-early", r.stdout)
        self.assertNotIn("from-the-future", r.stdout)

    def test_a_kernel_that_no_longer_loads_fails_the_run_while_the_others_are_gated(self):
        r = attngate("run", "--suite", "jax-smoke", "--adapter", adapter("--kernels", "broken_import:make"), "--checks", "golden",
                     "--kernel", "jax-xla", "--case", "mha_s128_f32", "--out", self.path("broken.json"), cwd=ARGS.source_dir,
                     env=with_plugins_path(), timeout=600)
        self.assertEqual(r.returncode, 1, r.stdout[-2000:] + r.stderr)
        self.assertIn("--kernels broken_import:make: cannot import broken_import", r.stdout)  # above the verdict
        self.assertIn("GATE FAILED: 1 kernel source(s) did not load, the other kernels ran", r.stdout)
        res = read_json(self.path("broken.json"))
        self.assertEqual([(e["kernel"], e["verdict"]) for e in res["results"]], [("jax-xla", "pass")])
        self.assertEqual(res["verdict"], "fail")  # the reports say what the exit code says
        self.assertIn("--kernels broken_import:make: cannot import broken_import", res["load_errors"][0])

    def test_conform_names_the_convention_of_each_wrong_kernel(self):
        r, report = self.conform("--no-builtins", "--kernels", "wrong_conventions:make", out="wrong.json", env=with_plugins_path())
        self.assertEqual(r.returncode, 1, r.stdout[-4000:] + r.stderr)
        kernels = {k["kernel"]: k for k in report["kernels"] if k["kernel"] in WRONG}
        self.assertEqual(set(kernels), set(WRONG))
        for name, (case, convention) in WRONG.items():
            with self.subTest(kernel=name):
                k = kernels[name]
                self.assertFalse(k["pass"])
                probes = {p["case"]: p for p in k["probes"]}
                flawed = probes[case]
                self.assertEqual((flawed["label"], flawed["follows"]), ("neither", convention), flawed["message"])
                self.assertIn("neither attngate's", flawed["message"])
                # The check never blames another convention: a probe that fails either names this
                # kernel's flaw or fits no convention it knows (a scale applied twice moves every output).
                for p in k["probes"]:
                    if not p["pass"]:
                        self.assertIn(p["follows"], (convention, ""), (p["case"], p["message"]))
                passed = sum(p["pass"] for p in k["probes"])
                self.assertGreaterEqual(passed, 1 if name == "wrong-scale-twice" else 10, name)
        # The in-process built-ins ran beside them and conform.
        for k in report["kernels"]:
            if k["kernel"] not in WRONG:
                self.assertTrue(k["pass"], k)

    def test_conform_judges_a_c_plugin_kernel_the_same_way(self):
        out = self.path("plugin.json")
        r = attngate("conform", "--plugin", ARGS.faulty_plugin, "--kernel", "softcap_after_bias", "--kernel", "flash",
                     "--json", out, timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr)
        kernels = {k["kernel"]: k for k in read_json(out)["kernels"]}
        self.assertTrue(kernels["flash"]["pass"])
        probes = {p["case"]: p for p in kernels["softcap_after_bias"]["probes"]}
        self.assertEqual((probes["softcap_2_bias"]["label"], probes["softcap_2_bias"]["follows"]), ("neither", "bias_then_softcap"))

    def test_conform_passes_the_adapters_own_kernels_and_tokamax(self):
        r, report = self.conform("--kernels", TOKAMAX, out="own.json")
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr)
        kernels = {k["kernel"]: k for k in report["kernels"]}
        self.assertTrue(BUILTIN | {"tokamax-xla", "tokamax-xla-chunked", "tokamax-mosaic"} <= set(kernels))
        self.assertFalse({"reference", "native", "flash"} & set(kernels), "asked about an adapter, conform probes its kernels")
        for name, k in kernels.items():
            self.assertTrue(k["pass"], name)
            if name in PAGED:  # the probes are dense cases: declined, saying so (jax_paged_test gates them)
                self.assertTrue(k["probes"] and all(p["label"] == "declined" for p in k["probes"]), name)
                self.assertIn("takes paged cases only", k["probes"][0]["message"])
            elif name != "tokamax-mosaic":
                ran = [p for p in k["probes"] if p["label"] in ("attngate", "declared")]
                self.assertGreaterEqual(len(ran), 5, name)
        mosaic = kernels["tokamax-mosaic"]["probes"]
        self.assertTrue(mosaic and all(p["label"] == "declined" for p in mosaic))
        self.assertIn("NotImplementedError: Not supported on cpu", mosaic[0]["message"])

    def test_tokamax_passes_jax_smoke_goldens_and_mosaic_is_a_measured_skip(self):
        # jax-smoke names the adapter's own kernels, so they come from one adapter (not run:
        # --kernel) and tokamax's from a second one, whose kernels join every case.
        out = self.path("tokamax.json")
        only = [a for k in ("tokamax-xla", "tokamax-xla-chunked", "tokamax-mosaic") for a in ("--kernel", k)]
        r = attngate("run", "--suite", "jax-smoke", "--adapter", adapter(), "--adapter", adapter("--no-builtins", "--kernels", TOKAMAX),
                     *only, "--checks", "golden", "--out", out, cwd=ARGS.source_dir, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        results = read_json(out)
        rows = results["results"]
        self.assertEqual(results["fingerprint"]["adapters"]["attngate-jax"]["kernel_packages"]["tokamax"], "0.0.12")
        for kernel in ("tokamax-xla", "tokamax-xla-chunked"):
            passed = [e for e in rows if e["kernel"] == kernel and e["verdict"] == "pass"]
            self.assertGreaterEqual(len(passed), 20, kernel)
            self.assertFalse([e for e in rows if e["kernel"] == kernel and e["verdict"] == "fail"])
        mosaic = [e for e in rows if e["kernel"] == "tokamax-mosaic"]
        self.assertTrue(mosaic and all(e["verdict"] == "skip" for e in mosaic))
        self.assertTrue(any("NotImplementedError: Not supported on cpu" in e["reason"] for e in mosaic))

    def test_tokamax_is_absent_from_the_old_venv_and_says_so(self):
        r = attngate("kernels", "--adapter", adapter("--kernels", TOKAMAX, line="old"), cwd=ARGS.source_dir, timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"--kernels {TOKAMAX}: cannot import attngate_jax.kernels.tokamax: ModuleNotFoundError: "
                      "No module named 'tokamax'", r.stderr)
        for name in BUILTIN:
            self.assertIn(name, r.stdout)


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    require_jax_venvs("new", "old")
    main()
