#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# managed.sh - segment nodes under a coordinator (escrow-segment --coordinator),
# real processes and a real PostgreSQL, with a fake coordinator
# (esc_probe fake-coord) whose heartbeat replies this script writes. The
# script does what the coordinator would do in the database (owner and epoch
# in one conditional write, transfer rows) and checks:
#   assignment -> the node loads the segments and serves them; a hint for a
#   segment it does not serve is NOT_OWNER; paused -> PAUSED; draining ->
#   NOT_OWNER; a dry segment is SEGMENT_EMPTY and reported in the dry list;
#   an operator release is recorded with actor 'operator';
#   a GIVE and a RECEIVE, each command repeated after its result was
#   acknowledged, are applied exactly once (transfers and segments rows,
#   outbox, exact numbers; the repeats report STALE);
#   a segment left out of the node's set (a move in flight) is dropped, and
#   loaded again when it comes back at the same epoch (the move failed);
#   a higher epoch elsewhere fences the first node (FENCED, then NOT_OWNER
#   once its assignment drops the segment); the new owner serves, the old
#   owner's holds included; the segment comes back to the first node at a
#   higher epoch still; SIGTERM sends a 'stopping' heartbeat.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin managed
esc_ctl item create t1 m --total 100 --segments 2 >/dev/null
itest_q "INSERT INTO nodes (node_id) VALUES ('n1'), ('n2') ON CONFLICT DO NOTHING" >/dev/null
read -r S1 S2 <<<"$(itest_q "SELECT string_agg(segment_id::text, ' ' ORDER BY seg_no) FROM segments WHERE item_id = 'm'")"
seg_row() { # SEG -> "available held sold"
    itest_q "SELECT available || ' ' || held || ' ' || sold FROM segments WHERE segment_id = $1"
}
itest_eq "$(seg_row "$S1") $(seg_row "$S2")" "50 0 0 50 0 0" "the item's two segments"

SPEC=$ITEST_DIR/spec
HBLOG=$ITEST_DIR/heartbeats.txt
spec() { # LINE... -> the fake coordinator's answers from now on
    printf '%s\n' "$@" >"$SPEC.tmp"
    mv "$SPEC.tmp" "$SPEC"
}
grant() { # NODE SEG -> the new epoch (what the coordinator commits before it assigns)
    itest_q "UPDATE segments SET node_id = '$1', epoch = epoch + 1 WHERE segment_id = $2 RETURNING epoch"
}
hbs() { # NODE -> heartbeats received from it so far
    grep -c "^HB node=$1 " "$HBLOG" 2>/dev/null || true
}
hb_count_at_least() {
    (($(hbs "$1") >= $2))
}
hb_sync() { # NODE: three more heartbeats, so the current spec was applied
    local n
    n=$(hbs "$1")
    esc_wait_for 30 hb_count_at_least "$1" $((n + 3)) || esc_fail "managed: $1 stopped heartbeating"
}
hb_has() { # NODE REGEX: a heartbeat of NODE matches
    grep "^HB node=$1 " "$HBLOG" | grep -E "$2" >/dev/null
}
loaded() { # LOG SEG COUNT: the node logged SEG-LOADED for SEG at least COUNT times
    (($(grep -c "SEG-LOADED seg=$2 " "$1" || true) >= $3))
}
hr() { # NODE EP KEY SEG [QTY] -> outcome line of a reserve with a segment hint
    itest_probe hint-reserve --endpoint "$2" --item m --key "$3" --segment "$4" --qty "${5:-1}"
}
last_seg_stats() { # NODE SEG -> "available:held:sold" from the node's last heartbeat
    grep "^HB node=$1 " "$HBLOG" | tail -n 1 | sed -E 's/.* segs=([^ ]*) .*/\1/' | tr ',' '\n' |
        awk -F: -v s="$2" '$1 == s {print $3 ":" $4 ":" $5}'
}

esc_step "a fake coordinator and node A (n1) in managed mode"
echo "hb_ms 50" >"$SPEC"
CPORT=$(itest_port)
COORD=tcp://127.0.0.1:$CPORT
esc_spawn "$ITEST_DIR/coord.log" env ESC_PROBE_TIMEOUT_S=0 "$ESC_PROBE" fake-coord \
    --endpoint "$COORD" --in "$SPEC" --out "$HBLOG" --stop-file "$ITEST_DIR/stop-coord"
PA=$(itest_port)
EP_A=tcp://127.0.0.1:$PA
itest_node n1 "$PA" --coordinator "$COORD"
PID_A=$ITEST_NODE_PID
LOG_A=$ITEST_NODE_LOG
esc_wait_for 30 hb_count_at_least n1 1 || esc_fail "managed: no heartbeat from n1"
hb_has n1 "endpoint=$EP_A " || esc_fail "managed: n1's heartbeat does not name its endpoint"
out=$(hr n1 "$EP_A" a0 "$S1")
itest_eq "$(itest_status "$out")" NOT_OWNER "a reserve before any assignment"

esc_step "assignment: A loads S1=$S1 and S2=$S2 and serves them"
E1=$(grant n1 "$S1")
E2=$(grant n1 "$S2")
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0"
esc_wait_for 30 loaded "$LOG_A" "$S1" 1 || esc_fail "managed: A did not load S1"
esc_wait_for 30 loaded "$LOG_A" "$S2" 1 || esc_fail "managed: A did not load S2"
out=$(hr n1 "$EP_A" a1 "$S1" 2)
itest_eq "$(itest_status "$out") $(itest_field seg "$out") $(itest_field qty "$out")" "OK $S1 2" "reserve 2 on S1 via A"
H1=$(itest_field hold "$out")
out=$(hr n1 "$EP_A" a2 "$S2" 3)
itest_eq "$(itest_status "$out") $(itest_field seg "$out")" "OK $S2" "reserve 3 on S2 via A"
H2=$(itest_field hold "$out")
itest_eq "$(seg_row "$S1") $(seg_row "$S2")" "48 2 0 47 3 0" "segments after two reserves"
itest_eq "$(itest_q "SELECT epoch FROM holds WHERE hold_id = $H1")" "$E1" "the epoch A wrote its hold with"
out=$(hr n1 "$EP_A" a3 99999)
itest_eq "$(itest_status "$out")" NOT_OWNER "a hint for a segment A does not serve"
hb_sync n1
itest_eq "$(last_seg_stats n1 "$S1")" "48:2:0" "S1 in A's heartbeat"

esc_step "paused, draining, dry, operator release"
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 1"
hb_sync n1
itest_eq "$(itest_status "$(hr n1 "$EP_A" a4 "$S2")")" PAUSED "a reserve of a paused item"
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 1 0"
hb_sync n1
out=$(hr n1 "$EP_A" a5 "$S2")
itest_eq "$(itest_status "$out")" NOT_OWNER "a reserve on a draining segment"
[[ $(itest_field msg "$out") == *refresh_the_route* ]] || esc_fail "managed: draining answer without its reason: $out"
out=$(itest_probe op-release --endpoint "$EP_A" --hold "$H2")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK cancelled" "operator release of a hold on a draining segment"
itest_eq "$(itest_q "SELECT count(*) || ' ' || max(actor) FROM outbox WHERE hold_id = $H2 AND kind = 'cancelled'")" "1 operator" "the outbox names the operator"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE hold_id = $H1 AND actor IS NOT NULL")" 0 "buyer events carry no actor"
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0"
hb_sync n1
out=$(hr n1 "$EP_A" a6 "$S1" 49)
itest_eq "$(itest_status "$out")" SEGMENT_EMPTY "49 units from S1 (48 available): never SOLD_OUT or TRY_LATER"
esc_wait_for 30 hb_has n1 "dry=([0-9]+,)*$S1( |,|$)" || esc_fail "managed: S1 not reported dry"
itest_eq "$(seg_row "$S1") $(seg_row "$S2")" "48 2 0 50 0 0" "segments after the release"

esc_step "GIVE: S1 sends 5 to S2, the command repeated"
X=$(itest_q "INSERT INTO transfers (tenant_id, item_id, from_segment, to_segment, qty, planned_qty, reason)
             VALUES ('t1', 'm', $S1, $S2, 5, 5, 'rebalance') RETURNING transfer_id")
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0" "xfer n1 $X give $S1 5"
esc_wait_for 30 hb_has n1 "xfers=([0-9:]+,)*$X:1:5( |,)" || esc_fail "managed: no 'sent 5' result for transfer $X"
# the command stays in every reply: after the result was acknowledged the
# node runs it again and the database finds it moved on
esc_wait_for 30 hb_has n1 "xfers=([0-9:]+,)*$X:4:0( |,)" || esc_fail "managed: the repeated GIVE was not reported stale"
itest_eq "$(itest_q "SELECT state || ' ' || qty || ' ' || (sent_batch IS NOT NULL) FROM transfers WHERE transfer_id = $X")" "sent 5 true" "transfer row after GIVE"
itest_eq "$(seg_row "$S1") $(seg_row "$S2")" "43 2 0 50 0 0" "segments after GIVE (5 in flight)"
itest_eq "$(itest_q "SELECT in_flight || ' ' || ok FROM conservation WHERE item_id = 'm'")" "5 true" "conservation with 5 in flight"
# While the command repeats, a stale GIVE may be pending in memory (units
# taken tentatively until the database says stale): stop it, then look.
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0"
hb_sync n1
itest_eq "$(last_seg_stats n1 "$S1")" "43:2:0" "S1 in A's memory after GIVE"

esc_step "RECEIVE: S2 takes the 5, the command repeated"
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0" "xfer n1 $X receive $S2 5"
esc_wait_for 30 hb_has n1 "xfers=([0-9:]+,)*$X:2:5( |,)" || esc_fail "managed: no 'received 5' result for transfer $X"
esc_wait_for 30 hb_has n1 "xfers=([0-9:]+,)*$X:4:0( |,).*" || esc_fail "managed: stale result missing"
n_stale=$(grep "^HB node=n1 " "$HBLOG" | grep -Ec "xfers=([0-9:]+,)*$X:4:0( |,)")
hb_sync n1
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0"
hb_sync n1
itest_eq "$(itest_q "SELECT state || ' ' || qty || ' ' || (received_batch IS NOT NULL) FROM transfers WHERE transfer_id = $X")" "received 5 true" "transfer row after RECEIVE"
itest_eq "$(seg_row "$S1") $(seg_row "$S2")" "43 2 0 55 0 0" "segments after RECEIVE (applied once)"
itest_eq "$(itest_q "SELECT in_flight || ' ' || ok FROM conservation WHERE item_id = 'm'")" "0 true" "conservation after RECEIVE"
itest_eq "$(itest_q "SELECT string_agg(kind || ':' || segment_id || ':' || qty, ' ' ORDER BY event_id) FROM outbox WHERE kind LIKE 'transfer_%'")" \
    "transfer_sent:$S1:5 transfer_received:$S2:5" "one outbox event per transfer step"
itest_eq "$(last_seg_stats n1 "$S2")" "55:0:0" "S2 in A's memory after RECEIVE"
((n_stale >= 1)) || esc_fail "managed: no stale report"
itest_invariants m

esc_step "a move that did not commit: S2 left out of A's set, then back at the same epoch"
# While a move's UPDATE is in flight the coordinator leaves the segment out
# of its old owner's set; when the UPDATE fails (the database went away), the
# segment is the old owner's again, at the epoch it had. A drops it, and
# must load it again: nobody else may ever serve it at that epoch.
spec "hb_ms 50" "assign n1 $S1 $E1 0 0"
esc_wait_for 30 grep -q "SEG-DROP seg=$S2 .*(unassigned)" "$LOG_A" ||
    esc_fail "managed: A did not drop S2 when its set left it out"
itest_eq "$(itest_status "$(hr n1 "$EP_A" a10 "$S2")")" NOT_OWNER "A's answer for S2 while its set leaves it out"
spec "hb_ms 50" "assign n1 $S1 $E1 0 0" "assign n1 $S2 $E2 0 0"
esc_wait_for 30 loaded "$LOG_A" "$S2" 2 || esc_fail "managed: A did not load S2 again at the epoch it had"
out=$(hr n1 "$EP_A" a11 "$S2")
itest_eq "$(itest_status "$out") $(itest_field seg "$out")" "OK $S2" "A serves S2 again"
itest_eq "$(seg_row "$S2")" "54 1 0" "S2 after A's reserve"

esc_step "node B (n2); S1 moves to B at a higher epoch: A is fenced"
PB=$(itest_port)
EP_B=tcp://127.0.0.1:$PB
itest_node n2 "$PB" --coordinator "$COORD"
PID_B=$ITEST_NODE_PID
LOG_B=$ITEST_NODE_LOG
E1B=$(grant n2 "$S1")
# A has not been told: its next commit on S1 is refused by the database
out=$(hr n1 "$EP_A" a7 "$S1")
itest_eq "$(itest_status "$out")" FENCED "A's reserve on S1 after the epoch moved"
esc_wait_for 30 grep -q "SEG-FENCED seg=$S1 " "$LOG_A" || esc_fail "managed: A did not log SEG-FENCED"
spec "hb_ms 50" "assign n1 $S2 $E2 0 0" "assign n2 $S1 $E1B 0 0"
esc_wait_for 30 loaded "$LOG_B" "$S1" 1 || esc_fail "managed: B did not load S1"
hb_sync n1
itest_eq "$(itest_status "$(hr n1 "$EP_A" a8 "$S1")")" NOT_OWNER "A's answer for S1 once unassigned"
out=$(hr n2 "$EP_B" b1 "$S1")
itest_eq "$(itest_status "$out") $(itest_field seg "$out")" "OK $S1" "B serves S1"
HB1=$(itest_field hold "$out")
itest_eq "$(itest_q "SELECT epoch FROM holds WHERE hold_id = $HB1")" "$E1B" "B's epoch on its hold"
out=$(itest_probe confirm --endpoint "$EP_B" --hold "$H1")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK converted" "B confirms the hold A made"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key = 'a7'")" 0 "the reserve A was refused is not stored"
itest_eq "$(seg_row "$S1")" "42 1 2" "S1 after B's reserve and confirm"

esc_step "S1 back to A at a higher epoch: B drops it, A loads it again"
E1C=$(grant n1 "$S1")
spec "hb_ms 50" "assign n1 $S1 $E1C 0 0" "assign n1 $S2 $E2 0 0"
esc_wait_for 30 loaded "$LOG_A" "$S1" 2 || esc_fail "managed: A did not load S1 again"
esc_wait_for 30 grep -q "SEG-DROP seg=$S1 " "$LOG_B" || esc_fail "managed: B did not drop S1"
out=$(hr n1 "$EP_A" a9 "$S1")
itest_eq "$(itest_status "$out")" OK "A serves S1 again"
itest_eq "$(itest_status "$(hr n2 "$EP_B" b2 "$S1")")" NOT_OWNER "B's answer for S1 after it was dropped"
out=$(hr n1 "$EP_A" b1 "$S1")
itest_eq "$(itest_status "$out") $(itest_field hold "$out")" "OK $HB1" "B's hold, asked again of A (same key), is the same hold"
itest_eq "$(seg_row "$S1")" "41 2 2" "S1 after A's new reserve (the repeated key took nothing)"
itest_invariants m

esc_step "SIGTERM: the last heartbeat says stopping"
esc_node_stop "$PID_A" || esc_fail "managed: node A did not stop cleanly"
hb_has n1 "stopping=1 " || esc_fail "managed: A's last heartbeat did not say stopping"
esc_node_stop "$PID_B" || esc_fail "managed: node B did not stop cleanly"
touch "$ITEST_DIR/stop-coord"
itest_invariants m
itest_pass
