#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# readme_tour.sh - the README's five-minute tour, as a new user types it,
# finishes: the sale sells out (sold == total, held 0, conservation ok),
# escrow-load says how long it took (run_s=) and escrowctl check passes.
#
# The commands are read from README.md's tour block, not retyped here:
# `make build` is skipped (the binaries under test are in ESC_BIN),
# build/bin/ becomes ESC_BIN, /tmp/esc a directory of this test's,
# tests/support/cluster.sh start goes through esc_cluster_start (stopped at
# exit), the `watch` line is skipped and the load runs in the foreground.
# Before the cluster stops, the README's C example is run against a unit
# someone else holds for 3 s: it retries TRY_LATER and buys it.
set -euo pipefail
ESC_SRC=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
source "$ESC_SRC/tests/support/lib.sh"
T0=$SECONDS
work=$(mktemp -d /tmp/escrow-readme-tour.XXXXXX)
esc_on_exit "rm -rf '$work'"

# The tour: the ```sh block under "## A five-minute tour", continuation lines joined.
python3 - "$ESC_SRC/README.md" >"$work/tour.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
tour = text.split("## A five-minute tour", 1)[1]
block = re.search(r"```sh\n(.*?)```", tour, re.S).group(1)
for line in block.replace("\\\n", " ").splitlines():
    line = re.sub(r"\s+#.*$", "", line).strip()
    if line:
        print(re.sub(r"\s+", " ", line))
EOF
cat "$work/tour.txt"
grep -q '^build/bin/escrow-load ' "$work/tour.txt" || esc_fail "README tour: no escrow-load line"

# The README's C example (examples/checkout) retries TRY_LATER: after the
# sale one unit is restocked and held for 3 s by someone else; the example,
# started meanwhile, hears TRY_LATER, backs off, and buys the unit once that
# hold lapsed (well inside its 10 s).
example_retries_try_later() {
    esc_step "the README's example against a unit held by someone else for 3 s"
    "$ESC_BIN/escrowctl" item restock shop-1 tee 1 >/dev/null
    local probe=${ESC_PROBE:-$ESC_BIN/../tests/esc_probe}
    local out
    have_unit() {
        out=$("$probe" reserve --coordinator "$ESCROW_COORDINATOR" --tenant shop-1 --item tee \
            --key other-buyer --ttl-ms 3000)
        [[ $out == OK* ]]
    }
    esc_wait_for 30 have_unit || esc_fail "the restocked unit could not be held: $out"
    local t0=$SECONDS
    "$ESC_BIN/escrow-example-checkout" "$ESCROW_COORDINATOR" "$ESC_CLUSTER_PUBLISH" \
        >"$work/example.out" 2>&1 || esc_fail "the example failed: $(cat "$work/example.out")"
    cat "$work/example.out"
    grep -q '^OK: hold is converted$' "$work/example.out" ||
        esc_fail "the example did not buy the unit that came back"
    echo "the example bought it after $((SECONDS - t0)) s of TRY_LATER"
}

esc_step "the tour, command by command"
while read -r line; do
    line=${line%&}
    line=${line//build\/bin\//$ESC_BIN/}
    line=${line//\/tmp\/esc/$work/esc}
    case $line in
    "make build" | watch*) echo "(skipped: $line)" ;;
    "tests/support/cluster.sh start "*)
        # shellcheck disable=SC2086
        esc_cluster_start ${line#tests/support/cluster.sh start } ;;
    "tests/support/cluster.sh stop "*)
        example_retries_try_later
        esc_cluster_stop "$work/esc" ;;
    "source "*) source "${line#source }" ;;
    *escrow-load*)
        echo "+ $line"
        eval "$line" | tee "$work/load.out" ;;
    *)
        echo "+ $line"
        eval "$line" >"$work/out" || esc_fail "README tour: '$line' failed: $(tail -5 "$work/out")" ;;
    esac
done <"$work/tour.txt"

result=$(grep '^RESULT' "$work/load.out" || true)
[[ -n $result ]] || esc_fail "escrow-load printed no RESULT line"
field() { grep -oE "(^| )$1=[^ ]*" <<<"$result" | cut -d= -f2; }
total=$(field total)
esc_assert_eq "$(field sold)" "$total" "README tour: sold (the sale sells out)"
esc_assert_eq "$(field held)" 0 "README tour: held at the end"
esc_assert_eq "$(field oversold) $(field conservation)" "0 ok" "README tour: oversold, conservation"
[[ $(field run_s) =~ ^[0-9]+\.[0-9]$ ]] || esc_fail "README tour: no run_s= in the RESULT line"
echo "the sale by hand: $result"
echo "PASS readme_tour ($((SECONDS - T0)) s)"
