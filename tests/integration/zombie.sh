#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# zombie.sh - a paused node comes back fenced and harmless. Node
# n1 serves under load (esc_probe fence-load straight at its endpoint, every
# OK recorded with the wall times of its call and its answer); it is
# SIGSTOPped past its lease, the coordinator moves its segments to n2 with
# raised epochs; then SIGCONT. n1 acknowledges no call made while it was
# stopped on the moved segments (its queued requests are refused by the
# database's epoch fence or by the assignment that no longer lists them),
# no hold with n1's old epochs appears, and the buyers carry on through n2.
# Every step waits for the
# event itself (the first OK, the move, n1 dropping the moved segments), so
# the test does not depend on the machine's speed.
set -euo pipefail
SHARD_LEASE_MS=1000
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

itest_begin zombie
esc_ctl item create t1 zz --total 100000 --segments 4 >/dev/null
shard_coord_start
shard_node_start n1
N1_LOG=$SHARD_NODE_LOG
shard_node_start n2
shard_wait_served zz 60
N1_SEGS=$(itest_q "SELECT string_agg(segment_id::text, ',') FROM segments WHERE item_id = 'zz' AND node_id = 'n1'")
[[ -n $N1_SEGS ]] || esc_fail "n1 owns no segment"
OLD=$(itest_q "SELECT string_agg(segment_id || ':' || epoch, ' ' ORDER BY segment_id) FROM segments WHERE segment_id IN ($N1_SEGS)")
echo "n1 owns $OLD (segment:epoch)"

esc_step "load straight at n1 (32 in flight, reserve then confirm), recording every OK"
STOP=$ITEST_DIR/stop-load
"$ESC_PROBE" fence-load --endpoint "${SHARD_EP[n1]}" --item zz --prefix zl --concurrency 32 \
    --deadline-ms 1000 --out "$ITEST_DIR/oks.txt" --stop-file "$STOP" \
    >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" &
LOAD_PID=$!
ESC_PIDS+=("$LOAD_PID")
esc_wait_for 60 test -s "$ITEST_DIR/oks.txt" || esc_fail "n1 acknowledged nothing before the pause"

esc_step "SIGSTOP n1 past its lease"
kill -STOP "${SHARD_PID[n1]}"
esc_on_exit "kill -CONT ${SHARD_PID[n1]} 2>/dev/null"
stopped() { [[ $(awk '{print $3}' "/proc/${SHARD_PID[n1]}/stat") == T ]]; }
esc_wait_for 10 stopped || esc_fail "n1 did not stop"
T_STOP=$(date +%s%3N) # from now on n1 decides nothing until SIGCONT
moved() {
    [[ $(itest_q "SELECT count(*) FROM segments WHERE segment_id IN ($N1_SEGS) AND node_id = 'n2'") == \
        $(itest_q "SELECT count(*) FROM segments WHERE segment_id IN ($N1_SEGS)") ]]
}
esc_wait_for 60 moved || esc_fail "the coordinator did not move n1's segments to n2 within 60 s"
T_MOVED=$(date +%s%3N)
NEW=$(itest_q "SELECT string_agg(segment_id || ':' || epoch, ' ' ORDER BY segment_id) FROM segments WHERE segment_id IN ($N1_SEGS)")
echo "moved: $NEW"
itest_eq "$(itest_q "SELECT count(*) FROM segments s JOIN (SELECT split_part(x, ':', 1)::bigint AS id,
    split_part(x, ':', 2)::bigint AS e FROM unnest(string_to_array('$OLD', ' ')) x) o ON o.id = s.segment_id
    WHERE s.epoch <= o.e")" 0 "moved segments whose epoch was not raised"
old_epoch_holds=$(itest_q "SELECT count(*) FROM holds h JOIN (SELECT split_part(x, ':', 1)::bigint AS id,
    split_part(x, ':', 2)::bigint AS e FROM unnest(string_to_array('$OLD', ' ')) x) o
    ON o.id = h.segment_id AND h.epoch = o.e")

esc_step "SIGCONT n1: it wakes up with queued requests and old epochs"
# n1 learns it lost the moved segments from the database's fence (SEG-FENCED)
# or from its next heartbeat's reply (SEG-DROP); from then on it refuses
# them. The load stops once n1 has logged that for every moved segment.
n1_log_lines=$(wc -l <"$N1_LOG")
n1_let_go() {
    local seg
    for seg in ${N1_SEGS//,/ }; do
        tail -n +$((n1_log_lines + 1)) "$N1_LOG" | grep -E "SEG-(FENCED|DROP) seg=$seg " >/dev/null || return 1
    done
}
kill -CONT "${SHARD_PID[n1]}"
esc_wait_for 60 n1_let_go || esc_fail "n1 did not let go of the moved segments ($N1_SEGS) after waking up"
touch "$STOP"
itest_wait_pid "$LOAD_PID" 60 "the load probe" || esc_fail "the load probe failed"
cat "$ITEST_DIR/load.out"
# n1 may legitimately be given segments again after it wakes up (at new
# epochs); what it must never do is acknowledge anything for a segment it
# no longer owns: an OK for a moved segment whose owner is not n1 at the end,
# of a call made once n1 was stopped (so decided after it woke up, after the
# move), is a violation. A call made before the pause may be answered after
# the move: its batch committed before the move, while n1 was frozen with
# the reply unread (no hold of n1's old epochs appears after the move: the
# check below). (hold id >> 40 = segment id; field 7: when the call was made)
STILL_MOVED=$(itest_q "SELECT coalesce(string_agg(segment_id::text, ','), '') FROM segments
    WHERE segment_id IN ($N1_SEGS) AND node_id <> 'n1'")
echo "moved segments that n1 did not get back: ${STILL_MOVED:-none}"
[[ -n $STILL_MOVED ]] || esc_fail "n1 got every moved segment back: nothing left to check"
late=$(awk -v t="$T_STOP" -v segs=",$STILL_MOVED," \
    '$7 > t && index(segs, "," int($4 / 1099511627776) ",") > 0' "$ITEST_DIR/oks.txt" | wc -l)
if ((late != 0)); then
    awk -v t="$T_STOP" '$7 > t' "$ITEST_DIR/oks.txt" | head >&2
    esc_fail "n1 acknowledged $late calls on moved segments made after it was stopped (at $T_STOP)"
fi
echo "OKs on moved segments answered after the move, of calls made before the pause: $(awk \
    -v t="$T_MOVED" -v segs=",$STILL_MOVED," '$2 > t && index(segs, "," int($4 / 1099511627776) ",") > 0' \
    "$ITEST_DIR/oks.txt" | wc -l)"
refusals=$(awk '$1 == "STATUS" && ($2 == "FENCED" || $2 == "NOT_OWNER" || $2 == "UNAVAILABLE") {n += $3} END {print n + 0}' "$ITEST_DIR/load.out")
((refusals > 0)) || esc_fail "the load never saw n1 refuse after waking up"
echo "n1: $(wc -l <"$ITEST_DIR/oks.txt") OKs, none on a moved segment of a call made while it was stopped; $refusals refusals"
itest_eq "$(itest_q "SELECT count(*) FROM holds h JOIN (SELECT split_part(x, ':', 1)::bigint AS id,
    split_part(x, ':', 2)::bigint AS e FROM unnest(string_to_array('$OLD', ' ')) x) o
    ON o.id = h.segment_id AND h.epoch = o.e")" "$old_epoch_holds" "holds written with n1's old epochs after the move"
# every reserve n1 acknowledged is stored (the keys go to psql through COPY:
# their number grows with the machine's speed, past what a command line holds)
stored=$(awk '$3 == "reserve" {print $5}' "$ITEST_DIR/oks.txt" |
    esc_psql_with_rows acked "SELECT count(*) FROM holds WHERE idempotency_key IN (SELECT v FROM acked)")
itest_eq "$stored" "$(awk '$3 == "reserve"' "$ITEST_DIR/oks.txt" | wc -l)" \
    "stored holds of the reserves n1 acknowledged"
itest_invariants zz

esc_step "the cluster serves the moved segments"
shard_wait_served zz 60
out=$(itest_probe reserve --endpoint "${SHARD_EP[n2]}" --item zz --key after-move)
itest_eq "$(itest_status "$out")" OK "a reserve on n2 after the move"
itest_invariants zz
itest_pass
