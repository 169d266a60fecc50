#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# catalog_changes.sh - the coordinator's work grows with what changed, not
# with the catalog's size (docs/protocols.md, "How the coordinator follows
# the catalog"):
#   - a catalog row's cat_xid (migration 0018) is the id of the transaction
#     that last changed a column the coordinator keeps: a node's counter
#     update (available, held, sold, hold_seq, last_batch) and a node's
#     last_seen_at leave it alone (nor do they move catalog_change_seq,
#     kept for the previous release's coordinator);
#   - a quiet catalog of 300 items is not read again (polls "skipped"), and
#     policy passes run for a round robin of items, not for every item every
#     --rebalance-ms;
#   - an item inserted by SQL is learned by a read of the changed rows, not
#     a full read, and its route is answered;
#   - a transaction that took its id before a read of the coordinator and
#     committed after it (while a later transaction's rows were read) is
#     still learned: the next read starts at the snapshot's xmin, not after
#     the highest id it saw;
#   - afterwards the mark moves on: quiet polls read no rows;
#   - a node's row whose write by the coordinator is queued behind a read
#     does not hold the mark back (the write sets what memory keeps).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

COORD_PROBE=${COORD_PROBE:-$ESC_BIN/../tests/coord_probe}
[[ -x $COORD_PROBE ]] || esc_fail "catalog_changes: coord_probe not found (COORD_PROBE)"
command -v curl >/dev/null || esc_fail "catalog_changes: curl is needed"
itest_begin catalog_changes

esc_step "cat_xid moves with the columns the coordinator keeps, only"
itest_q "INSERT INTO tenants (tenant_id) VALUES ('t1');" >/dev/null
x0=$(itest_q "SELECT pg_current_xact_id()")
itest_q "INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  SELECT 't1', 'sku-' || g, 400, 0, 4 FROM generate_series(1, 300) g;
  INSERT INTO segments (tenant_id, item_id, seg_no, available)
  SELECT 't1', 'sku-' || g, s, 100 FROM generate_series(1, 300) g, generate_series(0, 3) s;" >/dev/null
itest_eq "$(itest_q "SELECT count(*) FROM items WHERE cat_xid > '$x0'")" 300 "items marked by their insert"
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE cat_xid > '$x0'")" 1200 "segments marked by their insert"
x1=$(itest_q "SELECT max(cat_xid::text::bigint) FROM segments")
# catalog_change_seq: the previous release's coordinator reads it (kept for it)
seq_now() { itest_q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM catalog_change_seq"; }
q1=$(seq_now)
itest_q "UPDATE segments SET available = available - 1, held = held + 1, hold_seq = hold_seq + 1,
  last_batch = 7 WHERE item_id = 'sku-1';" >/dev/null
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE cat_xid > '$x1'")" 0 "segments after a counter update"
itest_eq "$(seq_now)" "$q1" "catalog_change_seq after a counter update"
itest_q "UPDATE segments SET state = 'draining' WHERE item_id = 'sku-2' AND seg_no = 3;
  UPDATE segments SET state = 'active' WHERE item_id = 'sku-2' AND seg_no = 3;" >/dev/null
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE cat_xid > '$x1'")" 1 "segments after a state change"
(($(seq_now) > q1)) || esc_fail "catalog_changes: a segment's state change left catalog_change_seq at $q1"
itest_q "INSERT INTO nodes (node_id, endpoint) VALUES ('nx', 'tcp://127.0.0.1:1');" >/dev/null
n1=$(itest_q "SELECT cat_xid FROM nodes WHERE node_id = 'nx'")
((n1 > x1)) || esc_fail "catalog_changes: a new node has cat_xid $n1, not above $x1"
itest_q "UPDATE nodes SET last_seen_at = now() WHERE node_id = 'nx';" >/dev/null
itest_eq "$(itest_q "SELECT cat_xid FROM nodes WHERE node_id = 'nx'")" "$n1" "a node's cat_xid after last_seen_at"
itest_q "UPDATE nodes SET state = 'down' WHERE node_id = 'nx';" >/dev/null
n2=$(itest_q "SELECT cat_xid FROM nodes WHERE node_id = 'nx'")
((n2 > n1)) || esc_fail "catalog_changes: a node's state left cat_xid at $n2"

esc_step "a coordinator on a quiet catalog of 300 items"
CURL=tcp://127.0.0.1:$(itest_port)
MPORT=$(itest_port)
esc_spawn "$ITEST_DIR/coordinator.log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" \
    --listen "$CURL" --publish "tcp://127.0.0.1:$(itest_port)" --lease-ms 3000 \
    --heartbeat-ms 100 --rebalance-ms 100 --catalog-poll-ms 200 --metrics "127.0.0.1:$MPORT"
CPID=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$ITEST_DIR/coordinator.log" || esc_fail "catalog_changes: no COORD-READY"

metric() { itest_metric "$MPORT" "$1"; } # NAME -> its value (0 when not yet exported)
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

esc_step "an item inserted by SQL is learned by a read of the changed rows"
f0=$(metric 'escrow_coord_catalog_polls_total{read="full"}')
c0=$(metric 'escrow_coord_catalog_polls_total{read="changes"}')
itest_q "INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  VALUES ('t1', 'late', 40, 0, 1);
  INSERT INTO segments (tenant_id, item_id, seg_no, available) VALUES ('t1', 'late', 0, 40);" >/dev/null
route_known() { [[ $(itest_status "$("$COORD_PROBE" route "$CURL" t1 "item=$1")") == OK ]]; }
esc_wait_for 60 route_known late || esc_fail "catalog_changes: the new item's route is not answered"
f1=$(metric 'escrow_coord_catalog_polls_total{read="full"}')
c1=$(metric 'escrow_coord_catalog_polls_total{read="changes"}')
itest_eq "$f1" "$f0" "full reads while learning one new item"
((c1 > c0)) || esc_fail "catalog_changes: the new item was learned without a read of changes ($c0 -> $c1)"

esc_step "a transaction that took its id before a read and committed after it"
# Session A takes its id first and stays open; session B inserts and commits
# an item after it (a higher id), which the coordinator reads while A is
# still open; then A inserts its item and commits. Reading "cat_xid above the
# highest id seen" would never fetch A's rows (until the full read, minutes
# later); reading from the snapshot's xmin (A's id, while A was open) does.
fifo=$ITEST_DIR/session_a.fifo
mkfifo "$fifo"
"$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 <"$fifo" >"$ITEST_DIR/session_a.out" 2>&1 &
APID=$!
exec 3>"$fifo"
echo "BEGIN; SELECT 'xid', pg_current_xact_id();" >&3
a_started() { grep -q '^xid|' "$ITEST_DIR/session_a.out"; }
esc_wait_for 30 a_started || esc_fail "catalog_changes: session A did not start"
xa=$(awk -F'|' '$1 == "xid" { print $2 }' "$ITEST_DIR/session_a.out")
itest_q "INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  VALUES ('t1', 'early-b', 40, 0, 1);
  INSERT INTO segments (tenant_id, item_id, seg_no, available) VALUES ('t1', 'early-b', 0, 40);" >/dev/null
xb=$(itest_q "SELECT cat_xid FROM items WHERE item_id = 'early-b'")
((xb > xa)) || esc_fail "catalog_changes: session B's id $xb is not above session A's $xa"
esc_wait_for 60 route_known early-b || esc_fail "catalog_changes: session B's item is not learned"
c2=$(metric 'escrow_coord_catalog_polls_total{read="changes"}')
k2=$(skipped)
# two more reads while A is open: the coordinator's mark is at A's id
reads() { echo $(($(metric 'escrow_coord_catalog_polls_total{read="changes"}') + $(skipped))); }
reads_past() { (($(reads) >= $1)); }
esc_wait_for 60 reads_past $((c2 + k2 + 2)) || esc_fail "catalog_changes: the coordinator stopped polling"
echo "INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  VALUES ('t1', 'late-a', 40, 0, 1);
  INSERT INTO segments (tenant_id, item_id, seg_no, available) VALUES ('t1', 'late-a', 0, 40);
  COMMIT;" >&3
exec 3>&-
wait "$APID" || esc_fail "catalog_changes: session A failed: $(cat "$ITEST_DIR/session_a.out")"
itest_eq "$(itest_q "SELECT cat_xid FROM items WHERE item_id = 'late-a'")" "$xa" "session A's item's cat_xid"
f2=$(metric 'escrow_coord_catalog_polls_total{read="full"}')
esc_wait_for 20 route_known late-a ||
    esc_fail "catalog_changes: an item committed after a read with an older id is not learned"
itest_eq "$(metric 'escrow_coord_catalog_polls_total{read="full"}')" "$f2" "full reads while learning it"

esc_step "the mark moves on: quiet polls read no rows"
# Once session A ended, the reads' xmin moves past every change: polls find
# nothing and read no rows (a mark held back would re-read rows each poll).
k3=$(skipped)
esc_wait_for 60 skipped_at_least $((k3 + 3)) || esc_fail "catalog_changes: polls are not skipped after the changes"
rows() { metric 'escrow_coord_catalog_rows_total{read="changes"}'; }
r3=$(rows)
k4=$(skipped)
c4=$(metric 'escrow_coord_catalog_polls_total{read="changes"}')
esc_wait_for 60 skipped_at_least $((k4 + 5)) || esc_fail "catalog_changes: polls stopped being skipped"
itest_eq "$(rows)" "$r3" "rows read by 5 quiet polls"
itest_eq "$(metric 'escrow_coord_catalog_polls_total{read="changes"}')" "$c4" "reads of changes in 5 quiet polls"
echo "rows read by reads of changes in the whole run: $(rows); by full reads: $(metric 'escrow_coord_catalog_rows_total{read="full"}')"

esc_node_stop "$CPID" || esc_fail "catalog_changes: the coordinator did not stop cleanly"

esc_step "a node's row with the coordinator's write queued behind a read does not hold the mark"
# The coordinator rewrites each node's row every second (node nx here:
# last_seen_at, the same endpoint, incarnation and state). A read that finds
# such a write queued must not keep the row for the next read: the write
# sets what memory keeps. Kept, the mark stayed at the row's cat_xid, and
# during a large placement (the writes always queued behind the grants)
# every read fetched every row changed since the nodes registered. Here the
# coordinator's database session is frozen (SIGSTOP) while a full read
# (an admin reload) is queued, so the node write queues behind the read;
# then the polls must find nothing changed.
MPORT=$(itest_port)
esc_spawn "$ITEST_DIR/coordinator2.log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" \
    --listen "$CURL" --publish "tcp://127.0.0.1:$(itest_port)" --lease-ms 3000 \
    --heartbeat-ms 100 --rebalance-ms 100 --catalog-poll-ms 4000 --metrics "127.0.0.1:$MPORT"
CPID=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$ITEST_DIR/coordinator2.log" || esc_fail "catalog_changes: no COORD-READY (2)"
esc_wait_for 60 skipped_at_least 1 || esc_fail "catalog_changes: the second coordinator's polls are not skipped"
coord_backend() {
    # its sessions but the monitor's and the retention's
    itest_q "SELECT pid FROM pg_stat_activity WHERE datname = current_database()
      AND query LIKE '%escrow:coord-%' AND query NOT LIKE '%escrow:coord-monitor%'
      AND query NOT LIKE '%escrow:coord-retention%' AND pid <> pg_backend_pid()"
}
one_backend() { [[ $(coord_backend) =~ ^[0-9]+$ ]]; }
if ! esc_wait_for 10 one_backend; then
    itest_q "SELECT pid, left(query, 60) FROM pg_stat_activity WHERE datname = current_database()"
    esc_fail "catalog_changes: the coordinator's session is not one backend"
fi
bpid=$(coord_backend)
polls() { echo $(($(skipped) + $(metric 'escrow_coord_catalog_polls_total{read="changes"}'))); }
polls_past() { (($(polls) >= $1)); }
# The node write goes every second: freeze between two of them (the last
# one started 0.15-0.5 s ago, by its query_start), so that none is in
# flight then and the next one queues behind the reload's read; and just
# after a poll, so that no poll's read is queued before the reload's.
write_age() {
    itest_q "SELECT COALESCE((SELECT extract(epoch FROM clock_timestamp() - query_start)
      FROM pg_stat_activity WHERE pid = $bpid AND query LIKE '%escrow:coord-node%'), -1)"
}
between_writes() { awk -v a="$(write_age)" 'BEGIN { exit !(a >= 0.15 && a <= 0.5) }'; }
p0=$(polls)
esc_wait_for 10 polls_past $((p0 + 1)) || esc_fail "catalog_changes: no poll"
esc_wait_for 10 between_writes || esc_fail "catalog_changes: no node write every second"
f0=$(metric 'escrow_coord_catalog_polls_total{read="full"}')
c5=$(metric 'escrow_coord_catalog_polls_total{read="changes"}')
r5=$(rows)
kill -STOP "$bpid"
"$COORD_PROBE" admin "$CURL" t1 reload >"$ITEST_DIR/reload.out" 2>&1 &
RPID=$!
sleep 2.5 # the node write (every second) queues behind the read
kill -CONT "$bpid"
wait "$RPID" || esc_fail "catalog_changes: the reload was not answered: $(cat "$ITEST_DIR/reload.out")"
itest_eq "$(metric 'escrow_coord_catalog_polls_total{read="full"}')" $((f0 + 1)) "full reads: the reload's"
p5=$(polls)
esc_wait_for 20 polls_past $((p5 + 2)) || esc_fail "catalog_changes: the polls stopped"
itest_eq "$(metric 'escrow_coord_catalog_polls_total{read="changes"}')" "$c5" "reads of changes from the frozen read on"
itest_eq "$(rows)" "$r5" "rows read by reads of changes from the frozen read on"
itest_pass
