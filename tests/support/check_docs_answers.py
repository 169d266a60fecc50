#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_docs_answers.py - every answer told in every language.

    check_docs_answers.py [SRC_DIR]        (ctest docs_answers)

docs/libescrow.md's Answers tables (between <!-- answers-table --> and
<!-- /answers-also --> markers) say, per call, which answers libescrow gives
and what the caller should do. The pages of the bindings and of the gateway
(PAGES below) each carry their own table of answers, in their language's
terms, after the marker line MARKER. This check fails (exit 1) when:

* libescrow.md's tables name a code that common/escrow_errors.h lacks;
* a page lacks the marker, its table or a link to libescrow.md#answers;
* a page's table leaves out a code of common/escrow_errors.h (a code added
  to the library must be told to every language) or names one it lacks;
* docs/python.md names another exception for a code than the package's
  client/python/escrow/errors.py raises (FAMILIES);
* docs/gateway.md gives a code another HTTP status, `code`, retryable flag
  or Retry-After than client/gateway/gw_answer.c.
"""
import importlib.util
import pathlib
import re
import sys

MARKER = "<!-- answers-codes: checked by tests/support/check_docs_answers.py -->"
PAGES = ("python.md", "node.md", "gateway.md")
CODE = re.compile(r"`([A-Z][A-Z_]+)`")


def library_codes(root):
    """{name: number} of common/escrow_errors.h's X(NAME, -N, ...) rows."""
    text = (root / "common" / "escrow_errors.h").read_text(encoding="utf-8")
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"X\((\w+), (-\d+),", text)}


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def table_after(lines, start):
    """The body rows (split into cells) of the first table after line start."""
    i = start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    rows = []
    for line in lines[i + 2:]:  # past the header and the |---| line
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return rows


def libescrow_answers(root):
    """The codes named in libescrow.md's answers tables (column 2)."""
    lines = (root / "docs" / "libescrow.md").read_text(encoding="utf-8").splitlines()
    named = set()
    for marker in ("<!-- answers-table", "<!-- answers-also"):
        at = [i for i, line in enumerate(lines) if line.startswith(marker)]
        if not at:
            return None
        for row in table_after(lines, at[0]):
            named.update(CODE.findall(row[1]))
    return named


def python_families(root):
    path = root / "client" / "python" / "escrow" / "errors.py"
    spec = importlib.util.spec_from_file_location("escrow_errors_doc_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: cls.__name__ for name, cls in module.FAMILIES.items()}


def gateway_rows(root):
    """{name: (http, code, retryable, retry_after)} of gw_answer.c's rows."""
    text = (root / "client" / "gateway" / "gw_answer.c").read_text(encoding="utf-8")
    rx = r'\{ESC_E(\w+), (\d+), "(\w+)", (true|false), (\d+)'
    return {m[0]: (int(m[1]), m[2], m[3] == "true", int(m[4]) > 0) for m in re.findall(rx, text)}


def check_python(row, codes, families):
    exc = re.search(r"`(\w+)`", row[1])
    for name in codes:
        if exc is None or families.get(name) != exc.group(1):
            yield "%s: the page says %s, errors.py raises %s" % (
                name, exc.group(1) if exc else row[1], families.get(name))


def check_gateway(row, codes, gateway):
    http = re.match(r"(\d+)", row[1])
    said = re.findall(r"`(\w+)`", row[2])
    for n, name in enumerate(codes):
        want = gateway.get(name)
        code = said[n] if len(said) == len(codes) else (said[0] if len(said) == 1 else None)
        got = (int(http.group(1)) if http else None, code, row[3] == "yes",
               "Retry-After" in row[1])
        if want != got:
            yield "%s: the page says %s, gw_answer.c %s (http, code, retryable, Retry-After)" % (
                name, got, want)


def check_page(root, page, library, extra):
    text = (root / "docs" / page).read_text(encoding="utf-8")
    if "libescrow.md#answers" not in text:
        yield "no link to libescrow.md#answers"
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if line.strip() == MARKER]
    if len(at) != 1:
        yield "%d marker line(s) %s, want 1" % (len(at), MARKER)
        return
    rows = table_after(lines, at[0])
    seen = set()
    for row in rows:
        codes = CODE.findall(row[0])
        seen.update(codes)
        for name in codes:
            if name not in library:
                yield "%s is not a code of common/escrow_errors.h" % name
        if extra is not None:
            yield from extra(row, [c for c in codes if c in library])
    for name in sorted(set(library) - seen, key=library.get):
        yield "%s (%d) of common/escrow_errors.h is not in the page's table" % (name, library[name])


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    library = library_codes(root)
    problems = []
    told = libescrow_answers(root)
    if not library or told is None:
        problems.append("docs/libescrow.md or escrow_errors.h: no answers found")
    else:
        problems += ["docs/libescrow.md: %s is not a code of common/escrow_errors.h" % name
                     for name in sorted(told - set(library) - {"OK"})]
    families = python_families(root)
    gateway = gateway_rows(root)
    extra = {
        "python.md": lambda row, codes: check_python(row, codes, families),
        "gateway.md": lambda row, codes: check_gateway(row, codes, gateway),
    }
    for page in PAGES:
        problems += ["docs/%s: %s" % (page, p)
                     for p in check_page(root, page, library, extra.get(page))]
    for p in problems:
        print(p)
    print("docs_answers: %d code(s), %d page(s), %d problem(s)"
          % (len(library), len(PAGES), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
