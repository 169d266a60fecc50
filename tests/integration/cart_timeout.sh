#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cart_timeout.sh - a cart retried with the same cart key after ESC_ETIMEDOUT
# completes. Two items on two nodes (routing mode: each line goes to its
# own node); the node of one line is SIGSTOPped, so the cart's deadline runs
# out with that line's outcome unknown: the cart answers TIMEDOUT and KEEPS
# the hold of the line that answered. The node is continued and the cart
# retried with the same key: both holds, the first one the same hold as
# before. Then the definite answers of a used-up cart key: a retry after the
# caller released a line is CART_ENDED (the other hold is released), one
# after the holds lapsed is EXPIRED; neither is a line-level NOT_HELD.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

itest_begin cart_timeout
esc_ctl item create t1 ca --total 10 --segments 1 >/dev/null
shard_coord_start
shard_node_start n1
shard_wait_served ca 60
shard_node_start n2
esc_ctl item create t1 cb --total 10 --segments 1 --coordinator "$SHARD_COORD_URL" >/dev/null
shard_wait_served cb 60
owner() { itest_q "SELECT node_id FROM segments WHERE item_id = '$1'"; }
OWNER_A=$(owner ca)
OWNER_B=$(owner cb)
echo "ca on $OWNER_A, cb on $OWNER_B"
[[ $OWNER_A != "$OWNER_B" ]] || esc_fail "both items on $OWNER_A: the test needs one per node"
ROUTE=(--coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL")
cart() { # KEY DEADLINE_MS [TTL_MS]
    itest_probe cart "${ROUTE[@]}" --item "ca:1,cb:2" --key "$1" --buyer ann --deadline-ms "$2" \
        ${3:+--ttl-ms "$3"}
}
key_state() { itest_q "SELECT coalesce(string_agg(state, ','), 'none') FROM holds WHERE idempotency_key = '$1'"; }

esc_step "cb's node ($OWNER_B) stopped: the cart's deadline runs out on line 1"
kill -STOP "${SHARD_PID[$OWNER_B]}"
esc_on_exit "kill -CONT ${SHARD_PID[$OWNER_B]} 2>/dev/null"
out=$(cart c1 1500)
echo "$out"
itest_eq "$(head -1 <<<"$out")" "TIMEDOUT holds=0 failed_line=1" "the cart whose line 1 got no answer"
itest_eq "$(key_state c1/ca)" held "the hold of line 0 after the timeout (kept for the retry)"
HOLD_A=$(itest_q "SELECT hold_id FROM holds WHERE idempotency_key = 'c1/ca'")

esc_step "cb's node continues; the cart retried with the same key completes"
kill -CONT "${SHARD_PID[$OWNER_B]}"
out=$(cart c1 10000)
echo "$out"
itest_eq "$(head -1 <<<"$out")" "OK holds=2 failed_line=2" "the retried cart"
itest_eq "$(grep -c "^HOLD item=ca qty=1 hold=$HOLD_A\$" <<<"$out")" 1 "line 0's hold, the one kept"
itest_eq "$(grep -c '^HOLD item=cb qty=2 ' <<<"$out")" 1 "line 1's hold"
itest_eq "$(key_state c1/ca) $(key_state c1/cb)" "held held" "the cart's holds in the database"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'c1/%'")" 2 "holds of cart c1"

esc_step "a used-up cart key: released by the caller -> CART_ENDED, the rest released"
out=$(itest_probe release "${ROUTE[@]}" --hold "$HOLD_A")
itest_eq "$(itest_status "$out") $(itest_field state "$out")" "OK cancelled" "the caller releases line 0"
out=$(cart c1 10000)
echo "$out"
itest_eq "$(head -1 <<<"$out")" "CART_ENDED holds=0 failed_line=0" "the cart retried after a release"
itest_eq "$(key_state c1/ca) $(key_state c1/cb)" "cancelled cancelled" "the cart's holds after CART_ENDED"

esc_step "a used-up cart key: the holds lapsed -> EXPIRED"
out=$(cart c2 10000 1000)
itest_eq "$(head -1 <<<"$out")" "OK holds=2 failed_line=2" "a cart whose holds live 1 s"
lapsed() { [[ $(key_state c2/ca) == expired && $(key_state c2/cb) == expired ]]; }
esc_wait_for 60 lapsed || esc_fail "the holds of cart c2 did not expire"
out=$(cart c2 10000 1000)
echo "$out"
itest_eq "$(head -1 <<<"$out")" "EXPIRED holds=0 failed_line=0" "the cart retried after its holds lapsed"
itest_eq "$(itest_q "SELECT sum(available) FROM segments")" 20 "units available at the end"
itest_invariants
itest_pass
