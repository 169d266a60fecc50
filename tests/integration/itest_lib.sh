#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# itest_lib.sh - what the integration tests in this directory share, on top
# of tests/support/lib.sh (which it sources: the EXIT trap that stops every
# process and the private PostgreSQL comes from there).
#
# Environment (defaults let a human run a test by hand):
#   ESC_BIN    binaries (escrow-segment, escrowctl, escrow-load); default /tmp/bit/bin
#   ESC_SRC    the source tree; default: two levels above this file
#   ESC_PROBE  the esc_probe driver; default: ESC_BIN/../tests/esc_probe, then ESC_BIN/esc_probe
#   ESC_KEEP   1 = keep the work directory (node logs, records) even on success
#   ESC_TIMING_STRICT  1 = a timing target missed fails the test (default: a note)
#
# Functions:
#   itest_begin NAME            work dir ($ITEST_DIR), private PostgreSQL, schema; starts the clock
#   itest_pass                  checks the time budget (itest_timing), prints "PASS NAME (N s)"
#   itest_timing ACTUAL_MS TARGET_MS WHAT   a timing target (a takeover within lease + 1 s,
#                               a revocation within the reload period, the test's budget):
#                               over it, a note on stderr; a failure only with
#                               ESC_TIMING_STRICT=1. A loaded machine (sanitizers, shared
#                               cores) misses such targets with nothing wrong, so the
#                               default run asserts what happened, not how fast
#   itest_port                  a free port (echo)
#   itest_node NODE_ID PORT [ARGS...]   start escrow-segment; sets ITEST_NODE_PID and
#                               ITEST_NODE_LOG ($ITEST_DIR/node<n>-NODE_ID-PORT.log)
#   itest_probe ARGS...         run esc_probe
#   itest_field NAME LINE       the value of NAME=... in LINE (echo; '?' if there is none)
#   itest_status LINE           the first word of a probe outcome line (echo)
#   itest_q SQL                 one value from PostgreSQL (echo)
#   itest_eq ACTUAL EXPECTED MSG  fail unless equal
#   itest_kill9 PID             SIGKILL a process started here, reap it, forget it
#   itest_wait_pid PID TIMEOUT_S WHAT   wait for a background process; on timeout print its
#                               threads' stacks (if gdb is installed), kill it and fail
#   itest_lock NAME SQL         a PostgreSQL session (application_name NAME) runs BEGIN; SQL
#                               (a SELECT ... FOR UPDATE, a LOCK TABLE) and keeps its
#                               transaction, and so its locks, open; returns once SQL is done
#   itest_unlock NAME           ends that session (its transaction rolls back: SQL changed
#                               nothing) and waits for its psql
#   itest_check_record FILE    an esc_probe recording against the database: every
#                               acknowledged hold, confirm and release is stored
#   itest_invariants [ITEM_LIKE]  escrowctl check, conservation, segment_holds_agree,
#                               counters >= 0, one terminal outbox event per ended hold,
#                               one 'held' event per hold, none for live ones

ITEST_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ESC_SRC=${ESC_SRC:-$(cd "$ITEST_LIB_DIR/../.." && pwd)}
ESC_BIN=${ESC_BIN:-/tmp/bit/bin}
export ESC_SRC ESC_BIN
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

if [[ -z ${ESC_PROBE:-} ]]; then
    for _p in "$ESC_BIN/../tests/esc_probe" "$ESC_BIN/esc_probe"; do
        if [[ -x $_p ]]; then
            ESC_PROBE=$_p
            break
        fi
    done
fi

# Seconds a test should take (the brief: < 60 s on a 2-core machine); a
# timing target (itest_timing): ctest's TIMEOUT is what bounds a hang.
ITEST_BUDGET_S=${ITEST_BUDGET_S:-60}

itest_begin() {
    ITEST_NAME=$1
    ITEST_T0=$SECONDS
    [[ -x $ESC_BIN/escrow-segment && -x $ESC_BIN/escrowctl ]] ||
        esc_fail "$ITEST_NAME: escrow-segment/escrowctl not found in ESC_BIN=$ESC_BIN"
    [[ -n ${ESC_PROBE:-} && -x $ESC_PROBE ]] ||
        esc_fail "$ITEST_NAME: esc_probe not found (set ESC_PROBE or build the esc_probe target)"
    ITEST_DIR=$(mktemp -d "/tmp/escrow-itest-$ITEST_NAME.XXXXXX")
    esc_on_exit _itest_finish
    esc_pg_start || esc_fail "$ITEST_NAME: cannot start PostgreSQL"
    esc_ctl migrate >"$ITEST_DIR/migrate.log" 2>&1 || {
        cat "$ITEST_DIR/migrate.log" >&2
        esc_fail "$ITEST_NAME: escrowctl migrate failed"
    }
}

# Runs at exit (before processes and PostgreSQL are stopped): keeps the work
# directory of a failed run and says where it is.
_itest_finish() {
    if [[ -z ${ITEST_PASSED:-} || ${ESC_KEEP:-0} == 1 ]]; then
        echo "itest: logs kept in $ITEST_DIR" >&2
        for f in "$ITEST_DIR"/*.log; do
            [[ -f $f ]] || continue
            echo "--- last lines of $f" >&2
            tail -n 15 "$f" >&2
        done
    else
        rm -rf "$ITEST_DIR"
    fi
}

itest_timing() {
    local actual_ms=$1 target_ms=$2 what=$3
    ((actual_ms > target_ms)) || return 0
    if [[ ${ESC_TIMING_STRICT:-0} == 1 ]]; then
        esc_fail "$ITEST_NAME: $what took $actual_ms ms, over its target of $target_ms ms"
    fi
    echo "note: $ITEST_NAME: $what took $actual_ms ms, over its target of $target_ms ms" \
        "(a loaded machine? ESC_TIMING_STRICT=1 makes this a failure)" >&2
}

itest_pass() {
    local took=$((SECONDS - ITEST_T0))
    itest_timing $((took * 1000)) $((ITEST_BUDGET_S * 1000 - 1)) "the whole test"
    ITEST_PASSED=1
    echo "PASS $ITEST_NAME (${took} s)"
}

itest_port() {
    esc_free_port
}

ITEST_NODE_STARTS=0
itest_node() {
    local node=$1 port=$2
    shift 2
    ITEST_NODE_STARTS=$((ITEST_NODE_STARTS + 1))
    ITEST_NODE_LOG=$ITEST_DIR/node$ITEST_NODE_STARTS-$node-$port.log
    esc_node_start "$node" "tcp://127.0.0.1:$port" "$ITEST_NODE_LOG" "$@"
    ITEST_NODE_PID=$ESC_NODE_PID
}

itest_probe() {
    "$ESC_PROBE" "$@"
}

itest_field() {
    local name=$1 line=$2 w
    for w in $line; do
        if [[ $w == "$name="* ]]; then
            echo "${w#*=}"
            return 0
        fi
    done
    echo "?" # missing: the caller's assertion names what it expected
}

itest_status() {
    echo "${1%% *}"
}

# itest_metric PORT NAME -> NAME's value on http://127.0.0.1:PORT/metrics
# (0 while it is not exported yet)
itest_metric() {
    local v
    v=$(curl -sfS --max-time 30 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }')
    echo "${v:-0}"
}

itest_q() {
    esc_psql "$1"
}

itest_eq() {
    esc_assert_eq "$1" "$2" "$ITEST_NAME: $3"
}

# Every invariant the database can check by itself. $1 limits the per-hold
# checks to items LIKE $1 (default all).
# Drops PID from lib.sh's cleanup list (it has ended and was reaped).
_itest_forget() {
    local keep=() p
    for p in "${ESC_PIDS[@]}"; do
        [[ $p == "$1" ]] || keep+=("$p")
    done
    ESC_PIDS=("${keep[@]}")
}

itest_kill9() {
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    _itest_forget "$1"
}

itest_wait_pid() {
    local pid=$1 timeout_s=$2 what=$3 rc=0
    local deadline=$((SECONDS + timeout_s))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            echo "itest: $what (pid $pid) still running after ${timeout_s} s" >&2
            if command -v gdb >/dev/null 2>&1; then
                gdb -p "$pid" -batch -ex 'thread apply all bt' >"$ITEST_DIR/hang-$pid.txt" 2>&1 || true
                echo "itest: its stacks are in $ITEST_DIR/hang-$pid.txt" >&2
                grep -E '^(Thread|#)' "$ITEST_DIR/hang-$pid.txt" | head -n 60 >&2 || true
            fi
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            _itest_forget "$pid"
            esc_fail "$ITEST_NAME: $what hung"
        fi
        sleep 0.1
    done
    wait "$pid" || rc=$?
    _itest_forget "$pid"
    return "$rc"
}

declare -A ITEST_LOCK_PIDS=()
itest_lock() {
    local name=$1 sql=$2
    PGAPPNAME=$name "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 \
        -c "BEGIN; $sql; SELECT pg_sleep(600);" >"$ITEST_DIR/lock-$name.log" 2>&1 &
    ITEST_LOCK_PIDS[$name]=$!
    ESC_PIDS+=("$!")
    esc_wait_sql 30 "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$name'
        AND wait_event = 'PgSleep'" 1 ||
        esc_fail "$ITEST_NAME: the session $name did not take its lock: $(cat "$ITEST_DIR/lock-$name.log")"
}
itest_unlock() {
    local name=$1
    [[ -n ${ITEST_LOCK_PIDS[$name]:-} ]] || return 0
    itest_q "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE application_name = '$name'" >/dev/null
    itest_wait_pid "${ITEST_LOCK_PIDS[$name]}" 30 "the lock session $name" || true # terminated: psql exits 2
    unset "ITEST_LOCK_PIDS[$name]"
}

# A recording (esc_probe record: "R|C|X key hold state n" per acknowledged
# reserve, confirm, release) against the database: every acknowledged hold
# is there with its key, every confirm converted, every release cancelled,
# no key acknowledged with two holds. Leaves the lines in table rec.
itest_check_record() {
    local rec=$1
    itest_q "CREATE TABLE rec (kind text, key text, hold_id bigint, state text, n bigint)" >/dev/null
    esc_psql "\\copy rec FROM '$rec' WITH (DELIMITER ' ')"
    itest_eq "$(itest_q "SELECT count(*) FROM rec")" "$(grep -c . "$rec")" "recorded lines loaded"
    itest_eq "$(itest_q "SELECT count(*) FROM rec r LEFT JOIN holds h
        ON h.hold_id = r.hold_id AND h.idempotency_key = r.key AND h.qty = 1
        WHERE h.hold_id IS NULL")" 0 "acknowledged outcomes whose hold is missing"
    itest_eq "$(itest_q "SELECT count(*) FROM rec r JOIN holds h USING (hold_id)
        WHERE r.kind = 'C' AND NOT (h.state = 'converted' AND h.qty_sold = 1)")" 0 \
        "acknowledged confirms not stored as converted"
    itest_eq "$(itest_q "SELECT count(*) FROM rec r JOIN holds h USING (hold_id)
        WHERE r.kind = 'X' AND h.state <> 'cancelled'")" 0 \
        "acknowledged releases not stored as cancelled"
    itest_eq "$(itest_q "SELECT count(*) FROM (SELECT key FROM rec WHERE kind = 'R'
        GROUP BY key HAVING count(DISTINCT hold_id) > 1) x")" 0 \
        "keys acknowledged with two different holds"
}

itest_invariants() {
    local like=${1:-%} out
    if ! out=$(esc_ctl check 2>&1); then
        echo "$out" >&2
        esc_fail "$ITEST_NAME: escrowctl check reports a violation"
    fi
    itest_eq "$(itest_q "SELECT count(*) FROM conservation WHERE NOT ok")" 0 \
        "items violating conservation"
    itest_eq "$(itest_q "SELECT count(*) FROM segment_holds_agree WHERE NOT ok")" 0 \
        "segments whose counters disagree with their holds"
    itest_eq "$(itest_q "SELECT count(*) FROM segments WHERE available < 0 OR held < 0 OR sold < 0")" 0 \
        "segments with a counter below zero"
    itest_eq "$(itest_q "SELECT count(*) FROM conservation WHERE held + sold > total")" 0 \
        "items with held + sold above total (oversold)"
    # Per hold: exactly one 'held' event; exactly one terminal event once it
    # ended, none while it is held; the terminal event names the stored state.
    # One pass over the outbox (it has no index on hold_id).
    itest_eq "$(itest_q "WITH o AS (
            SELECT hold_id, count(*) FILTER (WHERE kind = 'held') AS held_ev,
                   count(*) FILTER (WHERE kind IN ('converted', 'cancelled', 'expired')) AS term_ev,
                   max(kind) FILTER (WHERE kind IN ('converted', 'cancelled', 'expired')) AS term_kind
            FROM outbox WHERE hold_id IS NOT NULL GROUP BY hold_id)
        SELECT count(*) FILTER (WHERE coalesce(o.held_ev, 0) <> 1) || ' ' ||
               count(*) FILTER (WHERE coalesce(o.term_ev, 0) <> CASE WHEN h.state = 'held' THEN 0 ELSE 1 END) || ' ' ||
               count(*) FILTER (WHERE h.state <> 'held' AND o.term_kind IS DISTINCT FROM h.state)
        FROM holds h LEFT JOIN o USING (hold_id) WHERE h.item_id LIKE '$like'")" "0 0 0" \
        "holds with a 'held' event count other than 1 / a terminal event count other than 1 (0 while held) / a terminal event that disagrees with the state"
    itest_eq "$(itest_q "SELECT count(*) FROM (SELECT DISTINCT hold_id FROM outbox WHERE hold_id IS NOT NULL) o
        WHERE NOT EXISTS (SELECT 1 FROM holds h WHERE h.hold_id = o.hold_id)")" 0 \
        "outbox events of holds that do not exist"
}
