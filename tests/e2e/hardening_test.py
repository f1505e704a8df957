"""End-to-end tests of issue 10's promise under hostile input and faults: attngate ends with
0, 1, 2 or 3 and never with a signal, never hangs, never orphans a child and never replaces
what is not its own to replace. Each test is a defect the issue found on main."""
import copy
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, suite_with_goldens, write_json  # noqa: E402
import results_schema  # noqa: E402
from hardening_support import PluginTestCase, alive, children_of, kill_all, pids_once_written  # noqa: E402

TINY = {"name": "tiny", "seed": 1, "timeout_s": 20, "perf": {"repetitions": 3, "min_time_s": 0.001},
        "kernels": ["reference"], "cases": [{"id": "c1", "seq_q": 16, "heads_q": 1, "head_dim": 8}]}

# Hostile plugins, compiled here from C against the kernel ABI header.
PLUGIN_PRELUDE = """
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attngate/kernel_abi.h"
static int run_fail(const attngate_kernel *self, const attngate_problem *p, char *err, size_t n) {
    (void)self; (void)p; if (n) { strncpy(err, "failed on purpose", n); err[n - 1] = 0; } return 1;
}
#define KERNEL(name, run) {ATTNGATE_API_VERSION, name, "1", "hostile", ATTNGATE_FEATURE_ALL, 0, 0, run, 0, 0, 0}
"""
PLUGINS = {
    "null_table": "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 3; return 0; }",
    "huge_count": "static const attngate_kernel t[] = {KERNEL(\"h\", run_fail)};\n"
                  "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = (size_t)1 << 40; return t; }",
    "crashing_entry": "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 1; return *(attngate_kernel **)8; }",
    "exiting_constructor": "__attribute__((constructor)) static void bye(void) { exit(0); }\n"
                           "static const attngate_kernel t[] = {KERNEL(\"bye\", run_fail)};\n"
                           "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 1; return t; }",
    "control_name": "static const attngate_kernel t[] = {KERNEL(\"x\\x1b[2K\\rGATE PASSED\", run_fail)};\n"
                    "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 1; return t; }",
    # A kernel error message that fills the buffer with no terminating zero.
    "unterminated_error": "static int run(const attngate_kernel *s, const attngate_problem *p, char *err, size_t n) {\n"
                          "    (void)s; (void)p; memset(err, 'A', n); return 1; }\n"
                          "static const attngate_kernel t[] = {KERNEL(\"unterminated\", run)};\n"
                          "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 1; return t; }",
    # Bytes that are not UTF-8 in a kernel's error message and in a crashing kernel's stderr.
    "non_utf8": "#include <stdio.h>\n"
                "static int bad_error(const attngate_kernel *s, const attngate_problem *p, char *err, size_t n) {\n"
                "    (void)s; (void)p; strncpy(err, \"bad \\xff\\xfe bytes\", n); return 1; }\n"
                "static int bad_crash(const attngate_kernel *s, const attngate_problem *p, char *err, size_t n) {\n"
                "    (void)s; (void)p; (void)err; (void)n; fputs(\"dying \\xc3\\x28 \\xff\\n\", stderr); fflush(stderr); abort(); }\n"
                "static const attngate_kernel t[] = {KERNEL(\"bad_error\", bad_error), KERNEL(\"bad_crash\", bad_crash)};\n"
                "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 2; return t; }",
    # A kernel that forks a process that keeps the result pipe open and outlives the call.
    "forking": "#include <stdio.h>\n"
               "static int run(const attngate_kernel *s, const attngate_problem *p, char *err, size_t n) {\n"
               "    (void)s; (void)p; pid_t pid = fork();\n"
               "    if (pid == 0) { sleep(60); _exit(0); }\n"
               "    FILE *f = fopen(getenv(\"HARDENING_PID_FILE\"), \"a\"); fprintf(f, \"%d\\n\", (int)pid); fclose(f);\n"
               "    strncpy(err, \"forked\", n); return 1; }\n"
               "static const attngate_kernel t[] = {KERNEL(\"forking\", run)};\n"
               "const attngate_kernel *attngate_plugin_kernels(size_t *n) { *n = 1; return t; }",
}


class HardeningTest(PluginTestCase):
    PREFIX, SUITE, PRELUDE, PLUGINS = "attngate-hardening-", TINY, PLUGIN_PRELUDE, PLUGINS

    def assertExit(self, proc, code, *words):
        """An exit code of the contract (never a signal), and an error naming what it should."""
        self.assertEqual(proc.returncode, code, proc.stdout[-2000:] + proc.stderr[-2000:])
        for w in words:
            self.assertIn(w, proc.stderr)

    def earlier_results(self, out):
        """An earlier run's results at `out` (what --out may replace, and a test checks is kept)."""
        self.assertExit(attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", out), 0)
        return out

    def suite_with(self, name, **case_fields):
        s = json.loads(json.dumps(TINY))
        s["name"] = name
        s["cases"][0].update(case_fields)
        path = self.path(name + ".json")
        write_json(path, s)
        return path

    # --- crashes ---------------------------------------------------------------------------

    def test_huge_sizes_in_a_suite_are_bad_input(self):
        for field in ("seq_k", "seq_q", "head_dim", "batch"):
            suite = self.suite_with(f"huge_{field}", **{field: 2 ** 62})
            p = attngate("golden", "generate", "--suite", suite, "--baselines", self.path("huge-bl"), timeout=60)
            self.assertExit(p, 2, suite, "memory_budget_mb")

    def test_a_device_or_fifo_as_input_is_refused_without_reading_it(self):
        fifo = self.path("fifo.json")
        os.mkfifo(fifo)
        for args in (["run", "--suite", "/dev/zero"], ["run", "--suite", fifo], ["env", "--lockfile", "/dev/zero"],
                     ["report", fifo, "--gbench", self.path("g.json")]):
            p = attngate(*args, "--baselines", self.bl, timeout=30) if args[0] == "run" else attngate(*args, timeout=30)
            self.assertExit(p, 2, "expected a regular file")

    def test_paths_that_cannot_be_stat_ed_are_errors_not_aborts(self):
        loop = self.path("loop")
        os.symlink(self.path("loop2"), loop)
        os.symlink(loop, self.path("loop2"))
        long_name = self.path("a" * 300)
        for suite, out in ((loop, self.path("r.json")), (long_name + ".json", self.path("r.json")),
                           (self.suite, os.path.join(loop, "r.json")), (self.suite, os.path.join(long_name, "r.json"))):
            p = attngate("run", "--suite", suite, "--baselines", self.bl, "--checks", "golden", "--out", out, timeout=120)
            self.assertIn(p.returncode, (2, 3), p.stderr)
            self.assertIn("error:", p.stderr)

    def test_a_vcpkg_override_with_a_number_for_a_name_is_recorded_not_fatal(self):
        d = self.path("vcpkg")
        os.makedirs(d)
        lock = os.path.join(d, "vcpkg.json")
        write_json(lock, {"name": 5, "dependencies": [{"name": 7}], "overrides": [{"name": 5, "version": "1"}, {"name": "z", "version": 2}]})
        p = attngate("env", "--lockfile", lock, "--json")
        self.assertExit(p, 0)
        self.assertEqual(json.loads(p.stdout)["lockfiles"]["vcpkg.json"]["format"], "vcpkg")

    def perf_results(self):
        out = self.path("perf-results.json")
        if not os.path.exists(out):
            p = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden,perf", "--machine", "m1",
                         "--out", out)
            self.assertExit(p, 0)
        return out

    def test_string_samples_in_results_are_bad_input_with_the_json_path(self):
        good = self.perf_results()
        r = read_json(good)
        next(c for c in r["results"][0]["checks"] if c["check"] == "perf")["metrics"]["samples_s"] = ["1", "2"]
        bad = self.path("string-samples.json")
        write_json(bad, r)
        self.assertExit(attngate("compare", good, bad), 2, bad, ".metrics.samples_s[0]")
        self.assertExit(attngate("report", bad, "--gbench", self.path("g.json")), 2, bad, ".metrics.samples_s[0]")
        self.assertFalse(os.path.exists(self.path("g.json")))

    def test_string_numbers_in_results_never_reach_the_html_report(self):
        r = read_json(self.perf_results())
        next(c for c in r["results"][0]["checks"] if c["check"] == "perf")["metrics"]["p_value"] = "<script>alert(1)</script>"
        bad = self.path("xss.json")
        write_json(bad, r)
        html = self.path("xss.html")
        self.assertExit(attngate("report", bad, "--html", html), 2, bad, ".metrics.p_value")
        self.assertFalse(os.path.exists(html))

    def test_a_perf_baseline_with_string_samples_is_bad_input(self):
        bl = self.path("perf-bl")
        shutil.copytree(self.bl, bl)
        p = attngate("baseline", "update", "--results", self.perf_results(), "--baselines", bl, "--yes", "--machine", "m1", "--allow-in-ci")
        self.assertExit(p, 0)
        perf_dir = os.path.join(bl, "perf")
        [sub] = os.listdir(perf_dir)
        path = os.path.join(perf_dir, sub, "tiny.json")
        good = read_json(path)
        # Every array of seconds the perf rule and the machine-speed guard read (a fuzzer found
        # the calibration arrays unchecked: a string there aborted the run).
        for key in ("samples_s", "calibration_s", "parallel_calibration_s"):
            self.assertIn(key, good["entries"][0]["values"])
            b = copy.deepcopy(good)
            b["entries"][0]["values"][key] = [1e-3, "fast"]
            write_json(path, b)
            p = attngate("run", "--suite", self.suite, "--baselines", bl, "--checks", "golden,perf", "--machine", "m1",
                         "--out", self.path("pb.json"))
            self.assertExit(p, 2, path, f"$.entries[0].values.{key}[1]")
        write_json(path, good)

    def test_numeric_options_must_be_finite_and_in_range(self):
        run = ["run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", self.path("n.json")]
        results = self.perf_results()
        compare = ["compare", results, results]
        for args in ([*run, "--timeout", "nan"], [*run, "--timeout", "inf"], [*run, "--timeout", "-1"],
                     [*compare, "--threshold-pct", "nan"], [*compare, "--threshold-pct", "-5"],
                     [*compare, "--alpha", "0"], [*compare, "--alpha", "2"], [*compare, "--alpha", "nan"],
                     ["time", "--suite", self.suite, "--out", self.path("t.json"), "--min-time", "nan"]):
            with self.subTest(args[-2:]):
                p = attngate(*args, timeout=60)
                self.assertExit(p, 2)
                self.assertIn(args[-2], p.stderr + p.stdout)

    def test_a_golden_that_is_all_nan_is_a_bad_case_not_a_pass(self):
        suite = self.suite_with("nan_golden", scale=1e300)
        p = attngate("golden", "generate", "--suite", suite, "--baselines", self.path("nan-bl"))
        self.assertExit(p, 2, suite, "case c1", "all NaN")

    def test_a_suite_timeout_of_infinity_is_bad_input(self):
        s = dict(TINY, name="inf_timeout")
        path = self.path("inf_timeout.json")
        with open(path, "w") as f:
            f.write(json.dumps(s).replace('"timeout_s": 20', '"timeout_s": 1e999'))
        self.assertExit(attngate("golden", "generate", "--suite", path, "--baselines", self.path("inf-bl")), 2, path, "byte",
                        "a number too large for a double")

    def test_hostile_plugin_tables_are_bad_input_naming_the_plugin(self):
        for name in ("null_table", "huge_count", "crashing_entry", "exiting_constructor", "control_name"):
            with self.subTest(name):
                p = attngate("kernels", "--plugin", self.plugins[name], timeout=60)
                self.assertExit(p, 2, self.plugins[name])
                self.assertNotIn("\x1b", p.stdout + p.stderr)

    def test_a_kernel_error_without_a_terminating_zero_is_a_kernel_error(self):
        p = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--plugin",
                     self.plugins["unterminated_error"], "--kernel", "unterminated", "--out", self.path("u.json"), timeout=120)
        self.assertExit(p, 1)
        [entry] = read_json(self.path("u.json"))["results"]
        self.assertEqual(entry["verdict"], "error", entry)

    def test_non_utf8_kernel_text_still_makes_a_readable_results_file(self):
        out = self.path("utf8.json")
        argv = ["run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--plugin", self.plugins["non_utf8"],
                "--kernel", "bad_error", "--kernel", "bad_crash", "--out", out]
        with results_schema.watch(argv):  # bytes, not text: what the kernel said need not be UTF-8
            p = subprocess.run([ARGS.attngate, *argv], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(out, encoding="utf-8") as f:  # strict: invalid bytes raise
            results = json.load(f)
        self.assertEqual(sorted(e["verdict"] for e in results["results"]), ["error", "error"])
        self.assertIn("\ufffd", json.dumps(results, ensure_ascii=False))
        self.assertExit(attngate("report", out, "--markdown", self.path("utf8.md")), 0)

    def test_a_non_utf8_lockfile_line_still_makes_a_readable_results_file(self):
        lock = self.path("requirements.txt")
        with open(lock, "wb") as f:
            f.write(b"caf\xe9-lib==1.0\nnumpy==1.26.4\n")
        out = self.path("lock-results.json")
        argv = ["run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--lockfile", lock, "--out", out]
        with results_schema.watch(argv):
            p = subprocess.run([ARGS.attngate, *argv], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            packages = json.load(f)["fingerprint"]["lockfiles"]["requirements.txt"]["packages"]
        self.assertEqual(packages["numpy"], "1.26.4")
        self.assertIn("caf\ufffd-lib", packages)
        self.assertExit(attngate("report", out, "--markdown", self.path("lock.md")), 0)

    # --- hangs -----------------------------------------------------------------------------

    def test_a_kernel_that_forks_is_not_a_hang_and_leaves_nothing_running(self):
        pid_file = self.path("forked.pids")
        env = dict(os.environ, HARDENING_PID_FILE=pid_file)
        start = time.monotonic()
        p = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--plugin", self.plugins["forking"],
                     "--kernel", "forking", "--out", self.path("f.json"), env=env, timeout=120)
        self.assertExit(p, 1)
        self.assertLess(time.monotonic() - start, 15, "the run waited for the kernel's own child")
        [entry] = read_json(self.path("f.json"))["results"]
        self.assertNotIn("timeout", json.dumps(entry))
        with open(pid_file) as f:
            pids = [int(x) for x in f.read().split()]
        self.assertTrue(pids)
        self.addCleanup(kill_all, pids)
        time.sleep(0.5)
        self.assertEqual([x for x in pids if alive(x)], [])

    def test_sigterm_kills_the_isolated_child_and_keeps_the_results_file_whole(self):
        suite = self.suite_with("hang", seq_q=33)
        bl = self.path("hang-bl")
        self.assertExit(attngate("golden", "generate", "--suite", suite, "--baselines", bl), 0)
        out = self.path("hang-results.json")
        self.earlier_results(out)  # a file that must survive whole
        with open(out) as f:
            before = f.read()
        for sig in (signal.SIGTERM, signal.SIGINT):
            proc = subprocess.Popen([ARGS.attngate, "run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--plugin",
                                     ARGS.faulty_plugin, "--kernel", "hangy", "--out", out],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            kids = []
            while time.monotonic() < deadline and not kids:
                time.sleep(0.2)
                kids = children_of(proc.pid)
            self.assertTrue(kids, "the isolated child never started")
            self.addCleanup(kill_all, kids)
            time.sleep(0.5)
            proc.send_signal(sig)
            proc.wait(timeout=10)
            time.sleep(0.5)
            self.assertEqual([k for k in kids if alive(k)], [], f"children outlived the harness after {sig!r}")
            with open(out) as f:
                self.assertEqual(f.read(), before)

    def test_an_ab_side_and_what_it_started_die_with_the_harness(self):
        # A side is any command line; this one starts a background process and then hangs,
        # like a build that spawned a server. The side used to outlive a killed `ab`.
        # Its outputs come from attngate; then, as the resident timing server (time --serve),
        # it hangs: the harness holds it as a coprocess by then, not as a spawned run.
        pids = self.path("ab-side-pids")
        script = self.path("hanging-side.sh")
        with open(script, "w") as f:
            f.write(f'case " $* " in *" --outputs "*) exec {ARGS.attngate} "$@";; esac\n'
                    f"sleep 300 &\necho $$ $! >> {pids}\nexec sleep 300\n")
        # Its temporary directories (the sides' outputs, the sides' empty attngate.toml) go
        # into $TMPDIR, and a signal the harness can act on removes them: they used to pile up
        # in /tmp after every interrupted `ab`.
        tmp = self.path("ab-tmpdir")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            if os.path.exists(pids):
                os.unlink(pids)
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            proc = subprocess.Popen([ARGS.attngate, "ab", "--suite", self.suite, "--baselines", self.bl, "--a", f"/bin/sh {script}",
                                     "--b", f"/bin/sh {script}", "--rounds", "2", "--out", self.path("ab.json")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                    env=dict(os.environ, TMPDIR=tmp))
            self.addCleanup(proc.kill)  # a test that fails early leaves nothing running
            written = pids_once_written(pids, 30)
            self.assertIsNotNone(written, "the side never started")
            side, background = written
            self.addCleanup(kill_all, [side, background])
            self.assertEqual(len(os.listdir(tmp)), 3, "the config's and each side's temporary directory, in $TMPDIR")
            self.assertTrue(alive(side) and alive(background))
            proc.send_signal(sig)
            proc.wait(timeout=10)
            # Killed processes end when the scheduler next runs them: on a loaded machine the
            # side and its background job die some milliseconds apart, in either order.
            started = [side, background] if sig != signal.SIGKILL else [side]
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(alive(p) for p in started):
                time.sleep(0.1)
            self.assertFalse(alive(side), f"the side outlived the harness after {sig!r}")
            if sig != signal.SIGKILL:  # the harness had a chance to act: the side's whole group and its files are gone
                self.assertFalse(alive(background), f"what the side started outlived the harness after {sig!r}")
                self.assertEqual(os.listdir(tmp), [], f"temporary directories outlived the harness after {sig!r}")
                self.assertEqual(proc.returncode, -sig, "the harness ends of the signal it was sent")

    def test_ab_sides_with_spaces_in_their_paths_run_without_a_shell(self):
        # A build directory, and a quoted command line, whose paths hold a space: used to be
        # split through sh.
        build = self.path("my build")
        os.makedirs(build, exist_ok=True)
        shutil.copy(ARGS.attngate, os.path.join(build, "attngate"))
        quoted = "'" + os.path.join(build, "attngate") + "'"
        p = attngate("ab", "--suite", self.suite, "--baselines", self.bl, "--a", build, "--b", quoted, "--rounds", "2",
                     "--out", self.path("ab-spaces.json"))
        self.assertExit(p, 0)
        self.assertEqual(read_json(self.path("ab-spaces.json"))["complete"], True)

    def test_an_ab_side_that_cannot_be_run_is_bad_input_naming_its_flag(self):
        # A build directory without attngate in it, a path that is not there, a command not on
        # PATH: exit 2 naming the flag, before anything runs, not exit 3 from the side's exec.
        empty = self.path("empty-build")
        os.makedirs(empty, exist_ok=True)
        for flag, side, said in (("--b", empty, f"--b {empty}: a directory without an attngate binary in it"),
                                 ("--a", self.path("no-such-dir/attngate"), f"--a {self.path('no-such-dir/attngate')}: {self.path('no-such-dir/attngate')} does not exist"),
                                 ("--b", "attngate-nowhere --version", '--b attngate-nowhere --version: "attngate-nowhere" is neither a file nor a command on PATH')):
            other = "--a" if flag == "--b" else "--b"
            p = attngate("ab", "--suite", self.suite, "--baselines", self.bl, flag, side, other, ARGS.attngate, "--rounds", "2",
                         "--out", self.path("ab-unrunnable.json"))
            self.assertExit(p, 2)
            self.assertIn(said, p.stderr)
            self.assertFalse(os.path.exists(self.path("ab-unrunnable.json")))
        # A file here named without a slash would be looked up on PATH: say how to name it.
        shutil.copy(ARGS.attngate, self.path("attngate-copy"))
        p = attngate("ab", "--suite", self.suite, "--baselines", self.bl, "--a", "attngate-copy", "--b", ARGS.attngate,
                     "--out", self.path("ab-unrunnable.json"), cwd=self.dir)
        self.assertExit(p, 2)
        self.assertIn('--a attngate-copy: "attngate-copy" is not a command on PATH; for the file here, give ./attngate-copy', p.stderr)

    def test_an_ab_side_that_writes_unexpected_timing_json_is_infrastructure(self):
        # The side computes its outputs like attngate, then writes string samples: as a build
        # older than `time --serve` (refused the way CLI11 refuses it, then spawned per
        # round), and as a timing server.
        legacy = self.path("lying-side.sh")
        with open(legacy, "w") as f:
            f.write(f'case " $* " in *" --outputs "*) exec {ARGS.attngate} "$@";; esac\n'
                    'case " $* " in *" --serve "*) echo "The following argument was not expected: --serve" >&2; exit 2;; esac\n'
                    'while [ $# -gt 0 ]; do\n'
                    '  if [ "$1" = --out ]; then echo \'[{"case": "c1", "kernel": "reference", "samples_s": ["1"]}]\' > "$2"; fi\n'
                    '  shift\ndone\n')
        server = self.path("lying-server.sh")
        with open(server, "w") as f:
            f.write(f'case " $* " in *" --outputs "*) exec {ARGS.attngate} "$@";; esac\n'
                    'echo \'{"rows": [["c1", "reference"]]}\'\n'
                    'while read line; do echo \'{"samples_s": [["1"]]}\'; done\n')
        for script, said in ((legacy, ["wrote unexpected timing JSON", "$[0].samples_s"]), (server, ["time --serve", "$.samples_s"])):
            p = attngate("ab", "--suite", self.suite, "--baselines", self.bl, "--a", f"/bin/sh {script}", "--b", ARGS.attngate,
                         "--rounds", "2", "--out", self.path("ab-lying.json"))
            self.assertExit(p, 3, *said)

    def test_an_ab_side_older_than_time_serve_is_timed_round_by_round(self):
        # A base build from before `time --serve` (the A side of a dependency-bump PR): it
        # refuses --serve, and is spawned once per round instead.
        older = self.path("older-build.sh")
        calls = self.path("older-calls")
        with open(older, "w") as f:
            f.write(f'echo "$*" >> {calls}\n'
                    'case " $* " in *" --serve "*) echo "The following argument was not expected: --serve" >&2; exit 2;; esac\n'
                    f'exec {ARGS.attngate} "$@"\n')
        p = attngate("ab", "--suite", self.suite, "--baselines", self.bl, "--a", f"/bin/sh {older}", "--b", ARGS.attngate,
                     "--rounds", "3", "--out", self.path("ab-older.json"))
        self.assertExit(p, 0)
        with open(calls) as f:
            lines = f.read().splitlines()
        self.assertEqual(sum("--serve" in x for x in lines), 1, lines)
        self.assertEqual(sum("--repetitions 3" in x for x in lines), 3, "one spawned `time` per round")
        perf = [c for r in read_json(self.path("ab-older.json"))["results"] for c in r["checks"] if c["check"] == "perf"]
        self.assertTrue(perf)
        self.assertTrue(all(len(c["metrics"]["samples_s"]) == 3 for c in perf), "a pair per round")

    def test_the_timing_server_answers_every_line_and_refuses_bad_requests_as_data(self):
        # time --serve's protocol (harness/run/time_server.hpp): its rows first, then one
        # answer per request line; a bad request is an {"error"} answer, not the end of it.
        requests = ['{"rows": [0], "repetitions": 2, "min_time_s": 0.001}', '{"rows": [7]}', "not json",
                    '{"rows": [0], "repetitions": 0}', '{"rows": [0], "min_time_s": 1e9}', '{"rows": [0]}']
        p = subprocess.run([ARGS.attngate, "time", "--suite", self.suite, "--serve"], input="\n".join(requests) + "\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [json.loads(x) for x in p.stdout.splitlines()]
        self.assertEqual(lines[0], {"rows": [["c1", "reference"]]})
        self.assertEqual(len(lines), 1 + len(requests))
        first, *bad, last = lines[1:]
        self.assertEqual(len(first["samples_s"]), 1)
        self.assertEqual(len(first["samples_s"][0]), 2)
        self.assertTrue(all(x > 0 for x in first["samples_s"][0]))
        for answer, said in zip(bad, ["row indices below 1", "invalid JSON", "repetitions", "min_time_s"]):
            self.assertIn(said, answer["error"])
        self.assertEqual(len(last["samples_s"][0]), 1)
        p = attngate("time", "--suite", self.suite, "--serve", "--out", self.path("t.json"))
        self.assertExit(p, 2, "--serve")

    def test_an_ab_timing_server_that_dies_is_infrastructure_naming_it(self):
        dying = self.path("dying-server.sh")
        with open(dying, "w") as f:
            f.write(f'case " $* " in *" --outputs "*) exec {ARGS.attngate} "$@";; esac\n'
                    'echo \'{"rows": [["c1", "reference"]]}\'\nread line\necho "segfault, say" >&2\nexit 139\n')
        p = attngate("ab", "--suite", self.suite, "--baselines", self.bl, "--a", ARGS.attngate, "--b", f"/bin/sh {dying}",
                     "--rounds", "2", "--out", self.path("ab-dying.json"))
        self.assertExit(p, 3, "ended without answering", "segfault, say", dying)

    # --- files -----------------------------------------------------------------------------

    def test_out_never_replaces_a_symlink_or_device(self):
        target = self.path("target.txt")
        with open(target, "w") as f:
            f.write("mine")
        link = self.path("link.json")
        os.symlink(target, link)
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        specials = [link, fifo]
        # The device is a private copy of /dev/null's node: a regression must not replace the real one.
        device = self.path("null-device")
        if os.geteuid() == 0:
            os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            specials.append(device)
        for out in specials:
            p = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", out, timeout=120)
            self.assertExit(p, 2, out, "not a regular file")
        self.assertTrue(os.path.islink(link))
        with open(target) as f:
            self.assertEqual(f.read(), "mine")
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        if device in specials:
            self.assertTrue(stat.S_ISCHR(os.lstat(device).st_mode))

    def test_a_device_class_typo_is_found_before_anything_runs_or_is_written(self):
        bl = self.path("priced-bl")
        shutil.copytree(self.bl, bl)
        shutil.copy(os.path.join(ARGS.source_dir, "baselines", "pricing.json"), bl)
        out = self.path("priced-results.json")
        kept = read_json(self.earlier_results(out))
        suite = self.suite_with("priced", seq_q=33)  # hangy would hang here: the run must stop before it
        self.assertExit(attngate("golden", "generate", "--suite", suite, "--baselines", bl), 0)
        p = attngate("run", "--suite", suite, "--baselines", bl, "--checks", "golden,perf,cost", "--device-class", "gcp-e2-standrad-2",
                     "--plugin", ARGS.faulty_plugin, "--kernel", "hangy", "--out", out, timeout=60)
        self.assertExit(p, 2, "--device-class gcp-e2-standrad-2")
        self.assertEqual(read_json(out), kept)

    def test_two_lockfiles_with_one_base_name_are_refused_not_dropped(self):
        for sub in ("a", "b"):
            os.makedirs(self.path(sub), exist_ok=True)
            with open(os.path.join(self.path(sub), "requirements.txt"), "w") as f:
                f.write(f"pkg{sub}==1.0\n")
        p = attngate("env", "--json", "--lockfile", os.path.join(self.path("a"), "requirements.txt"),
                     "--lockfile", os.path.join(self.path("b"), "requirements.txt"))
        self.assertExit(p, 2, "requirements.txt")

    def test_two_concurrent_baseline_updates_never_lose_one(self):
        # Two people accept different rows into the same directory store at the same moment:
        # each update either lands or is refused with a conflict (exit 3); none is lost.
        # Before the fix, one update was silently lost in 9 of 10 trials.
        suite = json.loads(json.dumps(TINY))
        # 8 calls: the first case of a process grows its RSS by about half a page per call
        # (measured on main and here alike: +4096 B every other call), and a 3-call series
        # cannot tell that from a page-per-call leak; this test is about the update race.
        suite.update(name="race", memory_calls=8)
        suite["cases"].append({"id": "c2", "seq_q": 8, "heads_q": 1, "head_dim": 8})
        bl0 = self.path("race-bl")
        suite_path = suite_with_goldens(self.path("race.json"), suite, bl0)
        results = self.path("race-results.json")
        self.assertExit(attngate("run", "--suite", suite_path, "--baselines", bl0, "--checks", "golden,memory", "--out", results), 0)
        outcomes = []
        for trial in range(10):
            bl = self.path(f"race-bl-{trial}")
            shutil.copytree(bl0, bl)
            procs = {case: subprocess.Popen([ARGS.attngate, "baseline", "update", "--results", results, "--baselines", bl,
                                             "--checks", "memory", "--only", f"{case}/*", "--yes", "--allow-in-ci"],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
                     for case in ("c1", "c2")}
            ended = {}
            for case, p in procs.items():
                _, err = p.communicate(timeout=60)
                ended[case] = (p.returncode, err)
            results_schema.validate_file(os.path.join(bl, "memory", "race.json"))  # what the two writers left
            stored = {e["case"] for e in read_json(os.path.join(bl, "memory", "race.json"))["entries"]}
            for case, (code, err) in ended.items():
                self.assertIn(code, (0, 3), err)
                if code == 0:
                    self.assertIn(case, stored, f"trial {trial}: the update of {case} exited 0 but is not stored")
                else:  # the loser is told what the winner changed and how to retry
                    self.assertIn("what the other update changed", err)
                    self.assertIn("re-run `attngate baseline update`", err)
            codes = sorted(code for code, _ in ended.values())
            self.assertIn(0, codes, f"trial {trial}: neither update landed")  # the first writer's precondition holds
            outcomes.append(codes)
        self.assertEqual(len(outcomes), 10)
        print(f"concurrent updates, exit codes per trial: {outcomes}", file=sys.stderr)

    def test_out_never_replaces_a_file_that_is_not_results(self):
        """--out pointed at the suite, a baseline or a file of the user's: exit 2 naming it, before
        anything runs, and the file byte for byte; results and an empty file are replaced."""
        notes = self.path("notes.txt")
        with open(notes, "w") as f:
            f.write("my notes\n")
        baseline = next(os.path.join(d, n) for d, _, names in os.walk(self.bl) for n in names if n.endswith(".json"))
        results = self.earlier_results(self.path("prior-results.json"))
        for victim in (self.suite, baseline, notes):
            with open(victim, "rb") as f:
                before = f.read()
            commands = [["run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden"],
                        ["ab", "--suite", self.suite, "--baselines", self.bl, "--a", ARGS.attngate, "--b", ARGS.attngate, "--rounds", "2"],
                        ["merge", results]]
            for command in commands:
                p = attngate(*command, "--out", victim, timeout=120)
                self.assertExit(p, 2, f"--out {victim}: holds something other than attngate results")
                self.assertNotIn("GATE", p.stdout, "something ran before the refusal")
                with open(victim, "rb") as f:
                    self.assertEqual(f.read(), before, f"{command[0]} --out replaced {victim}")
        p = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", self.dir)
        self.assertExit(p, 2, f"--out {self.dir}: is a directory")
        empty = self.path("empty.json")
        open(empty, "w").close()
        for out in (results, empty):
            p = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", out)
            self.assertExit(p, 0)
            results_schema.validate_file(out)

    def test_a_report_flag_never_replaces_a_file_that_is_not_that_report(self):
        """--html, --markdown, --junit or --gbench pointed at the suite, results or a file of the
        user's: exit 2 naming the flag, before anything runs, and every file byte for byte; the
        same flags over last run's reports replace them."""
        notes = self.path("team_kernels.cpp")
        with open(notes, "w") as f:
            f.write("// the team's kernel\n")
        results = self.earlier_results(self.path("prior-results.json"))
        base = ["--suite", self.suite, "--baselines", self.bl, "--checks", "golden"]
        commands = {"run": ["run", *base, "--out", self.path("r.json")], "report": ["report", results],
                    "merge": ["merge", results, "--out", self.path("merged.json")],
                    "ab": ["ab", *base[:4], "--a", ARGS.attngate, "--b", ARGS.attngate, "--rounds", "2", "--out", self.path("ab.json")]}
        for flag in ("html", "markdown", "junit", "gbench"):
            for victim in (self.suite, results, notes):
                with open(victim, "rb") as f:
                    before = f.read()
                for name, command in commands.items():
                    p = attngate(*command, f"--{flag}", victim, timeout=120)
                    self.assertExit(p, 2, f"--{flag} {victim}: holds something other than an attngate {flag} report")
                    self.assertNotIn("GATE", p.stdout, f"{name}: something ran before the refusal")
                    with open(victim, "rb") as f:
                        self.assertEqual(f.read(), before, f"{name} --{flag} replaced {victim}")
                    self.assertFalse(os.path.exists(self.path("merged.json")), "merge wrote its results before the refusal")
        reports = [f"--{flag}={self.path('report.' + flag)}" for flag in ("html", "markdown", "junit", "gbench")]
        for _ in range(2):  # the second run replaces the first's reports
            p = attngate(*commands["run"], *reports)
            self.assertExit(p, 0)
        with open(self.path("report.markdown")) as f:
            self.assertTrue(f.read().startswith("## attngate: "))

    def test_time_and_conform_outputs_never_replace_a_file_they_did_not_write(self):
        """time --out and conform --json at the suite or a user's file: exit 2 naming the flag, the
        file byte for byte; a second run replaces the first's output."""
        notes = self.path("kernel_notes.md")
        with open(notes, "w") as f:
            f.write("# what our kernel does\n")
        smoke = os.path.join(ARGS.source_dir, "suites", "smoke.json")
        outputs = {"time": (["time", "--suite", smoke, "--kernel", "flash", "--case", "mha_f32", "--out"], "samples `attngate time` wrote"),
                   "conform": (["conform", "--kernel", "flash", "--json"], "verdicts `attngate conform` wrote")}
        for name, (command, what) in outputs.items():
            for victim in (self.suite, notes):
                with open(victim, "rb") as f:
                    before = f.read()
                p = attngate(*command, victim, timeout=120)
                self.assertExit(p, 2, f"{command[-1]} {victim}: holds something other than {what}")
                with open(victim, "rb") as f:
                    self.assertEqual(f.read(), before, f"{name} {command[-1]} replaced {victim}")
            own = self.path(f"{name}-own.json")
            for _ in range(2):  # the second replaces the first's
                self.assertExit(attngate(*command, own, timeout=300), 0)
            with open(own) as f:
                self.assertTrue(json.load(f), f"{name} wrote nothing")
        # time --outputs DIR: a directory of the user's arrays is refused, its own is replaced.
        arrays = self.path("our-arrays")
        os.makedirs(arrays)
        with open(os.path.join(arrays, "0.npy"), "wb") as f:
            f.write(b"ours")
        p = attngate(*outputs["time"][0], self.path("t.json"), "--outputs", arrays, timeout=120)
        self.assertExit(p, 2, f"--outputs {arrays}: holds 0.npy, which is not an `attngate time --outputs` output (no index.json of ours)")
        with open(os.path.join(arrays, "0.npy"), "rb") as f:
            self.assertEqual(f.read(), b"ours")
        for _ in range(2):
            self.assertExit(attngate(*outputs["time"][0], self.path("t.json"), "--outputs", self.path("own-arrays"), timeout=300), 0)
        # An empty index.json vouches for nothing: the user's 0.npy beside it is still refused.
        open(os.path.join(arrays, "index.json"), "w").close()
        p = attngate(*outputs["time"][0], self.path("t.json"), "--outputs", arrays, timeout=120)
        self.assertExit(p, 2, f"--outputs {arrays}: holds 0.npy")
        with open(os.path.join(arrays, "0.npy"), "rb") as f:
            self.assertEqual(f.read(), b"ours")
        # A link to its own earlier outputs directory is that directory.
        link = self.path("own-arrays-link")
        os.symlink(self.path("own-arrays"), link)
        self.assertExit(attngate(*outputs["time"][0], self.path("t.json"), "--outputs", link, timeout=300), 0)

    def start_slow_run(self, name, out):
        """A run of suite `name` whose second case hangs for 6 s, once it has written its first case to `out`."""
        slow = dict(TINY, name=name, cases=[dict(TINY["cases"][0]), dict(TINY["cases"][0], id="hangs", seq_q=33)])
        bl = self.path(name + "-bl")
        suite = suite_with_goldens(self.path(name + ".json"), slow, bl)
        first = subprocess.Popen([ARGS.attngate, "run", "--suite", suite, "--baselines", bl, "--checks", "golden", "--plugin",
                                  ARGS.faulty_plugin, "--kernel", "hangy", "--timeout", "6", "--out", out],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.addCleanup(lambda: first.poll() is None and first.kill())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not os.path.exists(out):
            time.sleep(0.1)
        self.assertTrue(os.path.exists(out), "the first run never wrote its first case")
        return first

    def test_two_runs_with_one_out_do_not_silently_replace_each_other(self):
        out = self.path("shared-results.json")
        first = self.start_slow_run("slowout", out)
        with open(out, "rb") as f:
            before = f.read()
        # The second run finds the first still writing: it stops before anything runs, and the
        # first's results are left to it.
        second = attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", out)
        self.assertExit(second, 3, f"--out {out}: another attngate run is writing it now")
        self.assertNotIn("GATE", second.stdout, "the second run ran")
        _, err = first.communicate(timeout=60)
        self.assertNotIn("replaced by another writer", err)
        self.assertNotEqual(first.returncode, 3, err)
        results_schema.validate_file(out)
        done = read_json(out)
        self.assertEqual((done["suite"], done["complete"]), ("slowout", True), "the first run's results were replaced")
        self.assertNotEqual(done, json.loads(before), "the first run wrote no more after the second was refused")
        # A writer that is gone holds no lock: the next run replaces its finished results.
        self.assertExit(attngate("run", "--suite", self.suite, "--baselines", self.bl, "--checks", "golden", "--out", out), 0)
        self.assertEqual(read_json(out)["suite"], "tiny")

    def test_a_run_that_finds_its_out_replaced_meanwhile_stops(self):
        """Two runs that start together, before either has written: the one whose file the other
        replaced stops with exit 3 rather than overwrite it (the lock cannot order them)."""
        out = self.path("raced-results.json")
        first = self.start_slow_run("slowout2", out)
        # Stands for a run that began before the first's first write: the file it saw was none.
        os.replace(out, out + ".first")
        write_json(out, read_json(out + ".first") | {"suite": "another"})
        _, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 3, err)
        self.assertIn("replaced by another writer", err)
        self.assertEqual(read_json(out)["suite"], "another", "the other writer's file was overwritten")

    def test_a_suite_named_dot_dot_cannot_write_outside_its_directory(self):
        s = dict(TINY, name="..")
        path = self.path("dotdot.json")
        write_json(path, s)
        bl = self.path("dotdot-bl")
        p = attngate("golden", "generate", "--suite", path, "--baselines", bl)
        self.assertExit(p, 2)
        self.assertFalse(os.path.exists(os.path.join(bl, "manifest.json")))


if __name__ == "__main__":
    main()
