#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# catalog_changes.sh - the coordinator's work grows with what changed, not
# with the catalog's size (docs/protocols.md, "How the coordinator follows
# the catalog"):
#   - catalog_change_seq moves for a statement that changes a row of the
#     catalog, and not for one that changes none, nor for a node's
#     last_seen_at (the coordinator rewrites it every second);
#   - a quiet catalog of 300 items is not read again (polls "skipped"), and
#     policy passes run for a round robin of items, not for every item every
#     --rebalance-ms;
#   - an item inserted by SQL is learned through the counter: a full read
#     follows, and its route is answered.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

COORD_PROBE=${COORD_PROBE:-$ESC_BIN/../tests/coord_probe}
[[ -x $COORD_PROBE ]] || esc_fail "catalog_changes: coord_probe not found (COORD_PROBE)"
command -v curl >/dev/null || esc_fail "catalog_changes: curl is needed"
itest_begin catalog_changes

seq_now() { itest_q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM catalog_change_seq"; }

esc_step "the change counter moves with rows changed, only"
itest_q "INSERT INTO tenants (tenant_id) VALUES ('t1');" >/dev/null
s0=$(seq_now)
itest_q "INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  SELECT 't1', 'sku-' || g, 400, 0, 4 FROM generate_series(1, 300) g;
  INSERT INTO segments (tenant_id, item_id, seg_no, available)
  SELECT 't1', 'sku-' || g, s, 100 FROM generate_series(1, 300) g, generate_series(0, 3) s;" >/dev/null
s1=$(seq_now)
((s1 == s0 + 2)) || esc_fail "catalog_changes: two inserting statements moved the counter from $s0 to $s1"
itest_q "UPDATE segments SET available = available WHERE segment_id < 0;
  UPDATE items SET total = total WHERE item_id = 'none';
  DELETE FROM transfers WHERE transfer_id < 0;" >/dev/null
itest_eq "$(seq_now)" "$s1" "counter after statements that changed no row"
itest_q "INSERT INTO nodes (node_id, endpoint) VALUES ('nx', 'tcp://127.0.0.1:1');" >/dev/null
s2=$(seq_now)
((s2 == s1 + 1)) || esc_fail "catalog_changes: a new node moved the counter from $s1 to $s2"
itest_q "UPDATE nodes SET last_seen_at = now() WHERE node_id = 'nx';" >/dev/null
itest_eq "$(seq_now)" "$s2" "counter after a node's last_seen_at"
itest_q "UPDATE nodes SET state = 'down' WHERE node_id = 'nx';" >/dev/null
s3=$(seq_now)
((s3 == s2 + 1)) || esc_fail "catalog_changes: a node's state moved the counter from $s2 to $s3"

esc_step "a coordinator on a quiet catalog of 300 items"
CURL=tcp://127.0.0.1:$(itest_port)
MPORT=$(itest_port)
esc_spawn "$ITEST_DIR/coordinator.log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" \
    --listen "$CURL" --publish "tcp://127.0.0.1:$(itest_port)" --lease-ms 3000 \
    --heartbeat-ms 100 --rebalance-ms 100 --catalog-poll-ms 200 --metrics "127.0.0.1:$MPORT"
CPID=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$ITEST_DIR/coordinator.log" || esc_fail "catalog_changes: no COORD-READY"

metric() { # NAME -> its value (0 when not yet exported)
    local v
    v=$(curl -sfS --max-time 30 "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m { print $2 }')
    echo "${v:-0}"
}
skipped() { metric 'escrow_coord_catalog_polls_total{read="skipped"}'; }
skipped_at_least() { (($(skipped) >= $1)); }
esc_wait_for 60 skipped_at_least 3 || esc_fail "catalog_changes: a quiet catalog is read at every poll"

esc_step "policy passes: a round robin, not every item every run"
p0=$(metric escrow_coord_policy_passes_total)
k0=$(skipped)
esc_wait_for 60 skipped_at_least $((k0 + 10)) || esc_fail "catalog_changes: polls stopped being skipped"
p1=$(metric escrow_coord_policy_passes_total)
k1=$(skipped)
# Two rebalance runs per poll: every item every run would be 600 passes per
# poll; the round robin is 6 items per run (300 items every 5 s).
(((p1 - p0) < 300 * (k1 - k0))) ||
    esc_fail "catalog_changes: $((p1 - p0)) policy passes in $((k1 - k0)) quiet polls"
echo "policy passes: $((p1 - p0)) in $((k1 - k0)) quiet polls"

esc_step "an item inserted by SQL is learned through the counter"
f0=$(metric 'escrow_coord_catalog_polls_total{read="full"}')
itest_q "INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  VALUES ('t1', 'late', 40, 0, 1);
  INSERT INTO segments (tenant_id, item_id, seg_no, available) VALUES ('t1', 'late', 0, 40);" >/dev/null
route_known() { [[ $(itest_status "$("$COORD_PROBE" route "$CURL" t1 item=late)") == OK ]]; }
esc_wait_for 60 route_known || esc_fail "catalog_changes: the new item's route is not answered"
f1=$(metric 'escrow_coord_catalog_polls_total{read="full"}')
((f1 > f0)) || esc_fail "catalog_changes: the new item was learned without a full read ($f0 -> $f1)"

esc_node_stop "$CPID" || esc_fail "catalog_changes: the coordinator did not stop cleanly"
itest_pass
