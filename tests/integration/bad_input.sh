#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bad_input.sh - input from the network is validated and answered, never
# trusted (docs/guarantees.md, "Bad input changes nothing"). Through a raw nanomsg REQ socket
# esc_probe sends malformed protobuf, out-of-range quantities, oversized ids,
# unknown tenants and items, misused hold ids, a frame over the node's 4 KiB
# maximum for requests; through plain TCP: garbage, a wrong SP header, a frame
# length of 140 TB, half frames, idle connections. Each gets its exact error
# code or a dropped connection; nothing reaches the database (a snapshot
# before equals the one after); the node still serves a valid reserve.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin bad_input
esc_ctl item create t1 good --total 10 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT"
EP=tcp://127.0.0.1:$PORT

# a hold for the cases that misuse an existing hold (foreign tenant, key reuse, over-confirm)
out=$(itest_probe reserve --endpoint "$EP" --item good --key bi-hold --qty 2)
[[ $(itest_status "$out") == OK ]] || esc_fail "bad_input: the setup reserve failed: $out"
HOLD=$(itest_field hold "$out")
SEG=$(itest_field seg "$out")

snapshot() {
    itest_q "SELECT 'holds=' || (SELECT count(*) FROM holds)
        || ' holds_state=' || (SELECT string_agg(hold_id || ':' || state || ':' || qty_sold || ':' || extended
                                                 || ':' || round(extract(epoch FROM expires_at) * 1000), ',' ORDER BY hold_id) FROM holds)
        || ' outbox=' || (SELECT count(*) FROM outbox)
        || ' segments=' || (SELECT string_agg(segment_id || ':' || available || '/' || held || '/' || sold
                                              || '@' || epoch || '#' || hold_seq, ',' ORDER BY segment_id) FROM segments)
        || ' buyer_usage=' || (SELECT count(*) FROM buyer_usage)
        || ' nodes=' || (SELECT count(*) FROM nodes)"
}
before=$(snapshot)
echo "before: $before"

esc_step "bad input"
itest_probe raw --endpoint "$EP" --item good --hold "$HOLD" --segment "$SEG" --key bi-hold --qty 2 ||
    esc_fail "bad_input: a case got an unexpected answer (see CASE lines above)"
kill -0 "$ITEST_NODE_PID" 2>/dev/null || esc_fail "bad_input: the node died"

after=$(snapshot)
echo "after:  $after"
itest_eq "$after" "$before" "database snapshot after the bad input"

esc_step "the node still serves"
out=$(itest_probe reserve --endpoint "$EP" --item good --key bi-after --qty 3)
itest_eq "$(itest_status "$out") $(itest_field qty "$out") $(itest_field state "$out")" "OK 3 held" "a valid reserve"
out=$(itest_probe confirm --endpoint "$EP" --hold "$HOLD")
itest_eq "$(itest_status "$out") $(itest_field state "$out") $(itest_field sold "$out")" "OK converted 2" \
    "the hold the bad input tried to misuse, confirmed"
itest_eq "$(itest_q "SELECT available || '/' || held || '/' || sold FROM segments WHERE item_id = 'good'")" "5/3/2" \
    "counters of good"
itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "bad_input: the node did not stop cleanly"
itest_pass
