"""`attngate bisect --git A..B`: a team's plugin repository of eight commits (a kernel that
delegates to the built-in native one, as docs/kernels.md shows), one of which makes its output
1% too large; bisect names that commit. Builds are counted honestly: A is built (1), then the
seven commits after it (B among them, built only if the search reaches it) are searched as
`git bisect run` does: eight outcomes (one of seven commits, or none) take ceil(log2(8)) = 3
more, 4 builds in all; a second run builds nothing (the cache). With B itself the bad commit
the search still ends within 3 tries, and a range in which nothing moves says so."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, TempDirTest, main, read_json, write_json  # noqa: E402

KERNEL = r"""// the team's kernel, revision {rev}
#include <cstddef>
#include <cstdint>

#include "attngate/kernel_abi.h"

namespace {{

const attngate_kernel &native() {{
    size_t n = 0;
    const attngate_kernel *t = attngate_builtin_kernels(&n);
    for (size_t i = 0; i < n; ++i)
        if (t[i].name[0] == 'n' && t[i].name[1] == 'a' && t[i].name[2] == 't') return t[i];
    return t[0];
}}

int team_run(const attngate_kernel *, const attngate_problem *p, char *err, size_t n) {{
    const attngate_kernel &k = native();
    if (const int rc = k.run(&k, p, err, n); rc != 0) return rc;
    const int64_t rows = p->batch * p->seq_q;
    for (int64_t i = 0; i < rows * p->heads_q * p->head_dim_v; ++i) p->out[i] *= {scale};
    return 0;
}}

const attngate_kernel kKernels[] = {{{{
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "team",
    /* .version     = */ "0.{rev}",
    /* .description = */ "the team's kernel",
    /* .features    = */ ATTNGATE_FEATURE_ALL,
    /* .workspace   = */ ATTNGATE_WORKSPACE_QUADRATIC,
    /* .supports    = */ nullptr,
    /* .run         = */ team_run,
    /* .user        = */ nullptr,
    /* .init        = */ nullptr,
    /* .free        = */ nullptr,
}}}};

}}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {{
    *count = 1;
    return kKernels;
}}
"""
BAD = 6  # the commit (1-based) whose kernel is 1% off
KERNELS_LIB = None  # the built-in kernels the plugin delegates to (--kernels-lib), as tests/plugins link them


class BisectGit(TempDirTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        repo = cls.repo = os.path.join(cls.dir, "team")
        os.makedirs(repo)
        run = lambda *a: subprocess.run(a, cwd=repo, check=True, capture_output=True)  # noqa: E731
        run("git", "init", "-q", "-b", "main")
        run("git", "config", "user.email", "team@example.com")
        run("git", "config", "user.name", "team")
        cls.shas = []
        for rev in range(1, 9):
            with open(os.path.join(repo, "kernel.cpp"), "w") as f:
                f.write(KERNEL.format(rev=rev, scale="1.01f" if rev >= BAD else "1.0f"))
            run("git", "add", "kernel.cpp")
            subject = "scale the output (a slip)" if rev == BAD else f"tidy the kernel, step {rev}"
            run("git", "commit", "-q", "-m", subject)
            cls.shas.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip())
        cls.suite = os.path.join(cls.dir, "suite.json")
        write_json(cls.suite, {"name": "team-gate", "seed": 3, "kernels": ["team"],
                               "cases": [{"id": "small", "seq_q": 32, "heads_q": 2, "head_dim": 16}]})
        p = subprocess.run([ARGS.attngate, "golden", "generate", "--suite", cls.suite, "--baselines",
                            os.path.join(cls.dir, "baselines")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr

    def bisect(self, name, *more, first=0, last=7):
        include = os.path.join(ARGS.source_dir, "kernels", "include")
        argv = [ARGS.attngate, "bisect", "--suite", self.suite, "--git", f"{self.shas[first]}..{self.shas[last]}",
                "--repo", self.repo,
                "--build", f"g++ -std=c++20 -O1 -shared -fPIC -I {include} kernel.cpp {KERNELS_LIB} -lsleef -pthread -o libteam.so",
                "--plugin", "libteam.so", "--checks", "golden,numerics", "--store", os.path.join(self.dir, "baselines"),
                "--cache", os.path.join(self.dir, "cache"), "--out", os.path.join(self.dir, name), *more]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        return p, (read_json(os.path.join(self.dir, name, "bisect.json")) if p.returncode == 0 else None)

    def assert_names_the_bad_commit(self, p, report):
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(len(report["rows"]), 1, report)
        commit = report["rows"][0]["commit"]
        self.assertEqual((commit["sha"], commit["good"]), (self.shas[BAD - 1], self.shas[BAD - 2]), report)
        self.assertEqual(commit["subject"], "scale the output (a slip)")
        self.assertIn(f"at commit {self.shas[BAD - 1][:12]} \"scale the output (a slip)\"", p.stdout)

    def test_1_the_bad_commit_among_eight_is_found_in_four_builds(self):
        p, report = self.bisect("first")
        self.assert_names_the_bad_commit(p, report)
        print(f"builds: {report['builds']} (A, then {report['probes']} tried), ab runs: {report['ab_runs']}, "
              f"{report['seconds']} s", file=sys.stderr)
        self.assertLessEqual(report["probes"], 3, report)
        self.assertLessEqual(report["builds"], 4, report)
        self.assertIn("the commits after it were not searched", p.stdout)  # B is not the bad commit
        p, again = self.bisect("again")
        self.assert_names_the_bad_commit(p, again)
        self.assertEqual(again["builds"], 0, again)

    def test_2_b_itself_the_bad_commit_is_found_within_three_tries(self):
        p, report = self.bisect("b-is-bad", last=BAD - 1)  # A = commit 1, B = the bad commit
        self.assert_names_the_bad_commit(p, report)
        self.assertLessEqual(report["probes"], 3, report)  # ceil(log2(5 + 1)), B's try among them
        self.assertNotIn("later", report)

    def test_3_a_range_that_moves_nothing_says_so(self):
        p, report = self.bisect("none-moved", first=BAD - 1)  # every commit after the bad one is as bad
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(report["rows"], [], report)
        self.assertIn(f"nothing in {self.shas[BAD - 1]}..{self.shas[7]} moved a row", p.stdout)
        self.assertLessEqual(report["probes"], 2, report)  # two commits after A: ceil(log2(3))

    def test_an_empty_range_is_bad_input(self):
        argv = [ARGS.attngate, "bisect", "--suite", self.suite, "--git", f"{self.shas[3]}..{self.shas[3]}", "--repo", self.repo,
                "--build", "true", "--plugin", "libteam.so", "--cache", os.path.join(self.dir, "cache2")]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("an empty range", p.stderr)


if __name__ == "__main__":
    at = sys.argv.index("--kernels-lib")
    KERNELS_LIB = os.path.abspath(sys.argv[at + 1])
    del sys.argv[at:at + 2]
    main()
