#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# replay.sh SIM - the same seed produces the same trace, byte for byte
# (with and without a mutation), and the trace is not trivially empty.
set -u
sim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for args in "--seed=7 --steps=2000" "--seed=1234 --steps=3000" "--seed=2 --mutate=fenced-commit"; do
    # shellcheck disable=SC2086
    "$sim" $args --trace >"$tmp/a" 2>&1
    # shellcheck disable=SC2086
    "$sim" $args --trace >"$tmp/b" 2>&1
    lines=$(wc -l <"$tmp/a")
    if ! cmp -s "$tmp/a" "$tmp/b"; then
        echo "NOT DETERMINISTIC: $args"
        diff "$tmp/a" "$tmp/b" | head -5
        fail=1
    elif [ "$lines" -lt 1000 ]; then
        echo "TRACE TOO SHORT: $args ($lines lines)"
        fail=1
    else
        echo "replay ok: $args ($lines lines, $(md5sum <"$tmp/a" | cut -c1-12))"
    fi
done
exit $fail
