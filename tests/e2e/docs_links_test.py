"""The documentation holds together: every relative link and image in the repository's
Markdown files points at a file that exists inside the repository, and every #anchor at a
heading of that file (GitHub's anchor rule); every `dir/name.md` named in backticks exists
and no path in backticks leaves the repository (it must stand alone);
the README stays a front door (at most 250 lines) and states the test command `.ci/run`
runs, word for word."""
import argparse
import os
import re
import sys
import unittest

SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__"}
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")
DOC_PATH = re.compile(r"`((?:\.\./)*[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*\.md)(?:#[^`]*)?`")
OUTSIDE_PATH = re.compile(r"`((?:\.\./)+[^`\s]*)`")


def markdown_files(root):
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(base, name)


def prose_lines(text):
    """(line number, line) outside fenced and indented code blocks."""
    fenced = False
    previous_blank = True
    in_indented = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        indented = line.startswith("    ") or line.startswith("\t")
        # An indented block starts after a blank line; list continuations are not code.
        if indented and (previous_blank or in_indented) and not line.lstrip().startswith(("-", "*", "|")):
            in_indented = True
        elif line.strip():
            in_indented = False
        previous_blank = not line.strip()
        if not in_indented:
            yield number, line


def github_anchor(heading):
    """GitHub's rule: lower case, drop what is not a letter, digit, space, '-' or '_',
    spaces to '-'. Markdown emphasis and code marks go first; link text stays."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def anchors_of(path, cache={}):
    if path not in cache:
        seen = {}
        anchors = set()
        with open(path, encoding="utf-8") as f:
            for _, line in prose_lines(f.read()):
                m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                base = github_anchor(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                anchors.add(base if n == 0 else f"{base}-{n}")
        cache[path] = anchors
    return cache[path]


def links_of(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for number, line in prose_lines(text):
        for m in LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, m.group(1)


class DocsLinks(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        root = os.path.realpath(ARGS.source_dir)
        problems = []
        checked = 0
        for md in markdown_files(root):
            rel_md = os.path.relpath(md, root)
            for number, target in links_of(md):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                checked += 1
                where = f"{rel_md}:{number}: ({target})"
                path_part, _, anchor = target.partition("#")
                dest = os.path.realpath(os.path.join(os.path.dirname(md), path_part)) if path_part else md
                if os.path.commonpath([root, dest]) != root:
                    problems.append(f"{where} points outside the repository")
                    continue
                if not os.path.exists(dest):
                    problems.append(f"{where} names a file that does not exist")
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                    problems.append(f"{where} names no heading of {os.path.relpath(dest, root)}")
        self.assertGreater(checked, 50, "expected the README and docs/ to link to each other")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_paths_named_in_backticks_exist_inside_the_repository(self):
        root = os.path.realpath(ARGS.source_dir)
        problems = []
        for md in markdown_files(root):
            with open(md, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    for m in DOC_PATH.finditer(line):
                        name = m.group(1)
                        here = os.path.join(os.path.dirname(md), name)
                        if not (os.path.exists(here) or os.path.exists(os.path.join(root, name.lstrip("./")))):
                            problems.append(f"{os.path.relpath(md, root)}:{number}: `{name}` does not exist")
                    for m in OUTSIDE_PATH.finditer(line):
                        dest = os.path.realpath(os.path.join(os.path.dirname(md), m.group(1)))
                        if os.path.commonpath([root, dest]) != root:
                            problems.append(f"{os.path.relpath(md, root)}:{number}: `{m.group(1)}` lies outside the repository")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_readme_is_a_front_door_with_the_ci_command(self):
        root = ARGS.source_dir
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertLessEqual(readme.count("\n"), 250, "README.md: at most 250 lines; the manual lives in docs/")
        with open(os.path.join(root, ".ci", "run"), encoding="utf-8") as f:
            commands = [line.strip() for line in f if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))]
        self.assertTrue(commands, ".ci/run: no command found")
        for command in commands:
            self.assertIn(f"\n    {command}\n", readme, f"README.md: the test command {command!r} of .ci/run, on its own indented line")
        self.assertIn("\n    bash ci/smoke.sh\n", readme, "README.md: the main job's command on its own indented line")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--source-dir", required=True)
    args, rest = p.parse_known_args()
    return args, rest


if __name__ == "__main__":
    ARGS, REST = parse_args()
    unittest.main(argv=[sys.argv[0]] + REST)
