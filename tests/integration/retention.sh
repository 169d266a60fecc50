#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# retention.sh - retention drops whole day partitions, exactly the ones its
# rules allow (docs/retention.md). Holds are made through a node, then aged
# in SQL (moved to past day partitions with their events); `escrowctl
# retention run` must drop exactly: the holds partitions older than the
# idempotency window without a live hold, the outbox partition older than
# the window that the feed consumer has read, and the outbox partition
# older than feed_max_days although unread (forced). Kept: a partition
# with a live hold, the window's partitions, an outbox partition the
# consumer has not read. Then: the live hold and the unread events are
# there, escrowctl check passes (holds_retired keeps the sold units), a
# retry inside the window gets its first outcome from an old partition
# (after a restart, so from the database), and a retry of a dropped key is
# a new request. The closed days: the monitor's view reads their sums and
# agrees with every hold. The coordinator runs retention on its schedule.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin retention
# The day checks below use partitions of one day (holds_part_days 1); the
# partitions of several days (the default, 7) are checked further down.
itest_q "UPDATE retention_settings SET holds_part_days = 1" >/dev/null
itest_q "DO \$\$ DECLARE p record; BEGIN
             FOR p IN SELECT part FROM escrow_partition_spans() WHERE tbl = 'holds' AND lo IS NOT NULL
             LOOP EXECUTE format('DROP TABLE %I', p.part); END LOOP; END \$\$" >/dev/null
itest_q "SELECT escrow_partitions_ensure(escrow_today(), escrow_today() + 7)" >/dev/null
esc_ctl item create t1 ret --total 100 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT"
EP=tcp://127.0.0.1:$PORT

reserve() { # KEY -> hold id
    local out
    out=$(itest_probe reserve --endpoint "$EP" --item ret --key "$1" --buyer "b-$1" --qty 2)
    [[ $(itest_status "$out") == OK ]] || esc_fail "retention: reserve $1: $out"
    itest_field hold "$out"
}
settle() { # confirm|release HOLD
    local out
    out=$(itest_probe "$1" --endpoint "$EP" --hold "$2")
    [[ $(itest_status "$out") == OK ]] || esc_fail "retention: $1 $2: $out"
}
day() { # DAYS_AGO -> YYYYMMDD
    itest_q "SELECT to_char(escrow_today() - $1, 'YYYYMMDD')"
}
age() { # DAYS_AGO KEY...: the holds of KEY and their events, DAYS_AGO days back
    local d=$1 keys
    shift
    keys=$(printf "'%s'," "$@")
    itest_q "UPDATE outbox SET day = day - $d, at = at - interval '$d days'
             WHERE hold_id IN (SELECT hold_id FROM holds WHERE idempotency_key IN (${keys%,}))" >/dev/null
    itest_q "UPDATE holds SET created_day = created_day - $d, created_at = created_at - interval '$d days',
             ended_at = ended_at - interval '$d days' WHERE idempotency_key IN (${keys%,})" >/dev/null
}

esc_step "holds: two ended long ago, one live, one ended inside the window, one ancient"
OLD1=$(reserve k-old-1)
OLD2=$(reserve k-old-2)
settle confirm "$OLD1"
settle release "$OLD2"
MID=$(reserve k-mid)
settle confirm "$MID"
LIVE=$(reserve k-live)
ANC=$(reserve k-ancient)
settle release "$ANC"
for d in 40 11 10 3; do
    itest_q "SELECT escrow_partitions_ensure(escrow_today() - $d, escrow_today() - $d)" >/dev/null
done
age 10 k-old-1 k-old-2
age 11 k-live
age 3 k-mid
age 40 k-ancient
# the consumer has read every event up to the last one of ten days ago
itest_q "INSERT INTO feed_consumers (tenant_id, consumer, cursor_txid, cursor_event_id)
         SELECT 't1', 'c1', txid, event_id FROM outbox_p$(day 10)
         ORDER BY txid DESC, event_id DESC LIMIT 1" >/dev/null
itest_eq "$(itest_q "SELECT count(*) FROM outbox_p$(day 11) o JOIN feed_consumers c
                     ON (o.txid, o.event_id) > (c.cursor_txid, c.cursor_event_id)")" 1 \
    "the live hold's event is after the cursor"

esc_step "escrowctl retention show, then run"
esc_ctl retention show >"$ITEST_DIR/show.txt" || esc_fail "retention: show failed"
cat "$ITEST_DIR/show.txt"
grep -q "holds_p$(day 11) .* keep .*1 live holds" "$ITEST_DIR/show.txt" ||
    esc_fail "retention: show does not say the live hold keeps its partition"
grep -q "outbox_p$(day 11) .* keep .*unread by t1/c1" "$ITEST_DIR/show.txt" ||
    esc_fail "retention: show does not name the consumer that holds a partition back"
esc_ctl --json retention run >"$ITEST_DIR/run.json" || esc_fail "retention: run failed"
dropped=$(python3 -c 'import json,sys; print(" ".join(sorted(r["partition"] for r in json.load(sys.stdin)["dropped"])))' <"$ITEST_DIR/run.json")
itest_eq "$dropped" "holds_p$(day 40) holds_p$(day 10) outbox_p$(day 40) outbox_p$(day 10)" "partitions dropped"
itest_eq "$(itest_q "SELECT string_agg(to_char(day, 'YYYYMMDD') || ':' || COALESCE(left(forced, 7), '-'), ' ' ORDER BY tbl, day)
                     FROM retention_log")" "$(day 40):- $(day 10):- $(day 40):forced: $(day 10):-" "retention_log"
itest_eq "$(itest_q "SELECT count(*) FROM pg_class WHERE relname IN ('holds_p$(day 11)', 'holds_p$(day 3)',
                     'outbox_p$(day 11)', 'outbox_p$(day 3)', 'holds_p$(day 0)', 'outbox_p$(day 0)')")" 6 \
    "the partitions kept"

esc_step "what survives"
itest_eq "$(itest_q "SELECT string_agg(idempotency_key || ':' || state, ' ' ORDER BY idempotency_key) FROM holds")" \
    "k-live:held k-mid:converted" "holds left"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE hold_id = $LIVE")" 1 "the live hold's unread event"
itest_eq "$(itest_q "SELECT holds || '/' || sold FROM holds_retired")" "3/2" "holds_retired (3 holds, 2 sold)"
esc_ctl check >"$ITEST_DIR/check.txt" || { cat "$ITEST_DIR/check.txt"; esc_fail "retention: escrowctl check after the run"; }

esc_step "retries, after a restart (the node's memory forgets ended holds of days ago)"
esc_node_stop "$ITEST_NODE_PID" || esc_fail "retention: the node did not stop cleanly"
itest_node n1 "$PORT"
out=$(itest_probe reserve --endpoint "$EP" --item ret --key k-mid --buyer b-k-mid --qty 2)
itest_eq "$(itest_status "$out") $(itest_field hold "$out") $(itest_field state "$out")" "OK $MID converted" \
    "a retry inside the window gets its first outcome"
out=$(itest_probe reserve --endpoint "$EP" --item ret --key k-old-1 --buyer b-k-old-1 --qty 2)
new=$(itest_field hold "$out")
[[ $(itest_status "$out") == OK && $new != "$OLD1" ]] ||
    esc_fail "retention: a retry older than the window should be a new request: $out"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'k-%'")" 3 "holds after the retries"
esc_ctl check >"$ITEST_DIR/check.txt" || { cat "$ITEST_DIR/check.txt"; esc_fail "retention: escrowctl check at the end"; }

esc_step "closed days: the monitor's view reads their sums and agrees with every hold"
# the first run closed the days up to the one with the live hold
itest_eq "$(itest_q "SELECT to_char(through, 'YYYYMMDD') FROM holds_closed_mark")" "$(day 12)" \
    "the last closed day (the live hold's day stops the closing)"
settle release "$LIVE"
esc_ctl retention run >/dev/null || esc_fail "retention: the second run failed"
itest_eq "$(itest_q "SELECT to_char(through, 'YYYYMMDD') FROM holds_closed_mark")" \
    "$(itest_q "SELECT to_char((now() AT TIME ZONE 'UTC' - interval '1 hour')::date - 1, 'YYYYMMDD')")" \
    "the last closed day (the last that ended an hour ago)"
itest_eq "$(itest_q "SELECT holds || '/' || sold FROM holds_closed")" "1/2" \
    "holds_closed (k-mid's day: 1 hold, 2 sold; the dropped days moved to holds_retired)"
itest_eq "$(itest_q "SELECT holds || '/' || sold FROM holds_retired")" "4/2" "holds_retired (and k-live)"
itest_eq "$(itest_q "SELECT count(*) FROM segment_holds_agree a JOIN segment_holds_agree_recent r USING (segment_id)
                     WHERE NOT r.ok OR (a.holds_live, a.holds_sold) IS DISTINCT FROM (r.holds_live, r.holds_sold)")" \
    0 "segments whose monitor view differs from their holds"
# the closed day's partition is pruned when the monitor's view runs
itest_q "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM segment_holds_agree_recent" \
    >"$ITEST_DIR/plan.txt"
grep -q "holds_p$(day 3) .*(never executed)" "$ITEST_DIR/plan.txt" &&
    grep -q "holds_p$(day 0) .*(actual rows=[1-9]" "$ITEST_DIR/plan.txt" ||
    { cat "$ITEST_DIR/plan.txt"; esc_fail "retention: the monitor's view reads a closed day (or not today)"; }

esc_step "holds partitions of several days (holds_part_days 7)"
itest_q "UPDATE retention_settings SET holds_part_days = 7" >/dev/null
itest_q "SELECT escrow_partitions_ensure(escrow_today() + 8, escrow_today() + 30)" >/dev/null
itest_eq "$(itest_q "SELECT count(*) FROM generate_series(escrow_today() + 8, escrow_today() + 30, '1 day') d
                     WHERE (SELECT count(*) FROM escrow_partition_spans() s
                            WHERE s.tbl = 'holds' AND s.lo <= d AND d < s.hi) <> 1")" 0 \
    "days ahead without exactly one holds partition"
itest_eq "$(itest_q "SELECT count(*) FROM escrow_partition_spans() s WHERE s.tbl = 'holds'
                     AND s.lo > escrow_today() + 8 AND (s.hi - s.lo <> 7 OR extract(isodow FROM s.lo) <> 1)")" 0 \
    "holds partitions ahead that are not Monday to Sunday"
itest_eq "$(itest_q "SELECT count(*) FROM escrow_partition_spans() s WHERE s.tbl = 'outbox'
                     AND s.lo > escrow_today() + 8 AND s.hi - s.lo <> 1")" 0 "outbox partitions of more than a day"
itest_eq "$(itest_q "SET datestyle = 'SQL, DMY'; SELECT count(*) FROM escrow_partition_spans() WHERE lo IS NULL")" 2 \
    "partitions without days under another DateStyle (the two default partitions)"
iso() { # DAYS_AGO -> YYYY-MM-DD
    itest_q "SELECT escrow_today() - $1"
}
# days -9 to -4: its first days older than the window, its last inside it;
# days -20 to -15: all older than the window
itest_q "CREATE TABLE holds_p$(day 9) PARTITION OF holds FOR VALUES FROM ('$(iso 9)') TO ('$(iso 3)')" >/dev/null
itest_q "CREATE TABLE holds_p$(day 20) PARTITION OF holds FOR VALUES FROM ('$(iso 20)') TO ('$(iso 14)')" >/dev/null
for d in 20 18 9 5; do
    itest_q "SELECT escrow_partitions_ensure(escrow_today() - $d, escrow_today() - $d)" >/dev/null
done
W_OLD=$(reserve k-w-old)
W_IN=$(reserve k-w-in)
W_GONE=$(reserve k-w-gone)
for h in "$W_OLD" "$W_IN" "$W_GONE"; do
    settle confirm "$h"
done
age 9 k-w-old
age 5 k-w-in
age 18 k-w-gone
# the days are closed again from the oldest (rows were moved into closed days)
itest_q "UPDATE holds_closed_mark SET through = NULL" >/dev/null
itest_q "DELETE FROM holds_closed" >/dev/null
esc_ctl retention show >"$ITEST_DIR/show2.txt" || esc_fail "retention: show (several days) failed"
grep -q "holds_p$(day 9) .* keep .*inside the idempotency window (days $(iso 9) to $(iso 4))" \
    "$ITEST_DIR/show2.txt" || { cat "$ITEST_DIR/show2.txt"; esc_fail "retention: a partition whose last day is inside the window must be kept"; }
esc_ctl --json retention run >"$ITEST_DIR/run2.json" || esc_fail "retention: run (several days) failed"
dropped=$(python3 -c 'import json,sys; print(" ".join(sorted(r["partition"] for r in json.load(sys.stdin)["dropped"] if r["table"] == "holds")))' <"$ITEST_DIR/run2.json")
itest_eq "$dropped" "holds_p$(day 20)" "holds partitions dropped (several days)"
itest_eq "$(itest_q "SELECT holds || '/' || sold FROM holds_retired")" "5/4" "holds_retired (and k-w-gone)"
itest_eq "$(itest_q "SELECT count(*) FROM segment_holds_agree a JOIN segment_holds_agree_recent r USING (segment_id)
                     WHERE NOT r.ok OR (a.holds_live, a.holds_sold) IS DISTINCT FROM (r.holds_live, r.holds_sold)")" \
    0 "segments whose monitor view differs from their holds (several days)"
esc_ctl check >"$ITEST_DIR/check.txt" || { cat "$ITEST_DIR/check.txt"; esc_fail "retention: escrowctl check (several days)"; }
esc_node_stop "$ITEST_NODE_PID" || esc_fail "retention: the node did not stop cleanly"
itest_node n1 "$PORT"
out=$(itest_probe reserve --endpoint "$EP" --item ret --key k-w-in --buyer b-k-w-in --qty 2)
itest_eq "$(itest_status "$out") $(itest_field hold "$out") $(itest_field state "$out")" "OK $W_IN converted" \
    "a retry inside the window gets its first outcome (a partition of several days)"
out=$(itest_probe reserve --endpoint "$EP" --item ret --key k-w-old --buyer b-k-w-old --qty 2)
new=$(itest_field hold "$out")
[[ $(itest_status "$out") == OK && $new != "$W_OLD" ]] ||
    esc_fail "retention: a retry older than the window should be a new request, even in a kept partition: $out"
itest_q "UPDATE retention_settings SET holds_part_days = 1" >/dev/null

esc_step "the coordinator runs retention on its schedule (--retention-s 1)"
# the last partitions ahead go; the coordinator's next run makes them again
itest_q "DROP TABLE holds_p$(day -7), outbox_p$(day -7)" >/dev/null
esc_spawn "$ITEST_DIR/coord.log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" \
    --listen "tcp://127.0.0.1:$(itest_port)" --publish "tcp://127.0.0.1:$(itest_port)" --retention-s 1
esc_wait_sql 30 "SELECT count(*) FROM pg_class WHERE relname IN ('holds_p$(day -7)', 'outbox_p$(day -7)')" 2 ||
    { tail -n 20 "$ITEST_DIR/coord.log" >&2; esc_fail "retention: the coordinator's scheduled run made no partition"; }
itest_pass
