#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mutations.sh SIM - proves the simulator (and the history checker) can fail:
# every --mutate KIND injects one bug into the simulated store or the node
# shell; each must end in a VIOLATION line and a non-zero exit. For the
# mutations visible in the history, the separate checker must also reject
# the history of the failing seed. (lost-as-failed only shows in the node's
# memory against the store, which the inline checks see and a history
# does not.)
set -u
sim=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for m in fenced-commit double-transfer lost-as-failed ack-before-commit stale-clock no-unique-key; do
    out=$("$sim" --seeds 1..500 --steps 2000 --jobs 1 --mutate "$m")
    rc=$?
    line=$(printf '%s\n' "$out" | grep -m1 '^VIOLATION seed=')
    if [ "$rc" -eq 0 ] || [ -z "$line" ]; then
        echo "NOT CAUGHT mutation=$m rc=$rc"
        fail=1
        continue
    fi
    echo "caught mutation=$m: $line"
    [ "$m" = lost-as-failed ] && continue
    seed=$(printf '%s\n' "$line" | sed 's/^VIOLATION seed=\([0-9]*\).*/\1/')
    "$sim" --seed "$seed" --steps 2000 --mutate "$m" --history "$tmp/$m" >/dev/null
    if python3 "$here/check_history.py" --dir "$tmp/$m" >"$tmp/$m.check"; then
        echo "CHECKER MISSED mutation=$m seed=$seed"
        fail=1
    else
        echo "  checker: $(grep -m1 VIOLATED "$tmp/$m.check")"
    fi
done
exit $fail
