"""The CI templates (ci/github/attngate.yml, ci/gitlab/attngate.yml): valid against the
schemas GitHub and GitLab publish (check-jsonschema's vendored ones) and clean under zizmor,
with the jobs the fleet needs; GitLab's rules evaluated as GitLab does at pipeline creation
(a merge request that touches none of the paths still gets a pipeline); every attngate
command they run parses with the real CLI (ATTNGATE_PARSE_ONLY=1); the JAX-bump job run
for real on two lock files (jax 0.7.2 and 0.10.2); the PR/MR comment posted, then updated
in place, against a local stand-in of each forge's API."""
import copy
import hashlib
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
        self.assertIn("python3 ci/post-summary.py gitlab summary.md jax-summary.md", t["attngate-comment"]["script"])
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


@unittest.skipUnless(os.path.exists(venv_python("old")) and os.path.exists(venv_python("new")),
                     ".venv/jax-old or .venv/jax-new is missing: bash ci/install-deps.sh creates them")
class JaxBumpJobTest(unittest.TestCase):
    """ci/jax-bump.sh, which both templates' JAX-bump job runs, in a repository whose base
    commit locks jax 0.7.2 and whose head locks 0.10.2 (kernels/jax/requirements-*.lock).
    The venvs made from those locks exist already (.venv/jax-old and jax-new, with their
    lock hashes): the job finds them by hash instead of installing again."""

    CASES = ["mha_s128_f32", "causal_s256_bf16"]

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
        shutil.copy(os.path.join(src, "kernels", "jax", "requirements-old.lock"), self.lock)  # the base locks 0.7.2
        self.git("init", "-q")
        self.git("add", "ci", "kernels", "suites", "baselines")
        self.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base: jax 0.7.2")
        self.base = self.git("rev-parse", "HEAD").strip()
        shutil.copy(os.path.join(src, "kernels", "jax", "requirements-new.lock"), self.lock)  # the head bumps to 0.10.2
        self.env = dict(os.environ, ATTNGATE_BUILD_DIR=os.path.dirname(ARGS.attngate), ATTNGATE_INTERPRET="hlo")
        for line in ("old", "new"):  # what lets the job find them
            with open(os.path.join(src, ".venv", f"jax-{line}", ".attngate-lock-sha256")) as f:
                self.assertEqual(f.read().strip(), sha256_of(os.path.join(src, "kernels", "jax", f"requirements-{line}.lock")))

    def git(self, *args):
        return subprocess.run(["git", "-C", self.repo, *args], check=True, capture_output=True, text=True).stdout

    def job(self, *extra):
        return subprocess.run(["bash", os.path.join(self.repo, "ci", "jax-bump.sh"), *extra], capture_output=True, text=True,
                              env=self.env, timeout=1500)

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

class FakeForge(http.server.BaseHTTPRequestHandler):
    """Comments in memory; GitHub's and GitLab's routes for listing, creating and updating."""
    comments, calls, refuse = [], [], False

    def log_message(self, *args):
        pass

    def reply(self, code, value):
        data = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        body = None
        if int(self.headers.get("Content-Length", 0)):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["body"]
        FakeForge.calls.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))  # names are case-blind
        if FakeForge.refuse:
            return self.reply(403, {"message": "Resource not accessible by integration"})
        path, _, query = self.path.partition("?")
        if self.command == "GET":
            page = int(dict(q.split("=") for q in query.split("&"))["page"])
            return self.reply(200, FakeForge.comments[(page - 1) * 100:page * 100])
        if self.command == "POST":
            FakeForge.comments.append({"id": 1000 + len(FakeForge.comments), "body": body})
            return self.reply(201, FakeForge.comments[-1])
        wanted = int(path.rsplit("/", 1)[1])
        for c in FakeForge.comments:
            if c["id"] == wanted:
                c["body"] = body
                return self.reply(200, c)
        return self.reply(404, {"message": "Not Found"})

    do_GET = do_POST = do_PATCH = do_PUT = handle_any


class PostSummaryTest(unittest.TestCase):
    def setUp(self):
        FakeForge.comments = [{"id": i, "body": f"someone else's comment {i}"} for i in range(150)]  # two pages
        FakeForge.calls, FakeForge.refuse = [], False
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeForge)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
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
        self.assertTrue(all(path.startswith("/repos/me/repo/issues/") for _, path, _ in FakeForge.calls))

    def test_gitlab_note_is_posted_then_updated_in_place(self):
        env = {"CI_API_V4_URL": self.url + "/api/v4", "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "3", "ATTNGATE_GITLAB_TOKEN": "t0k"}
        self.check_posted_then_updated("gitlab", env, "PUT", ("PRIVATE-TOKEN", "t0k"))
        self.assertTrue(all(path.startswith("/api/v4/projects/42/merge_requests/3/notes") for _, path, _ in FakeForge.calls))

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


if __name__ == "__main__":
    main()
