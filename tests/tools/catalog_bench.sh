#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# catalog_bench.sh - escrow with a large catalog: what idle items cost. A
# benchmark, not a test: it prints figures and ratios and asserts nothing
# about them.
#
#   make bench-catalog                          build (no sanitizers) and run this
#   ESC_BIN=build/bin tests/tools/catalog_bench.sh
#
# First a baseline: a fresh local cluster (tests/support/cluster.sh: a
# private PostgreSQL, a coordinator, 2 nodes) with nothing but one sale
# item, and a flash sale on it (escrow-load: ESC_CB_SALE_UNITS buyers with
# ESC_CB_CONCURRENCY calls in flight, reserve then confirm). Then, for each
# size N in ESC_CB_SIZES, a fresh cluster and:
#   import_s    `escrowctl item import` of N items x 4 segments (CSV)
#   placed_s    from the end of the import until the nodes have loaded every
#               segment (SEG-LOADED in their logs), or "not-served:S-of-T"
#               when they had not after ESC_CB_PLACE_S seconds
#   coord_cpu   the coordinator's CPU over ESC_CB_IDLE_S seconds with no sale
#               (after ESC_CB_SETTLE_S seconds of quiet), in % of one core,
#               from /proc/PID/stat; pg_cpu likewise for all of PostgreSQL's
#               processes, nodes_cpu for the two nodes together
#   route_ms    one route fetch from the coordinator (coord_probe route, a
#               process start included; the median of 5); "n/a" without a
#               coord_probe (a build with -DESC_TESTS=ON has one)
#   status_ms   `escrowctl status` (its default page) and `escrowctl status
#               TENANT ITEM`, the median of 5 each, a process start included
#   sale        the baseline's flash sale on one more item (created before
#               the catalog) while the N others sit idle: holds/s and its
#               ratio to the baseline; the coordinator's CPU during it
#               (sale_coord_cpu_pct) and the rows of items and segments all
#               sessions read from 11 s before it to 11 s after it
#               (sale_catalog_rows: the coordinator's catalog reads, the
#               nodes' batches and the invariant monitor's checks)
# and one RESULT line per size. Knobs: ESC_CB_SIZES ("1000 10000 100000"),
# ESC_CB_SALE_UNITS (20000), ESC_CB_CONCURRENCY (64), ESC_CB_IDLE_S (20),
# ESC_CB_SETTLE_S (5), ESC_CB_PLACE_S (how long placement may take before
# it is given up: 1800), ESC_CB_SALE_S (a sale's bound: 600), ESC_COORD_PROBE (default
# ESC_BIN/../tests/coord_probe), ESC_CB_DIR (logs; default a fresh
# /tmp/escrow-catalog-bench.XXXXXX, kept).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/../support/lib.sh"
[[ -n ${ESC_BIN:-} ]] || esc_fail "ESC_BIN (a build's bin directory) is not set"
for b in escrow-coordinator escrow-segment escrowctl escrow-load; do
    [[ -x $ESC_BIN/$b ]] || esc_fail "no $b in ESC_BIN=$ESC_BIN"
done
if readelf -d "$ESC_BIN/escrow-coordinator" | grep 'NEEDED.*libasan' >/dev/null; then
    echo "note: a sanitizer build: figures mean little" >&2
fi
sizes=${ESC_CB_SIZES:-1000 10000 100000}
sale_units=${ESC_CB_SALE_UNITS:-20000}
conc=${ESC_CB_CONCURRENCY:-64}
idle_s=${ESC_CB_IDLE_S:-20}
settle_s=${ESC_CB_SETTLE_S:-5}
place_s=${ESC_CB_PLACE_S:-1800}
sale_s=${ESC_CB_SALE_S:-600}
probe=${ESC_COORD_PROBE:-$ESC_BIN/../tests/coord_probe}
dir=${ESC_CB_DIR:-$(mktemp -d /tmp/escrow-catalog-bench.XXXXXX)}
mkdir -p "$dir"
hz=$(getconf CLK_TCK)

now_ms() { date +%s%3N; }

# utime + stime (ticks) of one pid; 0 when it is gone.
ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# "pid ticks" for PostgreSQL's postmaster and all its children.
pg_ticks() {
    local pm
    pm=$(head -1 "$ESC_PG_DIR/data/postmaster.pid")
    for p in $pm $(pgrep -P "$pm"); do
        echo "$p $(ticks "$p")"
    done
}

# CPU % of one core used by PostgreSQL between two pg_ticks snapshots over
# $3 seconds (a process that appeared in between counts whole).
pg_cpu() {
    awk -v s="$3" -v hz="$hz" 'NR == FNR { a[$1] = $2; next } { d += $2 - ($1 in a ? a[$1] : 0) }
        END { printf "%.1f", 100 * d / hz / s }' "$1" "$2"
}

# Rows of items and segments read so far by every session (PostgreSQL's
# table counters: sequential and index fetches).
catalog_rows() {
    esc_psql "SELECT COALESCE(sum(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0)
        FROM pg_stat_user_tables WHERE relname IN ('items', 'segments')"
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# Median wall time (ms) of 5 runs of a command (its output discarded).
time_ms() {
    local i t
    for i in 1 2 3 4 5; do
        t=$(now_ms)
        "$@" >/dev/null 2>&1 || { echo "n/a"; return 0; }
        echo $(($(now_ms) - t))
    done | median
}

# Segments the nodes of cluster $1 have loaded (SEG-LOADED in their logs):
# a grant in the database is not yet a segment a node serves.
served() {
    { grep -ho 'SEG-LOADED seg=[0-9]*' "$dir/cluster-$1"/n*.log || true; } | sort -u | wc -l
}

_all_served() {
    [[ $(served "$1") -ge $(esc_psql "SELECT count(*) FROM segments WHERE state = 'active'") ]]
}

cluster_up() {
    esc_cluster_start "$dir/cluster-$1" --nodes 2
}

cluster_down() {
    esc_cluster_stop "$dir/cluster-$1" >/dev/null 2>&1 || true
}

# The sale item sale/hot-$1, created before the catalog (so it is among the
# first segments the nodes load).
sale_item() {
    esc_ctl item create sale "hot-$1" --total "$sale_units" --segments 4 >/dev/null
    esc_ctl tenant limits sale --rate 0 >/dev/null # one tenant's peak: no rate limit
    esc_cluster_wait_served sale "hot-$1"
}

# The flash sale on sale/hot-$1 (at most ESC_CB_SALE_S seconds); prints
# holds/s.
sale() {
    local item=hot-$1 line
    timeout "$sale_s" "$ESC_BIN/escrow-load" --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
        --tenant sale --item "$item" --buyers "$sale_units" --concurrency "$conc" --confirm 1 \
        --release 0 --quiet --dsn "$ESCROW_DSN" >"$dir/sale-$1.out" 2>"$dir/sale-$1.log" ||
        { echo "  sale: escrow-load failed or ran out of time: see $dir/sale-$1.*" >&2; echo n/a; return 0; }
    line=$(grep '^RESULT' "$dir/sale-$1.out")
    echo "  sale: $line" >&2
    sed -n 's/.* holds_per_s=\([0-9.]*\).*/\1/p' <<<"$line"
}

esc_step "load average $(cut -d' ' -f1-3 /proc/loadavg); logs in $dir"
esc_step "baseline: a cluster with only the sale item"
cluster_up base
sale_item base
base=$(sale base)
[[ -n $base ]] || esc_fail "the baseline sale failed"
cluster_down base
echo "baseline: holds_per_s=$base"

for n in $sizes; do
    esc_step "$n items x 4 segments (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    cluster_up "$n"
    sale_item "$n"
    awk -v n="$n" 'BEGIN { print "tenant,item,total,segments"
        for (i = 1; i <= n; i++) printf "cat,sku-%07d,100,4\n", i }' >"$dir/catalog-$n.csv"
    t0=$(now_ms)
    esc_ctl item import "$dir/catalog-$n.csv" --chunk 1000 >"$dir/import-$n.out"
    t1=$(now_ms)
    cat "$dir/import-$n.out"
    placed=
    if ! esc_wait_for "$place_s" _all_served "$n"; then
        placed="not-served:$(served "$n")-of-$(esc_psql "SELECT count(*) FROM segments")-after-${place_s}s"
    fi
    t2=$(now_ms)
    sleep "$settle_s"
    pid=$ESC_CLUSTER_COORD_PID
    nodes_pids=$(for x in $ESC_CLUSTER_NODES; do esc_cluster_node_pid "$x"; done)
    c0=$(ticks "$pid")
    n0=0
    for p in $nodes_pids; do n0=$((n0 + $(ticks "$p"))); done
    pg_ticks >"$dir/pg0"
    sleep "$idle_s"
    c1=$(ticks "$pid")
    n1=0
    for p in $nodes_pids; do n1=$((n1 + $(ticks "$p"))); done
    pg_ticks >"$dir/pg1"
    coord_cpu=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$idle_s" 'BEGIN { printf "%.1f", 100 * d / hz / s }')
    nodes_cpu=$(awk -v d=$((n1 - n0)) -v hz="$hz" -v s="$idle_s" 'BEGIN { printf "%.1f", 100 * d / hz / s }')
    pgc=$(pg_cpu "$dir/pg0" "$dir/pg1" "$idle_s")
    route=n/a
    if [[ -x $probe ]]; then
        route=$(time_ms "$probe" route "$ESCROW_COORDINATOR" cat item=sku-0000001)
    fi
    status_page=$(time_ms esc_ctl status)
    status_item=$(time_ms esc_ctl status cat sku-0000001)
    sleep 11 # PostgreSQL's backends flush their table counters within 10 s of idling
    r0=$(catalog_rows)
    c0=$(ticks "$pid")
    s0=$(now_ms)
    rate=$(sale "$n")
    sale_coord=$(awk -v d=$(($(ticks "$pid") - c0)) -v hz="$hz" -v ms=$(($(now_ms) - s0)) \
        'BEGIN { printf "%.1f", (ms > 0 ? 100 * d / hz / (ms / 1000) : 0) }')
    sleep 11
    sale_rows=$(($(catalog_rows) - r0))
    ratio=$(awk -v a="$rate" -v b="$base" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    [[ -n $placed ]] || placed=$(awk -v p=$((t2 - t1)) 'BEGIN { printf "%.1f", p / 1000 }')
    awk -v i=$((t1 - t0)) -v p="$placed" -v n="$n" -v c="$coord_cpu" -v g="$pgc" -v nc="$nodes_cpu" \
        -v r="$route" -v sp="$status_page" -v si="$status_item" -v h="$rate" -v q="$ratio" \
        -v sc="$sale_coord" -v sr="$sale_rows" \
        -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
        printf "RESULT items=%d import_s=%.1f placed_s=%s coord_cpu_pct=%s pg_cpu_pct=%s " \
               "nodes_cpu_pct=%s route_ms=%s status_ms=%s status_item_ms=%s sale_holds_per_s=%s " \
               "sale_ratio=%s sale_coord_cpu_pct=%s sale_catalog_rows=%s load=\"%s\"\n", \
               n, i / 1000, p, c, g, nc, r, sp, si, h, q, sc, sr, l }'
    cluster_down "$n"
done
