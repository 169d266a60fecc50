#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# race.sh - the flash sale in miniature: 10,000 buyers from 4 processes, 600
# requests in flight, 100 units split over 4 segments. Exactly 100 holds,
# all confirmed: sold = 100, nothing oversold, nothing lost (docs/guarantees.md:
# never oversell, conservation). Every number is read back from PostgreSQL, not from the load
# generator's own counting.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

TOTAL=100
SEGMENTS=4
PROCS=4
BUYERS_PER_PROC=2500
CONCURRENCY=150 # per process: 600 in flight

itest_begin race
[[ -x $ESC_BIN/escrow-load ]] || esc_fail "race: no escrow-load in ESC_BIN=$ESC_BIN"

esc_step "item t1/flash: $TOTAL units in $SEGMENTS segments"
esc_ctl item create t1 flash --total $TOTAL --segments $SEGMENTS --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT"
EP=tcp://127.0.0.1:$PORT

esc_step "$PROCS x escrow-load: $((PROCS * BUYERS_PER_PROC)) buyers, $((PROCS * CONCURRENCY)) in flight"
# A starting line: the node is paused (SIGSTOP) while the 4 processes start
# and queue their first $((PROCS * CONCURRENCY)) requests, then all of them
# land at once (SIGCONT); otherwise the first process sells out alone. The
# line is drawn when each process has connected (the kernel completes the
# handshake of a stopped listener; nanomsg holds the requests until the
# node answers its protocol header), however long the processes take to
# start. Their deadline (30 s) counts from before the SIGCONT.
kill -STOP "$ITEST_NODE_PID"
esc_on_exit "kill -CONT $ITEST_NODE_PID 2>/dev/null"
pids=()
for p in $(seq 1 $PROCS); do
    "$ESC_BIN/escrow-load" --endpoint "$EP" --tenant t1 --item flash \
        --buyers $BUYERS_PER_PROC --concurrency $CONCURRENCY --confirm 1 --release 0 \
        --key-prefix "race$p" --seed "$p" --deadline-ms 30000 --quiet \
        >"$ITEST_DIR/load$p.out" 2>"$ITEST_DIR/load$p.log" &
    pids+=($!)
    ESC_PIDS+=($!)
done
# every load process has a connection to the node's port established
connected() {
    local out p n=0
    out=$(ss -Htnp state established "( dport = :$PORT )")
    for p in "${pids[@]}"; do
        [[ $out == *"pid=$p,"* ]] && n=$((n + 1))
    done
    ((n == PROCS))
}
esc_wait_for 60 connected || esc_fail "race: the $PROCS load processes did not connect within 60 s"
kill -CONT "$ITEST_NODE_PID"
failed=0
for i in "${!pids[@]}"; do
    if ! itest_wait_pid "${pids[$i]}" 120 "escrow-load #$((i + 1))"; then
        echo "escrow-load #$((i + 1)) failed:" >&2
        cat "$ITEST_DIR/load$((i + 1)).out" "$ITEST_DIR/load$((i + 1)).log" >&2
        failed=1
    fi
done
((failed == 0)) || esc_fail "race: an escrow-load process failed"

holds_ok=0 errors=0
for p in $(seq 1 $PROCS); do
    line=$(grep '^RESULT' "$ITEST_DIR/load$p.out") || esc_fail "race: no RESULT line from load $p"
    echo "load $p: $line"
    holds_ok=$((holds_ok + $(itest_field holds_ok "$line")))
    errors=$((errors + $(itest_field errors "$line")))
done
echo "holds per process: $(grep -ho 'holds_ok=[0-9]*' "$ITEST_DIR"/load*.out | tr '\n' ' ')"
itest_eq "$holds_ok" $TOTAL "holds acknowledged to the 4 load generators"
itest_eq "$errors" 0 "reserve/confirm errors seen by the load generators"

esc_step "the database"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'flash'")" $TOTAL "holds in the database"
itest_eq "$(itest_q "SELECT count(DISTINCT idempotency_key) FROM holds WHERE item_id = 'flash'")" $TOTAL \
    "distinct keys among the holds"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'flash' AND state = 'converted' AND qty_sold = qty AND qty = 1")" \
    $TOTAL "holds converted (qty 1, all sold)"
itest_eq "$(itest_q "SELECT sum(sold) || ' ' || sum(held) || ' ' || sum(available) FROM segments WHERE item_id = 'flash'")" \
    "$TOTAL 0 0" "sold held available"
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'flash' AND available + held + sold = $((TOTAL / SEGMENTS))")" \
    $SEGMENTS "segments that still account for their $((TOTAL / SEGMENTS)) units"
itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE item_id = 'flash' AND sold > 0")" $SEGMENTS \
    "segments that sold (the split was exercised)"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'flash' AND kind = 'held'")" $TOTAL "'held' events"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'flash' AND kind = 'converted'")" $TOTAL \
    "'converted' events"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'flash' AND kind NOT IN ('held', 'converted')")" 0 \
    "other events"
itest_invariants flash

esc_step "a late buyer: SOLD_OUT, and nothing is written"
before=$(itest_q "SELECT count(*) FROM holds")
out=$(itest_probe reserve --endpoint "$EP" --item flash --key late-buyer)
itest_eq "$(itest_status "$out")" SOLD_OUT "a reserve after the sellout"
itest_eq "$(itest_q "SELECT count(*) FROM holds")" "$before" "holds after a SOLD_OUT answer"

esc_node_stop "$ITEST_NODE_PID" || esc_fail "race: the node did not stop cleanly"
itest_invariants flash
itest_pass
