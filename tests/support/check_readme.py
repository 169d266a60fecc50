#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_readme.py - the README's C example must be examples/checkout/checkout.c,
byte for byte but its SPDX licence line (that file is compiled with the
project, so the README's code compiles), and the README must start with the
two commands."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
readme = (root / "README.md").read_text()
example = (root / "examples/checkout/checkout.c").read_text().rstrip("\n")
spdx = "/* SPDX-License-Identifier: Apache-2.0 */\n"
if example.startswith(spdx):
    example = example[len(spdx):]
errors = []
if "```c\n" + example + "\n```" not in readme:
    errors.append("README.md's C example differs from examples/checkout/checkout.c")
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
