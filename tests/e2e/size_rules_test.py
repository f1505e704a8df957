"""The size rules (issue 25): no file under harness/ or cli/ over 400 lines, no function over
80 lines. The scanner (ci/size_rules.py) is tested on small sources of known shape first, so
that a tree that passes does so because the scanner sees its functions."""
import argparse
import os
import sys
import unittest

ARGS = argparse.Namespace(source_dir=None)


def scanner():
    sys.path.insert(0, os.path.join(ARGS.source_dir, "ci"))
    import size_rules  # noqa: E402
    return size_rules


def body(lines):
    return "".join(f"    x += {i};\n" for i in range(lines))


class ScannerTest(unittest.TestCase):
    def lengths(self, source):
        return [length for _, _, length in scanner().functions(source)]

    def test_a_function_is_measured_from_its_name_to_its_closing_brace(self):
        source = "int f(int x)\n{\n" + body(5) + "    return x;\n}\n"
        self.assertEqual(scanner().functions(source), [(1, 9, 9)])

    def test_a_signature_over_lines_counts_from_the_parameter_list(self):
        source = "static std::vector<int>\nmake(int a,\n     int b) {\n" + body(2) + "}\n"
        self.assertEqual(scanner().functions(source), [(2, 6, 5)])

    def test_namespaces_classes_and_extern_c_are_looked_inside(self):
        source = ("namespace a::b {\nnamespace {\nstruct S : Base<int> {\n    int g() const { return 1; }\n"
                  "  public:\n    explicit S(int v) : v_(v), w_{v} {\n" + body(3) + "    }\n    int v_, w_;\n};\n}\n}\n"
                  'extern "C" {\nint c_api(void) {\n    return 0;\n}\n}\n'
                  "template <typename T>\nclass K {\n    T t() noexcept { return {}; }\n};\n")
        self.assertEqual(self.lengths(source), [1, 5, 3, 1])

    def test_braces_in_comments_strings_and_raw_strings_do_not_count(self):
        source = ('int f() {\n    // }\n    /* { */\n    const char *s = "}{";\n    char c = \'}\';\n'
                  '    const char *r = R"x(}\n}\n)x";\n    int n = 1\'000;\n    return 0;\n}\nint g() { return 1; }\n')
        self.assertEqual(self.lengths(source), [11, 1])

    def test_lambdas_and_blocks_belong_to_their_function(self):
        source = "void f() {\n    auto g = [](int x) {\n        return x;\n    };\n    if (true) {\n        g(1);\n    }\n}\n"
        self.assertEqual(self.lengths(source), [8])

    def test_a_lambda_at_namespace_scope_is_a_function_and_a_table_is_not(self):
        source = ("const auto twice = [](int x) -> int {\n    return 2 * x;\n};\n"
                  "const std::pair<int, int> kTable[] = {\n    {1, 2},\n    {3, 4},\n};\n"
                  "std::vector<int> v{1, 2};\nenum class E : int { A, B };\n")
        self.assertEqual(self.lengths(source), [3])

    def test_a_preprocessor_line_with_braces_is_not_code(self):
        source = "#define OPEN {\n#define LONG(x) \\\n    { x }\nint f() { return 0; }\n"
        self.assertEqual(self.lengths(source), [1])

    def test_an_81_line_function_is_reported_and_an_80_line_one_is_not(self):
        tree = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"size-rules-{os.getpid()}")
        os.makedirs(os.path.join(tree, "cli"), exist_ok=True)
        os.makedirs(os.path.join(tree, "harness", "run"), exist_ok=True)
        try:
            with open(os.path.join(tree, "cli", "ok.cpp"), "w") as f:
                f.write("int f() {\n" + body(78) + "}\n")  # 80 lines
            with open(os.path.join(tree, "harness", "run", "long.cpp"), "w") as f:
                f.write("// long\n\nint g() {\n" + body(79) + "}\n" + "\n" * 330)  # 81 lines; 413 in the file
            self.assertEqual(scanner().violations(tree), [
                "harness/run/long.cpp: 413 lines (limit 400)",
                "harness/run/long.cpp:3: a function of 81 lines (limit 80)",
            ])
        finally:
            import shutil
            shutil.rmtree(tree, ignore_errors=True)


class TreeTest(unittest.TestCase):
    def test_no_file_or_function_under_harness_or_cli_is_too_long(self):
        broken = scanner().violations(ARGS.source_dir)
        self.assertEqual(broken, [], "\n" + "\n".join(broken))

    def test_the_scanner_sees_the_functions_of_the_tree(self):
        # A scanner that found no function would pass every tree: the CLI's files alone hold dozens.
        s = scanner()
        found = 0
        for name in os.listdir(os.path.join(ARGS.source_dir, "cli")):
            if not os.path.isfile(os.path.join(ARGS.source_dir, "cli", name)):
                continue  # cli/bisect/: the bisect driver's Python
            with open(os.path.join(ARGS.source_dir, "cli", name)) as f:
                found += len(s.functions(f.read()))
        self.assertGreater(found, 50)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parsed, rest = parser.parse_known_args()
    ARGS.source_dir = parsed.source_dir
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
