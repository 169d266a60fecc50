#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gateway_bench.sh - escrow-gateway's speed against native libescrow, in one
# run, on one local cluster, on this machine. A benchmark, not a test: it
# prints figures and ratios and asserts nothing about them.
#
#   ESC_BIN=build/bin tests/support/gateway_bench.sh [--quick]
#
# One cluster (tests/support/cluster.sh: private PostgreSQL with fsync and
# synchronous_commit on, escrow-coordinator, ESC_GW_BENCH_NODES nodes), one
# item of 10,000,000 units in 8 segments (no sellout during the run), every
# hold durable before it is answered; then for each concurrency C in
# ESC_GW_BENCH_CONNS (default "1 64"):
#   native   escrow-bench escrow: libescrow's async API in routing mode, C
#            reserves in flight (tests/tools/escrow-bench)
#   gateway  wrk: C keep-alive HTTPS connections to escrow-gateway (TLS, a
#            certificate made here), one reserve in flight each, a new
#            buyer and Idempotency-Key per request
#            (tests/tools/gateway/reserve.lua); after a 1 s warm-up
# each for ESC_GW_BENCH_SECONDS (default 8). Prints the BENCH lines, the
# gateway's CPU per hold, and one line per C:
#   RESULT conns=C native_ok_s=... gw_ok_s=... ratio=GW/NATIVE native_p99_ms=...
#          gw_p99_ms=... added_p99_ms=... gw_cpu_us_per_hold=...
# Exit 1 only when a measurement failed (wrk errors or non-2xx answers, no
# BENCH line). --quick (ESC_GW_BENCH_QUICK=1): 1 s each, for the smoke test.
# Build without sanitizers for figures (make bench's build/ is).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)

quick=${ESC_GW_BENCH_QUICK:-0}
[[ ${1:-} == --quick ]] && quick=1
seconds=${ESC_GW_BENCH_SECONDS:-8}
((quick)) && seconds=1
conns_list=${ESC_GW_BENCH_CONNS:-1 64}
nodes=${ESC_GW_BENCH_NODES:-1}
for b in escrow-gateway escrow-bench escrow-segment escrow-coordinator escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}'"
done
command -v wrk >/dev/null || esc_fail "wrk is not installed (.ci/packages.txt)"
dir=$(mktemp -d /tmp/escrow-gw-bench.XXXXXX)
results=$dir/results.txt
: >"$results"
echo "gateway benchmark: ${seconds} s per measurement, C in ($conns_list), logs in $dir"

esc_step "a local cluster ($nodes node(s)), tenant, key, certificate, gateway"
esc_cluster_start "$dir/cluster" --nodes "$nodes"
esc_ctl tenant create bench >/dev/null
esc_ctl key create bench >"$dir/bench.key" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$dir/gw.key" -out "$dir/gw.crt" 2>/dev/null
esc_ctl item create bench hot --total 10000000 --segments 8 --hold-ttl-ms 600000 >/dev/null
# a benchmark of one tenant's peak: no per-tenant rate limit (node_fair.h)
esc_ctl tenant limits bench --rate 0 >/dev/null
served() {
    [[ $(esc_psql "SELECT count(*) FROM segments WHERE item_id = 'hot' AND epoch > 0") == 8 ]]
}
esc_wait_for 60 served || esc_fail "the item was not placed within 60 s"
port=$(esc_free_port)
esc_spawn "$dir/gateway.log" "$ESC_BIN/escrow-gateway" --coordinator "$ESCROW_COORDINATOR" \
    --routes "$ESC_CLUSTER_PUBLISH" --dsn "$ESCROW_DSN" --listen "127.0.0.1:$port" \
    --tls-cert "$dir/gw.crt" --tls-key "$dir/gw.key" --connections-max 4096
gw_pid=$ESC_SPAWN_PID
gw_ready() {
    grep -q GW-READY "$dir/gateway.log"
}
esc_wait_for 60 gw_ready || esc_fail "escrow-gateway did not get ready"

cpu_ticks() { # utime + stime of PID, in clock ticks
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

figure() { # KEY: its value from the BENCH lines so far
    grep -o "[[:space:]]$1=[0-9.]*" "$results" | tail -n 1 | cut -d= -f2
}

for c in $conns_list; do
    esc_step "C=$c: native libescrow, $c in flight"
    "$ESC_BIN/escrow-bench" escrow --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
        --tenant bench --item hot --ttl-ms 600000 --inflight "$c" --key-prefix "native$c" \
        --label "native$c" --seconds "$seconds" --warmup-ms 1000 | tee -a "$results"
    esc_step "C=$c: through escrow-gateway, wrk with $c HTTPS keep-alive connections"
    threads=$((c < 2 ? 1 : 2))
    GW_BENCH_KEY=$(cat "$dir/bench.key") GW_BENCH_ITEM=hot GW_BENCH_LABEL="warm$c" \
        wrk -t "$threads" -c "$c" -d 1s -s "$src/tests/tools/gateway/reserve.lua" \
        "https://127.0.0.1:$port/v1/holds" >"$dir/warm$c.out" 2>&1 || true
    t0=$(cpu_ticks "$gw_pid")
    GW_BENCH_KEY=$(cat "$dir/bench.key") GW_BENCH_ITEM=hot GW_BENCH_LABEL="gw$c" \
        wrk -t "$threads" -c "$c" -d "${seconds}s" --timeout 30s \
        -s "$src/tests/tools/gateway/reserve.lua" "https://127.0.0.1:$port/v1/holds" \
        >"$dir/wrk$c.out" 2>&1 || { cat "$dir/wrk$c.out" >&2; esc_fail "wrk failed"; }
    t1=$(cpu_ticks "$gw_pid")
    grep '^BENCH' "$dir/wrk$c.out" | tee -a "$results"
    [[ $(figure "gw${c}_errors") == 0 && $(figure "gw${c}_non2xx") == 0 ]] ||
        { cat "$dir/wrk$c.out" >&2; esc_fail "wrk saw errors or non-2xx answers"; }
    holds=$(figure "gw${c}_requests")
    awk -v c="$c" -v n="$(figure "native${c}_ok_s")" -v g="$(figure "gw${c}_ok_s")" \
        -v np="$(figure "native${c}_ok_p99_ms")" -v gp="$(figure "gw${c}_p99_ms")" \
        -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v holds="$holds" 'BEGIN {
        printf "RESULT conns=%d native_ok_s=%d gw_ok_s=%d ratio=%.2f native_p99_ms=%.2f gw_p99_ms=%.2f added_p99_ms=%.2f gw_cpu_us_per_hold=%.1f\n",
            c, n, g, (n > 0 ? g / n : 0), np, gp, gp - np, (holds > 0 ? ticks / hz * 1e6 / holds : 0) }' |
        tee -a "$dir/result.txt"
done

esc_step "summary"
cat "$dir/result.txt"
esc_node_stop "$gw_pid" || echo "note: the gateway did not stop cleanly"
