#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# answers.sh - the Answers table of docs/libescrow.md, proven. The test reads
# the table (it is the test's table: one source) and drives every row
# (call, answer, *out, api) against a real cluster (coordinator and node with
# --auth on, libescrow in routing mode), through the blocking API
# (esc_probe call) and the asynchronous one (esc_probe acall). It fails when
#   - a scenario gets another answer or *out than it expects,
#   - libescrow returns an answer (call, code, *out, api) that is in neither
#     of the page's tables (the table of answers the test drives and the one
#     of answers it accepts but cannot produce on demand),
#   - a row of the first table was not produced by any scenario.
# "every call" rows stand for reserve, confirm, confirm qty, release, extend,
# get and cart.
set -euo pipefail
# The node is paused for the TIMEDOUT rows: its lease must outlast that.
SHARD_LEASE_MS=60000
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

itest_begin answers
CALLS="reserve confirm confirm_qty release extend get cart"
python3 - "$ESC_SRC/docs/libescrow.md" "$ITEST_DIR" "$CALLS" <<'EOF'
import re, sys
page, out, calls = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3].split()
def rows(name):
    m = re.search(r"<!-- %s:[^>]*-->\n(.*?)<!-- /%s -->" % (name, name), page, re.S)
    if not m:
        sys.exit("docs/libescrow.md: no <!-- %s --> table" % name)
    got = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] in ("call", "") or set(cells[0]) <= set("-"):
            continue
        call, code, outv, api = cells[0], cells[1].strip("`"), cells[2], cells[3]
        assert outv in ("hold", "holds", "none"), line
        assert api in ("both", "async", "blocking"), line
        for c in (calls if call == "every call" else [call.replace(" ", "_")]):
            assert c in calls, line
            for a in {"both": ["call", "acall"], "async": ["acall"], "blocking": ["call"]}[api]:
                got.append("%s %s %s %s" % (c, code, outv, a))
    return got
open(out + "/table.txt", "w").write("\n".join(sorted(set(rows("answers-table")))) + "\n")
open(out + "/also.txt", "w").write("\n".join(sorted(set(rows("answers-also")))) + "\n")
EOF
echo "the table: $(wc -l <"$ITEST_DIR/table.txt") (call, answer, out, api) rows to drive," \
    "$(wc -l <"$ITEST_DIR/also.txt") more accepted"
: >"$ITEST_DIR/seen.txt"

esc_step "a cluster with --auth on: tenant t1 and its key"
K=$ITEST_DIR/keys
mkdir -p "$K"
esc_ctl tenant create t1 >/dev/null
esc_ctl key create t1 >"$K/t1" 2>/dev/null
esc_ctl admin-key create >"$K/admin" 2>/dev/null
esc_ctl cluster-key create >"$K/cluster"
export ESCROW_ADMIN_KEY
ESCROW_ADMIN_KEY=$(cat "$K/admin")
KEY=$(cat "$K/t1")
shard_coord_start --auth on --cluster-key "$K/cluster"
shard_node_start n1 --auth on --cluster-key "$K/cluster"
export ESCROW_COORDINATOR=$SHARD_COORD_URL
for spec in "a 1000 --max-per-order 5 --max-per-buyer 8" "one 1" "two 1" "p 10" "c 1000"; do
    # shellcheck disable=SC2086
    set -- $spec
    esc_ctl item create t1 "$1" --total "$2" --segments 1 "${@:3}" >/dev/null
done
# (shard_wait_served asks the coordinator without a credential: the node's log says it)
loaded() { grep -q "SEG-LOADED seg=[0-9]* item=t1/$1 " "$SHARD_NODE_LOG"; }
for it in a one two p c; do
    esc_wait_for 60 loaded "$it" || esc_fail "item $it was not loaded by n1"
done
SEG_A=$(itest_q "SELECT segment_id FROM segments WHERE item_id = 'a'")
ROUTE=(--coordinator "$SHARD_COORD_URL" --routes "$SHARD_PUB_URL")

# ans API CALL CODE OUT ARGS... : one call through API (call | acall); CALL
# is the table's (confirm_qty = confirm with --qty); it must answer CODE
# with OUT, and the pair must be in a table. ARGS are esc_probe's.
ans() {
    local api=$1 call=$2 code=$3 out=$4 line got_code got_out
    shift 4
    line=$("$ESC_PROBE" "$api" --op "${call%_qty}${OP_SUFFIX:-}" "${ROUTE[@]}" "$@" \
        2>>"$ITEST_DIR/probe.log") ||
        esc_fail "esc_probe $api --op $call $*: exit $?"
    got_code=$(itest_status "$line")
    got_out=$(itest_field out "$line")
    echo "$call $got_code $got_out $api" >>"$ITEST_DIR/seen.txt"
    grep -qx "$call $got_code $got_out $api" "$ITEST_DIR/table.txt" "$ITEST_DIR/also.txt" ||
        esc_fail "$api $call answered $got_code out=$got_out, which the Answers table does not list ($*)"
    [[ $got_code == "$code" && $got_out == "$out" ]] ||
        esc_fail "$api $call $*: expected $code out=$out, got: $line"
    ANS=$line
}
# with the tenant's key
a_() { ans "$@" --credential "$KEY"; }
# ans_eventually API CALL CODE OUT ARGFN: as a_, for UNAVAILABLE: at the
# deadline a call whose last resend is still unanswered is TIMEDOUT (its
# outcome is unknown), so the call is made again, with the arguments
# `ARGFN TRY` prints (a new key or hold each time), until it ends CODE;
# every answer must still be in the table.
ans_eventually() {
    local api=$1 call=$2 code=$3 out=$4 argfn=$5 try line got
    for try in 1 2 3 4 5 6; do
        # shellcheck disable=SC2046
        line=$("$ESC_PROBE" "$api" --op "${call%_qty}" "${ROUTE[@]}" --credential "$KEY" \
            --deadline-ms 1500 $($argfn "$try") 2>>"$ITEST_DIR/probe.log")
        got="$(itest_status "$line") $(itest_field out "$line")"
        echo "$call $got $api" >>"$ITEST_DIR/seen.txt"
        grep -qx "$call $got $api" "$ITEST_DIR/table.txt" "$ITEST_DIR/also.txt" ||
            esc_fail "$api $call answered $got, which the Answers table does not list"
        [[ $got == "$code $out" ]] && return 0
        [[ $got == "TIMEDOUT none" ]] || esc_fail "$api $call: expected $code out=$out, got: $line"
    done
    esc_fail "$api $call: never $code in 6 tries"
}
# both F: `F call` and `F acall` at the same time (their keys differ), each
# in a subshell with its output in a log; fails when either failed.
both() {
    local f=$1 api pids=() rc=0
    for api in call acall; do
        ("$f" "$api") >"$ITEST_DIR/$f-$api.log" 2>&1 &
        pids+=($!)
    done
    for api in 0 1; do
        wait "${pids[$api]}" || rc=1
    done
    if ((rc != 0)); then
        tail -n 5 "$ITEST_DIR/$f-call.log" "$ITEST_DIR/$f-acall.log" >&2
        esc_fail "$f failed (above)"
    fi
}
# args for CALL on HOLD (and ITEM/KEY for reserve and cart)
call_args() {
    local call=$1 h=$2 item=${3:-} key=${4:-}
    case $call in
    reserve) echo "--item $item --key $key" ;;
    cart) echo "--item $item:1,c:1 --key $key" ;;
    confirm_qty) echo "--hold $h --qty 1" ;;
    extend) echo "--hold $h --ttl-ms 600000" ;;
    *) echo "--hold $h" ;;
    esac
}
# hold API ITEM KEY [probe args]: a new hold; echoes its id
hold() {
    local api=$1 item=$2 key=$3 line
    shift 3
    line=$("$ESC_PROBE" call --op reserve "${ROUTE[@]}" --credential "$KEY" --item "$item" \
        --key "$key" "$@" 2>>"$ITEST_DIR/probe.log")
    [[ $line == "OK out=hold state=held "* ]] || esc_fail "hold $item $key ($api): $line"
    itest_field hold "$line"
}
op() { # CALL HOLD [ARGS]: a call that must answer OK (setting a hold's state up)
    local line
    line=$("$ESC_PROBE" call --op "$1" "${ROUTE[@]}" --credential "$KEY" --hold "$2" "${@:3}" \
        2>>"$ITEST_DIR/probe.log")
    [[ $line == OK* ]] || esc_fail "setup: $1 $2: $line"
}
lapsed() { # HOLD: the node's sweeper ended it
    [[ $(itest_q "SELECT state FROM holds WHERE hold_id = $1") == expired ]]
}
NOHOLD=$(((SEG_A << 40) + 999999)) # a segment that exists, a sequence number no hold has
NOSEG=$(((4000 << 40) + 1))        # a segment that does not exist

esc_step "setup: item one sold, item two held, item p paused"
h=$(hold setup one sold-1)
op confirm "$h"
hold setup two held-by-other --ttl-ms 600000 >/dev/null
esc_ctl --coordinator "$SHARD_COORD_URL" item pause t1 p >/dev/null
# SOLD_OUT comes from the coordinator's flag (a dry segment alone says
# SEGMENT_EMPTY, which a client answers TRY_LATER): the rows start once the
# coordinator has flagged item one, a few hundred ms after the confirm.
flagged() { grep -q "COORD-SOLD-OUT item=t1/one sold_out=1" "$SHARD_COORD_LOG"; }
esc_wait_for 60 flagged || esc_fail "the coordinator did not flag item one sold out"

esc_step "the rows, each through both APIs"
rows() {
    local api=$1 h
    # reserve
    a_ $api reserve OK hold --item a --key "r-$api"
    h=$(hold $api a "r-ended-$api")
    op release "$h"
    a_ $api reserve OK hold --item a --key "r-ended-$api"
    [[ $(itest_field state "$ANS") == cancelled ]] || esc_fail "the replay of an ended key: $ANS"
    a_ $api reserve SOLD_OUT none --item one --key "r-so-$api"
    a_ $api reserve TRY_LATER none --item two --key "r-tl-$api"
    a_ $api reserve PAUSED none --item p --key "r-p-$api"
    a_ $api reserve IDEMPOTENCY_MISMATCH none --item a --key "r-$api" --qty 2
    a_ $api reserve ORDER_LIMIT none --item a --key "r-ol-$api" --qty 6
    hold $api a "r-bl1-$api" --buyer "bl-$api" --qty 5 >/dev/null
    hold $api a "r-bl2-$api" --buyer "bl-$api" --qty 3 >/dev/null
    a_ $api reserve BUYER_LIMIT none --item a --key "r-bl3-$api" --buyer "bl-$api"
    a_ $api reserve UNKNOWN_ITEM none --item nope --key "r-ui-$api"
    a_ $api reserve INVAL none --item a --key "r-inval-$api" --qty 0
    # confirm, whole and partial
    h=$(hold $api a "c-$api")
    a_ $api confirm OK hold --hold "$h"
    a_ $api confirm OK hold --hold "$h" # a retry answers the same
    h=$(hold $api a "cq-$api" --qty 3)
    a_ $api confirm_qty INVAL hold --hold "$h" --qty 4
    a_ $api confirm_qty OK hold --hold "$h" --qty 2
    [[ $(itest_field sold "$ANS") == 2 ]] || esc_fail "partial confirm: $ANS"
    a_ $api confirm_qty CONFLICT hold --hold "$h" --qty 1
    a_ $api confirm_qty INVAL none --hold "$h" --qty 10001
    a_ $api confirm INVAL none --hold 0
    h=$(hold $api a "cr-$api")
    op release "$h"
    a_ $api confirm NOT_HELD hold --hold "$h"
    a_ $api confirm_qty NOT_HELD hold --hold "$h" --qty 1
    a_ $api confirm NOT_FOUND none --hold "$NOHOLD"
    a_ $api confirm NOT_FOUND none --hold "$NOSEG"
    a_ $api confirm_qty NOT_FOUND none --hold "$NOHOLD" --qty 1
    # release
    h=$(hold $api a "l-$api")
    a_ $api release OK hold --hold "$h"
    a_ $api release OK hold --hold "$h" # a second release answers the same
    h=$(hold $api a "lc-$api")
    op confirm "$h"
    a_ $api release NOT_HELD hold --hold "$h"
    a_ $api release NOT_FOUND none --hold "$NOHOLD"
    a_ $api release INVAL none --hold 0
    # extend
    h=$(hold $api a "e-$api")
    a_ $api extend OK hold --hold "$h" --ttl-ms 600000
    a_ $api extend ALREADY_EXTENDED hold --hold "$h" --ttl-ms 600000
    a_ $api extend INVAL none --hold "$h" --ttl-ms 10
    op release "$h"
    a_ $api extend NOT_HELD hold --hold "$h"
    a_ $api extend NOT_FOUND none --hold "$NOHOLD"
    # get
    a_ $api get OK hold --hold "$h"
    a_ $api get NOT_FOUND none --hold "$NOHOLD"
    a_ $api get INVAL none --hold 0
    # cart
    a_ $api cart OK holds --item "a:1,c:2" --key "k-$api" --buyer "kb-$api"
    a_ $api cart OK holds --item "a:1,c:2" --key "k-$api" --buyer "kb-$api" # the same holds
    a_ $api cart SOLD_OUT none --item "c:1,one:1" --key "k-so-$api"
    a_ $api cart TRY_LATER none --item "c:1,two:1" --key "k-tl-$api"
    a_ $api cart PAUSED none --item "c:1,p:1" --key "k-p-$api"
    a_ $api cart ORDER_LIMIT none --item "c:1,a:6" --key "k-ol-$api"
    hold $api a "k-bl1-$api" --buyer "kbl-$api" --qty 5 >/dev/null
    hold $api a "k-bl2-$api" --buyer "kbl-$api" --qty 3 >/dev/null
    a_ $api cart BUYER_LIMIT none --item "c:1,a:1" --key "k-bl-$api" --buyer "kbl-$api"
    a_ $api cart IDEMPOTENCY_MISMATCH none --item "a:2,c:2" --key "k-$api" --buyer "kb-$api"
    a_ $api cart UNKNOWN_ITEM none --item "c:1,nope:1" --key "k-ui-$api"
    a_ $api cart INVAL none --item "c:0" --key "k-inval-$api"
    a_ $api cart CART_ENDED none --item "c:1,one:1" --key "k-so-$api" # its c line was released
    # every call without the tenant's key
    for call in $CALLS; do
        # shellcheck disable=SC2046
        ans $api $call AUTH none $(call_args $call "$NOHOLD" a "auth-$api")
    done
}
both rows

esc_step "CLOSED: the asynchronous client closed with the call in flight"
for call in $CALLS; do
    h=$(hold acall a "closed-$call")
    # shellcheck disable=SC2046
    OP_SUFFIX=+close a_ acall $call CLOSED none $(call_args $call "$h" a "closed-k-$call")
done

esc_step "EXPIRED: holds of 1 s, ended by the node's sweeper"
declare -A lapsing
for api in call acall; do
    for call in confirm confirm_qty release extend; do
        lapsing[$api-$call]=$(hold $api a "x-$api-$call" --ttl-ms 1000)
    done
    a_ $api cart OK holds --item "a:1,c:1" --key "kx-$api" --ttl-ms 1000
done
for h in "${lapsing[@]}"; do
    esc_wait_for 60 lapsed "$h" || esc_fail "hold $h did not expire"
done
expired() {
    local api=$1 call
    for call in confirm confirm_qty release extend; do
        # shellcheck disable=SC2046
        a_ $api $call EXPIRED hold $(call_args $call "${lapsing[$api-$call]}")
        [[ $(itest_field state "$ANS") == expired ]] || esc_fail "$api $call of a lapsed hold: $ANS"
    done
    a_ $api cart EXPIRED none --item "a:1,c:1" --key "kx-$api" --ttl-ms 1000
}
both expired

esc_step "TIMEDOUT: the node paused"
h=$(hold call a t-held)
kill -STOP "${SHARD_PID[n1]}"
esc_on_exit "kill -CONT ${SHARD_PID[n1]} 2>/dev/null"
timedout() {
    local api=$1 call
    for call in $CALLS; do
        # shellcheck disable=SC2046
        a_ $api $call TIMEDOUT none --deadline-ms 700 $(call_args $call "$h" a "t-$api-$call")
    done
}
both timedout
kill -CONT "${SHARD_PID[n1]}"

esc_step "UNAVAILABLE: the database refuses the node's writes for some keys"
itest_q "ALTER TABLE holds ADD CONSTRAINT answers_refuse_new CHECK (idempotency_key NOT LIKE 'un-%') NOT VALID;
    ALTER TABLE holds ADD CONSTRAINT answers_refuse_change
        CHECK (idempotency_key NOT LIKE 'ut-%' OR (state = 'held' AND NOT extended)) NOT VALID" >/dev/null
unavailable() {
    local api=$1 call
    un_reserve() { echo "--item a --key un-$api-$1"; }
    un_cart() { echo "--item c:1,a:1 --key un-k-$api-$1"; }
    ans_eventually $api reserve UNAVAILABLE none un_reserve
    ans_eventually $api cart UNAVAILABLE none un_cart
    for call in confirm confirm_qty release extend; do
        # a held hold of a key whose changes the database refuses (made anew each try)
        ut_args() { call_args "$call" "$(hold "$api" a "ut-$api-$call-$1" --ttl-ms 600000)"; }
        ans_eventually $api $call UNAVAILABLE none ut_args
    done
}
both unavailable
itest_q "ALTER TABLE holds DROP CONSTRAINT answers_refuse_new;
    ALTER TABLE holds DROP CONSTRAINT answers_refuse_change" >/dev/null

esc_step "every row of the table was produced"
missing=$(sort -u "$ITEST_DIR/seen.txt" | comm -23 "$ITEST_DIR/table.txt" -)
if [[ -n $missing ]]; then
    echo "$missing" >&2
    esc_fail "rows of the Answers table no scenario produced (above)"
fi
echo "$(wc -l <"$ITEST_DIR/table.txt") rows, each produced; $(wc -l <"$ITEST_DIR/seen.txt") calls made"
itest_invariants
itest_pass
