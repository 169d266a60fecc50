#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# history_bench.sh - does history slow the commit path? Durable holds/s and
# p99 with an empty holds table, then, in the same run on the same private
# PostgreSQL (fsync and synchronous_commit on), with the holds table
# pre-filled with ESC_HIST_HOLDS (20,000,000) ended holds spread over the
# days of the idempotency window (which escrow_commit_batch searches for
# every new key). Prints the ratio full/empty (the target is >= 0.8),
# PostgreSQL's CPU per hold, disk per million holds, and how long one
# conservation check takes on each: the coordinator's invariant monitor
# (segment_holds_agree_recent: the days that retention closed are read from
# their sums) and escrowctl check's full audit (segment_holds_agree: every
# hold). A benchmark, not a test: it asserts nothing about the figures.
#
#   make bench-history [ROWS=N]        build (no sanitizers) and run this
#   ESC_BIN=build/bin tests/support/history_bench.sh
#
# The commit path alone: one node in static mode, no coordinator (the
# monitor's cost is printed separately). escrow-bench talks to the node directly, every hold
# durable before it is answered, ESC_HIST_INFLIGHT (512) in flight, random-
# looking idempotency keys (--key-order hashed, as a shop's UUIDs: a new key
# lands on a random page of each partition's key indexes). The fill makes each
# partition that holds days of the window (holds_part_days days each) as a
# plain table (INSERT ... SELECT generate_series, then its indexes, VACUUM),
# ESC_HIST_JOBS at a time, and puts it in the partition's place; the
# history's keys are md5 strings, spread over the same key space as the
# measured ones.
#
# Both measurements start from the same steady state, the one a shop's
# database has between sales (its history old, vacuumed, checkpointed):
# CHECKPOINT (the fill's gigabytes are written before, not during, the
# measured commits' fsyncs), autovacuum idle, then a warm-up run of
# ESC_HIST_WARMUP_S that is not counted (the pages the commit path reads
# are in shared_buffers, as after minutes of selling); the script prints
# what it did. PostgreSQL's memory is sized as docs/postgresql.md advises
# for production (shared_buffers 25% of RAM, effective_cache_size 70%),
# not the tests' 256MB. ESC_HIST_STATEMENTS=1 also loads pg_stat_statements
# and writes, per measurement, the statements by time, which key index the
# look-ups used, and EXPLAIN (ANALYZE, BUFFERS) of the key look-up.
# Knobs: ESC_HIST_HOLDS (20000000) ESC_HIST_SECONDS (30) ESC_HIST_WARMUP_S
# (15) ESC_HIST_INFLIGHT (512) ESC_HIST_JOBS (2) ESC_HIST_SHARED_BUFFERS
# (25% of RAM) ESC_HIST_STATEMENTS (0) ESC_HIST_PART_DAYS (the schema's
# holds_part_days, 7; 1 = a partition per day, as before schema 0019)
# ESC_HIST_DIR (logs; default a fresh /tmp/escrow-hist.XXXXXX, kept).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/lib.sh"

holds=${ESC_HIST_HOLDS:-20000000}
seconds=${ESC_HIST_SECONDS:-30}
warmup=${ESC_HIST_WARMUP_S:-15}
mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
shared_buffers=${ESC_HIST_SHARED_BUFFERS:-$((mem_mb / 4))MB}
inflight=${ESC_HIST_INFLIGHT:-512}
jobs=${ESC_HIST_JOBS:-2}
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
# Memory as docs/postgresql.md advises for production (shared_buffers 25% of
# RAM, effective_cache_size 70%), not the test clusters' 256MB: whether the
# window's key indexes fit in shared_buffers is what this measures.
ESC_PG_CONF_EXTRA="shared_buffers = $shared_buffers
effective_cache_size = $((mem_mb * 7 / 10))MB${ESC_PG_CONF_EXTRA:+
$ESC_PG_CONF_EXTRA}"
if [[ ${ESC_HIST_STATEMENTS:-0} == 1 ]]; then
    ESC_PG_CONF_EXTRA+="
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all"
fi
export ESC_PG_CONF_EXTRA
esc_pg_start
if [[ ${ESC_HIST_STATEMENTS:-0} == 1 ]]; then
    esc_psql "CREATE EXTENSION pg_stat_statements" >/dev/null
fi
echo "PostgreSQL: shared_buffers $(esc_psql "SHOW shared_buffers"), effective_cache_size $(esc_psql "SHOW effective_cache_size") (RAM ${mem_mb} MB)"
for setting in fsync synchronous_commit; do
    [[ $(esc_psql "SHOW $setting") == on ]] || esc_fail "PostgreSQL has $setting off"
done
esc_ctl migrate >"$dir/migrate.log" 2>&1 || { cat "$dir/migrate.log"; esc_fail "migrate"; }
esc_psql "INSERT INTO tenants (tenant_id) VALUES ('$tenant') ON CONFLICT DO NOTHING" >/dev/null
if [[ -n ${ESC_HIST_PART_DAYS:-} ]]; then
    # another width: the (empty) partitions made ahead are made again with it
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 -f - >/dev/null <<SQL
UPDATE retention_settings SET holds_part_days = $ESC_HIST_PART_DAYS;
DO \$\$ DECLARE p record; BEGIN
    FOR p IN SELECT part FROM escrow_partition_spans() WHERE tbl = 'holds' AND lo IS NOT NULL LOOP
        EXECUTE format('DROP TABLE %I', p.part);
    END LOOP; END \$\$;
SELECT escrow_partitions_ensure(escrow_today(), escrow_today() + 7);
SQL
fi
for item in empty full; do
    esc_ctl item create "$tenant" "$item" --total 100000000 --segments 8 --node n1 \
        --hold-ttl-ms 600000 >/dev/null
done
# No rate cap, and no live-hold cap of the tenant's own (the default, 1,048,576
# per node, is what a quiet machine's warm-ups and measurements hold at once:
# the holds stay live for their 600 s): the node's own maximum still applies.
esc_ctl tenant limits "$tenant" --rate 0 --live-holds 0 >/dev/null
port=$(esc_free_port)
esc_node_start n1 "tcp://127.0.0.1:$port" "$dir/n1.log"
pg_pid=$(head -n 1 "$ESC_PG_DIR/data/postmaster.pid")

# A steady state before each measurement, the empty one too: what a shop's
# database has between sales. A checkpoint (the fill's dirty pages written,
# so its writeback does not slow the measured commits' fsyncs), autovacuum
# idle, then a warm-up run of $warmup s on the item that is not counted
# (today's partition and the indexes the commit path reads in memory, as
# after minutes of selling).
settle() { # LABEL ITEM
    local t=$SECONDS n
    esc_psql "CHECKPOINT" >/dev/null
    for ((n = 0; n < 600; n++)); do
        [[ $(esc_psql "SELECT count(*) FROM pg_stat_activity
                       WHERE backend_type = 'autovacuum worker'") == 0 ]] && break
        sleep 1
    done
    "$ESC_BIN/escrow-bench" escrow --endpoint "tcp://127.0.0.1:$port" --tenant "$tenant" \
        --item "$2" --ttl-ms 600000 --inflight "$inflight" --key-order hashed \
        --key-prefix "warm-$1" --label "warm_$1" --seconds "$warmup" \
        --warmup-ms 0 >"$dir/warmup-$1.txt" || esc_fail "escrow-bench (warm-up $1) failed"
    echo "settled ($1): CHECKPOINT, autovacuum idle after ${n} s, a ${warmup} s warm-up" \
        "run not counted ($(grep -o "warm_$1_ok_s=[0-9.]*" "$dir/warmup-$1.txt") holds/s)," \
        "$((SECONDS - t)) s in all" | tee -a "$results"
}
measure() { # LABEL ITEM
    local out
    settle "$1" "$2"
    if [[ ${ESC_HIST_STATEMENTS:-0} == 1 ]]; then
        esc_psql "SELECT pg_stat_statements_reset(), pg_stat_reset()" >/dev/null
    fi
    out=$("$ESC_BIN/escrow-bench" escrow --endpoint "tcp://127.0.0.1:$port" --tenant "$tenant" \
        --item "$2" --ttl-ms 600000 --inflight "$inflight" --key-order hashed \
        --key-prefix "$1" --pg-pid "$pg_pid" --label "$1" --seconds "$seconds" \
        --warmup-ms 2000) || esc_fail "escrow-bench ($1) failed"
    echo "$out" | tee -a "$results"
    local errors
    errors=$(grep -o "$1_errors=[0-9]*" <<<"$out" | cut -d= -f2)
    [[ ${errors:-1} == 0 ]] || esc_fail "$1: ${errors:-?} answers were errors (escrow-bench's" \
        "stderr above: BUSY is the node's live-hold maximum), so the figures mean nothing"
    if [[ ${ESC_HIST_STATEMENTS:-0} == 1 ]]; then
        statements >"$dir/statements-$1.txt"
        key_index_scans >>"$dir/statements-$1.txt"
        explain_lookup >"$dir/explain-$1.txt"
        echo "  per statement: $dir/statements-$1.txt, the key look-up: $dir/explain-$1.txt"
    fi
    echo "load average after $1: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results"
}
statements() { # the statements of the last measurement, by time (ESC_HIST_STATEMENTS=1)
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 -c "
        SELECT calls, round(total_exec_time::numeric, 0) AS total_ms,
               round((total_exec_time / calls * 1000)::numeric, 1) AS us_per_call,
               round(shared_blks_hit::numeric / calls, 1) AS hit_per_call,
               round(shared_blks_read::numeric / calls, 2) AS read_per_call,
               left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
        FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12"
}
explain_lookup() { # the commit function's look-up of 256 new keys in the window
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 -c "
        EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
        SELECT count(*) FROM unnest(array(SELECT md5('x' || random()::text)
                                         FROM generate_series(1, 256))) AS r(key)
        WHERE EXISTS (SELECT 1 FROM holds h
                      WHERE h.idempotency_key = r.key AND h.tenant_id = '$tenant' COLLATE \"C\"
                        AND h.created_day BETWEEN escrow_today() - $window AND escrow_today()
                      OFFSET 0)"
}
key_index_scans() { # which key index the look-ups used: scans since the last reset
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 -c "
        SELECT regexp_replace(indexrelname, '^holds_p[0-9]{8}_', '') AS index_kind,
               count(*) AS partitions, sum(idx_scan) AS scans
        FROM pg_stat_user_indexes
        WHERE relname ~ '^holds_p[0-9]{8}$' AND indexrelname ~ 'idempotency'
        GROUP BY 1 ORDER BY 1"
}
figure() { # KEY
    grep -o "[[:space:]]$1=[0-9.]*" "$results" | tail -n 1 | cut -d= -f2
}
check_ms() { # VIEW -> how long one conservation check with VIEW takes in PostgreSQL, ms
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 <<SQL |
\\timing on
SELECT count(*) FROM conservation WHERE NOT ok;
SELECT count(*) FROM $1 WHERE NOT ok;
SQL
        awk '/^Time:/ { t += $2 } END { printf "%d\n", t }'
}
holds_bytes() {
    esc_psql "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i
              JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'holds'::regclass"
}

window=$(esc_psql "SELECT window_days FROM retention_settings")
esc_step "1. the empty table"
measure empty empty
empty_check_ms=$(check_ms segment_holds_agree_recent)
empty_audit_ms=$(check_ms segment_holds_agree)

esc_step "2. fill: $holds ended holds over the $window days of the window ($jobs at a time)"
t0=$SECONDS
bytes0=$(holds_bytes)
per_day=$((holds / window))
# The partitions the window's past days belong to, as the schema lays them
# out (retention_settings.holds_part_days days each; the current one also
# holds today's rows, from the empty measurement).
width=$(esc_psql "SELECT holds_part_days FROM retention_settings")
esc_psql "SELECT escrow_partitions_ensure(escrow_today() - $window, escrow_today())" >/dev/null
mapfile -t spans < <(esc_psql "
    SELECT part || ' ' || (escrow_today() - GREATEST(lo, escrow_today() - $window)) || ' ' ||
           (escrow_today() - LEAST(hi - 1, escrow_today() - 1)) || ' ' || lo || ' ' || hi
    FROM escrow_partition_spans()
    WHERE tbl = 'holds' AND hi > escrow_today() - $window AND lo < escrow_today() ORDER BY lo")
echo "holds partitions of $width days: ${#spans[@]} hold the window's past days"
# One partition: a plain table shaped like holds, filled by one INSERT ...
# SELECT generate_series per day without an index (and the rows the
# partition has already), then its indexes built in one pass each, vacuumed
# (hint bits, visibility map: as a settled day is); then, one after the
# other, it takes the partition's place (detach, drop, attach: the CHECK
# spares ATTACH its scan). Partitions run $jobs at a time.
fill_part() { # PARTITION OLDEST_DAYS_AGO NEWEST_DAYS_AGO LO HI
    local p=$1 f=${1}_fill
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 -f - >/dev/null <<SQL
SET maintenance_work_mem = '512MB';
BEGIN;
CREATE TABLE $f (LIKE holds INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    CONSTRAINT ${f}_span CHECK (created_day >= '$4' AND created_day < '$5'));
INSERT INTO $f (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, qty_sold, state,
    expires_at, extended, idempotency_key, request_hash, epoch, created_at, ended_at, created_day)
SELECT ((8000000 - d)::bigint << 40) + n, '$tenant', 'history', 8000000 - d,
       'buyer-' || (n % 100000), 1, 1, 'converted', at + interval '10 min', false,
       md5(n::text || '/' || d), n, 1, at, at + interval '1 min', escrow_today() - d
FROM (SELECT d, n, (escrow_today() - d)::timestamp AT TIME ZONE 'UTC'
                   + (n * 86400.0 / $per_day) * interval '1 second' AS at
      FROM generate_series($3, $2) d, generate_series(1, $per_day) n) g;
INSERT INTO $f SELECT * FROM $p;
COMMIT;
ALTER TABLE $f ADD CONSTRAINT ${p}_pk PRIMARY KEY (hold_id, created_day),
    ADD CONSTRAINT ${p}_idempotency_key UNIQUE (tenant_id, idempotency_key, created_day);
CREATE INDEX ${p}_idempotency_hash ON $f USING hash (idempotency_key);
CREATE INDEX ${p}_live ON $f (segment_id) WHERE state = 'held';
CREATE INDEX ${p}_ended ON $f (segment_id, ended_at) WHERE state <> 'held';
CREATE INDEX ${p}_day_brin ON $f USING brin (created_day);
VACUUM (ANALYZE) $f;
SQL
    echo "  $p (days -$2 to -$3 of history): $((($2 - $3 + 1) * per_day)) holds ($((SECONDS - t0)) s)"
}
fills=() # the partitions being filled, oldest first (the node is a job too)
for span in "${spans[@]}"; do
    if ((${#fills[@]} >= jobs)); then
        wait "${fills[0]}" || esc_fail "the fill of a partition failed"
        fills=("${fills[@]:1}")
    fi
    # shellcheck disable=SC2086 # one span: five words
    fill_part $span &
    fills+=($!)
done
for pid in "${fills[@]}"; do
    wait "$pid" || esc_fail "the fill of a partition failed"
done
for span in "${spans[@]}"; do
    read -r p _ _ lo hi <<<"$span"
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 -f - >/dev/null <<SQL
BEGIN;
ALTER TABLE holds DETACH PARTITION $p;
DROP TABLE $p;
ALTER TABLE ${p}_fill RENAME TO $p;
ALTER TABLE holds ATTACH PARTITION $p FOR VALUES FROM ('$lo') TO ('$hi');
COMMIT;
SQL
done
# the days that ended an hour ago are closed, as a retention run would: the
# coordinator's monitor then reads only today's holds (and yesterday's, from
# midnight to 01:00 UTC)
esc_psql "SELECT escrow_holds_close()" >/dev/null
esc_psql "ANALYZE holds" >/dev/null
filled=$((per_day * window))
bytes1=$(holds_bytes)
echo "BENCH fill_holds=$filled fill_s=$((SECONDS - t0))" | tee -a "$results"
[[ $(esc_psql "SELECT count(*) FROM holds_default") == 0 ]] ||
    esc_fail "the fill went to holds_default: the day partitions are missing"

esc_step "3. the table with $filled ended holds"
measure full full
full_check_ms=$(check_ms segment_holds_agree_recent)
full_audit_ms=$(check_ms segment_holds_agree)

esc_psql "SELECT regexp_replace(c.relname, '^holds_p[0-9]{8}_', '') AS index_kind,
                  pg_size_pretty(sum(pg_relation_size(c.oid))) AS size
           FROM pg_class c WHERE c.relkind = 'i' AND c.relname ~ '^holds_p[0-9]{8}_'
           GROUP BY 1 ORDER BY 1" | sed 's/^/index size: /' | tee -a "$results"
esc_step "results"
e_tps=$(figure empty_ok_s) f_tps=$(figure full_ok_s)
e_p99=$(figure empty_ok_p99_ms) f_p99=$(figure full_ok_p99_ms)
e_cpu=$(figure empty_pg_cpu_us_per_hold) f_cpu=$(figure full_pg_cpu_us_per_hold)
python3 - "$e_tps" "$f_tps" "$e_p99" "$f_p99" "$e_cpu" "$f_cpu" "$filled" "$bytes0" "$bytes1" "$empty_check_ms" \
    "$full_check_ms" "$empty_audit_ms" "$full_audit_ms" <<'PY' | tee -a "$results"
import sys
e_tps, f_tps, e_p99, f_p99, e_cpu, f_cpu = (float(x) for x in sys.argv[1:7])
filled, b0, b1, ce, cf, ae, af = (int(x) for x in sys.argv[7:14])
print(f"durable holds/s  empty {e_tps:,.0f}  full {f_tps:,.0f}  ratio {f_tps / e_tps:.2f} (target >= 0.8)")
print(f"p99 ms           empty {e_p99:.1f}  full {f_p99:.1f}  ratio {f_p99 / e_p99:.2f}")
print(f"PostgreSQL CPU per hold: empty {e_cpu:.1f} us  full {f_cpu:.1f} us")
print(f"disk per million ended holds: {(b1 - b0) / filled * 1e6 / 2**20:.0f} MiB (tables and indexes)")
print(f"one conservation check (the monitor's): empty {ce} ms, full {cf} ms")
print(f"one full audit (escrowctl check's): empty {ae} ms, full {af} ms")
print(f"RESULT ratio_tps={f_tps / e_tps:.3f} ratio_p99={f_p99 / e_p99:.3f} "
      f"mib_per_million={(b1 - b0) / filled * 1e6 / 2**20:.1f}")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
