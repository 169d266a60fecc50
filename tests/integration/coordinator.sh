#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# coordinator.sh - escrow-coordinator against a private PostgreSQL, with fake
# nodes (coord_probe hb-loop: heartbeats only, no commits).
#   - bad usage exits 2;
#   - the first node that heartbeats gets every segment of the item, each
#     epoch raised by one write, and the route names it;
#   - a second node gets half (handover: the moved segments' epochs rise);
#   - the first node stops heartbeating: after its lease the second owns all,
#     every moved segment with a higher epoch; the nodes row says 'down';
#   - the first node restarted (new incarnation) gets segments back at new epochs;
#   - admin: unknown item, bad qty, reduce beyond what is free, unknown node,
#     retired item; restock (transfers from unallocated, RECEIVE commands),
#     pause/resume with outbox rows; a reduce reclaimed through a transfer to
#     unallocated that the coordinator commits itself;
#   - routes are published; SIGTERM stops the coordinator cleanly.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

COORD_PROBE=${COORD_PROBE:-$ESC_BIN/../tests/coord_probe}
[[ -x $COORD_PROBE ]] || esc_fail "coordinator: coord_probe not found (COORD_PROBE)"
[[ -x $ESC_BIN/escrow-coordinator ]] || esc_fail "coordinator: no escrow-coordinator in $ESC_BIN"

itest_begin coordinator
cp() { "$COORD_PROBE" "$@"; }

esc_step "bad usage exits 2"
for args in "" "--dsn x --listen tcp://127.0.0.1:1" "--dsn x --listen tcp://127.0.0.1:1 --publish tcp://127.0.0.1:2 --lease-ms 50" \
    "--dsn x --listen tcp://127.0.0.1:1 --publish tcp://127.0.0.1:2 --lease-ms 1000 --heartbeat-ms 1000" \
    "--dsn x --listen tcp://127.0.0.1:1 --publish tcp://127.0.0.1:2 --collapse-pct 101" "--bogus"; do
    rc=0
    # shellcheck disable=SC2086
    ESCROW_DSN= "$ESC_BIN/escrow-coordinator" $args >/dev/null 2>"$ITEST_DIR/usage.err" || rc=$?
    itest_eq "$rc" 2 "exit code of escrow-coordinator $args"
done

esc_step "an item with 4 unassigned segments"
# The lease (3 s) is 60 heartbeats of the fake nodes: a loaded machine does
# not make a live node miss it (the owners and epochs asserted below would
# change), and a's planned silence still ends it in seconds. The catalog is
# read at the start and never polled again (600 s): the script writes what a
# node's commit would and then reports it; a poll in between would find the
# transfer closed and drop it before the report (no COORD-XFER line), the
# slower the machine the likelier.
itest_q "INSERT INTO tenants (tenant_id) VALUES ('t1');
  INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted) VALUES ('t1', 'shoe', 1000, 0, 4);
  INSERT INTO segments (tenant_id, item_id, seg_no, available)
  SELECT 't1', 'shoe', g, 250 FROM generate_series(0, 3) g;" >/dev/null

CPORT=$(itest_port)
PPORT=$(itest_port)
CURL=tcp://127.0.0.1:$CPORT
PURL=tcp://127.0.0.1:$PPORT
esc_spawn "$ITEST_DIR/coordinator.log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" \
    --listen "$CURL" --publish "$PURL" --lease-ms 3000 --heartbeat-ms 100 --rebalance-ms 100 \
    --catalog-poll-ms 600000 --log-level info
CPID=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$ITEST_DIR/coordinator.log" || esc_fail "coordinator: no COORD-READY"

nsegs() { # FILE -> number of assigned segments in the hb-loop output
    local l
    l=$(cat "$1" 2>/dev/null || true)
    [[ $l == segs=-* || -z $l ]] && { echo 0; return; }
    l=${l#segs=}
    l=${l%% *}
    tr ',' '\n' <<<"$l" | wc -l
}
has_n() { [[ $(nsegs "$1") == "$2" ]]; }
start_node() { # NODE INC PORT -> pid in NODE_PID
    rm -f "$ITEST_DIR/stop-$1-$2"
    esc_spawn "$ITEST_DIR/hb-$1-$2.log" "$COORD_PROBE" hb-loop "$CURL" "$1" "$2" "tcp://127.0.0.1:$3" 50 \
        "$ITEST_DIR/assign-$1-$2" "$ITEST_DIR/stop-$1-$2"
    NODE_PID=$ESC_SPAWN_PID
}
stop_node() { # NODE INC PID
    touch "$ITEST_DIR/stop-$1-$2"
    itest_wait_pid "$3" 10 "hb-loop $1"
}

esc_step "node a heartbeats: it gets all 4 segments at epoch 1"
start_node a 111 7001
PID_A=$NODE_PID
esc_wait_for 30 has_n "$ITEST_DIR/assign-a-111" 4 ||
    esc_fail "coordinator: node a was not assigned 4 segments: $(cat "$ITEST_DIR/assign-a-111" 2>&1)"
itest_eq "$(itest_q "SELECT count(*) || ' ' || min(epoch) || ' ' || max(epoch) FROM segments WHERE node_id = 'a'")" "4 1 1" "segments of a, min and max epoch"
itest_eq "$(itest_q "SELECT incarnation || ' ' || state FROM nodes WHERE node_id = 'a'")" "111 up" "nodes row of a"
out=$(cp route "$CURL" t1 item=shoe)
echo "$out"
itest_eq "$(itest_status "$out")" OK "route status"
itest_eq "$(grep -o 'tcp://127.0.0.1:7001' <<<"$out" | wc -l)" 4 "route segments served by a"
seg1=$(itest_q "SELECT min(segment_id) FROM segments")
out=$(cp route "$CURL" t1 "segment=$seg1")
itest_eq "$(itest_status "$out")" OK "route by segment id"
itest_eq "$(itest_status "$(cp route "$CURL" t1 item=nope)")" UNKNOWN_ITEM "route of an unknown item"
itest_eq "$(itest_status "$(cp route "$CURL" t2 "segment=$seg1")")" UNKNOWN_ITEM "route of another tenant's segment"
out=$(cp sub "$PURL" t1 shoe 3)
echo "$out"
itest_eq "$(itest_field segs "$out")" 4 "published route"

esc_step "node b joins: it gets half, the moved segments at epoch 2"
start_node b 222 7002
PID_B=$NODE_PID
esc_wait_for 30 has_n "$ITEST_DIR/assign-b-222" 2 || esc_fail "coordinator: node b did not get 2 segments"
esc_wait_for 30 has_n "$ITEST_DIR/assign-a-111" 2 || esc_fail "coordinator: node a did not drop to 2 segments"
itest_eq "$(itest_q "SELECT string_agg(node_id || ':' || epoch, ' ' ORDER BY node_id, epoch) FROM segments")" \
    "a:1 a:1 b:2 b:2" "owners and epochs"

esc_step "node a stops heartbeating: after its lease b owns everything"
stop_node a 111 "$PID_A"
T0=$SECONDS
esc_wait_for 30 has_n "$ITEST_DIR/assign-b-222" 4 || esc_fail "coordinator: node b did not take a's segments"
echo "taken over within $((SECONDS - T0)) s"
itest_eq "$(itest_q "SELECT string_agg(node_id || ':' || epoch, ' ' ORDER BY node_id, epoch) FROM segments")" \
    "b:2 b:2 b:2 b:2" "owners and epochs after a's lease"
esc_wait_sql 30 "SELECT state FROM nodes WHERE node_id = 'a'" down ||
    esc_fail "coordinator: nodes row of a is not 'down'"
grep -q 'COORD-NODE-DEAD.*node=a' "$ITEST_DIR/coordinator.log" || esc_fail "coordinator: no COORD-NODE-DEAD for a"

esc_step "node a restarts (incarnation 333): it gets 2 segments at epoch 3"
start_node a 333 7001
PID_A=$NODE_PID
esc_wait_for 30 has_n "$ITEST_DIR/assign-a-333" 2 || esc_fail "coordinator: restarted a did not get 2 segments"
esc_wait_for 30 has_n "$ITEST_DIR/assign-b-222" 2 || esc_fail "coordinator: b did not drop to 2"
itest_eq "$(itest_q "SELECT string_agg(node_id || ':' || epoch, ' ' ORDER BY node_id, epoch) FROM segments")" \
    "a:3 a:3 b:2 b:2" "owners and epochs after a came back"
itest_eq "$(itest_q "SELECT incarnation || ' ' || state FROM nodes WHERE node_id = 'a'")" "333 up" "nodes row of a"

esc_step "admin errors"
adm() { cp admin "$CURL" "$@"; }
itest_eq "$(itest_status "$(adm t1 restock item=nope qty=5)")" UNKNOWN_ITEM "restock of an unknown item"
itest_eq "$(itest_status "$(adm t1 restock item=shoe qty=0)")" INVAL "restock qty 0"
itest_eq "$(itest_status "$(adm t1 reduce item=shoe qty=-3)")" INVAL "reduce qty -3"
itest_eq "$(itest_status "$(adm t1 split item=shoe segments=0)")" INVAL "split into 0"
itest_eq "$(itest_status "$(adm t1 split item=shoe segments=257)")" INVAL "split into 257"
itest_eq "$(itest_status "$(adm '' drain node=ghost)")" NOT_FOUND "drain an unknown node"
out=$(adm t1 reduce item=shoe qty=1001)
echo "$out"
itest_eq "$(itest_status "$out")" INVAL "reduce beyond the total"
itest_eq "$(itest_q "SELECT total || ' ' || unallocated || ' ' || reduce_pending FROM items WHERE item_id = 'shoe'")" \
    "1000 0 0" "item after refused operations"

esc_step "pause / resume"
itest_eq "$(itest_status "$(adm t1 pause item=shoe)")" OK "pause"
itest_eq "$(itest_q "SELECT state FROM items WHERE item_id = 'shoe'")" paused "item state"
esc_wait_for 30 grep -q 'segs=[0-9]*:[0-9]*:0:1' "$ITEST_DIR/assign-b-222" ||
    esc_fail "coordinator: b's assignment does not say paused"
itest_eq "$(itest_field paused "$(cp route "$CURL" t1 item=shoe)")" 1 "route paused"
itest_eq "$(itest_status "$(adm t1 resume item=shoe)")" OK "resume"
itest_eq "$(itest_q "SELECT string_agg(kind || ':' || actor, ' ' ORDER BY event_id) FROM outbox WHERE item_id = 'shoe'")" \
    "paused:coordinator resumed:coordinator" "outbox events"

esc_step "restock 100: total 1100, units sent from unallocated, RECEIVE commands"
out=$(adm t1 restock item=shoe qty=100)
echo "$out"
itest_eq "$(itest_status "$out")" OK "restock"
esc_wait_sql 30 "SELECT COALESCE(sum(qty), 0) FROM transfers WHERE reason = 'restock' AND state = 'sent'" 100 ||
    esc_fail "coordinator: restock transfers: $(itest_q "SELECT string_agg(transfer_id || ':' || state || ':' || qty, ' ') FROM transfers")"
itest_eq "$(itest_q "SELECT total || ' ' || unallocated FROM items WHERE item_id = 'shoe'")" "1100 0" "item after restock"
itest_eq "$(itest_q "SELECT count(*) FROM transfers WHERE reason = 'restock' AND from_segment IS NULL")" 4 "restock transfers (one per segment)"
itest_eq "$(itest_q "SELECT count(*) FROM conservation WHERE NOT ok")" 0 "items violating conservation"
esc_wait_for 30 grep -q 'xfers=[0-9]*:2:' "$ITEST_DIR/assign-b-222" ||
    esc_fail "coordinator: no RECEIVE command for b: $(cat "$ITEST_DIR/assign-b-222")"

esc_step "a receiver's commit, reported: the transfer closes"
# do what node b's RECEIVE would commit, then report it
read -r X XSEG XQTY < <(itest_q "SELECT t.transfer_id, t.to_segment, t.qty FROM transfers t JOIN segments s ON s.segment_id = t.to_segment
    WHERE t.state = 'sent' AND s.node_id = 'b' ORDER BY 1 LIMIT 1" | tr '|' ' ')
itest_q "UPDATE transfers SET state = 'received', received_at = now() WHERE transfer_id = $X;
    UPDATE segments SET available = available + $XQTY WHERE segment_id = $XSEG" >/dev/null
out=$(cp hb "$CURL" b 222 tcp://127.0.0.1:7002 "results=$X:2:$XQTY")
echo "$out"
[[ $out != *"xfers=$X:"* && $out != *",$X:2:"* ]] || esc_fail "coordinator: RECEIVE $X still sent after its result: $out"
grep -q "transfer=$X .*received" "$ITEST_DIR/coordinator.log" || esc_fail "coordinator: transfer $X not closed: $out"

esc_step "reduce 20: nothing unallocated, so reclaimed from a segment by a transfer to unallocated"
out=$(adm t1 reduce item=shoe qty=20)
echo "$out"
itest_eq "$(itest_status "$out")" OK "reduce 20"
itest_eq "$(itest_q "SELECT total || ' ' || reduce_pending FROM items WHERE item_id = 'shoe'")" "1100 20" "item after reduce"
esc_wait_sql 30 "SELECT count(*) >= 1 FROM transfers WHERE reason = 'reduce' AND state = 'planned'" t ||
    esc_fail "coordinator: no reduce transfer planned"
read -r R RSEG RQTY < <(itest_q "SELECT transfer_id, from_segment, qty FROM transfers WHERE reason = 'reduce' ORDER BY 1 LIMIT 1" | tr '|' ' ')
# what the donor's GIVE commits, then the donor's report
itest_q "UPDATE transfers SET state = 'sent', sent_at = now() WHERE transfer_id = $R;
    UPDATE segments SET available = available - $RQTY WHERE segment_id = $RSEG" >/dev/null
RNODE=$(itest_q "SELECT node_id FROM segments WHERE segment_id = $RSEG")
RINC=$([[ $RNODE == a ]] && echo 333 || echo 222)
cp hb "$CURL" "$RNODE" "$RINC" "tcp://127.0.0.1:700$([[ $RNODE == a ]] && echo 1 || echo 2)" "results=$R:1:$RQTY" >/dev/null
esc_wait_sql 30 "SELECT state FROM transfers WHERE transfer_id = $R" received ||
    esc_fail "coordinator: the reduce transfer $R was not received into unallocated"
itest_eq "$(itest_q "SELECT count(*) FROM conservation WHERE NOT ok")" 0 "items violating conservation after the reduce"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'shoe' AND kind = 'reduced' AND actor = 'coordinator'")" 2 \
    "reduced events (the request, the reclaimed units)"

esc_step "retire: then everything but retire is refused"
itest_eq "$(itest_status "$(adm t1 retire item=shoe)")" OK "retire"
itest_eq "$(itest_status "$(adm t1 restock item=shoe qty=5)")" CONFLICT "restock of a retired item"
itest_eq "$(itest_status "$(adm t1 retire item=shoe)")" OK "retire again"
itest_eq "$(itest_status "$(adm '' reload)")" OK "reload"

esc_step "SIGTERM"
stop_node a 333 "$PID_A"
stop_node b 222 "$PID_B"
esc_node_stop "$CPID" || esc_fail "coordinator: did not stop cleanly"
grep -q 'COORD-STOP.*stopped' "$ITEST_DIR/coordinator.log" || esc_fail "coordinator: no COORD-STOP line"
itest_pass
