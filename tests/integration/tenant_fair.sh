#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tenant_fair.sh - fairness between tenants at a segment node, on by default
# (docs/credentials.md#fairness-between-tenants): one node in static mode
# serves an item of tenant t1 and one of t2.
#   - started without any flag, the node limits every tenant by default and
#     says so (SEG-FAIR: 20000 requests/s, burst 40000, 1048576 live holds);
#   - escrowctl tenant limits: shows the defaults, refuses bad values and
#     unknown tenants and changes nothing then;
#   - t1's cap of 5 live holds: exactly 5 of 8 reserves (different keys)
#     are OK, 3 are BUSY with a retryable sentence; t2 reserves meanwhile;
#     after one release t1 gets exactly one more; back to the default, t1
#     reserves again;
#   - t1's rate of 1 request/s (burst 20): of 60 requests in a row at least
#     30 are BUSY ("rate limited"), and t2 is not limited meanwhile;
#   - fair batch admission (node_admit.h): t1 buys 2,000 units with 256 in
#     flight while t2 buys 100 with 4: exactly 2,000 and 100 sold, the books
#     balance, requests of t1 waited their turn (waited_turn > 0 in the
#     node's last line), and the node stops cleanly: no request is left
#     waiting.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin tenant_fair
esc_ctl item create t1 shoe --total 1000 --segments 1 --node n1 >/dev/null
esc_ctl item create t2 hat --total 1000 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
EP=tcp://127.0.0.1:$PORT
itest_node n1 "$PORT"
NODE_LOG=$ITEST_NODE_LOG
# fair_reads N: the node logged the number of tenants with limits of their
# own N times (it logs it when it changes: 0 at the start, then after each
# escrowctl tenant limits below, which alternate between 1 and 0)
fair_reads() {
    (($(grep -c 'SEG-FAIR [0-9]* tenants with limits of their own' "$NODE_LOG") >= $1))
}

esc_step "on by default"
grep -q 'SEG-FAIR per tenant by default: 20000 requests/s (burst 40000), 1048576 live holds' "$NODE_LOG" ||
    esc_fail "the node did not log its default limits: $(grep SEG-FAIR "$NODE_LOG")"
itest_eq "$(esc_ctl tenant limits t1)" \
    "tenant t1: rate the node's default, live holds the node's default (per node)" "limits of t1"

esc_step "bad values change nothing"
for args in "--rate -1" "--rate 1000001" "--rate x" "--live-holds 4194305" "--live-holds -3" "--bogus 1"; do
    rc=0
    # shellcheck disable=SC2086
    esc_ctl tenant limits t1 $args >/dev/null 2>"$ITEST_DIR/err" || rc=$?
    itest_eq "$rc" 2 "exit code of tenant limits t1 $args"
done
rc=0
esc_ctl tenant limits nosuch --rate 5 >/dev/null 2>&1 || rc=$?
itest_eq "$rc" 1 "exit code of tenant limits for an unknown tenant"
itest_eq "$(itest_q "SELECT count(*) FROM tenants WHERE rate_per_s IS NOT NULL OR rate_burst IS NOT NULL
    OR live_holds_max IS NOT NULL")" 0 "tenants with limits of their own"

esc_step "t1's cap: 5 live holds on the node"
itest_eq "$(esc_ctl tenant limits t1 --live-holds 5)" \
    "tenant t1: rate the node's default, live holds 5 (per node)" "limits of t1"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE tenant_id = 't1' AND state = 'held'")" 0 \
    "t1's live holds before"
esc_wait_for 30 fair_reads 2 || esc_fail "the node did not read t1's limits"
# libescrow retries BUSY until the call's deadline: 1 s is enough here
reserve_t1() { itest_probe reserve --endpoint "$EP" --tenant t1 --item shoe --key "$1" \
    --ttl-ms 600000 --deadline-ms 1000; }
ok=0 busy=0
for i in 1 2 3 4 5 6 7 8; do
    out=$(reserve_t1 "k$i")
    case $(itest_status "$out") in
    OK) ok=$((ok + 1)) ;;
    BUSY) busy=$((busy + 1)) ;;
    *) esc_fail "reserve $i of t1: $out" ;;
    esac
done
echo "t1 with a cap of 5: $ok OK, $busy BUSY"
itest_eq "$ok $busy" "5 3" "OK and BUSY of 8 reserves of t1 with a cap of 5"
out=$(itest_probe frame --endpoint "$EP" --op reserve --tenant t1 --item shoe --key k-frame)
echo "the answer over the cap: $out"
[[ $out == BUSY*msg=this_tenant_has_as_many_live_holds*retry_later ]] ||
    esc_fail "the BUSY answer does not say why: $out"
out=$(itest_probe reserve --endpoint "$EP" --tenant t2 --item hat --key t2-a --ttl-ms 600000)
itest_eq "$(itest_status "$out")" OK "a reserve of t2 while t1 is at its cap"
hold=$(itest_q "SELECT min(hold_id) FROM holds WHERE tenant_id = 't1' AND state = 'held'")
out=$(itest_probe release --endpoint "$EP" --tenant t1 --hold "$hold")
itest_eq "$(itest_status "$out")" OK "release of one of t1's holds"
ok=0
for i in 11 12 13; do
    out=$(reserve_t1 "k$i")
    [[ $(itest_status "$out") == OK ]] && ok=$((ok + 1))
done
itest_eq "$ok" 1 "reserves of t1 that fit after one release"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE tenant_id = 't1' AND state = 'held'")" 5 \
    "t1's live holds"
esc_ctl tenant limits t1 --live-holds default >/dev/null
esc_wait_for 30 fair_reads 3 || esc_fail "the node did not read t1's limits again"
out=$(reserve_t1 after)
itest_eq "$(itest_status "$out")" OK "a reserve of t1 back at the default cap"

esc_step "t1's rate: 1 request/s, burst 20"
# The probe sends its copies one after the other: a slow machine spreads
# them over seconds, and every second refills one token: the count holds
# until the 60 requests take 10 s.
esc_ctl tenant limits t1 --rate 1:20 >/dev/null
esc_wait_for 30 fair_reads 4 || esc_fail "the node did not read t1's rate"
r=$(itest_probe frame --endpoint "$EP" --op stats --tenant t1 --n 60)
echo "t1 at 1/s, burst 20, 60 requests in a row: $r"
(($(itest_field busy "$r") >= 30)) || esc_fail "t1's rate limit: $r"
[[ $(itest_field busy_msg "$r") == rate_limited:_this_tenant_is_over_1_requests/s* ]] ||
    esc_fail "the BUSY answer: $r"
r=$(itest_probe frame --endpoint "$EP" --op stats --tenant t2 --n 60)
echo "t2 meanwhile, 60 requests in a row: $r"
itest_eq "$(itest_field busy "$r")" 0 "BUSY answers to t2 while t1 is limited"
esc_ctl tenant limits t1 --rate default >/dev/null

esc_step "fair batch admission: t1 with 256 in flight, t2 with 4, at once"
esc_ctl item create t1 flood --total 2000 --segments 2 --node n1 >/dev/null
esc_ctl item create t2 calm --total 100 --segments 1 --node n1 >/dev/null
# a node in static mode claims its segments at start
esc_node_stop "$ITEST_NODE_PID" || esc_fail "the node did not stop"
itest_node n1 "$PORT"
NODE_LOG=$ITEST_NODE_LOG
buy() { # TENANT ITEM BUYERS CONC
    "$ESC_BIN/escrow-load" --endpoint "$EP" --tenant "$1" --item "$2" --buyers "$3" \
        --concurrency "$4" --confirm 1 --release 0 --key-prefix "fair-$1" --deadline-ms 60000 \
        --quiet | grep '^RESULT'
}
buy t2 calm 100 4 >"$ITEST_DIR/calm.out" &
calm=$!
flood=$(buy t1 flood 2000 256)
wait "$calm" || esc_fail "t2's buyers failed"
echo "t1: $flood"
echo "t2: $(cat "$ITEST_DIR/calm.out")"
itest_eq "$(itest_q "SELECT sum(sold) FROM segments WHERE tenant_id = 't1' AND item_id = 'flood'")" 2000 \
    "units of t1 sold with 256 in flight"
itest_eq "$(itest_q "SELECT sum(sold) FROM segments WHERE tenant_id = 't2' AND item_id = 'calm'")" 100 \
    "units of t2 sold meanwhile"
itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "the node did not stop"
grep -q 'SEG-STOP node=n1 stopped' "$NODE_LOG" || esc_fail "the node did not stop cleanly"
waited=$(grep -o 'waited_turn=[0-9]*' "$NODE_LOG" | cut -d= -f2)
echo "requests that waited their tenant's turn in a batch: $waited"
((waited > 0)) || esc_fail "no request of t1 waited its turn: $(grep 'SEG-STOP' "$NODE_LOG")"
itest_pass
