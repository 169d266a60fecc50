#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sharded_race.sh - the flash sale across a cluster: a coordinator,
# 3 managed nodes, one item of 1,000 units in 16 segments, 20,000 buyers with
# demand skewed 80/20 onto a few segments. Exactly 1,000 sold, 0 stranded
# (no unit left anywhere while a buyer heard SOLD_OUT), conservation held at
# every sample taken during the sale, stock moved toward the busy segments,
# and the item collapsed into one tail near the end.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=1000
SEGMENTS=16
BUYERS=20000

itest_begin sharded_race
esc_ctl item create t1 flash --total $TOTAL --segments $SEGMENTS >/dev/null
shard_coord_start --collapse-pct 10
for n in n1 n2 n3; do shard_node_start "$n"; done
shard_wait_served flash 60
itest_eq "$(itest_q "SELECT count(DISTINCT node_id) FROM segments WHERE item_id = 'flash'")" 3 \
    "nodes that own segments of the item"

esc_step "$BUYERS buyers, 80% of them on 20% of the segments"
shard_sampler_start flash
shard_load --item flash --buyers $BUYERS --concurrency 200 --confirm 1 --release 0 \
    --skew 80:20 --segments $SEGMENTS --give-up-ms 4000 --deadline-ms 30000 --seed 7 \
    --quiet >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" ||
    { cat "$ITEST_DIR/load.out" "$ITEST_DIR/load.log" >&2; esc_fail "escrow-load failed"; }
shard_sampler_stop
line=$(grep '^RESULT' "$ITEST_DIR/load.out") || esc_fail "no RESULT line"
echo "$line"
itest_eq "$(itest_field holds_ok "$line")" $TOTAL "holds acknowledged"
itest_eq "$(itest_field sold "$line")" $TOTAL "sold (from PostgreSQL)"
itest_eq "$(itest_field stranded "$line")" 0 "units stranded while buyers heard SOLD_OUT"
itest_eq "$(itest_field errors "$line")" 0 "errors seen by buyers"

esc_step "the database"
itest_eq "$(itest_q "SELECT sum(sold) || ' ' || sum(held) || ' ' || sum(available) FROM segments WHERE item_id = 'flash'")" \
    "$TOTAL 0 0" "sold held available"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'flash' AND state = 'converted'")" $TOTAL \
    "converted holds"
itest_eq "$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'flash' AND state IN ('planned', 'sent')")" 0 \
    "transfers still open"
moved=$(itest_q "SELECT coalesce(sum(qty), 0) FROM transfers WHERE item_id = 'flash' AND state = 'received'")
((moved > 0)) || esc_fail "no stock moved between segments during a skewed sale"
echo "units moved by transfers: $moved"
# The hot segments sold more than their initial share of $((TOTAL / SEGMENTS)).
hot_sold=$(itest_q "SELECT max(sold) FROM segments WHERE item_id = 'flash'")
((hot_sold > TOTAL / SEGMENTS)) || esc_fail "the busiest segment sold $hot_sold, not more than its share"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'flash' AND kind = 'collapsed'")" 1 \
    "collapse events (the sale crossed the threshold once)"
itest_invariants flash
itest_pass
