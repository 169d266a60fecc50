#!/usr/bin/env python3
"""check_docs_answers.py - one Answers table for every language.

    check_docs_answers.py [SRC_DIR]        (ctest docs_answers)

docs/libescrow.md has the table of libescrow's answers and what a shop should
do with each (the header row "| code | meaning | what the shop should do |").
Every other docs/*.md page that has a table with that header (the pages of
the language bindings) must have the same table, row for row, so the answers
are told once and never drift apart. Fails (exit 1) on a page whose table
differs, showing the first differing row.
"""
import pathlib
import sys

HEADER = "| code | meaning | what the shop should do |"


def answers_table(path):
    """The table's lines (header first), or None if the page has none."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.strip() == HEADER:
            table = []
            for row in lines[i:]:
                if not row.startswith("|"):
                    break
                table.append(row.rstrip())
            return table
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    reference = answers_table(root / "docs" / "libescrow.md")
    if reference is None:
        print("docs/libescrow.md: no Answers table (header: %s)" % HEADER)
        return 1
    failed = checked = 0
    for page in sorted((root / "docs").glob("*.md")):
        if page.name == "libescrow.md":
            continue
        table = answers_table(page)
        if table is None:
            continue
        checked += 1
        if table != reference:
            failed += 1
            for n, (a, b) in enumerate(zip(table + [""] * len(reference), reference + [""] * len(table))):
                if a != b:
                    print("docs/%s: Answers table row %d differs from docs/libescrow.md:\n  %s\n  %s"
                          % (page.name, n + 1, a or "(missing)", b or "(missing)"))
                    break
    print("docs_answers: %d page(s) with the Answers table, %d differ from docs/libescrow.md"
          % (checked, failed))
    return 1 if failed or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
