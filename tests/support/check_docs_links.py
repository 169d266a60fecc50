#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_docs_links.py - the README and docs/ stand on their own.

    check_docs_links.py [SRC_DIR]        (ctest docs_links)

For README.md and every docs/*.md it fails when
  * a Markdown link points to a file or folder that does not exist in the
    repository (relative to the page), or to a heading that the target page
    does not have (#anchor, GitHub's rule);
  * a repository path written in the text (`tests/integration/race.sh`,
    `segment/core/`: anything that starts with one of the tree's top-level
    folders) does not exist;
  * the text points outside the repository: a `shared/` folder, a design
    document that is not in the tree, an issue number, a section sign.
"""
import pathlib
import re
import sys

FORBIDDEN = [
    (re.compile(r"\bshared/"), "points at a shared/ folder outside the repository"),
    (re.compile(r"DESIGN\.md"), "points at a design document outside the repository"),
    (re.compile(r"\b[Ii]ssues?\s*#?\d"), "names an issue number"),
    (re.compile(r"§"), "uses a section sign (a reference to a document outside the tree)"),
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
IGNORED_TOP = re.compile(r"^(build.*|_demo|tmp|\..*)$")
PLACEHOLDER = re.compile(r"[*<>{}$]|NNNN|\.\.\.")


def pages(root):
    found = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    return [p for p in found if p.is_file()]


def slug(heading, seen):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else f"{s}-{n}"


def split_fenced(text):
    """(line number, line, inside a fenced block) for every line."""
    inside = False
    for no, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
            yield no, line, True
            continue
        yield no, line, inside


def anchors(path, cache):
    if path not in cache:
        seen = {}
        cache[path] = {slug(line.lstrip("#"), seen)
                       for _, line, code in split_fenced(path.read_text())
                       if not code and re.match(r"#{1,6}\s", line)}
    return cache[path]


def top_folders(root):
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and (p.name == ".ci" or not IGNORED_TOP.match(p.name)))


def exists(root, rel):
    return (root / rel.rstrip("/")).exists()


def check_link(root, page, no, target, cache, errors):
    if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
        return
    path, _, anchor = target.partition("#")
    where = f"{page.relative_to(root)}:{no}"
    dest = page if not path else (page.parent / path)
    try:
        rel = dest.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        errors.append(f"{where}: link '{target}' leaves the repository")
        return
    if path and not exists(root, rel):
        errors.append(f"{where}: link '{target}': no such file in the repository")
        return
    if anchor and dest.suffix == ".md" and dest.is_file() and anchor not in anchors(dest, cache):
        errors.append(f"{where}: link '{target}': {dest.name} has no heading '#{anchor}'")


def check_page(root, page, bare, cache, errors):
    text = page.read_text()
    for no, line, code in split_fenced(text):
        where = f"{page.relative_to(root)}:{no}"
        for rx, why in FORBIDDEN:
            if rx.search(line):
                errors.append(f"{where}: {why}: {line.strip()}")
        if not code:
            for m in LINK.finditer(line):
                check_link(root, page, no, m[1], cache, errors)
        for m in bare.finditer(line):
            path = m[0].rstrip(".,;:'\")`")
            if PLACEHOLDER.search(path):
                continue
            if not exists(root, path):
                errors.append(f"{where}: '{path}': no such file in the repository")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    tops = "|".join(re.escape(t) for t in top_folders(root))
    bare = re.compile(r"(?<![\w./\-~])(?:%s)/[\w./\-]*" % tops)
    cache, errors = {}, []
    checked = pages(root)
    for page in checked:
        check_page(root, page, bare, cache, errors)
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"{len(checked)} pages passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
