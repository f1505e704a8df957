"""End-to-end tests of the second hardening pass (issue 24): kernels and adapters that try to
end the run with exit 0, leave processes behind, write in the wrong place, inject text into
the terminal or the PR comment, or fool the verdict with absurd numbers. Each test is one
defect the issue found; each fails on the code before its fix."""
import os
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, suite_with_goldens, write_json  # noqa: E402
import results_schema  # noqa: E402
from hardening_support import PluginTestCase, alive, kill_all, pids_once_written  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTILE_ADAPTER = f"{sys.executable} {os.path.join(HERE, 'hostile_adapter.py')}"

TINY = {"name": "tiny2", "seed": 1, "timeout_s": 20, "perf": {"repetitions": 3, "min_time_s": 0.001},
        "kernels": ["reference"], "cases": [{"id": "c1", "seq_q": 16, "heads_q": 1, "head_dim": 8},
                                            {"id": "c2", "seq_q": 8, "heads_q": 1, "head_dim": 8}]}

PLUGIN_PRELUDE = """
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "attngate/kernel_abi.h"
#define KERNEL(name, run) {ATTNGATE_API_VERSION, name, "1", "hostile", ATTNGATE_FEATURE_ALL, 0, 0, run, 0, 0, 0}
#define TABLE(...) static const attngate_kernel t[] = {__VA_ARGS__}; \\
    const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = sizeof t / sizeof t[0]; return t; }
static int fail(char *err, size_t n, const char *why) { strncpy(err, why, n); err[n - 1] = 0; return 1; }
"""
PLUGINS = {
    "exiting": "static int run(const attngate_kernel *s, const attngate_problem *p, char *e, size_t n) { exit(0); }\n"
               "TABLE(KERNEL(\"exiter\", run))",
    "aborting": "static int run(const attngate_kernel *s, const attngate_problem *p, char *e, size_t n) { abort(); }\n"
                "TABLE(KERNEL(\"aborter\", run))",
    # A thread that goes on writing `out` after run() returned, until the buffer is gone.
    "late_writer": "static void *scribble(void *out) { volatile float *o = out; for (;;) for (int i = 0; i < 4096; ++i) o[i] = 1.0f; }\n"
                   "static int run(const attngate_kernel *s, const attngate_problem *p, char *e, size_t n) {\n"
                   "    static int started; pthread_t th;\n"
                   "    if (!started++) { pthread_create(&th, 0, scribble, p->out); pthread_detach(th); }\n"
                   "    return fail(e, n, \"scribbling\"); }\n"
                   "TABLE(KERNEL(\"late_writer\", run))",
    # Moves the process elsewhere and takes every permission from what it creates.
    "relocating": "static int run(const attngate_kernel *s, const attngate_problem *p, char *e, size_t n) {\n"
                  "    if (chdir(getenv(\"HARDENING_CHDIR\")) != 0) return fail(e, n, \"chdir failed\");\n"
                  "    umask(0777); return fail(e, n, \"moved\"); }\n"
                  "TABLE(KERNEL(\"relocator\", run))",
    # A child in its own session, which a process group kill does not reach, and its child.
    "daemonizing": "#include <stdio.h>\n"
                   "static int run(const attngate_kernel *s, const attngate_problem *p, char *e, size_t n) {\n"
                   "    int ready[2]; char c; if (pipe(ready) != 0) return fail(e, n, \"no pipe\");\n"
                   "    if (fork() == 0) {\n"
                   "        setsid(); pid_t g = fork(); if (g == 0) { sleep(120); _exit(0); }\n"
                   "        FILE *f = fopen(getenv(\"HARDENING_PID_FILE\"), \"a\"); fprintf(f, \"%d %d\\n\", (int)getpid(), (int)g); fclose(f);\n"
                   "        if (write(ready[1], \"x\", 1) != 1) _exit(1); sleep(120); _exit(0); }\n"
                   "    if (read(ready[0], &c, 1) != 1) return fail(e, n, \"the child never wrote\");\n"
                   "    return fail(e, n, \"daemonized\"); }\n"
                   "TABLE(KERNEL(\"daemonizer\", run))",
    "mentioning": "static int run(const attngate_kernel *s, const attngate_problem *p, char *e, size_t n) {\n"
                  "    return fail(e, n, \"broken, cc @octocat @org/team\"); }\n"
                  "TABLE(KERNEL(\"mentioner\", run))",
}


def wait_dead(pids, seconds=10.0):
    """The pids still alive after waiting up to `seconds` for them to go."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


class Hardening2Test(PluginTestCase):
    PREFIX, SUITE, PRELUDE, PLUGINS = "attngate-hardening2-", TINY, PLUGIN_PRELUDE, PLUGINS

    def run_plugin(self, plugin, kernel, *extra, env=None, cwd=None):
        return attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--plugin",
                        self.plugins[plugin], "--kernel", kernel, *extra, env=env, cwd=cwd, timeout=300)

    def assertNoControl(self, text):
        for ch in ("\x1b", "\x07", "\x9b"):
            self.assertNotIn(ch, text)

    # --- --no-isolation: a kernel that ends the process ------------------------------------

    def test_a_kernel_calling_exit_0_without_isolation_never_ends_the_run_with_0(self):
        out = self.path("exit0.json")
        p = self.run_plugin("exiting", "exiter", "--no-isolation", "--out", out)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("did not finish", p.stderr)
        self.assertIn("exited with code 0 while running exiter on case c1", p.stderr)
        self.assertFalse(read_json(out)["complete"])  # written before the first kernel

    def test_conform_without_isolation_never_ends_with_0_when_a_kernel_calls_exit(self):
        out = self.path("conform-exit0.json")
        p = attngate("conform", "--plugin", self.plugins["exiting"], "--kernel", "exiter", "--no-isolation", "--json", out, timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertIn("did not finish", p.stderr)
        self.assertIn("exited with code 0 while running exiter on case", p.stderr)

    def test_abort_and_a_late_write_from_a_thread_without_isolation_are_exit_1_not_a_signal(self):
        # Outputs of 256 KiB under a fixed mmap threshold: freeing one unmaps it, so the
        # thread's next write faults (SIGSEGV), as it did on a real run.
        big = [{"id": f"b{i}", "seq_q": 256, "heads_q": 4, "head_dim": 64} for i in range(6)]
        suite, bl = self.suite_of("big", ["reference"], big)
        env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.mmap_threshold=131072")
        for plugin, kernel, words in (("aborting", "aborter", "was killed by SIGABRT"), ("late_writer", "late_writer", "")):
            with self.subTest(kernel):
                out = self.path(kernel + ".json")
                p = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--plugin", self.plugins[plugin],
                             "--kernel", kernel, "--no-isolation", "--out", out, env=env, timeout=300)
                self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
                self.assertIn(words, p.stderr)
                results = read_json(out)
                # Either the scribbling thread faulted (the run did not finish and says so), or
                # the run finished with the kernel's failure: never a pass, never a signal.
                if not results["complete"]:
                    self.assertIn("did not finish", p.stderr)
                else:
                    self.assertTrue(all(r["verdict"] != "pass" for r in results["results"]))

    def test_chdir_and_umask_in_a_kernel_do_not_move_or_lock_the_outputs(self):
        work = self.path("cwd")
        elsewhere = self.path("elsewhere")
        os.makedirs(work, exist_ok=True)
        os.makedirs(elsewhere, exist_ok=True)
        shutil.copytree(self.bl, os.path.join(work, "bl"), dirs_exist_ok=True)
        env = dict(os.environ, HARDENING_CHDIR=elsewhere)
        p = attngate("run", "--suite", self.suite, "--baselines", "bl", "--checks", "golden", "--plugin", self.plugins["relocating"],
                     "--kernel", "relocator", "--no-isolation", "--out", "rel/results.json", "--junit", "rel/junit.xml",
                     "--html", "rel/report.html", "--markdown", "rel/summary.md", env=env, cwd=work, timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertEqual(os.listdir(elsewhere), [], "outputs followed the kernel's chdir()")
        results = read_json(os.path.join(work, "rel", "results.json"))
        self.assertTrue(results["complete"])
        self.assertEqual([r["case"] for r in results["results"]], ["c1", "c2"])  # c2's golden read after the chdir
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(work, "rel")).st_mode), 0o755)
        for name in ("results.json", "junit.xml", "report.html", "summary.md"):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(work, "rel", name)).st_mode), 0o644, name)

    def test_an_adapter_restarted_after_a_kernels_chdir_starts_where_attngate_started(self):
        # The relocator moves the process on c1; np-dies kills the adapter on c77, which is then
        # restarted: from the kernel's directory, its relative command line was not found.
        elsewhere = self.path("elsewhere-adapter")
        os.makedirs(elsewhere, exist_ok=True)
        suite, bl = self.suite_of("restart", ["np-dies", "np-ok"], [{"id": "c1", "seq_q": 16, "heads_q": 1, "head_dim": 8},
                                                                    {"id": "c77", "seq_q": 77, "heads_q": 1, "head_dim": 8}])
        out = self.path("restart-results.json")
        p = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--plugin", self.plugins["relocating"],
                     "--no-isolation", "--out", out, "--adapter", f"{sys.executable} hostile_adapter.py",
                     env=dict(os.environ, HARDENING_CHDIR=elsewhere), cwd=HERE, timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
        rows = {(r["case"], r["kernel"]): r for r in read_json(out)["results"]}
        self.assertEqual(rows[("c77", "np-dies")]["verdict"], "error", rows[("c77", "np-dies")])
        self.assertEqual(rows[("c77", "np-ok")]["verdict"], "pass", rows[("c77", "np-ok")])

    # --- orphans -----------------------------------------------------------------------------

    def test_an_isolated_kernels_setsid_grandchildren_do_not_outlive_the_run(self):
        pid_file = self.path("daemon.pids")
        p = self.run_plugin("daemonizing", "daemonizer", "--out", self.path("d.json"), env=dict(os.environ, HARDENING_PID_FILE=pid_file))
        self.assertEqual(p.returncode, 1, p.stderr[-2000:])
        with open(pid_file) as f:
            pids = [int(x) for x in f.read().split()]
        self.assertEqual(len(pids), 4)  # a child in its own session and its child, per case
        self.addCleanup(kill_all, pids)
        self.assertEqual([x for x in pids if alive(x)], [], "a setsid() child outlived the run")

    def test_an_adapters_child_in_another_session_dies_when_the_harness_is_sigkilled(self):
        pid_file = self.path("adapter.pids")
        suite, bl = self.remote_suite("endless", ["hx-endless-output"], timeout_s=120)
        proc = subprocess.Popen([ARGS.attngate, "run", "--suite", suite, "--checks", "golden", "--baselines", bl,
                                 "--out", self.path("endless-results.json"), "--adapter", f"{HOSTILE_ADAPTER} --spawn-orphan {pid_file}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        pids = pids_once_written(pid_file)
        self.assertIsNotNone(pids, "the adapter never started")
        self.addCleanup(kill_all, pids)
        self.assertTrue(all(alive(x) for x in pids))
        proc.kill()
        proc.wait(timeout=10)
        self.assertEqual(wait_dead(pids), [], "the adapter or its child in another session outlived a SIGKILLed harness")
        results_schema.validate_file(self.path("endless-results.json"))  # "complete": false, written before the kill

    # --- the remote protocol -------------------------------------------------------------

    def suite_of(self, name, kernels, cases, **fields):
        """A suite file with its goldens: (suite path, baselines directory)."""
        suite = {"name": name, "seed": 3, "timeout_s": 20, "memory_calls": 4, "warmup_calls": 1, "kernels": kernels,
                 "perf": {"repetitions": 3, "min_time_s": 0.001}, "cases": cases}
        suite.update(fields)
        path = self.path(name + ".json")
        return suite_with_goldens(path, suite, self.path(name + "-bl")), self.path(name + "-bl")

    def remote_suite(self, name, kernels, **fields):
        return self.suite_of(name, kernels, [{"id": "first", "seq_q": 16, "heads_q": 2, "head_dim": 8}], **fields)

    def test_absurd_remote_counts_and_times_are_that_rows_error_never_a_pass(self):
        suite, bl = self.remote_suite("absurd", ["np-ok", "hx-absurd-memory", "hx-absurd-times"])
        out = self.path("absurd-results.json")
        p = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden,memory", "--out", out,
                     "--adapter", HOSTILE_ADAPTER, timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
        rows = {r["kernel"]: r for r in read_json(out)["results"]}
        self.assertEqual(rows["np-ok"]["verdict"], "pass")
        for kernel, words in (("hx-absurd-memory", "$.rss_bytes[0]: expected a count"), ("hx-absurd-times", "expected a time in [0, 86400] s")):
            self.assertEqual(rows[kernel]["verdict"], "error", rows[kernel])
            self.assertIn("outside the protocol", rows[kernel]["reason"])
            self.assertIn(words, rows[kernel]["reason"])
        # A negative sample is no measurement: `time` refuses the answer instead of dropping it.
        suite, _ = self.remote_suite("absurd-time", ["hx-absurd-samples"])
        p = attngate("time", "--suite", suite, "--out", self.path("absurd-samples.json"),
                     "--adapter", HOSTILE_ADAPTER, "--repetitions", "3", timeout=300)
        self.assertEqual(p.returncode, 3, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertIn("$.samples_s[0]: expected a time in (0, 86400] s, got -1", p.stderr)

    def test_an_endless_output_body_is_one_time_limit_named_once(self):
        suite, bl = self.remote_suite("endless2", ["hx-endless-output", "np-ok"], timeout_s=3)
        out = self.path("endless2-results.json")
        p = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--out", out, "--adapter", HOSTILE_ADAPTER,
                     timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
        rows = {r["kernel"]: r for r in read_json(out)["results"]}
        # The GET was retried after each timeout: about 3 x 3 s, reported as "killed after 9.6 s".
        self.assertIn("hung: killed after 3.0 s time limit", rows["hx-endless-output"]["reason"])
        self.assertEqual(rows["np-ok"]["verdict"], "pass")

    def test_remote_kernel_names_with_escapes_are_refused_without_reaching_the_terminal(self):
        for args in (["kernels"], ["run", "--suite", self.suite, "--baselines", self.bl, "--kernel", "nope", "--out", self.path("n.json")]):
            with self.subTest(args[0]):
                p = attngate(*args, "--adapter", f"{HOSTILE_ADAPTER} --hostile-names", timeout=120)
                self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
                self.assertIn("GET /v1/kernels: $.kernels[0]: kernel name", p.stderr)
                self.assertNoControl(p.stdout + p.stderr)

    def test_an_adapters_load_errors_reach_the_terminal_escaped(self):
        p = attngate("kernels", "--adapter", f"{HOSTILE_ADAPTER} --hostile-load-errors", timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # a kernel source that did not load fails the gate
        self.assertIn("cannot import", p.stderr)
        self.assertIn("np-ok", p.stdout)
        self.assertNoControl(p.stdout + p.stderr)
        p = attngate("conform", "--kernel", "np-ok", "--adapter", f"{HOSTILE_ADAPTER} --hostile-load-errors", timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertIn("load error: ", p.stdout)
        self.assertNoControl(p.stdout + p.stderr)

    def test_env_diff_escapes_control_characters_from_fingerprints(self):
        a, b = self.path("fp-a.json"), self.path("fp-b.json")
        write_json(a, {"adapters": {"x": {"jax": "0.4\x1b]0;pwned\x07", "backend": "cpu"}}})
        write_json(b, {"adapters": {"x": {"jax": "0.5\x1b[2J\x1b[H", "backend": "cpu\x9b31m"}}})
        p = attngate("env", "--diff", a, b)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("adapters.x.jax", p.stdout)
        self.assertNoControl(p.stdout)

    # --- tokens and the PR comment -----------------------------------------------------------

    def test_a_token_with_a_line_break_is_refused_before_any_request(self):
        env = dict(os.environ, ATTNGATE_STORE_TOKEN="secret\r\nX-Injected: 1")
        p = attngate("run", "--suite", self.suite, "--store", "http://127.0.0.1:9/", "--out", self.path("t.json"), env=env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("$ATTNGATE_STORE_TOKEN: holds a line break", p.stderr)
        self.assertNotIn("secret", p.stderr)
        env = dict(os.environ, ATTNGATE_ADAPTER_TOKEN="secret\nX-Injected: 1")
        p = attngate("kernels", "--remote", "http://127.0.0.1:9", env=env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("$ATTNGATE_ADAPTER_TOKEN: holds a line break", p.stderr)

    def test_mentions_in_a_kernel_error_do_not_ping_anyone_from_the_markdown_summary(self):
        md = self.path("mentions.md")
        p = self.run_plugin("mentioning", "mentioner", "--out", self.path("m.json"), "--markdown", md)
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(md) as f:
            text = f.read()
        self.assertIn("octocat", text)
        self.assertNotIn("@octocat", text)
        self.assertNotIn("@org/team", text)

    # --- the timing child ----------------------------------------------------------------

    def test_benchmark_environment_variables_do_not_change_what_is_timed(self):
        env = dict(os.environ, BENCHMARK_FILTER="nothing-matches", BENCHMARK_OUT="/nonexistent/dir/out.json",
                   BENCHMARK_OUT_FORMAT="csv", BENCHMARK_LIST_TESTS="true", BENCHMARK_DISPLAY_AGGREGATES_ONLY="true",
                   BENCHMARK_REPORT_AGGREGATES_ONLY="true", BENCHMARK_FORMAT="json", BENCHMARK_REPETITIONS="7",
                   BENCHMARK_MIN_WARMUP_TIME="0.5", BENCHMARK_TIME_UNIT="s", BENCHMARK_V="3", BENCHMARK_COLOR="true",
                   BENCHMARK_ENABLE_RANDOM_INTERLEAVING="true", BENCHMARK_PERF_COUNTERS="CYCLES")
        for extra in ([], ["--no-isolation"]):
            with self.subTest(extra=extra):
                out = self.path("timed.json")
                p = attngate("time", "--suite", self.suite, "--out", out, "--repetitions", "3", *extra, env=env, timeout=300)
                self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
                rows = read_json(out)
                self.assertEqual(len(rows), 2)
                for row in rows:
                    self.assertEqual(len(row["samples_s"]), 3, row)


if __name__ == "__main__":
    main()
