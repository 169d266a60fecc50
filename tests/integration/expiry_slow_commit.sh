#!/usr/bin/env bash
# expiry_slow_commit.sh - a hold expires even when its own commit was slow.
# The segment row is locked from psql for 1 s, so three reserves (ttl
# 200 ms) stay uncommitted past their expiry while the sweeper runs every
# 10 ms. Once the lock is gone the holds commit as 'held'; the sweeper must
# still expire them and put their units back. (Found while writing
# transitions.sh: seg_core_sweep drops the expiry entry of a hold whose
# reserve is pending, and nothing re-arms it when the reserve commits.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin expiry_slow_commit
esc_ctl item create t1 slow --total 10 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT" --sweep-ms 10
EP=tcp://127.0.0.1:$PORT

esc_step "lock the segment row for 1 s; reserve 3 holds with ttl 200 ms meanwhile"
"$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 \
    -c "BEGIN; SELECT 1 FROM segments WHERE item_id = 'slow' FOR UPDATE; SELECT pg_sleep(1); COMMIT;" \
    >"$ITEST_DIR/locker.log" 2>&1 &
LOCKER=$!
ESC_PIDS+=($LOCKER)
sleep 0.2
pids=()
for i in 1 2 3; do
    "$ESC_PROBE" reserve --endpoint "$EP" --item slow --key slow-$i --ttl-ms 200 >"$ITEST_DIR/r$i.out" &
    pids+=($!)
    ESC_PIDS+=($!)
done
for p in "${pids[@]}"; do
    itest_wait_pid "$p" 20 "a reserve probe" || esc_fail "expiry_slow_commit: a reserve probe failed"
done
itest_wait_pid "$LOCKER" 20 "the locking psql" || esc_fail "expiry_slow_commit: the locking transaction failed"
for i in 1 2 3; do
    itest_eq "$(itest_status "$(cat "$ITEST_DIR/r$i.out")")" OK "reserve slow-$i (committed after the lock)"
done

esc_step "1.5 s later: every hold expired, every unit back"
sleep 1.5
itest_eq "$(itest_q "SELECT string_agg(state, ',' ORDER BY hold_id) FROM holds WHERE item_id = 'slow'")" \
    "expired,expired,expired" "states of the 3 holds, 1.5 s after their expiry"
itest_eq "$(itest_q "SELECT available || '/' || held || '/' || sold FROM segments WHERE item_id = 'slow'")" \
    "10/0/0" "available/held/sold"
itest_invariants slow
esc_node_stop "$ITEST_NODE_PID" || esc_fail "expiry_slow_commit: the node did not stop cleanly"
itest_pass
