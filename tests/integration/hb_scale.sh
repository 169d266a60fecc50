#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hb_scale.sh - one segment node serving thousands of segments under a real
# coordinator and a real PostgreSQL (delta heartbeats: a heartbeat carries
# what changed, a full report or assignment goes in parts):
#   - ITEMS (750) items x 4 segments imported with escrowctl item import:
#     every one of the 3,000 segments is placed on the node, loaded, and its
#     figures held by the coordinator (escrow_coord_segments_reported);
#     a reserve on every item succeeds (exactly ITEMS), escrowctl check passes;
#   - the coordinator restarts: the node sees a new coordinator process,
#     sends a full report in parts, takes a full assignment in parts; no
#     segment is revoked or dropped (epochs unchanged, no SEG-DROP), the
#     coordinator holds every segment's figures again; a reserve on every
#     item succeeds again;
#   - the node restarts: its segments come back at raised epochs, all of
#     them served; a third reserve on every item; holds exactly 3 x ITEMS,
#     escrowctl check passes.
# Prints the heartbeat bytes per second the node sent while idle.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

for b in escrow-coordinator escrow-segment escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}'"
done
ESC_PROBE=${ESC_PROBE:-$ESC_BIN/../tests/esc_probe}
[[ -x $ESC_PROBE ]] || esc_fail "esc_probe not found (set ESC_PROBE)"
command -v curl >/dev/null || esc_fail "hb_scale: curl is needed"

ITEMS=${HB_SCALE_ITEMS:-750}
SEGS=$((ITEMS * 4))
work=$(mktemp -d /tmp/escrow-hb-scale.XXXXXX)
passed=0
esc_on_exit '((passed)) && [[ ${ESC_KEEP:-0} != 1 ]] && rm -rf "$work" || echo "logs kept in $work" >&2'

q() { esc_psql "$1"; }

esc_step "private PostgreSQL, schema, a coordinator and one node"
esc_pg_start
esc_ctl migrate >/dev/null
CURL=tcp://127.0.0.1:$(esc_free_port)
PUB=tcp://127.0.0.1:$(esc_free_port)
MPORT=$(esc_free_port)
EP=tcp://127.0.0.1:$(esc_free_port)
export ESCROW_COORDINATOR=$CURL
coord_start() { # LOG
    esc_spawn "$1" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" --listen "$CURL" \
        --publish "$PUB" --lease-ms 8000 --heartbeat-ms 100 --rebalance-ms 60000 \
        --metrics "127.0.0.1:$MPORT"
    COORD_PID=$ESC_SPAWN_PID
    esc_wait_for 60 grep -q COORD-READY "$1" || esc_fail "the coordinator did not start ($1)"
}
node_start() { # LOG
    esc_node_start n1 "$EP" "$1" --coordinator "$CURL"
    NODE_PID=$ESC_NODE_PID
}
coord_start "$work/coord1.log"
node_start "$work/n1-1.log"

esc_step "$ITEMS items x 4 segments, imported"
{
    echo "tenant,item,total,segments"
    for ((i = 1; i <= ITEMS; i++)); do echo "t1,sku-$i,8,4"; done
} >"$work/cat.csv"
esc_ctl item import "$work/cat.csv" >"$work/import.out"
esc_assert_eq "$(q "SELECT count(*) FROM segments WHERE tenant_id = 't1'")" "$SEGS" "segments"

metric() { # NAME -> its value on the coordinator's metrics page
    curl -sfS --max-time 10 "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
reported_all() { [[ $(metric escrow_coord_segments_reported) == "$SEGS" ]]; }
loaded_at_least() { # LOG N
    (($(grep -c 'SEG-LOADED' "$1" || true) >= $2))
}
all_served() { # LOG: every segment placed on n1, loaded, its figures at the coordinator
    [[ $(q "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
            WHERE n.state = 'up' AND s.epoch > 0 AND s.node_id = 'n1'") == "$SEGS" ]] &&
        loaded_at_least "$1" "$SEGS" && reported_all
}
t0=$SECONDS
esc_wait_for 90 all_served "$work/n1-1.log" ||
    esc_fail "not every segment served: $(grep -c SEG-LOADED "$work/n1-1.log" || true) loaded, $(metric escrow_coord_segments_reported) reported of $SEGS"
echo "hb_scale: $SEGS segments placed, loaded and reported in $((SECONDS - t0)) s"

reserve_each() { # KEY -> asserts a reserve on every item succeeded
    "$ESC_PROBE" reserve-each --coordinator "$CURL" --routes "$PUB" --tenant t1 --item sku- \
        --n "$ITEMS" --key "$1" --deadline-ms 20000 >"$work/each-$1.out" 2>&1 || true
    esc_assert_eq "$(grep '^reserved=' "$work/each-$1.out")" "reserved=$ITEMS of=$ITEMS" \
        "a reserve on every item ($1; first refusals: $(grep -m 3 REFUSED "$work/each-$1.out" | tr '\n' ' '))"
}
esc_step "a reserve on every item, escrowctl check"
reserve_each r1
esc_assert_eq "$(q "SELECT count(*) FROM holds WHERE tenant_id = 't1'")" "$ITEMS" "holds"
esc_ctl check >"$work/check1.out" || esc_fail "check: $(cat "$work/check1.out")"

esc_step "idle: heartbeat bytes (printed, not asserted)"
hb_bytes() { # heartbeat bytes both ways so far
    curl -sfS --max-time 10 "http://127.0.0.1:$MPORT/metrics" |
        awk '$1 ~ /^escrow_coord_heartbeat_bytes_total/ {s += $2} END {printf "%d", s}'
}
sleep 6 # segments whose figures changed are carried for 5 s more (demand decays)
b0=$(hb_bytes)
sleep 5
b1=$(hb_bytes)
echo "hb_scale: idle heartbeat bytes/s (both ways) at $SEGS segments: $(((b1 - b0) / 5)) (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"

esc_step "the coordinator restarts: a full report and a full assignment, nothing revoked"
epochs() { q "SELECT md5(string_agg(segment_id || ':' || epoch || ':' || node_id, ',' ORDER BY segment_id)) FROM segments"; }
before=$(epochs)
esc_node_stop "$COORD_PID" || esc_fail "the coordinator did not stop cleanly"
drops_before=$(grep -c 'SEG-DROP' "$work/n1-1.log" || true)
coord_start "$work/coord2.log"
esc_wait_for 60 grep -q "a new coordinator process answers" "$work/n1-1.log" ||
    esc_fail "the node did not notice the new coordinator"
esc_wait_for 60 reported_all ||
    esc_fail "after the restart the coordinator holds $(metric escrow_coord_segments_reported) segments' figures of $SEGS"
reserve_each r2
esc_assert_eq "$(epochs)" "$before" "owners and epochs across the coordinator's restart"
esc_assert_eq "$(grep -c 'SEG-DROP' "$work/n1-1.log" || true)" "$drops_before" "segments dropped by the node"

esc_step "the node restarts: all its segments back at raised epochs"
esc_node_stop "$NODE_PID" || esc_fail "the node did not stop cleanly"
node_start "$work/n1-2.log"
esc_wait_for 90 all_served "$work/n1-2.log" ||
    esc_fail "after the node's restart: $(grep -c SEG-LOADED "$work/n1-2.log" || true) loaded, $(metric escrow_coord_segments_reported) reported of $SEGS"
reserve_each r3
esc_assert_eq "$(q "SELECT count(*) FROM holds WHERE tenant_id = 't1'")" "$((3 * ITEMS))" "holds"
esc_ctl check >"$work/check2.out" || esc_fail "check: $(cat "$work/check2.out")"

passed=1
echo "hb_scale: PASS"
