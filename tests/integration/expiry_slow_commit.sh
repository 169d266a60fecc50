#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# expiry_slow_commit.sh - a hold expires even when its own commit was slow.
# The segment row is locked from psql (a session that holds it until the
# test cancels it), so three reserves (ttl 200 ms) stay uncommitted past
# their expiry while the sweeper runs every 10 ms. Once the lock is gone the
# holds commit as 'held'; the sweeper must still expire them and put their
# units back. Every step waits for the state it needs (the lock taken, the
# node's commit blocked on it, the holds expired), not for a number of
# seconds. (Found while writing
# transitions.sh: seg_core_sweep drops the expiry entry of a hold whose
# reserve is pending, and nothing re-arms it when the reserve commits.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin expiry_slow_commit
esc_ctl item create t1 slow --total 10 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT" --sweep-ms 10
EP=tcp://127.0.0.1:$PORT

esc_step "lock the segment row; reserve 3 holds with ttl 200 ms meanwhile; then release the lock"
# The locker sleeps (at most 10 min) holding the row lock until it is cancelled.
"$ESC_PG_BINDIR/psql" "$ESCROW_DSN application_name=slow-locker" -X -q \
    -c "BEGIN; SELECT 1 FROM segments WHERE item_id = 'slow' FOR UPDATE; SELECT pg_sleep(600); COMMIT;" \
    >"$ITEST_DIR/locker.log" 2>&1 &
LOCKER=$!
ESC_PIDS+=("$LOCKER")
esc_wait_sql 60 "SELECT count(*) FROM pg_stat_activity
    WHERE application_name = 'slow-locker' AND wait_event = 'PgSleep'" 1 ||
    esc_fail "expiry_slow_commit: the locker did not take the row lock"
pids=()
for i in 1 2 3; do
    "$ESC_PROBE" reserve --endpoint "$EP" --item slow --key slow-$i --ttl-ms 200 --deadline-ms 60000 \
        >"$ITEST_DIR/r$i.out" &
    pids+=($!)
    ESC_PIDS+=($!)
done
# The node's commit waits for the row lock: the reserves are pending.
esc_wait_sql 60 "SELECT count(*) > 0 FROM pg_stat_activity
    WHERE wait_event_type = 'Lock' AND application_name <> 'slow-locker'" t ||
    esc_fail "expiry_slow_commit: the node's commit never waited for the lock"
sleep 0.5 # the holds' ttl (200 ms) runs out while their reserves are pending: the point of the test
itest_q "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'slow-locker'" >/dev/null
for p in "${pids[@]}"; do
    itest_wait_pid "$p" 60 "a reserve probe" || esc_fail "expiry_slow_commit: a reserve probe failed"
done
itest_wait_pid "$LOCKER" 60 "the locking psql" || true # cancelled: psql exits 1
grep -q 'canceling statement due to user request' "$ITEST_DIR/locker.log" ||
    esc_fail "expiry_slow_commit: the locker did not end by the cancel: $(cat "$ITEST_DIR/locker.log")"
for i in 1 2 3; do
    itest_eq "$(itest_status "$(cat "$ITEST_DIR/r$i.out")")" OK "reserve slow-$i (committed after the lock)"
done

esc_step "the sweeper expires every hold, every unit comes back"
esc_wait_sql 60 "SELECT string_agg(state, ',' ORDER BY hold_id) FROM holds WHERE item_id = 'slow'" \
    "expired,expired,expired" || esc_fail "expiry_slow_commit: the holds committed late never expired"
itest_eq "$(itest_q "SELECT available || '/' || held || '/' || sold FROM segments WHERE item_id = 'slow'")" \
    "10/0/0" "available/held/sold"
itest_invariants slow
esc_node_stop "$ITEST_NODE_PID" || esc_fail "expiry_slow_commit: the node did not stop cleanly"
itest_pass
