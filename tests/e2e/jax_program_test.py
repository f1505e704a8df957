"""The program check (issue 36): each adapter kernel lowered for a TPU (v6e) on this CPU,
its Mosaic bodies and StableHLO hashed in results.json and kept by content beside it; the
lowering deterministic (a second run reports no change); a baseline accepted with
`baseline update --checks program` stores the texts; and jax 0.7.2 -> 0.10.2 through `ab`
names the kernels whose TPU programs changed, with diffs in the HTML report.

Skips (exit 77) when ci/install-deps.sh has not made the venvs."""
import glob
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, TempDirTest, attngate, jax_venv_python, main, read_json  # noqa: E402

PALLAS = {"pallas-flash", "pallas-splash", "pallas-paged"}
XLA = {"jax-xla", "xla-paged"}


def adapter(line):
    return f"{jax_venv_python(line)} {os.path.join(ARGS.source_dir, 'kernels', 'jax', 'adapter.py')} --interpret tpu"


def program_checks(results):
    return {(e["case"], e["kernel"]): c for e in results["results"] for c in e["checks"] if c["check"] == "program"}


class JaxProgramTest(TempDirTest):
    def run_smoke(self, out, *extra):
        t0 = time.monotonic()
        r = attngate("run", "--suite", "jax-smoke", "--adapter", adapter("new"), "--checks", "golden", "--progress-every", "0",
                     "--out", out, *extra, cwd=ARGS.source_dir, timeout=900)
        print(f"jax-smoke with the program check: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        self.assertIn(r.returncode, (0, 1), r.stdout[-3000:] + r.stderr[-3000:])
        return r, read_json(out)

    def test_smoke_kernels_get_program_hashes_and_a_second_run_sees_no_change(self):
        out = self.path("run", "results.json")
        _, first = self.run_smoke(out)
        checks = program_checks(first)
        lowered = {k for (_, k), c in checks.items() if c["verdict"] == "pass"}
        self.assertTrue(PALLAS | XLA | {"pallas-ragged-paged"} <= lowered, f"kernels with a program: {sorted(lowered)}")
        # pallas-ragged-paged cannot run here (the interpreter fails) and is lowered all the same.
        for kernel in ("pallas-paged", "pallas-ragged-paged"):  # head_dim 128: both paged Pallas kernels lower
            self.assertEqual(checks[("paged_decode_d128_bf16", kernel)]["verdict"], "pass")
        # At head_dim 64 and 32 (jax-smoke's other paged cases) neither paged Pallas kernel lowers
        # for v6e: each is a skip naming the lowering's own failure.
        not_lowering = {"pallas-paged": r"does not lower for TPU v6e: .*block shape",
                        "pallas-ragged-paged": r"does not lower for TPU v6e: AssertionError: kernel\.py:\d+: assert "}
        self.assertIn(("paged_decode_ragged_kv_bf16", "pallas-ragged-paged"), checks)
        for (case, kernel), c in checks.items():
            if c["verdict"] != "pass":
                self.assertIn(kernel, not_lowering, (case, c))
                self.assertEqual(c["verdict"], "skip", (case, c))
                self.assertRegex(c["reason"], not_lowering[kernel])
                continue
            m = c["metrics"]
            self.assertEqual(m["target"], "v6e")
            self.assertEqual(m["part_names"][-1], "stablehlo")
            if kernel in PALLAS:  # a Mosaic body per tpu_custom_call, before the StableHLO around it
                self.assertTrue(m["part_names"][0].startswith("mosaic "), m["part_names"])
            if kernel in XLA:
                self.assertEqual(m["part_names"], ["stablehlo"])
            for sha in m["part_sha256"]:  # each text beside the results, once by content
                with open(self.path("run", "programs", sha + ".mlir")) as f:
                    text = f.read()
                self.assertNotIn("loc(", text)  # locations stripped: a moved source line is no change
        files = glob.glob(self.path("run", "programs", "*.mlir"))
        hashes = {s for c in checks.values() for s in c["metrics"].get("part_sha256", [])}
        self.assertEqual(len(files), len(hashes))
        # The same venv again, at the same --out: every program identical to the last run's.
        r, second = self.run_smoke(out)
        again = program_checks(second)
        self.assertEqual(set(again), set(checks))
        for key, c in again.items():
            if c["verdict"] == "pass":
                self.assertEqual(c["metrics"]["status"], "identical", (key, c["reason"]))
                self.assertEqual(c["metrics"]["against"], "the last run")
        self.assertNotIn("program: the TPU program changed", r.stdout)
        # Accepted as the program baseline: hashes in the baseline file, texts in the store by hash.
        store = self.path("store")
        shutil.copytree(os.path.join(ARGS.source_dir, "baselines"), store)
        r = attngate("baseline", "update", "--results", out, "--checks", "program", "--yes", "--allow-in-ci", "--store", store,
                     "--reason", "test", cwd=ARGS.source_dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        kept = read_json(os.path.join(store, "program", "jax-smoke.json"))
        self.assertTrue(kept["entries"])
        for sha in hashes:
            self.assertTrue(os.path.exists(os.path.join(store, "programs", sha + ".mlir")), sha)
        # A run against that baseline, in a fresh directory: identical to the baseline.
        _, third = self.run_smoke(self.path("run3", "results.json"), "--store", store)
        for key, c in program_checks(third).items():
            if c["verdict"] == "pass":
                self.assertEqual((c["metrics"]["status"], c["metrics"]["against"]), ("identical", "the program baseline"), key)

    def test_interpreter_checks_fail_the_racy_and_out_of_bounds_kernels_while_the_stock_kernels_pass(self):
        out = self.path("contract", "results.json")
        # jax-smoke names the adapter's own kernels: the test kernels come from a second adapter and join every case.
        command = adapter("new") + " --interpret-checks"
        env = dict(os.environ, PYTHONPATH=os.path.join(ARGS.source_dir, "tests", "e2e", "jax_kernels"))
        t0 = time.monotonic()
        r = attngate("run", "--suite", "jax-smoke", "--adapter", command, "--adapter",
                     command + " --no-builtins --kernels contract_breakers:make", "--checks", "golden", "--progress-every", "0",
                     "--case", "mha_s128_f32", "--case", "causal_s512_f32", "--case", "paged_decode_ragged_kv_bf16",
                     "--kernel", "pallas-flash", "--kernel", "pallas-splash", "--kernel", "pallas-paged",
                     "--kernel", "racy-pallas", "--kernel", "oob-pallas", "--out", out, cwd=ARGS.source_dir, env=env, timeout=900)
        print(f"interpreter checks on 3 cases: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr[-3000:])
        contract = {(e["case"], e["kernel"]): c for e in read_json(out)["results"] for c in e["checks"] if c["check"] == "contract"}
        racy = contract[("mha_s128_f32", "racy-pallas")]
        self.assertEqual(racy["verdict"], "fail")
        self.assertRegex(racy["reason"], r"TPU interpreter: data race on 2 simulated cores .*write of .* from 0, [01]")
        oob = contract[("mha_s128_f32", "oob-pallas")]
        self.assertEqual(oob["verdict"], "fail")
        self.assertRegex(oob["reason"], r"Out-of-bounds read of .*reading \[\(slice\(124, 132, 1\).*but buffer has shape \(128, 32\)")
        for key in (("mha_s128_f32", "pallas-flash"), ("causal_s512_f32", "pallas-flash"), ("paged_decode_ragged_kv_bf16", "pallas-paged")):
            self.assertEqual(contract[key]["verdict"], "pass", (key, contract[key]["reason"]))
            self.assertIn("no race on 2 simulated cores", contract[key]["reason"])
        # Found here (jax 0.10.2): with 2 heads splash races on its m, l and o accumulator outputs
        # (0-2), which its wrapper discards; jax-smoke lists exactly those three as reviewed
        # known_races, so splash passes and says so, while the racy test kernel, whose output is
        # returned, fails in the same run (docs/tpu-program.md).
        splash = contract[("mha_s128_f32", "pallas-splash")]
        self.assertEqual(splash["verdict"], "pass", splash)
        self.assertIn("3 known races the suite lists as reviewed", splash["reason"])
        self.assertEqual(sorted(k.split(":")[0] for k in splash["metrics"]["known_races"]),
                         [f"write/write on output {i} of pallas_call splash_mha_fwd_no_residuals, which the caller discards"
                          for i in range(3)])
        self.assertIn("race `write/write on output 0 of pallas_call body`", racy["reason"])  # returned: not "discards"
        self.assertEqual(contract[("causal_s512_f32", "pallas-splash")]["verdict"], "pass")
        self.assertNotIn("known_races", contract[("causal_s512_f32", "pallas-splash")]["metrics"])  # 1 head: no race at all

        # The same run with output 2's entry gone from the suite: that race fails the row, by name.
        suite = read_json(os.path.join(ARGS.source_dir, "suites", "jax-smoke.json"))
        suite["known_races"] = [k for k in suite["known_races"] if "output 2 " not in k["race"]]
        edited = self.path("contract2", "jax-smoke.json")
        os.makedirs(os.path.dirname(edited), exist_ok=True)
        with open(edited, "w") as f:
            json.dump(suite, f)
        out2 = self.path("contract2", "results.json")
        r = attngate("run", "--suite", edited, "--adapter", command, "--checks", "golden", "--progress-every", "0",
                     "--case", "mha_s128_f32", "--kernel", "pallas-splash", "--out", out2, cwd=ARGS.source_dir, timeout=900)
        self.assertEqual(r.returncode, 1, r.stdout[-3000:] + r.stderr[-3000:])
        row = [c for e in read_json(out2)["results"] for c in e["checks"] if c["check"] == "contract"][0]
        self.assertEqual(row["verdict"], "fail", row)
        self.assertEqual(len(row["metrics"]["violations"]), 1, row)
        self.assertIn("race `write/write on output 2 of pallas_call splash_mha_fwd_no_residuals, which the caller discards`",
                      row["reason"])
        self.assertEqual(len(row["metrics"]["known_races"]), 2, row)

    def test_ab_across_the_two_releases_names_the_kernels_whose_programs_changed(self):
        out = self.path("ab", "results.json")
        html = self.path("ab", "report.html")
        t0 = time.monotonic()
        # Five cases keep it short (the whole suite took 13 min here: 59 of 71 programs changed).
        cases = [a for c in ("mha_s128_f32", "causal_s512_f32", "segments_causal_s256_f32", "window_bidir_s256_f32",
                             "paged_decode_ragged_kv_bf16") for a in ("--case", c)]
        r = attngate("ab", "--suite", "jax-smoke", "--a-adapter", adapter("old"), "--b-adapter", adapter("new"), "--rounds", "2",
                     "--min-time", "0.001", *cases, "--out", out, "--html", html, cwd=ARGS.source_dir, timeout=1200)
        artifacts = os.path.join(ARGS.source_dir, "build", "artifacts")
        if os.path.isdir(artifacts):  # for a person to open: the diffs of a real bump
            shutil.copy(html, os.path.join(artifacts, "ab-programs.html"))
        print(f"ab jax-old -> jax-new: {time.monotonic() - t0:.1f} s", file=sys.stderr)
        self.assertIn(r.returncode, (0, 1), r.stdout[-3000:] + r.stderr[-3000:])
        checks = program_checks(read_json(out))
        changed = {k for (_, k), c in checks.items() if c["metrics"].get("status") == "changed"}
        print(f"programs changed: {sum(c['metrics'].get('status') == 'changed' for c in checks.values())} rows, "
              f"kernels {sorted(changed)}", file=sys.stderr)
        self.assertTrue({"pallas-flash", "pallas-splash"} <= changed, sorted(changed))
        for c in checks.values():
            if c["metrics"].get("status") == "changed":
                self.assertEqual(c["verdict"], "pass")  # a change is reported, not a failure, unless program_stable
                self.assertEqual(c["metrics"]["against"], "side A")
                self.assertRegex(c["metrics"]["diff"], r"(?m)^@@ -\d+,\d+ \+\d+,\d+ @@$")
                self.assertGreater(c["metrics"]["lines_added"] + c["metrics"]["lines_removed"], 0)
        self.assertIn("program: the TPU program changed on", r.stdout)
        with open(html) as f:
            page = f.read()
        self.assertIn('id="programs"', page)
        for kernel in ("pallas-flash", "pallas-splash"):
            self.assertRegex(page, r'<details class="program-diff changed"><summary><b>' + re.escape(kernel))
        self.assertIn('<span class="add">', page)
        self.assertIn('<span class="del">', page)


if __name__ == "__main__":
    ARGS.source_dir = sys.argv[sys.argv.index("--source-dir") + 1]
    if not (os.path.exists(jax_venv_python("new")) and os.path.exists(jax_venv_python("old"))):
        print("SKIPPED: .venv/jax-new or .venv/jax-old is missing; bash ci/install-deps.sh creates them")
        sys.exit(77)
    main()
