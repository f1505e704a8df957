#!/usr/bin/env python3
"""The size rules of issue 25: no file under harness/ or cli/ over 400 lines, no function
over 80. `python3 ci/size_rules.py [ROOT]` lists what breaks them and exits 1 if anything does.

A function's length is counted from the line of its parameter list's "(" (the line of its
name, as people read it) to its closing brace, blank and comment lines included. Functions
are found with a small scanner of C++: comments, string and character literals and
preprocessor lines are blanked first (so braces in them do not count), then every brace at
namespace or class scope is classified from the text before it: a namespace, class, struct,
union, enum or extern block is a scope to look inside; a block after a parameter list (with
any qualifiers, trailing return type or constructor initialisers) or a lambda initialiser is
a function, measured whole (lambdas and blocks inside it are part of it); anything else (an
aggregate initialiser) is skipped."""
import os
import re
import sys

FILE_LIMIT = 400
FUNCTION_LIMIT = 80
FOLDERS = ("harness", "cli")
EXTENSIONS = (".cpp", ".hpp", ".h", ".cc")


def _ident(ch):
    return ch.isalnum() or ch == "_"


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces; newlines stay."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(', text[i:i + 24]) if c in "uULR" else None
        if raw and not (i > 0 and _ident(text[i - 1])):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif c == '"' or (c == "'" and not (i > 0 and _ident(text[i - 1]))):  # 1'000 is a digit separator
            end = i + 1
            while end < n and text[end] != c and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i = end
    return "".join(out)


def top_level(head):
    """The head without what is inside (), [] and the brackets themselves."""
    out, depth = [], 0
    for ch in head:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def strip_templates(head):
    """The head without its `template <...>` parameter lists."""
    while True:
        m = re.search(r"\btemplate\s*<", head)
        if not m:
            return head
        depth, k = 0, m.end() - 1
        while k < len(head):
            depth += {"<": 1, ">": -1}.get(head[k], 0)
            if depth == 0:
                break
            k += 1
        head = head[:m.start()] + head[k + 1:]


# After a parameter list: qualifiers, a trailing return type, constructor initialisers.
FUNCTION_END = re.compile(r"\)\s*((const|volatile|noexcept|override|final|mutable|&&?)\s*|noexcept\s*\(.*\)\s*|->.*|:[^:].*)*$", re.S)
LAMBDA_INIT = re.compile(r"=\s*\[[^\]]*\]\s*(\([^)]*\))?[^;=]*$", re.S)


def classify(head):
    """What a brace at namespace or class scope opens, from the text since the last ; { or }."""
    h = strip_templates(head).strip()
    flat = top_level(h).strip()
    flat = re.sub(r"^((public|private|protected)\s*:\s*)+", "", flat)
    if re.match(r"^(inline\s+)?namespace\b", flat) or re.match(r'^extern[\s"]*$', flat):
        return "scope"
    if re.match(r"^((typedef|static|inline|constexpr)\s+)*(class|struct|union|enum)\b", flat) and not FUNCTION_END.search(h):
        return "scope"
    if LAMBDA_INIT.search(h):
        return "function"
    if re.search(r"(?<![=!<>])=(?!=)", flat.replace("operator=", "")):
        return "other"  # an initialiser
    if "(" in h and FUNCTION_END.search(h):
        return "function"
    return "other"


def paren_line(text, head_start, head_end, line_of):
    """The line of the first top-level '(' in the head: the function's name line."""
    depth = 0
    for k in range(head_start, head_end):
        ch = text[k]
        if ch == "(" and depth == 0:
            return line_of(k)
        if ch in "<([":
            depth += ch != "<"
        elif ch in ")]":
            depth -= 1
    return line_of(head_end)


def functions(source):
    """(name line, last line, length) of every function in a C++ source text."""
    text = blank(source)
    starts = [0]
    for k, ch in enumerate(text):
        if ch == "\n":
            starts.append(k + 1)

    def line_of(pos):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    found = []
    i, n = 0, len(text)
    head_start = 0
    in_init_list = False
    while i < n:
        ch = text[i]
        if ch in ";}":
            head_start = i + 1
            i += 1
            continue
        if ch != "{":
            i += 1
            continue
        head = text[head_start:i]
        kind = classify(head)
        # Constructor initialisers: `: a_(x), b_{y} {`: a brace right after a name is b_'s.
        if kind == "function" and re.search(r"\)\s*(noexcept\s*)?:[^:]", head) and re.search(r"[\w>]\s*$", head):
            end = match_brace(text, i)
            i = end + 1
            continue
        if kind == "scope":
            head_start = i + 1
            i += 1
            continue
        end = match_brace(text, i)
        if kind == "function":
            first = paren_line(text, head_start, i, line_of)
            last = line_of(end)
            found.append((first, last, last - first + 1))
        i = end + 1
        head_start = i
    return found


def match_brace(text, i):
    depth = 0
    for k in range(i, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def violations(root):
    """Lines 'path: N lines' and 'path:L: function of N lines' for every rule broken."""
    out = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    source = f.read()
                lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
                if lines > FILE_LIMIT:
                    out.append(f"{rel}: {lines} lines (limit {FILE_LIMIT})")
                for first, _, length in functions(source):
                    if length > FUNCTION_LIMIT:
                        out.append(f"{rel}:{first}: a function of {length} lines (limit {FUNCTION_LIMIT})")
    return sorted(out)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    broken = violations(root)
    for line in broken:
        print(line)
    print(f"{len(broken)} size rule(s) broken under {', '.join(f + '/' for f in FOLDERS)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
