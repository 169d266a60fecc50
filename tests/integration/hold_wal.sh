#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hold_wal.sh - a database upgraded under live data keeps its holds, and the
# WAL one hold and one confirm cost, exactly.
#
# A private PostgreSQL gets the migrations up to the one before the newest
# (psql, recorded in schema_migrations as escrowctl records them), then
# batches of escrow_commit_batch() calls as a node makes them: reserves of
# ESC_WAL_BATCH holds each, then their confirms. The WAL of each phase is
# read back with pg_walinspect (pg_get_wal_stats between the insert LSNs
# before and after): records and bytes per hold, by record type - a figure
# that does not depend on the machine's speed or load. Then `escrowctl
# migrate` brings the database to the newest migration with live holds in
# it, and the same phases run again. Asserted (exact numbers):
#   - after the upgrade the old live holds confirm (every one), a retry of an
#     old idempotency key is a duplicate with the old hold id, a retry of a
#     key in the same batch twice is one hold and one duplicate, a hold id
#     used twice fails the batch with holds' primary key named;
#   - every segment's counters agree with its holds (segment_holds_agree)
#     and every hold has its events ('held', 'converted') in the outbox, in
#     feed order (txid, event_id) one transaction per batch.
# The WAL figures are printed ("WAL before ..."/"WAL after ..."), not asserted.
#
#   ESC_BIN=build/bin tests/integration/hold_wal.sh
# Knobs: ESC_WAL_BATCHES (20 batches per phase), ESC_WAL_BATCH (200 holds).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"

batches=${ESC_WAL_BATCHES:-20}
size=${ESC_WAL_BATCH:-200}
for v in "$batches" "$size"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || esc_fail "hold_wal: ESC_WAL_BATCHES and ESC_WAL_BATCH must be positive integers"
done
src=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
[[ -x ${ESC_BIN:-}/escrowctl ]] || esc_fail "hold_wal: no escrowctl in ESC_BIN='${ESC_BIN:-}'"
work=$(mktemp -d /tmp/escrow-hold-wal.XXXXXX)
esc_on_exit "rm -rf '$work'"

esc_pg_start || esc_fail "hold_wal: cannot start PostgreSQL"
psql_f() { "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 "$@"; }

mapfile -t files < <(find "$src/common/schema/migrations" -name '[0-9][0-9][0-9][0-9]_*.sql' | sort)
((${#files[@]} >= 2)) || esc_fail "hold_wal: fewer than two migrations"
prev=$(basename "${files[-2]}" .sql)
newest=$(basename "${files[-1]}" .sql)
esc_step "the schema up to $prev (psql), as a database of the previous release"
esc_psql "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now())" >/dev/null
for f in "${files[@]:0:${#files[@]}-1}"; do
    name=$(basename "$f" .sql)
    psql_f -1 -f "$f" >/dev/null || esc_fail "hold_wal: migration $name failed"
    esc_psql "INSERT INTO schema_migrations (version, name) VALUES (${name%%_*}::integer, '$name')" >/dev/null
done
esc_psql "CREATE EXTENSION pg_walinspect" >/dev/null
seg=$(esc_psql "INSERT INTO tenants (tenant_id) VALUES ('t');
                INSERT INTO items (tenant_id, item_id, total, unallocated) VALUES ('t', 'i', 1000000000, 0);
                INSERT INTO segments (tenant_id, item_id, seg_no, epoch, available)
                VALUES ('t', 'i', 0, 1, 1000000000) RETURNING segment_id")

batch_id=0
# One batch of SIZE reserves: hold sequence numbers LO.., keys RUN-KEYLO..
# (KEYLO = LO unless given). Prints "none" (no row: every hold is new) or
# "OUTCOME COUNT".
reserve_sql() { # RUN LO [KEYLO]
    local run=$1 lo=$2 n=$size
    local hi=$((lo + n)) klo=${3:-$2}
    batch_id=$((batch_id + 1))
    cat <<SQL
SELECT COALESCE(min(o_outcome) || ' ' || count(*), 'none') FROM escrow_commit_batch($batch_id,
  '{$seg}', '{1}', '{-$n}', '{$n}', '{0}', '{$hi}',
  ARRAY(SELECT ($seg::bigint << 40) | g FROM generate_series($lo, $((hi - 1))) g),
  array_fill($seg::bigint, ARRAY[$n]), array_fill('t'::text, ARRAY[$n]),
  array_fill('i'::text, ARRAY[$n]), ARRAY(SELECT 'buyer-' || g FROM generate_series($lo, $((hi - 1))) g),
  array_fill(1, ARRAY[$n]), ARRAY(SELECT '$run-' || g FROM generate_series($klo, $((klo + n - 1))) g),
  array_fill(0::bigint, ARRAY[$n]),
  array_fill((extract(epoch FROM now()) * 1000)::bigint + 600000, ARRAY[$n]),
  array_fill(0, ARRAY[$n]), array_fill(1::bigint, ARRAY[$n]),
  '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}');
SQL
}
# One batch confirming the SIZE holds from sequence number LO (one unit each).
confirm_sql() { # LO
    local lo=$1 n=$size
    batch_id=$((batch_id + 1))
    cat <<SQL
SELECT count(*) FROM escrow_commit_batch($batch_id,
  '{$seg}', '{1}', '{0}', '{-$n}', '{$n}', '{$((lo + n))}',
  '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
  ARRAY(SELECT ($seg::bigint << 40) | g FROM generate_series($lo, $((lo + n - 1))) g),
  array_fill('converted'::text, ARRAY[$n]), array_fill(1, ARRAY[$n]),
  array_fill(0::bigint, ARRAY[$n]), array_fill(''::text, ARRAY[$n]),
  '{}', '{}', '{}', '{}');
SQL
}

# Runs the SQL file as a node does (one transaction per batch), then prints
# the WAL between the LSNs before and after, per hold: total, then by record
# type (the larger ones).
measure() { # LABEL FILE HOLDS
    local label=$1 file=$2 holds=$3 lsn0 lsn1
    lsn0=$(esc_psql "SELECT pg_current_wal_insert_lsn()")
    psql_f -f "$file" >"$file.out" || esc_fail "hold_wal: $label: a batch failed"
    lsn1=$(esc_psql "SELECT pg_current_wal_insert_lsn()")
    esc_psql "SELECT format('%s: %s records, %s bytes (of which full-page images %s) per hold ($holds holds)',
                            '$label', round(sum(count)::numeric / $holds, 2),
                            round(sum(combined_size)::numeric / $holds, 0),
                            round(sum(fpi_size)::numeric / $holds, 0))
              FROM pg_get_wal_stats('$lsn0', '$lsn1', false)" | tee -a "$work/wal.txt"
    esc_psql "SELECT format('    %-24s %6s rec %6s B', \"resource_manager/record_type\",
                            round(count::numeric / $holds, 2),
                            round(combined_size::numeric / $holds, 0))
              FROM pg_get_wal_stats('$lsn0', '$lsn1', true)
              WHERE count::numeric / $holds >= 0.02 ORDER BY count DESC, 1" |
        tee -a "$work/wal.txt"
}

phase() { # TAG RUN LO: warm-up batch, then measured reserves and confirms
    local tag=$1 run=$2 lo=$3 b holds=$((batches * size))
    { reserve_sql "$run-w" "$lo" && confirm_sql "$lo"; } >"$work/warm.sql"
    psql_f -f "$work/warm.sql" >/dev/null || esc_fail "hold_wal: $tag: the warm-up batch failed"
    lo=$((lo + size))
    : >"$work/reserve.sql"
    : >"$work/confirm.sql"
    for ((b = 0; b < batches; b++)); do
        reserve_sql "$run" $((lo + b * size)) >>"$work/reserve.sql"
        confirm_sql $((lo + b * size)) >>"$work/confirm.sql"
    done
    measure "WAL $tag ${prev%%_*}->${newest%%_*}: reserve" "$work/reserve.sql" "$holds"
    [[ $(sort -u "$work/reserve.sql.out") == none ]] ||
        esc_fail "hold_wal: $tag: a reserve batch did not make $size new holds: $(sort -u "$work/reserve.sql.out")"
    measure "WAL $tag: confirm" "$work/confirm.sql" "$holds"
    [[ $(sort -u "$work/confirm.sql.out") == 0 ]] ||
        esc_fail "hold_wal: $tag: a confirm batch answered rows: $(sort -u "$work/confirm.sql.out")"
}

esc_step "before: $batches batches of $size reserves, then their confirms, on $prev"
phase before a 1
next=$((1 + (batches + 1) * size))

esc_step "live holds across the upgrade: $size held, not confirmed"
reserve_sql live "$next" >"$work/live.sql"
[[ $(psql_f -f "$work/live.sql") == none ]] || esc_fail "hold_wal: the live holds were not made"
live_lo=$next
next=$((next + size))

esc_step "escrowctl migrate: $prev -> $newest with the live holds in the database"
"$ESC_BIN/escrowctl" migrate >"$work/migrate.out" 2>&1 || esc_fail "hold_wal: escrowctl migrate: $(cat "$work/migrate.out")"
esc_assert_eq "$(esc_psql "SELECT max(version) FROM schema_migrations")" "$((10#${newest%%_*}))" "migrated to $newest"

esc_step "after: the same batches on $newest"
phase after b "$next"
next=$((next + (batches + 1) * size))

esc_step "the live holds of before the upgrade confirm; their keys are still taken"
confirm_sql "$live_lo" >"$work/c.sql"
esc_assert_eq "$(psql_f -f "$work/c.sql")" 0 "the old live holds confirmed (no row: no divergence)"
# the same keys again, under new hold ids (a retry reaches a node with other ids)
reserve_sql live "$next" "$live_lo" >"$work/dup.sql"
next=$((next + size))
esc_assert_eq "$(psql_f -f "$work/dup.sql")" "duplicate $size" "a retry of an old key is a duplicate"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'live-%'")" "$size" \
    "no second hold for an old key"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'live-%' AND state = 'converted'")" \
    "$size" "the old live holds are converted"

esc_step "one key twice in one batch: one hold, one duplicate"
batch_id=$((batch_id + 1))
out=$(esc_psql "SELECT string_agg(o_outcome, ',' ORDER BY o_outcome) FROM escrow_commit_batch($batch_id,
  '{$seg}', '{1}', '{-2}', '{2}', '{0}', '{$((next + 2))}',
  ARRAY[($seg::bigint << 40) | $next, ($seg::bigint << 40) | $((next + 1))], '{$seg,$seg}', '{t,t}',
  '{i,i}', '{x,x}', '{1,1}', '{twice,twice}', '{0,0}',
  ARRAY[(extract(epoch FROM now()) * 1000)::bigint + 600000, (extract(epoch FROM now()) * 1000)::bigint + 600000],
  '{0,0}', '{1,1}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')")
esc_assert_eq "$out" "duplicate" "the second of two equal keys in a batch"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds WHERE idempotency_key = 'twice'")" 1 "one hold for the key"

esc_step "a hold id used twice fails the batch, naming holds' primary key (the node checks the name)"
batch_id=$((batch_id + 1))
rc=0
out=$(psql_f -c "SELECT count(*) FROM escrow_commit_batch($batch_id,
  '{$seg}', '{1}', '{-1}', '{1}', '{0}', '{$((next + 2))}',
  ARRAY[($seg::bigint << 40) | $next], '{$seg}', '{t}', '{i}', '{x}', '{1}', '{fresh}', '{0}',
  ARRAY[(extract(epoch FROM now()) * 1000)::bigint + 600000], '{0}', '{1}',
  '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')" 2>&1) || rc=$?
[[ $rc != 0 && $out == *'"holds_p'*'_pkey"'* ]] || esc_fail "hold_wal: a reused hold id: rc $rc, $out"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds WHERE idempotency_key = 'fresh'")" 0 "nothing of that batch"

esc_step "counters agree with the holds, and every hold has its events in feed order"
esc_assert_eq "$(esc_psql "SELECT count(*) FILTER (WHERE NOT ok) || '/' || count(*) FROM segment_holds_agree")" \
    "0/1" "segment_holds_agree"
esc_assert_eq "$(esc_psql "SELECT held || ' ' || sold FROM segments WHERE segment_id = $seg")" \
    "1 $((2 * (batches + 1) * size + size))" "segment counters: the 'twice' hold live, every other sold"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds h WHERE NOT EXISTS (
                              SELECT 1 FROM outbox o WHERE o.hold_id = h.hold_id AND o.kind = 'held')
                            OR (h.state = 'converted' AND NOT EXISTS (
                              SELECT 1 FROM outbox o WHERE o.hold_id = h.hold_id AND o.kind = 'converted'))")" \
    0 "holds without their events"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM outbox WHERE kind IN ('held', 'converted')")" \
    "$((2 * (2 * (batches + 1) * size + size) + 1))" "events: one per reserve and one per confirm"
# Feed order: the events of one transaction are contiguous in (txid, event_id)
# and a later batch's transaction sorts after an earlier one's.
esc_assert_eq "$(esc_psql "SELECT count(*) FROM (
                  SELECT event_id, lag(txid) OVER w AS ptx, lag(event_id) OVER w AS pev
                  FROM outbox WINDOW w AS (ORDER BY txid, event_id)) x
                WHERE ptx IS NOT NULL AND event_id < pev")" 0 \
    "feed order agrees with the order of the batches"
echo "hold_wal: ok; figures in $work/wal.txt:"
cat "$work/wal.txt"
