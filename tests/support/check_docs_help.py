#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_docs_help.py - every binary's flags are documented once: its --help.

    check_docs_help.py BIN_DIR SRC_DIR           compare (ctest docs_help)
    check_docs_help.py BIN_DIR SRC_DIR --write   rewrite the blocks from the binaries

docs/flags.md carries each binary's `--help` output, verbatim, between
`<!-- help:NAME -->` and `<!-- /help -->` (inside a ```text fence). The check
runs `BIN_DIR/NAME --help` and fails when a block differs from it, is missing,
appears twice or names an unknown binary. It also fails when README.md or
another docs page retypes a synopsis (a line naming one of the binaries
followed by an optional `[--flag]`): those pages link to docs/flags.md instead.
"""
import difflib
import pathlib
import re
import subprocess
import sys

BINARIES = ("escrow-segment", "escrow-coordinator", "escrow-gateway", "escrowctl", "escrow-load",
            "escrow-bench")
FLAGS_PAGE = "docs/flags.md"
BLOCK = re.compile(r"<!-- help:(?P<name>[\w-]+) -->\n```text\n(?P<text>.*?)```\n<!-- /help -->",
                   re.S)
SYNOPSIS = re.compile(r"^\s*(usage:\s*)?(\S*/)?(%s)\s.*\[--" % "|".join(map(re.escape, BINARIES)))


def help_text(bin_dir, name):
    exe = bin_dir / name
    if not exe.is_file():
        return None, f"{exe}: no such binary (build first)"
    run = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        return None, f"{name} --help exited {run.returncode}: {run.stderr.strip()}"
    return run.stdout.rstrip("\n") + "\n", None


def check_blocks(page, texts, errors):
    seen = {}
    for m in BLOCK.finditer(page):
        name = m["name"]
        if name not in BINARIES:
            errors.append(f"{FLAGS_PAGE}: block for unknown binary '{name}'")
            continue
        if name in seen:
            errors.append(f"{FLAGS_PAGE}: '{name}' documented twice")
        seen[name] = m["text"]
    for name in BINARIES:
        if name not in seen:
            errors.append(f"{FLAGS_PAGE}: no <!-- help:{name} --> block")
        elif texts.get(name) is not None and seen[name] != texts[name]:
            diff = difflib.unified_diff(seen[name].splitlines(), texts[name].splitlines(),
                                        f"{FLAGS_PAGE} ({name})", f"{name} --help", lineterm="")
            errors.append(f"{FLAGS_PAGE}: '{name}' differs from its --help:\n" + "\n".join(diff))


def check_retyped(src_dir, errors):
    pages = [src_dir / "README.md"] + sorted((src_dir / "docs").glob("*.md"))
    for path in pages:
        if path == src_dir / FLAGS_PAGE or not path.is_file():
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if SYNOPSIS.search(line):
                rel = path.relative_to(src_dir)
                errors.append(f"{rel}:{no}: a retyped synopsis; link to {FLAGS_PAGE} instead:"
                              f"\n    {line.strip()}")


def write_blocks(page, texts):
    def fill(m):
        text = texts.get(m["name"])
        if text is None:
            return m[0]
        return f"<!-- help:{m['name']} -->\n```text\n{text}```\n<!-- /help -->"

    return BLOCK.sub(fill, page)


def main():
    args = [a for a in sys.argv[1:] if a != "--write"]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    bin_dir, src_dir = pathlib.Path(args[0]), pathlib.Path(args[1])
    errors, texts = [], {}
    for name in BINARIES:
        texts[name], why = help_text(bin_dir, name)
        if why:
            errors.append(why)
    flags = src_dir / FLAGS_PAGE
    page = flags.read_text()
    if "--write" in sys.argv[1:]:
        flags.write_text(write_blocks(page, texts))
        page = flags.read_text()
    check_blocks(page, texts, errors)
    check_retyped(src_dir, errors)
    for e in errors:
        print("FAIL:", e)
    if errors:
        print(f"regenerate: python3 tests/support/check_docs_help.py {bin_dir} {src_dir} --write")
        return 1
    print(f"{len(BINARIES)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
