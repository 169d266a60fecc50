#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# top_scale.sh - what one `escrowctl top` sample costs against a large
# catalog: a private PostgreSQL with ESC_TOP_ITEMS items (default 100,000, a
# multiple of 100, at least 1,000) of ESC_TOP_SEGMENTS segments (default 4)
# over 10 tenants, loaded with COPY (no daemons: the owners' counters are not
# asked, as for unplaced segments); every 100th item paused, every 50th sold
# out. Then `escrowctl top --once --json` with the filters and pages an
# operator uses, each run ESC_TOP_RUNS times (default 5), and, as the
# baseline of the same run, `escrowctl status` of one tenant (its first
# 1,000 items: status --limit 1000), what an operator watched before top.
# Prints one line per case: the items matched and shown (checked exactly
# against the catalog: exit 1 if wrong), the median and slowest wall time
# of top's two samples, and the median as a ratio of the first page's. Figures, not assertions of speed
# (docs/performance.md quotes them; the machine's load moves them).
#
#   ESC_BIN=build/bin tests/support/top_scale.sh                  # ~4 min
#   ESC_TOP_ITEMS=1000 ESC_TOP_RUNS=1 ESC_BIN=build/bin tests/support/top_scale.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"

items=${ESC_TOP_ITEMS:-100000}
segs=${ESC_TOP_SEGMENTS:-4}
runs=${ESC_TOP_RUNS:-5}
[[ -x ${ESC_BIN:-}/escrowctl ]] || esc_fail "no escrowctl in ESC_BIN='${ESC_BIN:-}'"
[[ $items =~ ^[0-9]+$ ]] && ((items >= 1000 && items % 100 == 0)) ||
    esc_fail "ESC_TOP_ITEMS must be a multiple of 100, at least 1000, not '$items'"
[[ $segs =~ ^[1-9][0-9]*$ && $runs =~ ^[1-9][0-9]*$ ]] ||
    esc_fail "ESC_TOP_SEGMENTS and ESC_TOP_RUNS must be positive integers"

esc_step "a private PostgreSQL, the schema, $items items x $segs segments"
esc_pg_start
esc_ctl migrate >/dev/null
{
    echo "COPY tenants (tenant_id) FROM STDIN;"
    for t in 0 1 2 3 4 5 6 7 8 9; do echo "shop-$t"; done
    echo '\.'
    echo "COPY items (tenant_id, item_id, total, unallocated, segments_wanted, state) FROM STDIN;"
    awk -v n="$items" -v k="$segs" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "shop-%d\tsku-%06d\t%d\t0\t%d\t%s\n", i % 10, i, 100 * k, k,
                   (i % 100 == 7) ? "paused" : "active" }'
    echo '\.'
    echo "COPY segments (tenant_id, item_id, seg_no, available, held, sold) FROM STDIN;"
    # every 50th item sold out: its units sold, none available
    awk -v n="$items" -v k="$segs" 'BEGIN {
        for (i = 0; i < n; i++) for (s = 0; s < k; s++)
            if (i % 50 == 3) printf "shop-%d\tsku-%06d\t%d\t0\t0\t100\n", i % 10, i, s
            else printf "shop-%d\tsku-%06d\t%d\t100\t0\t0\n", i % 10, i, s }'
    echo '\.'
    echo "ANALYZE;"
} | "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 -f -
echo "items: $(esc_psql "SELECT count(*) FROM items"), segments: $(esc_psql "SELECT count(*) FROM segments")"

# Prints the median and the slowest of the numbers given.
median_max() {
    local sorted
    mapfile -t sorted < <(printf '%s\n' "$@" | sort -n)
    echo "${sorted[$((${#sorted[@]} / 2))]} ${sorted[$((${#sorted[@]} - 1))]}"
}

# Milliseconds since the epoch.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

base_ms=0
# measure LABEL MATCHED SHOWN ARGS...: runs escrowctl top --once --json ARGS
# $runs times; fails unless it matched MATCHED items and shows SHOWN; prints
# the median and the slowest wall time of its two samples (the interval
# taken off) and the median against the first case's.
measure() {
    local label=$1 want_matched=$2 want_shown=$3 times=() t0 out got med max
    shift 3
    for ((r = 0; r < runs; r++)); do
        t0=$(now_ms)
        out=$(esc_ctl top --once --json --interval-ms 100 "$@")
        times+=($(($(now_ms) - t0 - 100)))
    done
    got=$(python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["matched"], len(d["items"]))' <<<"$out")
    [[ $got == "$want_matched $want_shown" ]] ||
        esc_fail "$label: matched and shown $got, want $want_matched $want_shown"
    read -r med max < <(median_max "${times[@]}")
    ((base_ms > 0)) || base_ms=$((med > 0 ? med : 1))
    printf '%-40s matched %6d shown %3d  two samples: median %5d ms, max %5d ms  (x%s)\n' \
        "$label" "$want_matched" "$want_shown" "$med" "$max" \
        "$(awk -v a="$med" -v b="$base_ms" 'BEGIN { printf "%.1f", a / b }')"
}

# The places in the catalog: a page 80% deep, the middle of one tenant's
# items, the last hundred items' prefix, the middle of the sold-out items.
deep=$((items * 8 / 10 / 20))
tenant_page=$((items / 400 > 1 ? items / 400 : 1))
prefix=$(printf 'sku-%04d' $(((items - 1) / 100)))
sold_page=$((items / 2000 > 1 ? items / 2000 : 1))

esc_step "escrowctl top --once: the wall time of its two samples (the 100 ms interval taken off)"
measure "first page (20 items)" "$items" 20
measure "page $deep (items $(((deep - 1) * 20 + 1))-$((deep * 20)))" "$items" 20 --page "$deep"
measure "one tenant, page $tenant_page" $((items / 10)) 20 shop-3 --page "$tenant_page"
measure "--prefix $prefix (100 items)" 100 20 --prefix "$prefix"
measure "--paused ($((items / 100)) items)" $((items / 100)) $((items / 100 < 20 ? items / 100 : 20)) --paused
measure "--sold-out ($((items / 50)) items), page $sold_page" $((items / 50)) 20 --sold-out --page "$sold_page"
measure "--limit 500" "$items" 500 --limit 500

# status --limit 1000: its largest page, each item with its segments
status_items=$((items / 10 < 1000 ? items / 10 : 1000))
esc_step "the baseline: escrowctl status shop-3 (its first $status_items items and their segments)"
times=()
for ((r = 0; r < runs; r++)); do
    t0=$(now_ms)
    lines=$(esc_ctl status shop-3 --limit 1000 | wc -l)
    times+=($(($(now_ms) - t0)))
done
((lines >= status_items * (segs + 1))) ||
    esc_fail "status shop-3 printed $lines lines for $status_items items of $segs segments"
read -r med max < <(median_max "${times[@]}")
printf '%-40s %d lines: median %5d ms, max %5d ms  (x%s of top'"'"'s first page)\n' \
    "escrowctl status shop-3 --limit 1000" "$lines" "$med" "$max" \
    "$(awk -v a="$med" -v b="$base_ms" 'BEGIN { printf "%.1f", a / b }')"
esc_pg_stop
