#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# coord_idle_cpu.sh - what an idle catalog costs: a local cluster (2 nodes),
# ITEMS items of 4 segments each created in one SQL statement, no sale; once
# the segments are placed, the CPU the coordinator and PostgreSQL use over
# SECONDS, as a share of one core (utime + stime from /proc), the nodes' CPU
# likewise (all nodes together), and the bytes
# per second on the coordinator's request port (heartbeats and their
# replies, both ways: the TCP counters `ss -ti` shows). Before measuring it
# waits (up to ESC_IDLE_LOAD_WAIT_S, 120 s) until the nodes have loaded
# every segment (their SEG-LOADED lines) and says how many they loaded. Prints figures, asserts
# nothing. The machine's load average is printed with them: on a
# shared machine the figures are noisy.
#
#   tests/tools/coord_idle_cpu.sh [ITEMS (3000)] [SECONDS (20)] [NODES (2)]
#
# Environment: ESC_BIN (default build/bin of the source tree): use a build
# without sanitizers for figures (e.g. cmake -B build-rel; ESC_BIN=build-rel/bin);
# ESC_IDLE_LOAD_WAIT_S (120): how long to wait for the nodes' loads (a
# catalog of 100,000 items takes longer on a loaded machine).
set -euo pipefail

ITEMS=${1:-3000}
SECS=${2:-20}
NODES=${3:-2}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export ESC_BIN=${ESC_BIN:-$SRC/build/bin}
# shellcheck source=tests/support/lib.sh
source "$SRC/tests/support/lib.sh"

DIR=$(mktemp -d /tmp/coord_idle.XXXXXX)
esc_on_exit "rm -rf '$DIR'"
esc_cluster_start "$DIR/cluster" --nodes "$NODES"

esc_psql "INSERT INTO tenants (tenant_id) VALUES ('idle') ON CONFLICT DO NOTHING;
  INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  SELECT 'idle', 'sku-' || g, 400, 0, 4 FROM generate_series(1, $ITEMS) g;
  INSERT INTO segments (tenant_id, item_id, seg_no, available)
  SELECT 'idle', 'sku-' || g, s, 100 FROM generate_series(1, $ITEMS) g,
  generate_series(0, 3) s;" >/dev/null

placed() {
    [[ $(esc_psql "SELECT count(*) FROM segments WHERE tenant_id = 'idle' AND epoch = 0") == 0 ]]
}
t0=$SECONDS
esc_wait_for 600 placed || esc_fail "the segments were not placed within 600 s"
echo "placed $((ITEMS * 4)) segments in $((SECONDS - t0)) s"
loaded() { cat "$DIR"/cluster/n*.log | grep -c SEG-LOADED || true; }
all_loaded() { (($(loaded) >= ITEMS * 4)); }
esc_wait_for "${ESC_IDLE_LOAD_WAIT_S:-120}" all_loaded || true
echo "nodes loaded $(loaded) of $((ITEMS * 4)) segments after $((SECONDS - t0)) s"
sleep 5 # the placement's own writes settle

ticks() { # PID... -> utime + stime in clock ticks, summed
    local p sum=0 f
    for p in "$@"; do
        f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        f=${f##*) }
        read -r -a a <<<"$f"
        sum=$((sum + a[11] + a[12]))
    done
    echo "$sum"
}
pg_pids() { # the postmaster and its children
    local pm
    pm=$(head -n 1 "$ESC_PG_DIR/data/postmaster.pid")
    echo "$pm" "$(pgrep -P "$pm" | tr "\n" " ")"
}
CPORT=${ESCROW_COORDINATOR##*:}
io() { # bytes sent and received so far on the coordinator's request port
    ss -tinH state established "( sport = :$CPORT )" |
        grep -oE 'bytes_(acked|received):[0-9]+' | awk -F: '{s += $2} END {printf "%d", s}'
}
HZ=$(getconf CLK_TCK)
node_pids() {
    local n v
    for n in $ESC_CLUSTER_NODES; do
        v=ESC_CLUSTER_NODE_PID_$n
        echo "${!v}"
    done
}
c0=$(ticks "$ESC_CLUSTER_COORD_PID")
p0=$(ticks $(pg_pids))
n0=$(ticks $(node_pids))
i0=$(io)
sleep "$SECS"
c1=$(ticks "$ESC_CLUSTER_COORD_PID")
p1=$(ticks $(pg_pids))
n1=$(ticks $(node_pids))
i1=$(io)
pct() { awk -v d="$1" -v hz="$HZ" -v s="$SECS" 'BEGIN { printf "%.1f", 100 * d / hz / s }'; }
echo "items=$ITEMS segments=$((ITEMS * 4)) nodes=$NODES idle_seconds=$SECS"
echo "coordinator_cpu_pct=$(pct $((c1 - c0))) postgresql_cpu_pct=$(pct $((p1 - p0)))" \
    "nodes_cpu_pct=$(pct $((n1 - n0)))"
echo "heartbeat_bytes_per_s=$(((i1 - i0) / SECS))"
echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
