#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# collapse.sh - collapse near sellout. 200 units in 4 segments,
# the coordinator collapses below 50% remaining. 130 buyers take holds that
# they abandon (5 s TTL: the holds must all be live when the coordinator
# looks, also on a slow machine): the item crosses the threshold and
# collapses into one tail segment. The abandoned holds expire on the
# collapsed segments too (checked after the fact: holds that ended there
# after the collapse event);
# their units must be forwarded to the tail, so that before anyone confirms
# the tail holds all 200 units and every other segment none. Then the sale
# sells out exactly, through the tail.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=200
itest_begin collapse
esc_ctl item create t1 cl --total $TOTAL --segments 4 >/dev/null
shard_coord_start --collapse-pct 50
shard_node_start n1
shard_node_start n2
shard_wait_served cl 60
shard_sampler_start cl

esc_step "130 holds, abandoned (TTL 5 s): below the threshold"
# A buyer told TRY_LATER (a dry segment waiting for a transfer) asks again
# every 20..50 ms: 300 times is ~10 s, so a slow transfer does not make a
# buyer give up (every one of the 130 must get its hold).
shard_load --item cl --buyers 130 --concurrency 16 --confirm 0 --release 0 --ttl-ms 5000 \
    --give-up-ms 10000 --deadline-ms 30000 --key-prefix a --quiet \
    >"$ITEST_DIR/load1.out" 2>"$ITEST_DIR/load1.log" ||
    { cat "$ITEST_DIR/load1.out" "$ITEST_DIR/load1.log" >&2; esc_fail "escrow-load failed"; }
grep '^RESULT' "$ITEST_DIR/load1.out"
collapsed() { [[ -n $(itest_q "SELECT tail_segment FROM items WHERE item_id = 'cl'") ]]; }
esc_wait_for 30 collapsed || esc_fail "the item did not collapse below the threshold"
TAIL=$(itest_q "SELECT tail_segment FROM items WHERE item_id = 'cl'")
echo "collapsed into segment $TAIL"
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'cl' AND segment_id <> $TAIL AND state = 'draining'")" 3 \
    "collapsed (draining) segments"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'cl' AND kind = 'collapsed'")" 1 "collapse events"
echo "units held on collapsed segments: $(itest_q "SELECT sum(held) FROM segments WHERE item_id = 'cl' AND segment_id <> $TAIL")"

esc_step "the holds expire; returned units travel to the tail"
all_at_tail() {
    [[ $(itest_q "SELECT sum(available) FILTER (WHERE segment_id = $TAIL) || ' ' ||
        sum(available + held) FILTER (WHERE segment_id <> $TAIL) FROM segments WHERE item_id = 'cl'") == "$TOTAL 0" ]]
}
esc_wait_for 60 all_at_tail || {
    itest_q "SELECT segment_id, state, available, held, sold FROM segments WHERE item_id = 'cl'" >&2
    esc_fail "returned units did not reach the tail"
}
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'cl' AND state = 'expired'")" 130 "expired holds"
expired_after=$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'cl' AND segment_id <> $TAIL AND state = 'expired'
    AND ended_at > (SELECT min(at) FROM outbox WHERE item_id = 'cl' AND kind = 'collapsed')")
((expired_after > 0)) || esc_fail "no hold expired on a collapsed segment after the collapse: the test proved nothing"
echo "holds that expired on collapsed segments after the collapse: $expired_after"
itest_eq "$(itest_q "SELECT coalesce(sum(qty) FILTER (WHERE to_segment = $TAIL AND state = 'received'), 0)
    - coalesce(sum(qty) FILTER (WHERE from_segment = $TAIL AND state IN ('sent', 'received')), 0)
    FROM transfers WHERE item_id = 'cl'")" $((TOTAL - TOTAL / 4)) \
    "units the tail received, net (it started with $((TOTAL / 4)))"
itest_eq "$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'cl' AND state IN ('planned', 'sent')")" 0 \
    "transfers still open"
itest_invariants cl

esc_step "the sale sells out through the tail"
shard_load --item cl --buyers 400 --concurrency 16 --confirm 1 --release 0 --give-up-ms 10000 \
    --deadline-ms 30000 --key-prefix b --quiet >"$ITEST_DIR/load2.out" 2>"$ITEST_DIR/load2.log" ||
    { cat "$ITEST_DIR/load2.out" "$ITEST_DIR/load2.log" >&2; esc_fail "escrow-load failed"; }
line=$(grep '^RESULT' "$ITEST_DIR/load2.out")
echo "$line"
itest_eq "$(itest_field holds_ok "$line")" $TOTAL "holds acknowledged"
itest_eq "$(itest_field stranded "$line")" 0 "units stranded"
shard_sampler_stop
itest_eq "$(itest_q "SELECT sold FROM segments WHERE segment_id = $TAIL")" $TOTAL "units sold by the tail"
itest_eq "$(itest_q "SELECT sum(sold) || ' ' || sum(held) || ' ' || sum(available) FROM segments WHERE item_id = 'cl'")" \
    "$TOTAL 0 0" "sold held available"
itest_invariants cl
itest_pass
