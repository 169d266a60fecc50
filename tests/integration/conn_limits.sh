#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# conn_limits.sh - the connection guard of a segment node (conn_guard.h)
# against raw TCP peers (conn_peer.py) and a real client:
#   per-peer cap   conn_per_peer = 20: 30 connections from 127.0.0.2, exactly
#                  10 closed at accept, 20 held; a client from 127.0.0.1
#                  still buys;
#   idle timeout   conn_idle_s = 2 (a reload): 3 idle connections and 2 slow half-sent
#                  frames are all closed; the refusal counters say how many;
#   no descriptors the node's limit of open files lowered under its use
#                  (prlimit): 20 connections are each dropped once (the
#                  reserve descriptor), not retried in a spin; with the
#                  limit back, the node serves again;
#   and the CONN-FLOOD log lines;
#   the coordinator conn_per_peer = 5 (its config file): 8 connections from
#                  127.0.0.5, exactly 3 closed at accept; conn_idle_s = 2 by
#                  a reload: the 5 held, idle, are closed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"
PEER=$(dirname "${BASH_SOURCE[0]}")/conn_peer.py

itest_begin conn_limits
esc_ctl item create t1 tee --total 1000 --segments 2 --node n1 >/dev/null
P=$(itest_port)
M=$(itest_port)
# the caps from the node's config file: idle timeout off at first, then on by
# a reload (SIGHUP)
printf '[segment]\nconn_per_peer = 20\nconn_idle_s = 0\n' >"$ITEST_DIR/n1.ini"
itest_node n1 "$P" --metrics "127.0.0.1:$M" --config "$ITEST_DIR/n1.ini"
grep -q 'CONN-GUARD .*20 per peer address, closed after 0 s' "$ITEST_NODE_LOG" ||
    esc_fail "no CONN-GUARD line with the limits"

metric() { # NAME -> its value (absent: "absent")
    curl -s --max-time 10 "http://127.0.0.1:$M/metrics" |
        awk -v s="$1" '!found && index($0, s " ") == 1 { v = $2; found = 1 }
                       END { print found ? v : "absent" }'
}
buy() { # KEY -> the client's RESULT line
    "$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$P" --tenant t1 --item tee --buyers 1 \
        --concurrency 1 --confirm 1 --release 0 --key-prefix "$1" --deadline-ms 30000 --quiet |
        grep '^RESULT'
}

esc_step "per-peer cap: 30 connections from 127.0.0.2, cap 20"
r=$(python3 "$PEER" --port "$P" --src 127.0.0.2 --idle 30 --expect-closed 10 --deadline-s 60 &
    buy capped >"$ITEST_DIR/buy-capped.out"
    wait)
echo "$r"
itest_eq "$(itest_field closed "$r")" 10 "connections from one peer closed at accept"
itest_eq "$(itest_field open "$r")" 20 "connections from one peer held"
itest_eq "$(itest_field holds_ok "$(cat "$ITEST_DIR/buy-capped.out")")" 1 \
    "a client from another address bought meanwhile"
itest_eq "$(metric 'escrow_conn_refused_total{reason="per_peer"}')" 10 "per_peer refusals"

esc_step "idle timeout: conn_idle_s = 2 by a reload; 3 idle connections, 2 slow half-sent frames"
printf '[segment]\nconn_per_peer = 20\nconn_idle_s = 2\n' >"$ITEST_DIR/n1.ini"
kill -HUP "$ITEST_NODE_PID"
reloaded() { grep -q 'SEG-RELOAD .*conn_per_peer:conn_idle_s' "$ITEST_NODE_LOG"; }
esc_wait_for 30 reloaded || esc_fail "the reload did not name conn_idle_s"
r=$(python3 "$PEER" --port "$P" --src 127.0.0.3 --idle 3 --slow 2 --expect-closed 5 --deadline-s 60)
echo "$r"
itest_eq "$(itest_field closed "$r")" 5 "idle and slow connections closed"
idle_closed() { [[ $(metric 'escrow_conn_refused_total{reason="idle_timeout"}') -ge 5 ]]; }
esc_wait_for 30 idle_closed || esc_fail "idle_timeout counter under 5"
open_back() { [[ $(metric escrow_conn_open) == 0 ]]; }
esc_wait_for 30 open_back ||
    esc_fail "escrow_conn_open: $(metric escrow_conn_open), not 0"

esc_step "out of descriptors: 20 connections while the node has 8 spare"
used=$(find "/proc/$ITEST_NODE_PID/fd" -mindepth 1 | wc -l)
soft=$(prlimit --pid "$ITEST_NODE_PID" --nofile --noheadings --output SOFT)
prlimit --pid "$ITEST_NODE_PID" --nofile=$((used + 8)): # the soft limit only
r=$(python3 "$PEER" --port "$P" --src 127.0.0.4 --idle 20 --expect-closed 12 --deadline-s 60)
echo "$r"
prlimit --pid "$ITEST_NODE_PID" --nofile="$soft":
nofile=$(metric 'escrow_conn_refused_total{reason="no_descriptors"}')
echo "accepts dropped for want of a descriptor: $nofile"
# Each pending connection is dropped once; a spin retries it thousands of
# times a second (nanomsg alone). The scrape itself may need one more.
[[ $nofile =~ ^[0-9]+$ ]] && ((nofile >= 1 && nofile <= 40)) ||
    esc_fail "no_descriptors=$nofile: not one drop per pending connection"
itest_eq "$(itest_field holds_ok "$(buy after)")" 1 "a client buys with descriptors back"

esc_step "the CONN-FLOOD lines (at most one per 10 s)"
logged() { grep -q 'CONN-FLOOD .*per_peer=10 ' "$ITEST_NODE_LOG"; }
esc_wait_for 30 logged || esc_fail "no CONN-FLOOD line with per_peer=10"
grep 'CONN-FLOOD' "$ITEST_NODE_LOG"

esc_step "the coordinator: conn_per_peer = 5 from its config file, 8 connections from 127.0.0.5"
CP=$(itest_port)
PUBP=$(itest_port) # a port of its own: CP + 1 may be an outgoing connection's
M=$(itest_port)    # metric() reads the coordinator from here on
coord_ini() { # IDLE_S
    printf '[coordinator]\ndsn = %s\nlisten = tcp://127.0.0.1:%s\npublish = tcp://127.0.0.1:%s\nmetrics = 127.0.0.1:%s\nconn_per_peer = 5\nconn_idle_s = %s\n' \
        "$ESCROW_DSN" "$CP" "$PUBP" "$M" "$1" >"$ITEST_DIR/coord.ini"
}
coord_ini 0
esc_spawn "$ITEST_DIR/coord.log" "$ESC_BIN/escrow-coordinator" --config "$ITEST_DIR/coord.ini"
CPID=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$ITEST_DIR/coord.log" || esc_fail "the coordinator: no COORD-READY"
grep -q 'CONN-GUARD escrow-coordinator: .*5 per peer address, closed after 0 s' "$ITEST_DIR/coord.log" ||
    esc_fail "the coordinator's CONN-GUARD line: $(grep CONN-GUARD "$ITEST_DIR/coord.log")"
python3 "$PEER" --port "$CP" --src 127.0.0.5 --idle 8 --expect-closed 8 --deadline-s 90 \
    >"$ITEST_DIR/coord-peers.out" &
peers=$!
capped() { [[ $(metric 'escrow_conn_refused_total{reason="per_peer"}') == 3 ]]; }
esc_wait_for 60 capped ||
    esc_fail "per_peer refusals at the coordinator: $(metric 'escrow_conn_refused_total{reason="per_peer"}')"
itest_eq "$(metric escrow_conn_open)" 5 "connections the coordinator holds from 127.0.0.5"
esc_step "the coordinator: conn_idle_s = 2 by a reload"
coord_ini 2
kill -HUP "$CPID"
wait "$peers"
r=$(cat "$ITEST_DIR/coord-peers.out")
echo "$r"
itest_eq "$(itest_field closed "$r")" 8 "connections closed by the coordinator (3 at accept, 5 idle)"
grep -q 'COORD-RELOAD .*conn_per_peer:conn_idle_s' "$ITEST_DIR/coord.log" ||
    esc_fail "the reload did not name conn_idle_s"
itest_eq "$(metric 'escrow_conn_refused_total{reason="idle_timeout"}')" 5 "idle closes at the coordinator"

itest_pass
