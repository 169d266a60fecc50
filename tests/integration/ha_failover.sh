#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ha_failover.sh [kill|stop] - PostgreSQL's primary dies mid-sale. A cluster
# (coordinator, 2 managed nodes) on a pg_auto_failover formation (monitor,
# primary pg1, synchronous standby pg2: tests/support/cluster.sh --ha), every
# daemon and escrowctl on the multi-host DSN. While buyers (esc_probe record:
# each acknowledged hold, confirm and release written down as it arrives)
# buy, the primary's machine is lost:
#   kill  kill -9 of pg1's postmaster together with its pg_autoctl (a lost
#         machine; killing the postmaster alone is no failover: its
#         pg_autoctl restarts it in place)
#   stop  SIGSTOP of the same processes (a hung machine: connections to it
#         stay open and answer nothing)
# Then, with nobody's help: pg2 is promoted, the daemons find it, sales go
# on. The time from the loss to the first hold acknowledged after it is
# measured and printed (goal <= 15 s with the tests' failover timeouts).
# Checked: every acknowledged hold, confirm and release is in the new
# primary; retried keys get their holds back; nothing oversold; escrowctl
# check and the invariants pass.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"
# shellcheck source=tests/support/ha.sh
source "$ESC_SRC/tests/support/ha.sh" # esc_ha_primary, esc_ha_postmaster_pid

MODE=${1:-kill}
[[ $MODE == kill || $MODE == stop ]] || esc_fail "usage: ha_failover.sh [kill|stop]"
TOTAL=3000
BUYERS=2500
KILL_AFTER_LINES=400
# Failover goal: the tests' pg_auto_failover timeouts (ha.sh) add up to about 10 s.
FAILOVER_GOAL_MS=15000

ITEST_NAME=ha_failover_$MODE
ITEST_T0=$SECONDS
ITEST_BUDGET_S=${ITEST_BUDGET_S:-240}
[[ -x ${ESC_PROBE:-} ]] || esc_fail "$ITEST_NAME: esc_probe not found (set ESC_PROBE)"
ITEST_DIR=$(mktemp -d "/tmp/escrow-itest-$ITEST_NAME.XXXXXX")

esc_step "a cluster on pg_auto_failover (monitor, primary pg1, synchronous standby pg2)"
esc_cluster_start "$ITEST_DIR/cluster" --ha --nodes 2
# After the cluster's own exit hook, which must find DIR/env to stop the
# formation: _itest_finish removes the directory of a passing run.
esc_on_exit _itest_finish
echo "ESCROW_DSN=$ESCROW_DSN"
[[ $(esc_ha_primary) == pg1 ]] || esc_fail "pg1 is not the primary"
esc_ctl item create t1 ha --total $TOTAL --segments 8 >/dev/null
esc_cluster_wait_served t1 ha
probe() { "$ESC_PROBE" "$@" --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH"; }

esc_step "the sale: $BUYERS buyers"
REC=$ITEST_DIR/record.txt
probe record --item ha --prefix ha --n $BUYERS --concurrency 32 --deadline-ms 30000 --out "$REC" \
    >"$ITEST_DIR/record.out" 2>"$ITEST_DIR/record.log" &
PROBE_PID=$!
ESC_PIDS+=("$PROBE_PID")
lines() { if [[ -f $REC ]]; then wc -l <"$REC"; else echo 0; fi; }
enough_lines() {
    kill -0 "$PROBE_PID" 2>/dev/null || esc_fail "the probe ended before the loss of the primary"
    (($(lines) >= KILL_AFTER_LINES))
}
esc_wait_for 120 enough_lines ||
    esc_fail "only $(lines) outcomes acknowledged in 120 s"

# Every process of pg1 at once, as when its machine goes: the postmaster is
# stopped first (it forks no backend after that), then its children (each
# backend leads its own process group) and pg_autoctl's group get the signal.
PG1_POSTMASTER=$(esc_ha_postmaster_pid pg1)
esc_step "$MODE pg1 (postmaster $PG1_POSTMASTER, pg_autoctl $ESC_HA_PID_pg1) at $(lines) acknowledged outcomes"
t0=$(date +%s%3N)
kill -STOP "$PG1_POSTMASTER"
PG1_PIDS=$(esc_ha_node_pids pg1)
# shellcheck disable=SC2086 # a list of pids
if [[ $MODE == kill ]]; then
    kill -KILL $PG1_PIDS
else
    kill -STOP $PG1_PIDS
fi
echo "$MODE: $(echo $PG1_PIDS | wc -w) processes of pg1"

# The first hold acknowledged after the loss: one buyer at a time, each a new
# key, so that its hold was committed after t0 (the recording's answers may
# still be those of batches committed before it).
first_hold() {
    local out
    FIRST_TRY=$((${FIRST_TRY:-0} + 1))
    out=$(probe reserve --item ha --key "first-$FIRST_TRY" --deadline-ms 2000 2>/dev/null) || return 1
    [[ $(itest_status "$out") == OK ]]
}
esc_wait_for 120 first_hold || esc_fail "no hold acknowledged within 120 s of the loss"
t1=$(date +%s%3N)
took_ms=$((t1 - t0))
promoted() { [[ $(esc_ha_primary) == pg2 ]]; }
esc_wait_for 60 promoted || esc_fail "the monitor does not have pg2 as primary"
echo "FAILOVER $MODE: first hold acknowledged ${took_ms} ms after the loss of the primary" \
    "(goal ${FAILOVER_GOAL_MS} ms); primary now pg2"
itest_timing "$took_ms" "$FAILOVER_GOAL_MS" "the failover (loss to first hold)"
# What the time went to: the monitor's events since the loss (ms after it).
_esc_ha_mon_sql "SELECT (extract(epoch FROM eventtime) * 1000 - $t0)::bigint || ' ms: ' || description
    FROM pgautofailover.event WHERE eventtime >= to_timestamp($t0 / 1000.0) ORDER BY eventid" |
    tee "$ITEST_DIR/ha-events.txt" | cut -c1-160
mkdir -p "$ITEST_DIR/ha" && cp "$ESC_HA_DIR"/*.log "$ITEST_DIR/ha/" 2>/dev/null || true

itest_wait_pid "$PROBE_PID" 180 "the recording probe" || esc_fail "the recording probe failed"
cat "$ITEST_DIR/record.out"
echo "acknowledged outcomes: $(grep -c . "$REC")"

esc_step "every acknowledged outcome is in the new primary"
itest_eq "$(itest_q "SELECT pg_is_in_recovery()")" f "the DSN leads to a primary"
itest_eq "$(itest_q "SELECT inet_server_port()")" "$ESC_HA_PORT_pg2" "the primary's port"
itest_check_record "$REC"
((TOTAL_ACKED = $(itest_q "SELECT count(*) FROM rec WHERE kind = 'R'"))) ||
    esc_fail "no hold acknowledged at all"
itest_invariants ha # escrowctl check, conservation, and held + sold <= total (nothing oversold)
itest_q "SELECT 'item ' || item_id || ': total ' || total || ', sold ' || sold || ', held ' || held
    FROM conservation WHERE item_id = 'ha'"

esc_step "retries of acknowledged keys get their holds back from the new primary"
holds_before=$(itest_q "SELECT count(*) FROM holds")
probe verify --item ha --in "$REC" --every 3 || esc_fail "a retried key did not get its acknowledged hold"
itest_eq "$(itest_q "SELECT count(*) FROM holds")" "$holds_before" "holds after the retries"
itest_pass
