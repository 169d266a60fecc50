#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# region_config.sh - the daemons' --config FILE (common/region_cfg.h).
#
# A bad file (a missing key, an unknown key, a bad DSN, two endpoints on one
# address) stops escrow-coordinator and escrow-segment before they start
# anything: exit code 2 (at once; one that runs 10 s is killed and fails the
# test), stderr names FILE:LINE: and the key, no
# socket listens on any of the file's ports, and nothing connected to the
# database the file names (a listener on that port counts connections). Then
# a valid file starts a coordinator and a managed node against a private
# PostgreSQL (escrowctl --config migrate first) up to COORD-READY and
# SEG-READY, escrowctl --config reaches both through the file, and both stop
# cleanly on SIGTERM.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

[[ -x $ESC_BIN/escrow-coordinator && -x $ESC_BIN/escrow-segment ]] ||
    esc_fail "escrow-coordinator/escrow-segment not found in ESC_BIN=${ESC_BIN:-}"
t0=$SECONDS
work=$(mktemp -d /tmp/escrow-region-config.XXXXXX)
esc_on_exit "[[ \${ESC_KEEP:-0} == 1 ]] || rm -rf '$work'"
unset ESCROW_DSN ESCROW_COORDINATOR # the file must be what names them

# The file's ports, and a fake database that counts connections.
p_coord=$(esc_free_port)
p_pub=$(esc_free_port)
p_node=$(esc_free_port)
p_metrics=$(esc_free_port)
p_db=$(esc_free_port)
ports=("$p_coord" "$p_pub" "$p_node" "$p_metrics")
esc_spawn "$work/fakedb.log" python3 -u -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    print("CONNECTED", flush=True)
    c.close()
' "$p_db"
esc_wait_for 60 grep -q listening "$work/fakedb.log" || esc_fail "the fake database did not start"

# Writes $work/$1.ini: a valid [region] (lines 1..6) and [nodes] (lines
# 7..8), with sed expressions $2... applied.
write_ini() {
    local name=$1
    shift
    cat >"$work/$name.ini" <<EOF
[region]
name = r1
dsn = host=127.0.0.1 port=$p_db dbname=escrow user=escrow connect_timeout=1
coordinator = tcp://127.0.0.1:$p_coord
publish = tcp://127.0.0.1:$p_pub
metrics = 127.0.0.1:$p_metrics
[nodes]
r1-n1 = tcp://127.0.0.1:$p_node
EOF
    local expr
    for expr in "$@"; do
        sed -i "$expr" "$work/$name.ini"
    done
}

# True if something listens on TCP port $1.
listening() {
    [[ -n $(ss -ltnH "sport = :$1") ]]
}

# Runs a daemon on a bad file; expects exit 2, "FILE:LINE:" and the key on
# stderr, no listening socket. A daemon that starts anyway runs until it is
# killed after 10 s (a bound on a wrong start, generous for a slow machine's
# sanitizer start-up).  $1 what, $2 file, $3 ":LINE:", $4 the key, then the
# command line.
expect_refused() {
    local what=$1 file=$2 line=$3 key=$4 rc=0 t
    shift 4
    t=$(date +%s%N)
    timeout -s KILL 10 "$@" >"$work/out" 2>"$work/err" || rc=$?
    t=$((($(date +%s%N) - t) / 1000000))
    if [[ $rc -ne 2 ]]; then
        cat "$work/out" "$work/err" >&2
        esc_fail "$what: exited $rc after $t ms, expected 2"
    fi
    grep -qF -e "$file$line" "$work/err" || {
        cat "$work/err" >&2
        esc_fail "$what: no '$file$line' in stderr"
    }
    grep -qF -e "$key" "$work/err" || {
        cat "$work/err" >&2
        esc_fail "$what: no '$key' in stderr"
    }
    local p
    for p in "${ports[@]}"; do
        ! listening "$p" || esc_fail "$what: port $p is listening"
    done
    echo "ok ($t ms): $(head -n 1 "$work/err")"
}

esc_step "bad files: exit 2 before anything starts"
write_ini missing '3d'
write_ini unknown '5a lisen = tcp://127.0.0.1:1'
write_ini baddsn 's/^dsn = .*/dsn = host=127.0.0.1 port/'
write_ini overlap "s/^r1-n1 = .*/r1-n1 = tcp:\/\/127.0.0.1:$p_pub/"
write_ini metrics_overlap "s/^metrics = .*/metrics = $p_coord/"
declare -A want_line=([missing]=":1:" [unknown]=":6:" [baddsn]=":3:" [overlap]=":8:" [metrics_overlap]=":6:")
declare -A want_key=([missing]="missing key 'dsn'" [unknown]="unknown key 'lisen'"
    [baddsn]="[region] dsn:" [overlap]="[nodes] r1-n1: endpoint tcp://127.0.0.1:$p_pub is already used by publish (line 5)"
    [metrics_overlap]="[region] metrics: endpoint $p_coord is already used by coordinator (line 4)")
for f in missing unknown baddsn overlap metrics_overlap; do
    file=$work/$f.ini
    expect_refused "coordinator, $f" "$file" "${want_line[$f]}" "${want_key[$f]}" \
        "$ESC_BIN/escrow-coordinator" --config "$file"
    expect_refused "segment, $f" "$file" "${want_line[$f]}" "${want_key[$f]}" \
        "$ESC_BIN/escrow-segment" --config "$file" --node-id r1-n1
done

esc_step "usage errors: unknown node, --config with the flags it replaces, a missing file"
write_ini good
expect_refused "segment, unknown node" "$work/good.ini" ": no node 'r1-n9'" "[nodes]" \
    "$ESC_BIN/escrow-segment" --config "$work/good.ini" --node-id r1-n9
expect_refused "coordinator, --config and --dsn" "--config" " excludes" "--dsn" \
    "$ESC_BIN/escrow-coordinator" --config "$work/good.ini" --dsn dbname=x
expect_refused "segment, --config and --listen" "--config" " excludes" "--listen" \
    "$ESC_BIN/escrow-segment" --config "$work/good.ini" --node-id r1-n1 --listen tcp://127.0.0.1:1
expect_refused "coordinator, no file" "$work/none.ini" ": cannot open" "No such file" \
    "$ESC_BIN/escrow-coordinator" --config "$work/none.ini"
expect_refused "escrowctl, bad file" "$work/unknown.ini" ":6:" "unknown key 'lisen'" \
    "$ESC_BIN/escrowctl" --config "$work/unknown.ini" check

fake_connects=$(grep -c CONNECTED "$work/fakedb.log" || true)
esc_assert_eq "$fake_connects" 0 "connections to the file's database by refused daemons"

esc_step "a valid file: coordinator and node against a private PostgreSQL"
esc_pg_start
write_ini live "s/^dsn = .*/dsn = $ESCROW_DSN/" '$a [coordinator]\ncheck_sweep_ms = 120000\ncheck_ms = 3000'
unset ESCROW_DSN
esc_ctl --config "$work/live.ini" migrate >"$work/migrate.log" 2>&1 || {
    cat "$work/migrate.log" >&2
    esc_fail "escrowctl --config migrate failed"
}
# a flag after --config overrides the file's [coordinator] tuning
esc_spawn "$work/coord.log" "$ESC_BIN/escrow-coordinator" --config "$work/live.ini" \
    --heartbeat-ms 100 --lease-ms 1000 --check-ms 2000
coord_pid=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$work/coord.log" || {
    tail -n 30 "$work/coord.log" >&2
    esc_fail "the coordinator did not log COORD-READY within 60 s"
}
grep -q 'COORD-INVARIANT conservation check every 2000 ms, every item at least every 120000 ms' \
    "$work/coord.log" || esc_fail "the file's check_sweep_ms (or the flag over its check_ms) was not taken"
esc_spawn "$work/node.log" "$ESC_BIN/escrow-segment" --config "$work/live.ini" --node-id r1-n1
node_pid=$ESC_SPAWN_PID
esc_wait_for 60 grep -q SEG-READY "$work/node.log" || {
    tail -n 30 "$work/node.log" >&2
    esc_fail "the node did not log SEG-READY within 60 s"
}
for p in "$p_coord" "$p_pub" "$p_node" "$p_metrics"; do
    listening "$p" || esc_fail "nothing listens on port $p of the file"
done
# escrowctl through the file: the node heartbeats the file's coordinator
_node_up() {
    esc_ctl --config "$work/live.ini" nodes >"$work/nodes.out" 2>&1 &&
        grep -qE "^r1-n1 +[^ ]+ +up +tcp://127\.0\.0\.1:$p_node " "$work/nodes.out"
}
esc_wait_for 60 _node_up || { cat "$work/nodes.out" >&2; esc_fail "r1-n1 is not up in escrowctl nodes"; }
esc_ctl --config "$work/live.ini" item create t1 tee --total 10 --segments 2 >/dev/null
esc_ctl --config "$work/live.ini" --timeout-ms 30000 item pause t1 tee >"$work/pause.out" 2>&1 || {
    cat "$work/pause.out" >&2
    esc_fail "escrowctl --config item pause (through the file's coordinator) failed"
}
curl_out=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$p_metrics/metrics', timeout=30).read().decode())" 2>&1) ||
    esc_fail "the file's metrics address does not answer: $curl_out"
grep -q escrow_coord_ <<<"$curl_out" || esc_fail "no coordinator metrics on the file's metrics address"

esc_step "stop both cleanly"
esc_node_stop "$node_pid" || esc_fail "the node did not stop cleanly"
esc_node_stop "$coord_pid" || esc_fail "the coordinator did not stop cleanly"
grep -q SEG-STOP "$work/node.log" || esc_fail "no SEG-STOP line"
grep -q COORD-STOP "$work/coord.log" || esc_fail "no COORD-STOP line"

echo "PASS region_config ($((SECONDS - t0)) s)"
