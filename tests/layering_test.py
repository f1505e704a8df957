#!/usr/bin/env python3
"""The harness's folders depend only on the folders below them (ARCHITECTURE.md, "Folder
layout"): every `#include "folder/..."` in harness/<folder>/ must name the folder itself or
one listed after it, and kernels/ must include nothing of the harness. CMake links each
folder only to the ones below it, which catches a call upward; this catches a header-only
use, which links fine.

    python3 tests/layering_test.py SOURCE_DIR"""
import os
import re
import sys

# Top to bottom: each folder may include the ones after it.
ORDER = ["run", "checks", "report", "store", "results", "backend", "stats", "plan", "io"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)


def sources(root):
    for base, _, files in os.walk(root):
        for f in files:
            if f.endswith((".cpp", ".hpp", ".h")):
                yield os.path.join(base, f)


def upward_includes(source_dir):
    """Every include that points up or sideways, as 'file: includes folder/ (...)'."""
    found = []
    for folder in ORDER:
        allowed = set(ORDER[ORDER.index(folder):]) | {"attngate"}  # attngate/: the kernel ABI
        for path in sources(os.path.join(source_dir, "harness", folder)):
            with open(path, encoding="utf-8") as f:
                for target in INCLUDE.findall(f.read()):
                    if target not in allowed:
                        found.append(f"{os.path.relpath(path, source_dir)}: includes {target}/ "
                                     f"({folder}/ may include only {', '.join(ORDER[ORDER.index(folder):])})")
    for path in sources(os.path.join(source_dir, "kernels")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for target in INCLUDE.findall(f.read()):
                if target in ORDER:
                    found.append(f"{os.path.relpath(path, source_dir)}: includes {target}/ (kernels/ knows nothing of the harness)")
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source_dir = sys.argv[1]
    folders = sorted(d for d in os.listdir(os.path.join(source_dir, "harness")) if os.path.isdir(os.path.join(source_dir, "harness", d)))
    if folders != sorted(ORDER):
        print(f"harness/ has folders {folders}, the layering knows {sorted(ORDER)}: place the new one in ORDER")
        return 1
    found = upward_includes(source_dir)
    for line in found:
        print(line)
    if found:
        return 1
    print(f"every include of harness/ points down the layering ({' > '.join(ORDER)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
