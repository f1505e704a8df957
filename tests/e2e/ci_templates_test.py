"""The CI templates (ci/github/attngate.yml, ci/gitlab/attngate.yml) are valid YAML with
the jobs the fleet needs (sharded A/B, merge, report artifact, Markdown summary), and every
attngate command they run parses with the real CLI (ATTNGATE_PARSE_ONLY=1: parse, check
options and values, run nothing)."""
import os
import re
import shlex
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main  # noqa: E402

FAKE_ENV = {"SUITE": "smoke", "SHARDS": "4", "ATTNGATE_STORE": "https://store.invalid/attngate/", "CI_NODE_INDEX": "2",
            "CI_NODE_TOTAL": "4", "GITHUB_STEP_SUMMARY": "/tmp/summary", "GITHUB_WORKSPACE": "/w", "CI_PROJECT_DIR": "/w",
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": "abc"}
OPERATORS = {"||", "&&", ";", "|", ">", ">>", "(", ")", "&"}


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
        self.assertIn("ab", subcommands)
        self.assertIn("merge", subcommands)
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
        return commands

    def test_parse_only_has_teeth(self):
        self.assertEqual(self.parse(["merge", "a.json", "--no-such-option"]).returncode, 2)
        self.assertEqual(self.parse(["ab", "--suite", "smoke", "--rounds", "1"]).returncode, 2)
        self.assertEqual(self.parse(["run"]).returncode, 2)  # --suite is required

    def test_github_actions(self):
        t = self.load("github")
        self.assertEqual(set(t["jobs"]), {"build", "ab", "merge"})
        self.assertEqual(t["jobs"]["ab"]["strategy"]["matrix"]["shard"], [1, 2, 3, 4])
        self.assertEqual(len(t["jobs"]["ab"]["strategy"]["matrix"]["shard"]), int(t["env"]["SHARDS"]))
        self.assertIn("ATTNGATE_STORE_TOKEN", t["env"])
        self.assertIn("secrets.", t["env"]["ATTNGATE_STORE_TOKEN"])
        merge = t["jobs"]["merge"]
        self.assertIn('"$GITHUB_STEP_SUMMARY"', "\n".join(s.get("run", "") for s in merge["steps"]))
        uploads = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
        self.assertIn("report.html", uploads[0]["with"]["path"])
        self.assertIn("exit $status", merge["steps"][-2]["run"])
        self.assertIn("base.sha", "\n".join(scripts_of(t)))
        self.check_commands(t)

    def test_gitlab_ci(self):
        t = self.load("gitlab")
        self.assertEqual(t["stages"], ["build", "ab", "merge"])
        self.assertEqual(t["attngate-ab"]["parallel"], 4)
        merge = t["attngate-merge"]
        self.assertIn("report.html", merge["artifacts"]["paths"])
        self.assertEqual(merge["artifacts"]["reports"]["junit"], "junit.xml")
        self.assertIn("exit $status", merge["script"])
        self.assertIn("CI_MERGE_REQUEST_DIFF_BASE_SHA", "\n".join(scripts_of(t)))
        commands = self.check_commands(t)
        self.assertIn("2/4", [c for c in commands if c[0] == "ab"][0])


if __name__ == "__main__":
    main()
