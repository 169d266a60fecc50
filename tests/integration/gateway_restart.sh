#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gateway_restart.sh - escrow-gateway stopping and dying under its clients,
# against a real cluster:
#   1. a retry after a restart: a hold reserved through one gateway process,
#      then the same Idempotency-Key through the next one: 200, the same
#      hold, Idempotent-Replayed (the cluster remembers keys, not the gateway);
#   2. a clean stop (SIGTERM) with requests in flight: the nodes are paused
#      (SIGSTOP) so five reserves wait in the gateway, and a sixth has sent
#      its headers but not its body; SIGTERM; a new connection is refused;
#      the nodes resume; the five are answered 201; the sixth sends its body
#      and is answered (503, retryable, Connection: close), not cut off; the
#      gateway exits 0;
#   3. a crash (SIGKILL) under load: 16 clients reserve 2,000 buyers, the
#      gateway is killed and started again on the same port; clients retry
#      lost requests with the same key; every buyer ends with exactly one
#      hold in the database, the one it was answered.
set -euo pipefail
source "$(dirname "$0")/gateway_lib.sh"

# a long lease: nodes paused for a few seconds keep their segments
gw_begin gateway_restart --nodes 2 --lease-ms 30000
esc_ctl item create shop-1 tee --total 100000 --segments 2 --hold-ttl-ms 600000 >/dev/null
gw_start --deadline-ms 60000

esc_step "a retry after a restart gets the same hold"
gw_expect 201 POST /v1/holds '{"item":"tee","buyer":"b1","qty":1}' before-restart
h1=$(gw_field id)
gw_stop || esc_fail "escrow-gateway did not stop cleanly"
gw_start --deadline-ms 60000
gw_expect 200 POST /v1/holds '{"item":"tee","buyer":"b1","qty":1}' before-restart
esc_assert_eq "$(gw_field id)" "$h1" "the hold after the restart"
esc_assert_eq "$(gw_header Idempotent-Replayed)" true "replay header after the restart"

esc_step "SIGTERM with five requests in flight (the nodes paused): all answered, exit 0"
gw_stop || esc_fail "escrow-gateway did not stop cleanly"
metrics_port=$(esc_free_port)
gw_start --deadline-ms 60000 --metrics "127.0.0.1:$metrics_port"
gw_expect 201 POST /v1/holds '{"item":"tee","buyer":"warm","qty":1}' warm-up # routes fetched
esc_on_exit "for n in \$ESC_CLUSTER_NODES; do kill -CONT \"\$(esc_cluster_node_pid \"\$n\")\" 2>/dev/null; done"
for n in $ESC_CLUSTER_NODES; do kill -STOP "$(esc_cluster_node_pid "$n")"; done
inflight_pids=()
for i in 1 2 3 4 5; do
    curl -sS -o "$GW_DIR/inflight-$i.body" -w '%{http_code}' --cacert "$GW_CA" \
        -H "Authorization: Bearer $GW_KEY" -H "Idempotency-Key: inflight-$i" \
        --data-binary "{\"item\":\"tee\",\"buyer\":\"i$i\",\"qty\":1}" "$GW_URL/v1/holds" \
        >"$GW_DIR/inflight-$i.code" 2>/dev/null &
    inflight_pids+=($!)
done
waiting() {
    [[ $(curl -sS "http://127.0.0.1:$metrics_port/metrics" 2>/dev/null |
        sed -n 's/^escrow_gateway_inflight //p') == 5 ]]
}
esc_wait_for 60 waiting || esc_fail "the five requests are not all waiting in the gateway"
# A sixth request has sent its headers but not yet its body: begun, not
# answered; it must get its answer too, after the five.
python3 "$ESC_SRC/tests/integration/gateway_slow_body.py" 127.0.0.1 "$GW_PORT" "$GW_KEY_FILE" "$GW_CA" \
    tee "$GW_DIR/slow.ready" "$GW_DIR/slow.go" >"$GW_DIR/slow.out" 2>&1 &
slow_pid=$!
slow_ready() { [[ -s $GW_DIR/slow.ready ]]; }
esc_wait_for 30 slow_ready || esc_fail "the slow client did not send its headers"
sleep 0.5 # the gateway reads them (loopback: well under a millisecond)
kill -TERM "$GW_PID"
stopping() {
    grep -q 'GW-STOP signal=15' "$GW_LOG"
}
esc_wait_for 30 stopping || esc_fail "no GW-STOP line after SIGTERM"
rc=0
curl -sS -o /dev/null --max-time 10 --cacert "$GW_CA" "$GW_URL/healthz" 2>/dev/null || rc=$?
esc_assert_eq "$rc" 7 "a new connection while stopping (7: refused)"
kill -0 "$GW_PID" || esc_fail "the gateway did not wait for its requests"
for n in $ESC_CLUSTER_NODES; do kill -CONT "$(esc_cluster_node_pid "$n")"; done
wait "${inflight_pids[@]}" || true
for i in 1 2 3 4 5; do
    esc_assert_eq "$(cat "$GW_DIR/inflight-$i.code")" 201 "request $i, in flight at SIGTERM"
done
sleep 0.2 # several ticks of the gateway's stop: it must still wait for the sixth
kill -0 "$GW_PID" || esc_fail "the gateway stopped before the request whose body had not come"
touch "$GW_DIR/slow.go"
wait "$slow_pid" || { cat "$GW_DIR/slow.out" >&2; esc_fail "the slow request got no answer"; }
# begun before the stop, dispatched after it: answered, retryable (the API
# takes no new work while stopping), never cut off
esc_assert_eq "$(cat "$GW_DIR/slow.out")" "503 close" "the request whose body came after SIGTERM"
rc=0
wait "$GW_PID" || rc=$?
_esc_forget_pid "$GW_PID"
esc_assert_eq "$rc" 0 "the gateway's exit status after a clean stop"
grep -q 'GW-STOP every request answered' "$GW_LOG" || esc_fail "no 'every request answered' line"

esc_step "SIGKILL under load, restart on the same port: every key has one hold, the one answered"
gw_start --deadline-ms 60000
# Enough buyers that the load is still running when the kill comes (the
# kill follows the 50th hold; 400 buyers were all done by then on a quiet
# machine, and no request was hit).
BUYERS=2000
python3 "$ESC_SRC/tests/integration/gateway_buyers.py" "$GW_URL" "$GW_KEY_FILE" "$GW_CA" tee $BUYERS 16 \
    "$GW_DIR/answers.txt" "$ESC_SRC/examples/gateway" --prefix restart --retry-s 120 \
    >"$GW_DIR/clients.out" 2>&1 &
clients=$!
some_holds() {
    (($(esc_psql "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'restart-%'") >= 50))
}
esc_wait_for 120 some_holds || esc_fail "no load reached the cluster"
kill -KILL "$GW_PID"
wait "$GW_PID" 2>/dev/null || true
_esc_forget_pid "$GW_PID"
GW_SAME_PORT=1 gw_start --deadline-ms 60000
wait "$clients" || { cat "$GW_DIR/clients.out" >&2; esc_fail "gateway_buyers.py failed"; }
cat "$GW_DIR/clients.out"
esc_assert_eq "$(awk '$3 != "-"' "$GW_DIR/answers.txt" | wc -l)" $BUYERS "buyers answered a hold"
esc_assert_eq "$(esc_psql "SELECT count(*) || ' ' || count(DISTINCT idempotency_key) FROM holds
                           WHERE idempotency_key LIKE 'restart-%'")" "$BUYERS $BUYERS" "holds and keys"
mismatched=$(awk '{ print $1 " " $3 }' "$GW_DIR/answers.txt" | esc_psql_with_rows answered \
    "SELECT count(*) FROM answered a LEFT JOIN holds h ON h.idempotency_key = split_part(a.v, ' ', 1)
       AND h.hold_id::text = split_part(a.v, ' ', 2) WHERE h.hold_id IS NULL")
esc_assert_eq "$mismatched" 0 "answers that are not the key's hold in the database"
retried=$(awk '$4 > 1' "$GW_DIR/answers.txt" | wc -l)
replays=$(awk '$2 == 200' "$GW_DIR/answers.txt" | wc -l)
echo "buyers retried across the crash: $retried; answered as replays: $replays"
((retried > 0)) || esc_fail "no client had to retry: the crash hit no request"

gw_stop || esc_fail "escrow-gateway did not stop cleanly"
esc_ctl check >/dev/null || esc_fail "escrowctl check failed"
gw_check_openapi 400
gw_pass
