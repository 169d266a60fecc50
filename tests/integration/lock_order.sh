#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# lock_order.sh - statements that change several segments rows lock them in
# ascending segment_id (docs/architecture.md, "Lock order"), so that a
# node's commit batch and a coordinator's write never wait for each other in
# a cycle. Before this rule a collapse (the coordinator sets every active
# segment of the item draining) and a node's batch (its segments' counters)
# deadlocked mid-sale: both waited deadlock_timeout (1 s), then PostgreSQL
# aborted one of them, and a node's batch was retried.
#
# How it is proven, deterministically: a blocker session locks an item's
# second segment (BLOCK); the statement under test must wait for it while
# holding no row of a higher segment_id (SKIP LOCKED from a third session
# finds them all free). The batch names its segments highest first; the
# collapse runs with index scans off, so that its plan reads the rows in
# the table's physical order, where BLOCK's new row version comes last. A
# statement that locked in its plan's order would hold the higher rows
# while it waits, and a sale's other writer would wait on it in turn.
# (BLOCK is the second, not the lowest: a collapse leaves its tail alone,
# and the tail is the first of the segments with the most stock.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

itest_begin lock_order
esc_ctl item create t1 lo --total 40 --segments 4 --node n1 >/dev/null
esc_ctl item create t1 lc --total 40 --segments 4 >/dev/null
# SEGS (ascending), BLOCK (the second) and HIGHER (those above it, a,b) of
# item $1; BLOCK's row gets a new version, so that the table's physical
# order is not ascending (a sequential scan must not pass by luck).
segments_of() {
    read -r -a SEGS <<<"$(itest_q "SELECT string_agg(segment_id::text, ' ' ORDER BY segment_id) FROM segments WHERE item_id = '$1'")"
    BLOCK=${SEGS[1]}
    HIGHER=$(IFS=,; echo "${SEGS[*]:2}")
    NHIGHER=$((${#SEGS[@]} - 2))
    itest_q "UPDATE segments SET last_batch = last_batch WHERE segment_id = $BLOCK" >/dev/null
}

# Holds segment BLOCK's row locked until unblock.
block() {
    itest_lock lock_order_blocker "SELECT 1 FROM segments WHERE segment_id = $BLOCK FOR NO KEY UPDATE"
}
unblock() {
    itest_unlock lock_order_blocker
}

# Waits until a session whose query matches $1 waits for a row lock, then
# until a third session can lock every segment above BLOCK (a short batch
# of a node may hold one for a moment; a statement that waits holding them
# holds them until BLOCK is free).
wait_higher_free() {
    esc_wait_sql 30 "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
        AND query LIKE '%$1%' AND query NOT LIKE '%pg_stat_activity%'" 1 || {
        itest_q "SELECT application_name, state, wait_event_type, wait_event, left(query, 80)
            FROM pg_stat_activity WHERE backend_type = 'client backend'" >&2
        esc_fail "lock_order: no statement matching '$1' waits for segment $BLOCK"
    }
    esc_wait_sql 10 "SELECT count(*) FROM (SELECT segment_id FROM segments WHERE segment_id IN ($HIGHER)
        FOR NO KEY UPDATE SKIP LOCKED) x" "$NHIGHER" ||
        esc_fail "lock_order: $2 holds segments above $BLOCK while it waits for $BLOCK"
    echo "$2 waits for segment $BLOCK holding none of $HIGHER"
}

esc_step "a node's commit batch, its segments named highest first"
segments_of lo
block
desc=$(itest_q "SELECT array_agg(segment_id ORDER BY segment_id DESC) FROM segments WHERE item_id = 'lo'")
epochs=$(itest_q "SELECT array_agg(epoch ORDER BY segment_id DESC) FROM segments WHERE item_id = 'lo'")
esc_psql "SELECT count(*) FROM escrow_commit_batch(77, '$desc'::bigint[], '$epochs'::bigint[],
    '{0,0,0,0}', '{0,0,0,0}', '{0,0,0,0}', '{0,0,0,0}',
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')" >"$ITEST_DIR/batch.out" 2>&1 &
BATCH=$!
wait_higher_free "escrow_commit_batch(77" "the batch"
unblock
wait "$BATCH" || { cat "$ITEST_DIR/batch.out" >&2; esc_fail "lock_order: the batch failed"; }
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'lo' AND last_batch = 77")" ${#SEGS[@]} \
    "segments the batch wrote once $BLOCK was free"

esc_step "the coordinator's collapse"
# With index scans the collapse reads the item's segments in seg_no order,
# ascending by luck; without them it reads the table in physical order,
# where BLOCK's new row version comes last. The rule must hold for any plan.
itest_q "ALTER DATABASE $(itest_q "SELECT current_database()") SET enable_indexscan = off" >/dev/null
itest_q "ALTER DATABASE $(itest_q "SELECT current_database()") SET enable_bitmapscan = off" >/dev/null
shard_coord_start
shard_node_start n1
shard_wait_served lc 60
segments_of lc
block
esc_ctl --coordinator "$SHARD_COORD_URL" item collapse t1 lc >"$ITEST_DIR/collapse.out" 2>&1 &
COLLAPSE=$!
wait_higher_free escrow:coord-collapse "the collapse"
unblock
wait "$COLLAPSE" || { cat "$ITEST_DIR/collapse.out" >&2; esc_fail "lock_order: the collapse failed"; }
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'lc' AND state = 'draining'")" \
    $((${#SEGS[@]} - 1)) "segments the collapse set draining"

itest_pass
