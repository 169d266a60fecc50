#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# region_lib.sh - what the region tests share: two regions from
# examples/regions on one machine (tests/support/cluster.sh --regions), and
# per-region helpers. Region names are as in the INI files (eu, us).
#
#   region_start [--proxy] [--quota KEY=VALUE]...
#                                 start both regions; sets REGION_DIR; --quota sets a
#                                 [quota] key of every region (e.g. auto=off)
#   region_get WHAT R             $ESC_REGION_<WHAT>_<R> (CONFIG, DSN, COORD, PUBLISH, NODES,
#                                 COORD_PID)
#   region_psql R SQL             one statement in region R's database, unaligned output
#   region_load R ARGS...         escrow-load through R's coordinator (tenant t1; a 30 s
#                                 deadline: the tests count every buyer's unit)
#   region_coord_restart R [ENV=VALUE...]   kill -9 R's coordinator and start a new one
#                                 (with the environment given: failpoints); waits for
#                                 COORD-READY; sets REGION_COORD_LOG
#   region_wait R SQL WANT SECONDS  wait until the statement in R's database prints WANT;
#                                 returns 1 (printing the last value) on timeout
#   region_wait_placed ITEM       wait (60 s) until every region's coordinator has read ITEM:
#                                 each of its segments in each region has an owner (epoch > 0)
#   region_gone PID               true once PID has exited (a zombie counts as exited)
#   region_link MODE              every link between the coordinators: pass|cut|blackhole
#                                 (needs region_start --proxy); returns once every proxy
#                                 logged the mode
#   region_load_bg R OUT ARGS...  region_load in the background, output to OUT
#   region_load_wait              waits for those, prints their output, fails if any did
#   region_check                  escrowctl check --global over every region; fails with
#                                 its output unless the verdict is ok
#   region_sampler_start          region_check over and over in the background until
#   region_sampler_stop           ... stops it: fails unless every sample was ok (and there
#                                 was at least one); prints how many
# shellcheck source=tests/support/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"

REGION_DIR=""
REGION_STARTS=0

region_start() {
    local src=$ESC_SRC/examples/regions kv
    local -a args=() sets=()
    while (($#)); do
        case $1 in
        --quota) sets+=("$2"); shift 2 ;;
        *) args+=("$1"); shift ;;
        esac
    done
    REGION_DIR=$(mktemp -d /tmp/escrow-regions-test.XXXXXX)
    if ((${#sets[@]} > 0)); then # the files' commented defaults, set
        mkdir "$REGION_DIR/conf"
        cp "$src"/*.ini "$REGION_DIR/conf/"
        for kv in "${sets[@]}"; do
            sed -i "s/^;${kv%%=*} = .*/${kv%%=*} = ${kv#*=}/" "$REGION_DIR/conf"/*.ini
        done
        src=$REGION_DIR/conf
    fi
    esc_cluster_start "$REGION_DIR" --regions "$src" "${args[@]}"
    # after the cluster's own stop hook (hooks run in order): the logs stay
    # until everything stopped
    [[ ${ESC_KEEP:-0} == 1 ]] || esc_on_exit "rm -rf '$REGION_DIR'"
}

region_get() {
    local v=ESC_REGION_$1_${2//[^A-Za-z0-9]/_}
    echo "${!v}"
}

region_psql() {
    "$ESC_PG_BINDIR/psql" "$(region_get DSN "$1")" -At -X -q -v ON_ERROR_STOP=1 -c "$2"
}

region_load() {
    local r=$1
    shift
    "$ESC_BIN/escrow-load" --coordinator "$(region_get COORD "$r")" \
        --routes "$(region_get PUBLISH "$r")" --dsn "$(region_get DSN "$r")" --tenant t1 \
        --deadline-ms 30000 "$@"
}

region_coord_restart() {
    local r=$1 rv=${1//[^A-Za-z0-9]/_}
    shift
    local pid
    pid=$(region_get COORD_PID "$r")
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    esc_wait_for 60 region_gone "$pid" || esc_fail "the coordinator of $r (pid $pid) survived SIGKILL"
    REGION_STARTS=$((REGION_STARTS + 1))
    local log=$REGION_DIR/$r-coordinator.$REGION_STARTS.log
    esc_spawn "$log" env "$@" "$ESC_BIN/escrow-coordinator" --config "$(region_get CONFIG "$r")"
    printf -v "ESC_REGION_COORD_PID_$rv" '%s' "$ESC_SPAWN_PID"
    REGION_COORD_LOG=$log
    esc_wait_for 60 grep -q COORD-READY "$log" || {
        tail -n 30 "$log" >&2
        esc_fail "the coordinator of $r did not restart"
    }
}

region_gone() {
    ! kill -0 "$1" 2>/dev/null || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

# True when every region has ITEM and each of its segments there has an owner
# at an epoch > 0 (the coordinator read the item and placed it).
_region_placed() {
    local r
    for r in $ESC_REGIONS; do
        [[ $(region_psql "$r" "SELECT count(*) > 0 AND count(*) FILTER (WHERE node_id IS NULL OR epoch = 0) = 0
            FROM segments WHERE item_id = '$1'") == t ]] || return 1
    done
}

region_wait_placed() {
    esc_wait_for 60 _region_placed "$1" || esc_fail "the coordinators did not place $1 in every region within 60 s"
}

# True when the proxy of link $1 has logged mode $2 last (a proxy starts in
# pass and logs only changes).
_region_proxy_mode() {
    local last
    last=$(grep -o 'PROXY mode=.*' "$REGION_DIR/proxy-$1.log" 2>/dev/null | tail -n 1 || true)
    [[ $last == "PROXY mode=$2" || (-z $last && $2 == pass) ]]
}

region_link() {
    local link mv
    for link in $ESC_PROXIES; do
        mv=ESC_PROXY_MODE_$link
        echo "$1" >"${!mv}"
    done
    # the proxies look at their mode file every 100 ms and log each change
    for link in $ESC_PROXIES; do
        esc_wait_for 60 _region_proxy_mode "$link" "$1" || esc_fail "the proxy of link $link did not switch to $1"
    done
}

region_wait() {
    local r=$1 sql=$2 want=$3 deadline=$((SECONDS + $4)) got
    while :; do
        got=$(region_psql "$r" "$sql")
        [[ $got == "$want" ]] && return 0
        if ((SECONDS >= deadline)); then
            echo "region_wait: $r: '$sql' gave '$got', not '$want', after $4 s" >&2
            return 1
        fi
        sleep 0.1
    done
}

REGION_LOAD_PIDS=()
REGION_LOAD_OUTS=()
region_load_bg() {
    local r=$1 out=$2
    shift 2
    region_load "$r" "$@" >"$out" 2>&1 &
    REGION_LOAD_PIDS+=($!)
    REGION_LOAD_OUTS+=("$out")
}

region_load_wait() {
    local p rc=0
    for p in "${REGION_LOAD_PIDS[@]}"; do
        wait "$p" || rc=$?
    done
    cat "${REGION_LOAD_OUTS[@]}"
    REGION_LOAD_PIDS=()
    REGION_LOAD_OUTS=()
    ((rc == 0)) || esc_fail "a load generator reported a violation or an error (exit $rc)"
}

_region_cfgs() {
    local r
    for r in $ESC_REGIONS; do
        printf -- '--config\n%s\n' "$(region_get CONFIG "$r")"
    done
}

# WANT_RC ARGS...: escrowctl ARGS must exit WANT_RC; its output in
# $REGION_DIR/out and err.
region_ctl() {
    esc_ctl_expect "$REGION_DIR" "$@"
}

# SECONDS WANT_RC ARGS...: escrowctl ARGS, asked again while the answer is
# "try later" (a peer region not heard yet, a coordinator that has just
# started: nothing changes); the first other answer must exit WANT_RC. Its
# output in $REGION_DIR/out and err.
_region_ctl_settled_once() {
    local want=$1 rc=0
    shift
    esc_ctl "$@" >"$REGION_DIR/out" 2>"$REGION_DIR/err" || rc=$?
    if grep -qE "not every region has reported|try later" "$REGION_DIR/err"; then
        return 1
    fi
    ((rc == want)) || { cat "$REGION_DIR/out" "$REGION_DIR/err" >&2; esc_fail "escrowctl $* exited $rc, expected $want"; }
}
region_ctl_settled() {
    local secs=$1
    shift
    esc_wait_for "$secs" _region_ctl_settled_once "$@" || {
        cat "$REGION_DIR/out" "$REGION_DIR/err" >&2
        esc_fail "escrowctl ${*:2} still answered 'try later' after ${secs} s"
    }
}

# FILE TEXT: $REGION_DIR/FILE (out or err) holds TEXT.
region_has() {
    grep -qF -- "$2" "$REGION_DIR/$1" || {
        cat "$REGION_DIR/out" "$REGION_DIR/err" >&2
        esc_fail "no '$2' in $1"
    }
}

region_check() {
    local -a cfgs
    mapfile -t cfgs < <(_region_cfgs)
    esc_ctl check --global "${cfgs[@]}" >"$REGION_DIR/check.out" 2>&1 || {
        cat "$REGION_DIR/check.out" >&2
        esc_fail "check --global: ${1:-}"
    }
}

REGION_SAMPLER_PID=""
region_sampler_start() {
    local -a cfgs
    mapfile -t cfgs < <(_region_cfgs)
    rm -f "$REGION_DIR/sampler.stop" "$REGION_DIR/sampler.bad" "$REGION_DIR/sampler.count"
    (
        n=0
        while [[ -d $REGION_DIR && ! -e $REGION_DIR/sampler.stop ]]; do
            if ! esc_ctl check --global "${cfgs[@]}" >"$REGION_DIR/sampler.out" 2>&1; then
                cat "$REGION_DIR/sampler.out" >>"$REGION_DIR/sampler.bad"
            fi
            n=$((n + 1))
            echo "$n" >"$REGION_DIR/sampler.count"
            sleep 0.2 # leave the machine to the daemons under test
        done
    ) 2>/dev/null &
    REGION_SAMPLER_PID=$!
    esc_on_exit "kill $REGION_SAMPLER_PID 2>/dev/null || true"
}

region_sampler_stop() {
    touch "$REGION_DIR/sampler.stop"
    wait "$REGION_SAMPLER_PID" || true
    local n
    n=$(cat "$REGION_DIR/sampler.count" 2>/dev/null || echo 0)
    if [[ -s $REGION_DIR/sampler.bad ]]; then
        head -n 40 "$REGION_DIR/sampler.bad" >&2
        esc_fail "check --global failed in a sample (of $n)"
    fi
    ((n > 0)) || esc_fail "check --global was never sampled"
    echo "check --global: $n samples, every one ok"
}
