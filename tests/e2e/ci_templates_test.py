"""The CI templates (ci/github/attngate.yml, ci/gitlab/attngate.yml): valid against the
schemas GitHub and GitLab publish (check-jsonschema's vendored ones) and clean under zizmor,
with the jobs the fleet needs; GitLab's rules evaluated as GitLab does at pipeline creation
(a merge request that touches none of the paths still gets a pipeline); every attngate
command they run parses with the real CLI (ATTNGATE_PARSE_ONLY=1); the JAX-bump job run
for real on two lock files (jax 0.7.2 and 0.10.2); the PR/MR comment posted, then updated
in place, against a local stand-in of each forge's API. The reusable pieces a team's
repository uses (action.yml, .github/workflows/gate.yml, templates/gate/template.yml): the
same schemas and zizmor, and their steps and jobs run as a runner would in a team repository
of two commits (tests/e2e/ci_runners.py)."""
import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ci_runners import FakeForge, gitlab_component, run_composite, run_gitlab_job, start_forge  # noqa: E402
from common import ARGS, attngate, main, read_json  # noqa: E402
import results_schema  # noqa: E402

FAKE_ENV = {"SUITE": "smoke", "SHARDS": "4", "ATTNGATE_STORE": "https://store.invalid/attngate/", "CI_NODE_INDEX": "2",
            "CI_NODE_TOTAL": "4", "GITHUB_STEP_SUMMARY": "/tmp/summary", "GITHUB_WORKSPACE": "/w", "CI_PROJECT_DIR": "/w",
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": "abc", "SHARD": "2"}
OPERATORS = {"||", "&&", ";", "|", ">", ">>", "(", ")", "&"}
GITLAB_KEYWORDS = {"stages", "variables", "workflow", "default", "include", "image", "services", "cache", "before_script",
                   "after_script"}


# The checkout this file is in (ARGS.source_dir, known before the arguments are parsed).
SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def tools(name):
    return os.path.join(SOURCE, ".venv", "tools", "bin", name)


def scripts_of(template):
    """Every shell script in a GitHub workflow's steps or a GitLab job's script lists."""
    out = []
    if "jobs" in template:
        for job in template["jobs"].values():
            out += [step["run"] for step in job.get("steps", []) if "run" in step]
    else:
        for name, job in template.items():
            if isinstance(job, dict):
                for key in ("before_script", "script"):
                    out += job.get(key, [])
    return out


def attngate_commands(script):
    """The argument lists of every attngate invocation, variables filled in."""
    script = re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", "2", script)
    script = re.sub(r"\$\{\{[^}]*\}\}", "x", script)
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = [re.sub(r"\$\{?(\w+)\}?", lambda m: FAKE_ENV.get(m.group(1), m.group(0)), t) for t in lexer]
        for i, t in enumerate(tokens):
            if os.path.basename(t) == "attngate" and i + 1 < len(tokens) and re.fullmatch(r"[a-z]+", tokens[i + 1]):
                args = []
                for a in tokens[i + 1:]:
                    if a in OPERATORS:
                        break
                    args.append(a)
                commands.append(args)
    return commands


# --- GitLab's rules, evaluated as at pipeline creation ------------------------------------

def glob_regex(pattern):
    """GitLab's `changes:` glob (File.fnmatch with FNM_PATHNAME | FNM_DOTMATCH | FNM_EXTGLOB)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "{":
            end = pattern.index("}", i)
            out, i = out + "(?:" + "|".join(map(re.escape, pattern[i + 1:end].split(","))) + ")", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def gitlab_if(expr, variables):
    """A rules:if expression: $VAR, "string", ==, !=, &&, || and parentheses."""
    tokens = re.findall(r"\$\w+|\"[^\"]*\"|'[^']*'|==|!=|&&|\|\||\(|\)", expr)
    if "".join(tokens) != re.sub(r"\s+", "", expr):
        raise ValueError(f"rules:if this evaluator does not read: {expr}")
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take():
        pos[0] += 1
        return tokens[pos[0] - 1]

    def atom():
        t = take()
        if t == "(":
            v = disjunction()
            assert take() == ")"
            return v
        return variables.get(t[1:]) if t.startswith("$") else t[1:-1]

    def comparison():
        left = atom()
        if peek() in ("==", "!="):
            op, right = take(), atom()
            return (left == right) == (op == "==")
        return bool(left)

    def chain(operator, operand, combine):
        """operand (operator operand)*, folded with combine; every operand is evaluated."""
        def parse():
            v = operand()
            while peek() == operator:
                take()
                v = combine(v, operand())
            return v
        return parse

    conjunction = chain("&&", comparison, lambda a, b: a and b)
    disjunction = chain("||", conjunction, lambda a, b: a or b)
    return disjunction()


def gitlab_pipeline(template, variables, changed):
    """The jobs GitLab creates for this pipeline, and its errors (needs of a job that is absent)."""
    jobs = {}
    for name, job in template.items():
        if name.startswith(".") or name in GITLAB_KEYWORDS or not isinstance(job, dict):
            continue
        for rule in job.get("rules", [{}]):
            if "if" in rule and not gitlab_if(rule["if"], variables):
                continue
            patterns = rule.get("changes", [])
            patterns = patterns.get("paths", []) if isinstance(patterns, dict) else patterns
            if patterns and not any(glob_regex(p).match(f) for p in patterns for f in changed):
                continue
            if rule.get("when", "on_success") != "never":
                jobs[name] = job
            break
    errors = []
    for name, job in jobs.items():
        for need in job.get("needs", []):
            need = need if isinstance(need, dict) else {"job": need}
            if need["job"] not in jobs and not need.get("optional", False):
                errors.append(f"{name}: needs {need['job']}, which is not in the pipeline")
    return set(jobs), errors


MR = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_DEFAULT_BRANCH": "main"}
PUSH_MAIN = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"}


class TemplateTest(unittest.TestCase):
    def load(self, name):
        with open(os.path.join(ARGS.source_dir, "ci", name, "attngate.yml")) as f:
            return yaml.safe_load(f)

    def parse(self, args):
        env = dict(os.environ, ATTNGATE_PARSE_ONLY="1")
        return attngate(*args, env=env, cwd=ARGS.source_dir)

    def check_commands(self, template):
        commands = [c for s in scripts_of(template) for c in attngate_commands(s)]
        subcommands = [c[0] for c in commands]
        for expected in ("ab", "merge", "run"):
            self.assertIn(expected, subcommands)
        for args in commands:
            r = self.parse(args)
            self.assertEqual(r.returncode, 0, f"attngate {' '.join(args)}: {r.stdout}{r.stderr}")
            self.assertEqual(r.stdout.strip(), f"parsed: {args[0]}")
        ab = [c for c in commands if c[0] == "ab"][0]
        self.assertIn("--shard", ab)
        self.assertIn("--store", ab)
        merge = [c for c in commands if c[0] == "merge"][0]
        for option in ("--html", "--markdown", "--store", "-o"):
            self.assertIn(option, merge)
        self.assertIn("--append-history", [c for c in commands if c[0] == "run"][0])
        return commands

    def test_parse_only_has_teeth(self):
        self.assertEqual(self.parse(["merge", "a.json", "--no-such-option"]).returncode, 2)
        self.assertEqual(self.parse(["ab", "--suite", "smoke", "--rounds", "1"]).returncode, 2)
        self.assertEqual(self.parse(["run"]).returncode, 2)  # --suite is required

    def test_github_actions(self):
        t = self.load("github")
        jobs = t["jobs"]
        self.assertEqual(set(jobs), {"build", "ab", "merge", "jax-bump", "jax-bump-tpu", "comment", "history"})
        self.assertEqual(jobs["ab"]["strategy"]["matrix"]["shard"], [1, 2, 3, 4])
        self.assertEqual(len(jobs["ab"]["strategy"]["matrix"]["shard"]), int(t["env"]["SHARDS"]))
        self.assertIn("secrets.", t["env"]["ATTNGATE_STORE_TOKEN"])
        self.assertIn("**/requirements*.lock", t[True]["pull_request"]["paths"])  # PyYAML reads `on:` as True
        self.assertEqual(t[True]["push"]["branches"], ["main"])
        merge = jobs["merge"]
        self.assertIn('"$GITHUB_STEP_SUMMARY"', "\n".join(s.get("run", "") for s in merge["steps"]))
        uploads = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
        self.assertIn("report.html", uploads[0]["with"]["path"])
        self.assertIn("summary.md", uploads[0]["with"]["path"])
        self.assertIn("exit $status", merge["steps"][-2]["run"])
        self.assertIn("base.sha", json.dumps(jobs["build"]))
        self.check_commands(t)

    def test_github_runs_only_what_it_must_with_the_least_it_needs(self):
        t = self.load("github")
        jobs = t["jobs"]
        self.assertEqual(t["permissions"], {})
        for name, job in jobs.items():
            self.assertIn("permissions", job, name)
            self.assertTrue(set(job["permissions"].values()) <= {"read", "write"}, name)
        self.assertEqual(jobs["comment"]["permissions"], {"pull-requests": "write"})
        self.assertEqual(t["concurrency"]["cancel-in-progress"], "${{ github.event_name == 'pull_request' }}")
        # No merge after a failed build: always() would run it on a build that never happened.
        self.assertNotIn("always()", jobs["merge"]["if"])
        self.assertIn("needs.build.result == 'success'", jobs["merge"]["if"])
        self.assertIn("!cancelled()", jobs["merge"]["if"])
        # Each job installs the groups it uses and nothing of the test tools.
        deps = {}
        for name, job in jobs.items():
            for step in job["steps"]:
                if "ci/build.sh" in step.get("run", "") or "ci/install-deps.sh" in step.get("run", ""):
                    deps[name] = step.get("env", {}).get("ATTNGATE_DEPS")
        self.assertEqual(deps, {"build": "build", "ab": "runtime", "merge": "runtime", "jax-bump": "build python",
                                "jax-bump-tpu": "build python", "history": "build"})
        for name, job in jobs.items():
            text = json.dumps(job)
            for heavy in ("chromium", "clang", "valgrind", "stress-ng", "ci/test.sh"):
                self.assertNotIn(heavy, text, name)
        # The apt packages of every job that installs some are cached, and the venvs.
        for name in deps:
            if name == "jax-bump-tpu":
                continue  # a machine of its own: its packages stay installed
            caches = [s["with"] for s in jobs[name]["steps"] if s.get("uses", "").startswith("actions/cache@")]
            self.assertIn(".apt", [c["path"] for c in caches], name)
        self.assertIn(".venv", [s["with"]["path"] for s in jobs["jax-bump"]["steps"] if s.get("uses", "").startswith("actions/cache@")])
        self.assertIn(".apt", t["env"]["ATTNGATE_APT_CACHE"])
        # Every action is pinned to a commit.
        for name, job in jobs.items():
            for step in job["steps"]:
                if "uses" in step:
                    self.assertRegex(step["uses"], r"^[\w-]+/[\w-]+@[0-9a-f]{40}$", name)

    def test_github_jax_bump_and_its_tpu_variant(self):
        jobs = self.load("github")["jobs"]
        for name, interpret in (("jax-bump", "auto"), ("jax-bump-tpu", "none")):
            job = jobs[name]
            self.assertEqual(job["env"]["ATTNGATE_INTERPRET"], interpret)
            run = "\n".join(s.get("run", "") for s in job["steps"])
            self.assertIn('bash ci/jax-bump.sh "$BASE_SHA"', run)
            self.assertIn("github.event.pull_request.base.sha", json.dumps(job))
        self.assertEqual(jobs["jax-bump-tpu"]["runs-on"], ["self-hosted", "tpu"])
        self.assertIn("vars.ATTNGATE_TPU_RUNNER == 'true'", jobs["jax-bump-tpu"]["if"])
        self.assertIn("head.repo.full_name == github.repository", jobs["jax-bump-tpu"]["if"])
        self.assertIn("ci/post-summary.py github", json.dumps(jobs["comment"]))
        # A red bump is bisected (ci/jax-bump.sh) and the answer joins the PR comment.
        self.assertIn("reports/jax-report/jax-bisect.md", json.dumps(jobs["comment"]))
        self.assertIn("jax-bisect.md", json.dumps(jobs["jax-bump"]))
        with open(os.path.join(ARGS.source_dir, "ci", "jax-bump.sh")) as f:
            script = f.read()
        self.assertRegex(script, r'if \[ "\$status" = 1 \].*\n(.*\n)*.*"\$attngate" bisect .*--a-lock .venv/locks/base.lock --b-lock .venv/locks/head.lock')
        self.assertEqual(jobs["comment"]["needs"], ["merge", "jax-bump"])
        self.assertEqual(jobs["history"]["if"], "github.event_name == 'push'")

    def test_gitlab_ci(self):
        t = self.load("gitlab")
        self.assertEqual(t["stages"], ["build", "ab", "merge", "report"])
        self.assertEqual(t["attngate-ab"]["parallel"], 4)
        merge = t["attngate-merge"]
        self.assertIn("report.html", merge["artifacts"]["paths"])
        self.assertEqual(merge["artifacts"]["reports"]["junit"], "junit.xml")
        self.assertIn("exit $status", merge["script"])
        self.assertIn("CI_MERGE_REQUEST_DIFF_BASE_SHA", "\n".join(scripts_of(t)))
        self.assertIn('bash ci/jax-bump.sh "$CI_MERGE_REQUEST_DIFF_BASE_SHA"', "\n".join(t["attngate-jax-bump"]["script"]))
        self.assertIn("python3 ci/post-summary.py gitlab summary.md jax-summary.md jax-bisect.md", t["attngate-comment"]["script"])
        commands = self.check_commands(t)
        self.assertIn("2/4", [c for c in commands if c[0] == "ab"][0])
        deps = {n: j["variables"].get("ATTNGATE_DEPS") for n, j in t.items() if n.startswith("attngate-") and "ATTNGATE_DEPS" in j.get("variables", {})}
        self.assertEqual(deps, {"attngate-build": "build", "attngate-ab": "runtime", "attngate-merge": "runtime",
                                "attngate-jax-bump": "build python", "attngate-history": "build"})

    def test_gitlab_rules_make_a_pipeline_for_every_merge_request(self):
        t = self.load("gitlab")
        mr_jobs = {"attngate-build", "attngate-ab", "attngate-merge", "attngate-jax-bump", "attngate-comment"}
        # Touches none of the template's paths: no attngate job, and a valid pipeline for the rest.
        jobs, errors = gitlab_pipeline(t, MR, ["README.md", "docs/guide.md"])
        self.assertEqual((jobs, errors), (set(), []))
        for changed in (["kernels/jax/requirements-new.lock"], ["kernels/flash.cpp"], ["third_party/requirements-dev.txt", "README.md"]):
            jobs, errors = gitlab_pipeline(t, MR, changed)
            self.assertEqual(jobs, mr_jobs, changed)
            self.assertEqual(errors, [], changed)
        self.assertEqual(gitlab_pipeline(t, PUSH_MAIN, ["README.md"]), ({"attngate-history"}, []))
        self.assertEqual(gitlab_pipeline(t, dict(PUSH_MAIN, CI_COMMIT_BRANCH="topic"), ["kernels/flash.cpp"]), (set(), []))
        # The comment is posted even when the gate failed.
        self.assertEqual(t["attngate-comment"]["rules"][0]["when"], "always")

    def test_the_rules_evaluator_finds_the_broken_pipeline_it_guards_against(self):
        # The template before: only the build had the `changes:` rule, so an untouched merge
        # request got an A/B and a merge that needed a build that was not there.
        t = copy.deepcopy(self.load("gitlab"))
        for name in ("attngate-ab", "attngate-merge"):
            t[name]["rules"] = [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
        jobs, errors = gitlab_pipeline(t, MR, ["README.md"])
        self.assertEqual(jobs, {"attngate-ab", "attngate-merge"})
        self.assertIn("attngate-ab: needs attngate-build, which is not in the pipeline", errors)
        self.assertTrue(glob_regex("**/requirements*.lock").match("requirements.lock"))
        self.assertTrue(glob_regex("kernels/**/*").match("kernels/jax/adapter.py"))
        self.assertFalse(glob_regex("kernels/**/*").match("kernelsx/a.py"))
        self.assertTrue(gitlab_if('$A == "x" && ($B != "y" || $C)', {"A": "x", "B": "y", "C": "1"}))
        self.assertFalse(gitlab_if('$A == "x" && $B', {"A": "x"}))

    @unittest.skipUnless(os.path.exists(tools("check-jsonschema")), ".venv/tools is missing: bash ci/install-deps.sh creates it")
    def test_both_templates_pass_check_jsonschema_with_the_vendored_schemas(self):
        for forge, schema in (("github", "vendor.github-workflows"), ("gitlab", "vendor.gitlab-ci")):
            path = os.path.join(ARGS.source_dir, "ci", forge, "attngate.yml")
            p = subprocess.run([tools("check-jsonschema"), "--builtin-schema", schema, path], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("ok -- validation done", p.stdout)
            # ... and the schema has teeth: a job with a misspelt key is refused.
            t = self.load(forge)
            (t["jobs"]["build"] if forge == "github" else t["attngate-build"])["runs_on_typo"] = "x"
            with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
                yaml.safe_dump(t, f)
                f.flush()
                p = subprocess.run([tools("check-jsonschema"), "--builtin-schema", schema, f.name], capture_output=True, text=True, timeout=120)
            self.assertNotEqual(p.returncode, 0, f"{schema} accepted an unknown job key")

    @unittest.skipUnless(os.path.exists(tools("zizmor")), ".venv/tools is missing: bash ci/install-deps.sh creates it")
    def test_the_github_template_passes_zizmor(self):
        # The auditor persona reports everything zizmor knows; each finding that is accepted
        # is ignored in the file with its reason (`# zizmor: ignore[...]`).
        path = os.path.join(ARGS.source_dir, "ci", "github", "attngate.yml")
        p = subprocess.run([tools("zizmor"), "--offline", "--persona=auditor", "--no-progress", path], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("No findings to report", p.stdout)
        with open(path) as f:
            for line in f:
                if "zizmor: ignore[" in line:
                    self.assertRegex(line, r"zizmor: ignore\[[a-z-]+\] \w.{20,}", "an ignore without its reason")
        # ... and zizmor has teeth here: an unpinned action and persisted credentials are found.
        with open(path) as f:
            text = f.read().replace("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683", "actions/checkout@v4", 1)
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "attngate.yml")
            with open(bad, "w") as f:
                f.write(text)
            p = subprocess.run([tools("zizmor"), "--offline", "--no-progress", bad], capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("unpinned-uses", p.stdout)


# --- the JAX-bump job, run for real -------------------------------------------------------

def venv_python(line):
    return os.path.join(SOURCE, ".venv", f"jax-{line}", "bin", "python")


def leaves(value, prefix=""):
    """(dotted key, leaf) of every leaf of a JSON object."""
    if not isinstance(value, dict):
        return [(prefix, value)]
    return [kv for k, v in value.items() for kv in leaves(v, f"{prefix}.{k}" if prefix else k)]


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class JaxBumpRepository:
    """A repository whose base commit locks jax 0.7.2 and whose head locks 0.10.2
    (kernels/jax/requirements-*.lock), for ci/jax-bump.sh (here and in jax_bump_bisect_test.py).
    The venvs made from those locks exist already (.venv/jax-old and jax-new, with their lock
    hashes): the job finds them by hash instead of installing again. BASE and HEAD swap them."""

    BASE, HEAD = "old", "new"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-jaxbump-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        src, repo = ARGS.source_dir, os.path.join(self.dir, "repo")
        self.repo = repo
        for part in ("ci", "kernels/jax", "suites", "baselines/goldens/jax-smoke"):
            shutil.copytree(os.path.join(src, part), os.path.join(repo, part), ignore=shutil.ignore_patterns("__pycache__"))
        os.makedirs(os.path.join(repo, ".venv"))
        for line in ("old", "new"):
            os.symlink(os.path.realpath(os.path.join(src, ".venv", f"jax-{line}")), os.path.join(repo, ".venv", f"jax-{line}"))
        self.lock = os.path.join(repo, "kernels", "jax", "requirements-new.lock")
        shutil.copy(os.path.join(src, "kernels", "jax", f"requirements-{self.BASE}.lock"), self.lock)  # the base locks 0.7.2
        self.git("init", "-q")
        self.git("add", "ci", "kernels", "suites", "baselines")
        self.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base: jax 0.7.2")
        self.base = self.git("rev-parse", "HEAD").strip()
        shutil.copy(os.path.join(src, "kernels", "jax", f"requirements-{self.HEAD}.lock"), self.lock)  # the head bumps to 0.10.2
        self.env = dict(os.environ, ATTNGATE_BUILD_DIR=os.path.dirname(ARGS.attngate), ATTNGATE_INTERPRET="hlo")
        for line in ("old", "new"):  # what lets the job find them
            with open(os.path.join(src, ".venv", f"jax-{line}", ".attngate-lock-sha256")) as f:
                self.assertEqual(f.read().strip(), sha256_of(os.path.join(src, "kernels", "jax", f"requirements-{line}.lock")))

    def git(self, *args):
        return subprocess.run(["git", "-C", self.repo, *args], check=True, capture_output=True, text=True).stdout

    def job(self, *extra):
        return subprocess.run(["bash", os.path.join(self.repo, "ci", "jax-bump.sh"), *extra], capture_output=True, text=True,
                              env=self.env, timeout=1500)


@unittest.skipUnless(os.path.exists(venv_python("old")) and os.path.exists(venv_python("new")),
                     ".venv/jax-old or .venv/jax-new is missing: bash ci/install-deps.sh creates them")
class JaxBumpJobTest(JaxBumpRepository, unittest.TestCase):
    """ci/jax-bump.sh, which both templates' JAX-bump job runs, across the two locks. A red
    bump's bisect (new venvs from PyPI, minutes) is left to jax_bump_bisect_test.py (slow)."""

    CASES = ["mha_s128_f32", "causal_s256_bf16"]

    def setUp(self):
        super().setUp()
        self.env["ATTNGATE_BISECT"] = "0"

    def test_the_job_ab_tests_the_adapter_across_the_base_and_head_locks(self):
        out, md = os.path.join(self.dir, "jax-ab.json"), os.path.join(self.dir, "jax-summary.md")
        cases = [a for c in self.CASES for a in ("--case", c)]
        p = self.job(self.base, "--rounds", "2", "--max-rounds", "0", "--min-time", "0.001", *cases, "--out", out, "--markdown", md)
        self.assertIn(p.returncode, (0, 1), p.stdout[-3000:] + p.stderr[-3000:])
        self.assertNotIn("creating", p.stdout, "a venv was installed again instead of found by its lock's hash")
        results_schema.validate_all(out)  # the script ran attngate itself: its results checked here
        r = read_json(out)
        self.assertIn(".venv/jax-old/bin/python", r["ab"]["a"])
        self.assertIn(".venv/jax-new/bin/python", r["ab"]["b"])
        self.assertIn("--interpret hlo", r["ab"]["b"])
        self.assertEqual({e["case"] for e in r["results"]}, set(self.CASES))
        checks = {c["check"] for e in r["results"] for c in e["checks"]}
        self.assertTrue({"numerics", "perf"} <= checks, checks)
        for side, version in (("baseline_fingerprint", "0.7.2"), ("fingerprint", "0.10.2")):  # each side's own adapter
            self.assertEqual({v for k, v in leaves(r[side]) if k.endswith(".jax")}, {version}, side)
        with open(md) as f:
            text = f.read().replace("\\", "")
        self.assertIn("What changed (since the A side)", text)
        self.assertRegex(text, r"jax: 0\.7\.2 → 0\.10\.2")

    def test_an_unchanged_lock_is_nothing_to_gate(self):
        shutil.copy(os.path.join(ARGS.source_dir, "kernels", "jax", "requirements-old.lock"), self.lock)
        p = self.job(self.base, "--out", os.path.join(self.dir, "never.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("no JAX bump to gate", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "never.json")))

    def test_a_base_without_the_lock_is_bad_usage(self):
        self.env["ATTNGATE_JAX_LOCK"] = "kernels/jax/requirements-none.lock"
        p = self.job(self.base)
        self.assertEqual(p.returncode, 2)
        self.assertIn("kernels/jax/requirements-none.lock is not in", p.stderr)


# --- the PR/MR comment against a stand-in of each forge's API -----------------------------

class PostSummaryTest(unittest.TestCase):
    def setUp(self):
        self.url = start_forge(self, [{"id": i, "body": f"someone else's comment {i}"} for i in range(150)])  # two pages
        self.dir = tempfile.mkdtemp(prefix="attngate-comment-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.summary = os.path.join(self.dir, "summary.md")

    def post(self, forge, env, *files):
        script = os.path.join(ARGS.source_dir, "ci", "post-summary.py")
        return subprocess.run([sys.executable, script, forge, *files], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, **env))

    def write_summary(self, text):
        with open(self.summary, "w") as f:
            f.write(text)

    def check_posted_then_updated(self, forge, env, update_method, auth):
        self.write_summary("## attngate: GATE FAILED\n\nflash: 2.1x slower")
        p = self.post(forge, env, self.summary, os.path.join(self.dir, "jax-summary.md"))  # the second is missing: left out
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(FakeForge.comments), 151)
        mine = FakeForge.comments[-1]
        self.assertIn("flash: 2.1x slower", mine["body"])
        self.write_summary("## attngate: GATE PASSED")
        p = self.post(forge, env, self.summary)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(FakeForge.comments), 151, "a second comment instead of the first updated")
        self.assertIn("GATE PASSED", mine["body"])
        self.assertNotIn("2.1x", mine["body"])
        self.assertEqual([c["body"] for c in FakeForge.comments[:150]], [f"someone else's comment {i}" for i in range(150)])
        self.assertIn(update_method, [c[0] for c in FakeForge.calls])
        for method, path, headers in FakeForge.calls:
            self.assertEqual(headers.get(auth[0].lower()), auth[1], (method, path))

    def test_github_comment_is_posted_then_updated_in_place(self):
        env = {"GITHUB_API_URL": self.url, "GITHUB_REPOSITORY": "me/repo", "PR_NUMBER": "7", "GITHUB_TOKEN": "s3cret"}
        self.check_posted_then_updated("github", env, "PATCH", ("Authorization", "Bearer s3cret"))
        self.assertTrue(all(path.startswith("/repos/me/repo/issues/") or path == "/user" for _, path, _ in FakeForge.calls))

    def test_gitlab_note_is_posted_then_updated_in_place(self):
        env = {"CI_API_V4_URL": self.url + "/api/v4", "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "3", "ATTNGATE_GITLAB_TOKEN": "t0k"}
        self.check_posted_then_updated("gitlab", env, "PUT", ("PRIVATE-TOKEN", "t0k"))
        self.assertTrue(all(path.startswith("/api/v4/projects/42/merge_requests/3/notes") or path == "/api/v4/user"
                            for _, path, _ in FakeForge.calls))

    def test_each_comment_key_keeps_its_own_comment(self):
        # Two gates of one pull request (a plugin's suite and an adapter's) and the plain one.
        env = {"GITHUB_API_URL": self.url, "GITHUB_REPOSITORY": "me/repo", "PR_NUMBER": "7", "GITHUB_TOKEN": "s3cret"}
        for key, text in (("suites/team.json", "team v1"), ("jax-smoke", "jax v1"), ("", "plain v1"), ("suites/team.json", "team v2")):
            self.write_summary(text)
            p = self.post("github", dict(env, ATTNGATE_COMMENT_KEY=key), self.summary)
            self.assertEqual(p.returncode, 0, p.stderr)
        mine = [c["body"] for c in FakeForge.comments[150:]]
        self.assertEqual(len(mine), 3, mine)
        self.assertIn("team v2", mine[0])
        self.assertNotIn("team v1", mine[0])
        self.assertIn("jax v1", mine[1])
        self.assertIn("plain v1", mine[2])
        self.assertTrue(mine[0].startswith("<!-- attngate summary suites/team.json: "), mine[0])
        self.write_summary("evil")
        p = self.post("github", dict(env, ATTNGATE_COMMENT_KEY="x --> <script>"), self.summary)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("-->", FakeForge.comments[-1]["body"].splitlines()[0][:-3], "a key that closes the marker early")

    def test_a_refused_token_is_exit_3_and_a_missing_variable_exit_2(self):
        self.write_summary("## attngate")
        FakeForge.refuse = True
        env = {"GITHUB_API_URL": self.url, "GITHUB_REPOSITORY": "me/repo", "PR_NUMBER": "7", "GITHUB_TOKEN": "read-only"}
        p = self.post("github", env, self.summary)
        self.assertEqual(p.returncode, 3)
        self.assertIn("403", p.stderr)
        self.assertIn("not accessible", p.stderr)
        p = self.post("gitlab", {"CI_API_V4_URL": self.url}, self.summary)
        self.assertEqual(p.returncode, 2)
        self.assertIn("CI_PROJECT_ID", p.stderr)
        p = self.post("github", env, os.path.join(self.dir, "none.md"))
        self.assertEqual(p.returncode, 0)
        self.assertIn("nothing to post", p.stdout)



# --- the reusable action, run step by step in a team's repository --------------------------

# A team's kernel in plain C against the installed ABI header (found through CPATH, as the
# action sets it for an attngate installed outside /usr), built by the team's own Makefile.
TEAM_KERNEL = r"""/* team-causal: softmax(scale q k^T) v in f32, causal or not, with GQA. */
#include <attngate/kernel_abi.h>
#include <math.h>
#include <stdio.h>

static int team_run(const attngate_kernel *self, const attngate_problem *p, char *err, size_t err_len) {
    (void)self;
    const int64_t sq = p->seq_q, sk = p->seq_k, hq = p->heads_q, hkv = p->heads_kv, d = p->head_dim, dv = p->head_dim_v;
    float *s = p->allocator->alloc(p->allocator->ctx, (size_t)sk * sizeof(float));
    if (!s) { snprintf(err, err_len, "no memory for %lld scores", (long long)sk); return 1; }
    for (int64_t b = 0; b < p->batch; ++b)
    for (int64_t h = 0; h < hq; ++h)
    for (int64_t i = 0; i < sq; ++i) {
        const int64_t pos = p->causal_alignment == ATTNGATE_ALIGN_TOP_LEFT ? i : i + sk - sq, kh = h / (hq / hkv);
        const float *q = (const float *)p->q + ((b * sq + i) * hq + h) * d;
        float *o = p->out + ((b * sq + i) * hq + h) * dv, m = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < sk; ++j) {
            const float *k = (const float *)p->k + ((b * sk + j) * hkv + kh) * d;
            float dot = 0.0f;
            for (int64_t c = 0; c < d; ++c) dot += q[c] * k[c];
            s[j] = p->causal && j > pos ? -INFINITY : dot * p->scale;
            if (s[j] > m) m = s[j];
        }
        for (int64_t c = 0; c < dv; ++c) o[c] = 0.0f;
        if (m == -INFINITY) continue;
        for (int64_t j = 0; j < sk; ++j) sum += s[j] = expf(s[j] - m);
        for (int64_t j = 0; j < sk; ++j) {
            const float *v = (const float *)p->v + ((b * sk + j) * hkv + kh) * dv;
            for (int64_t c = 0; c < dv; ++c) o[c] += s[j] / sum * v[c];
        }
    }
    p->allocator->free(p->allocator->ctx, s);
    return 0;
}

static const attngate_kernel team_kernels[] = {{
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "team-causal",
    /* .version     = */ "1.0.0",
    /* .description = */ "a team's attention kernel in plain C",
    /* .features    = */ ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_GQA,
    /* .workspace   = */ ATTNGATE_WORKSPACE_LINEAR,
    /* .supports    = */ NULL,
    /* .run         = */ team_run,
    /* .user        = */ NULL,
    /* .init        = */ NULL,
    /* .free        = */ NULL,
}};

const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    *count = 1;
    return team_kernels;
}
"""
TEAM_MAKEFILE = "build/libteam_kernels.so: src/kernels.c\n\tmkdir -p build\n\t$(CC) -O2 -std=c11 -shared -fPIC -o $@ src/kernels.c -lm\n"
TEAM_SUITE = {"name": "team", "seed": 7, "kernels": ["team-causal"], "cases": [
    {"id": "mha_s64_f32", "seq_q": 64, "heads_q": 2, "head_dim": 32},
    {"id": "causal_s96_f32", "seq_q": 96, "heads_q": 2, "head_dim": 32, "causal": True},
    {"id": "gqa_s64_f32", "seq_q": 64, "heads_q": 4, "heads_kv": 2, "head_dim": 16, "causal": True}]}
HARMLESS = ("/* team-causal: softmax", "/* team-causal (reviewed): softmax")
BROKEN = ("dot * p->scale", "dot * p->scale * 1.5f")  # a wrong scale: every output moves
AB_FAST = "--rounds 3 --max-rounds 0 --min-time 0.002"  # the A/B's timing kept short; numerics decide here


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=team", "-c", "user.email=team@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def team_repository(root, change, project="."):
    """A team's git repository with two commits: the base (the kernel, its Makefile, its suite
    and goldens in `project`) and the head, whose kernel has change=(old, new) applied.
    Returns (repository, base commit)."""
    repo = os.path.join(root, "team")
    top = os.path.join(repo, project)
    os.makedirs(os.path.join(top, "src"))
    os.makedirs(os.path.join(top, "suites"))
    with open(os.path.join(top, "src", "kernels.c"), "w") as f:
        f.write(TEAM_KERNEL)
    with open(os.path.join(top, "Makefile"), "w") as f:
        f.write(TEAM_MAKEFILE)
    with open(os.path.join(top, ".gitignore"), "w") as f:
        f.write("build/\n")
    with open(os.path.join(top, "suites", "team.json"), "w") as f:
        json.dump(TEAM_SUITE, f, indent=1)
    p = attngate("golden", "generate", "--suite", "suites/team.json", "--store", "baselines", cwd=top)
    assert p.returncode == 0, p.stderr
    # What the action's empty suite and store mean. Written after the goldens: attngate checks
    # that the plugins it names exist, and the build makes this one.
    with open(os.path.join(top, "attngate.toml"), "w") as f:
        f.write('suite = "suites/team.json"\nstore = "baselines"\nplugins = ["build/libteam_kernels.so"]\n')
    git(root, "init", "-q", "team")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base: the team's kernel")
    base = git(repo, "rev-parse", "HEAD")
    kernel = os.path.join(top, "src", "kernels.c")
    with open(kernel) as f:
        text = f.read()
    assert change[0] in text, change
    with open(kernel, "w") as f:
        f.write(text.replace(change[0], change[1], 1))
    git(repo, "commit", "-qam", "head: the pull request's change")
    return repo, base


def run_steps_of(action):
    """The names of the action's shell steps, in order."""
    return [s.get("name") for s in action["runs"]["steps"] if "run" in s]


class ActionRun(unittest.TestCase):
    """A runner for action.yml (tests/e2e/ci_runners.py) in a scratch directory, with a stand-in
    of GitHub's comment API. attngate is this build's (install: none, on PATH in an install
    prefix with the ABI header): the deb and source installs need root and apt, and are
    checked by the linters only."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="attngate-action-")
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.forge = start_forge(self, [{"id": 1, "body": "a reviewer's comment"}])
        self.prefix = os.path.join(self.root, "prefix")
        os.makedirs(os.path.join(self.prefix, "bin"))
        os.makedirs(os.path.join(self.prefix, "include"))
        os.symlink(ARGS.attngate, os.path.join(self.prefix, "bin", "attngate"))
        os.symlink(os.path.join(ARGS.source_dir, "kernels", "include", "attngate"), os.path.join(self.prefix, "include", "attngate"))
        with open(os.path.join(ARGS.source_dir, "action.yml")) as f:
            self.action = yaml.safe_load(f)

    def run_action(self, repo, base_sha, pull_request=True, **inputs):
        self.temp = tempfile.mkdtemp(dir=self.root, prefix="runner-temp-")
        env = {"GITHUB_WORKSPACE": repo, "RUNNER_TEMP": self.temp, "GITHUB_STEP_SUMMARY": os.path.join(self.root, "step-summary.md"),
               "GITHUB_REPOSITORY": "team/kernels", "GITHUB_API_URL": self.forge, "CI": "true", "GITHUB_ACTIONS": "true",
               "PATH": os.path.join(self.prefix, "bin") + os.pathsep + os.environ["PATH"]}
        event = {"pull_request": {"number": 7, "base": {"sha": base_sha}}} if pull_request else {}
        github = {"event": event, "token": "s3cret", "action_ref": "v0.2.0"}
        inputs = dict({"install": "none", "build": "make", "plugin": "build/libteam_kernels.so", "suite": "suites/team.json",
                       "store": "baselines", "args": AB_FAST}, **inputs)
        return run_composite(ARGS.source_dir, inputs, github, env)

    def comments(self):
        return [c["body"] for c in FakeForge.comments if "attngate summary" in c["body"]]

    def summary(self):
        with open(os.path.join(self.root, "step-summary.md")) as f:
            return f.read()



class ReusableActionTest(ActionRun):
    """action.yml, its `run:` steps run in order as GitHub's runner runs them, in a team's
    repository of two commits: the team's Makefile builds its C plugin at the base (a
    worktree) and at the head against the installed ABI header, `attngate ab --a-plugin
    --b-plugin` compares them with the team's goldens, the summary goes to the job summary and
    one PR comment, and the last step fails on drift."""

    def test_a_head_that_changes_nothing_passes_and_comments_once(self):
        repo, base = team_repository(self.root, HARMLESS)
        r = self.run_action(repo, base, suite="", store="")  # attngate.toml's
        self.assertEqual(r.rc, 0, r.log)
        self.assertEqual([name for name, _, _ in r.steps], run_steps_of(self.action))  # every step ran
        self.assertEqual(r.skipped, [("restore attngate's build", self.action["runs"]["steps"][1]["uses"], False)])
        self.assertIn("attngate 0.", r.log)  # the installed attngate named itself
        results = os.path.join(repo, r.outputs["results"])
        self.assertEqual(r.outputs["results"], "attngate-report/results.json")
        results_schema.validate_all(results)
        ab = read_json(results)
        self.assertIn(os.path.join(self.temp, "attngate-base", "build", "libteam_kernels.so"), json.dumps(ab["ab"]["a"]))
        self.assertIn(os.path.join(repo, "build", "libteam_kernels.so"), json.dumps(ab["ab"]["b"]))
        self.assertEqual({e["case"] for e in ab["results"]}, {c["id"] for c in TEAM_SUITE["cases"]})
        golden = [c for e in ab["results"] for c in e["checks"] if c["check"] == "golden"]
        self.assertEqual(len(golden), 3, "the team's goldens were not used")
        for name in ("report", "summary"):
            self.assertTrue(os.path.isfile(os.path.join(repo, r.outputs[name])), name)
        self.assertTrue(os.path.isfile(os.path.join(repo, "attngate-report", "junit.xml")))
        self.assertIn("PASS", self.summary())
        self.assertEqual(r.outputs["exit-code"], "0")
        comments = self.comments()
        self.assertEqual(len(comments), 1, FakeForge.calls)
        self.assertIn("PASS", comments[0])
        self.assertTrue(comments[0].startswith("<!-- attngate summary: "), "no suite input: the plain marker")
        self.assertEqual(FakeForge.comments[0]["body"], "a reviewer's comment")
        for _, path, headers in FakeForge.calls:
            self.assertTrue(path.startswith("/repos/team/kernels/issues/7/comments") or path.startswith("/repos/team/kernels/issues/comments/")
                            or path == "/user", path)
            self.assertEqual(headers.get("authorization"), "Bearer s3cret")
        # The next push: the same comment, updated in place.
        r = self.run_action(repo, base, suite="", store="")
        self.assertEqual(r.rc, 0, r.log)
        self.assertEqual(len(self.comments()), 1)
        self.assertIn("PATCH", [c[0] for c in FakeForge.calls])

    def test_a_broken_head_fails_the_last_step_after_the_summary_and_the_comment(self):
        repo, base = team_repository(self.root, BROKEN, project="kernels/attention")  # a project in a subfolder
        r = self.run_action(repo, base, **{"working-directory": "kernels/attention"})
        self.assertEqual(r.rc, 1, r.log)
        self.assertIn("suites/team.json", self.comments()[0].splitlines()[0])  # one comment per suite
        self.assertEqual(r.failed_step, "pass or fail the gate")
        self.assertEqual(r.outputs["exit-code"], "1")
        self.assertIn("::error title=attngate::drift between the base and the head (exit 1)", r.steps[-1][2])
        summary = self.summary()
        self.assertIn("FAIL", summary)
        self.assertIn("golden", summary)
        comments = self.comments()
        self.assertEqual(len(comments), 1)
        self.assertIn("FAIL", comments[0])
        results = read_json(os.path.join(repo, r.outputs["results"]))
        failed = {e["case"] for e in results["results"] for c in e["checks"] if c["check"] == "golden" and c["verdict"] == "fail"}
        self.assertEqual(failed, {c["id"] for c in TEAM_SUITE["cases"]})
        with open(os.path.join(repo, "attngate-report", "junit.xml")) as f:
            self.assertIn("<failure", f.read())

    def test_drift_is_bisected_to_its_commit_under_the_summary_and_in_the_comment(self):
        repo, base = team_repository(self.root, HARMLESS)  # base, then a harmless head commit
        kernel = os.path.join(repo, "src", "kernels.c")
        for subject, change in (("head: the scale, rewritten", BROKEN), ("head: a comment", ("/* team-causal", "/* the team's causal"))):
            with open(kernel) as f:
                text = f.read()
            with open(kernel, "w") as f:
                f.write(text.replace(change[0], change[1], 1))
            git(repo, "commit", "-qam", subject)
        bad = git(repo, "rev-parse", "HEAD~1")
        r = self.run_action(repo, base, **{"bisect-checks": "golden,numerics"})
        self.assertEqual((r.rc, r.failed_step), (1, "pass or fail the gate"), r.log)  # the A/B verdict stands
        self.assertEqual(r.outputs["bisect"], "attngate-report/bisect.md")
        said = f'at commit {bad[:12]} "head: the scale, rewritten"'
        for where, text in (("job summary", self.summary()), ("comment", self.comments()[0])):
            self.assertIn("FAIL", text, where)  # the A/B summary first, then bisect's answer
            self.assertIn(f"### attngate bisect: commits `{base}..HEAD`", text, where)
            self.assertIn(said, text, where)
        report = read_json(os.path.join(repo, "attngate-report", "bisect", "bisect.json"))
        self.assertLessEqual(report["probes"], 2, report)  # three commits after the base: ceil(log2(4))
        # Turned off, or failing (a check it does not know: exit 2): the same verdict, the comment without it.
        for inputs, warned in (({"bisect": "false"}, False), ({"bisect-checks": "golden,nonsense"}, True)):
            r = self.run_action(repo, base, **inputs)
            self.assertEqual((r.rc, r.failed_step, r.outputs["exit-code"]), (1, "pass or fail the gate", "1"), r.log)
            self.assertEqual(r.outputs["bisect"], "", inputs)
            self.assertEqual(len(self.comments()), 1)
            self.assertIn("FAIL", self.comments()[0])
            self.assertNotIn("attngate bisect", self.comments()[0], inputs)
            self.assertEqual("::warning title=attngate::bisect could not say" in r.log, warned, r.log)

    def test_shards_then_their_merge_gate_as_one_run(self):
        repo, base = team_repository(self.root, BROKEN)
        shards = []
        for i in (1, 2):
            r = self.run_action(repo, base, shard=f"{i}/2")
            self.assertEqual(r.rc, 0, r.log)  # a shard's drift is decided by the merge
            self.assertEqual(r.outputs["results"], f"attngate-report/shard-{i}.json")
            self.assertEqual(r.outputs["summary"], "")
            shards.append(read_json(os.path.join(repo, r.outputs["results"])))
        self.assertEqual(self.comments(), [], "a shard commented")
        cases = [sorted(e["case"] for e in s["results"]) for s in shards]
        self.assertEqual(sorted(cases[0] + cases[1]), sorted(c["id"] for c in TEAM_SUITE["cases"]))
        self.assertTrue(cases[0] and cases[1], cases)
        # The merge job: a fresh checkout (no build), the shards downloaded as the workflow does.
        merger = os.path.join(self.root, "merge-job")
        subprocess.run(["git", "clone", "-q", repo, merger], check=True)
        os.makedirs(os.path.join(merger, "attngate-shards"))
        for i in (1, 2):
            shutil.copy(os.path.join(repo, "attngate-report", f"shard-{i}.json"), os.path.join(merger, "attngate-shards"))
        r = self.run_action(merger, base, merge="attngate-shards/shard-*.json", build="false")  # merging builds nothing
        self.assertEqual(r.rc, 1, r.log)
        self.assertIn("nothing to build", r.log)
        self.assertFalse(os.path.exists(os.path.join(merger, "build")))
        merged = read_json(os.path.join(merger, r.outputs["results"]))
        self.assertEqual(len(merged["results"]), 3)
        self.assertEqual(len(self.comments()), 1)
        self.assertIn("FAIL", self.comments()[0])

    def test_inputs_that_cannot_work_stop_with_exit_2_and_say_why(self):
        repo, base = team_repository(self.root, HARMLESS)
        for inputs, step, message in (
                ({"lock": "requirements.lock"}, "check the inputs", "plugin and lock"),
                ({"install": "pip"}, "check the inputs", "install: 'pip' is none of deb, source, none"),
                ({"install": "deb"}, "check the inputs", "install: deb needs the input deb"),
                ({"shard": "2"}, "check the inputs", "shard: '2' is not I/N"),
                ({"working-directory": "nowhere"}, "check the inputs", "working-directory: nowhere is not a directory"),
                ({"plugin": "build/libnope.so"}, "build the base and the head", "the build made no build/libnope.so at the base"),
                ({"build": "exit 4"}, "build the base and the head", "the build command failed at the base")):
            r = self.run_action(repo, base, **inputs)
            self.assertEqual((r.rc, r.failed_step), (2, step), f"{inputs}: {r.log}")
            self.assertIn(message, r.log, inputs)
        r = self.run_action(repo, base, pull_request=False)  # a push: no base unless it is given
        self.assertEqual((r.rc, r.failed_step), (2, "build the base and the head"), r.log)
        self.assertIn("no base commit", r.log)
        r = self.run_action(repo, base, pull_request=False, base=base, comment="false")
        self.assertEqual(r.rc, 0, r.log)
        self.assertEqual(self.comments(), [])



@unittest.skipUnless(os.path.exists(venv_python("new")), ".venv/jax-new is missing: bash ci/install-deps.sh creates it")
class ReusableActionAdapterTest(ActionRun):
    """The action's lock mode: a team's JAX kernel (examples/jax-kernel's team_attention) whose
    head breaks its scale, each side's venv found by its lock's hash (the lock is jax-new's,
    whose venv is seeded under .attngate/venvs/, so nothing is installed), each side's tree on
    PYTHONPATH. The adapter command runs attngate's launcher (kernels/jax/adapter.py) from the
    venv: jax-new does not have the attngate-jax distribution a team's lock would install."""

    def test_a_broken_head_of_an_adapter_kernel_fails_on_its_side_alone(self):
        src = os.path.join(ARGS.source_dir, "examples", "jax-kernel")
        repo = os.path.join(self.root, "team")
        shutil.copytree(os.path.join(src, "src"), os.path.join(repo, "src"), ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        lock = os.path.join(ARGS.source_dir, "kernels", "jax", "requirements-new.lock")
        shutil.copy(lock, os.path.join(repo, "requirements.lock"))
        suite = read_json(os.path.join(src, "suite.json"))
        suite["cases"] = [dict(suite["cases"][0], id="mha_s128_f32", seq_q=128)]  # one small case: interpret mode is slow
        os.makedirs(os.path.join(repo, "suites"))
        with open(os.path.join(repo, "suites", "team.json"), "w") as f:
            json.dump(suite, f)
        p = attngate("golden", "generate", "--suite", "suites/team.json", "--store", "baselines", cwd=repo)
        self.assertEqual(p.returncode, 0, p.stderr)
        git(self.root, "init", "-q", "team")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "base")
        base = git(repo, "rev-parse", "HEAD")
        blocked = os.path.join(repo, "src", "team_attention", "blocked.py")
        with open(blocked) as f:
            text = f.read()
        self.assertIn("preferred_element_type=jnp.float32) * sm_scale", text)
        with open(blocked, "w") as f:
            f.write(text.replace("preferred_element_type=jnp.float32) * sm_scale", "preferred_element_type=jnp.float32) * sm_scale * 1.5"))
        git(repo, "commit", "-qam", "head: a wrong scale")
        venvs = os.path.join(repo, ".attngate", "venvs")
        os.makedirs(venvs)
        os.symlink(os.path.realpath(os.path.dirname(os.path.dirname(venv_python("new")))), os.path.join(venvs, f"lock-{sha256_of(lock)[:16]}"))
        adapter = f"python {os.path.join(ARGS.source_dir, 'kernels', 'jax', 'adapter.py')} --interpret hlo --no-builtins --kernels team_attention.gate:make"
        r = self.run_action(repo, base, plugin="", build="", lock="requirements.lock", adapter=adapter)
        self.assertEqual(r.rc, 1, r.log[-5000:])
        self.assertNotIn("making", r.log, "a venv was made instead of found by its lock's hash")
        results = read_json(os.path.join(repo, r.outputs["results"]))
        self.assertIn(f"PYTHONPATH={repo}/src", results["ab"]["b"])
        self.assertIn(os.path.join(self.temp, "attngate-base", "src"), results["ab"]["a"])
        checks = {c["check"]: c for c in results["results"][0]["checks"]}
        self.assertEqual(checks["golden"]["verdict"], "fail")  # B's, the head's
        self.assertIn("bits changed against side A", checks["numerics"]["reason"])  # A ran the base's code
        self.assertIn("FAIL", self.comments()[0])


class GitLabComponentTest(unittest.TestCase):
    """templates/gate/template.yml included as a component (tests/e2e/ci_runners.py: inputs
    interpolated, variables expanded, each job's scripts run as a GitLab runner runs them) in
    the same team repository: two parallel attngate-gate jobs, attngate-merge, then
    attngate-comment with attngate's comment script fetched from attngate's source at the
    component's commit (a local git server here). attngate is the image's (install: none)."""

    PATH = os.path.join(SOURCE, "templates", "gate", "template.yml")

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="attngate-component-")
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.forge = start_forge(self)
        # attngate's project on the GitLab server: its comment script at the component's commit.
        self.server = os.path.join(self.root, "server")
        project = os.path.join(self.server, "attngate", "attngate.git")
        os.makedirs(os.path.join(project, "ci"))
        shutil.copy(os.path.join(ARGS.source_dir, "ci", "post-summary.py"), os.path.join(project, "ci"))
        git(self.server, "init", "-q", project)
        git(project, "config", "uploadpack.allowAnySHA1InWant", "true")  # as GitLab's server allows
        git(project, "add", ".")
        git(project, "commit", "-qm", "attngate")
        self.sha = git(project, "rev-parse", "HEAD")

    def predefined(self, repo, base, **more):
        return dict({"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": repo, "CI_PIPELINE_SOURCE": "merge_request_event",
                     "CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_SERVER_URL": "file://" + self.server,
                     "CI_API_V4_URL": self.forge + "/api/v4", "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "3",
                     "ATTNGATE_GITLAB_TOKEN": "t0k",
                     "PATH": os.path.dirname(ARGS.attngate) + os.pathsep + os.environ["PATH"],  # the image's attngate
                     "CPATH": os.path.join(ARGS.source_dir, "kernels", "include")}, **more)  # ... and its ABI header

    def jobs(self, **inputs):
        inputs = dict({"install": "none", "build": "make", "plugin": "build/libteam_kernels.so", "suite": "suites/team.json",
                       "store": "baselines", "args": AB_FAST, "shards": 2}, **inputs)
        return gitlab_component(self.PATH, inputs, {"sha": self.sha})

    def test_shards_merge_and_comment_gate_a_merge_request(self):
        repo, base = team_repository(self.root, BROKEN)
        jobs = self.jobs()
        self.assertEqual(jobs["attngate-gate"]["parallel"], 2)
        for i in (1, 2):
            p = run_gitlab_job(jobs, "attngate-gate", self.predefined(repo, base, CI_NODE_INDEX=str(i), CI_NODE_TOTAL="2"), repo)
            self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])  # drift is the merge's to decide
            self.assertTrue(os.path.isfile(os.path.join(repo, "attngate-report", f"shard-{i}.json")))
        p = run_gitlab_job(jobs, "attngate-merge", self.predefined(repo, base), repo)
        self.assertEqual(p.returncode, 1, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertIn("FAIL", p.stdout)  # the summary in the job log
        merged = read_json(os.path.join(repo, "attngate-report", "results.json"))
        self.assertEqual({e["case"] for e in merged["results"]}, {c["id"] for c in TEAM_SUITE["cases"]})
        self.assertEqual(merged["ab"]["a"].split()[-1], os.path.join(repo, ".attngate", "base", "build", "libteam_kernels.so"))
        for name in ("report.html", "junit.xml", "summary.md"):
            self.assertTrue(os.path.isfile(os.path.join(repo, "attngate-report", name)), name)
        p = run_gitlab_job(jobs, "attngate-comment", self.predefined(repo, base), repo)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertEqual(len(FakeForge.comments), 1)
        self.assertIn("FAIL", FakeForge.comments[0]["body"])
        self.assertTrue(all(path.startswith("/api/v4/projects/42/merge_requests/3/notes") or path == "/api/v4/user"
                            for _, path, _ in FakeForge.calls))
        self.assertTrue(all(headers.get("private-token") == "t0k" for _, _, headers in FakeForge.calls))

    def test_a_head_that_changes_nothing_passes_in_one_shard(self):
        repo, base = team_repository(self.root, HARMLESS)
        jobs = self.jobs(shards=1)
        p = run_gitlab_job(jobs, "attngate-gate", self.predefined(repo, base, CI_NODE_INDEX="1", CI_NODE_TOTAL="1"), repo)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        p = run_gitlab_job(jobs, "attngate-merge", self.predefined(repo, base), repo)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertIn("PASS", p.stdout)

    def test_the_component_runs_nothing_of_the_including_project(self):
        with open(self.PATH) as f:
            text = f.read()
        self.assertNotRegex(text, r"(?<![\w/.])ci/[\w-]+\.sh", "a script of the including project's ci/")
        self.assertIn('"$state/src/ci/install-deps.sh"', text)  # attngate's own, from its source
        jobs = self.jobs()
        self.assertEqual(set(j for j in jobs if not j.startswith(".")), {"attngate-gate", "attngate-merge", "attngate-comment"})
        # One rule for all three: a merge request gets all of them, a push none (needs stay whole).
        self.assertEqual(gitlab_pipeline(jobs, MR, ["src/kernels.c"]), ({"attngate-gate", "attngate-merge", "attngate-comment"}, []))
        self.assertEqual(gitlab_pipeline(jobs, PUSH_MAIN, ["src/kernels.c"]), (set(), []))
        self.assertEqual(jobs["attngate-comment"]["rules"][0]["when"], "always")
        with self.assertRaises(ValueError):
            self.jobs(install="pip")  # not among the input's options
        with self.assertRaises(ValueError):
            self.jobs(shard="1/2")  # not an input

    def test_a_component_not_included_as_one_says_so(self):
        repo, base = team_repository(self.root, HARMLESS)
        jobs = gitlab_component(self.PATH, {"install": "none", "plugin": "build/libteam_kernels.so"}, {"sha": ""})
        p = run_gitlab_job(jobs, "attngate-comment", self.predefined(repo, base), repo)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("include this file as a component", p.stderr)



# --- the reusable pieces, linted and held together -------------------------------------------

def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        return re.search(r"project\(attngate VERSION ([\d.]+)", f.read()).group(1)


def check_jsonschema(schema, path):
    return subprocess.run([tools("check-jsonschema"), "--builtin-schema", schema, path], capture_output=True, text=True, timeout=120)


def zizmor(path):
    return subprocess.run([tools("zizmor"), "--offline", "--persona=auditor", "--no-progress", path], capture_output=True,
                          text=True, timeout=120)


class ReusableLintTest(unittest.TestCase):
    """action.yml, .github/workflows/gate.yml and templates/gate/template.yml against the
    schemas GitHub and GitLab publish, zizmor's auditor persona, and each other."""

    FILES = {"action": os.path.join(SOURCE, "action.yml"), "workflow": os.path.join(SOURCE, ".github", "workflows", "gate.yml"),
             "component": os.path.join(SOURCE, "templates", "gate", "template.yml"),
             "team workflow": os.path.join(SOURCE, "examples", "team-repo", ".github", "workflows", "attngate.yml")}

    def load(self, name):
        with open(self.FILES[name]) as f:
            return yaml.safe_load(f) if name != "component" else yaml.safe_load(f.read().partition("\n---\n")[0])

    @unittest.skipUnless(os.path.exists(tools("check-jsonschema")), ".venv/tools is missing: bash ci/install-deps.sh creates it")
    def test_each_passes_its_forge_schema(self):
        for name, schema in (("action", "vendor.github-actions"), ("workflow", "vendor.github-workflows"),
                             ("team workflow", "vendor.github-workflows")):
            p = check_jsonschema(schema, self.FILES[name])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # The component: its spec, and its jobs as GitLab sees them once included (a number input
        # is a number only after interpolation), with the defaults and with every input set.
        with open(self.FILES["component"]) as f:
            spec = f.read().partition("\n---\n")[0]
        everything = {"install": "deb", "deb": "https://example.com/attngate.deb", "deb-sha256": "0" * 64, "build": "make -j$(nproc)",
                      "plugin": "build/k.so", "suite": "suites/team.json", "store": "https://store.example.com/team/",
                      "args": "--strict", "shards": 8, "working-directory": "kernels", "stage": "gate", "image": "debian:12.8"}
        with tempfile.TemporaryDirectory() as d:
            documents = {"spec.yml": spec}
            for i, inputs in enumerate(({"plugin": "build/k.so"}, everything)):
                documents[f"jobs-{i}.yml"] = yaml.safe_dump(gitlab_component(self.FILES["component"], inputs, {"sha": "0" * 40}, resolve=False))
            for name, text in documents.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
                p = check_jsonschema("vendor.gitlab-ci", os.path.join(d, name))
                self.assertEqual(p.returncode, 0, f"{name}: {p.stdout}{p.stderr}")
            # ... and the schemas have teeth: a misspelt step key, an input type GitLab lacks.
            action = self.load("action")
            action["runs"]["steps"][0]["runz"] = action["runs"]["steps"][0].pop("run")
            with open(os.path.join(d, "action.yml"), "w") as f:
                yaml.safe_dump(action, f)
            self.assertNotEqual(check_jsonschema("vendor.github-actions", os.path.join(d, "action.yml")).returncode, 0)
            with open(os.path.join(d, "spec.yml"), "w") as f:
                f.write(spec.replace("type: number", "type: integer"))
            self.assertNotEqual(check_jsonschema("vendor.gitlab-ci", os.path.join(d, "spec.yml")).returncode, 0)

    @unittest.skipUnless(os.path.exists(tools("zizmor")), ".venv/tools is missing: bash ci/install-deps.sh creates it")
    def test_the_action_and_the_workflow_pass_zizmor_and_say_why_of_each_ignore(self):
        for name in ("action", "workflow", "team workflow"):
            p = zizmor(self.FILES[name])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("No findings to report", p.stdout)
            with open(self.FILES[name]) as f:
                for line in f:
                    if "zizmor: ignore[" in line:
                        self.assertRegex(line, r"zizmor: ignore\[[a-z-]+\] \w.{20,}", "an ignore without its reason")
        # ... and zizmor has teeth on an action: an input expanded inside a script is found.
        with open(self.FILES["action"]) as f:
            text = f.read()
        self.assertIn('bash -eo pipefail -c "$BUILD"', text)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "action.yml"), "w") as f:
                f.write(text.replace('bash -eo pipefail -c "$BUILD"', "${{ inputs.build }}"))
            p = zizmor(os.path.join(d, "action.yml"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("template-injection", p.stdout)

    def test_no_expression_reaches_a_script(self):
        action, workflow = self.load("action"), self.load("workflow")
        steps = action["runs"]["steps"] + [s for job in workflow["jobs"].values() for s in job.get("steps", [])]
        for step in steps:
            self.assertNotIn("${{", step.get("run", ""), step.get("name"))
            if "run" in step and step in action["runs"]["steps"]:
                self.assertEqual(step["shell"], "bash", step.get("name"))
        with open(self.FILES["component"]) as f:
            for job in yaml.safe_load(f.read().partition("\n---\n")[2]).values():
                for script in [*job.get("before_script", []), *job.get("script", [])]:
                    self.assertNotIn("$[[", script, "an input interpolated into a script: pass it through variables")

    def test_the_workflow_runs_the_action_with_the_inputs_it_declares(self):
        action, workflow = self.load("action"), self.load("workflow")
        declared = workflow[True]["workflow_call"]["inputs"]  # PyYAML reads `on:` as True
        self.assertEqual(declared["version"]["default"], f"v{project_version()}")
        for name, spec in action["inputs"].items():
            if name in declared:  # the same default on both, so that the two read alike
                self.assertEqual(str(declared[name].get("default", "")), str(spec.get("default", "")), name)
        jobs = workflow["jobs"]
        self.assertEqual(set(jobs), {"plan", "shard", "merge", "comment"})
        self.assertEqual(workflow["permissions"], {})
        self.assertEqual(jobs["comment"]["permissions"], {"pull-requests": "write"})
        for name in ("shard", "merge"):
            self.assertEqual(jobs[name]["permissions"], {"contents": "read"}, name)
            uses = [s for s in jobs[name]["steps"] if s.get("uses") == "./.attngate/action"]
            self.assertEqual(len(uses), 1, name)
            self.assertTrue(set(uses[0]["with"]) <= set(action["inputs"]), set(uses[0]["with"]) - set(action["inputs"]))
            checkout = [s for s in jobs[name]["steps"] if s.get("with", {}).get("path") == ".attngate/action"][0]
            self.assertEqual(checkout["with"]["ref"], "${{ inputs.version }}")
            for step in jobs[name]["steps"]:
                if "uses" in step and not step["uses"].startswith("./"):
                    self.assertRegex(step["uses"], r"^[\w-]+/[\w-]+@[0-9a-f]{40}$", name)
        shard = [s for s in jobs["shard"]["steps"] if s.get("uses") == "./.attngate/action"][0]["with"]
        self.assertEqual(shard["shard"], "${{ matrix.shard }}/${{ inputs.shards }}")
        self.assertEqual(set(declared) - {"version", "shards", "runs-on", "container"}, set(shard) - {"shard", "comment"},
                         "an input of the workflow that the shard jobs do not pass on")
        merge = [s for s in jobs["merge"]["steps"] if s.get("uses") == "./.attngate/action"][0]["with"]
        self.assertEqual(merge["merge"], "attngate-shards/shard-*.json")
        self.assertIn("!cancelled()", jobs["merge"]["if"])
        self.assertIn("head.repo.full_name == github.repository", jobs["comment"]["if"])
        # The plan job's script, run: the matrix of shard numbers, and a bad count refused.
        plan = jobs["plan"]["steps"][0]
        for shards, rc, out in (("4", 0, "shards=[1,2,3,4]"), ("1", 0, "shards=[1]"), ("0", 2, ""), ("x", 2, "")):
            with tempfile.NamedTemporaryFile("r") as output:
                p = subprocess.run(["bash", "-eo", "pipefail", "-c", plan["run"]], capture_output=True, text=True,
                                   env=dict(os.environ, SHARDS=shards, GITHUB_OUTPUT=output.name))
                self.assertEqual((p.returncode, output.read().strip()), (rc, out), shards)

    def test_the_versions_named_are_this_release(self):
        version = project_version()
        with open(self.FILES["action"]) as f:
            self.assertIn(f"uses: attngate/attngate@v{version}", f.read())
        with open(self.FILES["component"]) as f:
            self.assertIn(f"/attngate/attngate/gate@{version}", f.read())
        with open(os.path.join(SOURCE, "docs", "fleet.md")) as f:
            docs = f.read()
        for line in (f"uses: attngate/attngate@v{version}", f"uses: attngate/attngate/.github/workflows/gate.yml@v{version}",
                     f"component: $CI_SERVER_FQDN/attngate/attngate/gate@{version}"):
            self.assertTrue(line in docs, f"docs/fleet.md does not show `{line}`")


if __name__ == "__main__":
    main()
