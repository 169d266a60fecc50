#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crash.sh - durable before acknowledged (docs/guarantees.md). A flash sale runs
# (esc_probe record: 128 buyers in flight, each acknowledged outcome written
# and flushed as it arrives); the node is killed with SIGKILL mid-sale and
# started again; the sale goes on through the restart. Then:
#   - every acknowledged hold is in PostgreSQL, with its key, in the
#     acknowledged state or a later legal one;
#   - every hold in PostgreSQL belongs to a key the probe sent;
#   - conservation and the per-segment counters hold;
#   - retries of acknowledged keys get their acknowledged holds back;
#   - the sale can be finished: every unit ends up sold, exactly.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

TOTAL=3000
BUYERS=6000
TTL_MS=2000          # abandoned holds lapse during the test
KILL_AFTER_LINES=800 # acknowledged outcomes before the SIGKILL

itest_begin crash
[[ -x $ESC_BIN/escrow-load ]] || esc_fail "crash: no escrow-load in ESC_BIN=$ESC_BIN"
esc_ctl item create t1 crash --total $TOTAL --segments 4 --node n1 --hold-ttl-ms $TTL_MS >/dev/null
PORT=$(itest_port)
EP=tcp://127.0.0.1:$PORT
itest_node n1 "$PORT"
REC=$ITEST_DIR/record.txt

esc_step "the sale: $BUYERS buyers, 128 in flight"
"$ESC_PROBE" record --endpoint "$EP" --item crash --prefix cr --n $BUYERS --concurrency 128 \
    --deadline-ms 6000 --out "$REC" >"$ITEST_DIR/record.out" 2>"$ITEST_DIR/record.log" &
PROBE_PID=$!
ESC_PIDS+=("$PROBE_PID")
lines() { if [[ -f $REC ]]; then wc -l <"$REC"; else echo 0; fi; }
deadline=$((SECONDS + 120))
until (($(lines) >= KILL_AFTER_LINES)); do
    kill -0 "$PROBE_PID" 2>/dev/null || esc_fail "crash: the probe ended before the kill"
    ((SECONDS < deadline)) || esc_fail "crash: only $(lines) outcomes acknowledged in 120 s"
    sleep 0.01
done

esc_step "SIGKILL the node at $(lines) acknowledged outcomes"
itest_kill9 "$ITEST_NODE_PID"
at_kill=$(lines)
sleep 0.5 # the node stays down a moment: the buyers' requests meet a dead endpoint
itest_node n1 "$PORT"
grep -o 'live_holds=[0-9]*' "$ITEST_NODE_LOG" | sed 's/^/restarted node loaded /'

# The sale goes on through the restart. A client that makes no progress
# for 30 s while the restarted node serves others has not reconnected (see
# the report: nanomsg's reconnect can stall after the peer was SIGKILLed;
# 30 s, not less: a loaded machine may pause a healthy client for seconds).
# The durability checks below still run on what was acknowledged; the
# stall fails the test at the end.
STALLED=0
last=-1 still_since=$SECONDS
while kill -0 "$PROBE_PID" 2>/dev/null; do
    now_lines=$(lines)
    if ((now_lines != last)); then
        last=$now_lines still_since=$SECONDS
    elif ((SECONDS - still_since >= 30)); then
        STALLED=1
        echo "crash: the recording probe made no progress for 30 s after the restart" >&2
        ss -tanp 2>/dev/null | grep ":$PORT" >"$ITEST_DIR/stall-sockets.txt" || true
        if command -v gdb >/dev/null 2>&1; then
            gdb -p "$PROBE_PID" -batch -ex 'thread apply all bt' >"$ITEST_DIR/stall-stacks.txt" 2>&1 || true
        fi
        itest_kill9 "$PROBE_PID"
        break
    fi
    sleep 0.2
done
if ((STALLED == 0)); then
    itest_wait_pid "$PROBE_PID" 60 "the recording probe" || esc_fail "crash: the recording probe failed"
    cat "$ITEST_DIR/record.out"
    SENT=$(sed -n 's/^SENT //p' "$ITEST_DIR/record.out")
else
    SENT=$BUYERS
    # does the node serve a fresh client? (then the stall is the old client's)
    out=$(itest_probe get --endpoint "$EP" --hold "$(awk '$1 == "R" {print $3; exit}' "$REC")")
    echo "a fresh client after the stall: $out" >&2
fi
after=$(($(lines) - at_kill))
echo "acknowledged: $at_kill before the kill, $after after it"
((after > 0 || STALLED == 1)) || esc_fail "crash: nothing was acknowledged after the restart"

esc_step "every acknowledged outcome is in PostgreSQL"
itest_q "CREATE TABLE rec (kind text, key text, hold_id bigint, state text, n bigint)" >/dev/null
esc_psql "\\copy rec FROM '$REC' WITH (DELIMITER ' ')"
itest_eq "$(itest_q "SELECT count(*) FROM rec")" "$(lines)" "record lines loaded"
# A reserve is answered with its hold; a retry of a key whose hold lapsed
# before the retry arrived (the node was down longer than the 2 s TTL: a slow
# restart on a loaded machine) is answered OK with the hold `expired`
# (docs/libescrow.md, Answers). Any other state, or another qty, is wrong.
itest_eq "$(itest_q "SELECT count(*) FROM rec r WHERE r.kind = 'R' AND r.state IN ('held', 'expired') AND r.n = 1")" \
    "$(itest_q "SELECT count(*) FROM rec WHERE kind = 'R'")" "acknowledged reserves that reported a hold of 1, held (or lapsed before a retry)"
echo "acknowledged reserves answered with a lapsed hold (retries after the TTL): $(itest_q "SELECT count(*) FROM rec WHERE kind = 'R' AND state = 'expired'")"
itest_eq "$(itest_q "SELECT count(*) FROM rec r LEFT JOIN holds h
    ON h.hold_id = r.hold_id AND h.idempotency_key = r.key AND h.buyer_id = r.key AND h.qty = 1
    WHERE h.hold_id IS NULL")" 0 "acknowledged outcomes whose hold is missing or has another key"
itest_eq "$(itest_q "SELECT count(*) FROM rec r JOIN holds h USING (hold_id)
    WHERE r.kind = 'C' AND NOT (r.state = 'converted' AND r.n = 1 AND h.state = 'converted' AND h.qty_sold = 1)")" 0 \
    "acknowledged confirms not stored as converted"
itest_eq "$(itest_q "SELECT count(*) FROM rec r JOIN holds h USING (hold_id)
    WHERE r.kind = 'X' AND NOT (r.state IN ('cancelled', 'expired') AND h.state = r.state)")" 0 \
    "acknowledged releases not stored in the acknowledged state"
itest_eq "$(itest_q "SELECT count(*) FROM (SELECT key FROM rec WHERE kind = 'R' GROUP BY key HAVING count(DISTINCT hold_id) > 1) x")" 0 \
    "keys acknowledged with two different holds"

esc_step "every hold belongs to a key the probe sent, in a state its buyer could cause"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'crash' AND NOT (
    idempotency_key ~ '^cr-[0-9]+\$' AND buyer_id = idempotency_key AND qty = 1
    AND substring(idempotency_key FROM 4)::bigint < $SENT)")" 0 "holds of keys the probe never sent"
# buyer i: i % 10 < 6 confirms, < 8 releases, else abandons (esc_probe record_decision)
itest_eq "$(itest_q "SELECT count(*) FROM holds h, LATERAL (SELECT substring(h.idempotency_key FROM 4)::bigint % 10 AS d) x
    WHERE h.item_id = 'crash' AND NOT CASE
        WHEN x.d < 6 THEN h.state IN ('held', 'expired') OR (h.state = 'converted' AND h.qty_sold = 1)
        WHEN x.d < 8 THEN h.state IN ('held', 'cancelled', 'expired')
        ELSE h.state IN ('held', 'expired') END")" 0 "holds in a state their buyer could not have caused"
itest_invariants crash

esc_step "retries of acknowledged keys get their holds (every 3rd reserve line)"
holds_before=$(itest_q "SELECT count(*) FROM holds")
itest_probe verify --endpoint "$EP" --item crash --in "$REC" --every 3 ||
    esc_fail "crash: a retried key did not get its acknowledged hold"
itest_eq "$(itest_q "SELECT count(*) FROM holds")" "$holds_before" "holds after the retries"

if ((STALLED == 1)); then
    esc_fail "crash: durability checks passed, but the client never reconnected to the restarted node (libescrow/nanomsg reconnect stall; sockets in $ITEST_DIR/stall-sockets.txt)"
fi

esc_step "finish the sale"
held_zero() { [[ $(itest_q "SELECT sum(held) FROM segments WHERE item_id = 'crash'") == 0 ]]; }
esc_wait_for $((TTL_MS / 1000 + 60)) held_zero || esc_fail "crash: abandoned holds did not expire"
left=$(itest_q "SELECT sum(available) FROM segments WHERE item_id = 'crash'")
echo "units left after the crash sale: $left"
if ((left > 0)); then
    "$ESC_BIN/escrow-load" --endpoint "$EP" --tenant t1 --item crash --buyers $((left * 2 + 100)) \
        --concurrency 64 --confirm 1 --release 0 --key-prefix fin --deadline-ms 30000 --quiet \
        >"$ITEST_DIR/finish.out" 2>&1 || {
        cat "$ITEST_DIR/finish.out" >&2
        esc_fail "crash: escrow-load could not finish the sale"
    }
    grep '^RESULT' "$ITEST_DIR/finish.out"
fi
itest_eq "$(itest_q "SELECT sum(available) || '/' || sum(held) || '/' || sum(sold) FROM segments WHERE item_id = 'crash'")" \
    "0/0/$TOTAL" "available/held/sold after the sale"
itest_eq "$(itest_q "SELECT coalesce(sum(qty_sold), 0) FROM holds WHERE item_id = 'crash' AND state = 'converted'")" $TOTAL \
    "units sold according to the holds"
itest_invariants crash
esc_node_stop "$ITEST_NODE_PID" || esc_fail "crash: the restarted node did not stop cleanly"
itest_pass
