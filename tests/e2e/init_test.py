"""attngate init in an empty git repository: the config, the starter suite and the CI file it
writes make `golden generate && run` pass with no flag; a second init changes no byte; the
suite's coverage counts only the pairs its kernels declare; docs/suites.md states the tool's
numbers."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main  # noqa: E402

WRITTEN = ("attngate.toml", ".github/workflows/attngate.yml", ".gitignore")


def clean_env():
    """No setting from outside the repository: no $ATTNGATE_CONFIG or $ATTNGATE_STORE."""
    return {k: v for k, v in os.environ.items() if k not in ("ATTNGATE_CONFIG", "ATTNGATE_STORE")}


def snapshot(top):
    """Every file under top (but .git) and its bytes, and every directory."""
    out = {}
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), top) + "/"] = None
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                out[os.path.relpath(os.path.join(root, f), top)] = fh.read()
    return out


def tools(name):
    """A tool of .venv/tools (ci/install-deps.sh makes it), found from this file: ARGS is not read yet."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv", "tools", "bin", name)


class InitTest(unittest.TestCase):
    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="attngate-init-")
        self.repo = os.path.join(self.top, "team-repo")
        os.mkdir(self.repo)
        if shutil.which("git"):
            subprocess.run(["git", "init", "-q", self.repo], check=True)
        self.env = clean_env()
        # The repository must be the only attngate.toml on the way up.
        d = self.top
        while d != os.path.dirname(d):
            self.assertFalse(os.path.exists(os.path.join(d, "attngate.toml")), d)
            d = os.path.dirname(d)

    def tearDown(self):
        shutil.rmtree(self.top, ignore_errors=True)

    def run_here(self, *args, timeout=600):
        return attngate(*args, cwd=self.repo, env=self.env, timeout=timeout)

    def test_init_then_golden_generate_and_run_pass_and_a_second_init_changes_nothing(self):
        r = self.run_here("init", "--plugin", ARGS.user_plugin)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        suite_file = "suites/team-repo.json"  # named for the directory
        for f in (*WRITTEN, suite_file):
            self.assertTrue(os.path.isfile(os.path.join(self.repo, f)), f)
            self.assertIn(f"wrote {f}", r.stdout)
        self.assertTrue(os.path.isdir(os.path.join(self.repo, "baselines")))
        self.assertIn("attngate golden generate", r.stdout)
        self.assertIn("attngate run", r.stdout)

        # The config: the keys of the format, with a comment before each.
        with open(os.path.join(self.repo, "attngate.toml"), "rb") as f:
            config = tomllib.load(f)
        self.assertEqual(config["suite"], suite_file)
        self.assertEqual(config["plugins"], [ARGS.user_plugin])  # outside the repository: absolute
        self.assertEqual(config["store"], "baselines")
        self.assertEqual(set(config["report"]), {"html", "markdown", "junit"})
        with open(os.path.join(self.repo, "attngate.toml")) as f:
            lines = f.read().splitlines()
        setting = re.compile(r"^(\[[a-z]+\]|[a-z_]+ = .*)$")
        for i, line in enumerate(lines):  # each key, or the block of keys it is in, has its comment
            if setting.match(line):
                j = i - 1
                while j >= 0 and setting.match(lines[j]):
                    j -= 1
                self.assertTrue(j >= 0 and lines[j].startswith("#"), line)

        # The suite: the plugin's kernel, every case one it declares the features of.
        with open(os.path.join(self.repo, suite_file)) as f:
            suite = json.load(f)
        self.assertEqual(suite["kernels"], ["mine"])
        self.assertGreater(len(suite["cases"]), 3)
        self.assertFalse(any("paged" in c for c in suite["cases"]))  # "mine" declares no paged KV

        # The CI file: the reusable action at this attngate's version, with its inputs.
        version = attngate("--version").stdout.split()[1]
        with open(os.path.join(self.repo, ".github/workflows/attngate.yml")) as f:
            workflow = f.read()
        self.assertIn(f"uses: attngate/attngate@v{version}", workflow)
        for key in ("build:", "plugin:", "suite:"):
            self.assertIn(key, workflow)
        self.assertIn(f'suite: "{suite_file}"', workflow)

        # Every pair of the kernel's features, as `suite coverage` counts them, for that kernel.
        r = self.run_here("suite", "coverage", suite_file, "--plugin", ARGS.user_plugin, "--each-kernel")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        self.assertIn("complete: every meaningful pair", r.stdout)
        self.assertIn("kernel mine (", r.stdout)

        # golden generate && run, with no flag: attngate.toml says the suite, the plugin, the reports.
        r = self.run_here("golden", "generate")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.run_here("run", timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        self.assertIn("GATE PASSED", r.stdout)
        self.assertRegex(r.stdout, rf"{len(suite['cases'])} passed, 0 failed, 0 errors")
        for f in ("reports/report.html", "reports/summary.md", "reports/junit.xml"):  # [report] of the toml
            self.assertTrue(os.path.isfile(os.path.join(self.repo, f)), f)
        ignored = subprocess.run(["git", "check-ignore", "reports/summary.md"], cwd=self.repo, capture_output=True, text=True)
        self.assertEqual(ignored.returncode, 0, "init's .gitignore keeps the reports out of git")
        r = self.run_here("suite", "coverage", "--each-kernel")  # the toml's suite and plugin
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        self.assertIn("kernel mine (", r.stdout)

        # A second init, with the flags and without: every file skipped, not a byte changed.
        before = snapshot(self.repo)
        for args in (("init", "--plugin", ARGS.user_plugin), ("init", "--plugin", ARGS.user_plugin, "--dir", self.repo)):
            r = self.run_here(*args)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            for f in (*WRITTEN, suite_file, "baselines/"):
                self.assertIn(f"skipped {f}:", r.stdout)
            self.assertNotIn("wrote ", r.stdout)
            self.assertEqual(snapshot(self.repo), before)
            # The goldens are made: the next steps are the run and a review, not the first ones again.
            self.assertIn("next (baselines/ already holds goldens, kept as they are)", r.stdout)
            self.assertNotIn("first baselines", r.stdout)
            self.assertNotIn("attngate golden generate   the goldens of", r.stdout)
        r = self.run_here("init")  # the kernels from attngate.toml's plugins
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("kernel mine (", r.stdout)
        self.assertNotIn("wrote ", r.stdout)
        self.assertEqual(snapshot(self.repo), before)

        # From a subdirectory of the set-up repository: no second set-up that would take over
        # the commands run there, with a CI file where no CI looks; --nested asks for one.
        sub = os.path.join(self.repo, "src", "sub")
        os.makedirs(sub)
        before = snapshot(self.repo)
        for args in (("init",), ("init", "--plugin", ARGS.user_plugin), ("init", "--plugin", ARGS.user_plugin, "--dir", sub)):
            r = attngate(*args, cwd=sub, env=self.env)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn(f"{sub} is inside the repository that {os.path.join(self.repo, 'attngate.toml')} sets up", r.stderr)
            self.assertIn(f"Run attngate init in {self.repo}", r.stderr)
            self.assertEqual(snapshot(self.repo), before)
        # Through a symbolic link from outside, to the same directory: refused the same way.
        link = os.path.join(self.top, "link-to-sub")
        os.symlink(sub, link)
        r = attngate("init", "--plugin", ARGS.user_plugin, "--dir", link, cwd=self.top, env=self.env)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"{sub} is inside the repository that", r.stderr)
        self.assertEqual(snapshot(self.repo), before)
        r = attngate("init", "--plugin", ARGS.user_plugin, "--nested", "--ci", "none", cwd=sub, env=self.env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(sub, "attngate.toml")))
        self.assertTrue(os.path.isfile(os.path.join(sub, "suites", "sub.json")))

    def test_a_kernel_that_masks_with_a_zero_weight_fails_only_the_nan_in_v_case(self):
        # zero_weight_mask keeps masked keys in P·V with weight 0: right on every case but where a
        # NaN in V sits at a key some rows mask, whose 0 * NaN reaches those rows. The starter
        # suite's other NaN cases put it in K, which this kernel never reads at a masked key.
        r = self.run_here("init", "--plugin", ARGS.user_plugin, "--ci", "none")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.repo, "suites", "team-repo.json")) as f:
            suite = json.load(f)
        v_nan = [c["id"] for c in suite["cases"] if c.get("nan", {}).get("tensor") == "v"]
        self.assertEqual(v_nan, ["f32_causal_nan_in_v"])
        r = self.run_here("golden", "generate")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.run_here("run", "--plugin", ARGS.user_plugin, "--plugin", ARGS.faulty_plugin, "--kernel", "zero_weight_mask", "--checks", "golden",
                          "--out", "zw.json", timeout=900)
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr[-3000:])
        with open(os.path.join(self.repo, "zw.json")) as f:
            rows = json.load(f)["results"]
        failed = sorted({x["case"] for x in rows if x["verdict"] == "fail"})
        passed = {x["case"] for x in rows if x["verdict"] == "pass"}
        self.assertEqual(failed, v_nan)
        self.assertGreater(len(passed), 5)  # every f32 case it runs but that one
        self.assertIn("FAIL f32_causal_nan_in_v / zero_weight_mask: golden: ", r.stdout)

    def test_a_file_in_the_way_is_kept_and_said(self):
        os.makedirs(os.path.join(self.repo, "suites"))
        with open(os.path.join(self.repo, "attngate.toml"), "w") as f:
            f.write("# the team's own\n")
        os.symlink("nowhere", os.path.join(self.repo, "suites", "mine.json"))  # a dangling link is in the way too
        r = self.run_here("init", "--plugin", ARGS.user_plugin, "--name", "mine", "--ci", "none")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"skipped attngate.toml: it exists \(attngate init never overwrites")
        self.assertIn("skipped suites/mine.json: a symbolic link is there", r.stdout)
        with open(os.path.join(self.repo, "attngate.toml")) as f:
            self.assertEqual(f.read(), "# the team's own\n")
        self.assertEqual(os.readlink(os.path.join(self.repo, "suites", "mine.json")), "nowhere")
        self.assertFalse(os.path.exists(os.path.join(self.repo, ".github")))  # --ci none
        self.assertIn("created baselines/", r.stdout)

    def test_without_kernels_or_with_a_bad_one_nothing_is_written(self):
        r = self.run_here("init")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--plugin", r.stderr)
        r = self.run_here("init", "--plugin", os.path.join(self.repo, "missing.so"))
        self.assertIn(r.returncode, (2, 3), r.stdout + r.stderr)
        r = self.run_here("init", "--plugin", ARGS.user_plugin, "--dir", os.path.join(self.repo, "nope"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("nope: no such directory", r.stderr)
        self.assertEqual(snapshot(self.repo), {})
        with open(os.path.join(self.top, "a-file"), "w"):
            pass
        r = self.run_here("init", "--plugin", ARGS.user_plugin, "--dir", os.path.join(self.top, "a-file"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("a-file: not a directory", r.stderr)

    def test_gitlab_includes_the_component(self):
        r = self.run_here("init", "--plugin", ARGS.user_plugin, "--ci", "gitlab", "--dir", self.repo, "--name", "gl")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        version = attngate("--version").stdout.split()[1]
        with open(os.path.join(self.repo, ".gitlab-ci.yml")) as f:
            ci = f.read()
        self.assertIn(f"- component: $CI_SERVER_FQDN/attngate/attngate/gate@{version}", ci)
        self.assertIn('suite: "suites/gl.json"', ci)
        self.assertFalse(os.path.exists(os.path.join(self.repo, ".github")))
        # The inputs the component declares (templates/gate/template.yml's spec).
        template = os.path.join(ARGS.source_dir, "templates", "gate", "template.yml")
        if os.path.exists(template):
            with open(template) as f:
                spec = f.read().split("\n---", 1)[0]
            for name in re.findall(r"^      ([a-z-]+): ", ci, re.M):
                self.assertRegex(spec, rf"\n    {name}:\n", name)
        if os.path.exists(tools("check-jsonschema")):
            p = subprocess.run([tools("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci", os.path.join(self.repo, ".gitlab-ci.yml")],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_an_adapters_kernels_are_asked_too(self):
        adapter = f"{sys.executable} {os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fault_adapter.py')}"
        r = self.run_here("init", "--adapter", adapter, "--name", "np")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(self.repo, "attngate.toml"), "rb") as f:
            config = tomllib.load(f)
        self.assertEqual(config["adapters"], [adapter])
        self.assertNotIn("plugins", config)
        with open(os.path.join(self.repo, "suites", "np.json")) as f:
            suite = json.load(f)
        self.assertIn("np-ok", suite["kernels"])
        self.assertNotIn("flash", suite["kernels"])  # the built-in kernels are not the team's
        with open(os.path.join(self.repo, ".github/workflows/attngate.yml")) as f:
            workflow = f.read()
        self.assertIn("lock: ", workflow)
        self.assertIn(f"adapter: {json.dumps(adapter)}", workflow)
        self.assertNotIn("plugin: ", workflow)

    @unittest.skipUnless(os.path.exists(tools("check-jsonschema")) and os.path.exists(tools("zizmor")),
                         ".venv/tools is missing: bash ci/install-deps.sh creates it")
    def test_the_github_workflow_is_valid_and_clean_under_zizmor(self):
        r = self.run_here("init", "--plugin", ARGS.user_plugin, "--plugin", ARGS.picky_plugin)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        path = os.path.join(self.repo, ".github/workflows/attngate.yml")
        with open(path) as f:
            workflow = f.read()
        self.assertEqual(workflow.count("uses: attngate/attngate@"), 2)  # one job per plugin
        p = subprocess.run([tools("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", path],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = subprocess.run([tools("zizmor"), "--offline", "--persona=auditor", "--no-progress", path], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for line in workflow.splitlines():  # each accepted finding says why
            if "zizmor: ignore[" in line:
                self.assertRegex(line, r"zizmor: ignore\[[a-z-]+\] \w.{20,}")
        # The action's inputs that the workflow sets are the action's.
        action = os.path.join(ARGS.source_dir, "action.yml")
        if os.path.exists(action):
            with open(action) as f:
                inputs = f.read().split("\noutputs:", 1)[0]
            for step in workflow.split("uses: attngate/attngate@")[1:]:
                for name in re.findall(r"^          ([a-z-]+): ", step.split("\n  gate")[0], re.M):
                    self.assertRegex(inputs, rf"\n  {name}:\n", name)


class CoverageOfDeclaredPairsTest(unittest.TestCase):
    """`suite coverage` asks only for the pairs the suite's kernels declare: a suite of the
    bf16-only plugin "picky" passes with its plugin loaded, and without it (the kernel
    counted as declaring everything) misses the f32 pairs."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-coverage-")
        self.env = clean_env()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_bf16_only_suite_passes_for_a_bf16_only_kernel(self):
        path = os.path.join(self.dir, "picky.json")
        # One bf16 case with every dense feature: causal and a window over Sq > Sk (empty rows),
        # packed segments, bias, soft-cap, GQA, Dv != D, a partial block, batch 2, a NaN.
        case = {"id": "everything_bf16", "batch": 2, "seq_q": 112, "seq_k": 80, "heads_q": 4, "heads_kv": 2,
                "head_dim": 32, "head_dim_v": 16, "causal": True, "window": [16, 0], "segments": 2, "bias": True,
                "softcap": 20, "qk_amplitude": 4, "nan": {"tensor": "k", "index": [1, 79, 1, 5]}, "dtype": "bf16"}
        with open(path, "w") as f:
            json.dump({"name": "picky", "kernels": ["picky"], "cases": [case]}, f)
        r = attngate("suite", "coverage", path, "--plugin", ARGS.picky_plugin, "--cases", env=self.env, cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("complete: every meaningful pair", r.stdout)
        self.assertRegex(r.stdout, r"kernel picky \(.*\): declares causal, window, segment_ids, bias, softcap, gqa, head_dim_v, bf16\n")
        # Every feature but f32 and the three paged ones: 13 features, 78 pairs, all of them met.
        self.assertIn("126 meaningful pairs, 78 of them declared by the suite's kernels", r.stdout)
        self.assertNotIn("MISS", r.stdout)

        r = attngate("suite", "coverage", path, env=self.env, cwd=self.dir)  # picky not loaded
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("kernel picky: not loaded (give its --plugin or --adapter)", r.stdout)
        self.assertIn("causal x f32  (for picky)", r.stdout)

    def test_a_suite_kernel_that_misses_a_pair_another_meets(self):
        # mine and picky share bf16 x causal; only mine runs the f32 case, only picky declares no f32.
        path = os.path.join(self.dir, "two.json")
        with open(path, "w") as f:
            json.dump({"name": "two", "kernels": ["mine", "picky"], "cases": [
                {"id": "causal_bf16", "seq_q": 64, "heads_q": 2, "head_dim": 16, "causal": True, "dtype": "bf16", "kernels": ["mine"]},
                {"id": "causal_f32", "seq_q": 64, "heads_q": 2, "head_dim": 16, "causal": True}]}, f)
        plugins = ["--plugin", ARGS.user_plugin, "--plugin", ARGS.picky_plugin]
        r = attngate("suite", "coverage", path, *plugins, env=self.env, cwd=self.dir)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # batch>1 and the rest: in no case
        self.assertIn("note: causal x bf16: another kernel runs a case with both, picky none", r.stdout)
        r = attngate("suite", "coverage", path, *plugins, "--each-kernel", env=self.env, cwd=self.dir)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("causal x bf16  (for picky)", r.stdout)


class SuitesDocTest(unittest.TestCase):
    def test_the_docs_numbers_are_the_tools(self):
        r = attngate("suite", "coverage", "suites/smoke.json", cwd=ARGS.source_dir)
        m = re.search(r"(\d+) features, (\d+) meaningful pairs", r.stdout)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        features, pairs = m.groups()
        with open(os.path.join(ARGS.source_dir, "docs", "suites.md")) as f:
            doc = f.read().split("### Coverage", 1)[1]
        self.assertIn(f"for {features} features", doc)
        self.assertIn(f"**{pairs} meaningful pairs**", doc)
        self.assertIn(f"covers all {pairs}", doc)
        header = r.stdout.split("\n\n")[1].splitlines()[0].split()  # the table's column names
        self.assertEqual(len(header), int(features))
        self.assertEqual(re.findall(r"\n\| `([^`]+)` \|", doc), header)


if __name__ == "__main__":
    main()
