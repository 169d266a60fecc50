#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# backup_restore.sh - the restore drill of docs/backup.md, against real
# processes: a coordinator and two managed nodes sell 600 units; pg_dump
# (custom format) runs while a sale is in flight; after the dump both nodes
# restart (their segments change owner) and sell 60 more, which the restore
# loses; the cluster is thrown away. A fresh PostgreSQL (new initdb, new
# port) gets pg_restore and escrowctl restore fence (refused on the live cluster); escrowctl
# migrate --status and check pass; the coordinator and the nodes start on
# it and sell on to an exact sold-out: 600 sold, nothing held or available,
# nothing oversold, conservation ok. No hold id a buyer was given by the lost
# cluster is given to another buyer by the restored one. An event-feed
# consumer that followed the lost cluster resumes from its restored cursor
# and is handed the confirmation of every unit sold after the restore (the
# transaction-id epoch step of docs/backup.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=600
DURING=240 # buyers of the sale the dump runs in
LOST=60    # buyers served after the dump, by nodes that changed owner

itest_begin backup_restore
[[ -x $ESC_BIN/escrow-load ]] || esc_fail "backup_restore: no escrow-load in ESC_BIN=$ESC_BIN"
D=$ITEST_DIR
# The lost cluster has been running for a while: its transaction ids are far
# ahead of a fresh cluster's (epoch 1 here), as they are in production.
esc_pg_xid_epoch 1 || esc_fail "backup_restore: cannot set the lost cluster's transaction-id epoch"

# Buyers $1 with key prefix $2 (each takes one unit and confirms); more args go to escrow-load.
sell() {
    local n=$1 prefix=$2
    shift 2
    shard_load --item sale --buyers "$n" --confirm 1 --release 0 --key-prefix "$prefix" \
        --seed 7 --deadline-ms 60000 --give-up-ms 30000 --quiet "$@" >"$D/load-$prefix.out" 2>&1
}
books() {
    itest_q "SELECT sold || ' ' || held || ' ' || available FROM conservation WHERE item_id = 'sale'"
}
sold_at_least() { (($(itest_q "SELECT sold FROM conservation WHERE item_id = 'sale'") >= $1)); }
start_daemons() {
    shard_coord_start
    shard_node_start n1
    shard_node_start n2
    shard_wait_served sale 60
}
# The event-feed consumer "orders" (escrowctl events --follow), output to $1.out.
follow_start() {
    setsid "$ESC_BIN/escrowctl" events t1 --follow --consumer orders >"$D/$1.out" 2>"$D/$1.log" &
    FOLLOW_PID=$!
    ESC_PIDS+=("$FOLLOW_PID")
    esc_wait_for 60 grep -q FEED-START "$D/$1.log" || esc_fail "backup_restore: follower $1 did not start"
}
follow_stop() {
    kill -TERM "$FOLLOW_PID"
    itest_wait_pid "$FOLLOW_PID" 30 "follower $1" || esc_fail "backup_restore: follower $1 did not exit 0"
}
# How many of the hold ids in file $1 the follower output $2 shows converted.
converted_seen() {
    awk 'NR == FNR { want[$1] = 1; next }
         / converted / { for (i = 1; i <= NF; i++) if ($i ~ /^hold=/) {
             h = substr($i, 6); if ((h in want) && !(h in seen)) { seen[h] = 1; n++ } } }
         END { print n + 0 }' "$1" "$2"
}
converted_seen_is() { [[ $(converted_seen "$1" "$2") == "$3" ]]; }
stop_daemons() {
    esc_node_stop "${SHARD_PID[n1]}" || esc_fail "backup_restore: n1 did not stop cleanly"
    esc_node_stop "${SHARD_PID[n2]}" || esc_fail "backup_restore: n2 did not stop cleanly"
    esc_node_stop "$SHARD_COORD_PID" || esc_fail "backup_restore: the coordinator did not stop cleanly"
}

esc_step "a coordinator and two nodes; pg_dump while $DURING buyers are buying"
esc_ctl item create t1 sale --total $TOTAL --segments 4 >/dev/null
start_daemons
follow_start lost
# 4 at a time with 100 ms of thinking each: the sale lasts >= 6 s however
# fast the machine, so the dump (taken at the 40th sale) runs inside it.
# Holds live 3 s, so the ones the dump catches in flight expire after the restore.
sell $DURING during --concurrency 4 --think-ms 100 --ttl-ms 3000 &
LOAD_PID=$!
ESC_PIDS+=("$LOAD_PID")
esc_wait_for 60 sold_at_least 40 || esc_fail "backup_restore: the sale did not reach 40 sold"
"$ESC_PG_BINDIR/pg_dump" --format=custom --file="$D/escrow.dump" "$ESCROW_DSN"
kill -0 "$LOAD_PID" 2>/dev/null || esc_fail "backup_restore: the sale ended before the dump did"
itest_wait_pid "$LOAD_PID" 120 "the sale" || esc_fail "backup_restore: the sale failed"

esc_step "after the dump: both nodes restart (new owners) and sell $LOST more, then the cluster is lost"
esc_node_stop "${SHARD_PID[n1]}" || esc_fail "backup_restore: n1 did not stop cleanly"
esc_node_stop "${SHARD_PID[n2]}" || esc_fail "backup_restore: n2 did not stop cleanly"
shard_node_start n1
shard_node_start n2
shard_wait_served sale 60
sell $LOST lost --concurrency 8 || esc_fail "backup_restore: the sale after the dump failed"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'lost%' AND state = 'converted'")" \
    $LOST "holds sold after the dump"
# What the buyers of the lost cluster were told: every hold id and its key.
itest_q "SELECT hold_id || ' ' || idempotency_key FROM holds" >"$D/lost-holds.txt"
OLD_PORT=$ESC_PG_PORT
# The fence is for a restored database before any daemon starts: refused
# while a coordinator leads this one, and nothing moves.
SEQ_BEFORE=$(itest_q "SELECT sum(hold_seq) FROM segments")
if esc_ctl restore fence >"$D/fence-live.out" 2>&1; then
    esc_fail "backup_restore: restore fence ran while the coordinator leads the database"
fi
grep -q "leads this database" "$D/fence-live.out" || {
    cat "$D/fence-live.out" >&2
    esc_fail "backup_restore: the refused fence does not say why"
}
itest_eq "$(itest_q "SELECT sum(hold_seq) FROM segments")" "$SEQ_BEFORE" "hold sequences after a refused fence"
follow_stop lost
stop_daemons
esc_pg_stop

esc_step "restore into a fresh PostgreSQL (new initdb, new port)"
esc_pg_start || esc_fail "backup_restore: cannot start the second PostgreSQL"
echo "lost cluster on port $OLD_PORT, restored one on port $ESC_PG_PORT"
itest_eq "$(itest_q "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" 0 \
    "tables in the fresh cluster before the restore"
"$ESC_PG_BINDIR/pg_restore" --no-owner --exit-on-error --dbname="$ESCROW_DSN" "$D/escrow.dump"
# The hold-id fence and the transaction-id epoch of docs/backup.md (the same commands).
esc_ctl restore fence >"$D/fence.out" 2>&1 || {
    cat "$D/fence.out" >&2
    esc_fail "backup_restore: restore fence failed on the restored database"
}
cat "$D/fence.out"
# A dump whose newest transaction changed the catalog, epochs of ids
# after every event (xid-epoch counts in epochs of 2^32 ids): one segment's
# cat_xid two epochs above every transaction id of the outbox.
itest_q "UPDATE segments SET cat_xid = ((SELECT max(txid)::text::numeric FROM outbox) + 8589934592)::text::xid8
         WHERE segment_id = (SELECT min(segment_id) FROM segments)" >/dev/null
EPOCH=$(esc_ctl restore xid-epoch) || esc_fail "backup_restore: restore xid-epoch failed"
EPOCH=${EPOCH%%$'\n'*}
[[ $EPOCH =~ ^[0-9]+$ ]] || esc_fail "backup_restore: restore xid-epoch printed '$EPOCH'"
esc_pg_xid_epoch "$EPOCH" || esc_fail "backup_restore: cannot set the transaction-id epoch"
# No catalog row is ahead of the new cluster's ids: the coordinator's first
# read of changes after its full one finds none of the dump's rows again.
itest_eq "$(itest_q "SELECT (SELECT count(*) FROM items WHERE cat_xid >= pg_current_xact_id())
                          + (SELECT count(*) FROM segments WHERE cat_xid >= pg_current_xact_id())
                          + (SELECT count(*) FROM transfers WHERE cat_xid >= pg_current_xact_id())
                          + (SELECT count(*) FROM nodes WHERE cat_xid >= pg_current_xact_id())")" 0 \
    "catalog rows whose cat_xid is ahead of the restored cluster's transaction ids"
esc_ctl migrate --status >"$D/status.out" || {
    cat "$D/status.out" >&2
    esc_fail "backup_restore: the restored schema is not current"
}
esc_ctl check >"$D/check.out" 2>&1 || {
    cat "$D/check.out" >&2
    esc_fail "backup_restore: escrowctl check failed on the restored database"
}
itest_invariants
read -r DUMP_SOLD DUMP_HELD _ <<<"$(books)"
echo "the dump: $DUMP_SOLD sold, $DUMP_HELD held in flight"
((DUMP_SOLD >= 40 && DUMP_SOLD < DURING)) ||
    esc_fail "backup_restore: the dump holds $DUMP_SOLD sold, not a point inside the sale"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'lost%'")" 0 \
    "holds of after the dump in the restored database"

esc_step "the daemons start on the restored database and sell on to an exact sold-out"
start_daemons
no_holds_in_flight() { [[ $(itest_q "SELECT held FROM conservation WHERE item_id = 'sale'") == 0 ]]; }
esc_wait_for 60 no_holds_in_flight || esc_fail "backup_restore: the holds of the dump did not expire"
sell $((TOTAL + 100)) after --concurrency 20 || esc_fail "backup_restore: the sale after the restore failed"
itest_eq "$(books)" "$TOTAL 0 0" "sold/held/available after selling on"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE idempotency_key LIKE 'after%' AND state = 'converted'")" \
    $((TOTAL - DUMP_SOLD)) "holds sold after the restore"
itest_invariants

esc_step "the consumer resumes from its restored cursor and sees every sale after the restore"
itest_q "SELECT hold_id FROM holds WHERE idempotency_key LIKE 'after%' AND state = 'converted'" \
    >"$D/after-holds.txt"
follow_start restored
esc_wait_for 60 converted_seen_is "$D/after-holds.txt" "$D/restored.out" $((TOTAL - DUMP_SOLD)) ||
    esc_fail "backup_restore: the consumer saw $(converted_seen "$D/after-holds.txt" "$D/restored.out")" \
        "of the $((TOTAL - DUMP_SOLD)) confirmations after the restore"
follow_stop restored

esc_step "no hold id of the lost cluster is given to another buyer"
itest_q "CREATE TABLE lost (hold_id bigint, key text)" >/dev/null
esc_psql "\\copy lost FROM '$D/lost-holds.txt' WITH (DELIMITER ' ')"
itest_eq "$(itest_q "SELECT count(*) FROM lost")" "$(grep -c . "$D/lost-holds.txt")" "lost-cluster holds loaded"
itest_eq "$(itest_q "SELECT count(*) FROM lost l JOIN holds h USING (hold_id) WHERE h.idempotency_key <> l.key")" \
    0 "hold ids of the lost cluster given to another key"
stop_daemons

itest_pass
