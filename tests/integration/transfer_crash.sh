#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# transfer_crash.sh - a transfer survives the coordinator's death between
# the donor's commit and the receiver's. The coordinator runs with
# ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1: the first time it learns a
# segment-to-segment transfer reached 'sent' it exits before commanding the
# receive. The units are then in no segment: conservation must count them as
# in flight. A restarted coordinator resumes the transfer from its state:
# received exactly once (conservation would break if the units arrived
# twice), and the sale goes on.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=1000
itest_begin transfer_crash
esc_ctl item create t1 tx --total $TOTAL --segments 2 --hold-ttl-ms 2000 >/dev/null
ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1 shard_coord_start --collapse-pct 0
FIRST_COORD=$SHARD_COORD_PID
shard_node_start n1
shard_node_start n2
# n1 came first and got both segments; the coordinator then moves one to n2.
# Buyers start once that move is over: a segment between owners sends them
# on to the other one, which then runs dry too.
spread() { [[ $(itest_q "SELECT count(DISTINCT node_id) FROM segments WHERE item_id = 'tx'") == 2 ]] && _shard_served tx; }
esc_wait_for 60 spread || esc_fail "the two segments are not on the two nodes"
shard_sampler_start tx

esc_step "every buyer on the first segment: it runs dry and asks for stock"
# The buyers only serve to empty the segment; once the coordinator is gone
# they are stopped (holds they leave behind expire after 2 s). A buyer whose
# segment is dry tries the other one, so they go slowly (at most 8 / 20 ms =
# 400 holds/s): the second segment must not run dry before the coordinator's
# transfer out of it is committed (a few hundred ms), or there is nothing to
# send and the failpoint is never reached.
"$ESC_BIN/escrow-load" --coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL" --tenant t1 \
    --item tx --buyers 2000 --concurrency 8 --think-ms 20 --confirm 1 --release 0 --skew 100:50 --segments 2 \
    --deadline-ms 2000 --key-prefix a --quiet >"$ITEST_DIR/load1.out" 2>"$ITEST_DIR/load1.log" &
LOAD_PID=$!
ESC_PIDS+=("$LOAD_PID")
rc=0
itest_wait_pid "$FIRST_COORD" 60 "the coordinator (failpoint)" || rc=$?
itest_kill9 "$LOAD_PID"
itest_eq "$rc" 99 "the coordinator's exit status at the failpoint"
grep -h 'FAILPOINT' "$ITEST_DIR"/coord1.log || true

esc_step "between the two commits: the units are in flight"
XID=$(itest_q "SELECT transfer_id FROM transfers WHERE item_id = 'tx' AND state = 'sent' AND from_segment IS NOT NULL AND to_segment IS NOT NULL")
[[ -n $XID ]] || { itest_q "SELECT * FROM transfers" >&2; esc_fail "no transfer left in state 'sent'"; }
QTY=$(itest_q "SELECT qty FROM transfers WHERE transfer_id = $XID")
echo "transfer $XID: $QTY units sent, not received"
itest_eq "$(itest_q "SELECT in_flight FROM conservation WHERE item_id = 'tx'")" "$QTY" "units in flight"
itest_eq "$(itest_q "SELECT ok FROM conservation WHERE item_id = 'tx'")" t "conservation with the units in flight"
sleep 1 # the nodes go on without a coordinator; nothing receives the transfer
itest_eq "$(itest_q "SELECT state FROM transfers WHERE transfer_id = $XID")" sent "the transfer without a coordinator"

esc_step "restart the coordinator: it resumes the transfer"
shard_coord_start --collapse-pct 0
received() { [[ $(itest_q "SELECT state FROM transfers WHERE transfer_id = $XID") == received ]]; }
esc_wait_for 60 received || esc_fail "transfer $XID was not received after the restart"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'tx' AND kind = 'transfer_received' AND qty = $QTY
    AND segment_id = (SELECT to_segment FROM transfers WHERE transfer_id = $XID)")" \
    "$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'tx' AND state = 'received' AND qty = $QTY")" \
    "receive events for transfers of $QTY units (one each)"
itest_invariants tx

esc_step "the sale completes exactly"
no_holds() { [[ $(itest_q "SELECT sum(held) FROM segments WHERE item_id = 'tx'") == 0 ]]; }
esc_wait_for 60 no_holds || esc_fail "the holds of the stopped buyers did not expire"
left=$(itest_q "SELECT $TOTAL - sum(sold) FROM segments WHERE item_id = 'tx'")
echo "units left to sell: $left"
((left >= QTY)) || esc_fail "only $left units left: the received transfer was not sold after the restart"
shard_load --item tx --buyers 1500 --concurrency 32 --confirm 1 --release 0 --give-up-ms 10000 \
    --deadline-ms 30000 --key-prefix b --quiet >"$ITEST_DIR/load2.out" 2>"$ITEST_DIR/load2.log" ||
    { cat "$ITEST_DIR/load2.out" "$ITEST_DIR/load2.log" >&2; esc_fail "escrow-load failed"; }
line=$(grep '^RESULT' "$ITEST_DIR/load2.out")
echo "$line"
itest_eq "$(itest_field stranded "$line")" 0 "units stranded"
itest_eq "$(itest_field holds_ok "$line")" "$left" "holds acknowledged to the last buyers"
shard_sampler_stop
itest_eq "$(itest_q "SELECT sum(sold) || ' ' || sum(held) || ' ' || sum(available) FROM segments WHERE item_id = 'tx'")" \
    "$TOTAL 0 0" "sold held available"
itest_invariants tx
itest_pass
