#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# conn_attack.sh - what a connection flood costs one segment node
# (docs/operating.md#metrics): one private PostgreSQL, one node in static
# mode. Real clients (escrow-load: reserve then confirm, ESC_ATTACK_CONC in
# flight) run alone first (their p99 is the baseline), then again while
# tests/support/conn_attack.py holds ESC_ATTACK_IDLE idle connections and
# ESC_ATTACK_SLOW slow half-sent frames against the node. Prints the node's
# memory before / while held / after close, its CPU while held, the clients'
# p50/p99 both ways, and a RESULT line. A benchmark: nothing is asserted.
#
#   tests/support/conn_attack.sh     (ESC_BIN: build/bin)
#
# Knobs: ESC_ATTACK_IDLE (5000), ESC_ATTACK_SLOW (1000), ESC_ATTACK_CONC (16),
# ESC_ATTACK_BUYERS (4000), ESC_ATTACK_NODE_ARGS (more flags for the node,
# e.g. "--conn-idle-s 30": the idle sweep then looks at every connection
# each 3 s during the attack), ESC_ATTACK_DIR (logs; a fresh
# /tmp/escrow-attack.XXXXXX by default, kept).
set -euo pipefail
ESC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ESC_BIN=${ESC_BIN:-$ESC_SRC/build/bin}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

idle=${ESC_ATTACK_IDLE:-5000}
slow=${ESC_ATTACK_SLOW:-1000}
conc=${ESC_ATTACK_CONC:-16}
buyers=${ESC_ATTACK_BUYERS:-4000}
for b in escrow-load escrow-segment escrowctl; do
    [[ -x $ESC_BIN/$b ]] || esc_fail "no $b in ESC_BIN=$ESC_BIN"
done
dir=${ESC_ATTACK_DIR:-$(mktemp -d /tmp/escrow-attack.XXXXXX)}
mkdir -p "$dir"
echo "conn_attack: logs in $dir"

esc_step "PostgreSQL and one node"
esc_pg_start || esc_fail "cannot start PostgreSQL"
esc_ctl migrate >"$dir/migrate.log" 2>&1 || esc_fail "escrowctl migrate failed"
esc_ctl item create t1 a --total 100000000 --segments 4 --node n1 --hold-ttl-ms 600000 >/dev/null
port=$(esc_free_port)
# shellcheck disable=SC2086 # ESC_ATTACK_NODE_ARGS: words
esc_node_start n1 "tcp://127.0.0.1:$port" "$dir/n1.log" ${ESC_ATTACK_NODE_ARGS:-}
node_pid=$ESC_NODE_PID
grep 'DAEMON-FDS' "$dir/n1.log" || true

field() { # NAME LINE
    grep -o "[[:space:]]$1=[0-9.]*" <<<" $2" | head -n 1 | cut -d= -f2
}
clients() { # TAG -> the RESULT line of the real clients
    "$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$port" --tenant t1 --item a \
        --buyers "$buyers" --concurrency "$conc" --confirm 1 --release 0 --key-prefix "$1" \
        --quiet >"$dir/clients-$1.out" 2>&1 || esc_fail "the clients' run $1 failed"
    grep '^RESULT' "$dir/clients-$1.out"
}

esc_step "real clients alone"
alone=$(clients alone)
load_alone=$(cut -d' ' -f1-3 /proc/loadavg)
esc_step "real clients while $idle idle connections and $slow slow half-sent frames are held"
python3 "$ESC_SRC/tests/support/conn_attack.py" --port "$port" --pid "$node_pid" \
    --idle "$idle" --slow "$slow" --hold-s 20 >"$dir/attack.out" 2>&1 &
apid=$!
ESC_PIDS+=("$apid")
opened() { grep -q '^opened' "$dir/attack.out"; }
esc_wait_for 300 opened ||
    esc_fail "the attack did not open its connections: $(cat "$dir/attack.out")"
held=$(clients held)
load_held=$(cut -d' ' -f1-3 /proc/loadavg)
wait "$apid" || esc_fail "the attack script failed: $(cat "$dir/attack.out")"
cat "$dir/attack.out"
echo "clients alone:        p50 $(field p50_ms "$alone") ms, p99 $(field p99_ms "$alone") ms (load average $load_alone)"
echo "clients under attack: p50 $(field p50_ms "$held") ms, p99 $(field p99_ms "$held") ms (load average $load_held)"
nofile_cpu=-
if command -v prlimit >/dev/null; then
    esc_step "out of descriptors: the node's limit lowered to what it uses + 64, 500 connections"
    used=$(find "/proc/$node_pid/fd" -mindepth 1 | wc -l)
    limit=$(prlimit --pid "$node_pid" --nofile --noheadings --output SOFT)
    prlimit --pid "$node_pid" --nofile=$((used + 64)): # the soft limit only
    python3 "$ESC_SRC/tests/support/conn_attack.py" --port "$port" --pid "$node_pid" \
        --idle 500 --slow 0 --hold-s 5 --after-s 1 >"$dir/nofile.out" 2>&1 ||
        esc_fail "the out-of-descriptors run failed: $(cat "$dir/nofile.out")"
    prlimit --pid "$node_pid" --nofile="$limit":
    cat "$dir/nofile.out"
    nofile_cpu=$(field node_cpu_pct_held "$(grep '^RESULT' "$dir/nofile.out")")
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RESULT $(grep '^RESULT' "$dir/attack.out" | cut -d' ' -f2-) clients_p99_alone_ms=$(field p99_ms "$alone") clients_p99_attack_ms=$(field p99_ms "$held") node_cpu_pct_nofile=$nofile_cpu"
esc_node_stop "$node_pid" || true
