#!/usr/bin/env python3
"""check_readme.py - the README's C example must be examples/checkout/checkout.c,
byte for byte (that file is compiled with the project, so the README's code
compiles), and the README must start with the two commands."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
readme = (root / "README.md").read_text()
# The example's home; client/examples/checkout.c is where it lived before the
# tree was reorganised (drop that fallback once the move is merged).
candidates = ["examples/checkout/checkout.c", "client/examples/checkout.c"]
path = next((p for p in candidates if (root / p).is_file()), candidates[0])
example = (root / path).read_text().rstrip("\n")
errors = []
if "```c\n" + example + "\n```" not in readme:
    errors.append(f"README.md's C example differs from {path}")
lines = [l for l in readme.splitlines() if l.strip()]
head = "\n".join(lines[:5])
for cmd in ("make demo", "make test"):
    if cmd not in head:
        errors.append(f"README.md does not start with '{cmd}'")
for e in errors:
    print("FAIL:", e)
if errors:
    sys.exit(1)
print("1 passed, 0 failed")
