"""examples/team-repo, used as a team would: attngate installed (cmake --install into a prefix,
or the .deb into a debootstrap'd Debian 12), the repository copied where attngate's source is
not, then find_package + attngate_add_gate + ctest, a flagless `attngate run`, a kernel change
that turns the gate red, a local baseline update and an A/B of the two plugin builds.

TeamRepoInstalled runs against a prefix on this machine; TeamRepoDeb installs the .deb built
by cpack from the same build into a fresh Debian 12 chroot (the pristine chroot is cached in
$ATTNGATE_CHROOT_CACHE, default /var/tmp/attngate-deb, since debootstrap takes minutes)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import ARGS, jax_venv_python  # noqa: E402
from ci_runners import run_composite, start_forge  # noqa: E402
from jax_adapter_support import make_team_venv  # noqa: E402

TEAM_FILES = ("CMakeLists.txt", "attngate.toml", "src", "jax", "suites", ".gitignore", ".github")
KERNELS = {"team-causal", "team-jax"}  # the C++ plugin's and the JAX package's


def sh(cmd, cwd=None, env=None, timeout=900):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, shell=isinstance(cmd, str))


def copy_team_repo(dest, files=TEAM_FILES):
    src = os.path.join(ARGS.source_dir, "examples", "team-repo")
    os.makedirs(dest)
    for name in files:
        p = os.path.join(src, name)
        (shutil.copytree if os.path.isdir(p) else shutil.copy)(p, os.path.join(dest, name))


def break_causal_mask(repo):
    """The change a team might make by mistake: each causal query sees one key fewer."""
    path = os.path.join(repo, "src", "team_kernels.cpp")
    with open(path) as f:
        text = f.read()
    assert "? i + Sk - Sq :" in text
    with open(path, "w") as f:
        f.write(text.replace("? i + Sk - Sq :", "? i + Sk - Sq - 1 :"))


class TeamRepoInstalled(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(jax_venv_python("new")):
            raise unittest.SkipTest(".venv/jax-new is missing (bash ci/install-deps.sh makes it): the team's JAX kernel needs jax")
        cls.dir = tempfile.mkdtemp(prefix="attngate-team-")
        cls.prefix = os.path.join(cls.dir, "prefix")
        build_dir = os.path.dirname(ARGS.attngate)
        for cmd in (["cmake", "--build", build_dir, "--target", "attngate_jax_wheel"], ["cmake", "--install", build_dir, "--prefix", cls.prefix]):
            r = sh(cmd)
            assert r.returncode == 0, r.stdout + r.stderr
        cls.repo = os.path.join(cls.dir, "team")
        copy_team_repo(cls.repo)
        # The team's venv: attngate-jax from the wheel the install put in share/, and the team's package.
        share = os.path.join(cls.prefix, "share", "attngate", "python")
        wheels = [os.path.join(share, f) for f in os.listdir(share)]
        venv = os.path.join(cls.dir, "venv")
        make_team_venv(venv, wheels[0], os.path.join(cls.repo, "jax"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNGATE_") or k == "ATTNGATE_ADAPTER_READY_TIMEOUT"}
        env.pop("PYTHONPATH", None)
        env["PATH"] = os.pathsep.join((os.path.join(venv, "bin"), os.path.join(cls.prefix, "bin"), env["PATH"]))  # the venv activated
        env["CMAKE_PREFIX_PATH"] = cls.prefix
        env.pop("CI", None)  # a developer's machine: baseline update writes
        cls.env = env

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def run_in(self, cmd, cwd=None, ok=True):
        r = sh(cmd, cwd=cwd or self.repo, env=self.env)
        if ok:
            self.assertEqual(r.returncode, 0, f"{cmd}\n{r.stdout}\n{r.stderr}")
        return r

    def build(self):
        self.run_in(["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release"])
        self.run_in(["cmake", "--build", "build"])

    def test_the_installed_smoke_reads_the_shipped_perf_windows(self):
        """Every class's smoke window in the checkout reads the same from an installed attngate in
        a directory with no store of its own, so the installed smoke gate is judged as the checkout's."""
        history = os.path.join(ARGS.source_dir, "baselines", "history", "smoke")
        classes = set()  # history/smoke/<class>/<month>/<record>.json, beside fingerprints/ and appended/
        for c in os.listdir(history):
            if c in ("fingerprints", "appended"):
                continue
            for month in os.listdir(os.path.join(history, c)):
                for n in os.listdir(os.path.join(history, c, month)):
                    with open(os.path.join(history, c, month, n)) as f:
                        classes.add(json.load(f)["machine"])
        self.assertTrue(classes, f"no smoke windows under {history}")
        empty = tempfile.mkdtemp(dir=self.dir)
        for c in sorted(classes):
            cmd = ["history", "--suite", "smoke", "--machine-class", c, "--last", "0", "--json"]
            checkout = sh([ARGS.attngate, *cmd, "--baselines", os.path.join(ARGS.source_dir, "baselines")])
            installed = self.run_in(["attngate", *cmd], cwd=empty)
            self.assertEqual(checkout.returncode, 0, checkout.stderr)
            rows = json.loads(installed.stdout)
            self.assertGreaterEqual(min(len(r["values"]) for r in rows), 6, f"{c}: a window too short to gate")
            self.assertEqual(rows, json.loads(checkout.stdout), f"{c}: the installed windows differ from the checkout's")

    def test_init_in_a_repository_with_only_its_kernel(self):
        repo = os.path.join(self.dir, "fresh")
        copy_team_repo(repo, ("CMakeLists.txt", "src"))
        self.run_in(["git", "init", "-q"], cwd=repo)
        self.run_in(["cmake", "-S", ".", "-B", "build"], cwd=repo)
        self.run_in(["cmake", "--build", "build"], cwd=repo)
        r = self.run_in(["attngate", "init", "--plugin", "build/libteam_kernels.so"], cwd=repo)
        for written in ("attngate.toml", ".github/workflows/attngate.yml"):
            self.assertTrue(os.path.exists(os.path.join(repo, written)), r.stdout)
        self.run_in(["attngate", "golden", "generate"], cwd=repo)
        r = self.run_in(["ctest", "--output-on-failure"], cwd=os.path.join(repo, "build"))
        self.assertIn("100% tests passed", r.stdout)
        r = self.run_in(["attngate", "run"], cwd=repo)
        self.assertIn("GATE PASSED", r.stdout)

    def test_the_reusable_action_gates_a_pull_request_of_the_team(self):
        """The sample's own workflow: its action step's inputs, run step by step as GitHub's
        runner would, on a pull request whose head breaks the causal cases."""
        repo = os.path.join(self.dir, "pr")
        copy_team_repo(repo)
        with open(os.path.join(repo, ".github", "workflows", "attngate.yml")) as f:
            steps = yaml.safe_load(f)["jobs"]["gate"]["steps"]
        inputs = next(s["with"] for s in steps if s.get("uses", "").startswith("attngate/attngate@"))
        # The release's .deb is on no network here: this build's install (on PATH) stands in for it.
        inputs = dict(inputs, install="none", deb="", **{"deb-sha256": ""}, args="--rounds 3 --max-rounds 0 --min-time 0.002")
        git = lambda *a: self.run_in(["git", *a], cwd=repo)  # noqa: E731
        git("init", "-q")
        git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
        base = self.run_in(["git", "rev-parse", "HEAD"], cwd=repo).stdout.strip()
        self.run_in(["cmake", "-S", ".", "-B", "build"], cwd=repo)
        self.run_in(["cmake", "--build", "build"], cwd=repo)
        self.run_in(["attngate", "golden", "generate"], cwd=repo)
        git("-c", "user.name=t", "-c", "user.email=t@t", "add", "baselines")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "goldens")
        base = self.run_in(["git", "rev-parse", "HEAD"], cwd=repo).stdout.strip()
        break_causal_mask(repo)
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "head: one key fewer")
        shutil.rmtree(os.path.join(repo, "build"))
        temp = tempfile.mkdtemp(dir=self.dir)
        env = dict(self.env, GITHUB_WORKSPACE=repo, RUNNER_TEMP=temp, GITHUB_STEP_SUMMARY=os.path.join(temp, "summary.md"),
                   GITHUB_REPOSITORY="team/kernels", GITHUB_API_URL=start_forge(self), CI="true", GITHUB_ACTIONS="true")
        github = {"event": {"pull_request": {"number": 3, "base": {"sha": base}}}, "token": "t0ken", "action_ref": "v0.2.0"}
        run = run_composite(ARGS.source_dir, inputs, github, env)
        self.assertNotEqual(run.rc, 0, run.log)
        self.assertEqual(run.failed_step, run.steps[-1][0], "only the last step fails, after the summary and comment:\n" + run.log)
        with open(env["GITHUB_STEP_SUMMARY"]) as f:
            summary = f.read().replace("\\", "")  # Markdown escapes the underscores
        self.assertIn("golden", summary)
        self.assertIn("causal_f32", summary)

    def test_the_team_workflow(self):
        installed = os.path.join(self.prefix, "bin", "attngate")
        r = self.run_in([installed, "--version"])
        self.assertRegex(r.stdout, r"^attngate \d+\.\d+\.\d+ \(commit [0-9a-f]{7,}(-dirty)?\)")
        doc = os.path.join(self.prefix, "share", "doc", "attngate")
        for page in ("README.md", "docs/install.md", "docs/protocol.md", "kernels/jax/README.md", "examples/team-repo/attngate.toml"):
            self.assertTrue(os.path.isfile(os.path.join(doc, page)), page)
        # find_package(attngate) + attngate_add_gate: ctest gates the plugin.
        self.build()
        self.run_in(["attngate", "golden", "generate"])
        self.assertTrue(os.path.exists(os.path.join(self.repo, "baselines", "goldens", "team", "manifest.json")))
        r = self.run_in(["ctest", "--output-on-failure"], cwd=os.path.join(self.repo, "build"))
        self.assertIn("100% tests passed", r.stdout)
        self.assertIn("attngate.team", r.stdout)
        # ctest's results and reports go to the build tree; the toml's [report] paths are for runs by hand.
        for report in ("results.json", "report.html", "summary.md", "junit.xml"):
            self.assertTrue(os.path.exists(os.path.join(self.repo, "build", "attngate", "team", report)), report)
        self.assertFalse(os.path.exists(os.path.join(self.repo, "reports")), "ctest wrote into the source tree")
        # A flagless run reads attngate.toml: suite, plugin, checks, reports.
        r = self.run_in(["attngate", "run"])
        self.assertIn("GATE PASSED", r.stdout)
        with open(os.path.join(self.repo, "reports", "results.json")) as f:
            res = json.load(f)
        self.assertEqual(res["suite"], "team")
        self.assertEqual({row["kernel"] for row in res["results"]}, KERNELS)
        self.assertEqual(len(res["results"]), 6)
        self.assertFalse({c["check"] for row in res["results"] for c in row["checks"]} & {"perf", "cost"},
                         "the example leaves throughput and cost to `attngate ab`")
        r = self.run_in(["attngate", "run", "--checks", "perf,cost", "--out", "build/priced.json"])
        with open(os.path.join(self.repo, "build", "priced.json")) as f:
            cost = [c for row in json.load(f)["results"] for c in row["checks"] if c["check"] == "cost"]
        self.assertTrue(cost and all("USD" in c["reason"] for c in cost), "priced from the installed pricing.json")
        for report in ("report.html", "summary.md", "junit.xml"):
            self.assertTrue(os.path.exists(os.path.join(self.repo, "reports", report)), report)
        # Memory baselines accepted locally land in the team's store.
        self.run_in(["attngate", "baseline", "update", "--checks", "memory", "--yes", "--reason", "first baselines"])
        self.assertTrue(os.path.exists(os.path.join(self.repo, "baselines", "memory", "team.json")))
        r = self.run_in(["attngate", "run"])
        with open(os.path.join(self.repo, "reports", "results.json")) as f:
            memory = [c for row in json.load(f)["results"] if row["kernel"] == "team-causal"  # the plugin's peak is baselined
                      for c in row["checks"] if c["check"] == "memory"]
        self.assertTrue(memory and all("against its baseline" in c["reason"] for c in memory), memory)
        # A change that breaks the causal cases: ctest and run are red, naming the case and why.
        old = os.path.join(self.dir, "libteam_kernels-base.so")
        shutil.copy(os.path.join(self.repo, "build", "libteam_kernels.so"), old)
        break_causal_mask(self.repo)
        self.build()
        r = self.run_in(["ctest"], cwd=os.path.join(self.repo, "build"), ok=False)
        self.assertNotEqual(r.returncode, 0)
        r = self.run_in(["attngate", "run"], ok=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        failed = [line for line in r.stdout.splitlines() if "FAIL" in line]
        self.assertTrue(any("causal_f32" in line for line in failed), r.stdout)
        self.assertFalse(any(line.split()[1] == "mha_f32" for line in failed if len(line.split()) > 1), r.stdout)
        self.assertIn("GATE FAILED", r.stdout)
        # A/B of the two builds of the plugin: B's golden failures make it red, and its last line says so.
        new = os.path.join(self.repo, "build", "libteam_kernels.so")
        r = self.run_in(["attngate", "ab", "--a-plugin", old, "--b-plugin", new], ok=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        last = r.stdout.strip().splitlines()[-1].lower()
        self.assertNotIn("no regression", last)


class TeamRepoDeb(unittest.TestCase):
    """The .deb on a fresh Debian 12, the team's repository beside it, no attngate source."""

    def test_deb_in_a_fresh_debian_12(self):
        if shutil.which("debootstrap") is None:
            print("SKIPPED: debootstrap is not installed (ci/install-deps.sh installs it)")
            raise unittest.SkipTest("debootstrap is not installed")
        work = tempfile.mkdtemp(prefix="attngate-deb-", dir="/var/tmp")
        root = os.path.join(work, "root")
        mounts = []
        try:
            build_dir = os.path.dirname(ARGS.attngate)
            r = sh(["cmake", "--build", build_dir, "--target", "attngate_jax_wheel"])  # the .deb ships it when built
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = sh(["cpack", "-G", "DEB", "--config", os.path.join(build_dir, "CPackConfig.cmake"), "-B", work], cwd=work)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            debs = [f for f in os.listdir(work) if f.endswith(".deb")]
            self.assertEqual(len(debs), 1, os.listdir(work))
            info = sh(["dpkg-deb", "--field", os.path.join(work, debs[0]), "Depends", "Version"]).stdout
            self.assertIn("libcurl4", info)
            self.assertNotIn("-dev", info, "runtime packages only")
            cache = os.environ.get("ATTNGATE_CHROOT_CACHE", "/var/tmp/attngate-deb")
            pristine = os.path.join(cache, "pristine")
            if not os.path.isdir(os.path.join(pristine, "usr")):
                os.makedirs(cache, exist_ok=True)
                shutil.rmtree(pristine, ignore_errors=True)
                r = sh(["debootstrap", "--variant=minbase", "bookworm", pristine + ".new", "http://deb.debian.org/debian"], timeout=1200)
                self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
                os.rename(pristine + ".new", pristine)
            # The team's JAX pins from PyPI, as its venv would get them; kept beside the chroot.
            wheels = os.path.join(cache, "wheels")
            lock = os.path.join(ARGS.source_dir, "examples", "team-repo", "jax", "requirements.lock")
            r = sh(["/usr/bin/python3", "-m", "pip", "download", "-q", "--disable-pip-version-check", "--require-hashes", "--no-deps",
                    "-r", lock, "-d", wheels], timeout=1200)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            r = sh(["/usr/bin/python3", "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", wheels, "setuptools>=61", "wheel"],
                   timeout=600)  # what pip's isolated build of the team's package asks for
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            self.assertEqual(sh(["cp", "-a", pristine, root]).returncode, 0)
            shutil.copytree(wheels, os.path.join(root, "tmp", "wheels"))
            shutil.copy(os.path.join(work, debs[0]), os.path.join(root, "tmp"))
            copy_team_repo(os.path.join(root, "home", "team"))
            shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
            # debootstrap made /dev's nodes; attngate reads /proc/self/exe to find its share/.
            self.assertEqual(sh(["mount", "-t", "proc", "proc", os.path.join(root, "proc")]).returncode, 0)
            mounts.append(os.path.join(root, "proc"))
            script = f"""set -e
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
start=$(date +%s)
apt-get install -y -qq --no-install-recommends /tmp/{debs[0]} cmake g++ make python3-venv >/dev/null
test ! -e /work && test ! -e {ARGS.source_dir}    # no attngate source on any path
installed=$(date +%s)
cd /home/team
attngate --version
test -s /usr/share/doc/attngate/README.md && test -s /usr/share/doc/attngate/docs/protocol.md && echo "manual installed"
cmake -S . -B build >/dev/null && cmake --build build >/dev/null
built=$(date +%s)
python3 -m venv .venv && . .venv/bin/activate
pip install -q --disable-pip-version-check --no-index --find-links /tmp/wheels --require-hashes -r jax/requirements.lock
pip install -q --disable-pip-version-check --no-index /usr/share/attngate/python/attngate_jax-*.whl
pip install -q --disable-pip-version-check --no-index --find-links /tmp/wheels ./jax
venv=$(date +%s)
attngate golden generate >/dev/null
(cd build && ctest --output-on-failure)
attngate run | tail -1
python3 -c "import json; print('kernels gated:', sorted({{r['kernel'] for r in json.load(open('reports/results.json'))['results']}}))"
python3 -c "import json; print('ctest gated:', sorted({{r['kernel'] for r in json.load(open('build/attngate/team/results.json'))['results']}}))"
echo "seconds: apt $((installed - start)), C++ build $((built - installed)), JAX venv $((venv - built)), goldens + ctest + run $(( $(date +%s) - venv ))"
"""
            t0 = time.time()
            r = subprocess.run(["chroot", root, "/usr/bin/env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                "HOME=/root", "bash", "-c", script], capture_output=True, text=True, timeout=1500)
            print(r.stdout, r.stderr[-3000:], f"chroot steps: {time.time() - t0:.0f} s", sep="\n")
            self.assertEqual(r.returncode, 0)
            self.assertIn("100% tests passed", r.stdout)
            self.assertIn("GATE PASSED", r.stdout)
            self.assertIn("manual installed", r.stdout)  # the README's links and --help's docs/protocol.md
            self.assertIn("kernels gated: ['team-causal', 'team-jax']", r.stdout)
            self.assertIn("ctest gated: ['team-causal', 'team-jax']", r.stdout)
        finally:
            for m in mounts:
                sh(["umount", "-l", m])
            if not any(os.path.ismount(m) for m in mounts):  # never delete through a mount
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    common.main()
