"""Numerics baselines per dispatch path: the main job's suite, forced onto each path whose
baseline is checked in (baselines/numerics/<path> <compiler>/smoke.json), gates the bits of
every row that has a baseline and says how many it gated; a kernel whose output moved by
one ulp in one element is caught and named."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ARGS, attngate, main, read_json, write_json  # noqa: E402

CONTRACT_PLUGIN = None


def checked_in_paths():
    """(numerics class, baseline file) of every checked-in smoke numerics baseline."""
    out = []
    for d in sorted(os.listdir(os.path.join(ARGS.source_dir, "baselines", "numerics"))):
        path = os.path.join(ARGS.source_dir, "baselines", "numerics", d, "smoke.json")
        if os.path.exists(path):
            out.append((read_json(path)["machine_class"], path))
    return out


def forced(numerics_class):
    """The environment that forces the kernels onto the class's path."""
    path = numerics_class.split()[0]
    env = dict(os.environ, ATTNGATE_KERNEL_ISA=path.split("+")[0])
    env["ATTNGATE_BF16_PRODUCTS"] = "vdpbf16ps" if path.endswith("+vdpbf16ps") else "widened"
    return env


def numerics_of(row):
    return next(c for c in row["checks"] if c["check"] == "numerics")


class NumericsPathsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attngate-numerics-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def test_the_main_job_gates_numerics_on_every_row_of_each_path_this_cpu_runs(self):
        paths = checked_in_paths()
        self.assertGreaterEqual(len(paths), 2, "portable and avx2 at least are checked in")
        for cls, baseline_path in paths:
            with self.subTest(path=cls):
                out = os.path.join(self.dir, cls.replace(" ", "_"), "results.json")
                probe = attngate("run", "--suite", "suites/smoke.json", "--checks", "golden", "--case", "mha_f32", "--out", out,
                                 cwd=ARGS.source_dir, env=forced(cls))
                self.assertEqual(probe.returncode, 0, probe.stdout[-3000:] + probe.stderr)
                ran = read_json(out)["numerics_class"]
                if ran != cls:  # a path above this CPU's, or another compiler's build
                    self.skipTest(f"this machine and build run {ran!r}, not {cls!r}")
                r = attngate("run", "--suite", "suites/smoke.json", "--checks", "golden", "--out", out, cwd=ARGS.source_dir,
                             env=forced(cls))
                self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
                results = read_json(out)
                self.assertEqual(results["numerics_class"], cls)
                kept = {(e["case"], e["kernel"]) for e in read_json(baseline_path)["entries"]}
                rows = results["results"]
                gated = 0
                for row in rows:
                    n = numerics_of(row)
                    if (row["case"], row["kernel"]) in kept:
                        gated += 1
                        self.assertEqual((n["verdict"], n["metrics"]["status"], n["metrics"]["against"]),
                                         ("pass", "identical", "the numerics baseline"), (row["case"], row["kernel"], n["reason"]))
                    else:  # a row the kernel skips (unsupported) has no baseline and says why
                        self.assertEqual(n["verdict"], "skip", (row["case"], row["kernel"]))
                self.assertGreater(gated, 0.9 * len(rows))
                said = f"numerics: {gated} of {len(rows)} rows gated"
                self.assertIn(said, r.stdout)

    def test_a_path_that_is_no_path_is_a_usage_error_not_the_default_path(self):
        r = attngate("run", "--suite", "suites/smoke.json", "--checks", "golden", "--case", "mha_f32", "--out",
                     os.path.join(self.dir, "r.json"), cwd=ARGS.source_dir, env=dict(os.environ, ATTNGATE_KERNEL_ISA="avx-512"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("ATTNGATE_KERNEL_ISA=avx-512: expected portable, avx2, avx512 or avx512bf16", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "r.json")))

    def test_a_one_ulp_change_in_one_kernels_output_is_caught_and_named(self):
        # On the portable path, which every CPU runs: "one-ulp" is flash with its last output
        # element one ulp off. Its accepted baseline is flash's own (the bits it had before).
        cls, baseline_path = next((c, p) for c, p in checked_in_paths() if c.startswith("portable "))
        store = os.path.join(self.dir, "store")
        shutil.copytree(os.path.join(ARGS.source_dir, "baselines"), store)
        stored = os.path.join(store, os.path.relpath(baseline_path, os.path.join(ARGS.source_dir, "baselines")))
        doc = read_json(stored)
        cases = ["mha_f32", "gqa_causal_bf16", "decode_gqa_bf16"]
        doc["entries"] += [dict(e, kernel="one-ulp") for e in doc["entries"] if e["kernel"] == "flash" and e["case"] in cases]
        write_json(stored, doc)
        out, md = os.path.join(self.dir, "r.json"), os.path.join(self.dir, "r.md")
        args = ["run", "--suite", "suites/smoke.json", "--store", store, "--checks", "golden", "--plugin", CONTRACT_PLUGIN,
                "--kernel", "flash", "--kernel", "one-ulp", "--out", out, "--markdown", md]
        for c in cases:
            args += ["--case", c]
        r = attngate(*args, cwd=ARGS.source_dir, env=forced(cls))
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        results = read_json(out)
        if results["numerics_class"] != cls:
            self.skipTest(f"this build runs {results['numerics_class']!r}, not {cls!r}")
        rows = {(row["case"], row["kernel"]): numerics_of(row) for row in results["results"]}  # flash's block variants too
        self.assertTrue({(c, k) for c in cases for k in ("flash", "one-ulp")} <= set(rows), sorted(rows))
        for c in cases:
            self.assertEqual(rows[(c, "flash")]["metrics"]["status"], "identical", c)
            moved = rows[(c, "one-ulp")]
            self.assertEqual((moved["metrics"]["status"], moved["metrics"]["changed"], moved["metrics"]["max_ulp"]), ("changed", 1, 1), c)
            self.assertIn("bits changed against the numerics baseline", moved["reason"])
        self.assertIn(f"numerics: {len(rows)} of {len(rows)} rows gated", r.stdout)
        # Named where people read: the console's closing lines and the Markdown's first screen.
        said = f"numerics: bits changed on {len(cases)} row(s) without failing: {cases[0]} / one-ulp (1 of "
        self.assertIn(said, r.stdout)
        with open(md, encoding="utf-8") as f:
            self.assertIn(said.replace("_", "\\_"), f.read())


if __name__ == "__main__":
    i = sys.argv.index("--contract-plugin")
    CONTRACT_PLUGIN = os.path.abspath(sys.argv[i + 1])
    del sys.argv[i:i + 2]
    main()
