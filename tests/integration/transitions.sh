#!/usr/bin/env bash
# transitions.sh - every transition happens once (DESIGN.md §1.5):
#   (a) release twice (in turn and 4 at once): OK, cancelled, units back once
#   (b) releases racing expiry (sweeper every 10 ms): one final state, units back once
#   (c) confirm racing release on 50 holds: exactly one winner per hold
#   (d) confirm / release / extend after expiry on a node whose sweeper cannot
#       have run (--sweep-ms 10000, its first sweep 10 s after the start):
#       EXPIRED / OK expired / EXPIRED. A machine too slow to finish within
#       those 10 s gets another try on a fresh node (the try proved nothing)
#   (e) partial confirm: hold 3, confirm 2 -> sold 2, 1 back
#   (f) extend once, then ALREADY_EXTENDED
# Each part has its own item, so each part's counters are exact.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin transitions
for it in ta tb tc te tf; do
    esc_ctl item create t1 $it --total 50 --segments 1 --node n1 >/dev/null
done
PORT=$(itest_port)
itest_node n1 "$PORT" --sweep-ms 10
EP=tcp://127.0.0.1:$PORT

# "available/held/sold" of an item
counters() {
    itest_q "SELECT available || '/' || held || '/' || sold FROM segments WHERE item_id = '$1'"
}
# number of outbox events of KIND for hold H
events() {
    itest_q "SELECT count(*) FROM outbox WHERE hold_id = $1 AND kind = '$2'"
}
hold_state() {
    itest_q "SELECT state || '/' || qty_sold FROM holds WHERE hold_id = $1"
}
reserve() { # ITEM KEY [ARGS...] -> prints the hold id, fails unless OK
    local item=$1 key=$2 out
    shift 2
    out=$(itest_probe reserve --endpoint "${RESERVE_EP:-$EP}" --item "$item" --key "$key" "$@")
    [[ $(itest_status "$out") == OK ]] || esc_fail "transitions: reserve $item $key: $out"
    itest_field hold "$out"
}
# "(hold_id,'state'),..." from the probe's "hold_id state" lines
sql_values() {
    local id st sep=""
    while read -r id st; do
        printf "%s(%s,'%s')" "$sep" "$id" "$st"
        sep=,
    done <"$1"
}
# "STATUS state sold" of a probe outcome
brief() {
    echo "$(itest_status "$1") $(itest_field state "$1") $(itest_field sold "$1")"
}

esc_step "(a) release twice"
H=$(reserve ta a-1 --qty 2)
itest_eq "$(counters ta)" "48/2/0" "ta after a hold of 2"
itest_eq "$(brief "$(itest_probe release --endpoint "$EP" --hold "$H")")" "OK cancelled 0" "first release"
itest_eq "$(brief "$(itest_probe release --endpoint "$EP" --hold "$H")")" "OK cancelled 0" "second release"
itest_eq "$(counters ta)" "50/0/0" "ta after two releases (units back once)"
itest_eq "$(events "$H" cancelled)" 1 "'cancelled' events of the hold"
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H")")" "NOT_HELD cancelled 0" \
    "confirm of a cancelled hold"
H2=$(reserve ta a-2 --qty 3)
pids=()
for i in 1 2 3 4; do
    "$ESC_PROBE" release --endpoint "$EP" --hold "$H2" >"$ITEST_DIR/a-rel$i.out" &
    pids+=($!)
    ESC_PIDS+=($!)
done
for p in "${pids[@]}"; do
    itest_wait_pid "$p" 20 "a concurrent release" || esc_fail "transitions: a concurrent release failed"
done
for i in 1 2 3 4; do
    itest_eq "$(brief "$(cat "$ITEST_DIR/a-rel$i.out")")" "OK cancelled 0" "concurrent release #$i"
done
itest_eq "$(counters ta)" "50/0/0" "ta after 4 concurrent releases"
itest_eq "$(events "$H2" cancelled)" 1 "'cancelled' events after 4 concurrent releases"

esc_step "(b) 20 holds, ttl 200 ms, 5 releases each, fired between 8 ms before and 8 ms after expiry"
out=$(itest_probe rx-race --endpoint "$EP" --item tb --prefix b --n 20 --ttl-ms 200 --per-hold 5 \
    --out "$ITEST_DIR/rx.txt") || {
    echo "$out"
    esc_fail "transitions: releases racing expiry disagreed"
}
echo "$out"
# the sweeper ends any hold the releases did not
esc_wait_sql 30 "SELECT available || '/' || held || '/' || sold FROM segments WHERE item_id = 'tb'" \
    "50/0/0" || esc_fail "transitions: tb after release-vs-expiry: not every unit back, once"
values=$(sql_values "$ITEST_DIR/rx.txt")
itest_eq "$(itest_q "SELECT count(*) FROM holds h JOIN (VALUES $values) AS p(hold_id, state)
    USING (hold_id) WHERE h.state = p.state")" 20 "holds whose stored state is the one every release reported"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'tb' AND kind IN ('cancelled','expired')")" 20 \
    "terminal events of tb (one per hold)"

esc_step "(c) confirm racing release, 50 holds"
out=$(itest_probe cr-race --endpoint "$EP" --item tc --prefix c --n 50 --out "$ITEST_DIR/cr.txt") || {
    echo "$out"
    esc_fail "transitions: a hold had no single winner"
}
echo "$out"
won=$(echo "$out" | sed -n 's/^WON confirm=\([0-9]*\) .*/\1/p')
itest_eq "$(counters tc)" "$((50 - won))/0/$won" "tc after the races ($won confirms won)"
values=$(sql_values "$ITEST_DIR/cr.txt")
itest_eq "$(itest_q "SELECT count(*) FROM holds h JOIN (VALUES $values) AS p(hold_id, state)
    USING (hold_id) WHERE h.state = p.state")" 50 "holds whose stored state is the winner's"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'tc' AND kind IN ('converted','cancelled','expired')")" 50 \
    "terminal events of tc (one per hold)"

esc_step "(e) partial confirm"
H=$(reserve te e-1 --qty 3)
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H" --qty 2)")" "OK converted 2" "confirm 2 of 3"
itest_eq "$(counters te)" "48/0/2" "te after a partial confirm (1 unit back)"
itest_eq "$(hold_state "$H")" "converted/2" "the stored hold"
itest_eq "$(itest_q "SELECT string_agg(kind || ':' || qty, ',' ORDER BY event_id) FROM outbox WHERE hold_id = $H")" \
    "held:3,converted:2" "events of the hold"
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H" --qty 2)")" "OK converted 2" "confirm 2 again (retry)"
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H")")" "OK converted 2" "confirm all again (retry)"
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H" --qty 3)")" "CONFLICT converted 2" \
    "confirm 3 of a hold that sold 2"
itest_eq "$(brief "$(itest_probe release --endpoint "$EP" --hold "$H")")" "NOT_HELD converted 2" "release of a sold hold"
H2=$(reserve te e-2 --qty 3)
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H2" --qty 4)")" "INVAL held 0" "confirm 4 of a hold of 3"
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H2" --qty 3)")" "OK converted 3" "confirm 3 of 3"
itest_eq "$(counters te)" "45/0/5" "te at the end"

esc_step "(f) extend once"
H=$(reserve tf f-1 --ttl-ms 60000)
first=$(itest_probe get --endpoint "$EP" --hold "$H")
out=$(itest_probe extend --endpoint "$EP" --hold "$H" --ttl-ms 120000)
itest_eq "$(itest_status "$out") $(itest_field extended "$out")" "OK 1" "first extend"
e0=$(itest_field expires_at_ms "$first")
e1=$(itest_field expires_at_ms "$out")
((e1 >= e0 + 59000)) || esc_fail "transitions: extend moved expiry from $e0 to $e1 only"
out2=$(itest_probe extend --endpoint "$EP" --hold "$H" --ttl-ms 120000)
itest_eq "$(itest_status "$out2") $(itest_field extended "$out2") $(itest_field expires_at_ms "$out2")" \
    "ALREADY_EXTENDED 1 $e1" "second extend"
itest_eq "$(itest_q "SELECT extended || ' ' || round(extract(epoch FROM expires_at) * 1000)::bigint FROM holds WHERE hold_id = $H")" \
    "true $e1" "the stored hold after the extends"
itest_eq "$(events "$H" extended)" 1 "'extended' events"
itest_eq "$(brief "$(itest_probe confirm --endpoint "$EP" --hold "$H")")" "OK converted 1" "confirm of an extended hold"
itest_eq "$(counters tf)" "49/0/1" "tf at the end"

# part_d ITEM NODE: one try of (d) on a fresh node NODE (static, owner of
# ITEM). Sets PART_D to "done", or to "slow" when the try ended past the
# node's first sweep (10 s after its start): the sweeper may have expired
# the holds first, so that try proves nothing (its answers would be the same).
part_d() {
    local item=$1 node=$2 port ep t0 d1 d2 d3 d4 held_expired took
    local r_confirm r_partial r_release r_extend r_again r_release2
    esc_ctl item create t1 "$item" --total 10 --segments 1 --node "$node" >/dev/null
    port=$(itest_port)
    t0=$(date +%s%3N) # before the node's sweep timer starts
    itest_node "$node" "$port" --sweep-ms 10000
    ep=tcp://127.0.0.1:$port
    RESERVE_EP=$ep
    d1=$(reserve "$item" "$item-1" --qty 2 --ttl-ms 200)
    d2=$(reserve "$item" "$item-2" --qty 2 --ttl-ms 200)
    d3=$(reserve "$item" "$item-3" --qty 2 --ttl-ms 200)
    d4=$(reserve "$item" "$item-4" --qty 2 --ttl-ms 200)
    itest_eq "$(counters "$item")" "2/8/0" "$item with 4 holds"
    sleep 0.5 # the holds' ttl (200 ms) runs out
    held_expired=$(itest_q "SELECT count(*) FROM holds WHERE item_id = '$item' AND state = 'held'
        AND expires_at < now()")
    r_confirm=$(brief "$(itest_probe confirm --endpoint "$ep" --hold "$d1")")
    r_partial=$(brief "$(itest_probe confirm --endpoint "$ep" --hold "$d2" --qty 1)")
    r_release=$(brief "$(itest_probe release --endpoint "$ep" --hold "$d3")")
    r_extend=$(brief "$(itest_probe extend --endpoint "$ep" --hold "$d4" --ttl-ms 60000)")
    r_again=$(brief "$(itest_probe confirm --endpoint "$ep" --hold "$d1")")
    r_release2=$(brief "$(itest_probe release --endpoint "$ep" --hold "$d1")")
    took=$(($(date +%s%3N) - t0))
    if ((took >= 9500)); then
        echo "note: (d) on $node took $took ms, past its sweeper's first run: again on a fresh node" >&2
        PART_D=slow
        return 0
    fi
    itest_eq "$held_expired" 4 "expired holds still 'held' in the database (the sweeper has not run)"
    itest_eq "$r_confirm" "EXPIRED expired 0" "confirm after expiry"
    itest_eq "$r_partial" "EXPIRED expired 0" "partial confirm after expiry"
    itest_eq "$r_release" "OK expired 0" "release after expiry"
    itest_eq "$r_extend" "EXPIRED expired 0" "extend after expiry"
    itest_eq "$r_again" "EXPIRED expired 0" "confirm again"
    itest_eq "$r_release2" "OK expired 0" "release of an expired hold"
    itest_eq "$(counters "$item")" "10/0/0" "$item after the expiries"
    itest_eq "$(itest_q "SELECT string_agg(state, ',' ORDER BY hold_id) FROM holds WHERE item_id = '$item'")" \
        "expired,expired,expired,expired" "stored states of $item"
    itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = '$item' AND kind = 'expired'")" 4 \
        "'expired' events of $item"
    itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = '$item' AND kind NOT IN ('held', 'expired')")" 0 \
        "other terminal events of $item"
    PART_D=done
}

esc_step "(d) after expiry, with a sweeper that has not run (--sweep-ms 10000)"
PART_D=slow
for try in 1 2 3; do
    part_d "td$try" "n$((try + 1))"
    [[ $PART_D == done ]] && break
done
[[ $PART_D == done ]] || esc_fail "transitions: (d) never finished within its node's first 10 s (3 tries)"

itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "transitions: the last node of (d) did not stop cleanly"
itest_pass
