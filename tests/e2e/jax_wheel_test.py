"""attngate-jax as an installed distribution (issue 34, part 2): the wheel attngate's build
makes (kernels/jax/build-wheel.sh, offline) has attngate's version, its typed API and the
command attngate-jax-adapter; installed into a fresh venv, it serves a team's kernel to
`attngate run --adapter "attngate-jax-adapter --kernels team_attention.gate:make"` run in a
directory outside the checkout with no PYTHONPATH; a team module imports attngate_jax.api
from a clean environment; an adapter that speaks another protocol version is exit 3,
naming both versions.

The venv is made by .venv/jax-new's interpreter without system site-packages. pip installs
the wheel and the team's package (examples/jax-kernel) with --no-index; jax and its
dependencies are those of .venv/jax-new, reached through a .pth file: installing jax anew
would need the network, and the pinned jax is the one the other JAX tests gate. The test
checks that .venv/jax-new holds no attngate_jax, so the venv can get it only from the wheel.

Skips (exit 77) when ci/install-deps.sh has not made .venv/jax-new."""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ARGS, TempDirTest, attngate, jax_venv_python, main, read_json, require_jax_venvs  # noqa: E402
from jax_adapter_support import build_wheel, make_team_venv  # noqa: E402

PROTOCOL = 1  # docs/protocol.md's version, which this attngate speaks
CASES = ("mha_s256_f32", "gqa_causal_s256_bf16")  # two of the example suite's five: f32 and bf16


def clean_env(venv):
    """A shell in the team's activated venv: no PYTHONPATH, nothing of attngate's checkout."""
    keep = {k: os.environ[k] for k in ("HOME", "LANG", "TMPDIR", "ATTNGATE_ADAPTER_READY_TIMEOUT") if k in os.environ}
    return dict(keep, PATH=f"{os.path.join(venv, 'bin')}:/usr/local/bin:/usr/bin:/bin", VIRTUAL_ENV=venv)


class WheelTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.wheel = build_wheel(os.path.join(cls.dir, "dist"))
        cls.venv = os.path.join(cls.dir, "venv")
        cls.team = os.path.join(cls.dir, "team")  # the team's repository: a copy of the example, outside the checkout
        shutil.copytree(os.path.join(ARGS.source_dir, "examples", "jax-kernel"), cls.team)
        make_team_venv(cls.venv, cls.wheel, cls.team)

    def wheel_version(self):
        return re.fullmatch(r"attngate_jax-(.+)-py3-none-any\.whl", os.path.basename(self.wheel)).group(1)

    def test_the_wheel_has_attngates_version_its_typed_api_and_its_command(self):
        version = attngate("--version")
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertRegex(version.stdout, rf"\battngate {re.escape(self.wheel_version())}\b")
        with zipfile.ZipFile(self.wheel) as z:
            names = z.namelist()
            info = f"attngate_jax-{self.wheel_version()}.dist-info"
            metadata = z.read(f"{info}/METADATA").decode()
            entry_points = z.read(f"{info}/entry_points.txt").decode()
        for name in ("attngate_jax/py.typed", "attngate_jax/api.py", "attngate_jax/kernels/flash.py"):
            self.assertIn(name, names)
        self.assertFalse([n for n in names if "__pycache__" in n or n.startswith(("tests/", "adapter.py"))], names)
        self.assertRegex(entry_points, r"\[console_scripts\]\s*attngate-jax-adapter = attngate_jax\.__main__:main")
        requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
        self.assertIn("jax", [re.split(r"[ ;(<>=]", r)[0] for r in requires])
        pinned = [r for r in requires if "==" in r.split(";")[0]]  # after ";": an environment marker
        self.assertEqual(pinned, [], "no dependency pinned: a team pins its own jax")

    def test_the_venv_gets_attngate_jax_from_the_wheel_alone(self):
        # The pinned venv, whose packages the new one reuses, has no attngate_jax of its own.
        pinned = subprocess.run([jax_venv_python("new"), "-c", "import attngate_jax"], cwd=self.dir,
                                env=clean_env(os.path.dirname(os.path.dirname(jax_venv_python("new")))),
                                capture_output=True, text=True)
        self.assertNotEqual(pinned.returncode, 0, "the pinned venv must not hold attngate_jax: " + pinned.stdout)
        command = os.path.join(self.venv, "bin", "attngate-jax-adapter")
        r = subprocess.run([command, "--version"], cwd=self.dir, env=clean_env(self.venv), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), f"attngate-jax {self.wheel_version()} (attngate protocol {PROTOCOL}, kernel API 1)")

    def test_a_team_module_imports_the_api_like_any_installed_package(self):
        probe = ("import json, attngate_jax, attngate_jax.api as api, team_attention.gate as gate\n"
                 "[k] = gate.make()\n"
                 "print(json.dumps({'files': [attngate_jax.__file__, api.__file__, gate.__file__],"
                 " 'missing': [n for n in api.__all__ if not hasattr(api, n)], 'kernel': k.name,"
                 " 'is_adapter': isinstance(k, api.KernelAdapter), 'api': api.API_VERSION}))")
        outside = os.path.join(self.dir, "elsewhere")
        os.makedirs(outside, exist_ok=True)
        r = subprocess.run(["python", "-c", probe], cwd=outside, env=clean_env(self.venv), capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout.splitlines()[-1])
        site = subprocess.run(["python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=outside,
                              env=clean_env(self.venv), capture_output=True, text=True, check=True).stdout.strip()
        for path in got["files"]:
            self.assertTrue(path.startswith(site + os.sep), f"{path} is not in the venv's {site}")
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(got["files"][0]), "py.typed")))
        self.assertEqual(got["missing"], [])
        self.assertEqual((got["kernel"], got["is_adapter"], got["api"]), ("team-blocked", True, 1))

    def test_attngate_runs_the_teams_kernel_through_the_installed_adapter_from_outside_the_checkout(self):
        baselines, out = os.path.join(self.team, "baselines"), os.path.join(self.team, "results.json")
        g = attngate("golden", "generate", "--suite", "suite.json", "--baselines", baselines, cwd=self.team)
        self.assertEqual(g.returncode, 0, g.stderr)
        adapter = "attngate-jax-adapter --interpret hlo --no-entry-points --kernels team_attention.gate:make"
        cases = [a for c in CASES for a in ("--case", c)]
        r = attngate("run", "--suite", "suite.json", "--adapter", adapter, "--baselines", baselines, "--checks",
                     "golden,memory", *cases, "--out", out, cwd=self.team, env=clean_env(self.venv), timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        results = read_json(out)
        self.assertEqual(sorted((e["case"], e["kernel"], e["verdict"]) for e in results["results"]),
                         sorted((c, "team-blocked", "pass") for c in CASES))
        for e in results["results"]:
            self.assertEqual({c["check"]: c["verdict"] for c in e["checks"]}["golden"], "pass", e["case"])
        fp = results["fingerprint"]["adapters"]["attngate-jax"]
        self.assertEqual(fp["adapter_version"], self.wheel_version())
        self.assertEqual(fp["url"], "started: " + adapter)
        self.assertEqual(fp["kernel_packages"], {"team-attention": "0.1.0"})

    def test_an_adapter_of_another_protocol_version_is_exit_3_naming_both(self):
        # The installed adapter, told to announce protocol PROTOCOL + 1 as a newer release would.
        newer = PROTOCOL + 1
        adapter = (f"python -c 'import sys, attngate_jax; attngate_jax.PROTOCOL = {newer}; "
                   "from attngate_jax.__main__ import main; sys.exit(main())' --no-builtins --no-entry-points")
        r = attngate("kernels", "--adapter", adapter, cwd=self.team, env=clean_env(self.venv), timeout=600)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertRegex(r.stderr, rf"adapter at http://127\.0\.0\.1:\d+ \(attngate-jax {re.escape(self.wheel_version())}, "
                                   rf"started: python -c .*\) speaks attngate protocol {newer}, this attngate speaks {PROTOCOL}")


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    require_jax_venvs("new")
    main()
