#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# stale_owner.sh - a paused owner wakes up with a batch of new holds it
# decided before its segment moved. The hold ids it gave them can never be
# ids the new owner gives out (each owner gets its own range of hold ids),
# so the database refuses that batch by the epoch fence and the old owner
# drops the segment; a confirm of the new owner's hold that reaches the old
# owner is answered FENCED, never INTERNAL; the hold stays held and the
# current owner converts it (libescrow in routing mode). A confirm of a hold
# the new owner released, which the old owner had decided before it was
# paused, is refused by the database before the fence (the hold diverged):
# the old owner checks the fence and answers FENCED, not UNAVAILABLE.
#
# How the stale batch is made, with no timing guesses: a psql session locks
# the segment's row, so n1's batch with reserve r1 waits in PostgreSQL, and
# reserve r2 and a confirm of b1 (a hold of a second item) are decided into
# n1's next batch (n1's in-memory units show them); n1 is SIGSTOPped, the
# lock released (r1's batch commits), the coordinator moves the segments to
# n2 past n1's lease, n2 gives out holds and releases b1.
# The holds table is locked and n1 continued: its batch with r2 waits in
# PostgreSQL, so n1 still serves the segment while it answers the confirm
# that was queued for it; then the lock goes and the fence refuses r2.
set -euo pipefail
SHARD_LEASE_MS=1000
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

# the stale owner answers r1 and r2 only after the move: minutes on a loaded machine
export ESC_PROBE_TIMEOUT_S=200
itest_begin stale_owner
esc_ctl item create t1 so --total 1000 --segments 1 >/dev/null
esc_ctl item create t1 so2 --total 1000 --segments 1 >/dev/null
shard_coord_start
METRICS_PORT=$(itest_port)
shard_node_start n1 --metrics "127.0.0.1:$METRICS_PORT"
N1_LOG=$SHARD_NODE_LOG
shard_wait_served so 60
shard_wait_served so2 60
SEG=$(itest_q "SELECT segment_id FROM segments WHERE item_id = 'so'")
SEG2=$(itest_q "SELECT segment_id FROM segments WHERE item_id = 'so2'")
itest_eq "$(itest_q "SELECT string_agg(DISTINCT node_id, ',') FROM segments")" n1 "owner of the segments"
out=$(itest_probe reserve --endpoint "${SHARD_EP[n1]}" --item so2 --key b1)
itest_eq "$(itest_status "$out")" OK "reserve b1 (item so2) on n1"
B1=$(itest_field hold "$out")
N1_EP=${SHARD_EP[n1]}
EPOCH_1=$(itest_q "SELECT epoch FROM segments WHERE segment_id = $SEG")

n1_units() { # STATE: the units n1 has in that state in memory (tentative decisions included)
    curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" | awk -v k="escrow_units{state=\"$1\"}" '$1 == k {print $2}'
}
n1_held() { n1_units held; }
n1_held_is() { [[ $(n1_units held) == "$1" ]]; }
n1_sold_is() { [[ $(n1_units sold) == "$1" ]]; }

# A psql session that holds a lock until row_unlock: by default FOR UPDATE
# on the segment's row (a batch of its owner waits at the fence); with
# "holds": SHARE on the holds table (every batch that writes a hold waits,
# even a stale one, which the fence would refuse without waiting).
row_lock() {
    local sql="SELECT segment_id FROM segments WHERE segment_id = $SEG FOR UPDATE"
    [[ ${1:-} != holds ]] || sql="LOCK TABLE holds IN SHARE MODE"
    itest_lock itest-lock "$sql"
}
row_unlock() {
    itest_unlock itest-lock
}
commit_waits() {
    esc_wait_sql 30 "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
        AND query LIKE '%segment-commit%'" 1
}

esc_step "lock segment $SEG's row: n1's batch with r1 waits in PostgreSQL, r2 goes into its next one"
row_lock
itest_probe reserve --endpoint "$N1_EP" --item so --key r1 --deadline-ms 120000 >"$ITEST_DIR/r1.out" &
R1_PID=$!
ESC_PIDS+=("$R1_PID")
commit_waits || esc_fail "n1's batch with r1 did not wait for the lock"
esc_wait_for 30 n1_held_is 2 ||
    esc_fail "n1 does not hold b1's and r1's units in memory (held=$(n1_held))"
itest_probe reserve --endpoint "$N1_EP" --item so --key r2 --deadline-ms 120000 >"$ITEST_DIR/r2.out" &
R2_PID=$!
ESC_PIDS+=("$R2_PID")
esc_wait_for 30 n1_held_is 3 ||
    esc_fail "n1 did not decide r2 into its next batch (held=$(n1_held))"
# and a confirm of b1 into the same batch: by the time that batch reaches
# the database, the new owner will have released b1
itest_probe confirm --endpoint "$N1_EP" --hold "$B1" --deadline-ms 120000 >"$ITEST_DIR/confirm-b1.out" &
CONFIRM_B1_PID=$!
ESC_PIDS+=("$CONFIRM_B1_PID")
esc_wait_for 30 n1_sold_is 1 ||
    esc_fail "n1 did not decide the confirm of b1 (sold=$(n1_units sold))"

esc_step "SIGSTOP n1, release the lock: r1's batch commits, r2's waits in n1"
kill -STOP "${SHARD_PID[n1]}"
esc_on_exit "kill -CONT ${SHARD_PID[n1]} 2>/dev/null"
row_unlock
esc_wait_sql 30 "SELECT count(*) FROM holds WHERE idempotency_key = 'r1'" 1 || esc_fail "r1's batch did not commit"

esc_step "n2 starts (not earlier: the coordinator would share the segments out); n1's lease runs out"
shard_node_start n2
N2_EP=${SHARD_EP[n2]}
esc_wait_sql 60 "SELECT string_agg(node_id, ',') FROM segments WHERE segment_id IN ($SEG, $SEG2)" n2,n2 ||
    esc_fail "the coordinator did not move the segments to n2"
shard_wait_served so 60
shard_wait_served so2 60
out=$(itest_probe release --endpoint "$N2_EP" --hold "$B1")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK cancelled" "n2 releases b1, which n1 still holds in memory"
EPOCH_2=$(itest_q "SELECT epoch FROM segments WHERE segment_id = $SEG")
((EPOCH_2 > EPOCH_1)) || esc_fail "the epoch was not raised ($EPOCH_1 -> $EPOCH_2)"
H3=
for k in 1 2 3; do
    out=$(itest_probe reserve --endpoint "$N2_EP" --item so --key "n2-$k")
    itest_eq "$(itest_status "$out")" OK "reserve n2-$k on n2"
    [[ -n $H3 ]] || H3=$(itest_field hold "$out")
done
# n1 gave r1 sequence number R1 and r2 (never committed) R1 + 1: the new
# owner's ids start past everything n1 could still write.
R1_SEQ=$(($(itest_q "SELECT hold_id FROM holds WHERE idempotency_key = 'r1'") & 0xffffffffff))
H3_SEQ=$((H3 & 0xffffffffff))
echo "n1 gave r1 seq $R1_SEQ (r2 got $((R1_SEQ + 1))); n2's first hold $H3 has seq $H3_SEQ"
((H3_SEQ > R1_SEQ + 1)) || esc_fail "n2 gave out hold seq $H3_SEQ, an id the stale owner n1 may still write"

esc_step "n1 wakes up believing it owns the segment: its batch with r2 waits for a lock on holds"
# While that batch is in flight n1 neither learns of the move from the fence
# nor drops the segment on the coordinator's word (it settles first): a
# confirm of n2's hold, queued while n1 was stopped, meets a stale owner.
itest_probe confirm --endpoint "$N1_EP" --hold "$H3" --deadline-ms 60000 >"$ITEST_DIR/confirm.out" &
CONFIRM_PID=$!
ESC_PIDS+=("$CONFIRM_PID")
row_lock holds
kill -CONT "${SHARD_PID[n1]}"
commit_waits || esc_fail "n1's batch with r2 did not wait for the lock"
itest_wait_pid "$CONFIRM_PID" 180 "the confirm at n1" || esc_fail "the confirm at n1 failed"
echo "confirm at n1: $(cat "$ITEST_DIR/confirm.out")"
itest_eq "$(itest_status "$(cat "$ITEST_DIR/confirm.out")")" FENCED \
    "the stale owner's answer to a confirm of the new owner's hold"
itest_wait_pid "$R1_PID" 180 "reserve r1" || esc_fail "reserve r1 failed"
echo "r1: $(cat "$ITEST_DIR/r1.out")"
itest_eq "$(itest_status "$(cat "$ITEST_DIR/r1.out")")" OK "r1 (its batch committed before the move)"

esc_step "release the lock: n1's batch is refused (b1 diverged), and that is fencing"
row_unlock
itest_wait_pid "$CONFIRM_B1_PID" 180 "the confirm of b1 at n1" || esc_fail "the confirm of b1 at n1 failed"
echo "confirm of b1 at n1: $(cat "$ITEST_DIR/confirm-b1.out")"
# The confirm itself is answered FENCED when the batch is refused; a resend
# of it (every resend_ms while n1 was stopped) that n1 reads after dropping
# the segment is answered NOT_OWNER, and the client keeps the latest answer.
# Both say "not the owner, nothing written"; never INTERNAL or UNAVAILABLE.
case $(itest_status "$(cat "$ITEST_DIR/confirm-b1.out")") in
FENCED | NOT_OWNER) ;;
*) esc_fail "the stale owner's answer to a confirm of a hold the new owner released:" \
    "$(cat "$ITEST_DIR/confirm-b1.out")" ;;
esac
itest_eq "$(itest_q "SELECT state FROM holds WHERE hold_id = $B1")" cancelled "b1 after the stale confirm"
# the refusal itself made n1 drop both segments of the batch (not only, later,
# the coordinator's word)
for s in "$SEG" "$SEG2"; do
    esc_wait_for 30 grep -qE "SEG-FENCED seg=$s .*\(its batch collided|SEG-FENCED seg=$s .*\(the epoch fence" \
        "$N1_LOG" || esc_fail "n1's refused batch did not fence segment $s"
done
if grep -E 'holds_pkey|hold id reused|SEG-BUG' "$N1_LOG"; then
    esc_fail "n1 collided with hold ids of the new owner (or logged a bug)"
fi
itest_wait_pid "$R2_PID" 180 "reserve r2" || esc_fail "reserve r2 failed"
echo "r2: $(cat "$ITEST_DIR/r2.out")"
# Through n1's endpoint alone: FENCED; TIMEDOUT when earlier copies of r2
# went unanswered (the stale n1 cannot say what they did: outcome unknown);
# OK only from a current owner (the coordinator may give n1 the segment
# back at a newer epoch, and a resend of r2 may meet it there).
case $(itest_status "$(cat "$ITEST_DIR/r2.out")") in
FENCED | NOT_OWNER | TIMEDOUT | OK) ;;
*) esc_fail "r2, decided by the stale owner, was answered '$(cat "$ITEST_DIR/r2.out")'" ;;
esac
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE epoch = $EPOCH_1 AND idempotency_key <> 'r1'
    AND segment_id = $SEG")" 0 "holds of segment $SEG written under n1's old epoch after r1"
out=$(itest_probe reserve --coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL" --item so --key r2)
itest_eq "$(itest_status "$out")" OK "r2 retried with its key in routing mode"
# by the segment's owner now: n2, or n1 again at a newer epoch
itest_eq "$(itest_q "SELECT h.epoch > $EPOCH_1 FROM holds h WHERE h.idempotency_key = 'r2'")" t \
    "r2's hold was written under a newer epoch than n1's old one"

esc_step "the hold is still held; libescrow (routing mode) converts it through n2"
itest_eq "$(itest_q "SELECT state FROM holds WHERE hold_id = $H3")" held "hold $H3 after the stale confirm"
out=$(itest_probe confirm --coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL" --hold "$H3")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK converted" "confirm of $H3 in routing mode"
itest_invariants
itest_pass
