"""examples/jax-kernel, a team's own Pallas kernel in a package of its own, gated without
editing attngate (issue 23): its ci.sh, run outside the checkout, installs the attngate-jax
wheel (kernels/jax/build-wheel.sh) and the package by pip into a clean venv and gates it
through its entry point with the installed attngate-jax-adapter; again through `--kernels
team_attention.gate:make` from a plain source tree and the checkout's adapter.py; and a
bump of the team's package shows in the fingerprint's "What changed".

Skips (exit 77) when ci/install-deps.sh has not made .venv/jax-new."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ARGS, TempDirTest, attngate, jax_venv_python, main, read_json, require_jax_venvs  # noqa: E402
import results_schema  # noqa: E402
from jax_adapter_support import build_wheel  # noqa: E402

SUITE = "examples/jax-kernel/suite.json"


class ExampleKernelTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # As a team's CI runs it: from its own directory, with the installed attngate and attngate-jax.
        wheel = build_wheel(os.path.join(cls.dir, "dist"))
        env = dict(os.environ, ATTNGATE=ARGS.attngate, PYTHON=jax_venv_python("new"), ATTNGATE_JAX=wheel,
                   DEPS_VENV=os.path.dirname(os.path.dirname(jax_venv_python("new"))))
        env.pop("PYTHONPATH", None)
        cls.ci = subprocess.run(["bash", os.path.join(ARGS.source_dir, "examples", "jax-kernel", "ci.sh"), cls.dir],
                                cwd=cls.dir, env=env, capture_output=True, text=True, timeout=1200)

    def assertGated(self, results):
        rows = results["results"]
        suite = read_json(os.path.join(ARGS.source_dir, SUITE))
        self.assertEqual(sorted((e["case"], e["kernel"], e["verdict"]) for e in rows),
                         sorted((c["id"], "team-blocked", "pass") for c in suite["cases"]))
        for e in rows:
            checks = {c["check"]: c for c in e["checks"]}
            self.assertEqual(checks["golden"]["verdict"], "pass")
            self.assertEqual(checks["memory"]["metrics"]["source"], "rss")

    def test_ci_script_installs_it_into_a_clean_venv_and_gates_it_through_its_entry_point(self):
        self.assertEqual(self.ci.returncode, 0, self.ci.stdout[-4000:] + self.ci.stderr)
        # ci.sh ran attngate itself: its results and baselines are checked against the schema here.
        results_schema.validate_all(os.path.join(self.dir, "results.json"), os.path.join(self.dir, "baselines"))
        # pip put the package and attngate-jax into the fresh venv, and only there.
        for module in ("team_attention", "attngate_jax"):
            lib = subprocess.run([self.path("venv", "bin", "python"), "-c", f"import {module}; print({module}.__file__)"],
                                 capture_output=True, text=True, check=True, cwd=self.dir).stdout
            self.assertTrue(lib.startswith(self.path("venv")), lib)
            missing = subprocess.run([jax_venv_python("new"), "-c", f"import {module}"], capture_output=True, text=True,
                                     cwd=self.dir)
            self.assertNotEqual(missing.returncode, 0, "the pinned venv stays untouched")
        conform = read_json(self.path("conform.json"))
        self.assertTrue(conform["pass"])
        [kernel] = conform["kernels"]
        self.assertEqual(kernel["kernel"], "team-blocked")
        self.assertGreaterEqual(sum(p["label"] == "attngate" for p in kernel["probes"]), 6)
        results = read_json(self.path("results.json"))
        self.assertGated(results)
        fp = results["fingerprint"]["adapters"]["attngate-jax"]
        self.assertEqual(fp["kernel_packages"], {"team-attention": "0.1.0"})
        self.assertEqual(results["fingerprint"]["kernels"]["team-blocked"], "team-attention 0.1.0; jax 0.10.2")

    def test_the_same_kernel_from_a_source_tree_through_kernels_module_factory(self):
        out = self.path("from_source.json")
        adapter = (f"{jax_venv_python('new')} kernels/jax/adapter.py --interpret hlo --no-entry-points "
                   "--kernels team_attention.gate:make")
        env = dict(os.environ, PYTHONPATH=os.path.join(ARGS.source_dir, "examples", "jax-kernel", "src"))
        r = attngate("run", "--suite", SUITE, "--adapter", adapter, "--baselines", self.path("baselines"), "--checks",
                     "golden,memory", "--out", out, cwd=ARGS.source_dir, env=env, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        results = read_json(out)
        self.assertGated(results)
        self.assertEqual(results["fingerprint"]["adapters"]["attngate-jax"]["kernel_packages"], {"team_attention": "0.1.0"})

    def test_a_bump_of_the_teams_package_shows_in_what_changed(self):
        self.assertEqual(self.ci.returncode, 0, self.ci.stderr)
        src = self.path("src")
        for name, pattern in (("pyproject.toml", r'version = "0.1.0"'), (os.path.join("src", "team_attention", "__init__.py"),
                                                                        r'__version__ = "0.1.0"')):
            with open(os.path.join(src, name)) as f:
                text = f.read()
            with open(os.path.join(src, name), "w") as f:
                f.write(re.sub(pattern, pattern.replace("0.1.0", "0.2.0").replace("\\", ""), text))
        subprocess.run([self.path("venv", "bin", "pip"), "install", "-q", "--no-index", "--no-build-isolation",
                        "--disable-pip-version-check", src], check=True, capture_output=True)
        out = self.path("bumped.json")
        r = attngate("run", "--suite", SUITE, "--adapter", f"{self.path('venv', 'bin', 'attngate-jax-adapter')} "
                     "--interpret hlo", "--baselines", self.path("baselines"), "--checks", "golden", "--case", "mha_s256_f32",
                     "--out", out, cwd=ARGS.source_dir, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        diff = attngate("env", "--diff", self.path("results.json"), out)
        self.assertEqual(diff.returncode, 0, diff.stderr)
        self.assertIn("adapters.attngate-jax.kernel_packages.team-attention: 0.1.0 → 0.2.0", diff.stdout)
        self.assertIn("kernels.team-blocked: team-attention 0.1.0; jax 0.10.2 → team-attention 0.2.0; jax 0.10.2", diff.stdout)


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    require_jax_venvs("new")
    main()
