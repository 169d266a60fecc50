#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# coord_pause.sh - a paused coordinator revokes nothing from live nodes.
# Two managed nodes serve an item under load straight at their endpoints
# (esc_probe fence-load per node: the direct client sees every FENCED and
# NOT_OWNER the node answers, libescrow's routing would hide them by
# retrying). The coordinator (lease 2 s, heartbeats every 100 ms) is
# SIGSTOPped for 3 s, then for 36 s, mid-sale. Its own loop stalled: when it
# wakes, every node gets a lease of grace and the heartbeats waiting in its
# socket are read before leases are judged. After each pause, once the
# coordinator has been awake for a full lease and heard both nodes since
# (their nodes rows, written from heartbeats, say so), exactly:
#   - 0 nodes declared dead (COORD-NODE-DEAD), 0 segments dropped or fenced
#     on the nodes (SEG-DROP, SEG-FENCED);
#   - every segment has the owner and the epoch it had before the pause;
#   - the direct clients counted 0 FENCED and 0 NOT_OWNER, and were served
#     after the wake-up;
#   - the coordinator logged the stall (COORD-STALL).
# The nodes keep serving while the coordinator sleeps (they never needed it
# to decide); the database's epoch fence stays the arbiter throughout.
set -euo pipefail
SHARD_LEASE_MS=2000
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"
# The 36 s pause is inside one probe's life.
export ESC_PROBE_TIMEOUT_S=180

itest_begin coord_pause
esc_ctl item create t1 cp --total 100000000 --segments 8 >/dev/null
shard_coord_start --rebalance-ms 500
COORD_LOG=$SHARD_COORD_LOG
shard_node_start n1
shard_node_start n2
shard_wait_served cp 60
owners() {
    itest_q "SELECT string_agg(segment_id || ':' || node_id || ':' || epoch, ' ' ORDER BY segment_id)
             FROM segments WHERE item_id = 'cp'"
}
BEFORE=$(owners)
echo "segment:owner:epoch $BEFORE"
[[ $(itest_q "SELECT count(DISTINCT node_id) FROM segments WHERE item_id = 'cp'") == 2 ]] ||
    esc_fail "the segments are not spread over both nodes: $BEFORE"

N1_LOG=$(ls "$ITEST_DIR"/node*-n1-*.log)
N2_LOG=$(ls "$ITEST_DIR"/node*-n2-*.log)
# loaded_by_owners: every segment loaded by its owner at its epoch. A route
# names a new owner before it has loaded the segment (its first answers
# would be NOT_OWNER): the probes start only after that.
loaded_by_owners() {
    local id node epoch
    while IFS='|' read -r id node epoch; do
        grep -q "SEG-LOADED seg=$id item=t1/cp epoch=$epoch " "$ITEST_DIR"/node*-"$node"-*.log || return 1
    done < <(itest_q "SELECT segment_id || '|' || node_id || '|' || epoch FROM segments WHERE item_id = 'cp'")
}
esc_wait_for 60 loaded_by_owners ||
    esc_fail "the segments were not loaded by their owners: $(owners)"
# node_logs_since N1_LINES N2_LINES: what both nodes logged after those lines
# (the setup's own handover, n1 dropping the half n2 took, is not counted)
node_logs_since() {
    tail -n +$(($1 + 1)) "$N1_LOG"
    tail -n +$(($2 + 1)) "$N2_LOG"
}
count_in() { # PATTERN, on stdin -> number of matching lines
    grep -cE "$1" || true
}

# heard_since MS: both nodes rows were written from a heartbeat taken after
# wall time MS (the coordinator writes a node's row at least every second).
heard_since() {
    [[ $(itest_q "SELECT count(*) FROM nodes WHERE node_id IN ('n1', 'n2')
        AND last_seen_at > to_timestamp($1 / 1000.0)") == 2 ]]
}

# pause SECONDS: load both nodes directly, SIGSTOP the coordinator for
# SECONDS mid-sale, SIGCONT, wait until it has been awake for a lease and
# heard both nodes since, then stop the load and count.
pause() {
    local secs=$1 tag=p$1 node pids=() stop
    stop=$ITEST_DIR/stop-$tag
    for node in n1 n2; do
        "$ESC_PROBE" fence-load --endpoint "${SHARD_EP[$node]}" --item cp --prefix "$tag$node" \
            --concurrency 16 --deadline-ms 2000 --out "$ITEST_DIR/oks-$tag-$node.txt" --stop-file "$stop" \
            >"$ITEST_DIR/load-$tag-$node.out" 2>"$ITEST_DIR/load-$tag-$node.log" &
        pids+=($!)
        ESC_PIDS+=("$!")
    done
    for node in n1 n2; do
        esc_wait_for 60 test -s "$ITEST_DIR/oks-$tag-$node.txt" ||
            esc_fail "$node acknowledged nothing before the pause"
    done

    esc_step "SIGSTOP the coordinator for $secs s mid-sale"
    local coord_lines n1_lines n2_lines
    coord_lines=$(wc -l <"$COORD_LOG")
    n1_lines=$(wc -l <"$N1_LOG")
    n2_lines=$(wc -l <"$N2_LOG")
    kill -STOP "$SHARD_COORD_PID"
    esc_on_exit "kill -CONT $SHARD_COORD_PID 2>/dev/null"
    sleep "$secs" # the subject of the test: how long the coordinator is frozen
    local woke
    woke=$(date +%s%3N)
    kill -CONT "$SHARD_COORD_PID"
    esc_wait_for 60 heard_since $((woke + SHARD_LEASE_MS)) ||
        esc_fail "the coordinator did not hear both nodes in the lease after waking up"
    touch "$stop"
    for i in 0 1; do
        itest_wait_pid "${pids[$i]}" 60 "the load probe" || esc_fail "the load probe failed"
    done

    local new_log after dead stalled drops fenced refused served
    new_log=$(tail -n +$((coord_lines + 1)) "$COORD_LOG")
    dead=$(count_in 'COORD-NODE-DEAD' <<<"$new_log")
    stalled=$(count_in 'COORD-STALL' <<<"$new_log")
    drops=$(node_logs_since "$n1_lines" "$n2_lines" | count_in 'SEG-DROP')
    fenced=$(node_logs_since "$n1_lines" "$n2_lines" | count_in 'SEG-FENCED')
    refused=$(cat "$ITEST_DIR"/load-"$tag"-n?.out |
        awk '$1 == "STATUS" && ($2 == "FENCED" || $2 == "NOT_OWNER") {n += $3} END {print n + 0}')
    served=$(cat "$ITEST_DIR"/oks-"$tag"-n?.txt | awk -v t="$woke" '$2 > t' | wc -l)
    after=$(owners)
    echo "pause $secs s: nodes declared dead $dead, segments dropped $drops, fenced $fenced;" \
        "FENCED/NOT_OWNER seen by the direct clients $refused; OKs after the wake-up $served"
    cat "$ITEST_DIR"/load-"$tag"-n?.out
    grep -h 'COORD-STALL\|COORD-NODE-DEAD' <<<"$new_log" || true
    itest_eq "$dead" 0 "nodes declared dead after a $secs s pause"
    itest_eq "$drops" 0 "segments dropped by the nodes after a $secs s pause"
    itest_eq "$fenced" 0 "segments fenced on the nodes after a $secs s pause"
    itest_eq "$refused" 0 "FENCED/NOT_OWNER answers seen by the direct clients ($secs s pause)"
    itest_eq "$after" "$BEFORE" "segment owners and epochs after a $secs s pause"
    ((served > 0)) || esc_fail "the nodes served nothing after the coordinator woke up"
    ((stalled >= 1)) || esc_fail "the coordinator did not log its $secs s stall (COORD-STALL)"
}

pause 3
pause 36
itest_invariants cp
itest_pass
