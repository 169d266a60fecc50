#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shard_lib.sh - what the sharding tests share, on top of itest_lib.sh: a
# coordinator and managed segment nodes on the test's private PostgreSQL,
# and a conservation sampler that runs during a sale.
#
# Functions:
#   shard_coord_start [ARGS...]   start escrow-coordinator (REP + PUB on free ports), wait for
#                                 COORD-READY; sets SHARD_COORD_URL, SHARD_PUB_URL,
#                                 SHARD_COORD_PID, SHARD_COORD_LOG. The same ports are reused
#                                 by a restart (call it again after a kill).
#   shard_standby_start [ARGS...]   start one more escrow-coordinator on the same database, on
#                                 fresh ports, and wait until it stands by (COORD-STANDBY); sets
#                                 SHARD_STANDBY_URL, SHARD_STANDBY_PUB, SHARD_STANDBY_PID,
#                                 SHARD_STANDBY_LOG
#   shard_node_start NODE [ARGS...]   start a managed escrow-segment on a free port; sets
#                                 SHARD_NODE_PID, SHARD_NODE_EP, SHARD_NODE_LOG; records NODE's pid and
#                                 endpoint in SHARD_PID[NODE], SHARD_EP[NODE]
#   shard_wait_served ITEM TIMEOUT_S  wait until every non-retired segment of ITEM is owned by
#                                 a node that heartbeats (nodes.state = 'up') and the owner
#                                 has loaded it (its route shows the owner's endpoint)
#   shard_sampler_start [ITEM_LIKE]   check conservation every 0.2 s in the background
#   shard_sampler_stop             stop it; fail if any sample violated conservation or
#                                 oversold, or if fewer than 3 samples were taken
#   shard_load ARGS...             run escrow-load against the coordinator (adds --coordinator,
#                                 --routes, --tenant t1)
# shellcheck source=tests/integration/itest_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

COORD_PROBE=${COORD_PROBE:-$ESC_BIN/../tests/coord_probe}
[[ -x $COORD_PROBE ]] || esc_fail "coord_probe not found (COORD_PROBE)"
declare -A SHARD_PID SHARD_EP
# The coordinator's lease: 50 heartbeats, so that a loaded machine does not
# make a live node miss it (its segments would move mid-sale). The tests
# whose subject is a lost lease (failover, zombie) set 1000 before sourcing.
SHARD_LEASE_MS=${SHARD_LEASE_MS:-5000}
SHARD_COORD_STARTS=0

# _shard_coord_spawn LOG URL PUB WORD WHAT [ARGS...]: escrow-coordinator on
# URL and PUB, logging to LOG; waits until it logs WORD. Sets _SHARD_PID.
_shard_coord_spawn() {
    local log=$1 url=$2 pub=$3 word=$4 what=$5
    shift 5
    [[ -x $ESC_BIN/escrow-coordinator ]] || esc_fail "no escrow-coordinator in ESC_BIN=$ESC_BIN"
    esc_spawn "$log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" --listen "$url" \
        --publish "$pub" --lease-ms "$SHARD_LEASE_MS" --heartbeat-ms 100 "$@"
    _SHARD_PID=$ESC_SPAWN_PID
    local deadline=$((SECONDS + 60))
    until grep -q "$word" "$log" 2>/dev/null; do
        if ! kill -0 "$_SHARD_PID" 2>/dev/null; then
            tail -n 30 "$log" >&2
            esc_fail "the $what exited before it logged $word"
        fi
        ((SECONDS < deadline)) || esc_fail "the $what did not log $word within 60 s"
        sleep 0.1
    done
}

shard_coord_start() {
    if [[ -z ${SHARD_COORD_URL:-} ]]; then
        SHARD_COORD_URL=tcp://127.0.0.1:$(itest_port)
        SHARD_PUB_URL=tcp://127.0.0.1:$(itest_port)
    fi
    SHARD_COORD_STARTS=$((SHARD_COORD_STARTS + 1))
    SHARD_COORD_LOG=$ITEST_DIR/coord$SHARD_COORD_STARTS.log
    _shard_coord_spawn "$SHARD_COORD_LOG" "$SHARD_COORD_URL" "$SHARD_PUB_URL" COORD-READY \
        coordinator "$@"
    SHARD_COORD_PID=$_SHARD_PID
}

SHARD_STANDBY_STARTS=0
shard_standby_start() {
    SHARD_STANDBY_URL=tcp://127.0.0.1:$(itest_port)
    SHARD_STANDBY_PUB=tcp://127.0.0.1:$(itest_port)
    SHARD_STANDBY_STARTS=$((SHARD_STANDBY_STARTS + 1))
    SHARD_STANDBY_LOG=$ITEST_DIR/standby$SHARD_STANDBY_STARTS.log
    _shard_coord_spawn "$SHARD_STANDBY_LOG" "$SHARD_STANDBY_URL" "$SHARD_STANDBY_PUB" \
        COORD-STANDBY "standby coordinator" "$@"
    SHARD_STANDBY_PID=$_SHARD_PID
}

shard_node_start() {
    local node=$1
    shift
    local port
    port=$(itest_port)
    itest_node "$node" "$port" --coordinator "$SHARD_COORD_URL" "$@"
    SHARD_NODE_PID=$ITEST_NODE_PID
    SHARD_NODE_EP=tcp://127.0.0.1:$port
    SHARD_NODE_LOG=$ITEST_NODE_LOG
    SHARD_PID[$node]=$SHARD_NODE_PID
    SHARD_EP[$node]=$SHARD_NODE_EP
}

# True when every live segment of $1 has an owner that is up and whose
# route entry names its endpoint (the coordinator saw the node load it).
_shard_served() {
    local unserved
    unserved=$(itest_q "SELECT count(*) FROM segments s LEFT JOIN nodes n USING (node_id)
        WHERE s.item_id = '$1' AND s.state <> 'retired' AND (n.node_id IS NULL OR n.state <> 'up')")
    [[ $unserved == 0 ]] || return 1
    local out segs
    out=$(shard_route "$1") || return 1
    [[ $out == OK* ]] || return 1
    segs=$(itest_field segs "$out")
    # every entry ID:EPOCH:STATE:ENDPOINT names an endpoint
    [[ $segs != - ]] && ! grep -qE '(^|,)[0-9]+:[0-9]+:[0-9]+:(,|$)' <<<"$segs"
}

# The coordinator's route of item $1 (coord_probe route).
shard_route() {
    "$COORD_PROBE" route "$SHARD_COORD_URL" t1 item="$1" 2>/dev/null
}

shard_wait_served() {
    esc_wait_for "$2" _shard_served "$1" || {
        shard_route "$1" >&2 || true
        esc_ctl status "$1" >&2 || true
        esc_fail "$ITEST_NAME: segments of $1 not served within $2 s"
    }
}

shard_sampler_start() {
    local like=${1:-%}
    SHARD_SAMPLES=$ITEST_DIR/samples.txt
    : >"$SHARD_SAMPLES"
    (
        while :; do
            esc_psql "SELECT count(*) FILTER (WHERE NOT ok) || ' ' || count(*) FILTER (WHERE held + sold > total)
                      FROM conservation WHERE item_id LIKE '$like'" >>"$SHARD_SAMPLES" 2>/dev/null || true
            sleep 0.2
        done
    ) &
    SHARD_SAMPLER_PID=$!
    ESC_PIDS+=("$SHARD_SAMPLER_PID")
}

shard_sampler_stop() {
    kill "$SHARD_SAMPLER_PID" 2>/dev/null || true
    wait "$SHARD_SAMPLER_PID" 2>/dev/null || true
    _itest_forget "$SHARD_SAMPLER_PID"
    local n bad
    n=$(grep -c . "$SHARD_SAMPLES" || true)
    bad=$(grep -vc '^0 0$' "$SHARD_SAMPLES" || true)
    ((n >= 3)) || esc_fail "$ITEST_NAME: only $n conservation samples were taken"
    itest_eq "$bad" 0 "conservation samples (of $n) that violated conservation or oversold"
    echo "conservation held in all $n samples"
}

shard_load() {
    "$ESC_BIN/escrow-load" --coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL" --tenant t1 "$@"
}
