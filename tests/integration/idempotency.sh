#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# idempotency.sh - one key, one hold (docs/guarantees.md). Five reserves with the
# same key in flight at once get the same hold; the same key with other
# parameters is IDEMPOTENCY_MISMATCH; after a restart of the node the key
# still names its hold; a resolve finds a key's hold in the database and voids
# late copies of its attempt; rejections (sold out) are not stored.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin idempotency
esc_ctl item create t1 idem --total 10 --segments 2 --node n1 >/dev/null
esc_ctl item create t1 other --total 5 --segments 1 --node n1 >/dev/null
esc_ctl item create t1 tiny --total 1 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT"
EP=tcp://127.0.0.1:$PORT
KEY=checkout-7f3a

# counters of item idem and the holds/events of KEY, in one line
snapshot() {
    itest_q "SELECT (SELECT sum(available) || '/' || sum(held) || '/' || sum(sold) FROM segments WHERE item_id = 'idem')
        || ' holds=' || (SELECT count(*) FROM holds WHERE idempotency_key = '$KEY')
        || ' all_holds=' || (SELECT count(*) FROM holds)
        || ' held_events=' || (SELECT count(*) FROM outbox o JOIN holds h USING (hold_id) WHERE h.idempotency_key = '$KEY' AND o.kind = 'held')"
}

esc_step "5 concurrent reserves, one key, qty 2"
out=$(itest_probe same-key --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 2 --n 5) ||
    esc_fail "idempotency: the 5 concurrent reserves did not all get one hold"
echo "$out"
HOLD=$(echo "$out" | sed -n 's/^HOLD //p')
itest_eq "$(echo "$out" | grep -c "^REPLY .* OK hold=$HOLD .*state=held qty=2 ")" 5 "replies OK with hold $HOLD, qty 2"
itest_eq "$(snapshot)" "8/2/0 holds=1 all_holds=1 held_events=1" "database after 5 reserves with one key"
itest_eq "$(itest_q "SELECT hold_id || ' ' || qty || ' ' || state || ' ' || buyer_id FROM holds WHERE idempotency_key = '$KEY'")" \
    "$HOLD 2 held buyer-1" "the one hold"

esc_step "same key, other parameters"
for args in "--item idem --buyer buyer-1 --qty 3" "--item idem --buyer buyer-2 --qty 2" \
    "--item other --buyer buyer-1 --qty 2"; do
    # shellcheck disable=SC2086
    out=$(itest_probe reserve --endpoint "$EP" --key "$KEY" $args)
    itest_eq "$(itest_status "$out")" IDEMPOTENCY_MISMATCH "reserve $KEY with $args"
done
out=$(itest_probe reserve --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 2)
itest_eq "$(itest_status "$out") $(itest_field hold "$out")" "OK $HOLD" "a plain retry"
itest_eq "$(snapshot)" "8/2/0 holds=1 all_holds=1 held_events=1" "database after mismatches and a retry"
itest_eq "$(itest_q "SELECT sum(available) FROM segments WHERE item_id = 'other'")" 5 "item other untouched"

esc_step "restart the node (SIGTERM, start again)"
esc_node_stop "$ITEST_NODE_PID" || esc_fail "idempotency: the node did not stop cleanly"
itest_node n1 "$PORT"
out=$(itest_probe reserve --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 2)
itest_eq "$(itest_status "$out") $(itest_field hold "$out") $(itest_field state "$out")" "OK $HOLD held" \
    "the key after a restart"
out=$(itest_probe same-key --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 2 --n 5) ||
    esc_fail "idempotency: 5 concurrent retries after the restart did not all get the hold"
itest_eq "$(echo "$out" | sed -n 's/^HOLD //p')" "$HOLD" "5 concurrent retries after the restart"
out=$(itest_probe reserve --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 1)
itest_eq "$(itest_status "$out")" IDEMPOTENCY_MISMATCH "other qty after the restart"
itest_eq "$(snapshot)" "8/2/0 holds=1 all_holds=1 held_events=1" "database after the restart and retries"

esc_step "the key after its hold was confirmed (restart again first)"
out=$(itest_probe confirm --endpoint "$EP" --hold "$HOLD")
itest_eq "$(itest_status "$out") $(itest_field state "$out") $(itest_field sold "$out")" "OK converted 2" "confirm"
esc_node_stop "$ITEST_NODE_PID" || esc_fail "idempotency: the node did not stop cleanly"
itest_node n1 "$PORT"
out=$(itest_probe reserve --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 2)
itest_eq "$(itest_status "$out") $(itest_field hold "$out") $(itest_field state "$out")" "OK $HOLD converted" \
    "a retry of a confirmed hold's key"
itest_eq "$(snapshot)" "8/0/2 holds=1 all_holds=1 held_events=1" "database after confirm, restart, retry"

esc_step "resolve: the key's hold (from the database), NOT_FOUND, a voided attempt"
# KEY's hold ended before this node started, so it is not in memory: the
# database answers. libescrow sends a resolve before a "no" when a copy of
# its reserve went unanswered (README, Answers).
out=$(itest_probe hint-reserve --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 2 \
    --attempt 11 --resolve)
itest_eq "$(itest_status "$out") $(itest_field hold "$out") $(itest_field state "$out")" \
    "OK $HOLD converted" "resolve of a key whose hold ended before this node started"
out=$(itest_probe hint-reserve --endpoint "$EP" --item idem --key "$KEY" --buyer buyer-1 --qty 1 \
    --attempt 11 --resolve)
itest_eq "$(itest_status "$out")" IDEMPOTENCY_MISMATCH "resolve with other parameters"
out=$(itest_probe hint-reserve --endpoint "$EP" --item idem --key never-1 --attempt 12 --resolve)
itest_eq "$(itest_status "$out")" NOT_FOUND "resolve of a key with no hold"
out=$(itest_probe hint-reserve --endpoint "$EP" --item idem --key never-1 --attempt 12)
itest_eq "$(itest_status "$out")" CONFLICT "a late copy of the resolved attempt"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key = 'never-1'")" 0 \
    "holds stored for the late copy"
itest_eq "$(snapshot)" "8/0/2 holds=1 all_holds=1 held_events=1" "database after the resolves"
out=$(itest_probe hint-reserve --endpoint "$EP" --item idem --key never-1 --attempt 13)
NEVER=$(itest_field hold "$out")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK held" "a new call with that key"
out=$(itest_probe hint-reserve --endpoint "$EP" --item idem --key never-1 --attempt 12 --resolve)
itest_eq "$(itest_status "$out") $(itest_field hold "$out")" "OK $NEVER" "resolve once the key has a hold"
out=$(itest_probe hint-reserve --endpoint "$EP" --item nope --key never-2 --attempt 14 --resolve)
itest_eq "$(itest_status "$out")" UNKNOWN_ITEM "resolve for an unknown item"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'never-%'")" 1 \
    "holds of the never-* keys"
out=$(itest_probe release --endpoint "$EP" --hold "$NEVER")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK cancelled" "release the new call's hold"

esc_step "rejections are not stored"
out=$(itest_probe reserve --endpoint "$EP" --item tiny --key tiny-1)
itest_eq "$(itest_status "$out")" OK "the only unit of tiny"
itest_probe confirm --endpoint "$EP" --hold "$(itest_field hold "$out")" >/dev/null
out=$(itest_probe reserve --endpoint "$EP" --item tiny --key tiny-2)
itest_eq "$(itest_status "$out")" SOLD_OUT "tiny after its sellout"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key = 'tiny-2'")" 0 "holds stored for a SOLD_OUT"
# the same key may now be used for something else: nothing was stored
out=$(itest_probe reserve --endpoint "$EP" --item other --key tiny-2 --qty 2)
itest_eq "$(itest_status "$out") $(itest_field qty "$out") $(itest_field item "$out")" "OK 2 other" \
    "a key whose reserve was rejected, reused for another item"

itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "idempotency: the node did not stop cleanly"
itest_pass
