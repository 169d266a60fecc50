#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# profile_hold.sh - where one durable hold's time goes: the bench's durable
# phase (escrow, 1 node, one hot item in 8 segments, 512 in flight) on a
# private PostgreSQL with pg_stat_statements, the statistics reset just
# before a counted run of ESC_PROFILE_HOLDS holds and read just after.
# A profile, not a test: it prints figures and asserts nothing about them.
#
#   make bench-profile
#   ESC_BIN=build/bin tests/support/profile_hold.sh
#
# It prints, per hold (holds = the run's successful reserves):
#   - WAL: records, full-page images and bytes (pg_stat_wal, all of the
#     server's WAL in the run: the nodes' heartbeats are in it too), and the
#     WAL flushes: how many, the holds per flush, the time per fsync
#     (track_wal_io_timing) - the floor under every commit;
#   - rows written in the hot tables (pg_stat_user_tables: inserts, updates,
#     of which HOT updates) and each table's index count;
#   - the top statements by execution time (pg_stat_statements, track = all:
#     the statements inside the commit function show one by one, and the
#     function's own line includes them): calls, time and WAL of each, per
#     hold;
#   - CPU: the node's and PostgreSQL's (postmaster and backends) utime +
#     stime over the run, per hold (escrow-bench --pids/--pg-pid);
#   - with perf (Debian's linux-perf) and ESC_PROFILE_PERF != 0: the hottest
#     functions of the node and of the PostgreSQL backends (perf record -g
#     at 499 Hz on their pids during the run, perf report --no-children).
# Knobs: ESC_PROFILE_HOLDS (200000) ESC_PROFILE_WARMUP (20000 holds before
# the reset) ESC_PROFILE_INFLIGHT (512) ESC_PROFILE_PERF (1) ESC_PROFILE_DIR
# (logs and the perf data; default a fresh /tmp/escrow-profile.XXXXXX, kept).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/lib.sh"

holds=${ESC_PROFILE_HOLDS:-200000}
warmup=${ESC_PROFILE_WARMUP:-20000}
inflight=${ESC_PROFILE_INFLIGHT:-512}
use_perf=${ESC_PROFILE_PERF:-1}
tenant=bench
for v in "$holds" "$warmup" "$inflight"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || esc_fail "ESC_PROFILE_HOLDS, _WARMUP and _INFLIGHT must be positive integers"
done
for b in escrow-bench escrow-segment escrow-coordinator escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}' (build first: make bench-profile)"
done
dir=${ESC_PROFILE_DIR:-$(mktemp -d /tmp/escrow-profile.XXXXXX)}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "profile: $holds holds after $warmup of warm-up, $inflight in flight; logs in $dir"
echo "MACHINE: load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"

# postgresql.conf lines for pg.sh: the quotes are meant for the file
# shellcheck disable=SC2089,SC2090
ESC_PG_CONF_EXTRA="shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
track_wal_io_timing = on
log_checkpoints = on"
# shellcheck disable=SC2090
export ESC_PG_CONF_EXTRA

esc_step "a local cluster: private PostgreSQL with pg_stat_statements, coordinator, 1 node"
esc_cluster_start "$dir/cluster" --nodes 1
esc_psql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
pg_pid=$(head -n 1 "$ESC_PG_DIR/data/postmaster.pid")
n1_pid=$(esc_cluster_node_pid n1)

segments_served() {
    [[ $(esc_psql "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
                   WHERE s.tenant_id = '$tenant' AND s.item_id = 'prof' AND n.state = 'up'
                   AND s.epoch > 0") == 8 ]]
}
esc_ctl item create "$tenant" prof --total "$((2 * (holds + warmup)))" --segments 8 \
    --hold-ttl-ms 600000 >/dev/null
esc_ctl tenant limits "$tenant" --rate 0 >/dev/null
esc_wait_for 60 segments_served || esc_fail "item prof was not placed within 60 s"

run() { # COUNT LABEL [escrow-bench options]
    local count=$1 label=$2
    shift 2
    "$ESC_BIN/escrow-bench" escrow --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
        --tenant "$tenant" --item prof --ttl-ms 600000 --inflight "$inflight" --count "$count" \
        --key-prefix "$label" --label "$label" "$@"
}

esc_step "warm-up: $warmup holds"
run "$warmup" warm >"$dir/warmup.txt" || esc_fail "the warm-up run failed"

esc_step "the profiled run: $holds holds (statistics reset first)"
esc_psql "SELECT pg_stat_statements_reset(); SELECT pg_stat_reset_shared('wal');
          SELECT pg_stat_reset()" >/dev/null
perf_pids=()
if [[ $use_perf != 0 ]] && command -v perf >/dev/null; then
    backends=$(pgrep -d, -P "$pg_pid" || true)
    perf record -q -F 499 -g -o "$dir/perf-node.data" -p "$n1_pid" >"$dir/perf-node.log" 2>&1 &
    perf_pids+=($!)
    perf record -q -F 499 -g -o "$dir/perf-pg.data" -p "$backends" >"$dir/perf-pg.log" 2>&1 &
    perf_pids+=($!)
    sleep 1 # perf attaches
elif [[ $use_perf != 0 ]]; then
    echo "note: perf is not installed (Debian: linux-perf); no function profile"
fi
line=$(run "$holds" prof --pids "$n1_pid" --pg-pid "$pg_pid") || esc_fail "the profiled run failed"
for p in "${perf_pids[@]}"; do
    kill -INT "$p" 2>/dev/null || true
done
for p in "${perf_pids[@]}"; do
    wait "$p" 2>/dev/null || true
done
echo "$line" | tee "$dir/run.txt"
# Backends hand their table and WAL counters to the statistics system when
# idle, at the latest PGSTAT_IDLE_INTERVAL (10 s) later; pg_stat_statements
# counts at once.
sleep 11

figure() { grep -o "[[:space:]]prof_$1=[0-9.]*" <<<"$line" | cut -d= -f2; }
ok=$(figure holds)
[[ -n $ok && $ok -gt 0 ]] || esc_fail "the profiled run took no hold"

esc_step "per hold ($ok holds, $(figure ok_s) holds/s, p99 $(figure ok_p99_ms) ms)"
esc_psql "SELECT format('WAL per hold: %s records, %s full-page images, %s bytes (run: %s records, %s)',
                        round(wal_records::numeric / $ok, 2), round(wal_fpi::numeric / $ok, 3),
                        round(wal_bytes / $ok, 0), wal_records, pg_size_pretty(wal_bytes))
          FROM pg_stat_wal" | tee "$dir/profile.txt"
esc_psql "SELECT format('WAL flushes: %s (%s holds each), %s ms per fsync on average, %s ms per write',
                        wal_sync, round($ok::numeric / greatest(wal_sync, 1), 1),
                        round((wal_sync_time / greatest(wal_sync, 1))::numeric, 2),
                        round((wal_write_time / greatest(wal_write, 1))::numeric, 3))
          FROM pg_stat_wal" | tee -a "$dir/profile.txt"
echo "CPU per hold: node $(figure cpu_us_per_hold) us, PostgreSQL $(figure pg_cpu_us_per_hold) us" |
    tee -a "$dir/profile.txt"
{
    echo
    echo "rows written per hold, by table (pg_stat_user_tables; indexes: the table's index count)"
    esc_psql "SELECT format('  %-24s ins %6s  upd %6s  (HOT %6s)  del %6s  indexes %s', t.relname,
                            round(n_tup_ins::numeric / $ok, 3), round(n_tup_upd::numeric / $ok, 3),
                            round(n_tup_hot_upd::numeric / $ok, 3), round(n_tup_del::numeric / $ok, 3),
                            (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid))
              FROM pg_stat_user_tables t WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
              ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC LIMIT 10"
    echo
    echo "top statements by execution time (pg_stat_statements; per hold: calls, us, WAL records, bytes)"
    esc_psql "SELECT format('  %8s calls %8s us %6s rec %7s B  %s',
                            round(calls::numeric / $ok, 3), round((total_exec_time * 1000 / $ok)::numeric, 2),
                            round(wal_records::numeric / $ok, 2), round(wal_bytes / $ok, 0),
                            left(regexp_replace(query, '\s+', ' ', 'g'), 90))
              FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12"
} | tee -a "$dir/profile.txt"

perf_top() { # DATA TITLE
    [[ -s $1 ]] || return 0
    echo
    echo "$2 (perf report --no-children, functions above 1.5%)"
    perf report -i "$1" --no-children --stdio --sort dso,symbol --percent-limit 1.5 -g none 2>/dev/null |
        grep -v -e '^#' -e '^$' | head -n 25
}
{
    perf_top "$dir/perf-node.data" "the node's hottest functions"
    perf_top "$dir/perf-pg.data" "PostgreSQL backends' hottest functions"
} | tee -a "$dir/profile.txt"

esc_cluster_stop "$dir/cluster" >/dev/null || true
echo "profile: done; $dir/profile.txt"
