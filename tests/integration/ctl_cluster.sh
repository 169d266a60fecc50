#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl_cluster.sh - escrowctl as the operator's tool against a real local
# cluster (tests/support/cluster.sh: private PostgreSQL, escrow-coordinator,
# two managed escrow-segment nodes): item create without --node (the
# coordinator places the segments after a reload), status and nodes while
# they are served, every coordinator command (restock, reduce, pause, resume,
# split, collapse, rebalance, retire, drain, undrain) with its effect in the
# database, their errors (unknown item or node, retired item, bad arguments,
# refused reduce), release of a real hold through its owner (by an operator,
# twice, a sold one, a silent owner), and finally the coordinator down: a
# clear message and exit 3. Exact exit codes throughout; check at the end.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

ESC_SRC=${ESC_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
for b in escrow-coordinator escrow-segment escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}'"
done
if [[ -z ${ESC_PROBE:-} ]]; then
    ESC_PROBE=$ESC_BIN/../tests/esc_probe
fi
[[ -x $ESC_PROBE ]] || esc_fail "esc_probe not found (set ESC_PROBE or build the esc_probe target)"

work=$(mktemp -d /tmp/escrow-ctl-cluster.XXXXXX)
passed=0

# Runs escrowctl, expects exit code $1; output in $work/out, $work/err. A
# call that does not choose its --timeout-ms gets 30 s, not escrowctl's 3 s:
# a loaded machine's coordinator may answer late, and only a lost answer
# (exit 3) should fail the test.
expect_rc() {
    local a
    for a in "$@"; do
        [[ $a == --timeout-ms* ]] && { esc_ctl_expect "$work" "$@"; return; }
    done
    local want=$1
    shift
    esc_ctl_expect "$work" "$want" --timeout-ms 30000 "$@"
}

# Waits up to $1 s until SQL $2 returns $3.
wait_sql() {
    esc_wait_sql "$@" || esc_fail "waited $1 s for '$2' to be '$3'"
}

q() {
    esc_psql "$1"
}

esc_step "local cluster: PostgreSQL, coordinator, 2 nodes"
# The lease (10 s) is long: a live node never loses it on a loaded machine,
# and the silent-owner case below needs the stopped owner to keep its
# segments while escrowctl asks it.
esc_cluster_start "$work/cluster" --nodes 2 --lease-ms 10000 --heartbeat-ms 100
# after the cluster's own stop hook (hooks run in order): keep the logs of a failure
esc_on_exit '((passed)) && [[ ${ESC_KEEP:-0} != 1 ]] && rm -rf "$work" || echo "logs kept in $work" >&2'
echo "coordinator $ESCROW_COORDINATOR, nodes $ESC_CLUSTER_NODES"

esc_step "item create without --node: unassigned, the coordinator places them after a reload"
expect_rc 0 item create shop-1 tee --total 100 --segments 4 --hold-ttl-ms 600000
grep -q 'unassigned' "$work/out" || esc_fail "create does not say the segments are unassigned"
esc_assert_eq "$(cat "$work/err")" "" "no warning: the coordinator answered the reload"
wait_sql 60 "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
             WHERE s.item_id = 'tee' AND n.state = 'up' AND s.epoch > 0" 4
expect_rc 0 item create shop-1 other --total 10 --segments 1
wait_sql 60 "SELECT count(*) FROM segments WHERE item_id = 'other' AND node_id IS NOT NULL" 1

esc_step "status and nodes while served"
expect_rc 0 status shop-1 tee
esc_assert_eq "$(grep -c '^    segment .* node=n[12] ' "$work/out")" "4" "every segment has an owner"
grep -q '^shop-1 *tee *active *100 ' "$work/out" || esc_fail "item line: $(cat "$work/out")"
grep -q '4 segments (0 without an owner, 0 on a node that is down)' "$work/out" ||
    esc_fail "status summary: $(cat "$work/out")"
expect_rc 0 nodes
esc_assert_eq "$(grep -cE '^n[12] +local +up +tcp://127.0.0.1:[0-9]+ ' "$work/out")" "2" "two nodes up"
esc_assert_eq "$(tail -n 1 "$work/out")" "2 nodes" "node count"
expect_rc 0 --json nodes
python3 -c '
import json, sys
n = json.load(sys.stdin)["nodes"]
assert [x["node"] for x in n] == ["n1", "n2"], n
assert all(x["state"] == "up" and x["lease_left_ms"] > 0 for x in n), n
assert sum(x["segments"] for x in n) == 5, n
' <"$work/out"

esc_step "restock and reduce"
expect_rc 0 item restock shop-1 tee 20
[[ -s $work/out ]] || esc_fail "restock printed no message"
wait_sql 60 "SELECT total FROM items WHERE item_id = 'tee'" 120
expect_rc 0 --json item reduce shop-1 tee 10
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="OK" and d["code"]==0 and d["message"], d' <"$work/out"
wait_sql 60 "SELECT total FROM items WHERE item_id = 'tee'" 110
expect_rc 1 --json item reduce shop-1 tee 1000000
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="INVAL" and d["message"], d' <"$work/out"
grep -q 'the coordinator refused' "$work/err" || esc_fail "refused reduce: $(cat "$work/err")"
esc_assert_eq "$(q "SELECT total FROM items WHERE item_id = 'tee'")" "110" "a refused reduce changes nothing"

esc_step "pause, resume"
expect_rc 0 item pause shop-1 tee
esc_assert_eq "$(q "SELECT state FROM items WHERE item_id = 'tee'")" "paused" "paused"
expect_rc 0 status shop-1 tee
grep -q '^shop-1 *tee *paused ' "$work/out" || esc_fail "status does not show paused"
expect_rc 0 item resume shop-1 tee
esc_assert_eq "$(q "SELECT state FROM items WHERE item_id = 'tee'")" "active" "resumed"

esc_step "split, collapse, rebalance"
expect_rc 0 item split shop-1 tee 6
esc_assert_eq "$(q "SELECT segments_wanted FROM items WHERE item_id = 'tee'")" "6" "segments wanted"
wait_sql 60 "SELECT count(*) FROM segments WHERE item_id = 'tee' AND state = 'active' AND node_id IS NOT NULL" 6
expect_rc 0 item collapse shop-1 tee
wait_sql 60 "SELECT (tail_segment IS NOT NULL)::text FROM items WHERE item_id = 'tee'" true
tail=$(q "SELECT tail_segment FROM items WHERE item_id = 'tee'")
expect_rc 0 status shop-1 tee
grep -q "segment $tail .* TAIL$" "$work/out" || esc_fail "status does not mark the tail: $(cat "$work/out")"
grep -q "^shop-1 *tee .* 1/6 *5 *$tail " "$work/out" || esc_fail "collapsed summary: $(cat "$work/out")"
expect_rc 0 --json status shop-1 tee
python3 -c '
import json, sys
i = json.load(sys.stdin)["items"][0]
assert i["tail_segment"] == '"$tail"' and i["segments_draining"] == 5, i
assert [s["segment_id"] for s in i["segments"] if s["tail"]] == ['"$tail"'], i
' <"$work/out"
expect_rc 0 item rebalance shop-1 tee
expect_rc 0 transfers shop-1 tee --all
expect_rc 0 item restock shop-1 tee 5 # un-collapses
wait_sql 60 "SELECT (tail_segment IS NULL)::text FROM items WHERE item_id = 'tee'" true

esc_step "drain, undrain"
expect_rc 0 drain n2
wait_sql 60 "SELECT count(*) FROM segments WHERE node_id = 'n2'" 0
esc_assert_eq "$(q "SELECT state FROM nodes WHERE node_id = 'n2'")" "draining" "n2 draining"
expect_rc 0 nodes
grep -qE '^n2 +local +draining .* 0 \(0 active, 0 draining\)$' "$work/out" || esc_fail "nodes after drain: $(cat "$work/out")"
expect_rc 0 undrain n2
wait_sql 60 "SELECT state FROM nodes WHERE node_id = 'n2'" up

esc_step "retire; errors: unknown item, unknown node, retired item, bad arguments"
expect_rc 0 item retire shop-1 other
esc_assert_eq "$(q "SELECT state FROM items WHERE item_id = 'other'")" "retired" "retired"
expect_rc 1 item restock shop-1 other 5
grep -q 'CONFLICT' "$work/err" || esc_fail "restock of a retired item: $(cat "$work/err")"
for cmd in "restock shop-1 nope 5" "reduce shop-1 nope 5" "pause shop-1 nope" "resume shop-1 nope" \
    "retire shop-1 nope" "split shop-1 nope 2" "collapse shop-1 nope" "rebalance shop-1 nope"; do
    # shellcheck disable=SC2086
    expect_rc 1 item $cmd
    grep -q 'UNKNOWN_ITEM' "$work/err" || esc_fail "item $cmd: $(cat "$work/err")"
done
expect_rc 1 --json item pause shop-2 tee
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["status"]=="UNKNOWN_ITEM" and d["code"]==-12, d' <"$work/out"
expect_rc 1 drain n9
grep -q 'NOT_FOUND' "$work/err" || esc_fail "drain of an unknown node: $(cat "$work/err")"
expect_rc 1 undrain n9
expect_rc 2 item restock shop-1 tee 0
expect_rc 2 item restock shop-1 tee many
expect_rc 2 item split shop-1 tee 257
expect_rc 2 item pause shop-1
expect_rc 2 drain
expect_rc 2 --coordinator 'tcp://' item pause shop-1 tee
expect_rc 2 --timeout-ms 5 item pause shop-1 tee

esc_step "release: a real hold through its owner"
wait_sql 60 "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
             WHERE s.item_id = 'tee' AND s.state = 'active' AND n.state = 'up'" 6
seg=$(q "SELECT segment_id FROM segments WHERE item_id = 'tee' AND state = 'active' AND available > 1
         ORDER BY segment_id LIMIT 1")
[[ -n $seg ]] || esc_fail "no active segment with stock: $(esc_ctl status shop-1 tee)"
owner=$(q "SELECT node_id FROM segments WHERE segment_id = $seg")
ep=$(esc_cluster_node_ep "$owner")
# One try (the owner may still be loading the segment); the answer in $work/reserve.out.
try_reserve() {
    "$ESC_PROBE" hint-reserve --endpoint "$ep" --tenant shop-1 --item tee --key "$1" \
        --segment "$seg" --deadline-ms 10000 >"$work/reserve.out" 2>&1 || true
    grep -q '^OK' "$work/reserve.out"
}
reserve() { # key -> hold id
    esc_wait_for 60 try_reserve "$1" ||
        esc_fail "reserve $1 on segment $seg at $ep: $(cat "$work/reserve.out")"
    sed -n 's/.*hold=\([0-9]*\).*/\1/p' "$work/reserve.out"
}
h1=$(reserve op-1)
h2=$(reserve op-2)
h3=$(reserve op-3)
esc_assert_eq "$(q "SELECT string_agg(state, ',' ORDER BY hold_id) FROM holds WHERE hold_id IN ($h1, $h2, $h3)")" \
    "held,held,held" "three holds"

esc_step "a pause reaches the segment's owner (an assignment delta naming a segment it serves)"
# The node walks its segments only for a delta that names one it serves
# (node_assign.c): the pause changes their assignments, and the owner
# must answer PAUSED, then serve again after the resume.
n_paused=0
paused_at_owner() {
    n_paused=$((n_paused + 1))
    "$ESC_PROBE" hint-reserve --endpoint "$ep" --tenant shop-1 --item tee --key "paused-$n_paused" \
        --segment "$seg" --deadline-ms 10000 >"$work/paused.out" 2>&1 || true
    grep -q '^PAUSED' "$work/paused.out"
}
expect_rc 0 item pause shop-1 tee
if ! esc_wait_for 30 paused_at_owner; then
    esc_fail "the owner of a paused item does not answer PAUSED: $(cat "$work/paused.out")"
fi
expect_rc 0 item resume shop-1 tee
h4=$(reserve op-4)
esc_assert_eq "$(q "SELECT state FROM holds WHERE hold_id = $h4")" "held" "a hold after the resume"
expect_rc 0 release "$h1"
esc_assert_eq "$(cat "$work/out")" "hold $h1 (shop-1/tee, segment $seg): cancelled" "release output"
esc_assert_eq "$(q "SELECT state FROM holds WHERE hold_id = $h1")" "cancelled" "released by the operator"
esc_assert_eq "$(q "SELECT count(*) FROM outbox WHERE hold_id = $h1 AND kind = 'cancelled' AND actor = 'operator'")" \
    "1" "one cancelled event by the operator"
expect_rc 0 release "$h1"
grep -q "already cancelled" "$work/out" || esc_fail "second release: $(cat "$work/out")"
esc_assert_eq "$(q "SELECT count(*) FROM outbox WHERE hold_id = $h1 AND kind = 'cancelled'")" "1" \
    "a second release changes nothing"
"$ESC_PROBE" confirm --endpoint "$ep" --tenant shop-1 --hold "$h2" >/dev/null
expect_rc 1 --json release "$h2"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["state"]=="converted" and d["status"]=="NOT_HELD", d' <"$work/out"
expect_rc 1 release $(((seg << 40) | 999999))
grep -q 'no hold' "$work/err" || esc_fail "unknown hold: $(cat "$work/err")"
# a silent owner (stopped, lease not yet expired): no answer, exit 3, and safe to repeat
owner_pid=$(esc_cluster_node_pid "$owner")
kill -STOP "$owner_pid"
rc=0
esc_ctl release "$h3" --timeout-ms 300 >"$work/out" 2>"$work/err" || rc=$?
kill -CONT "$owner_pid"
esc_assert_eq "$rc" "3" "release through a stopped owner"
grep -q "node $owner at $ep did not answer within 300 ms" "$work/err" || esc_fail "silent owner: $(cat "$work/err")"
# it may have been taken over meanwhile; either way the release goes through now
try_release() {
    esc_ctl release "$h3" --timeout-ms 10000 >"$work/out" 2>"$work/err"
}
esc_wait_for 60 try_release ||
    esc_fail "release of $h3 after SIGCONT: $(cat "$work/err")"
esc_assert_eq "$(q "SELECT state FROM holds WHERE hold_id = $h3")" "cancelled" "released after all"

esc_step "check with the cluster running"
expect_rc 0 check
esc_assert_eq "$(tail -n 1 "$work/out")" "conservation=ok" "books balance"

esc_step "the coordinator down: exit 3 and a clear message"
kill -TERM "$ESC_CLUSTER_COORD_PID"
coord_gone() { ! kill -0 "$ESC_CLUSTER_COORD_PID" 2>/dev/null; }
esc_wait_for 60 coord_gone || esc_fail "the coordinator did not stop"
expect_rc 3 item pause shop-1 tee --timeout-ms 500
esc_assert_eq "$(cat "$work/err")" \
    "escrowctl: coordinator at $ESCROW_COORDINATOR did not answer within 500 ms: nothing could be sent (is it running?); nothing was done" \
    "coordinator down"
expect_rc 3 --json drain n1 --timeout-ms 200
esc_assert_eq "$(cat "$work/out")" "" "no JSON without an answer"
expect_rc 0 item create shop-1 late --total 5 --timeout-ms 300
grep -q 'warning: the coordinator at .* did not answer within 300 ms' "$work/err" ||
    esc_fail "create without a coordinator: $(cat "$work/err")"
expect_rc 0 status shop-1 late
grep -q 'segment .* node=- ' "$work/out" || esc_fail "the new item's segment has no owner: $(cat "$work/out")"
expect_rc 0 check

passed=1
echo "PASS ctl_cluster"
