#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# metrics.sh - Prometheus metrics of both daemons and the invariant monitor
# (docs/operating.md), against real processes: a coordinator and two
# managed nodes, each with --metrics on a free loopback port, one item of
# 200 units in 8 segments, 3,000 buyers who confirm every hold.
#
# Asserted exactly where the sale makes it exact: holds created = holds
# converted = units sold = 200 (summed over the nodes), nothing live or
# held, transfers received by nodes = transfers received in PostgreSQL,
# transfers planned by the coordinator = transfer rows, collapses = the
# outbox's collapse events, nothing in flight, conservation_ok 1. Then the
# books are broken on purpose (as ctl.sh does): the monitor reports the
# item and the segment (metrics, a COORD-INVARIANT WARN line, escrowctl
# status), and reports ok again once they are repaired.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=200
SEGMENTS=8
BUYERS=3000

itest_begin metrics
command -v curl >/dev/null || esc_fail "metrics: curl is needed"

# The text of one endpoint (port $1), or of its frozen copy (freeze).
scrape() {
    if [[ -f $ITEST_DIR/frozen-$1.txt ]]; then
        cat "$ITEST_DIR/frozen-$1.txt"
        return
    fi
    curl -sfS --max-time 30 "http://127.0.0.1:$1/metrics"
}
# Scrapes ports $@ once; later reads of them use that copy until thaw (fewer
# scrapes: many assertions on a state that no longer changes).
freeze() {
    local p
    for p in "$@"; do
        curl -sfS --max-time 30 "http://127.0.0.1:$p/metrics" >"$ITEST_DIR/frozen-$p.txt.tmp"
        mv "$ITEST_DIR/frozen-$p.txt.tmp" "$ITEST_DIR/frozen-$p.txt"
    done
}
thaw() {
    rm -f "$ITEST_DIR"/frozen-*.txt
}
# True when escrowctl status t1 sale (kept in status.out) has a line matching $1.
status_says() {
    esc_ctl status t1 sale >"$ITEST_DIR/status.out" 2>&1
    grep -qE "$1" "$ITEST_DIR/status.out"
}
# The value of one exact series ($2, e.g. 'escrow_holds_live' or
# 'escrow_rejections_total{kind="SOLD_OUT"}') at port $1; "absent" if the
# endpoint does not show it.
metric() {
    # awk reads to the end: curl must not see a closed pipe (pipefail)
    scrape "$1" | awk -v s="$2" '!found && index($0, s " ") == 1 { v = $2; found = 1 }
                                 END { print found ? v : "absent" }'
}
# Sum of series $1 over both nodes (absent counts as 0), as an integer.
nodes_sum() {
    { metric "$N1_PORT" "$1"; metric "$N2_PORT" "$1"; } |
        awk '$1 != "absent" { s += $1 } END { printf "%d\n", s }'
}
# Waits up to $1 s until "$2" (a command printing a value, eval'd on every
# try: no "$(" in it) prints $3.
wait_value() {
    local timeout=$1 cmd=$2 want=$3 got
    local deadline=$((SECONDS + timeout))
    while :; do
        got=$(eval "$cmd")
        [[ $got == "$want" ]] && return 0
        ((SECONDS < deadline)) || esc_fail "metrics: $cmd is $got, not $want after ${timeout} s"
        sleep 0.1
    done
}

esc_step "flags: documented in --help, refused when malformed"
# the whole text first: grep -q stops reading at its match, and a --help over
# one stdio buffer (4 KiB) then dies of SIGPIPE on its second write (pipefail)
seg_help=$("$ESC_BIN/escrow-segment" --help)
coord_help=$("$ESC_BIN/escrow-coordinator" --help)
grep -q -- '--metrics' <<<"$seg_help" || esc_fail "escrow-segment --help lacks --metrics"
grep -q -- '--metrics' <<<"$coord_help" || esc_fail "escrow-coordinator --help lacks --metrics"
grep -q -- '--check-ms' <<<"$coord_help" || esc_fail "escrow-coordinator --help lacks --check-ms"
rc=0
"$ESC_BIN/escrow-segment" --node-id x --listen tcp://127.0.0.1:1 --metrics 'no:port' 2>/dev/null || rc=$?
itest_eq "$rc" 2 "escrow-segment --metrics no:port exit status"
rc=0
"$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" --listen tcp://127.0.0.1:1 --publish tcp://127.0.0.1:2 \
    --check-ms 0 2>/dev/null || rc=$?
itest_eq "$rc" 2 "escrow-coordinator --check-ms 0 exit status"

esc_step "a cluster with metrics: coordinator and 2 nodes"
esc_ctl item create t1 sale --total $TOTAL --segments $SEGMENTS >/dev/null
C_PORT=$(itest_port)
N1_PORT=$(itest_port)
N2_PORT=$(itest_port)
# a bare port: 127.0.0.1 only, and no series names a tenant or an item
shard_coord_start --collapse-pct 10 --metrics "$C_PORT" --check-ms 200
shard_node_start n1 --metrics "127.0.0.1:$N1_PORT"
shard_node_start n2 --metrics "127.0.0.1:$N2_PORT"
shard_wait_served sale 60
grep -q "COORD-METRICS .*port=$C_PORT" "$SHARD_COORD_LOG" || esc_fail "no COORD-METRICS line"

esc_step "the endpoints: format, HELP and TYPE, 404 elsewhere"
scrape "$N1_PORT" >"$ITEST_DIR/n1-before.txt"
scrape "$C_PORT" >"$ITEST_DIR/coord-before.txt"
for f in escrow_requests_total escrow_rejections_total escrow_holds_live escrow_holds_ended_total \
    escrow_batch_rows escrow_commit_latency_seconds escrow_batches_failed_total \
    escrow_segments_fenced_total escrow_segments_served escrow_transfers_total escrow_db_up \
    escrow_db_reconnects_total escrow_heartbeats_total process_open_fds process_max_fds \
    escrow_conn_open escrow_conn_max; do
    grep -q "^# HELP $f " "$ITEST_DIR/n1-before.txt" || esc_fail "node: no HELP for $f"
    grep -q "^# TYPE $f " "$ITEST_DIR/n1-before.txt" || esc_fail "node: no TYPE for $f"
done
for f in escrow_coord_nodes escrow_coord_lease_expiries_total escrow_coord_epoch_changes_total \
    escrow_coord_segments escrow_coord_transfers_in_flight escrow_coord_transfers_planned_total \
    escrow_coord_transfers_completed_total escrow_coord_routes_published_total \
    escrow_coord_collapses_total escrow_coord_admin_requests_total escrow_db_up \
    escrow_conservation_ok escrow_conservation_violations \
    escrow_conservation_last_check_timestamp_seconds escrow_coord_loop_stalls_total \
    process_open_fds process_max_fds escrow_conn_open escrow_conn_max; do
    grep -q "^# HELP $f " "$ITEST_DIR/coord-before.txt" || esc_fail "coordinator: no HELP for $f"
done
grep -q '^# TYPE escrow_commit_latency_seconds histogram$' "$ITEST_DIR/n1-before.txt" ||
    esc_fail "commit latency is not a histogram"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$N1_PORT/other")
itest_eq "$code" 404 "HTTP status of /other"
itest_eq "$(metric "$N1_PORT" 'escrow_db_up{conn="commit"}')" 1 "n1 commit connection up"
itest_eq "$(metric "$C_PORT" 'escrow_db_up{conn="coord"}')" 1 "coordinator connection up"
wait_value 30 "metric $C_PORT 'escrow_db_up{conn=\"monitor\"}'" 1
wait_value 30 "metric $C_PORT 'escrow_coord_nodes{state=\"up\"}'" 2
wait_value 30 "metric $C_PORT escrow_conservation_ok" 1
# descriptors: some open, under the limit the daemon raised (DAEMON-FDS)
fds_ok() { # PORT
    local open max
    open=$(metric "$1" process_open_fds)
    max=$(metric "$1" process_max_fds)
    [[ $open =~ ^[0-9]+$ && $max =~ ^[0-9]+$ ]] && ((open > 0 && open < max))
}
for port in "$N1_PORT" "$C_PORT"; do
    esc_wait_for 30 fds_ok "$port" || esc_fail "metrics: open/max descriptors on port $port"
done

esc_step "the endpoint: loopback unless told, idle connections closed within a second"
# the listening socket of a bare --metrics PORT, from /proc: 127.0.0.1 (0100007F)
listen_addr() {
    awk -v p="$(printf '%04X' "$1")" '$4 == "0A" && toupper(substr($2, index($2, ":") + 1)) == p {
        print substr($2, 1, index($2, ":") - 1) }' /proc/net/tcp /proc/net/tcp6
}
itest_eq "$(listen_addr "$C_PORT")" 0100007F "listening address of --metrics $C_PORT"
# 20 scrapers (over the 16-connection limit) connect; 10 send nothing, 10
# half a request. Each must be closed by the server: within a second of
# idleness (libmicrohttpd counts whole seconds: 1 to 2 s; 3 s is the bound
# on a loaded machine, the old 10 s timeout fails it).
# Then a scrape works at once.
python3 - "$C_PORT" >"$ITEST_DIR/idle.out" <<'PY' || esc_fail "idle scrapers: $(cat "$ITEST_DIR/idle.out")"
import socket, sys, time
port = int(sys.argv[1])
socks = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    if i % 2:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    socks.append((s, time.monotonic()))
worst = 0.0
for s, t0 in socks:
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
    worst = max(worst, time.monotonic() - t0)
    s.close()
print(f"METRICS-IDLE connections=20 closed=20 longest_open_s={worst:.2f}")
sys.exit(0 if worst <= 3.0 else 1)
PY
cat "$ITEST_DIR/idle.out"
scrape "$C_PORT" >"$ITEST_DIR/after-idle.txt" || esc_fail "no scrape after the idle ones"
grep -q '^# HELP escrow_coord_heartbeats_total ' "$ITEST_DIR/after-idle.txt" ||
    esc_fail "the scrape after the idle ones: $(head -c 300 "$ITEST_DIR/after-idle.txt")"

esc_step "$BUYERS buyers for $TOTAL units, every hold confirmed"
shard_load --item sale --buyers $BUYERS --concurrency 100 --confirm 1 --release 0 \
    --skew 80:20 --segments $SEGMENTS --give-up-ms 4000 --deadline-ms 30000 --seed 11 \
    --quiet >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" ||
    { cat "$ITEST_DIR/load.out" "$ITEST_DIR/load.log" >&2; esc_fail "escrow-load failed"; }
line=$(grep '^RESULT' "$ITEST_DIR/load.out") || esc_fail "no RESULT line"
echo "$line"
itest_eq "$(itest_field holds_ok "$line")" $TOTAL "holds acknowledged"
itest_eq "$(itest_field sold "$line")" $TOTAL "sold (from PostgreSQL)"
itest_eq "$(itest_field errors "$line")" 0 "errors seen by buyers"

esc_step "node metrics after the sale"
itest_eq "$(nodes_sum escrow_holds_created_total)" $TOTAL "holds created (committed reserves)"
itest_eq "$(nodes_sum 'escrow_holds_ended_total{state="converted"}')" $TOTAL "converted holds = units sold"
itest_eq "$(nodes_sum 'escrow_holds_ended_total{state="cancelled"}')" 0 "cancelled holds"
itest_eq "$(nodes_sum 'escrow_holds_ended_total{state="expired"}')" 0 "expired holds"
wait_value 30 "nodes_sum 'escrow_units{state=\"sold\"}'" $TOTAL
wait_value 30 "nodes_sum 'escrow_units{state=\"held\"}'" 0
wait_value 30 "nodes_sum 'escrow_units{state=\"available\"}'" 0
wait_value 30 "nodes_sum escrow_holds_live" 0
wait_value 30 "nodes_sum escrow_segments_served" $SEGMENTS
freeze "$N1_PORT" "$N2_PORT"
ok_reserves=$(nodes_sum 'escrow_requests_total{op="reserve",status="OK"}')
((ok_reserves >= TOTAL)) || esc_fail "reserve OK answers $ok_reserves < $TOTAL"
ok_confirms=$(nodes_sum 'escrow_requests_total{op="confirm",status="OK"}')
((ok_confirms >= TOTAL)) || esc_fail "confirm OK answers $ok_confirms < $TOTAL"
echo "node rejections: SOLD_OUT=$(nodes_sum 'escrow_rejections_total{kind="SOLD_OUT"}')" \
    "TRY_LATER=$(nodes_sum 'escrow_rejections_total{kind="TRY_LATER"}')" \
    "SEGMENT_EMPTY=$(nodes_sum 'escrow_rejections_total{kind="SEGMENT_EMPTY"}')" \
    "NOT_OWNER=$(nodes_sum 'escrow_rejections_total{kind="NOT_OWNER"}')"
# In a cluster, buyers late to a sold-out item are answered SOLD_OUT from
# their cached routing table (sold_out_cached in the RESULT line), never by
# a node: a managed node knows only its own segments and says
# SEGMENT_EMPTY (node-side SOLD_OUT is checked in static mode at the end).
# One late buyer asks the tail's node directly: counted exactly once.
tail_seg=$(itest_q "SELECT COALESCE(tail_segment, (SELECT min(segment_id) FROM segments WHERE item_id = 'sale')) FROM items WHERE item_id = 'sale'")
owner=$(itest_q "SELECT node_id FROM segments WHERE segment_id = $tail_seg")
owner_port=$N1_PORT
[[ $owner == n2 ]] && owner_port=$N2_PORT
thaw
empty_before=$(metric "$owner_port" 'escrow_rejections_total{kind="SEGMENT_EMPTY"}')
reserve_before=$(metric "$owner_port" 'escrow_requests_total{op="reserve",status="SEGMENT_EMPTY"}')
out=$(itest_probe hint-reserve --endpoint "${SHARD_EP[$owner]}" --tenant t1 --item sale --key late-1 \
    --segment "$tail_seg")
itest_eq "$(itest_status "$out")" SEGMENT_EMPTY "a late buyer at the tail's node (seg $tail_seg on $owner)"
itest_eq "$(metric "$owner_port" 'escrow_rejections_total{kind="SEGMENT_EMPTY"}')" $((empty_before + 1)) \
    "SEGMENT_EMPTY rejections after one more"
itest_eq "$(metric "$owner_port" 'escrow_requests_total{op="reserve",status="SEGMENT_EMPTY"}')" \
    $((reserve_before + 1)) "reserve requests answered SEGMENT_EMPTY after one more"
freeze "$N1_PORT" "$N2_PORT"
for p in "$N1_PORT" "$N2_PORT"; do
    rows=$(metric "$p" escrow_batch_rows_count)
    lat=$(metric "$p" escrow_commit_latency_seconds_count)
    itest_eq "$lat" "$rows" "one latency observation per batch (port $p)"
    itest_eq "$(metric "$p" 'escrow_batch_rows_bucket{le="+Inf"}')" "$rows" "+Inf bucket = count"
    itest_eq "$(metric "$p" escrow_batches_failed_total)" 0 "failed batches (port $p)"
    itest_eq "$(metric "$p" escrow_segments_fenced_total)" 0 "fenced segments (port $p)"
    sent=$(metric "$p" 'escrow_heartbeats_total{result="sent"}')
    ((sent > 0)) || esc_fail "no heartbeats sent (port $p)"
done
batches=$(nodes_sum escrow_batch_rows_count)
((batches > 0)) || esc_fail "no batches observed"
received_db=$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'sale' AND state = 'received' AND to_segment IS NOT NULL")
itest_eq "$(nodes_sum 'escrow_transfers_total{kind="receive",outcome="received"}')" "$received_db" \
    "transfers received by nodes = received rows into segments"
sent_db=$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'sale' AND from_segment IS NOT NULL AND state IN ('sent', 'received')")
itest_eq "$(nodes_sum 'escrow_transfers_total{kind="give",outcome="sent"}')" "$sent_db" \
    "transfers sent by nodes = rows sent out of segments"

thaw

esc_step "coordinator metrics after the sale"
wait_value 30 "metric $C_PORT 'escrow_coord_transfers_in_flight{state=\"sent\"}'" 0
wait_value 30 "metric $C_PORT 'escrow_coord_transfers_in_flight{state=\"planned\"}'" 0
scrape "$C_PORT" >"$ITEST_DIR/coord-after.txt"
planned=$(awk '/^escrow_coord_transfers_planned_total\{/ { s += $2 } END { print s + 0 }' "$ITEST_DIR/coord-after.txt")
itest_eq "$planned" "$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'sale'")" \
    "transfers planned = transfer rows"
completed=$(awk '/^escrow_coord_transfers_completed_total\{/ { s += $2 } END { print s + 0 }' "$ITEST_DIR/coord-after.txt")
echo "transfers planned=$planned completed=$completed received_into_segments=$received_db"
((completed > 0 && completed <= planned)) || esc_fail "transfers completed $completed (planned $planned)"
itest_eq "$(metric "$C_PORT" escrow_coord_collapses_total)" \
    "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'sale' AND kind = 'collapsed'")" \
    "collapses = collapse events"
grants=$(metric "$C_PORT" escrow_coord_epoch_changes_total)
((grants >= SEGMENTS)) || esc_fail "epoch changes $grants < $SEGMENTS"
routes=$(metric "$C_PORT" escrow_coord_routes_published_total)
((routes > 0)) || esc_fail "no routes published"
itest_eq "$(metric "$C_PORT" escrow_coord_lease_expiries_total)" 0 "lease expiries"
itest_eq "$(metric "$C_PORT" 'escrow_coord_nodes{state="down"}')" 0 "nodes down"
itest_eq "$(metric "$C_PORT" escrow_coord_segments_unserved)" 0 "segments unserved"
# reports and segment rows agree once the sale settled and the catalog was read again
wait_value 30 "metric $C_PORT escrow_coord_view_gap_units" 0
wait_value 30 "metric $C_PORT escrow_conservation_ok" 1
itest_eq "$(metric "$C_PORT" escrow_conservation_violations)" 0 "items violating"
ts=$(metric "$C_PORT" escrow_conservation_last_check_timestamp_seconds)
# a Unix time in seconds, recent (the monitor checks every 200 ms)
awk -v ts="$ts" -v now="$(date +%s)" 'BEGIN { d = now - ts; exit !(d > -30 && d < 30) }' ||
    esc_fail "last check at $ts, not within 30 s of $(date +%s)"
expect_ok=$(esc_ctl status t1 sale)
grep -qE '^invariant monitor: ok \(checked [0-9.]+ s ago, 1 items, 8 segments' <<<"$expect_ok" ||
    esc_fail "status: $expect_ok"
itest_invariants sale

esc_step "break the books: the monitor reports the item and the segment"
seg=$(itest_q "SELECT min(segment_id) FROM segments WHERE item_id = 'sale'")
esc_psql "UPDATE items SET total = total + 5 WHERE item_id = 'sale';
          UPDATE segments SET sold = sold + 1 WHERE segment_id = $seg;
          UPDATE items SET total = total + 1 WHERE item_id = 'sale'" >/dev/null
wait_value 30 "metric $C_PORT escrow_conservation_ok" 0
wait_value 30 "metric $C_PORT escrow_conservation_violations" 1
wait_value 30 "metric $C_PORT escrow_conservation_segment_violations" 1
# labels off (the default): the violation is counted, no series names t1 or sale
scrape "$C_PORT" >"$ITEST_DIR/coord-nolabels.txt"
itest_eq "$(grep -c 'tenant=\|item=\|t1\|sale' "$ITEST_DIR/coord-nolabels.txt" || true)" 0 \
    "series naming a tenant or an item without --metrics-labels"
esc_node_stop "$SHARD_COORD_PID" || esc_fail "the coordinator did not stop cleanly"
shard_coord_start --collapse-pct 10 --metrics "127.0.0.1:$C_PORT" --check-ms 200 --metrics-labels on
wait_value 30 "metric $C_PORT escrow_conservation_violations" 1
scrape "$C_PORT" >"$ITEST_DIR/coord-labels.txt"
grep -q '^# HELP escrow_conservation_divergence_units ' "$ITEST_DIR/coord-labels.txt" ||
    esc_fail "no divergence series with --metrics-labels on"
itest_eq "$(metric "$C_PORT" 'escrow_conservation_divergence_units{tenant="t1",item="sale"}')" 5 \
    "divergence of t1/sale (total minus accounted)"
# The log line, the metrics and the monitor's row (what escrowctl status
# reads) are written one after the other: each is waited for.
esc_wait_for 30 grep -q 'WARN COORD-INVARIANT conservation violated: item=t1/sale total=206 accounted=201 divergence=5' \
    "$SHARD_COORD_LOG" || esc_fail "no WARN line naming the item"
esc_wait_for 30 grep -q "WARN COORD-INVARIANT conservation violated: segment=$seg item=t1/sale" "$SHARD_COORD_LOG" ||
    esc_fail "no WARN line naming the segment"
esc_wait_for 30 status_says '^invariant monitor: VIOLATED, 2 violations \(checked [0-9.]+ s ago' ||
    esc_fail "status does not show the violation: $(cat "$ITEST_DIR/status.out")"
out=$(cat "$ITEST_DIR/status.out")
echo "$out" | tail -n 3
grep -q '^    item=t1/sale total=206 accounted=201 divergence=5' <<<"$out" || esc_fail "status lacks the item's figures"
grep -q "^    segment=$seg item=t1/sale held=0 (holds say 0) sold=" <<<"$out" || esc_fail "status lacks the segment"
esc_ctl --json status t1 sale | python3 -c '
import json, sys
m = json.load(sys.stdin)["monitor"]
assert m["ok"] is False and m["violations"] == 2 and not m["stale"], m
assert "divergence=5" in m["detail"], m
' || esc_fail "status --json monitor"
rc=0
esc_ctl check >/dev/null || rc=$?
itest_eq "$rc" 1 "escrowctl check on broken books"

esc_step "repair: the monitor reports ok again"
esc_psql "UPDATE items SET total = total - 6 WHERE item_id = 'sale';
          UPDATE segments SET sold = sold - 1 WHERE segment_id = $seg" >/dev/null
wait_value 30 "metric $C_PORT escrow_conservation_ok" 1
itest_eq "$(metric "$C_PORT" 'escrow_conservation_divergence_units{tenant="t1",item="sale"}')" absent \
    "no divergence series once it holds"
esc_wait_for 30 grep -q 'INFO COORD-INVARIANT conservation holds again' "$SHARD_COORD_LOG" ||
    esc_fail "no 'holds again' line"
violated=$(metric "$C_PORT" 'escrow_conservation_checks_total{result="violated"}')
((violated >= 1)) || esc_fail "checks_total{result=violated} is $violated"
esc_wait_for 30 status_says '^invariant monitor: ok ' || esc_fail "status not ok after repair"
itest_invariants sale

esc_step "static mode: a node alone answers SOLD_OUT from memory, counted exactly"
# The cluster stops first: a coordinator would take the static node's segment.
for pid in "${SHARD_PID[n1]}" "${SHARD_PID[n2]}" "$SHARD_COORD_PID"; do
    esc_node_stop "$pid" || esc_fail "a daemon did not stop cleanly"
done
# stale once 3 check periods + 1 s passed without a check
esc_wait_for 30 status_says '^invariant monitor: ok .*STALE' ||
    esc_fail "status does not say the monitor result is stale: $(cat "$ITEST_DIR/status.out")"
esc_ctl item create t1 solo --total 20 --segments 1 --node s1 >/dev/null
S_PORT=$(itest_port)
s_node=$(itest_port)
itest_node s1 "$s_node" --metrics "127.0.0.1:$S_PORT"
"$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$s_node" --tenant t1 --item solo --buyers 300 \
    --concurrency 20 --confirm 1 --release 0 --give-up-ms 4000 --deadline-ms 30000 --seed 5 \
    --dsn "$ESCROW_DSN" \
    --quiet >"$ITEST_DIR/solo.out" 2>"$ITEST_DIR/solo.log" ||
    { cat "$ITEST_DIR/solo.out" "$ITEST_DIR/solo.log" >&2; esc_fail "escrow-load (static) failed"; }
line=$(grep '^RESULT' "$ITEST_DIR/solo.out") || esc_fail "no RESULT line (static)"
echo "$line"
itest_eq "$(itest_field holds_ok "$line") $(itest_field sold "$line")" "20 20" "holds and sold (static)"
told=$(($(itest_field rejected_sold_out "$line") - $(itest_field sold_out_cached "$line")))
((told > 0)) || esc_fail "no buyer was told SOLD_OUT by the node"
itest_eq "$(metric "$S_PORT" 'escrow_rejections_total{kind="SOLD_OUT"}')" "$told" \
    "SOLD_OUT rejections = buyers the node told SOLD_OUT"
itest_eq "$(metric "$S_PORT" 'escrow_holds_ended_total{state="converted"}')" 20 "converted holds (static)"
itest_eq "$(metric "$S_PORT" 'escrow_heartbeats_total{result="sent"}')" 0 "no heartbeats in static mode"
itest_pass
