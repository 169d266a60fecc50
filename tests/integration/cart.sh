#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cart.sh - a cart is all-or-nothing against a real node: lines for the same
# item are summed into one hold; when a later line fails, the holds already
# taken are released (cancelled, units back) and the failing line is named;
# (the node listens on an ipc endpoint here);
# a retry of a successful cart with the same cart key returns the same holds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin cart
esc_ctl item create t1 shirt --total 10 --segments 2 --node n1 >/dev/null
esc_ctl item create t1 hat --total 1 --segments 1 --node n1 >/dev/null
# over ipc: the node's other transport (local checkout code, no TCP stack)
EP=ipc://$ITEST_DIR/n1.sock
esc_node_start n1 "$EP" "$ITEST_DIR/node-n1.log"

esc_step "cart shirt:1, hat:1, shirt:2 -> two holds, shirt summed to 3"
out=$(itest_probe cart --endpoint "$EP" --item "shirt:1,hat:1,shirt:2" --key cart-ok --buyer ann)
echo "$out"
itest_eq "$(head -1 <<<"$out")" "OK holds=2 failed_line=3" "cart outcome"
itest_eq "$(grep -c '^HOLD item=shirt qty=3 ' <<<"$out")" 1 "one shirt hold of 3"
itest_eq "$(itest_q "SELECT string_agg(item_id || ':' || qty || ':' || state, ',' ORDER BY item_id)
    FROM holds")" "hat:1:held,shirt:3:held" "holds in the database"

esc_step "the same cart key again -> the same holds, no new units"
again=$(itest_probe cart --endpoint "$EP" --item "shirt:1,hat:1,shirt:2" --key cart-ok --buyer ann)
itest_eq "$(grep '^HOLD' <<<"$again" | sort)" "$(grep '^HOLD' <<<"$out" | sort)" "holds of the retried cart"
itest_eq "$(itest_q "SELECT count(*) FROM holds")" 2 "holds after the retry"

esc_step "cart shirt:2, hat:1 while the hat is held -> fails on line 1, the shirt hold is released"
bad=$(itest_probe cart --endpoint "$EP" --item "shirt:2,hat:1" --key cart-bad --buyer bob)
echo "$bad"
itest_eq "$(head -1 <<<"$bad")" "TRY_LATER holds=0 failed_line=1" "failed cart outcome"
itest_eq "$(itest_q "SELECT state FROM holds WHERE idempotency_key = 'cart-bad/shirt'")" cancelled \
    "the compensated shirt hold"
itest_eq "$(itest_q "SELECT sum(available) FROM segments WHERE item_id = 'shirt'")" 7 \
    "shirts available (10 - 3 held by ann; bob's 2 came back)"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'cart-bad/%' AND state = 'held'")" 0 \
    "holds of the failed cart still held"
itest_invariants
itest_pass
