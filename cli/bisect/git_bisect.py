"""`attngate bisect --git A..B --build CMD --plugin PATH`: the first commit of a team's plugin
repository that moves a row, as `git bisect run` finds it, with attngate `ab` against A's build
as the oracle (so a perf change is judged by the paired A/B rule, never by baselines). B is
built only when the search reaches it, so n commits after A cost at most ceil(log2(n + 1))
builds beyond A's; the search stops at the first commit that moves any row. Each commit is
exported (git archive, the repository is not touched) and built once into the cache,
keyed by commit and build command; a commit that does not build is skipped."""
import hashlib
import json
import os
import shutil
import subprocess
import time

from locks import BadInput
from oracle import changed_rows, describe_change, moves_like_new
from search import OutOfBudget, first_moving


def git(repo, *args):
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise BadInput(f"{repo}: git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


class GitBisect:
    def __init__(self, args, oracle, cache_dir, log):
        self.args, self.oracle, self.log = args, oracle, log
        self.cache_dir = cache_dir
        self.builds, self.reused, self.failed = [], [], []
        os.makedirs(cache_dir, exist_ok=True)

    def commits(self):
        spec = self.args.git
        if ".." not in spec:
            raise BadInput(f"--git {spec}: expected a range A..B")
        a, b = spec.split("..", 1)
        repo = os.path.abspath(self.args.repo)
        if not os.path.isdir(repo):
            raise BadInput(f"--repo {repo}: no such directory")
        a_sha, b_sha = git(repo, "rev-parse", "--verify", a + "^{commit}"), git(repo, "rev-parse", "--verify", b + "^{commit}")
        between = git(repo, "rev-list", "--reverse", "--first-parent", f"{a_sha}..{b_sha}").split()
        if not between:
            raise BadInput(f"--git {spec}: an empty range ({b} is not after {a})")
        return repo, [a_sha, *between]

    def build(self, repo, sha):
        """The plugin built at `sha` (cached), or None when the build fails."""
        key = hashlib.sha256(json.dumps([sha, self.args.build, self.args.plugin]).encode()).hexdigest()[:20]
        root = os.path.join(self.cache_dir, key)
        marker, plugin = os.path.join(root, "attngate-bisect.json"), os.path.join(root, "src", self.args.plugin)
        if os.path.exists(marker):
            with open(marker) as f:
                ok = json.load(f)["ok"]
            if sha not in self.reused and sha not in self.builds:
                self.reused.append(sha)
            return plugin if ok else None
        if self.args.max_envs and len(self.builds) >= self.args.max_envs:
            raise OutOfBudget()
        shutil.rmtree(root, ignore_errors=True)
        src = os.path.join(root, "src")
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", repo, "archive", sha], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        self.log(f"building {sha[:12]} ({len(self.builds) + 1})")
        done = subprocess.run(self.args.build, shell=True, cwd=src, capture_output=True, text=True)
        self.builds.append(sha)
        ok = done.returncode == 0 and os.path.exists(plugin)
        if not ok:
            self.failed.append(sha)
            self.log(f"  {sha[:12]} does not build: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
        with open(marker + ".tmp", "w") as f:
            json.dump({"ok": ok, "sha": sha}, f)
        os.replace(marker + ".tmp", marker)
        return plugin if ok else None

    def run(self):
        """A is built and run against itself; then the commits after it are searched as `git bisect
        run` does, B among them (built only when the search reaches it). A commit "moves" when
        its `ab` against A's build differs from A's against itself on any selected row."""
        started = time.time()
        repo, commits = self.commits()
        a_plugin = self.build(repo, commits[0])
        if not a_plugin:
            raise BadInput(f"--git {self.args.git}: A does not build with --build")
        side_a, seen = ("plugin", a_plugin), {}
        old = self.oracle.run(side_a, side_a, f"git:{commits[0]}:{commits[0]}")

        def moves(sha):
            plugin = self.build(repo, sha)
            if plugin is None:
                return None
            seen[sha] = self.oracle.run(side_a, ("plugin", plugin), f"git:{commits[0]}:{sha}")
            return bool(changed_rows(old, seen[sha]))
        report = {"mode": "git", "range": self.args.git, "suite": self.args.suite, "commits": len(commits) - 1, "rows": []}
        try:
            good, bad, skipped = first_moving(commits, moves, last_moves=False)
        except OutOfBudget:
            good, bad, skipped = None, None, []
            report["unfinished"] = f"--max-envs {self.args.max_envs} reached"
        report["skipped"] = skipped
        if bad is not None:
            self.blame(repo, commits, bad, good, skipped, old, seen[bad], side_a, report)
        report.update({"builds": len(self.builds), "built": len(self.builds), "reused": len(self.reused),
                       "probes": len(seen), "failed_builds": len(self.failed), "ab_runs": self.oracle.runs,
                       "seconds": round(time.time() - started, 1)})
        return report

    def blame(self, repo, commits, bad, good, skipped, old, new, side_a, report):
        """The rows the first moving commit changed (against A), each run again against A (its build
        is cached) to tell a change that reproduces from a flaky one."""
        changes = changed_rows(old, new)
        self.oracle.restrict(changes)
        again = self.oracle.run(side_a, ("plugin", self.build(repo, bad)), f"git-again:{commits[0]}:{bad}", fresh=True)
        commit = {"sha": bad, "subject": git(repo, "log", "-1", "--format=%s", bad), "good": good, "skipped": skipped}
        for row, components in sorted(changes.items()):
            entry = {"row": row, "change": describe_change(old.get(row, {}), new[row], components)}
            if moves_like_new(again.get(row, {}), new[row], components):
                entry["commit"] = commit
            else:
                entry["flaky"] = True
            report["rows"].append(entry)
        if bad != commits[-1]:
            report["later"] = f"{bad}..{commits[-1]}"  # not searched: a later commit may move other rows
