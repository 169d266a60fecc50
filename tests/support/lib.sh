#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# lib.sh - helpers shared by the integration tests (tests/integration/*.sh) and
# the demo (tests/support/demo.sh). Source it; it sources pg.sh.
#
# Sourcing installs an EXIT trap (and INT/TERM traps that exit through it)
# that stops every process started with esc_node_start or esc_spawn and stops
# the private PostgreSQL, also on failure or Ctrl-C. Add your own cleanup with
# esc_on_exit "command"; do not replace the EXIT trap.
#
# Environment: ESC_BIN = directory with escrow-segment, escrowctl, escrow-load
# (required by the functions that start them); ESC_SRC = the source tree
# (optional). Functions:
#   esc_step MSG                  print a step for humans ("==> MSG", with the time)
#   esc_fail MSG                  print "FAIL: MSG" on stderr and exit 1
#   esc_assert_eq ACTUAL EXPECTED MSG   esc_fail unless equal (as strings)
#   esc_free_port                 print a free TCP port on 127.0.0.1
#   esc_psql SQL                  run SQL in $ESCROW_DSN (psql -At -X, ON_ERROR_STOP); prints rows.
#                                 SQL travels on psql's command line: statements only, never
#                                 data whose size grows with throughput (the kernel refuses
#                                 one argument over 128 KiB: "Argument list too long")
#   esc_psql_with_rows TABLE SQL < LINES
#                                 COPY stdin (one value per line; no tab or backslash) into
#                                 a temporary table TABLE (v text), then run SQL in the same
#                                 session; prints its rows. The way to hand psql a list
#                                 (acknowledged keys, hold ids) of any length
#   esc_ctl ARGS...               run $ESC_BIN/escrowctl ARGS...
#   esc_ctl_expect DIR RC ARGS... run escrowctl ARGS (stdout to DIR/out, stderr to DIR/err);
#                                 esc_fail (showing both) unless it exits with RC
#   esc_wait_for TIMEOUT_S CMD... poll CMD every 0.1 s until it succeeds; 1 on timeout.
#                                 CMD runs again on every try, but its words are expanded
#                                 ONCE, by the caller: `esc_wait_for 5 test "$(query)" = x`
#                                 tests one stale value for 5 s. Put the condition in a
#                                 function (or use esc_wait_sql); tests/support/lint_shell.sh
#                                 refuses "$(" and backquotes on an esc_wait_for line.
#                                 TIMEOUT_S only bounds a hang: make it generous (30 s and
#                                 more); a passing run never waits for it
#   esc_wait_sql TIMEOUT_S SQL WANT  poll SQL (esc_psql, run again on every try) until it
#                                 prints WANT; 1 on timeout, with the last value on stderr
#   esc_spawn LOGFILE CMD...      start CMD in the background (stdout+stderr to LOGFILE),
#                                 tracked for cleanup; sets ESC_SPAWN_PID
#   esc_node_start NODE_ID ENDPOINT LOGFILE [EXTRA_ARGS...]
#                                 start escrow-segment and wait (15 s) for its SEG-READY
#                                 log line; sets ESC_NODE_PID; on timeout or early exit
#                                 prints the log tail and fails (exit 1)
#   esc_node_stop PID             SIGTERM (to its process group), wait up to 10 s, then
#                                 SIGKILL; returns its exit status (0 = clean shutdown)
#   esc_on_exit CMD               run CMD (eval'd) at exit, before the processes are killed
#   esc_cleanup                   what the EXIT trap runs; idempotent
#   esc_cluster_start DIR [ARGS...]  a local cluster (tests/support/cluster.sh start DIR
#                                 --watch $$ ARGS: PostgreSQL, coordinator, managed nodes);
#                                 sources DIR/env (ESCROW_DSN, ESCROW_COORDINATOR,
#                                 ESC_CLUSTER_*) and stops the cluster at exit, before the
#                                 esc_on_exit hooks; fails (exit 1)
#                                 if it cannot start
#   esc_cluster_stop DIR          stop it now (tests/support/cluster.sh stop DIR)
#   esc_cluster_node_ep NODE / esc_cluster_node_pid NODE   echo a cluster node's endpoint / pid
#   esc_cluster_wait_served TENANT ITEM   wait (60 s) until every segment of the item is
#                                 owned by a node that is up; fails (exit 1) otherwise

_esc_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/support/pg.sh
source "$_esc_lib_dir/pg.sh"

# Seconds a node gets to log SEG-READY, and to exit after SIGTERM: bounds on
# a hang, generous so that a loaded machine (sanitizers, shared cores) never
# reaches them in a passing run.
ESC_NODE_READY_S=${ESC_NODE_READY_S:-60}
ESC_NODE_STOP_S=${ESC_NODE_STOP_S:-30}

ESC_PIDS=()
ESC_EXIT_HOOKS=()
ESC_CLUSTER_DIRS=() # stopped at exit before the hooks run (a hook may remove the directory)

esc_step() {
    printf '\n==> [%s] %s\n' "$(date +%H:%M:%S)" "$*"
}

esc_fail() {
    echo "FAIL: $*" >&2
    exit 1
}

esc_assert_eq() {
    if [[ "$1" != "$2" ]]; then
        esc_fail "${3:-values differ}: got '$1', expected '$2'"
    fi
}

esc_psql() {
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 -c "$1"
}

esc_psql_with_rows() {
    local table=$1 sql=$2
    {
        printf 'CREATE TEMP TABLE %s (v text);\nCOPY %s (v) FROM STDIN;\n' "$table" "$table"
        awk 1 # every line terminated, also the last one
        printf '\\.\n%s\n' "$sql"
    } | "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -At -X -q -v ON_ERROR_STOP=1 -f -
}

esc_ctl() {
    "$ESC_BIN/escrowctl" "$@"
}

esc_ctl_expect() {
    local dir=$1 want=$2 rc=0
    shift 2
    esc_ctl "$@" >"$dir/out" 2>"$dir/err" || rc=$?
    if [[ $rc -ne $want ]]; then
        cat "$dir/out" "$dir/err" >&2
        esc_fail "escrowctl $* exited $rc, expected $want"
    fi
}

esc_wait_for() {
    local timeout_s=$1
    shift
    local deadline=$((SECONDS + timeout_s))
    until "$@"; do
        if ((SECONDS >= deadline)); then
            return 1
        fi
        sleep 0.1
    done
}

_esc_sql_is() {
    [[ $(esc_psql "$1" 2>/dev/null) == "$2" ]]
}

esc_wait_sql() {
    local timeout_s=$1 sql=$2 want=$3
    esc_wait_for "$timeout_s" _esc_sql_is "$sql" "$want" && return 0
    echo "esc_wait_sql: after ${timeout_s} s '$sql' prints '$(esc_psql "$sql" 2>&1)', not '$want'" >&2
    return 1
}

esc_on_exit() {
    ESC_EXIT_HOOKS+=("$1")
}

# Each spawned process leads its own process group (setsid execs in place, so
# $! is the process itself and `wait` works): stopping it signals the group,
# so helpers it forked do not outlive it.
esc_spawn() {
    local log=$1
    shift
    setsid "$@" >"$log" 2>&1 &
    ESC_SPAWN_PID=$!
    ESC_PIDS+=("$ESC_SPAWN_PID")
}

_esc_node_ready() {
    grep -q 'SEG-READY' "$1" 2>/dev/null
}

esc_node_start() {
    local node=$1 endpoint=$2 log=$3
    shift 3
    [[ -x ${ESC_BIN:-}/escrow-segment ]] || esc_fail "no escrow-segment in ESC_BIN='${ESC_BIN:-}'"
    [[ -n ${ESCROW_DSN:-} ]] || esc_fail "esc_node_start: ESCROW_DSN is not set"
    esc_spawn "$log" "$ESC_BIN/escrow-segment" --node-id "$node" --dsn "$ESCROW_DSN" \
        --listen "$endpoint" "$@"
    ESC_NODE_PID=$ESC_SPAWN_PID
    local deadline=$((SECONDS + ESC_NODE_READY_S))
    until _esc_node_ready "$log"; do
        if ! kill -0 "$ESC_NODE_PID" 2>/dev/null; then
            echo "--- last lines of $log" >&2
            tail -n 30 "$log" >&2
            esc_fail "node $node exited before it was ready"
        fi
        if ((SECONDS >= deadline)); then
            echo "--- last lines of $log" >&2
            tail -n 30 "$log" >&2
            esc_fail "node $node did not log SEG-READY within ${ESC_NODE_READY_S} s"
        fi
        sleep 0.1
    done
}

_esc_forget_pid() {
    local keep=() p
    for p in "${ESC_PIDS[@]}"; do
        [[ $p == "$1" ]] || keep+=("$p")
    done
    ESC_PIDS=("${keep[@]}")
}

# Signals PID, waits for it to end (SIGKILL after ESC_NODE_STOP_S), reaps it.
_esc_terminate() {
    local pid=$1 deadline=$((SECONDS + ESC_NODE_STOP_S)) rc=0
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            echo "warning: pid $pid ignored SIGTERM for ${ESC_NODE_STOP_S} s; SIGKILL" >&2
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.1
    done
    wait "$pid" 2>/dev/null || rc=$?
    # whatever else is left in its group
    kill -KILL -- "-$pid" 2>/dev/null || true
    return "$rc"
}

esc_node_stop() {
    local pid=$1 rc=0
    _esc_terminate "$pid" || rc=$?
    _esc_forget_pid "$pid"
    return "$rc"
}

esc_cluster_start() {
    local dir=$1
    shift
    bash "$_esc_lib_dir/cluster.sh" start "$dir" --watch "$$" "$@" >/dev/null ||
        esc_fail "the local cluster did not start (logs in $dir)"
    ESC_CLUSTER_DIRS+=("$dir")
    # shellcheck disable=SC1091
    source "$dir/env"
}

esc_cluster_stop() {
    bash "$_esc_lib_dir/cluster.sh" stop "$1"
}

esc_cluster_node_ep() {
    local v=ESC_CLUSTER_NODE_EP_$1
    echo "${!v}"
}

esc_cluster_node_pid() {
    local v=ESC_CLUSTER_NODE_PID_$1
    echo "${!v}"
}

_esc_served() {
    [[ $(esc_psql "SELECT count(*) FILTER (WHERE n.state IS DISTINCT FROM 'up' OR s.epoch = 0)
                   FROM segments s LEFT JOIN nodes n USING (node_id)
                   WHERE s.tenant_id = '$1' AND s.item_id = '$2' AND s.state <> 'retired'") == 0 ]]
}

esc_cluster_wait_served() {
    esc_wait_for 60 _esc_served "$1" "$2" ||
        esc_fail "the segments of $1/$2 were not placed on live nodes within 60 s"
}

esc_cleanup() {
    local rc=$? hook p
    trap - EXIT
    # The clusters first: a hook that removes a work directory would take
    # their pid files with it and leave their daemons running.
    for p in "${ESC_CLUSTER_DIRS[@]}"; do
        bash "$_esc_lib_dir/cluster.sh" stop "$p" >/dev/null 2>&1 || true
    done
    ESC_CLUSTER_DIRS=()
    for hook in "${ESC_EXIT_HOOKS[@]}"; do
        eval "$hook" || true
    done
    ESC_EXIT_HOOKS=()
    for p in "${ESC_PIDS[@]}"; do
        _esc_terminate "$p" || true
    done
    ESC_PIDS=()
    esc_pg_stop || true
    return "$rc"
}

trap esc_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
