#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fencing.sh - a newer owner fences the old one (the epoch: docs/protocols.md).
# Node A (node id n1) serves under load; node B starts with the same node
# id on another port, which raises the segments' epoch. From B's SEG-READY
# on, A acknowledges nothing: every OK A gives is recorded with its wall
# time and there must be none after that moment; reserve/confirm/release/
# extend sent to A are refused (FENCED or NOT_OWNER); no hold with A's epoch
# is created after B took over; B serves, including A's holds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin fencing
esc_ctl item create t1 fence --total 100000 --segments 2 --node n1 >/dev/null
PORT_A=$(itest_port)
itest_node n1 "$PORT_A"
PID_A=$ITEST_NODE_PID
LOG_A=$ITEST_NODE_LOG
EP_A=tcp://127.0.0.1:$PORT_A

refused() { # STATUS -> true for the two answers a fenced owner may give
    [[ $1 == FENCED || $1 == NOT_OWNER ]]
}
reserve_ok() { # EP KEY -> hold id
    local out
    out=$(itest_probe reserve --endpoint "$1" --item fence --key "$2")
    [[ $(itest_status "$out") == OK ]] || esc_fail "fencing: reserve $2 via $1: $out"
    itest_field hold "$out"
}

esc_step "A serves"
H1=$(reserve_ok "$EP_A" p1-a)
H2=$(reserve_ok "$EP_A" p1-b)
EPOCH_A=$(itest_q "SELECT DISTINCT epoch FROM segments WHERE item_id = 'fence'")
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE epoch = $EPOCH_A")" 2 "holds written with A's epoch $EPOCH_A"

esc_step "load on A (32 buyers in flight, reserve then confirm), recording every OK"
STOP=$ITEST_DIR/stop-load
"$ESC_PROBE" fence-load --endpoint "$EP_A" --item fence --prefix fl --concurrency 32 \
    --deadline-ms 1000 --out "$ITEST_DIR/oks.txt" --stop-file "$STOP" \
    >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" &
LOAD_PID=$!
ESC_PIDS+=("$LOAD_PID")
esc_wait_for 60 test -s "$ITEST_DIR/oks.txt" ||
    esc_fail "fencing: A acknowledged nothing under load before the takeover"
oks_before=$(wc -l <"$ITEST_DIR/oks.txt")

esc_step "B starts with node id n1 (A has acknowledged $oks_before so far)"
PORT_B=$(itest_port)
itest_node n1 "$PORT_B"
PID_B=$ITEST_NODE_PID
T_READY=$(date +%s%3N)
EP_B=tcp://127.0.0.1:$PORT_B
EPOCH_B=$(itest_q "SELECT DISTINCT epoch FROM segments WHERE item_id = 'fence'")
itest_eq "$EPOCH_B" $((EPOCH_A + 1)) "the segments' epoch after B took them"
S1=$(itest_q "SELECT count(*) FROM holds WHERE epoch = $EPOCH_A")
# A learns of B when the database fences its next commit on each segment
# (SEG-FENCED; the load keeps A committing); from then on it refuses them.
NSEGS=$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'fence'")
a_fenced() { (($(grep -oE 'SEG-FENCED seg=[0-9]+ ' "$LOG_A" | sort -u | wc -l) >= NSEGS)); }
esc_wait_for 60 a_fenced || esc_fail "fencing: A did not log SEG-FENCED for its $NSEGS segments"

esc_step "A refuses"
for call in "reserve --item fence --key p2-new" "confirm --hold $H1" "release --hold $H2" \
    "extend --hold $H1 --ttl-ms 60000" "confirm --hold $H2 --qty 1"; do
    # shellcheck disable=SC2086
    out=$(itest_probe $call --endpoint "$EP_A")
    echo "A: $call -> $out"
    refused "$(itest_status "$out")" || esc_fail "fencing: A answered '$out' to '$call' after B took over"
done

touch "$STOP"
itest_wait_pid "$LOAD_PID" 60 "the load probe" || esc_fail "fencing: the load probe failed"
cat "$ITEST_DIR/load.out"
late=$(awk -v t="$T_READY" '$2 > t' "$ITEST_DIR/oks.txt" | wc -l)
if ((late != 0)); then
    awk -v t="$T_READY" '$2 > t' "$ITEST_DIR/oks.txt" | head >&2
    esc_fail "fencing: A acknowledged $late operations after B was ready (at $T_READY)"
fi
refusals=$(awk '$1 == "STATUS" && ($2 == "FENCED" || $2 == "NOT_OWNER") {n += $3} END {print n + 0}' "$ITEST_DIR/load.out")
((refusals > 0)) || esc_fail "fencing: the load never saw A refuse"
echo "A: $(wc -l <"$ITEST_DIR/oks.txt") OKs, all before B was ready; $refusals refusals after"

esc_step "the database"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE epoch = $EPOCH_A")" "$S1" \
    "holds with A's epoch (taken when B was ready) after A kept being asked"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'p2-%'")" 0 "holds of keys only A was asked for"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE epoch NOT IN ($EPOCH_A, $EPOCH_B)")" 0 "holds with another epoch"
# every reserve A acknowledged is stored (the keys go to psql through COPY:
# their number grows with the machine's speed, past what a command line holds)
stored=$(awk '$3 == "reserve" {print $5}' "$ITEST_DIR/oks.txt" |
    esc_psql_with_rows acked "SELECT count(*) FROM holds WHERE idempotency_key IN (SELECT v FROM acked)")
itest_eq "$stored" "$(awk '$3 == "reserve"' "$ITEST_DIR/oks.txt" | wc -l)" \
    "stored holds of the reserves A acknowledged"
itest_invariants fence

esc_step "B serves, A's holds included"
H3=$(reserve_ok "$EP_B" p3-b)
itest_eq "$(itest_q "SELECT epoch FROM holds WHERE hold_id = $H3")" "$EPOCH_B" "epoch of a hold made by B"
out=$(itest_probe confirm --endpoint "$EP_B" --hold "$H1")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK converted" "confirm via B of a hold A made"
out=$(itest_probe release --endpoint "$EP_B" --hold "$H2")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK cancelled" "release via B of a hold A made"
out=$(itest_probe reserve --endpoint "$EP_A" --item fence --key p2-new)
refused "$(itest_status "$out")" || esc_fail "fencing: A answered '$out' at the end"
itest_invariants fence

esc_node_stop "$PID_A" || echo "note: fenced node A exited with status $? on SIGTERM"
esc_node_stop "$PID_B" || esc_fail "fencing: node B did not stop cleanly"
itest_invariants fence
itest_pass
