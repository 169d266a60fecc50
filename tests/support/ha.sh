#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ha.sh - a private, throw-away highly available PostgreSQL for the tests and
# the cluster script: a pg_auto_failover formation (Debian's
# postgresql-15-auto-failover) of one monitor and two PostgreSQL nodes, pg1
# (the first primary) and pg2 (its synchronous standby), all on free
# 127.0.0.1 ports in one mktemp -d directory. Never the system service.
#
# Source it (it needs pg.sh's esc_free_port and ESC_PG_BINDIR) for:
#   esc_ha_start [STATE]  start the formation and wait until pg1 is primary and
#                       pg2 its synchronous standby; exports ESCROW_DSN (both
#                       hosts, target_session_attrs=read-write), ESC_HA_DIR,
#                       ESC_HA_MONITOR_PORT, ESC_HA_PORT_pg1, ESC_HA_PORT_pg2,
#                       ESC_HA_PID_pg1, ESC_HA_PID_pg2 (each node's pg_autoctl:
#                       the leader of a process group holding its PostgreSQL),
#                       ESC_PG_USER. STATE: a file that gets
#                       `export ESC_HA_DIR=...` as soon as the directory
#                       exists (so a stop interrupting the start finds it)
#   esc_ha_stop         stop every pg_autoctl (each stops its PostgreSQL) and
#                       remove the directory; safe to call twice
#   esc_ha_state        the monitor's view: "name|reported state|assigned state"
#                       per node
#   esc_ha_primary      print the name of the node the monitor has as primary
#                       (reported and assigned "primary" or "wait_primary")
#   esc_ha_postmaster_pid NODE   print the pid of NODE's postmaster
#   esc_ha_node_pids NODE        print the pids of every process of NODE: its
#                       pg_autoctl's group, its postmaster and the postmaster's
#                       children (each backend leads its own process group)
#
# pg_autoctl, initdb and postgres refuse to run as root: as root every server
# command runs as the `postgres` system user through runuser (as pg.sh does).
# pg_autoctl keeps its configuration and state under XDG_CONFIG_HOME /
# XDG_DATA_HOME, which point into the directory.
#
# Failover timing. pg_auto_failover's production defaults make a failover
# take about 30-40 s; the tests set (ESC_HA_FAST=1, the default here):
#   monitor  pgautofailover.health_check_period       1000 ms (default 5000)
#            pgautofailover.health_check_timeout      1000 ms (default 5000)
#            pgautofailover.health_check_max_retries  1       (default 2)
#            pgautofailover.health_check_retry_delay  500 ms  (default 2000)
#            pgautofailover.node_considered_unhealthy_timeout 2000 ms (default 20000)
#            pgautofailover.primary_demote_timeout    4000 ms (default 30000)
#   nodes    timeout.network_partition_timeout        2 s     (default 20)
# primary_demote_timeout must stay above network_partition_timeout (the time
# a cut-off primary takes to demote itself): that is what keeps a primary
# that only lost its network from accepting writes next to the new one.
# docs/ha.md explains each value.

_esc_ha_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/support/pg.sh
source "$_esc_ha_dir/pg.sh"

ESC_HA_FAST=${ESC_HA_FAST:-1}
# Seconds the formation gets to reach primary + synchronous secondary.
ESC_HA_READY_S=${ESC_HA_READY_S:-120}
ESC_HA_NODES="pg1 pg2"

_esc_ha_say() {
    echo "ha.sh: $*" >&2
}

# Runs CMD as the formation's owner with the directory's environment.
_esc_ha_as_owner() {
    local envs=(PATH="$ESC_PG_BINDIR:/usr/bin:/bin" XDG_CONFIG_HOME="$ESC_HA_DIR/xdg/config"
        XDG_DATA_HOME="$ESC_HA_DIR/xdg/data" XDG_RUNTIME_DIR="$ESC_HA_DIR/xdg/run"
        PG_REGRESS_SOCK_DIR="$ESC_HA_DIR" PGHOST="$ESC_HA_DIR" HOME="$ESC_HA_DIR")
    if [[ $(id -u) -eq 0 ]]; then
        (cd "$ESC_HA_DIR" && runuser -u postgres -- env "${envs[@]}" "$@")
    else
        (cd "$ESC_HA_DIR" && env "${envs[@]}" "$@")
    fi
}

# Starts `pg_autoctl ARGS` for node NAME (its data in $ESC_HA_DIR/NAME)
# detached in its own process group, output to LOG; prints its pid.
_esc_ha_spawn() {
    local log=$1 name=$2
    shift 2
    # setsid -f: pg_autoctl leads its own session and group, and nothing of
    # ours (runuser mirrors a stopped child by stopping itself) waits for it
    _esc_ha_as_owner setsid -f pg_autoctl "$@" </dev/null >"$log" 2>&1 || return 1
    local deadline=$((SECONDS + 30)) leader=""
    while [[ -z $leader ]] && ((SECONDS < deadline)); do
        leader=$(pgrep -f -o -- "^pg_autoctl .*--pgdata $ESC_HA_DIR/$name( |\$)" || true)
        [[ -n $leader ]] || sleep 0.1
    done
    [[ -n $leader ]] || { _esc_ha_say "pg_autoctl for $name did not start; see $log"; return 1; }
    echo "$leader"
}

_esc_ha_mon_sql() {
    "$ESC_PG_BINDIR/psql" -X -At -q -h 127.0.0.1 -p "$ESC_HA_MONITOR_PORT" -U "$ESC_PG_USER" \
        -d pg_auto_failover -v ON_ERROR_STOP=1 -c "$1"
}

esc_ha_state() {
    _esc_ha_mon_sql "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid"
}

esc_ha_primary() {
    _esc_ha_mon_sql "SELECT nodename FROM pgautofailover.node
        WHERE reportedstate IN ('primary', 'wait_primary') AND goalstate = reportedstate"
}

esc_ha_postmaster_pid() {
    head -n 1 "$ESC_HA_DIR/$1/postmaster.pid" 2>/dev/null
}

esc_ha_node_pids() {
    local group=ESC_HA_PID_$1 mp
    mp=$(esc_ha_postmaster_pid "$1")
    {
        [[ -n $mp ]] && echo "$mp" && pgrep -P "$mp"
        pgrep -g "${!group}"
    } | sort -u
}

_esc_ha_monitor_tune() {
    [[ $ESC_HA_FAST == 1 ]] || return 0
    local s
    for s in health_check_period=1000 health_check_timeout=1000 health_check_max_retries=1 \
        health_check_retry_delay=500 node_considered_unhealthy_timeout=2000 \
        primary_demote_timeout=4000; do
        _esc_ha_mon_sql "ALTER SYSTEM SET pgautofailover.${s%%=*} = ${s#*=}" >/dev/null || return 1
    done
    _esc_ha_mon_sql "SELECT pg_reload_conf()" >/dev/null
}

_esc_ha_start_monitor() {
    ESC_HA_MONITOR_PORT=$(esc_free_port)
    local pid
    pid=$(_esc_ha_spawn "$ESC_HA_DIR/monitor.log" monitor create monitor \
        --pgdata "$ESC_HA_DIR/monitor" --pgport "$ESC_HA_MONITOR_PORT" --hostname 127.0.0.1 \
        --auth trust --no-ssl --run) || return 1
    echo "$pid" >"$ESC_HA_DIR/pids"
    local deadline=$((SECONDS + ESC_HA_READY_S))
    until _esc_ha_mon_sql "SELECT 1 FROM pg_extension WHERE extname = 'pgautofailover'" 2>/dev/null |
        grep -q 1; do
        if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
            _esc_ha_say "the monitor did not come up:"
            tail -n 20 "$ESC_HA_DIR/monitor.log" >&2
            return 1
        fi
        sleep 0.2
    done
    _esc_ha_monitor_tune
}

# Creates and runs one node; the first becomes primary, the next its standby.
_esc_ha_start_node() {
    local name=$1 port
    port=$(esc_free_port)
    local monitor="postgres://autoctl_node@127.0.0.1:$ESC_HA_MONITOR_PORT/pg_auto_failover?sslmode=disable"
    local pid
    pid=$(_esc_ha_spawn "$ESC_HA_DIR/$name.log" "$name" create postgres --pgdata "$ESC_HA_DIR/$name" \
        --pgport "$port" --hostname 127.0.0.1 --name "$name" --auth trust --no-ssl \
        --monitor "$monitor" --dbname escrow --run) || return 1
    echo "$pid" >>"$ESC_HA_DIR/pids"
    printf -v "ESC_HA_PORT_$name" %s "$port"
    printf -v "ESC_HA_PID_$name" %s "$pid"
    export "ESC_HA_PORT_$name" "ESC_HA_PID_$name"
}

# The keepers' own timeouts, once their configuration exists.
_esc_ha_node_tune() {
    [[ $ESC_HA_FAST == 1 ]] || return 0
    local name
    for name in $ESC_HA_NODES; do
        _esc_ha_as_owner pg_autoctl config set --pgdata "$ESC_HA_DIR/$name" \
            timeout.network_partition_timeout 2 >/dev/null || return 1
    done
}

# pg1 primary, pg2 secondary, and pg2 named in synchronous_standby_names.
_esc_ha_synced() {
    [[ $(esc_ha_state | tr '\n' ' ') == "pg1|primary|primary pg2|secondary|secondary " ]] &&
        "$ESC_PG_BINDIR/psql" -X -At -h 127.0.0.1 -p "$ESC_HA_PORT_pg1" -U "$ESC_PG_USER" \
            -d escrow -c 'SHOW synchronous_standby_names' 2>/dev/null | grep pgautofailover_standby >/dev/null
}

_esc_ha_wait_synced() {
    local deadline=$((SECONDS + ESC_HA_READY_S)) checkpointed=0
    until _esc_ha_synced; do
        if ((SECONDS >= deadline)); then
            _esc_ha_say "no primary with a synchronous standby within $ESC_HA_READY_S s:"
            esc_ha_state >&2 || true
            tail -n 20 "$ESC_HA_DIR/pg2.log" >&2 || true
            return 1
        fi
        # pg_basebackup of the standby waits for a checkpoint: make it now
        if ((checkpointed == 0)) && grep -q 'waiting for checkpoint' "$ESC_HA_DIR/pg2.log" 2>/dev/null; then
            "$ESC_PG_BINDIR/psql" -X -q -h 127.0.0.1 -p "$ESC_HA_PORT_pg1" -U "$ESC_PG_USER" \
                -d escrow -c CHECKPOINT >/dev/null 2>&1 && checkpointed=1
        fi
        sleep 0.2
    done
}

_esc_ha_primary_up() {
    "$ESC_PG_BINDIR/psql" -X -At -h 127.0.0.1 -p "$ESC_HA_PORT_pg1" -U "$ESC_PG_USER" -d escrow \
        -c 'SELECT NOT pg_is_in_recovery()' 2>/dev/null | grep t >/dev/null
}

esc_ha_start() {
    command -v pg_autoctl >/dev/null || {
        _esc_ha_say "pg_autoctl not found (install postgresql-15-auto-failover)"
        return 1
    }
    ESC_HA_DIR=$(esc_pg_owned_dir /tmp/escrow-ha.XXXXXX) || return 1
    [[ -z ${1:-} ]] || printf 'export ESC_HA_DIR=%q\n' "$ESC_HA_DIR" >>"$1"
    ESC_PG_USER=$(esc_pg_superuser)
    export ESC_HA_DIR ESC_PG_USER
    _esc_ha_start_monitor || { esc_ha_stop; return 1; }
    export ESC_HA_MONITOR_PORT
    _esc_ha_start_node pg1 || { esc_ha_stop; return 1; }
    local deadline=$((SECONDS + ESC_HA_READY_S))
    until _esc_ha_primary_up; do
        ((SECONDS < deadline)) || { _esc_ha_say "pg1 did not come up"; esc_ha_stop; return 1; }
        sleep 0.2
    done
    _esc_ha_start_node pg2 || { esc_ha_stop; return 1; }
    _esc_ha_wait_synced || { esc_ha_stop; return 1; }
    _esc_ha_node_tune || { esc_ha_stop; return 1; }
    export ESCROW_DSN="host=127.0.0.1,127.0.0.1 port=$ESC_HA_PORT_pg1,$ESC_HA_PORT_pg2 dbname=escrow user=$ESC_PG_USER target_session_attrs=read-write connect_timeout=2"
}

# SIGTERM to each pg_autoctl's group (pg_autoctl stops its PostgreSQL), then
# SIGKILL (SIGCONT first: a test may have stopped one) after 30 s.
esc_ha_stop() {
    [[ -n ${ESC_HA_DIR:-} && -d $ESC_HA_DIR ]] || return 0
    local pid pids name mp
    pids=$(cat "$ESC_HA_DIR/pids" 2>/dev/null || true)
    # a test may have stopped a node's processes: its backends each lead their
    # own process group, so they are resumed one by one
    for name in monitor $ESC_HA_NODES; do
        mp=$(esc_ha_postmaster_pid "$name")
        [[ -n $mp ]] || continue
        kill -CONT "$mp" 2>/dev/null || true
        pkill -CONT -P "$mp" 2>/dev/null || true
    done
    for pid in $pids; do
        kill -CONT -- "-$pid" 2>/dev/null || true
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    local deadline=$((SECONDS + 30))
    for pid in $pids; do
        while kill -0 -- "-$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    # a postmaster whose pg_autoctl was killed outlives its group leader
    for name in monitor $ESC_HA_NODES; do
        mp=$(esc_ha_postmaster_pid "$name")
        [[ -n $mp ]] && kill -KILL "$mp" 2>/dev/null || true
    done
    rm -rf "$ESC_HA_DIR"
    unset ESC_HA_DIR ESC_HA_MONITOR_PORT
}
