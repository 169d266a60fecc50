#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# coord_fence.sh - a paused leader that wakes after the standby took over
# writes nothing and steps down. Two rounds, leader lease 2 s:
#  1. The leader runs with ESC_FAILPOINT_COORD_IGNORE_LEASE=1: it serves as
#     if its lease always held (no check by its own clock, a renewal that
#     finds another epoch only logged), so only the database's fence stands
#     between it and the catalog. It is SIGSTOPped beyond its lease; the
#     standby takes over; an escrowctl pause is sent to the old leader alone;
#     SIGCONT. The old leader's writes (the pause, its heartbeat writes) are
#     refused (ES004: COORD-DEPOSED), it exits with status 3, the item is not
#     paused, and the new leader still serves (a pause through both
#     endpoints is answered by it).
#  2. The normal path: the old leader restarts as a standby; the new leader
#     is SIGSTOPped beyond its lease, the standby takes over, SIGCONT: the
#     woken leader sees its lease ran out by its own clock, answers nothing,
#     learns from its renewal that another epoch leads, and exits with
#     status 3 without a refused write.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

LEADER_LEASE_MS=2000

itest_begin coord_fence
esc_ctl item create t1 fz --total 1000 --segments 2 >/dev/null
ESC_FAILPOINT_COORD_IGNORE_LEASE=1 shard_coord_start --leader-lease-ms $LEADER_LEASE_MS
A_URL=$SHARD_COORD_URL A_PID=$SHARD_COORD_PID A_LOG=$SHARD_COORD_LOG
shard_standby_start --leader-lease-ms $LEADER_LEASE_MS
B_URL=$SHARD_STANDBY_URL B_PID=$SHARD_STANDBY_PID B_LOG=$SHARD_STANDBY_LOG
SHARD_COORD_URL="$A_URL,$B_URL"
SHARD_PUB_URL="$SHARD_PUB_URL,$SHARD_STANDBY_PUB"
shard_node_start n1
shard_wait_served fz 60
led_by() { # LOG: that coordinator read its catalog as the leader
    grep -q 'COORD-READY' "$1"
}
item_state() {
    itest_q "SELECT state FROM items WHERE item_id = 'fz'"
}

esc_step "round 1: SIGSTOP the leader (lease check off: only the database fences it)"
kill -STOP "$A_PID"
esc_wait_for 30 led_by "$B_LOG" || esc_fail "the standby did not take over within 30 s"
grep -h 'COORD-LEADER' "$B_LOG"
"$ESC_BIN/escrowctl" --coordinator "$A_URL" --timeout-ms 3000 item pause t1 fz \
    >"$ITEST_DIR/pause_old.out" 2>&1 &
CTL_PID=$!
ESC_PIDS+=("$CTL_PID")
kill -CONT "$A_PID"
rc=0
itest_wait_pid "$A_PID" 30 "the woken old leader" || rc=$?
itest_eq "$rc" 3 "the old leader's exit status (deposed)"
grep -h 'COORD-DEPOSED' "$A_LOG" || esc_fail "the old leader did not log COORD-DEPOSED"
grep -q 'COORD-DEPOSED.*does not lead' "$A_LOG" ||
    esc_fail "the old leader was not deposed by a refused write (ES004)"
grep -h 'does not lead' "$A_LOG" | head -n 3
ctl_rc=0
itest_wait_pid "$CTL_PID" 30 "escrowctl against the old leader" || ctl_rc=$?
echo "escrowctl pause sent to the old leader alone: exit $ctl_rc: $(tr '\n' ' ' <"$ITEST_DIR/pause_old.out")"
((ctl_rc != 0)) || esc_fail "the old leader acknowledged the pause"
itest_eq "$(item_state)" active "the item after the old leader's pause"

esc_step "the new leader serves: a pause through both endpoints"
esc_ctl --coordinator "$A_URL,$B_URL" item pause t1 fz
itest_eq "$(item_state)" paused "the item after the new leader's pause"
esc_ctl --coordinator "$A_URL,$B_URL" item resume t1 fz >/dev/null

esc_step "round 2: the old leader stands by; SIGSTOP the new leader"
shard_standby_start --leader-lease-ms $LEADER_LEASE_MS
C_LOG=$SHARD_STANDBY_LOG
kill -STOP "$B_PID"
esc_wait_for 30 led_by "$C_LOG" || esc_fail "the restarted standby did not take over within 30 s"
grep -h 'COORD-LEADER' "$C_LOG"
kill -CONT "$B_PID"
rc=0
itest_wait_pid "$B_PID" 30 "the woken leader" || rc=$?
itest_eq "$rc" 3 "the woken leader's exit status (deposed)"
grep -h 'COORD-LEASE\|COORD-DEPOSED' "$B_LOG"
grep -q 'COORD-DEPOSED.*another epoch' "$B_LOG" ||
    esc_fail "the woken leader did not learn from its renewal that it was deposed"
itest_eq "$(grep -c 'does not lead' "$B_LOG" || true)" 0 "refused writes of the woken leader"
itest_eq "$(itest_q "SELECT epoch FROM coord_leader")" 3 "the lease's epoch (the third leader)"
esc_ctl --coordinator "$A_URL,$B_URL,$SHARD_STANDBY_URL" item pause t1 fz
itest_eq "$(item_state)" paused "the item after the third leader's pause"
itest_invariants fz
itest_pass
