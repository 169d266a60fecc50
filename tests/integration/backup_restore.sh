#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# backup_restore.sh - the backup and restore procedure of docs/backup.md,
# against real processes: a node sells 60 of 100 units; pg_dump (custom
# format) is taken while the node runs; the cluster is thrown away; a fresh
# PostgreSQL cluster gets pg_restore; escrowctl migrate --status says the
# schema is current and escrowctl check finds nothing wrong; the node starts
# on the restored database and sells on: exactly the 40 units left, never
# more, and the 60 sold before the backup are still sold.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

TOTAL=100
BEFORE=60

itest_begin backup_restore
[[ -x $ESC_BIN/escrow-load ]] || esc_fail "backup_restore: no escrow-load in ESC_BIN=$ESC_BIN"
D=$ITEST_DIR

# Buyers $1 with key prefix $2 against the node at $EP (each takes one unit and confirms).
sell() {
    "$ESC_BIN/escrow-load" --endpoint "$EP" --tenant t1 --item sale --buyers "$1" \
        --concurrency 20 --confirm 1 --release 0 --key-prefix "$2" --seed 7 --deadline-ms 60000 \
        --quiet >"$D/load-$2.out" 2>&1 || true
}
books() {
    itest_q "SELECT sold || ' ' || held || ' ' || available FROM conservation WHERE item_id = 'sale'"
}

esc_step "a sale of $BEFORE of $TOTAL units on n1"
esc_ctl item create t1 sale --total $TOTAL --segments 4 --node n1 >/dev/null
PORT=$(itest_port)
EP=tcp://127.0.0.1:$PORT
itest_node n1 "$PORT"
sell $BEFORE before
itest_eq "$(books)" "$BEFORE 0 $((TOTAL - BEFORE))" "sold/held/available before the backup"

esc_step "pg_dump while the node runs, then the cluster is thrown away"
"$ESC_PG_BINDIR/pg_dump" --format=custom --file="$D/escrow.dump" "$ESCROW_DSN"
esc_node_stop "$ITEST_NODE_PID" || esc_fail "backup_restore: n1 did not stop cleanly"
esc_pg_stop

esc_step "restore into a fresh PostgreSQL cluster"
esc_pg_start || esc_fail "backup_restore: cannot start the second PostgreSQL"
itest_eq "$(itest_q "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" 0 \
    "tables in the fresh cluster before the restore"
"$ESC_PG_BINDIR/pg_restore" --no-owner --exit-on-error --dbname="$ESCROW_DSN" "$D/escrow.dump"
esc_ctl migrate --status >"$D/status.out" || {
    cat "$D/status.out" >&2
    esc_fail "backup_restore: the restored schema is not current"
}
esc_ctl check >"$D/check.out" 2>&1 || {
    cat "$D/check.out" >&2
    esc_fail "backup_restore: escrowctl check failed on the restored database"
}
itest_invariants
itest_eq "$(books)" "$BEFORE 0 $((TOTAL - BEFORE))" "sold/held/available after the restore"

esc_step "the node sells on from the restored database: exactly the $((TOTAL - BEFORE)) left"
PORT=$(itest_port)
EP=tcp://127.0.0.1:$PORT
itest_node n1 "$PORT"
sell 200 after
itest_eq "$(books)" "$TOTAL 0 0" "sold/held/available after selling on"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'sale' AND state = 'converted'")" \
    "$TOTAL" "converted holds (the $BEFORE from before the backup and the $((TOTAL - BEFORE)) after)"
itest_invariants
esc_node_stop "$ITEST_NODE_PID" || esc_fail "backup_restore: n1 did not stop cleanly"

itest_pass
