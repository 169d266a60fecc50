#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# coord_standby.sh - the leading coordinator dies mid-sale; the standby
# takes over. Two coordinators on one database (leader lease 2 s): the
# first leads, the second stands by and binds nothing. Nodes and buyers
# (escrow-load through libescrow's routing) are given both endpoints. A
# skewed sale keeps segments running dry, so transfers are always being
# planned; the leader is killed (kill -9) while one is open, before the
# item collapses. Then:
#   - the standby leads (COORD-READY, its catalog read) within lease + 1 s
#     of the leader's stop (frozen for the check, then killed; a timing
#     target, see itest_timing; the figure is printed);
#   - every transfer completes, and once: none left open, each received
#     transfer has its one receive event (per segment, units and count);
#   - the item still collapses near sellout, after the takeover;
#   - the sale completes exactly: every unit sold once, 0 oversold,
#     conservation held in every sample and in escrowctl check.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

TOTAL=3000
LEADER_LEASE_MS=2000

itest_begin coord_standby
esc_ctl item create t1 sb --total $TOTAL --segments 8 >/dev/null
shard_coord_start --leader-lease-ms $LEADER_LEASE_MS
LEADER_PID=$SHARD_COORD_PID
LEADER_LOG=$SHARD_COORD_LOG
shard_standby_start --leader-lease-ms $LEADER_LEASE_MS
grep -h 'COORD-STANDBY' "$SHARD_STANDBY_LOG"
itest_eq "$(grep -c 'COORD-READY' "$SHARD_STANDBY_LOG" || true)" 0 "catalog reads of the standby"
# everyone is given both coordinators; only the leader answers
SHARD_COORD_URL="$SHARD_COORD_URL,$SHARD_STANDBY_URL"
SHARD_PUB_URL="$SHARD_PUB_URL,$SHARD_STANDBY_PUB"
shard_node_start n1
shard_node_start n2
shard_wait_served sb 60
shard_sampler_start sb

esc_step "a skewed sale: most buyers on one segment, which keeps asking for stock"
shard_load --item sb --buyers 4000 --concurrency 32 --confirm 1 --release 0 --skew 95:12 \
    --segments 8 --give-up-ms 30000 --deadline-ms 30000 --key-prefix a --quiet \
    >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" &
LOAD_PID=$!
ESC_PIDS+=("$LOAD_PID")

# The kill comes when at least 5 % sold, a transfer is open and the item
# has not collapsed yet. The leader is frozen (SIGSTOP) while that is
# checked, so that nothing it would do between the check and the kill
# (finish the transfer, collapse the item) can happen; when the check fails
# it runs on (SIGCONT) and the check is tried again. The check is one query
# on a psql session kept open (a new psql per check took up to a second on
# a loaded machine, a good part of the leader lease). The transfers open at
# the kill need the new leader: the dead one sends no more commands (at most
# the step a node was already told to do can still be committed).
coproc CHECK_SQL { exec "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q 2>>"$ITEST_DIR/check_sql.err"; }
check_q() { # SQL -> its output (errors: none, see check_sql.err)
    local line out=
    printf '%s;\n\\echo __done__\n' "$1" >&"${CHECK_SQL[1]}"
    while IFS= read -r -t 30 line <&"${CHECK_SQL[0]}"; do
        [[ $line == __done__ ]] && { printf '%s' "$out"; return 0; }
        out+=$line
    done
    return 1
}
at_kill() { # -> "N (id:state ...) SOLD" when the kill should come, else nothing
    check_q "SELECT count(*) || ' (' || string_agg(transfer_id || ':' || state, ' ') || ') '
            || (SELECT sum(sold) FROM segments WHERE item_id = 'sb')
        FROM transfers WHERE item_id = 'sb' AND state IN ('planned', 'sent')
        HAVING count(*) > 0
            AND (SELECT sum(sold) FROM segments WHERE item_id = 'sb') >= $((TOTAL / 20))
            AND (SELECT tail_segment IS NULL FROM items WHERE item_id = 'sb')"
}
AT_KILL=
frozen_kill() {
    t0=$(date +%s%3N) # when the check leads to the kill, the leader's last act was before this
    kill -STOP "$LEADER_PID"
    AT_KILL=$(at_kill)
    if [[ -n $AT_KILL ]]; then
        kill -KILL "$LEADER_PID"
        FROZEN_MS=$(($(date +%s%3N) - t0))
        return 0
    fi
    kill -CONT "$LEADER_PID"
    return 1
}
esc_wait_for 60 frozen_kill || esc_fail "no transfer was open before the collapse"
CHECK_SQL_IN=${CHECK_SQL[1]}
exec {CHECK_SQL_IN}>&- # psql ends
esc_step "kill -9 of the leader (pid $LEADER_PID)"
wait "$LEADER_PID" 2>/dev/null || true
_itest_forget "$LEADER_PID"
OPEN=${AT_KILL% *}
echo "at the kill: ${AT_KILL##* } sold, open transfers: $OPEN (the leader frozen for $FROZEN_MS ms before)"
[[ ${OPEN%% *} -gt 0 ]] || esc_fail "no transfer was in flight at the kill (the test proved nothing)"

esc_step "the standby takes over"
standby_ready() { grep -q 'COORD-READY' "$SHARD_STANDBY_LOG"; }
esc_wait_for 30 standby_ready || {
    tail -n 20 "$SHARD_STANDBY_LOG" >&2
    esc_fail "the standby did not lead within 30 s"
}
log_ms() { # WORD LOG -> the first WORD line's time, ms since the epoch
    local line
    line=$(grep -m1 "$1" "$2")
    date -d "${line%% *}" +%s%3N
}
lead_ms=$(($(log_ms COORD-LEADER "$SHARD_STANDBY_LOG") - t0))
ready_ms=$(($(log_ms COORD-READY "$SHARD_STANDBY_LOG") - t0))
grep -h 'COORD-LEADER\|COORD-READY' "$SHARD_STANDBY_LOG"
echo "the standby took the lease $lead_ms ms and led (catalog read) $ready_ms ms after the leader" \
    "stopped (frozen, then killed)" \
    "(leader lease $LEADER_LEASE_MS ms)"
((lead_ms > 0)) || esc_fail "the standby took the lease before the leader stopped?"
itest_timing "$ready_ms" $((LEADER_LEASE_MS + 1000)) "the takeover (leader lease + 1 s)"
itest_eq "$(itest_q "SELECT epoch FROM coord_leader")" 2 "the lease's epoch (the second leader)"

esc_step "the sale completes"
itest_wait_pid "$LOAD_PID" 120 "escrow-load" ||
    { cat "$ITEST_DIR/load.out" "$ITEST_DIR/load.log" >&2; esc_fail "escrow-load failed"; }
line=$(grep '^RESULT' "$ITEST_DIR/load.out")
echo "$line"
itest_eq "$(itest_field holds_ok "$line")" $TOTAL "holds acknowledged"
itest_eq "$(itest_field stranded "$line")" 0 "units stranded"

no_open_transfer() {
    [[ $(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'sb' AND state IN ('planned', 'sent')") == 0 ]]
}
esc_wait_for 30 no_open_transfer || esc_fail "transfers still open after the sale"
echo "transfers: $(itest_q "SELECT string_agg(state || '=' || n, ' ') FROM (SELECT state, count(*) AS n
    FROM transfers WHERE item_id = 'sb' GROUP BY state ORDER BY state) x")"
# Per receiving segment: the units and the count of its received transfers
# are those of its receive events (a transfer received twice would differ).
itest_eq "$(itest_q "WITH t AS (SELECT to_segment AS seg, sum(qty) AS q, count(*) AS n FROM transfers
        WHERE item_id = 'sb' AND state = 'received' AND to_segment IS NOT NULL GROUP BY 1),
    o AS (SELECT segment_id AS seg, sum(qty) AS q, count(*) AS n FROM outbox
        WHERE item_id = 'sb' AND kind = 'transfer_received' GROUP BY 1)
    SELECT count(*) FROM t FULL JOIN o USING (seg) WHERE t.q IS DISTINCT FROM o.q OR t.n IS DISTINCT FROM o.n")" \
    0 "segments whose received transfers and receive events differ"
after=$(itest_q "SELECT count(*) FROM transfers WHERE item_id = 'sb' AND state = 'received'
    AND received_at > to_timestamp($t0 / 1000.0)")
echo "transfers received after the kill: $after"
((after > 0)) || esc_fail "no transfer was received after the kill: the new leader moved no stock"

esc_step "the collapse came from the new leader"
itest_eq "$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'sb' AND kind = 'collapsed'")" 1 \
    "collapse events"
itest_eq "$(itest_q "SELECT at > to_timestamp($t0 / 1000.0) FROM outbox WHERE item_id = 'sb' AND kind = 'collapsed'")" \
    t "the collapse is after the kill"

shard_sampler_stop
itest_eq "$(itest_q "SELECT sum(sold) || ' ' || sum(held) || ' ' || sum(available) FROM segments WHERE item_id = 'sb'")" \
    "$TOTAL 0 0" "sold held available"
itest_eq "$(itest_q "SELECT count(*) FROM holds WHERE item_id = 'sb' AND state = 'converted'")" $TOTAL \
    "holds converted (each unit sold once)"
itest_invariants sb
itest_pass
