#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# failover.sh - a node dies mid-sale: kill -9 one of two managed
# nodes while buyers (esc_probe record through libescrow's routing, every
# acknowledged outcome written down as it arrives) are buying. Its segments
# must serve again on the other node (within lease + 1 s: a timing target,
# see itest_timing); every acknowledged hold is in PostgreSQL; nothing is
# oversold; the sale completes exactly.
set -euo pipefail
SHARD_LEASE_MS=1000
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=2000
BUYERS=4000
KILL_AFTER_LINES=500

itest_begin failover
esc_ctl item create t1 fo --total $TOTAL --segments 8 >/dev/null
shard_coord_start
shard_node_start n1
shard_node_start n2
shard_wait_served fo 60
victim_segs=$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'fo' AND node_id = 'n1'")
((victim_segs > 0)) || esc_fail "n1 owns no segment of the item"
REC=$ITEST_DIR/record.txt

esc_step "the sale: $BUYERS buyers through the coordinator's routes"
"$ESC_PROBE" record --coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL" --item fo --prefix fo \
    --n $BUYERS --concurrency 64 --deadline-ms 8000 --out "$REC" \
    >"$ITEST_DIR/record.out" 2>"$ITEST_DIR/record.log" &
PROBE_PID=$!
ESC_PIDS+=("$PROBE_PID")
lines() { if [[ -f $REC ]]; then wc -l <"$REC"; else echo 0; fi; }
deadline=$((SECONDS + 120))
until (($(lines) >= KILL_AFTER_LINES)); do
    kill -0 "$PROBE_PID" 2>/dev/null || esc_fail "the probe ended before the kill"
    ((SECONDS < deadline)) || esc_fail "only $(lines) outcomes acknowledged in 120 s"
    sleep 0.01
done

esc_step "kill -9 n1 (owner of $victim_segs segments) at $(lines) acknowledged outcomes"
VICTIM_SEGS=$(itest_q "SELECT string_agg(segment_id::text, ' ') FROM segments WHERE item_id = 'fo' AND node_id = 'n1'")
N2_LOG=$(ls "$ITEST_DIR"/node*-n2-*.log)
t0=$(date +%s%3N)
itest_kill9 "${SHARD_PID[n1]}"
taken_over() {
    [[ $(itest_q "SELECT count(*) FROM segments WHERE item_id = 'fo' AND node_id = 'n2'") == 8 ]] &&
        _shard_served fo
}
esc_wait_for 60 taken_over || esc_fail "n2 did not take over n1's segments within 60 s"
# The moment each segment served again is the new owner's SEG-LOADED line
# (its own clock, milliseconds): polling from here would add its own delay.
t1=0
for seg in $VICTIM_SEGS; do
    line=$(grep "SEG-LOADED seg=$seg " "$N2_LOG" | tail -n 1)
    [[ -n $line ]] || esc_fail "n2 never logged loading segment $seg"
    ts=$(date -d "${line%% *}" +%s%3N)
    ((ts > t1)) && t1=$ts
done
took_ms=$((t1 - t0))
echo "the segments of n1 serve again on n2 after $took_ms ms (lease $SHARD_LEASE_MS ms)"
((took_ms > 0)) || esc_fail "n2 loaded the segments before the kill?"
itest_timing "$took_ms" $((SHARD_LEASE_MS + 1000)) "the takeover (lease + 1 s)"

itest_wait_pid "$PROBE_PID" 120 "the recording probe" || esc_fail "the recording probe failed"
cat "$ITEST_DIR/record.out"
after=$(grep -c . "$REC")
echo "acknowledged outcomes: $after"

esc_step "every acknowledged outcome is in PostgreSQL"
itest_check_record "$REC"
itest_invariants fo

esc_step "retries of acknowledged keys get their holds back from the new owner"
holds_before=$(itest_q "SELECT count(*) FROM holds")
itest_probe verify --coordinator "$SHARD_COORD_URL" --item fo --in "$REC" --every 3 ||
    esc_fail "a retried key did not get its acknowledged hold"
itest_eq "$(itest_q "SELECT count(*) FROM holds")" "$holds_before" "holds after the retries"
itest_pass
