#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_man_help.py - the man pages carry each binary's --help, verbatim.

    check_man_help.py BIN_DIR SRC_DIR           compare (ctest man_help)
    check_man_help.py BIN_DIR SRC_DIR --write   rewrite the blocks from the binaries

docs/man/NAME.SECTION (escrowctl.1, escrow-segment.8, escrow-coordinator.8, escrow-gateway.8,
escrow-load.1, escrow-bench.1)
is written by hand (NAME, DESCRIPTION, FILES, SIGNALS, SEE ALSO ...) except
for its OPTIONS block: the lines between `.\\" BEGIN help` and `.\\" END help`
are `BIN_DIR/NAME --help`, escaped for roff, in a no-fill block. The check
fails when a block differs from the binary's --help, is missing, or when a
page does not render with `man` without warnings (when groff is installed).
"""
import difflib
import pathlib
import shutil
import subprocess
import sys

PAGES = {"escrowctl": "1", "escrow-segment": "8", "escrow-coordinator": "8", "escrow-gateway": "8",
         "escrow-load": "1", "escrow-bench": "1"}
BEGIN = '.\\" BEGIN help (tests/support/check_man_help.py --write)'
END = '.\\" END help'


def roff_block(text):
    out = [".nf"]
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e").replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    out.append(".fi")
    return "\n".join(out) + "\n"


def help_text(bin_dir, name):
    exe = bin_dir / name
    if not exe.is_file():
        return None, f"{exe}: no such binary (build first)"
    run = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        return None, f"{name} --help exited {run.returncode}: {run.stderr.strip()}"
    return run.stdout, None


def split_page(page):
    """(before, block, after) around the generated block, or None."""
    b = page.find(BEGIN + "\n")
    e = page.find(END + "\n")
    if b < 0 or e < b:
        return None
    start = b + len(BEGIN) + 1
    return page[:start], page[start:e], page[e:]


def render_warnings(path):
    if shutil.which("groff") is None:
        return None
    run = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(path)],
                         capture_output=True, text=True, timeout=60)
    return run.stderr.strip() or None


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, src_dir = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    write = len(argv) > 3 and argv[3] == "--write"
    errors = []
    for name, section in PAGES.items():
        path = src_dir / "docs" / "man" / f"{name}.{section}"
        if not path.is_file():
            errors.append(f"{path}: missing")
            continue
        text, err = help_text(bin_dir, name)
        if err:
            errors.append(err)
            continue
        page = path.read_text()
        parts = split_page(page)
        if parts is None:
            errors.append(f"{path}: no '{BEGIN}' ... '{END}' block")
            continue
        want = roff_block(text)
        if write and parts[1] != want:
            path.write_text(parts[0] + want + parts[2])
            print(f"rewrote the --help block of {path}")
        elif parts[1] != want:
            diff = difflib.unified_diff(parts[1].splitlines(), want.splitlines(), str(path),
                                        f"{name} --help", lineterm="")
            errors.append(f"{path}: differs from {name} --help:\n" + "\n".join(diff))
        warn = render_warnings(path)
        if warn:
            errors.append(f"{path}: groff warns:\n{warn}")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(PAGES) - len(errors)} passed, {len(errors)} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
