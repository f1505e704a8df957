"""The JAX-bump job's red path end to end (issue 37): ci/jax-bump.sh on jax-xla's window cases of
jax-smoke, whose goldens pass on jax 0.10.2 and fail on 0.7.2. The bump 0.7.2 → 0.10.2 fixes
them and is green (a golden fail → pass is no regression), so the pull request here is its
revert: the base locks 0.10.2, the head 0.7.2. The A/B goes red (golden pass → fail), the script
runs `attngate bisect` over the two locks, and its jax-bisect.md names the jax releases between
which the rows moved, jaxlib with it (with jax-bump.sh's golden,numerics: 0.8.0 → 0.7.2, where
the bits last changed; docs/bisect.md says why that is not 0.8.2 → 0.8.1); then each template's
comment job posts it (the GitHub job's and the GitLab job's own command, against a stand-in of
each forge's API). Real PyPI and the shared bisect cache (~/.cache/attngate/bisect): minutes
cold (19 min here), 38 s warm; labelled slow and network (`ctest -L slow` runs it)."""
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ci_runners import FakeForge, start_forge  # noqa: E402
from ci_templates_test import JaxBumpRepository  # noqa: E402
from common import ARGS, main, require_jax_venvs  # noqa: E402

CASES = ["window_bidir_s256_f32", "window_causal_s512_bf16", "window_bottomright_q128_k256_f32", "window_topleft_q128_k256_f32"]
AB_FAST = ["--rounds", "2", "--max-rounds", "0", "--min-time", "0.001"]


class JaxBumpRedPath(JaxBumpRepository, unittest.TestCase):
    BASE, HEAD = "new", "old"  # a revert of the bump: red

    def comment_of(self, forge, command, cwd, env):
        """The body the comment job's command posts, run as the job runs it (python3: this interpreter)."""
        FakeForge.comments, FakeForge.calls = [], []
        command = re.sub(r"^python3 ", f"{sys.executable} ", command)
        p = subprocess.run(["bash", "-eo", "pipefail", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **env))
        self.assertEqual(p.returncode, 0, f"{forge}: {p.stdout}{p.stderr}")
        self.assertEqual(len(FakeForge.comments), 1, FakeForge.calls)
        return FakeForge.comments[0]["body"]

    def test_a_red_bump_is_bisected_and_the_answer_joins_both_templates_comments(self):
        reports = os.path.join(self.repo, "reports", "jax-report")  # where GitHub's comment job downloads them
        os.makedirs(reports)
        self.env["ATTNGATE_BISECT_MARKDOWN"] = "reports/jax-report/jax-bisect.md"
        cases = [a for c in CASES for a in ("--case", c)]
        started = time.time()
        p = self.job(self.base, "--kernel", "jax-xla", *cases, *AB_FAST, "--out", os.path.join(reports, "jax-ab.json"),
                     "--markdown", os.path.join(reports, "jax-summary.md"))
        took = time.time() - started
        if "bisect could not say" in p.stderr and "pypi" in p.stderr.lower():
            self.skipTest(f"the package index is out of reach: {p.stderr[-300:]}")
        self.assertEqual(p.returncode, 1, p.stdout[-3000:] + p.stderr[-3000:])  # red: the verdict is ab's
        self.assertNotIn("bisect could not say", p.stderr, p.stderr[-3000:])
        with open(os.path.join(reports, "jax-bisect.md")) as f:
            answer = f.read()
        print(f"jax-bump's red path, bisect included: {took:.0f} s\n{answer}", file=sys.stderr)
        self.assertIn("### attngate bisect: `.venv/locks/base.lock` → `.venv/locks/head.lock` on jax-smoke", answer)
        self.assertRegex(answer, r"jax-xla on window_\w+: golden pass → fail[^\n]* between jax 0\.\d+\.\d+ and 0\.\d+\.\d+ \(jaxlib moved with it")
        url = start_forge(self)
        with open(os.path.join(ARGS.source_dir, "ci", "github", "attngate.yml")) as f:
            github = yaml.safe_load(f)["jobs"]["comment"]["steps"][-1]["run"]
        body = self.comment_of("github", github, self.repo, {"GITHUB_API_URL": url, "GITHUB_REPOSITORY": "me/repo",
                                                            "PR_NUMBER": "7", "GITHUB_TOKEN": "s3cret"})
        self.assertIn(answer.strip(), body)
        # GitLab's comment job finds each job's artifacts at the project's root.
        gitlab_dir = os.path.join(self.dir, "gitlab")
        shutil.copytree(reports, gitlab_dir)
        shutil.copytree(os.path.join(self.repo, "ci"), os.path.join(gitlab_dir, "ci"))
        with open(os.path.join(ARGS.source_dir, "ci", "gitlab", "attngate.yml")) as f:
            gitlab = [line for line in yaml.safe_load(f)["attngate-comment"]["script"] if "post-summary.py" in line][0]
        body = self.comment_of("gitlab", gitlab, gitlab_dir, {"CI_API_V4_URL": url + "/api/v4", "CI_PROJECT_ID": "42",
                                                               "CI_MERGE_REQUEST_IID": "3", "ATTNGATE_GITLAB_TOKEN": "t0k"})
        self.assertIn(answer.strip(), body)


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    require_jax_venvs("old", "new")
    main()
