#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# transitions.sh - every transition happens once (docs/guarantees.md):
#   (a) release twice (in turn and 4 at once): OK, cancelled, units back once
#   (b) releases racing expiry (sweeper every 10 ms): one final state, units back once
#   (c) confirm racing release on 50 holds: exactly one winner per hold
#   (d) confirm / release / extend after expiry on a node whose sweeper has
#       not reached the holds (--sweep-ms 10000): EXPIRED / EXPIRED expired /
#       EXPIRED. That no sweep came in between is read afterwards from a
#       canary hold that expired with them and that only a sweep ends; a try
#       a sweep cut into runs again right after the next sweep
#   (e) partial confirm: hold 3, confirm 2 -> sold 2, 1 back
#   (f) extend once, then ALREADY_EXTENDED
# Each part has its own item, so each part's counters are exact.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin transitions
for it in ta tb tc te tf; do
    esc_ctl item create t1 $it --total 50 --segments 1 --node n1 >/dev/null
done
esc_ctl item create t1 td --total 10 --segments 1 --node n2 >/dev/null
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
    out=$(itest_probe reserve --endpoint "$EP" --item "$item" --key "$key" "$@")
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

# (d) runs its probes in parallel rounds (4 reserves; 4 operations; 2 more on
# D1), each answer in $ITEST_DIR/OUT.
d_probe() { # OUT ARGS...
    local out=$1
    shift
    "$ESC_PROBE" "$@" --endpoint "$EP2" >"$ITEST_DIR/$out" 2>&1 &
    D_PIDS+=($!)
    ESC_PIDS+=($!)
}
d_round() { # waits for the round's probes; their answers are checked, not their exit
    local p
    for p in "${D_PIDS[@]}"; do
        itest_wait_pid "$p" 60 "a probe of (d)" || true
    done
    D_PIDS=()
}
d_brief() { brief "$(cat "$ITEST_DIR/$1")"; }

# Returns once the node's sweeper has run: a 200 ms hold nobody touches,
# ended by it. The next sweep is 10 s away.
d_next_sweep() {
    local out m
    out=$(itest_probe reserve --endpoint "$EP2" --item td --key "d-mark-$1" --ttl-ms 200)
    [[ $(itest_status "$out") == OK ]] || esc_fail "transitions: (d) marker reserve: $out"
    m=$(itest_field hold "$out")
    esc_wait_sql 60 "SELECT state FROM holds WHERE hold_id = $m" expired ||
        esc_fail "transitions: the sweeper of node n2 never ran"
}

# One try: holds D1..D4 (2 units each) and a canary (1 unit), all with a
# ttl of 200 ms. Sets D_TRY to "done", or to "swept" when a sweep ran after
# they expired (the canary, which nothing else touches, ended): then the try
# proved nothing (the answers would be the same) and is repeated.
d_try() {
    local k=$1 i out held_expired ids canary td_now
    local -a d
    D_PIDS=()
    for i in 1 2 3 4; do
        d_probe "d$k-r$i.out" reserve --item td --key "d$k-$i" --qty 2 --ttl-ms 200
    done
    d_probe "d$k-rc.out" reserve --item td --key "d$k-canary" --ttl-ms 200
    d_round
    for i in 1 2 3 4 c; do
        out=$(cat "$ITEST_DIR/d$k-r$i.out")
        [[ $(itest_status "$out") == OK ]] || esc_fail "transitions: (d) reserve d$k-r$i: $out"
        if [[ $i == c ]]; then
            canary=$(itest_field hold "$out")
        else
            d[i]=$(itest_field hold "$out")
        fi
    done
    ids="${d[1]}, ${d[2]}, ${d[3]}, ${d[4]}"
    itest_eq "$(counters td)" "1/9/0" "td with 4 holds and the canary"
    sleep 0.5 # the holds' ttl (200 ms) runs out
    held_expired=$(itest_q "SELECT count(*) FROM holds WHERE hold_id IN ($ids) AND state = 'held'
        AND expires_at < now()")
    d_probe "d$k-confirm.out" confirm --hold "${d[1]}"
    d_probe "d$k-partial.out" confirm --hold "${d[2]}" --qty 1
    d_probe "d$k-release.out" release --hold "${d[3]}"
    d_probe "d$k-extend.out" extend --hold "${d[4]}" --ttl-ms 60000
    d_round
    d_probe "d$k-again.out" confirm --hold "${d[1]}"
    d_probe "d$k-release1.out" release --hold "${d[1]}"
    d_round
    # The counters first, then the canary: a canary still held after the
    # counters were read proves no sweep ran before they were read.
    td_now=$(counters td)
    if [[ $(itest_q "SELECT state FROM holds WHERE hold_id = $canary") != held ]]; then
        echo "note: (d) try $k: the sweeper ran during the try; again after the next sweep" >&2
        D_TRY=swept
        return 0
    fi
    itest_eq "$held_expired" 4 "expired holds still 'held' in the database (the sweeper has not run)"
    itest_eq "$(d_brief "d$k-confirm.out")" "EXPIRED expired 0" "confirm after expiry"
    itest_eq "$(d_brief "d$k-partial.out")" "EXPIRED expired 0" "partial confirm after expiry"
    itest_eq "$(d_brief "d$k-release.out")" "EXPIRED expired 0" "release after expiry"
    itest_eq "$(d_brief "d$k-extend.out")" "EXPIRED expired 0" "extend after expiry"
    itest_eq "$(d_brief "d$k-again.out")" "EXPIRED expired 0" "confirm again"
    itest_eq "$(d_brief "d$k-release1.out")" "EXPIRED expired 0" "release of an expired hold"
    itest_eq "$td_now" "9/1/0" "td after the expiries (the canary still held)"
    itest_eq "$(itest_q "SELECT string_agg(state, ',' ORDER BY hold_id) FROM holds WHERE hold_id IN ($ids)")" \
        "expired,expired,expired,expired" "stored states of the 4 holds"
    itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE hold_id IN ($ids) AND kind = 'expired'")" 4 \
        "'expired' events of the 4 holds"
    esc_wait_sql 60 "SELECT state FROM holds WHERE hold_id = $canary" expired ||
        esc_fail "transitions: the sweeper did not end the canary"
    itest_eq "$(counters td)" "10/0/0" "td once the sweeper ran"
    D_TRY=done
}

esc_step "(d) after expiry, with a sweeper that has not run (node n2, --sweep-ms 10000)"
PORT2=$(itest_port)
itest_node n2 "$PORT2" --sweep-ms 10000
EP2=tcp://127.0.0.1:$PORT2
D_TRY=swept
for try in 1 2 3; do
    ((try == 1)) || d_next_sweep "$try"
    d_try "$try"
    [[ $D_TRY == done ]] && break
done
[[ $D_TRY == done ]] || esc_fail "transitions: (d): a sweep cut into each of 3 tries"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'td' AND kind NOT IN ('held', 'expired')")" 0 \
    "other terminal events of td"

itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "transitions: node n2 did not stop cleanly"
itest_pass
