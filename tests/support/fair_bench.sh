#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fair_bench.sh - what one tenant's flood does to another tenant's latency
# on one segment node, with the node's per-tenant limits (node_fair.h) as
# they are by default, and with the flooding tenant limited harder. One
# private PostgreSQL, one node in static mode, two tenants with one item
# each. For each setting, in one run:
#   alone   the quiet tenant (escrow-load, ESC_FAIR_QUIET_CONC in flight,
#           reserve then confirm) by itself: its p99 is the baseline
#   flood   the same while the other tenant floods the node (escrow-load,
#           ESC_FAIR_FLOOD_CONC in flight, reserve then release)
# and prints the quiet tenant's p50/p99 and the ratio flood/alone (the
# target: at most 2x), and the flood's own holds/s and BUSY answers. A
# benchmark: figures are printed, nothing is asserted about them.
#
#   tests/support/fair_bench.sh      (ESC_BIN: build/bin; build without
#                                     sanitizers for figures that mean something)
#
# Knobs: ESC_FAIR_QUIET_BUYERS (3000), ESC_FAIR_QUIET_CONC (8),
# ESC_FAIR_FLOOD_CONC (512), ESC_FAIR_LIMITED (the flooder's rate in the
# third setting, 2000), ESC_FAIR_DIR (logs; default a fresh
# /tmp/escrow-fair.XXXXXX, kept).
set -euo pipefail
ESC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ESC_BIN=${ESC_BIN:-$ESC_SRC/build/bin}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

quiet_buyers=${ESC_FAIR_QUIET_BUYERS:-3000}
quiet_conc=${ESC_FAIR_QUIET_CONC:-8}
flood_conc=${ESC_FAIR_FLOOD_CONC:-512}
limited=${ESC_FAIR_LIMITED:-2000}
for b in escrow-load escrow-segment escrowctl; do
    [[ -x $ESC_BIN/$b ]] || esc_fail "no $b in ESC_BIN=$ESC_BIN"
done
build_dir=$(cd "$ESC_BIN/.." && pwd)
if grep -q '^ESC_SANITIZE:BOOL=ON$' "$build_dir/CMakeCache.txt" 2>/dev/null; then
    echo "fair_bench: NOTE $build_dir is built with sanitizers: the figures are slow ones" >&2
fi
dir=${ESC_FAIR_DIR:-$(mktemp -d /tmp/escrow-fair.XXXXXX)}
mkdir -p "$dir"
echo "fair_bench: logs in $dir"

esc_step "PostgreSQL, one node, tenants quiet and loud"
esc_pg_start || esc_fail "cannot start PostgreSQL"
esc_ctl migrate >"$dir/migrate.log" 2>&1 || esc_fail "escrowctl migrate failed"
esc_ctl item create quiet q --total 100000000 --segments 4 --node n1 --hold-ttl-ms 600000 >/dev/null
esc_ctl item create loud l --total 100000000 --segments 4 --node n1 --hold-ttl-ms 600000 >/dev/null
ep=tcp://127.0.0.1:$(esc_free_port)
esc_node_start n1 "$ep" "$dir/n1.log"
node_pid=$ESC_NODE_PID

field() { # NAME LINE
    grep -o "[[:space:]]$1=[0-9.]*" <<<" $2" | head -n 1 | cut -d= -f2
}

quiet_run() { # TAG -> the RESULT line of the quiet tenant's run
    "$ESC_BIN/escrow-load" --endpoint "$ep" --tenant quiet --item q --buyers "$quiet_buyers" \
        --concurrency "$quiet_conc" --confirm 1 --release 0 --key-prefix "quiet-$1" --quiet \
        >"$dir/quiet-$1.out" 2>&1 || esc_fail "the quiet tenant's run $1 failed: $(tail -n 5 "$dir/quiet-$1.out")"
    grep '^RESULT' "$dir/quiet-$1.out"
}

flood_started() { # TAG: the loud tenant has 1000 holds of this setting
    (($(esc_psql "SELECT count(*) FROM holds WHERE tenant_id = 'loud'
        AND idempotency_key LIKE 'loud-$1%'") >= 1000))
}

# setting TAG: alone, then under the flood; prints one line of figures
setting() {
    local tag=$1 alone flood fpid fout
    alone=$(quiet_run "$tag-alone")
    fout=$dir/flood-$tag.out
    "$ESC_BIN/escrow-load" --endpoint "$ep" --tenant loud --item l --buyers 100000000 \
        --concurrency "$flood_conc" --confirm 0 --release 1 --key-prefix "loud-$tag" \
        --give-up-ms 0 >"$fout" 2>&1 &
    fpid=$!
    ESC_PIDS+=("$fpid")
    esc_wait_for 60 flood_started "$tag" || esc_fail "the flood did not start"
    flood=$(quiet_run "$tag-flood")
    kill -TERM "$fpid" 2>/dev/null || true
    wait "$fpid" 2>/dev/null || true
    local a99 f99
    a99=$(field p99_ms "$alone")
    f99=$(field p99_ms "$flood")
    printf '%-28s quiet alone p50 %6s ms p99 %6s ms | under flood p50 %6s ms p99 %6s ms | p99 ratio %s\n' \
        "$tag" "$(field p50_ms "$alone")" "$a99" "$(field p50_ms "$flood")" "$f99" \
        "$(awk -v a="$a99" -v f="$f99" 'BEGIN { if (a > 0) printf "%.1fx", f / a; else print "-" }')"
    echo "RESULT setting=$tag quiet_alone_p99_ms=$a99 quiet_flood_p99_ms=$f99 quiet_flood_holds_per_s=$(field holds_per_s "$flood")"
}

esc_step "defaults (20000 requests/s, burst 40000, per tenant per node)"
setting defaults
esc_step "the loud tenant limited to $limited requests/s (escrowctl tenant limits)"
esc_ctl tenant limits loud --rate "$limited" >/dev/null
sleep 2 # the node re-reads the limits every second: a benchmark's pause, not a wait for a condition
setting "loud-at-$limited"
esc_step "no limit for the loud tenant (what fairness by default is compared with)"
esc_ctl tenant limits loud --rate 0 --live-holds 0 >/dev/null
sleep 2
setting unlimited
echo "rate-limited requests at the node: $(grep -o 'rate_limited=[0-9]*' "$dir/n1.log" | tail -n 1)"
esc_node_stop "$node_pid" || true
