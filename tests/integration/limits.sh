#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# limits.sh - per-order and per-buyer maximums are exact, also when one
# buyer's requests reach two node processes that own different segments of
# the item: the database is the arbiter (buyer_usage, charged inside the
# commit function; a buyer over the limit gets BUYER_LIMIT and his hold is
# removed in the same transaction, the rest of the batch commits).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

BUYERS=40     # distinct buyers
PER_BUYER=3   # max-per-buyer
REQUESTS=1200 # reserve requests per load process, each 1 unit, every buyer many times

itest_begin limits
[[ -x $ESC_BIN/escrow-load ]] || esc_fail "limits: no escrow-load in ESC_BIN=$ESC_BIN"

esc_step "item t1/capped: 1000 units, 4 segments, max 2 per order, max $PER_BUYER per buyer"
esc_ctl item create t1 capped --total 1000 --segments 4 --node n1 --max-per-order 2 \
    --max-per-buyer $PER_BUYER >/dev/null
# half of the segments belong to a second node process
esc_psql "INSERT INTO nodes (node_id) VALUES ('n2')" >/dev/null
esc_psql "UPDATE segments SET node_id = 'n2' WHERE item_id = 'capped' AND seg_no >= 2" >/dev/null
P1=$(itest_port)
itest_node n1 "$P1"
P2=$(itest_port)
itest_node n2 "$P2"

esc_step "per-order maximum: qty 3 is refused, nothing changes"
line=$("$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$P1" --tenant t1 --item capped \
    --buyers 5 --qty 3 --concurrency 5 --key-prefix big-order --deadline-ms 30000 --quiet --dsn "$ESCROW_DSN" |
    grep '^RESULT')
itest_eq "$(itest_field holds_ok "$line")" 0 "holds for qty 3 over a maximum of 2"
itest_eq "$(itest_q "SELECT count(*) FROM holds")" 0 "holds in the database after ORDER_LIMIT"

esc_step "2 x escrow-load, one per node, the same $BUYERS buyers, $REQUESTS requests each"
# Every request must be answered (the counts below are exact): a deadline of
# 30 s, not escrow-load's 5 s, so that a loaded machine's late answer is not
# an error.
pids=()
for n in 1 2; do
    port=$P1
    [[ $n == 2 ]] && port=$P2
    "$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$port" --tenant t1 --item capped \
        --buyers $REQUESTS --buyer-pool $BUYERS --concurrency 200 --confirm 0.5 --release 0 \
        --key-prefix "lim$n" --seed $n --deadline-ms 30000 >"$ITEST_DIR/load$n.out" 2>"$ITEST_DIR/load$n.log" &
    pids+=($!)
done
for pid in "${pids[@]}"; do
    wait "$pid" || esc_fail "limits: an escrow-load process failed"
done
# Both loads use buyer ids "buyer-<i>": the same people on both nodes.
itest_eq "$(itest_q "SELECT count(DISTINCT buyer_id) FROM holds")" $BUYERS "distinct buyers with holds"
itest_eq "$(itest_q "SELECT count(*) FROM (SELECT buyer_id FROM holds WHERE state IN ('held', 'converted')
        GROUP BY buyer_id HAVING sum(qty) <> $PER_BUYER) x")" 0 \
    "buyers whose live + bought units differ from the maximum of $PER_BUYER"
itest_eq "$(itest_q "SELECT sum(held + sold) FROM segments WHERE item_id = 'capped'")" \
    $((BUYERS * PER_BUYER)) "units held or sold"
itest_eq "$(itest_q "SELECT count(*) FROM buyer_usage b WHERE used <> (SELECT COALESCE(sum(qty), 0)
        FROM holds h WHERE h.buyer_id = b.buyer_id AND h.item_id = b.item_id
        AND h.state IN ('held', 'converted'))")" 0 "buyer_usage rows that disagree with the holds"
limited=$(cat "$ITEST_DIR"/load*.out | grep -o 'BUYER_LIMIT *[0-9]*' | awk '{s += $2} END {print s + 0}')
itest_eq "$limited" $((2 * REQUESTS - BUYERS * PER_BUYER)) "requests answered BUYER_LIMIT"
both=$(itest_q "SELECT count(*) FROM (SELECT h.buyer_id FROM holds h JOIN segments s USING (segment_id)
        GROUP BY h.buyer_id HAVING count(DISTINCT s.node_id) = 2) x")
echo "buyers who got units through both nodes: $both"

itest_invariants
itest_pass
