"""End-to-end tests of the third hardening pass (issue 38), the run's side: a broken stderr or
stdout, Ctrl-Z while a kernel runs, merging a shard that did not finish, comparing two shapes
under one case id, appending a run to the history twice, and the CI scripts (whose PR comment
is updated, which venv names install-deps accepts). Each test is one defect the issue found;
each fails on the code before its fix."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ci_runners import FakeForge, start_forge  # noqa: E402
from ci_templates_test import TEAM_KERNEL  # noqa: E402
from common import ARGS, attngate, main, read_json, suite_with_goldens, write_json  # noqa: E402
from hardening_support import PluginTestCase, kill_all, pids_once_written  # noqa: E402

CASES = [{"id": f"c{i}", "seq_q": 8 * i, "heads_q": 1, "head_dim": 8} for i in (1, 2, 3, 4)]  # seq_q names the case
TINY = {"name": "tiny3", "seed": 3, "timeout_s": 60, "kernels": ["reference"], "cases": CASES}

# A slow kernel: a team's plain C kernel (right on every case of TINY) that first sleeps
# $HARDENING_SLEEP_MS (on the case of seq_q $HARDENING_SLEEP_SEQ_Q only, when given), its pid
# written to $HARDENING_STARTED as it starts to.
SLEEPER = TEAM_KERNEL.split("static const attngate_kernel team_kernels")[0] + """
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static int run(const attngate_kernel *self, const attngate_problem *p, char *err, size_t err_len) {
    const char *started = getenv("HARDENING_STARTED"), *ms = getenv("HARDENING_SLEEP_MS"), *only = getenv("HARDENING_SLEEP_SEQ_Q");
    long t = ms && (!only || atol(only) == p->seq_q) ? atol(ms) : 0;
    if (t && started) { FILE *f = fopen(started, "a"); if (f) { fprintf(f, "%d\\n", (int)getpid()); fclose(f); } }
    struct timespec left = {t / 1000, (t % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0) {}
    return team_run(self, p, err, err_len); }
static const attngate_kernel t[] = {{ATTNGATE_API_VERSION, "sleeper", "1", "sleeps, then computes",
    ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_GQA, 0, 0, run, 0, 0, 0}};
const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 1; return t; }"""


def process_state(pid):
    """The one-letter state of /proc/PID/stat (T: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def pipe_without_reader():
    """The write end of a pipe whose reader is gone: a write to it is EPIPE (or SIGPIPE)."""
    r, w = os.pipe()
    os.close(r)
    return w


class RunHardening3Test(PluginTestCase):
    PREFIX, SUITE, PLUGINS = "attngate-hardening3-", TINY, {"sleeping": SLEEPER}

    def run_args(self, out, *extra):
        return [ARGS.attngate, "run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", out, *extra]

    def killed_run(self, out, seq_q, *extra):
        """A run SIGTERMed while the sleeper sleeps on the case of seq_q (the end of a CI job's
        time): its results.json holds `"complete": false` and the cases before."""
        started = self.path(os.path.basename(out) + ".started")
        env = dict(os.environ, HARDENING_SLEEP_MS="60000", HARDENING_SLEEP_SEQ_Q=str(seq_q), HARDENING_STARTED=started)
        p = subprocess.Popen(self.run_args(out, "--plugin", self.plugins["sleeping"], *extra), env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.assertIsNotNone(pids_once_written(started, 120), "the sleeper never started")
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
        finally:
            kill_all([p.pid])
        results = read_json(out)
        self.assertFalse(results["complete"])
        return out

    # --- 2: progress on a broken stderr --------------------------------------------------

    def test_a_closed_full_or_unread_stderr_never_changes_the_run(self):
        whole = self.path("undisturbed.json")
        p = subprocess.run(self.run_args(whole, "--progress-every", "0"), capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("progress: ", p.stderr)  # it has progress lines to write
        verdicts = [r["verdict"] for r in read_json(whole)["results"]]
        for how in ("closed", "/dev/full", "a pipe nobody reads (stdout too: 2>&1 | head)"):
            with self.subTest(how):
                out = self.path(f"stderr-{len(how)}.json")
                argv = self.run_args(out, "--progress-every", "0")
                if how == "closed":
                    p = subprocess.run(["bash", "-c", 'exec "$@" 2>&-', "bash", *argv], stdout=subprocess.DEVNULL, timeout=300)
                elif how == "/dev/full":
                    with open("/dev/full", "w") as full:
                        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=full, timeout=300)
                else:
                    w = pipe_without_reader()
                    try:
                        p = subprocess.run(argv, stdout=w, stderr=w, timeout=300)
                    finally:
                        os.close(w)
                self.assertEqual(p.returncode, 0, f"{how}: ended with {p.returncode} (a negative one is a signal)")
                results = read_json(out)
                self.assertTrue(results["complete"])
                self.assertEqual([r["verdict"] for r in results["results"]], verdicts)

    # --- 13: write errors on stdout ------------------------------------------------------

    def test_a_write_error_on_stdout_is_an_error_and_a_gone_reader_is_not(self):
        # Exit 3 in place of a pass; a verdict of its own (coverage's missing pairs, 1) is kept.
        commands = {"kernels --json": (["kernels", "--json"], 3), "suite coverage": (["suite", "coverage", "--suite", self.suite], 1),
                    "--version": (["--version"], 3), "--help": (["run", "--help"], 3),
                    "run": (self.run_args(self.path("full-stdout.json"))[1:], 3)}
        for name, (args, rc) in commands.items():
            with self.subTest(name), open("/dev/full", "w") as full:
                p = subprocess.run([ARGS.attngate, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
                self.assertEqual(p.returncode, rc, f"{name} >/dev/full: {p.returncode}\n{p.stderr}")
                self.assertIn("error: cannot write to stdout: No space left on device", p.stderr)
        # A closed stdout is the same error; a reader that went away (`| head`) is its choice.
        p = subprocess.run(["bash", "-c", 'exec "$@" >&-', "bash", ARGS.attngate, "kernels", "--json"], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("error: cannot write to stdout", p.stderr)
        w = pipe_without_reader()
        try:
            p = subprocess.run([ARGS.attngate, "kernels", "--json"], stdout=w, stderr=subprocess.PIPE, text=True, timeout=300)
        finally:
            os.close(w)
        self.assertEqual(p.returncode, 0, p.stderr)

    # --- 11: Ctrl-Z --------------------------------------------------------------------------

    def test_time_stopped_by_ctrl_z_is_not_the_kernels_run_time(self):
        out, started = self.path("ctrl-z.json"), self.path("ctrl-z.started")
        env = dict(os.environ, HARDENING_SLEEP_MS="1500", HARDENING_STARTED=started)
        # Its own process group, as a shell's job: Ctrl-Z (SIGTSTP) stops that group, not the
        # kernel's, which runs in a group of its own and finishes meanwhile.
        p = subprocess.Popen(self.run_args(out, "--plugin", self.plugins["sleeping"], "--kernel", "sleeper", "--case", "c1",
                                           "--timeout", "5"),
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, process_group=0)
        try:
            self.assertIsNotNone(pids_once_written(started, 120), "the sleeper never started")
            p.send_signal(signal.SIGTSTP)
            deadline = time.monotonic() + 30
            while process_state(p.pid) != "T" and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(process_state(p.pid), "T", "SIGTSTP did not stop attngate")
            time.sleep(8)  # well past the 5 s limit; the kernel ended after 1.5 s
            p.send_signal(signal.SIGCONT)
            stdout, stderr = p.communicate(timeout=300)
        finally:
            kill_all([p.pid])
        self.assertEqual(p.returncode, 0, stdout + stderr)
        self.assertNotIn("hung", stdout + stderr)
        self.assertEqual(read_json(out)["results"][0]["verdict"], "pass")

    # --- 10: merge -----------------------------------------------------------------------

    def test_merge_refuses_a_shard_that_did_not_finish_a_missing_row_and_a_row_twice(self):
        kernels = ("--plugin", self.plugins["sleeping"], "--kernel", "reference", "--kernel", "sleeper")
        shards = [self.path(f"shard-{i}.json") for i in (1, 2)]
        for i, out in enumerate(shards, 1):
            p = subprocess.run(self.run_args(out, *kernels, "--shard", f"{i}/2"), capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
        p = attngate("merge", *shards, "-o", self.path("merged.json"))
        self.assertEqual(p.returncode, 0, p.stderr)

        # A shard killed while the sleeper runs on its last case of a sleeper row, with a case
        # before it (in its results).
        def sleeps_after_a_case(shard):
            rows = [(r["case"], r["kernel"]) for r in read_json(shard)["results"]]
            last = max((n for n, (_, k) in enumerate(rows) if k == "sleeper"), default=0)
            return rows[last][0] if any(c != rows[last][0] for c, _ in rows[:last]) else None
        i = 0 if sleeps_after_a_case(shards[0]) else 1
        last = next(c["seq_q"] for c in CASES if c["id"] == sleeps_after_a_case(shards[i]))
        killed = self.killed_run(self.path("shard-killed.json"), last, *kernels[2:], "--shard", f"{i + 1}/2")
        p = attngate("merge", shards[1 - i], killed, "-o", self.path("merged-killed.json"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"{killed}: $.complete is false: the shard did not finish", p.stderr)

        # The rows of a case its plan lists are missing; a row of the other shard is there twice.
        second = read_json(shards[1])
        gone = second["shard"]["mine"][0]
        unit = (lambda r: r["case"]) if second["shard"]["unit"] == "case" else (lambda r: f"{r['case']}/{r['kernel']}")
        write_json(self.path("lacking.json"), dict(second, results=[r for r in second["results"] if unit(r) != gone]))
        p = attngate("merge", shards[0], self.path("lacking.json"), "-o", self.path("merged-lacking.json"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"lacking.json: $.shard.mine plans {gone}, but the shard holds no row of it", p.stderr)

        first = read_json(shards[0])
        twice = dict(second, results=second["results"] + first["results"][:1])
        write_json(self.path("twice.json"), twice)
        row = first["results"][0]
        p = attngate("merge", shards[0], self.path("twice.json"), "-o", self.path("merged-twice.json"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"twice.json: row {row['case']}/{row['kernel']} is in {shards[0]} too", p.stderr)

    # --- 15: history --append --------------------------------------------------------------

    def test_history_appends_a_run_once_and_never_one_that_did_not_finish(self):
        store = self.path("history-store")
        out = self.path("history-run.json")
        p = subprocess.run(self.run_args(out), capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = attngate("history", "--append", out, "--store", store)
        self.assertEqual(p.returncode, 0, p.stderr)
        first = p.stdout.split(" as ")[-1].strip()
        copy = self.path("history-run-copy.json")
        shutil.copy(out, copy)  # the same run under another name
        for again in (out, copy):
            p = attngate("history", "--append", again, "--store", store)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(f"{again}: these results are in the history already, as {first}", p.stderr)
        killed = self.killed_run(self.path("history-killed.json"), CASES[-1]["seq_q"], "--kernel", "sleeper")
        p = attngate("history", "--append", killed, "--store", store)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"{killed}: $.complete is false: the run did not finish", p.stderr)
        records = [f for root, _, files in os.walk(os.path.join(store, "history", "tiny3")) for f in files
                   if f.endswith(".json") and os.path.basename(root) != "fingerprints"]
        self.assertEqual(len(records), 1, records)

    def test_an_interrupted_run_is_never_green_and_leaves_no_report_of_the_run_before(self):
        # From a new user's trial: after a run killed by SIGINT, results.json said "verdict":
        # "pass" (complete: false), `report --exit-code` printed "✅ PASS" and exited 0, and the
        # HTML, Markdown and JUnit beside it were the previous run's, a failure of another build.
        out = self.path("interrupted.json")
        reports = {"html": self.path("i.html"), "markdown": self.path("i.md"), "junit": self.path("i.xml")}
        flags = [x for f, path in reports.items() for x in (f"--{f}", path)]
        p = subprocess.run(self.run_args(out, *flags), capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(all(os.path.exists(path) for path in reports.values()))
        whole = self.path("whole.json")
        shutil.copy(out, whole)
        self.killed_run(out, CASES[-1]["seq_q"], "--kernel", "sleeper", *flags)
        self.assertEqual([f for f, path in reports.items() if os.path.exists(path)], [], "reports of the run before were left")
        results = read_json(out)
        self.assertEqual((results["complete"], results["verdict"]), (False, "fail"))
        self.assertEqual(len(results["results"]), len(CASES) - 1)
        p = attngate("report", out, "--exit-code", *flags)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        with open(reports["markdown"]) as f:
            md = f.read()
        self.assertTrue(md.startswith("## attngate: ❌ FAIL"), md[:200])
        self.assertIn("The run did not complete", md)
        with open(reports["junit"]) as f:
            xml = f.read()
        self.assertIn('errors="1"', xml.splitlines()[1])
        self.assertIn("the run did not complete (3 case x kernel row(s) written): these results are partial", xml)
        # From review: compare said "no regression" of the partial run over the rows it had.
        p = attngate("compare", whole, out)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("(B's run did not complete: its results are partial)", p.stdout)
        # ... and report --append-history appended it, where history --append refuses it.
        store = self.path("partial-store")
        p = attngate("report", out, "--markdown", reports["markdown"], "--append-history", "--store", store)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("history: not recorded: $.complete is false: the run did not finish", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(store, "history")), "a partial run was appended")

    # --- 12: compare -----------------------------------------------------------------------

    def test_compare_of_one_case_id_with_two_shapes_is_an_error(self):
        outs = {}
        for seq_q in (16, 32):
            suite = suite_with_goldens(self.path(f"shape-{seq_q}.json"),
                                       dict(TINY, cases=[{"id": "c1", "seq_q": seq_q, "heads_q": 1, "head_dim": 8}]),
                                       self.path(f"bl-{seq_q}"))
            outs[seq_q] = self.path(f"shape-{seq_q}-results.json")
            p = attngate("run", "--suite", suite, "--baselines", self.path(f"bl-{seq_q}"), "--checks", "golden", "--out", outs[seq_q])
            self.assertEqual(p.returncode, 0, p.stderr)
        p = attngate("compare", outs[32], outs[16])
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("case c1 / reference: shape batch=1 seq_q=32", p.stderr)
        self.assertIn("but batch=1 seq_q=16", p.stderr)
        self.assertNotIn("no regression", p.stdout)
        # The same shape under another dtype is another case too.
        suite = suite_with_goldens(self.path("dtype-bf16.json"),
                                   dict(TINY, cases=[{"id": "c1", "seq_q": 16, "heads_q": 1, "head_dim": 8, "dtype": "bf16"}]),
                                   self.path("bl-bf16"))
        bf16 = self.path("dtype-bf16-results.json")
        p = attngate("run", "--suite", suite, "--baselines", self.path("bl-bf16"), "--checks", "golden", "--out", bf16)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = attngate("compare", outs[16], bf16)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn('dtype="f32"', p.stderr)
        self.assertIn('dtype="bf16"', p.stderr)


# --- 16: the PR comment's author -------------------------------------------------------------

class PostSummaryAuthorTest(unittest.TestCase):
    MARKER = "<!-- attngate summary: updated in place by ci/post-summary.py -->"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-hardening3-comment-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.summary = os.path.join(self.dir, "summary.md")

    def post(self, forge, env, text):
        with open(self.summary, "w") as f:
            f.write(text)
        script = os.path.join(ARGS.source_dir, "ci", "post-summary.py")
        return subprocess.run([sys.executable, script, forge, self.summary], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, **env))

    def check_hijack_refused(self, forge, env, bot):
        """Someone else's comment carrying the marker is left alone: the bot posts its own,
        then updates that one."""
        hijack = f"{self.MARKER}\nmallory was here"
        FakeForge.comments[:] = [FakeForge.by("mallory", hijack, 1), FakeForge.by(bot, "a review by the bot, no marker", 2)]
        for text in ("GATE FAILED", "GATE PASSED"):
            p = self.post(forge, env, f"## attngate: {text}")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(FakeForge.comments), 3, [c["body"] for c in FakeForge.comments])
            self.assertEqual(FakeForge.comments[0]["body"], hijack)
            self.assertIn(text, FakeForge.comments[2]["body"])
            self.assertEqual(FakeForge.comments[2]["user"]["login"], bot)
        self.assertEqual(FakeForge.comments[1]["body"], "a review by the bot, no marker")

    def test_github_updates_only_its_own_comment(self):
        url = start_forge(self)
        env = {"GITHUB_API_URL": url, "GITHUB_REPOSITORY": "me/repo", "PR_NUMBER": "7", "GITHUB_TOKEN": "s3cret"}
        self.check_hijack_refused("github", env, "attngate-bot")

    def test_github_workflow_token_is_github_actions_bot_or_the_login_given(self):
        url = start_forge(self)
        FakeForge.me = None  # GET /user: 403 for the workflow's token
        env = {"GITHUB_API_URL": url, "GITHUB_REPOSITORY": "me/repo", "PR_NUMBER": "7", "GITHUB_TOKEN": "s3cret"}
        self.check_hijack_refused("github", env, "github-actions[bot]")
        FakeForge.me = "team-bot"
        self.check_hijack_refused("github", dict(env, ATTNGATE_COMMENT_AUTHOR="team-bot"), "team-bot")
        self.assertNotIn("/user", [path for _, path, _ in FakeForge.calls[-4:]])

    def test_gitlab_updates_only_its_own_note(self):
        url = start_forge(self)
        env = {"CI_API_V4_URL": url + "/api/v4", "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "3", "ATTNGATE_GITLAB_TOKEN": "t0k"}
        self.check_hijack_refused("gitlab", env, "attngate-bot")


# --- 17: ATTNGATE_VENVS ---------------------------------------------------------------------

class InstallDepsVenvNamesTest(unittest.TestCase):
    def test_a_venv_name_outside_dot_venv_is_refused_before_anything_is_removed(self):
        scratch = tempfile.mkdtemp(prefix="attngate-hardening3-venvs-")
        self.addCleanup(shutil.rmtree, scratch, ignore_errors=True)
        repo = os.path.join(scratch, "repo")
        os.makedirs(os.path.join(repo, "ci"))
        shutil.copy(os.path.join(ARGS.source_dir, "ci", "install-deps.sh"), os.path.join(repo, "ci"))
        for keep in (os.path.join(repo, ".venv", "jax-new"), os.path.join(scratch, "victim")):
            os.makedirs(keep)
            open(os.path.join(keep, "precious"), "w").close()
        open(os.path.join(repo, "x.lock"), "w").close()

        def install(venvs, **env):
            return subprocess.run(["bash", os.path.join(repo, "ci", "install-deps.sh")], capture_output=True, text=True, timeout=300,
                                  env=dict(os.environ, ATTNGATE_DEPS="venvs", ATTNGATE_VENVS=venvs, **env))

        for venvs in ("../../victim=x.lock", "=x.lock", ".=x.lock", "..=x.lock", "a/b=x.lock", "*=x.lock", "nolock", "ok=",
                      "fine=x.lock ../victim=x.lock"):
            with self.subTest(venvs):
                p = install(venvs)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("install-deps: error: ATTNGATE_VENVS: ", p.stderr)
                self.assertNotIn("creating", p.stdout)
                self.assertTrue(os.path.exists(os.path.join(scratch, "victim", "precious")))
                self.assertTrue(os.path.exists(os.path.join(repo, ".venv", "jax-new", "precious")))
        # A plain name passes the check: the script goes on, here to its next refusal (an
        # interpreter that does not run), still before any venv is touched.
        p = install("jax-1.2_b=x.lock", ATTNGATE_JAX_PYTHON=os.path.join(scratch, "no-python"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertNotIn("ATTNGATE_VENVS", p.stderr)
        self.assertIn("does not run", p.stderr)


if __name__ == "__main__":
    main()
