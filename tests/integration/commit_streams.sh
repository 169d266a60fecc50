#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# commit_streams.sh - a node's commit streams (segment/node/node_commit.h,
# docs/protocols.md "Commit streams"): one tenant's batch that cannot
# commit does not hold another tenant's requests. One node in static mode,
# started with its defaults (2 streams), serves t1's items stuck and other
# and t2's item free, one segment each.
#   - a session locks stuck's segment row: t1's reserve on it is decided
#     and its batch waits in PostgreSQL for the lock;
#   - meanwhile t2's reserve is answered OK (deadline 10 s) and its hold is
#     in the database while t1's batch still waits: it went on the other
#     stream, in a batch of its own;
#   - a reserve of t1 on other (a segment nobody commits) is not committed
#     meanwhile: the last idle stream is kept for tenants with nothing
#     committing, so one tenant commits on one stream at a time;
#   - the lock ends: both of t1's reserves are answered OK, exactly 2 holds
#     of t1 and 1 of t2, the books balance, the node stops cleanly.
# With one stream (--commit-streams 1) t2's reserve waits behind t1's batch
# and its deadline passes: the test fails.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin commit_streams
esc_ctl item create t1 stuck --total 10 --segments 1 --node n1 >/dev/null
esc_ctl item create t1 other --total 10 --segments 1 --node n1 >/dev/null
esc_ctl item create t2 free --total 10 --segments 1 --node n1 >/dev/null
PORT=$(itest_port)
EP=tcp://127.0.0.1:$PORT
# shellcheck disable=SC2086 # ESC_STREAMS_NODE_FLAGS: a list of flags (the mutation above)
itest_node n1 "$PORT" ${ESC_STREAMS_NODE_FLAGS:-}
grep -q 'SEG-READY' "$ITEST_NODE_LOG" || esc_fail "the node did not start: $(tail -n 5 "$ITEST_NODE_LOG")"
reserve() { # TENANT ITEM KEY DEADLINE_MS
    itest_probe reserve --endpoint "$EP" --tenant "$1" --item "$2" --key "$3" --ttl-ms 600000 \
        --deadline-ms "$4"
}
holds() { itest_q "SELECT count(*) FROM holds WHERE tenant_id = '$1'"; }
waiting_batches() {
    itest_q "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
        AND query LIKE '%escrow_commit_batch%' AND query NOT LIKE '%pg_stat_activity%'"
}

esc_step "t1's batch waits for a lock on its segment"
itest_lock commit_streams_blocker "SELECT 1 FROM segments WHERE tenant_id = 't1' AND item_id = 'stuck'
    FOR NO KEY UPDATE"
reserve t1 stuck t1-a 60000 >"$ITEST_DIR/t1-a.out" 2>&1 &
T1A=$!
ESC_PIDS+=("$T1A")
esc_wait_sql 30 "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
    AND query LIKE '%escrow_commit_batch%' AND query NOT LIKE '%pg_stat_activity%'" 1 ||
    esc_fail "t1's batch does not wait for the lock"
reserve t1 other t1-b 60000 >"$ITEST_DIR/t1-b.out" 2>&1 &
T1B=$!
ESC_PIDS+=("$T1B")

esc_step "t2 is answered meanwhile"
out=$(reserve t2 free t2-a 10000)
echo "t2's reserve while t1's batch waits: $out"
itest_eq "$(itest_status "$out")" OK "t2's reserve while t1's batch waits"
itest_eq "$(holds t2)" 1 "t2's holds in the database"
itest_eq "$(waiting_batches)" 1 "batches still waiting for the lock"
itest_eq "$(holds t1)" 0 "t1's holds while its first batch waits (one stream per tenant)"
kill -0 "$T1B" 2>/dev/null || esc_fail "t1's reserve on other was answered while t1 had a batch waiting: $(cat "$ITEST_DIR/t1-b.out")"

esc_step "the lock ends"
itest_unlock commit_streams_blocker
wait "$T1A" || esc_fail "t1's reserve on stuck: $(cat "$ITEST_DIR/t1-a.out")"
wait "$T1B" || esc_fail "t1's reserve on other: $(cat "$ITEST_DIR/t1-b.out")"
itest_eq "$(itest_status "$(cat "$ITEST_DIR/t1-a.out")")" OK "t1's reserve on stuck"
itest_eq "$(itest_status "$(cat "$ITEST_DIR/t1-b.out")")" OK "t1's reserve on other"
itest_eq "$(holds t1) $(holds t2)" "2 1" "holds of t1 and t2"
itest_eq "$(itest_q "SELECT sum(held) FROM segments WHERE tenant_id IN ('t1', 't2')")" 3 "units held"
itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "the node did not stop"
grep -q 'SEG-STOP node=n1 stopped' "$ITEST_NODE_LOG" || esc_fail "the node did not stop cleanly"
itest_pass
