#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# history_bench.sh - does history slow the commit path? Durable holds/s and
# p99 with an empty holds table, then, in the same run on the same private
# PostgreSQL (fsync and synchronous_commit on), with the holds table
# pre-filled with ESC_HIST_HOLDS (20,000,000) ended holds spread over the
# days of the idempotency window (which escrow_commit_batch searches for
# every new key). Prints the ratio full/empty (the target is >= 0.8), disk per
# million holds, and how long one conservation check (the coordinator's
# invariant monitor, which reads every hold) takes on each. A benchmark, not
# a test: it asserts nothing about the figures.
#
#   make bench-history                 build (no sanitizers) and run this
#   ESC_BIN=build/bin tests/support/history_bench.sh
#
# The commit path alone: one node in static mode, no coordinator (its
# monitor would scan the 20 million holds every --check-ms; its cost is
# printed separately). escrow-bench talks to the node directly, every hold
# durable before it is answered, ESC_HIST_INFLIGHT (512) in flight, random-
# looking idempotency keys (--key-order hashed, as a shop's UUIDs: a new key
# lands on a random page of each day's key index). The fill is one INSERT per
# day in key order (so it takes minutes, not hours); the history's keys are
# md5 strings, spread over the same key space as the measured ones.
# Knobs: ESC_HIST_HOLDS (20000000) ESC_HIST_SECONDS (10) ESC_HIST_INFLIGHT
# (512) ESC_HIST_DIR (logs; default a fresh /tmp/escrow-hist.XXXXXX, kept).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/lib.sh"

holds=${ESC_HIST_HOLDS:-20000000}
seconds=${ESC_HIST_SECONDS:-10}
inflight=${ESC_HIST_INFLIGHT:-512}
tenant=bench
for b in escrow-bench escrow-segment escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}' (build first)"
done
dir=${ESC_HIST_DIR:-$(mktemp -d /tmp/escrow-hist.XXXXXX)}
mkdir -p "$dir"
results=$dir/results.txt
: >"$results"
echo "history_bench: $holds ended holds, ${seconds} s per measurement, logs in $dir"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

esc_step "private PostgreSQL, the schema, one node (static mode)"
esc_pg_start
for setting in fsync synchronous_commit; do
    [[ $(esc_psql "SHOW $setting") == on ]] || esc_fail "PostgreSQL has $setting off"
done
esc_ctl migrate >"$dir/migrate.log" 2>&1 || { cat "$dir/migrate.log"; esc_fail "migrate"; }
esc_psql "INSERT INTO tenants (tenant_id) VALUES ('$tenant') ON CONFLICT DO NOTHING" >/dev/null
for item in empty full; do
    esc_ctl item create "$tenant" "$item" --total 100000000 --segments 8 --node n1 \
        --hold-ttl-ms 600000 >/dev/null
done
esc_ctl tenant limits "$tenant" --rate 0 >/dev/null
port=$(esc_free_port)
esc_node_start n1 "tcp://127.0.0.1:$port" "$dir/n1.log"
pg_pid=$(head -n 1 "$ESC_PG_DIR/data/postmaster.pid")

measure() { # LABEL ITEM
    local out
    out=$("$ESC_BIN/escrow-bench" escrow --endpoint "tcp://127.0.0.1:$port" --tenant "$tenant" \
        --item "$2" --ttl-ms 600000 --inflight "$inflight" --key-order hashed \
        --key-prefix "$1" --pg-pid "$pg_pid" --label "$1" --seconds "$seconds" \
        --warmup-ms 2000) || esc_fail "escrow-bench ($1) failed"
    echo "$out" | tee -a "$results"
    echo "load average after $1: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results"
}
figure() { # KEY
    grep -o "[[:space:]]$1=[0-9.]*" "$results" | tail -n 1 | cut -d= -f2
}
check_ms() { # how long one conservation check takes (the monitor's two views)
    local t0 t1
    t0=$(date +%s%N)
    esc_psql "SELECT count(*) FROM conservation WHERE NOT ok" >/dev/null
    esc_psql "SELECT count(*) FROM segment_holds_agree WHERE NOT ok" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
holds_bytes() {
    esc_psql "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i
              JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'holds'::regclass"
}

esc_step "1. the empty table"
measure empty empty
empty_check_ms=$(check_ms)

esc_step "2. fill: $holds ended holds over the 7 days of the window (one INSERT per day)"
t0=$SECONDS
window=$(esc_psql "SELECT window_days FROM retention_settings")
bytes0=$(holds_bytes)
per_day=$((holds / window))
# the window's past days get their own partitions (a run only makes today and
# ahead): without them every row would land in holds_default
esc_psql "SELECT escrow_partitions_ensure(escrow_today() - $window, escrow_today() - 1)" >/dev/null
for ((d = window; d >= 1; d--)); do
    # key order = hold id order = time order: every index grows at its right end
    esc_psql "INSERT INTO holds (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, qty_sold,
                  state, expires_at, extended, idempotency_key, request_hash, epoch, created_at,
                  ended_at, created_day)
              SELECT ((8000000 - $d)::bigint << 40) + n, '$tenant', 'history', 8000000 - $d,
                     'buyer-' || (n % 100000), 1, 1, 'converted', at + interval '10 min', false,
                     k, n, 1, at, at + interval '1 min', escrow_today() - $d
              FROM (SELECT k, n, (escrow_today() - $d)::timestamp AT TIME ZONE 'UTC'
                              + (n * 86400.0 / $per_day) * interval '1 second' AS at
                    FROM (SELECT k, row_number() OVER (ORDER BY k) AS n
                          FROM (SELECT md5(i::text || '/' || $d) AS k
                                FROM generate_series(1, $per_day) i) g) s) t" >/dev/null
    echo "  day -$d: $per_day holds (total $(((window - d + 1) * per_day)), $((SECONDS - t0)) s)"
done
esc_psql "VACUUM (ANALYZE) holds" >/dev/null
filled=$((per_day * window))
bytes1=$(holds_bytes)
echo "BENCH fill_holds=$filled fill_s=$((SECONDS - t0))" | tee -a "$results"
[[ $(esc_psql "SELECT count(*) FROM holds_default") == 0 ]] ||
    esc_fail "the fill went to holds_default: the day partitions are missing"

esc_step "3. the table with $filled ended holds"
measure full full
full_check_ms=$(check_ms)

esc_step "results"
e_tps=$(figure empty_ok_s) f_tps=$(figure full_ok_s)
e_p99=$(figure empty_ok_p99_ms) f_p99=$(figure full_ok_p99_ms)
python3 - "$e_tps" "$f_tps" "$e_p99" "$f_p99" "$filled" "$bytes0" "$bytes1" "$empty_check_ms" \
    "$full_check_ms" <<'PY' | tee -a "$results"
import sys
e_tps, f_tps, e_p99, f_p99 = (float(x) for x in sys.argv[1:5])
filled, b0, b1, ce, cf = (int(x) for x in sys.argv[5:10])
print(f"durable holds/s  empty {e_tps:,.0f}  full {f_tps:,.0f}  ratio {f_tps / e_tps:.2f} (target >= 0.8)")
print(f"p99 ms           empty {e_p99:.1f}  full {f_p99:.1f}  ratio {f_p99 / e_p99:.2f}")
print(f"disk per million ended holds: {(b1 - b0) / filled * 1e6 / 2**20:.0f} MiB (tables and indexes)")
print(f"one conservation check (monitor): empty {ce} ms, full {cf} ms")
print(f"RESULT ratio_tps={f_tps / e_tps:.3f} ratio_p99={f_p99 / e_p99:.3f} "
      f"mib_per_million={(b1 - b0) / filled * 1e6 / 2**20:.1f}")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
