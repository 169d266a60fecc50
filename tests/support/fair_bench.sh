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
# target: at most 2x), the flood's own holds/s, what the node's group commit
# did meanwhile (mean rows per batch, mean commit round trip, from its
# metrics) and the CPU the node, PostgreSQL and the flood's load generator
# took (% of one core, from /proc), and the load average. A benchmark:
# figures are printed, nothing is asserted about them.
#
#   tests/support/fair_bench.sh      (ESC_BIN: build/bin; build without
#                                     sanitizers for figures that mean something)
#
# Knobs: ESC_FAIR_QUIET_BUYERS (3000), ESC_FAIR_QUIET_CONC (8),
# ESC_FAIR_FLOOD_CONC (512), ESC_FAIR_LIMITED (the flooder's rate in the
# second setting, 2000), ESC_FAIR_SETTINGS (which settings run, in order:
# "defaults limited unlimited"), ESC_FAIR_NODE_FLAGS (more flags for the
# node, e.g. "--fair-slots 64" for fixed slots), ESC_FAIR_DIR (logs;
# default a fresh /tmp/escrow-fair.XXXXXX, kept).
set -euo pipefail
ESC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ESC_BIN=${ESC_BIN:-$ESC_SRC/build/bin}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

quiet_buyers=${ESC_FAIR_QUIET_BUYERS:-3000}
quiet_conc=${ESC_FAIR_QUIET_CONC:-8}
flood_conc=${ESC_FAIR_FLOOD_CONC:-512}
limited=${ESC_FAIR_LIMITED:-2000}
settings=${ESC_FAIR_SETTINGS:-defaults limited unlimited}
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
mport=$(esc_free_port)
# shellcheck disable=SC2086 # ESC_FAIR_NODE_FLAGS: a list of flags
esc_node_start n1 "$ep" "$dir/n1.log" --metrics "$mport" ${ESC_FAIR_NODE_FLAGS:-}
node_pid=$ESC_NODE_PID

field() { # NAME LINE
    grep -o "[[:space:]]$1=[0-9.]*" <<<" $2" | head -n 1 | cut -d= -f2
}

# metric NAME: the node's value of an unlabelled series (0 if absent)
metric() {
    python3 - "$mport" "$1" <<'PY'
import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read()
for line in body.decode().splitlines():
    if line.startswith(sys.argv[2] + " "):
        print(line.split()[1])
        break
else:
    print(0)
PY
}
# ticks PID...: CPU time (user + system, clock ticks) of the processes
ticks() {
    local p sum=0
    for p in "$@"; do
        [[ -r /proc/$p/stat ]] || continue
        sum=$((sum + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
    done
    echo "$sum"
}
# pg_pids: this run's postmaster and its backends
pg_pids() {
    local pm
    pm=$(head -n 1 "$ESC_PG_DIR/data/postmaster.pid")
    echo "$pm $(pgrep -d ' ' -P "$pm" || true)"
}
# commit figures between two snapshots "rows_sum rows_count lat_sum"
commit_figures() { # BEFORE AFTER
    awk -v b="$1" -v a="$2" 'BEGIN { split(b, x, " "); split(a, y, " ");
        n = y[2] - x[2]; if (n <= 0) { print "- -"; exit }
        printf "%.0f %.1f\n", (y[1] - x[1]) / n, 1000 * (y[3] - x[3]) / n }'
}
commit_snapshot() {
    echo "$(metric escrow_batch_rows_sum) $(metric escrow_batch_rows_count) $(metric escrow_commit_latency_seconds_sum)"
}
loud_holds() { esc_psql "SELECT count(*) FROM holds WHERE tenant_id = 'loud'"; }

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
    local c0 c1 pgs t0 t1 tn0 tn1 tp0 tp1 tf0 tf1 h0 h1
    # shellcheck disable=SC2086 # pgs: a list of pids
    {
        pgs=$(pg_pids)
        c0=$(commit_snapshot) t0=$(date +%s.%N) tn0=$(ticks "$node_pid") tp0=$(ticks $pgs)
        tf0=$(ticks "$fpid") h0=$(loud_holds)
        flood=$(quiet_run "$tag-flood")
        c1=$(commit_snapshot) t1=$(date +%s.%N) tn1=$(ticks "$node_pid") tp1=$(ticks $pgs)
        tf1=$(ticks "$fpid") h1=$(loud_holds)
    }
    local load
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    kill -TERM "$fpid" 2>/dev/null || true
    wait "$fpid" 2>/dev/null || true
    local a99 f99 hz cpu rows ms cn cp cf fl
    a99=$(field p99_ms "$alone")
    f99=$(field p99_ms "$flood")
    hz=$(getconf CLK_TCK)
    cpu=$(awk -v d="$t1 - $t0" -v hz="$hz" -v n=$((tn1 - tn0)) -v p=$((tp1 - tp0)) -v f=$((tf1 - tf0)) \
        'BEGIN { split(d, x, " - "); s = x[1] - x[2]; printf "%.0f %.0f %.0f", 100 * n / hz / s, 100 * p / hz / s, 100 * f / hz / s }')
    read -r rows ms <<<"$(commit_figures "$c0" "$c1")"
    read -r cn cp cf <<<"$cpu"
    fl=$(awk -v d="$t1 - $t0" -v h=$((h1 - h0)) 'BEGIN { split(d, x, " - "); printf "%.0f", h / (x[1] - x[2]) }')
    printf '%-22s quiet alone p50 %6s ms p99 %6s ms | under flood p50 %6s ms p99 %6s ms | p99 ratio %s\n' \
        "$tag" "$(field p50_ms "$alone")" "$a99" "$(field p50_ms "$flood")" "$f99" \
        "$(awk -v a="$a99" -v f="$f99" 'BEGIN { if (a > 0) printf "%.1fx", f / a; else print "-" }')"
    printf '%-22s under flood: the flood %s holds/s; %s rows per batch, commit %s ms; CPU node %s%%, PostgreSQL %s%%, flood client %s%%; load average %s\n' \
        "" "$fl" "$rows" "$ms" "$cn" "$cp" "$cf" "$load"
    echo "RESULT setting=$tag quiet_alone_p99_ms=$a99 quiet_flood_p99_ms=$f99 quiet_flood_holds_per_s=$(field holds_per_s "$flood") flood_holds_per_s=$fl batch_rows=$rows commit_ms=$ms cpu_node_pct=$cn cpu_pg_pct=$cp cpu_flood_pct=$cf"
}

for s in $settings; do
    case $s in
    defaults)
        esc_step "defaults (20000 requests/s, burst 40000, per tenant per node)"
        esc_ctl tenant limits loud --rate default --live-holds default >/dev/null
        ;;
    limited)
        esc_step "the loud tenant limited to $limited requests/s (escrowctl tenant limits)"
        esc_ctl tenant limits loud --rate "$limited" --live-holds default >/dev/null
        s=loud-at-$limited
        ;;
    unlimited)
        esc_step "no limit for the loud tenant (what fairness by default is compared with)"
        esc_ctl tenant limits loud --rate 0 --live-holds 0 >/dev/null
        ;;
    *) esc_fail "ESC_FAIR_SETTINGS: no setting '$s' (defaults, limited, unlimited)" ;;
    esac
    sleep 2 # the node re-reads the limits every second: a benchmark's pause, not a wait for a condition
    setting "$s"
done
esc_node_stop "$node_pid" || true
echo "at the node: $(grep -o 'rate_limited=[0-9]* waited_turn=[0-9]*\( fair_slots=[0-9]* fair_cuts=[0-9]*\)\?' "$dir/n1.log" | tail -n 1)"
