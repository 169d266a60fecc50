#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh - a flash sale, end to end, on this machine: 100,000 buyers after
# 10,000 units; then the books are checked. Exits non-zero unless nothing was
# oversold and conservation holds (and, on the cluster, nothing was stranded).
#
# Two modes (ESC_DEMO_MODE), and a third in a script of its own:
#   cluster  a local cluster (tests/support/cluster.sh): a private PostgreSQL,
#            escrow-coordinator and ESC_DEMO_NODES managed segment nodes; the
#            item has ESC_DEMO_SEGMENTS segments placed by the coordinator;
#            escrow-load routes through the coordinator with demand skewed
#            ESC_DEMO_SKEW (80% of the buyers onto 20% of the segments), so
#            stock has to move toward the busy segments and collapse into a
#            tail near the end; the RESULT line carries stranded= (units left
#            anywhere while a buyer heard "sold out"), which must be 0.
#            `escrowctl status` is sampled during the sale (status-live.txt);
#            `escrowctl top --batch --json` every ESC_DEMO_TIMELINE_MS
#            (timeline.jsonl) until the abandoned holds expired, and
#            tests/support/timeline_svg.py draws timeline.svg from it and the
#            item's transfers and collapse (transfers.csv, events.csv): every
#            segment's available/held/sold over the sale. The picture is
#            checked (well-formed, one series per segment, a point per
#            sample, a marker per transfer and per collapse, counted from
#            the database).
#   single   one segment node in static mode (escrowctl item create --node n1),
#            the smallest demo.
#   gateway  the sale over HTTPS through escrow-gateway: demo_gateway.sh.
#
# Builds nothing: ESC_BIN must name the directory with escrow-segment,
# escrowctl, escrow-load (and escrow-coordinator for the cluster; `make demo`
# does all of it). Knobs, with their defaults: ESC_DEMO_MODE=cluster if
# ESC_BIN has escrow-coordinator, else single;
# ESC_DEMO_TOTAL=10000 ESC_DEMO_SEGMENTS=4 (cluster: 8) ESC_DEMO_NODES=2
# ESC_DEMO_SKEW=80:20 ESC_DEMO_BUYERS=100000 ESC_DEMO_CONCURRENCY=1000
# ESC_DEMO_LOAD_TTL_MS=2000 ESC_DEMO_LOAD_TIMEOUT_S=900 ESC_DEMO_TIMELINE_MS=250
# ESC_DEMO_DIR (logs; default a fresh directory under /tmp, kept afterwards).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The cluster is the demo of the sharded design: the default whenever
# escrow-coordinator was built; ESC_DEMO_MODE=single forces the one-node demo.
mode=${ESC_DEMO_MODE:-}
if [[ -z $mode ]]; then
    mode=single
    [[ -x ${ESC_BIN:-}/escrow-coordinator ]] && mode=cluster
fi
case $mode in
single | cluster) ;;
gateway) exec bash "$(dirname "$0")/demo_gateway.sh" ;; # a sale over HTTPS: demo_gateway.sh
*) esc_fail "ESC_DEMO_MODE must be single, cluster or gateway, not '$mode'" ;;
esac

total=${ESC_DEMO_TOTAL:-10000}
if [[ $mode == cluster ]]; then
    segments=${ESC_DEMO_SEGMENTS:-8}
else
    segments=${ESC_DEMO_SEGMENTS:-4}
fi
nodes=${ESC_DEMO_NODES:-2}
skew=${ESC_DEMO_SKEW:-80:20}
buyers=${ESC_DEMO_BUYERS:-100000}
concurrency=${ESC_DEMO_CONCURRENCY:-1000}
# The item's own hold TTL is 30 s, what a shop would give a checkout. The load
# asks for 2 s holds instead (--ttl-ms): 10% of its buyers abandon their hold,
# and with 30 s those units would still be parked in holds when the sale ends
# (the whole run takes well under 30 s), so the demo would end "sold out"
# with units that nobody pays for. With 2 s the abandoned holds expire during
# the run, the node's sweeper returns the units, and later buyers buy them:
# the full life of a unit (held -> expired -> held again -> converted) is
# exercised and the sale ends with sold == total. Buyers who confirm do so
# long before 2 s, so the short TTL costs them nothing.
load_ttl_ms=${ESC_DEMO_LOAD_TTL_MS:-2000}
load_timeout_s=${ESC_DEMO_LOAD_TIMEOUT_S:-900}
timeline_ms=${ESC_DEMO_TIMELINE_MS:-250}
tenant=shop-1
item=flash-tee

bins=(escrow-segment escrowctl escrow-load)
[[ $mode == cluster ]] && bins+=(escrow-coordinator)
for b in "${bins[@]}"; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}' (build first: make demo)"
done
# A directory the caller named is kept; one made here is removed after a
# successful run (kept after a failure, for the logs).
dir=${ESC_DEMO_DIR:-}
own_dir=0
if [[ -z $dir ]]; then
    dir=$(mktemp -d /tmp/escrow-demo.XXXXXX)
    own_dir=1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "escrow demo ($mode): $buyers buyers, $concurrency at a time, for $total units in $segments segments"
echo "logs in $dir"


# The sale; ARGS say where escrow-load sends its requests. Output in load.out.
run_load() {
    local load_rc=0
    timeout "$load_timeout_s" "$ESC_BIN/escrow-load" "$@" --tenant "$tenant" \
        --item "$item" --buyers "$buyers" --concurrency "$concurrency" --ttl-ms "$load_ttl_ms" \
        --dsn "$ESCROW_DSN" 2>&1 | tee "$dir/load.out" || load_rc=${PIPESTATUS[0]}
    if ((load_rc == 124)); then
        esc_fail "escrow-load did not finish within $load_timeout_s s"
    elif ((load_rc > 128)); then
        esc_fail "escrow-load died of signal $((load_rc - 128))"
    elif ((load_rc != 0)); then
        echo "note: escrow-load exited $load_rc"
    fi
}

no_units_held() {
    [[ $(esc_psql "SELECT COALESCE(sum(held), 0) FROM segments") == 0 ]]
}

wait_holds_expired() {
    if esc_wait_for $((load_ttl_ms / 1000 + 60)) no_units_held; then
        echo "no units are held any more"
    else
        echo "still held: $(esc_psql "SELECT sum(held) FROM segments") units (the check below still applies)"
    fi
}

all_segments_served() {
    [[ $(esc_psql "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
                   WHERE s.tenant_id = '$tenant' AND s.item_id = '$item' AND n.state = 'up'
                   AND s.epoch > 0") == "$segments" ]]
}

# escrowctl status every 2 s into status-live.txt, each sample after a
# "--- HH:MM:SS" line, while the sale runs.
sampler_start() {
    : >"$dir/status-live.txt"
    (
        while :; do
            {
                echo "--- $(date +%H:%M:%S)"
                "$ESC_BIN/escrowctl" status "$tenant" "$item" 2>&1 || true
            } >>"$dir/status-live.txt"
            sleep 2
        done
    ) &
    sampler_pid=$!
    ESC_PIDS+=("$sampler_pid")
}

sampler_stop() {
    kill "$sampler_pid" 2>/dev/null || true
    wait "$sampler_pid" 2>/dev/null || true
    _esc_forget_pid "$sampler_pid"
}

# escrowctl top's JSON lines, one snapshot of the item every $timeline_ms,
# into timeline.jsonl: the series of the timeline picture.
timeline_start() {
    "$ESC_BIN/escrowctl" top --batch --json --interval-ms "$timeline_ms" "$tenant" \
        --prefix "$item" >"$dir/timeline.jsonl" 2>"$dir/timeline.err" &
    timeline_pid=$!
    ESC_PIDS+=("$timeline_pid")
}

# The first snapshot is out: the picture starts before the first buyer.
timeline_sampled() {
    [[ -s $dir/timeline.jsonl ]]
}

# SIGTERM: top stops after a complete snapshot (exit 0).
timeline_stop() {
    local rc=0
    kill -TERM "$timeline_pid" 2>/dev/null || true
    wait "$timeline_pid" || rc=$?
    _esc_forget_pid "$timeline_pid"
    ((rc == 0)) || esc_fail "escrowctl top (the timeline's sampler) exited $rc: $(cat "$dir/timeline.err")"
}

# The item's transfers and its collapse/split events as CSV (times in unix
# ms, the database's clock, as top's at_ms), then timeline.svg, then the
# check of the picture against counts taken from the database.
timeline_draw() {
    local where="tenant_id = '$tenant' AND item_id = '$item'" tl
    tl=$(dirname "$0")/timeline_svg.py
    esc_psql "COPY (SELECT transfer_id, from_segment, to_segment, qty, reason, state,
                      (extract(epoch FROM created_at) * 1000)::bigint AS created_ms,
                      (extract(epoch FROM sent_at) * 1000)::bigint AS sent_ms,
                      (extract(epoch FROM received_at) * 1000)::bigint AS received_ms
                    FROM transfers WHERE $where ORDER BY transfer_id)
              TO STDOUT WITH (FORMAT csv, HEADER)" >"$dir/transfers.csv"
    esc_psql "COPY (SELECT kind, segment_id, (extract(epoch FROM at) * 1000)::bigint AS at_ms
                    FROM outbox WHERE $where AND kind IN ('collapsed', 'split') ORDER BY event_id)
              TO STDOUT WITH (FORMAT csv, HEADER)" >"$dir/events.csv"
    python3 "$tl" render --samples "$dir/timeline.jsonl" --transfers "$dir/transfers.csv" \
        --events "$dir/events.csv" --tenant "$tenant" --item "$item" --out "$dir/timeline.svg"
    local segs samples xfers collapses
    segs=$(esc_psql "SELECT count(*) FROM segments WHERE $where")
    samples=$(grep -c . "$dir/timeline.jsonl" || true)
    xfers=$(esc_psql "SELECT count(*) FROM transfers WHERE $where AND sent_at IS NOT NULL")
    collapses=$(esc_psql "SELECT count(*) FROM outbox WHERE $where AND kind = 'collapsed'")
    python3 "$tl" check "$dir/timeline.svg" --segments "$segs" --samples "$samples" \
        --transfers "$xfers" --collapses "$collapses" ||
        esc_fail "timeline.svg does not show what the database holds"
    echo "timeline: $dir/timeline.svg ($segs segments, $samples samples, $xfers transfers, $collapses collapse)"
}

demo_cluster() {
    esc_step "1/8 a local cluster: PostgreSQL (fsync on), escrow-coordinator, $nodes segment nodes"
    esc_cluster_start "$dir/cluster" --nodes "$nodes"
    echo "ESCROW_DSN=$ESCROW_DSN"
    echo "ESCROW_COORDINATOR=$ESCROW_COORDINATOR (routes on $ESC_CLUSTER_PUBLISH)"
    for n in $ESC_CLUSTER_NODES; do
        echo "node $n (pid $(esc_cluster_node_pid "$n")) listens on $(esc_cluster_node_ep "$n")"
    done

    esc_step "2/8 escrowctl item create $tenant $item --total $total --segments $segments (no --node: the coordinator places them)"
    esc_ctl item create "$tenant" "$item" --total "$total" --segments "$segments" \
        --max-per-order 5 --hold-ttl-ms 30000

    esc_step "3/8 waiting for the coordinator to place every segment; escrowctl nodes"
    esc_wait_for 60 all_segments_served || {
        esc_ctl status "$tenant" "$item" >&2 || true
        esc_fail "the segments were not placed on live nodes within 60 s"
    }
    esc_ctl nodes

    esc_step "4/8 the sale through the coordinator: demand skewed $skew onto the $segments segments, 70% confirm / 20% release / 10% abandon, holds of ${load_ttl_ms} ms"
    sampler_start
    timeline_start
    esc_wait_for 60 timeline_sampled || esc_fail "escrowctl top printed no snapshot within 60 s"
    run_load --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
        --skew "$skew" --segments "$segments"
    sampler_stop

    local samples
    samples=$(grep -c '^--- ' "$dir/status-live.txt" || true)
    esc_step "5/8 escrowctl status during the sale (sample $(((samples + 1) / 2)) of $samples; all in $dir/status-live.txt)"
    awk -v want=$(((samples + 1) / 2)) '/^--- /{n++} n==want' "$dir/status-live.txt"

    esc_step "6/8 waiting up to $((load_ttl_ms / 1000 + 60)) s for abandoned holds to expire; the timeline picture"
    wait_holds_expired
    timeline_stop
    timeline_draw

    esc_step "7/8 escrowctl status $tenant, the transfers that moved stock, escrowctl check"
    esc_ctl status "$tenant"
    echo "transfers by reason and state:"
    esc_psql "SELECT '  ' || reason || ' ' || state || ': ' || count(*) || ' transfers, ' || sum(qty) || ' units'
              FROM transfers WHERE tenant_id = '$tenant' AND item_id = '$item'
              GROUP BY reason, state ORDER BY reason, state"
    check_rc=0
    esc_ctl check | tee "$dir/check.out" || check_rc=${PIPESTATUS[0]}

    esc_step "8/8 stopping the cluster (nodes, coordinator, PostgreSQL)"
    node_rc=0
    esc_cluster_stop "$dir/cluster" || node_rc=$?
}

demo_single() {
    esc_step "1/8 starting a private PostgreSQL (fsync on)"
    esc_pg_start
    echo "ESCROW_DSN=$ESCROW_DSN"

    esc_step "2/8 escrowctl migrate"
    esc_ctl migrate

    esc_step "3/8 escrowctl item create $tenant $item --total $total --segments $segments"
    esc_ctl item create "$tenant" "$item" --total "$total" --segments "$segments" --node n1 \
        --max-per-order 5 --hold-ttl-ms 30000

    esc_step "4/8 starting segment node n1"
    endpoint="tcp://127.0.0.1:$(esc_free_port)"
    esc_node_start n1 "$endpoint" "$dir/n1.log"
    node_pid=$ESC_NODE_PID
    echo "n1 (pid $node_pid) listens on $endpoint"

    esc_step "5/8 the sale: escrow-load, 70% confirm / 20% release / 10% abandon, holds of ${load_ttl_ms} ms"
    run_load --endpoint "$endpoint"

    esc_step "6/8 waiting up to $((load_ttl_ms / 1000 + 60)) s for abandoned holds to expire"
    wait_holds_expired

    esc_step "7/8 escrowctl status $tenant, escrowctl check"
    esc_ctl status "$tenant"
    check_rc=0
    esc_ctl check | tee "$dir/check.out" || check_rc=${PIPESTATUS[0]}

    esc_step "8/8 stopping node n1 and PostgreSQL"
    node_rc=0
    esc_node_stop "$node_pid" || node_rc=$?
    esc_pg_stop
}

if [[ $mode == cluster ]]; then
    demo_cluster
else
    demo_single
fi

result=$(grep '^RESULT' "$dir/load.out" | tail -n 1 || true)
echo
echo "load:  ${result:-<no RESULT line>}"
echo "check: $(tail -n 1 "$dir/check.out") (exit $check_rc)"
if [[ $mode == cluster ]]; then
    echo "nodes: $([[ $node_rc == 0 ]] && echo "all stopped on SIGTERM" || echo "one needed SIGKILL")"
else
    echo "node:  exit $node_rc after SIGTERM"
fi
failed=0
if [[ -z $result ]]; then
    echo "FAIL: escrow-load printed no RESULT line" >&2
    failed=1
fi
wants=(oversold=0 conservation=ok)
[[ $mode == cluster ]] && wants+=(stranded=0)
for want in "${wants[@]}"; do
    if [[ -n $result && ! $result =~ (^|[[:space:],])$want([[:space:],]|$) ]]; then
        echo "FAIL: the RESULT line lacks $want" >&2
        failed=1
    fi
done
if ((check_rc != 0)); then
    echo "FAIL: escrowctl check exited $check_rc" >&2
    failed=1
fi
if ((node_rc != 0)); then
    if [[ $mode == cluster ]]; then
        echo "FAIL: a daemon did not stop on SIGTERM; see the logs in $dir/cluster" >&2
    else
        echo "FAIL: the node did not shut down cleanly (exit $node_rc); see $dir/n1.log" >&2
        tail -n 20 "$dir/n1.log" >&2
    fi
    failed=1
fi
if ((failed)); then
    echo "demo FAILED (logs in $dir)" >&2
    exit 1
fi
if ((own_dir)); then
    rm -rf "$dir"
    echo "demo OK ($mode): nothing oversold, every unit accounted for"
else
    echo "demo OK ($mode): nothing oversold, every unit accounted for (logs in $dir)"
fi
