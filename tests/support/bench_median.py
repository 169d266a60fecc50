#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_median.py - the repetitions of one escrow-bench measurement become
one line: each key's median, with its range next to it.

    bench_median.py < REPS     (REPS: the repetitions' BENCH lines)

prints
    BENCH <key>=<median> <key>_min=<min> <key>_max=<max> ...
in the order the keys first appear. With an even number of repetitions the
median is the mean of the two middle values. A key missing from a
repetition is taken from the others; a value that is not a number is
dropped. Exit 1 if no BENCH line came in.
"""
import statistics
import sys


def main():
    values = {}
    for line in sys.stdin:
        if not line.startswith("BENCH "):
            continue
        for tok in line.split()[1:]:
            key, sep, v = tok.partition("=")
            if not sep:
                continue
            try:
                values.setdefault(key, []).append(float(v))
            except ValueError:
                continue
    if not values:
        print("bench_median.py: no BENCH line", file=sys.stderr)
        return 1
    out = []
    for key, vs in values.items():
        for name, v in ((key, statistics.median(vs)), (key + "_min", min(vs)),
                        (key + "_max", max(vs))):
            out.append("%s=%s" % (name, ("%.3f" % v).rstrip("0").rstrip(".")))
    print("BENCH " + " ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
