#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cluster.sh - a local escrow cluster in one command: a private PostgreSQL
# (pg.sh), the schema, one escrow-coordinator and N segment nodes in managed
# mode (escrow-segment --coordinator), all on free 127.0.0.1 ports.
#
#   cluster.sh start DIR [--nodes N] [--lease-ms MS] [--heartbeat-ms MS]
#                        [--rebalance-ms MS] [--watch PID] [--log-level L]
#                        [--standby-coord] [--leader-lease-ms MS]
#       Starts everything, waits until the coordinator logs COORD-READY and
#       every node SEG-READY, then writes DIR/env and prints it. Logs go to
#       DIR (coordinator.log, n1.log ...). --standby-coord: a second
#       coordinator (standby.log) on the same database, started once the
#       first leads; it stands by (COORD-STANDBY) and takes over when the
#       leader's lease (--leader-lease-ms, the coordinators' default without
#       it) runs out. ESCROW_COORDINATOR and ESC_CLUSTER_PUBLISH then list
#       both coordinators' endpoints, comma-separated, and the nodes are
#       given both. --watch PID: a detached watcher
#       stops the whole cluster when PID ends (tests pass their own $$, so a
#       test killed by a timeout leaves nothing behind). If any step fails,
#       whatever was started is stopped again and the exit code is 1.
#   cluster.sh start DIR --regions CONFDIR [--proxy] [--watch PID] [--log-level L]
#       Several regions on this machine from a directory of region INI files
#       (examples/regions: one file per region, see common/region_cfg.h):
#       one private PostgreSQL with a database per region (escrow_<region>),
#       the files copied into DIR with their dsn and ports rewritten
#       (tests/support/regions_conf.py), then per region its coordinator
#       (escrow-coordinator --config) and the nodes of its [nodes] section
#       (escrow-segment --config --node-id). --proxy: every link between two
#       coordinators goes through tests/support/faultproxy.py; a test cuts it
#       by writing "cut" or "blackhole" into $ESC_PROXY_MODE_<from>_<to>.
#       DIR/env exports ESC_REGIONS and, per region r, ESC_REGION_CONFIG_r
#       (use it with escrowctl --config), ESC_REGION_DSN_r,
#       ESC_REGION_COORD_r, ESC_REGION_NODES_r, ESC_REGION_COORD_PID_r;
#       per node n ESC_NODE_EP_n, ESC_NODE_PID_n (names with '-' as '_').
#   cluster.sh start DIR --ha [the options above but --regions]
#       The same cluster on a highly available PostgreSQL instead of one
#       server: a pg_auto_failover formation (tests/support/ha.sh: a monitor,
#       a primary pg1 and its synchronous standby pg2), and every daemon given
#       the multi-host DSN (host=127.0.0.1,127.0.0.1 port=P1,P2 ...
#       target_session_attrs=read-write), so that each follows the primary
#       through a failover. Its failover timeouts are the tests' short ones
#       (see ha.sh and docs/ha.md). DIR/env also exports ESC_HA_DIR,
#       ESC_HA_MONITOR_PORT, ESC_HA_PORT_pg1/pg2, ESC_HA_PID_pg1/pg2
#       (each PostgreSQL node's pg_autoctl, the leader of its process group).
#   cluster.sh stop DIR
#       SIGTERM to the nodes (they hand their segments back), then the
#       coordinator, SIGKILL after ESC_CLUSTER_STOP_S (30) seconds; stops
#       PostgreSQL and removes its data; keeps the logs; removes DIR/env.
#       Safe to call twice. Exit 0 if every daemon stopped on SIGTERM, 1 if
#       one needed SIGKILL (the daemons are not its children: their exit
#       codes are in their logs, not here).
#   cluster.sh status DIR
#       the env, whether each process is alive, `escrowctl nodes` (with
#       --regions: `escrowctl regions`).
#
# DIR/env (source it) exports:
#   ESCROW_DSN, ESCROW_COORDINATOR (escrowctl reads both), ESC_CLUSTER_DIR,
#   ESC_CLUSTER_PUBLISH (the coordinator's PUB endpoint: routes), ESC_CLUSTER_COORD_PID,
#   with --standby-coord ESC_CLUSTER_STANDBY_PID, ESC_CLUSTER_COORD_URLS and
#   ESC_CLUSTER_PUBLISH_URLS ("leader standby", each coordinator's own),
#   ESC_CLUSTER_NODES ("n1 n2 ..."), ESC_CLUSTER_NODE_EP_<node>, ESC_CLUSTER_NODE_PID_<node>,
#   ESC_CLUSTER_NODE_PORT_<node>, ESC_PG_DIR, ESC_PG_PORT, ESC_PG_USER
#
# Environment: ESC_BIN = directory with escrow-coordinator, escrow-segment and
# escrowctl (default: build/bin of the source tree).
set -euo pipefail

_cl_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/support/ha.sh
source "$_cl_dir/ha.sh" # and pg.sh
ESC_BIN=${ESC_BIN:-$(cd "$_cl_dir/../.." && pwd)/build/bin}

# Seconds a daemon gets to become ready, and to exit after SIGTERM: bounds on
# a hang, generous so that a loaded machine never reaches them in a passing run.
ESC_CLUSTER_READY_S=${ESC_CLUSTER_READY_S:-60}
ESC_CLUSTER_STOP_S=${ESC_CLUSTER_STOP_S:-30}
# Nodes at most (each is a process with its own connections to PostgreSQL).
ESC_CLUSTER_NODES_MAX=16

_cl_say() {
    echo "cluster: $*" >&2
}

_cl_usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

# Waits for WORD in LOG while PID lives. Returns 1 (with the log tail) on
# exit or timeout.
_cl_wait_ready() {
    local pid=$1 log=$2 word=$3 what=$4
    local deadline=$((SECONDS + ESC_CLUSTER_READY_S))
    until grep -q "$word" "$log" 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            _cl_say "$what exited before it was ready; last lines of $log:"
            tail -n 20 "$log" >&2 || true
            return 1
        fi
        if ((SECONDS >= deadline)); then
            _cl_say "$what did not log $word within ${ESC_CLUSTER_READY_S} s; last lines of $log:"
            tail -n 20 "$log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

# Starts CMD detached (own session: signals reach its whole group), output
# to LOG; prints its pid.
_cl_spawn() {
    local log=$1
    shift
    setsid "$@" </dev/null >"$log" 2>&1 &
    echo $!
}

# SIGTERM to PID's group, SIGKILL after ESC_CLUSTER_STOP_S. Returns 1 if it
# needed SIGKILL.
_cl_terminate() {
    local pid=$1 what=$2
    [[ -n $pid ]] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + ESC_CLUSTER_STOP_S))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            _cl_say "$what (pid $pid) ignored SIGTERM for ${ESC_CLUSTER_STOP_S} s; SIGKILL"
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
            return 1
        fi
        sleep 0.1
    done
    return 0
}

# Stops everything named in the state file $1/env (or the partial state of a
# failed start, in $1/.starting). Never fails on a missing piece.
_cl_stop_dir() {
    local dir=$1 f rc=0 n pid
    for f in "$dir/env" "$dir/.starting"; do
        [[ -f $f ]] || continue
        (
            # shellcheck disable=SC1090
            source "$f"
            for pid in ${ESC_CLUSTER_REGION_NODE_PIDS:-}; do
                _cl_terminate "$pid" "node (pid $pid)" || rc=1
            done
            for pid in ${ESC_CLUSTER_REGION_COORD_PIDS:-}; do
                _cl_terminate "$pid" "coordinator (pid $pid)" || rc=1
            done
            for pid in ${ESC_CLUSTER_PROXY_PIDS:-}; do
                _cl_terminate "$pid" "proxy (pid $pid)" || true
            done
            exit "$rc"
        ) || rc=1
        (
            # shellcheck disable=SC1090
            source "$f"
            for n in ${ESC_CLUSTER_NODES:-}; do
                pid_var=ESC_CLUSTER_NODE_PID_$n
                _cl_terminate "${!pid_var:-}" "node $n" || exit 1
            done
        ) || rc=1
        (
            # shellcheck disable=SC1090
            source "$f"
            _cl_terminate "${ESC_CLUSTER_STANDBY_PID:-}" "standby coordinator" || rc=1
            _cl_terminate "${ESC_CLUSTER_COORD_PID:-}" coordinator || rc=1
            exit "$rc"
        ) || rc=1
        (
            # shellcheck disable=SC1090
            source "$f"
            if [[ -n ${ESC_CLUSTER_WATCH_PID:-} && -z ${ESC_CLUSTER_FROM_WATCHER:-} ]]; then
                kill "$ESC_CLUSTER_WATCH_PID" 2>/dev/null || true
            fi
            if [[ -n ${ESC_PG_DIR:-} && -d $ESC_PG_DIR ]]; then
                esc_pg_stop
            fi
            if [[ -n ${ESC_HA_DIR:-} && -d $ESC_HA_DIR ]]; then
                esc_ha_stop
            fi
        ) || true
        rm -f "$f"
    done
    return "$rc"
}

# The watcher: polls OWNER and stops the cluster when it is gone (or when
# DIR/env disappears: a normal stop happened).
_cl_watch() {
    local owner=$1 dir=$2
    setsid bash -c '
        owner=$1 dir=$2 self=$3
        while kill -0 "$owner" 2>/dev/null && [[ -f $dir/env || -f $dir/.starting ]]; do
            sleep 1
        done
        if [[ -f $dir/env || -f $dir/.starting ]]; then
            ESC_CLUSTER_FROM_WATCHER=1 bash "$self" stop "$dir" >>"$dir/watcher.log" 2>&1
        fi' _ "$owner" "$dir" "${BASH_SOURCE[0]}" </dev/null >/dev/null 2>&1 &
    echo $!
}

_cl_start_regions() {
    local dir=$1 confdir=$2 proxy=$3 log_level=$4
    [[ -d $confdir ]] || { _cl_say "no directory $confdir"; exit 2; }
    confdir=$(cd "$confdir" && pwd)
    local state=$dir/.starting
    _cl_say "PostgreSQL"
    ESC_PG_NO_WATCHDOG=1 esc_pg_start
    printf 'export ESC_PG_DIR=%q ESC_PG_PORT=%q ESC_PG_USER=%q\n' \
        "$ESC_PG_DIR" "$ESC_PG_PORT" "$ESC_PG_USER" >>"$state"
    local conf_args=("$confdir" "$dir" --pg-port "$ESC_PG_PORT" --pg-user "$ESC_PG_USER")
    [[ $proxy == 1 ]] && conf_args+=(--proxy)
    python3 "$_cl_dir/regions_conf.py" "${conf_args[@]}" | sed 's/^/export /' >"$dir/regions.env"
    cat "$dir/regions.env" >>"$state"
    # shellcheck disable=SC1091
    source "$dir/regions.env"
    local r rv n nv pid link lv coord_pids="" node_pids="" proxy_pids=""
    for link in $ESC_PROXIES; do
        lv=ESC_PROXY_LISTEN_$link tv=ESC_PROXY_TARGET_$link mv=ESC_PROXY_MODE_$link
        echo pass >"${!mv}"
        pid=$(_cl_spawn "$dir/proxy-$link.log" python3 "$_cl_dir/faultproxy.py" \
            --listen "${!lv}" --target "${!tv}" --mode-file "${!mv}")
        proxy_pids="$proxy_pids $pid"
        printf 'export ESC_PROXY_PID_%s=%q ESC_CLUSTER_PROXY_PIDS=%q\n' "$link" "$pid" \
            "$proxy_pids" >>"$state"
        _cl_wait_ready "$pid" "$dir/proxy-$link.log" "PROXY listening" "proxy $link"
    done
    for r in $ESC_REGIONS; do
        rv=${r//[^A-Za-z0-9]/_}
        local db_var=ESC_REGION_DB_$rv dsn_var=ESC_REGION_DSN_$rv cfg_var=ESC_REGION_CONFIG_$rv
        "$ESC_PG_BINDIR/psql" -X -q -h 127.0.0.1 -p "$ESC_PG_PORT" -U "$ESC_PG_USER" \
            -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE ${!db_var}" >/dev/null
        "$ESC_BIN/escrowctl" --dsn "${!dsn_var}" migrate >"$dir/migrate-$r.log" 2>&1 || {
            cat "$dir/migrate-$r.log" >&2
            false
        }
        _cl_say "region $r: coordinator ($(basename "${!cfg_var}"))"
        pid=$(_cl_spawn "$dir/$r-coordinator.log" "$ESC_BIN/escrow-coordinator" \
            --config "${!cfg_var}" --log-level "$log_level")
        coord_pids="$coord_pids $pid"
        printf 'export ESC_REGION_COORD_PID_%s=%q ESC_CLUSTER_REGION_COORD_PIDS=%q\n' "$rv" \
            "$pid" "$coord_pids" >>"$state"
        _cl_wait_ready "$pid" "$dir/$r-coordinator.log" COORD-READY "coordinator of $r"
    done
    for r in $ESC_REGIONS; do
        rv=${r//[^A-Za-z0-9]/_}
        local nodes_var=ESC_REGION_NODES_$rv cfg_var=ESC_REGION_CONFIG_$rv
        for n in ${!nodes_var}; do
            nv=${n//[^A-Za-z0-9]/_}
            pid=$(_cl_spawn "$dir/$n.log" "$ESC_BIN/escrow-segment" --config "${!cfg_var}" \
                --node-id "$n" --log-level "$log_level")
            node_pids="$node_pids $pid"
            printf 'export ESC_NODE_PID_%s=%q ESC_CLUSTER_REGION_NODE_PIDS=%q\n' "$nv" "$pid" \
                "$node_pids" >>"$state"
            _cl_say "region $r: node $n (pid $pid)"
        done
    done
    for r in $ESC_REGIONS; do
        rv=${r//[^A-Za-z0-9]/_}
        local nodes_var=ESC_REGION_NODES_$rv
        for n in ${!nodes_var}; do
            nv=${n//[^A-Za-z0-9]/_}
            pid_var=ESC_NODE_PID_$nv
            # shellcheck disable=SC1090
            pid=$(source "$state" && echo "${!pid_var}")
            _cl_wait_ready "$pid" "$dir/$n.log" SEG-READY "node $n"
        done
    done
}

# The pg_auto_failover formation (ha.sh); its directory goes into the state
# file as soon as it exists, so that a failed or interrupted start stops it.
_cl_start_ha() {
    local state=$1
    _cl_say "PostgreSQL: pg_auto_failover monitor, primary pg1, synchronous standby pg2"
    esc_ha_start "$state" || return 1
    printf 'export ESCROW_DSN=%q ESC_PG_USER=%q ESC_HA_MONITOR_PORT=%q\n' \
        "$ESCROW_DSN" "$ESC_PG_USER" "$ESC_HA_MONITOR_PORT" >>"$state"
    printf 'export ESC_HA_PORT_pg1=%q ESC_HA_PORT_pg2=%q ESC_HA_PID_pg1=%q ESC_HA_PID_pg2=%q\n' \
        "$ESC_HA_PORT_pg1" "$ESC_HA_PORT_pg2" "$ESC_HA_PID_pg1" "$ESC_HA_PID_pg2" >>"$state"
}

# The standby coordinator: the leader's arguments with its own endpoints URL
# and PUB; lists both coordinators in the state file, waits until it stands by.
_cl_start_standby() {
    local dir=$1 state=$2 lead_url=$3 lead_pub=$4 url=$5 pub=$6
    shift 6
    local args=("$@") pid i
    for ((i = 0; i < ${#args[@]}; i++)); do
        case ${args[i]} in
        --listen) args[i + 1]=$url ;;
        --publish) args[i + 1]=$pub ;;
        esac
    done
    _cl_say "standby coordinator on $url (routes on $pub)"
    pid=$(_cl_spawn "$dir/standby.log" "$ESC_BIN/escrow-coordinator" "${args[@]}")
    printf 'export ESC_CLUSTER_STANDBY_PID=%q ESC_CLUSTER_COORD_URLS=%q ESC_CLUSTER_PUBLISH_URLS=%q\n' \
        "$pid" "$lead_url $url" "$lead_pub $pub" >>"$state"
    printf 'export ESCROW_COORDINATOR=%q ESC_CLUSTER_PUBLISH=%q\n' \
        "$lead_url,$url" "$lead_pub,$pub" >>"$state"
    _cl_wait_ready "$pid" "$dir/standby.log" COORD-STANDBY "standby coordinator"
}

_cl_start() {
    local dir=$1
    shift
    local nodes=2 lease_ms=2000 heartbeat_ms=200 rebalance_ms="" watch="" log_level=info
    local regions="" proxy=0 ha=0 standby=0 leader_lease_ms=""
    while (($#)); do
        case $1 in
        --ha) ha=1; shift ;;
        --standby-coord) standby=1; shift ;;
        --leader-lease-ms) leader_lease_ms=$2; shift 2 ;;
        --regions) regions=$2; shift 2 ;;
        --proxy) proxy=1; shift ;;
        --nodes) nodes=$2; shift 2 ;;
        --lease-ms) lease_ms=$2; shift 2 ;;
        --heartbeat-ms) heartbeat_ms=$2; shift 2 ;;
        --rebalance-ms) rebalance_ms=$2; shift 2 ;;
        --watch) watch=$2; shift 2 ;;
        --log-level) log_level=$2; shift 2 ;;
        *) _cl_say "unknown option $1"; _cl_usage ;;
        esac
    done
    if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > ESC_CLUSTER_NODES_MAX)); then
        _cl_say "--nodes must be 1..$ESC_CLUSTER_NODES_MAX"
        exit 2
    fi
    for v in "$lease_ms" "$heartbeat_ms" ${rebalance_ms:+"$rebalance_ms"} ${watch:+"$watch"} \
        ${leader_lease_ms:+"$leader_lease_ms"}; do
        [[ $v =~ ^[0-9]+$ ]] || { _cl_say "'$v' is not a number"; exit 2; }
    done
    local b
    for b in escrow-coordinator escrow-segment escrowctl; do
        [[ -x $ESC_BIN/$b ]] || { _cl_say "no $b in ESC_BIN=$ESC_BIN (build first)"; exit 1; }
    done
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [[ -f $dir/env || -f $dir/.starting ]]; then
        _cl_say "$dir already holds a cluster (stop it first: $0 stop $dir)"
        exit 1
    fi
    local state=$dir/.starting
    : >"$state"
    # From here on, any failure stops whatever was started.
    trap '_cl_say "start failed; stopping what was started"; _cl_stop_dir "$dir" || true' ERR
    trap '_cl_stop_dir "$dir" || true; exit 130' INT TERM
    set -E

    if [[ -n $watch ]]; then
        echo "ESC_CLUSTER_WATCH_PID=$(_cl_watch "$watch" "$dir")" >>"$state"
    fi

    if [[ -n $regions ]]; then
        _cl_start_regions "$dir" "$regions" "$proxy" "$log_level"
        echo "export ESC_CLUSTER_DIR=$(printf %q "$dir")" >>"$state"
        trap - ERR INT TERM
        mv "$state" "$dir/env"
        _cl_say "ready: source $dir/env; stop with: $0 stop $dir"
        cat "$dir/env"
        return 0
    fi

    if [[ $ha == 1 ]]; then
        _cl_start_ha "$state"
    else
        _cl_say "PostgreSQL"
        ESC_PG_NO_WATCHDOG=1 esc_pg_start
        printf 'export ESCROW_DSN=%q ESC_PG_DIR=%q ESC_PG_PORT=%q ESC_PG_USER=%q\n' \
            "$ESCROW_DSN" "$ESC_PG_DIR" "$ESC_PG_PORT" "$ESC_PG_USER" >>"$state"
    fi
    "$ESC_BIN/escrowctl" --dsn "$ESCROW_DSN" migrate >"$dir/migrate.log" 2>&1 || {
        cat "$dir/migrate.log" >&2
        false
    }

    local coord_url pub_url
    coord_url=tcp://127.0.0.1:$(esc_free_port)
    pub_url=tcp://127.0.0.1:$(esc_free_port)
    _cl_say "coordinator on $coord_url (routes on $pub_url)"
    local coord_args=(--dsn "$ESCROW_DSN" --listen "$coord_url" --publish "$pub_url"
        --lease-ms "$lease_ms" --heartbeat-ms "$heartbeat_ms" --log-level "$log_level")
    [[ -n $rebalance_ms ]] && coord_args+=(--rebalance-ms "$rebalance_ms")
    [[ -n $leader_lease_ms ]] && coord_args+=(--leader-lease-ms "$leader_lease_ms")
    local coord_pid
    coord_pid=$(_cl_spawn "$dir/coordinator.log" "$ESC_BIN/escrow-coordinator" "${coord_args[@]}")
    printf 'export ESCROW_COORDINATOR=%q ESC_CLUSTER_PUBLISH=%q ESC_CLUSTER_COORD_PID=%q\n' \
        "$coord_url" "$pub_url" "$coord_pid" >>"$state"
    _cl_wait_ready "$coord_pid" "$dir/coordinator.log" COORD-READY coordinator
    if [[ $standby == 1 ]]; then
        local sb_url sb_pub
        sb_url=tcp://127.0.0.1:$(esc_free_port)
        sb_pub=tcp://127.0.0.1:$(esc_free_port)
        _cl_start_standby "$dir" "$state" "$coord_url" "$pub_url" "$sb_url" "$sb_pub" \
            "${coord_args[@]}"
        coord_url="$coord_url,$sb_url"
    fi

    local i n port ep pid names=""
    for ((i = 1; i <= nodes; i++)); do
        n=n$i
        port=$(esc_free_port)
        ep=tcp://127.0.0.1:$port
        pid=$(_cl_spawn "$dir/$n.log" "$ESC_BIN/escrow-segment" --node-id "$n" --listen "$ep" \
            --dsn "$ESCROW_DSN" --coordinator "$coord_url" --log-level "$log_level")
        names="$names${names:+ }$n"
        printf 'export ESC_CLUSTER_NODES=%q ESC_CLUSTER_NODE_EP_%s=%q ESC_CLUSTER_NODE_PORT_%s=%q ESC_CLUSTER_NODE_PID_%s=%q\n' \
            "$names" "$n" "$ep" "$n" "$port" "$n" "$pid" >>"$state"
        _cl_say "node $n on $ep (pid $pid)"
    done
    for n in $names; do
        pid_var=ESC_CLUSTER_NODE_PID_$n
        # shellcheck disable=SC1090
        pid=$(source "$state" && echo "${!pid_var}")
        _cl_wait_ready "$pid" "$dir/$n.log" SEG-READY "node $n"
    done
    echo "export ESC_CLUSTER_DIR=$(printf %q "$dir")" >>"$state"
    trap - ERR INT TERM
    mv "$state" "$dir/env"
    _cl_say "ready: source $dir/env; stop with: $0 stop $dir"
    cat "$dir/env"
}

_cl_status() {
    local dir=$1 n
    [[ -f $dir/env ]] || { _cl_say "no cluster in $dir"; exit 1; }
    # shellcheck disable=SC1090
    source "$dir/env"
    cat "$dir/env"
    if [[ -n ${ESC_REGIONS:-} ]]; then
        local r rv cfg
        for pid in ${ESC_CLUSTER_REGION_COORD_PIDS:-} ${ESC_CLUSTER_REGION_NODE_PIDS:-} \
            ${ESC_CLUSTER_PROXY_PIDS:-}; do
            if kill -0 "$pid" 2>/dev/null; then
                echo "pid $pid: running ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-100))"
            else
                echo "pid $pid: NOT running"
            fi
        done
        cfg=()
        for r in $ESC_REGIONS; do
            rv=ESC_REGION_CONFIG_${r//[^A-Za-z0-9]/_}
            cfg+=(--config "${!rv}")
        done
        "$ESC_BIN/escrowctl" regions "${cfg[@]}" || true
        return 0
    fi
    if kill -0 "$ESC_CLUSTER_COORD_PID" 2>/dev/null; then
        echo "coordinator pid $ESC_CLUSTER_COORD_PID: running"
    else
        echo "coordinator pid $ESC_CLUSTER_COORD_PID: NOT running"
    fi
    if [[ -n ${ESC_CLUSTER_STANDBY_PID:-} ]]; then
        if kill -0 "$ESC_CLUSTER_STANDBY_PID" 2>/dev/null; then
            echo "standby coordinator pid $ESC_CLUSTER_STANDBY_PID: running"
        else
            echo "standby coordinator pid $ESC_CLUSTER_STANDBY_PID: NOT running"
        fi
    fi
    for n in $ESC_CLUSTER_NODES; do
        pid_var=ESC_CLUSTER_NODE_PID_$n
        if kill -0 "${!pid_var}" 2>/dev/null; then
            echo "node $n pid ${!pid_var}: running"
        else
            echo "node $n pid ${!pid_var}: NOT running"
        fi
    done
    "$ESC_BIN/escrowctl" nodes || true
}

_cl_main() {
    case "${1:-}" in
    start)
        [[ -n ${2:-} ]] || _cl_usage
        local dir=$2
        shift 2
        _cl_start "$dir" "$@"
        ;;
    stop)
        [[ -n ${2:-} ]] || _cl_usage
        if [[ ! -d $2 ]]; then
            _cl_say "no directory $2"
            exit 1
        fi
        _cl_stop_dir "$(cd "$2" && pwd)"
        ;;
    status)
        [[ -n ${2:-} ]] || _cl_usage
        _cl_status "$2"
        ;;
    *)
        _cl_usage
        ;;
    esac
}

_cl_main "$@"
