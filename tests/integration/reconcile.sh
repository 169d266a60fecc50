#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# reconcile.sh - the node's database connection dies in the middle of group
# commits (its backend is terminated over and over during a sale). A batch
# whose COMMIT outcome is unknown must be reconciled before anyone is
# answered: nothing acknowledged is lost, nothing is applied twice. Also
# with two tenants selling at once (one commit stream each, two batches in
# flight), and with replies lost after batches that did commit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

TOTAL=2000

# check_sale OUT ITEM: the load saw no errors, and every confirm it was told
# about is a converted hold in PostgreSQL. Echoes the number of confirms.
check_sale() {
    local out=$1 item=$2 line confirmed
    line=$(grep '^RESULT' "$out") || esc_fail "reconcile: no RESULT line in $out"
    echo "$line" >&2
    itest_eq "$(itest_field errors "$line")" 0 "errors seen by the load generator ($item)"
    confirmed=$(grep -o 'then confirmed *[0-9]*' "$out" | awk '{print $3}')
    itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE state = 'converted' AND item_id = '$item'")" \
        "$confirmed" "converted holds in the database vs confirms acknowledged to the buyers ($item)"
    echo "$confirmed"
}

# terminate_commits_while PID...: while any of the processes runs (at most
# 40 s), terminates every commit backend caught in the middle of a commit;
# echoes how many.
terminate_commits_while() {
    local kills=0 n p alive deadline=$((SECONDS + 40))
    while ((SECONDS < deadline)); do
        alive=0
        for p in "$@"; do
            kill -0 "$p" 2>/dev/null && alive=1
        done
        ((alive)) || break
        sleep 0.05
        n=$(itest_q "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE query LIKE '%escrow:segment-commit%' AND state = 'active' AND pid <> pg_backend_pid()")
        kills=$((kills + n))
    done
    echo "$kills"
}

itest_begin reconcile
[[ -x $ESC_BIN/escrow-load ]] || esc_fail "reconcile: no escrow-load in ESC_BIN=$ESC_BIN"
esc_ctl item create t1 rec --total $TOTAL --segments 2 --node n1 >/dev/null
esc_ctl item create t1 rec2 --total $TOTAL --segments 2 --node n1 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT"

esc_step "a sale of 12,000 buyers while the node's commit backend is terminated again and again"
"$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$PORT" --tenant t1 --item rec --buyers 12000 \
    --concurrency 200 --confirm 0.5 --release 0.5 --deadline-ms 20000 --think-ms 20 \
    >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" &
LOAD=$!
kills=$(terminate_commits_while $LOAD)
echo "terminated $kills backends in the middle of a commit"
itest_wait_pid $LOAD 120 "escrow-load"
confirmed=$(check_sale "$ITEST_DIR/load.out" rec)
itest_eq "$(itest_q "SELECT sum(sold) FROM segments WHERE item_id = 'rec'")" "$confirmed" "units sold"
(( kills > 0 )) || esc_fail "reconcile: no commit was ever caught in flight; the test proved nothing"
reconciled=$(grep -c 'SEG-RECONCILE' "$ITEST_NODE_LOG" || true)
echo "batches reconciled after a lost connection: $reconciled"
(( reconciled > 0 )) || esc_fail "reconcile: the node never had to reconcile a batch"
esc_node_stop "$ITEST_NODE_PID" || esc_fail "reconcile: the node did not stop cleanly"

esc_step "two tenants at once, one commit stream each, backends terminated again and again"
# With two tenants writing, each commits on its own stream (node_commit.h):
# two batches are in flight at once, each lost connection is reconciled on
# its own stream, and neither tenant's books may suffer from the other's.
esc_ctl item create t1 rec4 --total $TOTAL --segments 2 --node n1 >/dev/null
esc_ctl item create t2 rec3 --total $TOTAL --segments 2 --node n1 >/dev/null
# shellcheck disable=SC2086 # ESC_RECONCILE_NODE_FLAGS: a list of flags (e.g. --commit-streams 4)
itest_node n1 "$PORT" ${ESC_RECONCILE_NODE_FLAGS:-}
sell() { # TENANT ITEM BUYERS OUT
    "$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$PORT" --tenant "$1" --item "$2" \
        --buyers "$3" --concurrency 100 --confirm 0.5 --release 0.5 --deadline-ms 20000 \
        --think-ms 20 --key-prefix "two-$1" >"$4" 2>"$4.log"
}
sell t1 rec4 6000 "$ITEST_DIR/two-t1.out" &
T1=$!
sell t2 rec3 6000 "$ITEST_DIR/two-t2.out" &
T2=$!
kills=$(terminate_commits_while $T1 $T2)
echo "terminated $kills backends in the middle of a commit"
itest_wait_pid $T1 120 "escrow-load of t1"
itest_wait_pid $T2 120 "escrow-load of t2"
for t in "t1 rec4" "t2 rec3"; do
    read -r tenant item <<<"$t"
    confirmed=$(check_sale "$ITEST_DIR/two-$tenant.out" "$item")
    itest_eq "$(itest_q "SELECT sum(sold) FROM segments WHERE item_id = '$item'")" "$confirmed" \
        "units sold of $item"
done
(( kills > 0 )) || esc_fail "reconcile: no commit of the two tenants was caught in flight"
itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "reconcile: the node did not stop cleanly"

esc_step "the other side: batches that DID commit, whose reply is lost with the connection"
# failpoint: 30% of committed batches are treated as "connection lost after
# COMMIT"; reconciliation must find them committed and answer from that.
# Three commit streams: one tenant may then commit on two at once, and a
# segment of a batch waiting for its reconciliation must not go in another
# stream's batch meanwhile (that batch would overwrite segments.last_batch,
# and the reconciliation would call a committed batch lost).
ESC_FAILPOINT_COMMIT_LOST_PCT=30 itest_node n1 "$PORT" --commit-streams 3
"$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$PORT" --tenant t1 --item rec2 --buyers 6000 \
    --concurrency 200 --confirm 0.8 --release 0.2 --deadline-ms 20000 --think-ms 5 \
    >"$ITEST_DIR/load2.out" 2>"$ITEST_DIR/load2.log" || esc_fail "reconcile: escrow-load failed"
check_sale "$ITEST_DIR/load2.out" rec2 >/dev/null
itest_eq "$(itest_q "SELECT sum(sold) FROM segments WHERE item_id = 'rec2'")" "$TOTAL" \
    "units sold (failpoint run: the item sells out exactly)"
had=$(grep -c 'SEG-RECONCILE.*had committed' "$ITEST_NODE_LOG" || true)
echo "committed batches recovered by reconciliation: $had"
(( had > 0 )) || esc_fail "reconcile: the failpoint never fired"
itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "reconcile: the node did not stop cleanly"
itest_pass
