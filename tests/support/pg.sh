#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pg.sh - a private, throw-away PostgreSQL for the demo, the integration
# tests and CI. Never the system service, never a mock.
#
# Source it for the functions:
#   esc_pg_start            initdb a fresh cluster in a mktemp -d directory, start it on a
#                           free 127.0.0.1 port (unix socket inside the directory), create
#                           database "escrow"; exports ESCROW_DSN, ESC_PG_DIR, ESC_PG_PORT,
#                           ESC_PG_USER
#   esc_pg_stop             stop it (-m fast) and remove the directory; safe to call twice
#   esc_pg_restart          restart it on the same port (starts it if it is down)
#   esc_pg_kill_immediate   stop it the way a crash does (-m immediate: no checkpoint,
#                           crash recovery on the next start); the data stays
#   esc_pg_xid_epoch E      stop it, set the epoch of its transaction ids to E
#                           (pg_resetwal -e), start it again on the same port
#   esc_pg_running          true while the server answers
#   esc_free_port           print a free TCP port on 127.0.0.1
# The caller owns cleanup: call esc_pg_stop from an EXIT trap (tests/support/lib.sh
# does). Or run it as a command:
#   pg.sh start             start one and print `export ...` lines (stop it with pg.sh stop DIR)
#   pg.sh stop DIR          stop and remove the cluster in DIR
#   pg.sh run CMD [ARGS]    start one, run CMD with ESCROW_DSN set, stop it whatever happens
#
# initdb and postgres refuse to run as root. CI runs as root, so then the
# cluster belongs to the `postgres` system user (created by the postgresql-15
# package) and every server command runs through runuser; the database
# superuser is then "postgres". Otherwise it is the current user.
# fsync stays on (the default): the demo and the tests measure the real thing.
# ESC_PG_CONF_EXTRA: more postgresql.conf lines (newline-separated), appended
# after ours; the benchmark and the profiler set their WAL and logging
# settings through it (tests/support/bench.sh).

ESC_PG_BINDIR=${ESC_PG_BINDIR:-}
if [[ -z $ESC_PG_BINDIR ]]; then
    if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then
        ESC_PG_BINDIR=/usr/lib/postgresql/15/bin
    elif command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/initdb" ]]; then
        ESC_PG_BINDIR=$(pg_config --bindir)
    fi
fi
# Seconds pg_ctl waits for start and stop.
ESC_PG_WAIT_S=${ESC_PG_WAIT_S:-60}
# Attempts to start on a fresh free port (another process may take the port
# between picking and binding it).
ESC_PG_START_TRIES=3

esc_free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# The user the servers run as, and their database superuser: "postgres" as
# root, else the current user.
esc_pg_superuser() {
    if [[ $(id -u) -eq 0 ]]; then echo postgres; else id -un; fi
}

# Makes a mktemp -d directory from TEMPLATE for a server's data, owned by
# esc_pg_superuser, and prints it.
esc_pg_owned_dir() {
    local dir
    dir=$(mktemp -d "$1") || return 1
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres:postgres "$dir" || return 1
    fi
    chmod 700 "$dir"
    echo "$dir"
}

# Runs a server command as the cluster's owner, from inside the cluster
# directory (postgres cannot read root's working directory).
_esc_pg_as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        (cd "$ESC_PG_DIR" && runuser -u postgres -- "$@")
    else
        (cd "$ESC_PG_DIR" && "$@")
    fi
}

_esc_pg_ctl() {
    _esc_pg_as_owner "$ESC_PG_BINDIR/pg_ctl" -D "$ESC_PG_DIR/data" "$@"
}

_esc_pg_configure() {
    cat >>"$ESC_PG_DIR/data/postgresql.conf" <<EOF
# escrow test cluster (tests/support/pg.sh)
listen_addresses = '127.0.0.1'
port = $ESC_PG_PORT
unix_socket_directories = '$ESC_PG_DIR'
max_connections = 200
shared_buffers = 256MB
fsync = on
# WAL and checkpoints as docs/postgresql.md recommends for production, scaled
# to a test machine: during a benchmark run checkpoints come by time, not by
# WAL volume (each one is followed by a burst of full-page images, which
# wal_compression shrinks). A test writes far less WAL than these bounds.
max_wal_size = 4GB
checkpoint_timeout = 15min
checkpoint_completion_target = 0.9
wal_compression = on
wal_buffers = 16MB
log_line_prefix = '%m [%p] %q%a '
log_min_messages = warning
EOF
    if [[ -n ${ESC_PG_CONF_EXTRA:-} ]]; then
        printf '# ESC_PG_CONF_EXTRA\n%s\n' "$ESC_PG_CONF_EXTRA" >>"$ESC_PG_DIR/data/postgresql.conf"
    fi
}

# initdb into $ESC_PG_DIR/data. Returns non-zero with the log on stderr.
_esc_pg_initdb() {
    if ! _esc_pg_as_owner "$ESC_PG_BINDIR/initdb" -D "$ESC_PG_DIR/data" -A trust \
        -U "$ESC_PG_USER" -E UTF8 --locale=C.UTF-8 --no-sync >"$ESC_PG_DIR/initdb.log" 2>&1; then
        echo "pg.sh: initdb failed:" >&2
        tail -n 20 "$ESC_PG_DIR/initdb.log" >&2
        return 1
    fi
}

# Picks a port and starts; retries with another port when the first is taken.
_esc_pg_start_server() {
    local try
    for ((try = 1; try <= ESC_PG_START_TRIES; try++)); do
        ESC_PG_PORT=$(esc_free_port)
        _esc_pg_configure
        if _esc_pg_ctl -w -t "$ESC_PG_WAIT_S" -l "$ESC_PG_DIR/postgres.log" start \
            >>"$ESC_PG_DIR/pg_ctl.log" 2>&1; then
            return 0
        fi
        echo "pg.sh: start on port $ESC_PG_PORT failed (try $try of $ESC_PG_START_TRIES)" >&2
    done
    tail -n 20 "$ESC_PG_DIR/postgres.log" >&2 2>/dev/null || true
    return 1
}

esc_pg_start() {
    if [[ -z $ESC_PG_BINDIR || ! -x $ESC_PG_BINDIR/initdb ]]; then
        echo "pg.sh: PostgreSQL server binaries not found (install postgresql-15)" >&2
        return 1
    fi
    ESC_PG_DIR=$(esc_pg_owned_dir /tmp/escrow-pg.XXXXXX) || return 1
    ESC_PG_USER=$(esc_pg_superuser)
    export ESC_PG_DIR ESC_PG_USER
    if ! _esc_pg_initdb || ! _esc_pg_start_server; then
        rm -rf "$ESC_PG_DIR"
        unset ESC_PG_DIR ESC_PG_PORT ESC_PG_USER
        return 1
    fi
    export ESC_PG_PORT
    if ! "$ESC_PG_BINDIR/psql" -X -q -h 127.0.0.1 -p "$ESC_PG_PORT" -U "$ESC_PG_USER" \
        -d postgres -v ON_ERROR_STOP=1 -c 'CREATE DATABASE escrow' >/dev/null; then
        echo "pg.sh: CREATE DATABASE escrow failed" >&2
        esc_pg_stop
        return 1
    fi
    export ESCROW_DSN="host=127.0.0.1 port=$ESC_PG_PORT dbname=escrow user=$ESC_PG_USER"
    _esc_pg_watchdog
}

# If the script that started the cluster dies without running its EXIT trap
# (ctest's TIMEOUT kills it outright), stop the cluster anyway: a detached
# watcher polls the owner's pid and the directory once a second.
_esc_pg_watchdog() {
    [[ ${ESC_PG_NO_WATCHDOG:-0} == 1 ]] && return 0 # `pg.sh start`: the caller stops it
    local as_owner=""
    [[ $(id -u) -eq 0 ]] && as_owner="runuser -u postgres --"
    # In a subshell that exits at once: the watcher is reparented to init, so
    # a harness that kills the test's whole process tree (ctest's TIMEOUT
    # walks the children) does not take the watcher with it.
    (setsid bash -c '
        owner=$1 dir=$2 ctl=$3; shift 3
        while kill -0 "$owner" 2>/dev/null && [[ -d $dir ]]; do sleep 1; done
        if [[ -f $dir/data/postmaster.pid ]]; then
            (cd "$dir" && "$@" "$ctl" -D "$dir/data" -m immediate stop) >/dev/null 2>&1
        fi
        rm -rf "$dir"' _ "$$" "$ESC_PG_DIR" "$ESC_PG_BINDIR/pg_ctl" $as_owner \
        </dev/null >/dev/null 2>&1 &)
}

esc_pg_running() {
    [[ -n ${ESC_PG_DIR:-} && -d $ESC_PG_DIR/data ]] &&
        "$ESC_PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "$ESC_PG_PORT" -t 2
}

esc_pg_stop() {
    if [[ -z ${ESC_PG_DIR:-} || ! -d $ESC_PG_DIR ]]; then
        return 0
    fi
    if [[ -f $ESC_PG_DIR/data/postmaster.pid ]]; then
        _esc_pg_ctl -w -t "$ESC_PG_WAIT_S" -m fast stop >>"$ESC_PG_DIR/pg_ctl.log" 2>&1 ||
            _esc_pg_ctl -m immediate stop >>"$ESC_PG_DIR/pg_ctl.log" 2>&1 || true
    fi
    rm -rf "$ESC_PG_DIR"
    unset ESC_PG_DIR ESC_PG_PORT ESC_PG_USER ESCROW_DSN
}

esc_pg_restart() {
    if [[ -f $ESC_PG_DIR/data/postmaster.pid ]]; then
        _esc_pg_ctl -w -t "$ESC_PG_WAIT_S" -m fast -l "$ESC_PG_DIR/postgres.log" restart \
            >>"$ESC_PG_DIR/pg_ctl.log" 2>&1
    else
        _esc_pg_ctl -w -t "$ESC_PG_WAIT_S" -l "$ESC_PG_DIR/postgres.log" start \
            >>"$ESC_PG_DIR/pg_ctl.log" 2>&1
    fi
}

esc_pg_xid_epoch() {
    _esc_pg_ctl -w -t "$ESC_PG_WAIT_S" -m fast stop >>"$ESC_PG_DIR/pg_ctl.log" 2>&1 &&
        _esc_pg_as_owner "$ESC_PG_BINDIR/pg_resetwal" -e "$1" "$ESC_PG_DIR/data" \
            >>"$ESC_PG_DIR/pg_ctl.log" 2>&1 &&
        esc_pg_restart
}

esc_pg_kill_immediate() {
    _esc_pg_ctl -w -t "$ESC_PG_WAIT_S" -m immediate stop >>"$ESC_PG_DIR/pg_ctl.log" 2>&1
}

# ---- command-line use ----------------------------------------------------

_esc_pg_main() {
    case "${1:-}" in
    start)
        ESC_PG_NO_WATCHDOG=1 esc_pg_start || return 1
        printf 'export ESCROW_DSN=%q\nexport ESC_PG_DIR=%q\nexport ESC_PG_PORT=%q\nexport ESC_PG_USER=%q\n' \
            "$ESCROW_DSN" "$ESC_PG_DIR" "$ESC_PG_PORT" "$ESC_PG_USER"
        echo "# stop it with: $0 stop $ESC_PG_DIR"
        ;;
    stop)
        [[ -n ${2:-} && -d $2/data ]] || {
            echo "usage: $0 stop DIR (a directory made by '$0 start')" >&2
            return 2
        }
        ESC_PG_DIR=$2
        ESC_PG_PORT=$(sed -n 's/^port = //p' "$ESC_PG_DIR/data/postgresql.conf" | tail -n 1)
        esc_pg_stop
        ;;
    run)
        shift
        [[ $# -gt 0 ]] || {
            echo "usage: $0 run CMD [ARGS...]" >&2
            return 2
        }
        trap esc_pg_stop EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        ESC_PG_NO_WATCHDOG=1 esc_pg_start || return 1
        "$@"
        ;;
    *)
        echo "usage: $0 start | stop DIR | run CMD [ARGS...]   (or source it)" >&2
        return 2
        ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    _esc_pg_main "$@"
fi
