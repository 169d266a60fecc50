#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ops.sh - what an operator relies on, against real processes and a real
# PostgreSQL (docs/configuration.md, docs/operating.md):
#   - --version on every binary names the release and the git commit;
#   - a config file with a bad key or value stops each daemon (exit 2) with
#     the file, the line and the key; the example files pass --check-config;
#   - a coordinator (auth on) and a node started from config files only,
#     a flag overriding the file (--log-format text over json);
#   - /healthz, /readyz (with the reason when not ready), escrow_build_info
#     and process_* metrics;
#   - SIGHUP: a cluster key rotation without a restart (the coordinator
#     accepts old and new, the node moves to the new one, the coordinator
#     drops the old one: the node keeps its heartbeats answered, a node still
#     on the old key is refused), the log level applied, a restart-only
#     change named, a broken file changing nothing; the daemons never stop
#     (nor on SIGPIPE);
#     a sale of exactly 40 units on the node after the rotation;
#   - JSON logs: every line of the coordinator's log is one JSON object with
#     ts, level, id and msg;
#   - the schema rule: escrowctl migrate --status, a daemon on a database one
#     version ahead runs, two ahead or not migrated is refused (exit 1) with
#     both versions and `escrowctl migrate` in the message.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

itest_begin ops
command -v curl >/dev/null || esc_fail "ops: curl is needed"
[[ -n ${ESC_SRC:-} ]] || ESC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=$ITEST_DIR

# HTTP status and body of http://127.0.0.1:$1$2 as "STATUS BODY".
http() {
    local body code
    body=$(curl -sS --max-time 30 -o - -w '\n%{http_code}' "http://127.0.0.1:$1$2" 2>/dev/null) || true
    code=${body##*$'\n'}
    body=${body%$'\n'*}
    echo "$code $body"
}
is_ready() {
    [[ $(http "$1" /readyz) == "200 "* ]]
}
# is_ready, failing at once if process $2 has exited.
ready_or_gone() {
    kill -0 "$2" 2>/dev/null || esc_fail "ops: pid $2 exited before it was ready"
    is_ready "$1"
}
# The value of series $2 at port $1 ("absent" if not there).
metric() {
    curl -sfS --max-time 30 "http://127.0.0.1:$1/metrics" |
        awk -v s="$2" '!f && index($0, s " ") == 1 { v = $2; f = 1 } END { print f ? v : "absent" }'
}
replied() {
    metric "$N1_METRICS" 'escrow_heartbeats_total{result="replied"}'
}
# True once the node's replied heartbeats are above $1 + 5 (answered after a change).
replied_above() {
    local now
    now=$(replied)
    [[ $now != absent ]] && ((${now%.*} > $1 + 5))
}
log_has() {
    grep -qF -- "$2" "$1" 2>/dev/null
}
alive() {
    kill -0 "$1" 2>/dev/null || esc_fail "ops: $2 (pid $1) is not running"
}

esc_step "--version on every binary: the release and the git commit"
want_version=$(sed -nE 's/^project\(escrow VERSION ([0-9.]+).*/\1/p' "$ESC_SRC/CMakeLists.txt")
[[ -n $want_version ]] || esc_fail "ops: no project version in CMakeLists.txt"
for b in escrow-segment escrow-coordinator escrow-gateway escrowctl escrow-load escrow-bench; do
    out=$("$ESC_BIN/$b" --version)
    [[ $out =~ ^$b\ $want_version\ \(commit\ ([0-9a-f]{7,}(-dirty)?|unknown)\)$ ]] ||
        esc_fail "ops: $b --version printed '$out'"
done

esc_step "config files: the examples pass --check-config; errors name file, line and key"
"$ESC_BIN/escrow-segment" --config "$ESC_SRC/examples/config/segment.ini" --check-config >/dev/null
"$ESC_BIN/escrow-coordinator" --config "$ESC_SRC/examples/config/coordinator.ini" --check-config \
    >/dev/null
# $1 daemon, $2 file text, $3 the error's text after the path; a real start, not --check-config
expect_refused() {
    local rc=0
    printf '%b' "$2" >"$D/bad.ini"
    timeout 60 "$ESC_BIN/$1" --config "$D/bad.ini" >"$D/bad.out" 2>&1 || rc=$?
    [[ $rc == 2 ]] || esc_fail "ops: $1 with a bad config file exited $rc, not 2: $(cat "$D/bad.out")"
    grep -qF -- "$D/bad.ini:$3" "$D/bad.out" || esc_fail "ops: $1 said '$(cat "$D/bad.out")', not '$3'"
}
expect_refused escrow-segment '[segment]\nnode_id = n1\nlisen = tcp://127.0.0.1:1\n' \
    "3: [segment] unknown key 'lisen'"
expect_refused escrow-segment "[segment]\nnode_id = n1\nlisten = tcp://127.0.0.1:1\ndsn = $ESCROW_DSN\nsweep_ms = 0\n" \
    "5: [segment] sweep_ms: must be 1..10000, not '0'"
expect_refused escrow-coordinator "[coordinator]\ndsn = $ESCROW_DSN\nlisten = tcp://127.0.0.1:1\npublish = tcp://127.0.0.1:2\nlease_ms = 10\n" \
    "5: [coordinator] lease_ms: must be a number in 100..600000, not '10'"
expect_refused escrow-coordinator '[coordinator]\nlog_level = loud\n' "2: [coordinator] log_level:"

esc_step "a coordinator (auth on) and node n1 from their config files"
COORD_URL=tcp://127.0.0.1:$(itest_port)
PUB_URL=tcp://127.0.0.1:$(itest_port)
C_METRICS=$(itest_port)
N1_PORT=$(itest_port)
N1_METRICS=$(itest_port)
esc_ctl cluster-key create >"$D/k1"
esc_ctl cluster-key create >"$D/k2"
cp "$D/k1" "$D/coord.key"
cp "$D/k1" "$D/n1.key"
cat >"$D/coordinator.ini" <<EOF
[coordinator]
dsn = $ESCROW_DSN
listen = $COORD_URL
publish = $PUB_URL
lease_ms = 5000
heartbeat_ms = 100
metrics = 127.0.0.1:$C_METRICS
log_format = json
auth = on
cluster_key = $D/coord.key
EOF
# n1.ini: $1 = the log level, $2 = sweep_ms
write_n1() {
    cat >"$D/n1.ini" <<EOF
[segment]
node_id = n1
dsn = $ESCROW_DSN
coordinator = $COORD_URL
listen = tcp://127.0.0.1:$N1_PORT
metrics = 127.0.0.1:$N1_METRICS
log_format = json
log_level = $1
sweep_ms = $2
cluster_key = $D/n1.key
EOF
}
write_n1 info 50
esc_spawn "$D/coord.log" "$ESC_BIN/escrow-coordinator" --config "$D/coordinator.ini"
CPID=$ESC_SPAWN_PID
esc_wait_for 60 ready_or_gone "$C_METRICS" "$CPID" ||
    esc_fail "ops: the coordinator not ready: $(http "$C_METRICS" /readyz)"
esc_spawn "$D/n1.log" "$ESC_BIN/escrow-segment" --config "$D/n1.ini" --log-format text
N1PID=$ESC_SPAWN_PID
esc_wait_for 60 ready_or_gone "$N1_METRICS" "$N1PID" ||
    esc_fail "ops: n1 not ready: $(http "$N1_METRICS" /readyz)"

esc_step "health, readiness and build and process metrics"
for p in "$C_METRICS" "$N1_METRICS"; do
    [[ $(http "$p" /healthz) == "200 ok"* ]] || esc_fail "ops: /healthz on $p: $(http "$p" /healthz)"
    for m in process_cpu_seconds_total process_resident_memory_bytes process_open_fds \
        process_max_fds process_start_time_seconds; do
        v=$(metric "$p" "$m")
        [[ $v != absent && $v != 0 ]] || esc_fail "ops: $m on $p is $v"
    done
    # the whole page first: grep -q would close the pipe on curl (pipefail)
    page=$(curl -sfS --max-time 30 "http://127.0.0.1:$p/metrics")
    grep -qE "^escrow_build_info\{.*version=\"$want_version\".*\} 1$" <<<"$page" ||
        esc_fail "ops: no escrow_build_info on $p"
done
# n2 points at a coordinator nobody runs: live, not ready, and says why
N2_METRICS=$(itest_port)
esc_spawn "$D/n2.log" "$ESC_BIN/escrow-segment" --node-id n2 --dsn "$ESCROW_DSN" \
    --listen "tcp://127.0.0.1:$(itest_port)" --coordinator "tcp://127.0.0.1:$(itest_port)" \
    --metrics "127.0.0.1:$N2_METRICS"
N2PID=$ESC_SPAWN_PID
n2_says_not_reached() {
    [[ $(http "$N2_METRICS" /readyz) == "503 not ready: coordinator "*" not reached yet"* ]]
}
esc_wait_for 60 n2_says_not_reached ||
    esc_fail "ops: n2 /readyz: $(http "$N2_METRICS" /readyz)"
[[ $(http "$N2_METRICS" /healthz) == "200 "* ]] || esc_fail "ops: n2 not live"
esc_node_stop "$N2PID" || esc_fail "ops: n2 did not stop cleanly on SIGTERM"

esc_step "the flag overrides the file: n1 logs text, the coordinator JSON"
! grep -q '^{' "$D/n1.log" || esc_fail "ops: n1 wrote JSON though --log-format text was given"

esc_step "SIGHUP on n1: the log level applied, sweep_ms needs a restart, a broken file changes nothing"
write_n1 debug 60
kill -HUP "$N1PID"
esc_wait_for 60 log_has "$D/n1.log" "reloaded reload=1 changed=2" || esc_fail "ops: n1 did not reload"
grep -qF 'log_level info -> debug (applied)' "$D/n1.log" || esc_fail "ops: log level change not logged"
grep -qF 'sweep_ms 50 -> 60: needs a restart (still 50)' "$D/n1.log" ||
    esc_fail "ops: the restart-only change is not named"
echo 'bogus = 1' >>"$D/n1.ini"
kill -HUP "$N1PID"
esc_wait_for 60 log_has "$D/n1.log" "not reloaded, running on as before: $D/n1.ini:11: [segment] unknown key 'bogus'" ||
    esc_fail "ops: a broken file on SIGHUP was not refused with its line and key"
write_n1 info 50
alive "$N1PID" n1
# SIGPIPE is ignored: a peer closing a socket mid-write never kills a daemon
kill -PIPE "$N1PID"
kill -PIPE "$CPID"
is_ready "$N1_METRICS" || esc_fail "ops: n1 not ready after SIGPIPE"
alive "$N1PID" n1
alive "$CPID" coordinator

esc_step "cluster key rotation with SIGHUP, no restart"
# 1. the coordinator takes K2 and still accepts K1
cat "$D/k2" "$D/k1" >"$D/coord.key"
kill -HUP "$CPID"
esc_wait_for 60 log_has "$D/coord.log" "\"msg\":\"reloaded\",\"reload\":\"1\"" || esc_fail "ops: the coordinator did not reload"
base=$(replied)
esc_wait_for 60 replied_above "$base" || esc_fail "ops: n1's heartbeats unanswered after step 1"
# 2. n1 moves to K2
cp "$D/k2" "$D/n1.key"
kill -HUP "$N1PID"
esc_wait_for 60 log_has "$D/n1.log" "reload: cluster_key" || esc_fail "ops: n1 did not log the key change"
base=$(replied)
esc_wait_for 60 replied_above "$base" || esc_fail "ops: n1's heartbeats unanswered after step 2"
# 3. the coordinator drops K1
cp "$D/k2" "$D/coord.key"
kill -HUP "$CPID"
esc_wait_for 60 log_has "$D/coord.log" "cluster_key (previous, accepted)" ||
    esc_fail "ops: the coordinator did not log dropping the previous key"
base=$(replied)
esc_wait_for 60 replied_above "$base" || esc_fail "ops: n1's heartbeats unanswered after step 3"
alive "$CPID" coordinator
alive "$N1PID" n1
is_ready "$N1_METRICS" || esc_fail "ops: n1 not ready after the rotation: $(http "$N1_METRICS" /readyz)"
# a node still on K1 is refused now
N3_METRICS=$(itest_port)
esc_spawn "$D/n3.log" env ESCROW_CLUSTER_KEY="$(cat "$D/k1")" "$ESC_BIN/escrow-segment" --node-id n3 \
    --dsn "$ESCROW_DSN" --listen "tcp://127.0.0.1:$(itest_port)" --coordinator "$COORD_URL" \
    --metrics "127.0.0.1:$N3_METRICS"
N3PID=$ESC_SPAWN_PID
esc_wait_for 60 log_has "$D/n3.log" "coordinator refused a heartbeat" ||
    esc_fail "ops: a node with the retired key was not refused"
[[ $(http "$N3_METRICS" /readyz) == "503 "* ]] || esc_fail "ops: n3 (retired key) is ready"
esc_node_stop "$N3PID" || true

esc_step "a sale after the rotation: exactly 40 sold on n1"
esc_ctl item create t1 sale --total 40 --segments 2 >/dev/null
served() {
    [[ $(itest_q "SELECT count(*) FROM segments WHERE item_id = 'sale' AND node_id = 'n1'") == 2 ]]
}
esc_wait_for 60 served || esc_fail "ops: t1/sale's segments not placed on n1"
sell() {
    "$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$N1_PORT" --tenant t1 --item sale \
        --buyers 200 --concurrency 20 --confirm 1 --release 0 --key-prefix ops --seed 1 \
        --deadline-ms 30000 --quiet >"$D/load.out" 2>&1 || true
    [[ $(itest_q "SELECT sold FROM conservation WHERE item_id = 'sale'") == 40 ]]
}
esc_wait_for 120 sell ||
    esc_fail "ops: the sale did not sell 40: $(cat "$D/load.out")"
itest_eq "$(itest_q "SELECT sold || ' ' || held || ' ' || available FROM conservation WHERE item_id = 'sale'")" \
    "40 0 0" "t1/sale sold/held/available"
itest_invariants

esc_step "JSON logs: every coordinator line is an object with ts, level, id, msg"
python3 - "$D/coord.log" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    o = json.loads(line)
    assert isinstance(o, dict) and {"ts", "level", "id", "msg"} <= o.keys(), line
    n += 1
assert n >= 5, n
PY

esc_step "SIGTERM: both stop cleanly"
esc_node_stop "$N1PID" || esc_fail "ops: n1 did not exit 0 on SIGTERM"
esc_node_stop "$CPID" || esc_fail "ops: the coordinator did not exit 0 on SIGTERM"

esc_step "schema version: migrate --status, one version ahead runs, two ahead or none refused"
V=$(itest_q "SELECT max(version) FROM schema_migrations")
esc_ctl migrate --status >"$D/status.out" || esc_fail "ops: migrate --status not 0 on a current database"
grep -qx "database schema version: $V" "$D/status.out" || esc_fail "ops: $(cat "$D/status.out")"
itest_q "INSERT INTO schema_migrations (version, name) VALUES ($V + 1, 'from_the_next_release')" >/dev/null
rc=0
esc_ctl migrate --status >"$D/status.out" || rc=$?
[[ $rc == 1 ]] && grep -qF 'unknown to this escrowctl' "$D/status.out" ||
    esc_fail "ops: migrate --status with a newer migration: rc $rc, $(cat "$D/status.out")"
# one ahead: a node of this release runs (a rolling upgrade)
itest_node s1 "$(itest_port)"
esc_wait_for 60 log_has "$ITEST_NODE_LOG" "one ahead of escrow-segment's version $V" ||
    esc_fail "ops: no V+1 warning"
esc_node_stop "$ITEST_NODE_PID" || esc_fail "ops: s1 on schema V+1 did not stop cleanly"
# two ahead: both daemons refuse, naming both versions and escrowctl migrate
itest_q "INSERT INTO schema_migrations (version, name) VALUES ($V + 2, 'two_releases_ahead')" >/dev/null
refused() { # $1 log, $2 version in the database
    grep -qF "schema is at version $2" "$1" && grep -qF "version $V" "$1" &&
        grep -qF 'escrowctl migrate' "$1" || esc_fail "ops: the refusal does not say it: $(tail -3 "$1")"
}
rc=0
timeout 120 "$ESC_BIN/escrow-segment" --node-id s2 --dsn "$ESCROW_DSN" \
    --listen "tcp://127.0.0.1:$(itest_port)" >"$D/s2.log" 2>&1 || rc=$?
[[ $rc == 1 ]] || esc_fail "ops: escrow-segment on schema V+2 exited $rc, not 1"
refused "$D/s2.log" $((V + 2))
rc=0
timeout 120 "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" --listen "tcp://127.0.0.1:$(itest_port)" \
    --publish "tcp://127.0.0.1:$(itest_port)" >"$D/c2.log" 2>&1 || rc=$?
[[ $rc == 1 ]] || esc_fail "ops: escrow-coordinator on schema V+2 exited $rc, not 1"
refused "$D/c2.log" $((V + 2))
itest_q "DELETE FROM schema_migrations WHERE version > $V" >/dev/null
# not migrated: refused, asking for escrowctl migrate
itest_q "CREATE DATABASE bare" >/dev/null
BARE_DSN="$ESCROW_DSN dbname=bare"
rc=0
timeout 120 "$ESC_BIN/escrow-coordinator" --dsn "$BARE_DSN" --listen "tcp://127.0.0.1:$(itest_port)" \
    --publish "tcp://127.0.0.1:$(itest_port)" >"$D/c3.log" 2>&1 || rc=$?
[[ $rc == 1 ]] || esc_fail "ops: escrow-coordinator on an unmigrated database exited $rc, not 1"
refused "$D/c3.log" 0
rc=0
ESCROW_DSN=$BARE_DSN "$ESC_BIN/escrowctl" migrate --status >"$D/status.out" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -qx 'database schema version: 0' "$D/status.out" ||
    esc_fail "ops: migrate --status on an empty database: rc $rc, $(cat "$D/status.out")"
esc_ctl migrate --status >/dev/null || esc_fail "ops: migrate --status not 0 once the rows are gone"

itest_pass
