#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file of the repository carries the licence's SPDX line.

Usage: check_spdx.py SRC_DIR. Lists the tracked files (git ls-files; every
file under SRC_DIR when git is not there) whose kind takes a comment (C,
headers, protobuf, shell, Python, CMake, SQL, JavaScript, TypeScript, INI)
and fails naming each one without "SPDX-License-Identifier: Apache-2.0" in
its first lines. Data (the fuzz corpus, JSON, Markdown) carries none.
"""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: Apache-2.0"
EXTS = {".c", ".h", ".proto", ".sh", ".py", ".cmake", ".sql", ".js", ".ts", ".ini", ".toml"}
NAMES = {"CMakeLists.txt", "Makefile", "rules"}


def tracked(src):
    try:
        out = subprocess.run(["git", "-C", src, "ls-files"], check=True, capture_output=True,
                             text=True).stdout
        return [p for p in out.splitlines() if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for root, dirs, files in os.walk(src):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(root, f), src) for f in files]
        return found


def wants_tag(path):
    if "/corpus/" in path or path.startswith("debian/") and os.path.basename(path) != "rules":
        return False
    base = os.path.basename(path)
    return base in NAMES or os.path.splitext(base)[1] in EXTS


def main():
    src = sys.argv[1]
    missing = []
    files = [p for p in tracked(src) if wants_tag(p)]
    for p in files:
        full = os.path.join(src, p)
        if not os.path.isfile(full):
            continue
        with open(full, encoding="utf-8", errors="replace") as f:
            head = "".join(f.readline() for _ in range(5))
        if TAG not in head:
            missing.append(p)
    for p in missing:
        print(f"{p}: no '{TAG}' in its first 5 lines")
    print(f"{len(files) - len(missing)} of {len(files)} source files carry the SPDX line")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
