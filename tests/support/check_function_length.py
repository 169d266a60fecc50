#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_function_length.py - functions in the product code stay short.

    check_function_length.py [SRC_DIR] [--max N]     (ctest function_length)

Fails when a C function in the product code (common/, proto/, segment/,
coordinator/, client/: every *.c and *.h there) has a body longer than N
lines (default 80), counted from the line of its opening brace to the line
of its closing brace. Tests, tools, examples and generated code (protoc-c's
*.pb-c.*, which is never in the source tree) are not product code.

A function is a top-level brace block whose opening follows a parameter
list `)`: struct, union and enum bodies, array and struct initialisers are
skipped. Comments, string and character literals are blanked before braces
are counted, so a brace in them does not count.
"""
import pathlib
import re
import sys

PRODUCT = ("common", "proto", "segment", "coordinator", "client")
MAX_LINES = 80
NAME = re.compile(r"([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\(.*\)\)\s*)?$", re.S)


def blank(text):
    """text with comments, strings and char literals replaced by spaces
    (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1 : j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, number of lines) of every function defined."""
    code = blank(text)
    depth = 0
    start = None
    head_from = 0
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[head_from:i].rstrip()
                head = re.sub(r"^\s*#.*$", "", head, flags=re.M).rstrip()
                m = NAME.search(head)
                is_fn = m is not None and not head.endswith("=") and m.group(1) not in (
                    "if", "for", "while", "switch", "sizeof")
                start = (m.group(1), i) if is_fn else None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start is not None:
                    name, at = start
                    first = code.count("\n", 0, at) + 1
                    last = code.count("\n", 0, i) + 1
                    yield name, first, last - first + 1
                start = None
                head_from = i + 1
        elif c == ";" and depth == 0:
            head_from = i + 1
    return


def main(argv):
    root = pathlib.Path(__file__).resolve().parents[2]
    limit = MAX_LINES
    args = list(argv[1:])
    if "--max" in args:
        k = args.index("--max")
        limit = int(args[k + 1])
        del args[k : k + 2]
    if args:
        root = pathlib.Path(args[0])
    bad = []
    checked = 0
    for top in PRODUCT:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".c", ".h") or ".pb-c." in path.name:
                continue
            for name, line, length in functions(path.read_text(encoding="utf-8")):
                checked += 1
                if length > limit:
                    bad.append(f"{path.relative_to(root)}:{line}: {name} is {length} lines "
                               f"(at most {limit})")
    for b in bad:
        print(b)
    if checked == 0:
        print("no function found: wrong SRC_DIR?")
        return 1
    if bad:
        print(f"{len(bad)} function(s) over {limit} lines: split them by job")
        return 1
    print(f"{checked} functions, none over {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
