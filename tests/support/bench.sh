#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench.sh - escrow against what a shop would pick instead, side by side, in
# one run on this machine and ONE private PostgreSQL (fsync and
# synchronous_commit on, as tests/support/pg.sh leaves them; checked below).
# A benchmark, not a test: it prints figures and ratios and asserts nothing
# about them.
#
#   make bench                       build (RelWithDebInfo, no sanitizers) and run this
#   ESC_BIN=build/bin tests/support/bench.sh [--quick]
#
# What it measures (each for ESC_BENCH_SECONDS after a warm-up; escrow-bench
# does the measuring, one invocation per line below, see tests/tools/escrow-bench/):
#   A   one hot row: UPDATE bench.stock SET available = available - 1
#       WHERE id = 1 AND available >= 1 RETURNING available, autocommit,
#       from 1 and from 128 connections; and PostgreSQL's "no" (row at 0)
#   B   the same item in 100 rows, each buyer on a random row, 128 connections
#   C   a Redis Lua check-and-decrement gate (EVALSHA), 128 connections, on a
#       private redis-server: no persistence, then appendonly yes +
#       appendfsync always; and the gate's "no". SKIPPED (never counted as
#       measured) when redis-server is not installed.
#   escrow, through libescrow (routing mode: --coordinator/--routes), one hot
#       item of ESC_BENCH_TOTAL units in 8 segments, ESC_BENCH_INFLIGHT
#       requests in flight, every hold durable before it is answered:
#       - 1 node and 2 nodes (the second node joins the same cluster):
#         holds/s, p50/p99, node CPU per hold (utime+stime from /proc) and
#         PostgreSQL CPU per hold (the postmaster and its backends);
#       - node memory per live hold: RSS before and after ESC_BENCH_MEM_HOLDS
#         holds that stay live (10 min TTL), divided by their number;
#       - "no" once sold out: answered by the node (single-endpoint mode, every
#         "no" crosses the wire; a managed node says SEGMENT_EMPTY for a dry
#         item, counted as a "no") and from the client's cached sold-out flag;
#       - p99 hold latency at 80% of the 1-node peak (open loop, rate-limited;
#         the peak measured again right before, in the same state);
#       - durable hold p99 while 99% of the requests are "no" (single-endpoint:
#         a sold-out item flooded next to a live one).
# Each measurement runs ESC_BENCH_REPS (3) times (escrow: on a fresh item
# each time); tests/support/bench_median.py turns the repetitions into one
# line of medians with each key's min and max.
# Before and after the run it records the machine's state (CPU model, cores,
# load average, and the share of CPU time stolen by the hypervisor and spent
# in iowait over the run, from /proc/stat) and prints the PostgreSQL settings
# that shape commit latency. The 80%-of-peak run writes every answer's latency
# (escrow-bench --timeline) and tests/support/latency_svg.py draws p50/p99 per
# 100 ms window over time, with PostgreSQL's checkpoints and autovacuum runs
# from its log, as r80-REP.svg in the results directory.
# Then `escrow-bench report` prints the table (what, median, min-max, unit,
# and the earlier notes of docs/performance.md for comparison), the ratios
# of the medians and one line
#   RESULT a1_tps=... a1_tps_min=... a1_tps_max=... ... redis_measured=1|0
# and what the nodes' SEG-STOP lines say about the group commit (batches,
# rows per batch, commit time). Finally the RESULT line is checked: every key
# present and numeric (Redis keys may be "skipped" only without
# redis-server); exit 1 otherwise. That check is all the smoke test
# (ctest bench_smoke, ESC_BENCH_QUICK=1) asserts.
#
# Without redis-server (make bench installs it: .ci/packages.txt) baseline C
# is not measured and the run says so in a box at its start and its end.
#
# --quick (or ESC_BENCH_QUICK=1, make bench QUICK=1): one repetition, one
# second per measurement, 16 baseline connections, small counts; for the
# smoke test and a first look, not for figures. The knobs below still
# override it.
# Knobs: ESC_BENCH_REPS (3) ESC_BENCH_SECONDS (6) ESC_BENCH_WARMUP_MS (1000)
# ESC_BENCH_CONNS (128) ESC_BENCH_INFLIGHT (512) ESC_BENCH_TOTAL (2000000: e1, the
# peak again and the 80% run share an item, and must not sell it out)
# ESC_BENCH_MEM_HOLDS (100000) ESC_BENCH_PG_CONF (postgresql.conf lines for
# the private PostgreSQL, default below) ESC_BENCH_WAL_PREWARM (1; 0 skips
# the WAL pre-warm)
# ESC_BENCH_DIR (logs and results; default a fresh /tmp/escrow-bench.XXXXXX,
# kept). The whole run takes about 10 minutes on 2 cores (quick: 1.5).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/lib.sh"

quick=${ESC_BENCH_QUICK:-0}
[[ ${1:-} == --quick ]] && quick=1
# quick: small defaults; a knob set in the environment still wins (e.g.
# ESC_BENCH_QUICK=1 ESC_BENCH_REPS=3 ESC_BENCH_SECONDS=3 for a short run with ranges)
if ((quick)); then
    d_reps=1 d_seconds=1 d_warmup_ms=300 d_conns=16 d_inflight=128 d_total=200000 d_mem_holds=2000
else
    d_reps=3 d_seconds=6 d_warmup_ms=1000 d_conns=128 d_inflight=512 d_total=2000000 d_mem_holds=100000
fi
reps=${ESC_BENCH_REPS:-$d_reps}
seconds=${ESC_BENCH_SECONDS:-$d_seconds}
warmup_ms=${ESC_BENCH_WARMUP_MS:-$d_warmup_ms}
conns=${ESC_BENCH_CONNS:-$d_conns}
inflight=${ESC_BENCH_INFLIGHT:-$d_inflight}
total=${ESC_BENCH_TOTAL:-$d_total}
mem_holds=${ESC_BENCH_MEM_HOLDS:-$d_mem_holds}
tenant=bench
segments=8
support=$(cd "$(dirname "$0")" && pwd)
[[ $reps =~ ^[1-9][0-9]?$ ]] || esc_fail "ESC_BENCH_REPS must be 1..99, not '$reps'"
# The private PostgreSQL (pg.sh): its checkpoints and autovacuum runs logged,
# so the latency plot can mark them.
# min_wal_size: what a checkpoint keeps as recycled WAL segments (see the
# pre-warm below).
ESC_PG_CONF_EXTRA=${ESC_BENCH_PG_CONF:-"log_checkpoints = on
log_autovacuum_min_duration = 0
min_wal_size = 2GB"}
export ESC_PG_CONF_EXTRA

for b in escrow-bench escrow-segment escrow-coordinator escrowctl escrow-load; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}' (build first: make bench)"
done
own_dir=0
dir=${ESC_BENCH_DIR:-}
if [[ -z $dir ]]; then
    dir=$(mktemp -d /tmp/escrow-bench.XXXXXX)
    own_dir=1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
results=$dir/results.txt
: >"$results"
echo "escrow-bench: $reps repetition(s) of ${seconds} s per measurement, logs and results in $dir"

# ---- the machine's state --------------------------------------------------------
# The first line of /proc/stat: cpu user nice system idle iowait irq softirq steal ...
cpu_times() { awk '$1 == "cpu" { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $6, $9; exit }' /proc/stat; }
machine_state() { # WHEN: before | after
    local load
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "MACHINE $1: load average $load; $(nproc) cores; $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" |
        tee -a "$dir/machine.txt"
    if [[ $1 == after ]]; then
        read -r t1 w1 s1 < <(cpu_times)
        awk -v t="$((t1 - cpu_t0))" -v w="$((w1 - cpu_w0))" -v s="$((s1 - cpu_s0))" 'BEGIN {
            printf "MACHINE over the run: steal %.1f%%, iowait %.1f%% of all CPU time\n",
                t ? 100 * s / t : 0, t ? 100 * w / t : 0 }' | tee -a "$dir/machine.txt"
    fi
}
read -r cpu_t0 cpu_w0 cpu_s0 < <(cpu_times)
: >"$dir/machine.txt"
machine_state before

redis_box() {
    printf '%s\n' \
        "**********************************************************************" \
        "*  BASELINE C (Redis) NOT MEASURED: redis-server is not installed.   *" \
        "*  make bench installs it (.ci/packages.txt); by hand:               *" \
        "*      sudo apt-get install redis-server                             *" \
        "*  Every Redis figure and ratio below says skipped.                  *" \
        "**********************************************************************" | tee /dev/stderr
}
have_redis=0
command -v redis-server >/dev/null && command -v redis-cli >/dev/null && have_redis=1
((have_redis)) || redis_box

# One measurement: its BENCH line goes to the repetitions of the current
# measurement (rep.txt) and to every line of the run (raw.txt).
bench() {
    local out
    out=$("$ESC_BIN/escrow-bench" "$@" --seconds "$seconds" --warmup-ms "$warmup_ms") ||
        esc_fail "escrow-bench $* failed"
    echo "$out" | tee -a "$dir/rep.txt" "$dir/raw.txt"
}

# bench ARGS... REP: the same measurement in every repetition (REP unused).
bench_same() {
    bench "${@:1:$#-1}"
}

# measure FN [ARGS...]: runs `FN ARGS... REP` for REP = 1..reps (each runs one
# bench), then adds the line of medians and ranges to the results.
measure() {
    local rep
    : >"$dir/rep.txt"
    for ((rep = 1; rep <= reps; rep++)); do
        ((reps == 1)) || echo "-- repetition $rep of $reps"
        "$@" "$rep"
    done
    python3 "$support/bench_median.py" <"$dir/rep.txt" >>"$results" ||
        esc_fail "no figures from $*"
    ((reps == 1)) || echo "-- median of $reps: $(tail -n 1 "$results" | tr ' ' '\n' |
        grep -v -e '_min=' -e '_max=' -e '^BENCH$' | tr '\n' ' ')"
}

segments_served() { # ITEM COUNT
    [[ $(esc_psql "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
                   WHERE s.tenant_id = '$tenant' AND s.item_id = '$1' AND n.state = 'up'
                   AND s.epoch > 0") == "$2" ]]
}

create_item() { # ITEM TOTAL SEGMENTS
    esc_ctl item create "$tenant" "$1" --total "$2" --segments "$3" --hold-ttl-ms 600000 >/dev/null
    # a benchmark of one tenant's peak: no per-tenant rate limit and no
    # per-tenant live-hold cap (node_fair.h). Holds live 10 minutes: on a
    # quiet machine the runs before the memory run leave over a million
    # live holds, the default cap, and its reserves would only get BUSY.
    esc_ctl tenant limits "$tenant" --rate 0 --live-holds 0 >/dev/null
    esc_wait_for 60 segments_served "$1" "$3" || esc_fail "item $1 was not placed within 60 s"
}

escrow_routed() {
    bench escrow --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
        --tenant "$tenant" --ttl-ms 600000 "$@"
}

escrow_direct() {
    bench escrow --endpoint "$n1_ep" --tenant "$tenant" --ttl-ms 600000 "$@"
}

# ---- the cluster: PostgreSQL, coordinator, node n1 ------------------------
esc_step "a local cluster: private PostgreSQL, escrow-coordinator, 1 node"
esc_cluster_start "$dir/cluster" --nodes 1
for setting in fsync synchronous_commit; do
    v=$(esc_psql "SHOW $setting")
    [[ $v == on ]] || esc_fail "PostgreSQL has $setting=$v; the benchmark needs it on"
done
echo "PostgreSQL: fsync=on synchronous_commit=on ($(esc_psql 'SHOW wal_sync_method'))"
esc_psql "SELECT 'PGSETTING ' || name || ' = ' || setting || coalesce(' ' || unit, '')
          FROM pg_settings WHERE name IN ('shared_buffers', 'synchronous_commit', 'wal_level',
          'max_wal_size', 'min_wal_size', 'wal_compression', 'wal_buffers', 'fsync',
          'wal_sync_method', 'full_page_writes', 'commit_delay', 'wal_writer_delay')
          OR name LIKE 'checkpoint\_%' ORDER BY name" | tee "$dir/pg_settings.txt"
# WAL pre-warm (ESC_BENCH_WAL_PREWARM=0 skips it): a new cluster has no WAL
# segments ahead of its write position, so every 16 MB of WAL PostgreSQL
# creates and zero-fills the next segment file while commits wait for the
# WAL: at ~20 MB/s of WAL (a durable hold writes ~860 bytes) that is a
# stall of 100 ms and more every second or so, which a server that has run
# through a checkpoint does not have (it renames old segments instead). So
# the run starts where such a server is: 2 GB of segments written, then a
# checkpoint recycles them as the segments ahead.
if [[ ${ESC_BENCH_WAL_PREWARM:-1} == 1 ]]; then
    echo "PostgreSQL: pre-warming WAL (2 GB of segments, then a checkpoint recycles them)"
    # one session: a transaction id (its commit writes WAL) and a switch, 128 times
    for ((i = 0; i < 128; i++)); do
        printf 'SELECT txid_current();\nSELECT pg_switch_wal();\n'
    done | "$ESC_PG_BINDIR/psql" "$ESCROW_DSN" -X -q -v ON_ERROR_STOP=1 -f - >/dev/null
    esc_psql "CHECKPOINT" >/dev/null
    echo "PostgreSQL: $(find "$ESC_PG_DIR/data/pg_wal" -maxdepth 1 -type f -name '0*' | wc -l) WAL segments after the pre-warm"
fi
pg_pid=$(head -n 1 "$ESC_PG_DIR/data/postmaster.pid")
n1_pid=$(esc_cluster_node_pid n1)
n1_ep=$(esc_cluster_node_ep n1)

# ---- baselines A and B ------------------------------------------------------
esc_step "baseline A: one hot row, 1 and $conns connections; PostgreSQL's \"no\""
measure bench_same pg --dsn "$ESCROW_DSN" --rows 1 --conns 1 --label a1
measure bench_same pg --dsn "$ESCROW_DSN" --rows 1 --conns "$conns" --label a128
measure bench_same pg --dsn "$ESCROW_DSN" --rows 1 --conns "$conns" --sold-out --label ano
esc_step "baseline B: 100 rows, random row, $conns connections"
measure bench_same pg --dsn "$ESCROW_DSN" --rows 100 --conns "$conns" --label b100
esc_psql "DROP SCHEMA bench CASCADE" >/dev/null

# ---- baseline C ---------------------------------------------------------------
redis_start() { # MODE (mem|aof): starts redis-server on a free port, sets redis_port/redis_pid
    local mode=$1 rdir=$dir/redis-$1
    rm -rf "$rdir" # an old appendonly file would be loaded
    mkdir -p "$rdir"
    redis_port=$(esc_free_port)
    local persist=(--save "" --appendonly no)
    [[ $mode == aof ]] && persist=(--save "" --appendonly yes --appendfsync always)
    esc_spawn "$rdir/redis.log" redis-server --bind 127.0.0.1 --port "$redis_port" \
        --dir "$rdir" --daemonize no --protected-mode yes --maxclients 1000 "${persist[@]}"
    redis_pid=$ESC_SPAWN_PID
    esc_wait_for 60 redis-cli -p "$redis_port" ping >/dev/null ||
        esc_fail "redis-server ($mode) did not answer within 60 s"
}

redis_stop() {
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
}

if ((have_redis)); then
    esc_step "baseline C: Redis Lua gate, no persistence, then appendfsync always"
    redis_start mem
    measure bench_same redis --port "$redis_port" --conns "$conns" --label cmem
    measure bench_same redis --port "$redis_port" --conns "$conns" --sold-out --label cno
    redis_stop
    redis_start aof
    measure bench_same redis --port "$redis_port" --conns "$conns" --label caof
    redis_stop
else
    esc_step "baseline C: NOT MEASURED (redis-server is not installed; see the box above)"
    echo "BENCH redis_skipped=1" | tee -a "$results"
fi

# ---- escrow, 1 node -------------------------------------------------------------
# Each repetition on its own item (hot1rREP ...), so none runs on what an
# earlier one left.
e1_run() { # REP
    create_item "hot1r$1" "$total" "$segments"
    escrow_routed --item "hot1r$1" --inflight "$inflight" --pids "$n1_pid" --pg-pid "$pg_pid" \
        --key-prefix "e1r$1" --label e1
}
mem_run() { # REP
    create_item "memr$1" "$total" "$segments"
    escrow_routed --item "memr$1" --inflight "$inflight" --count "$mem_holds" --pids "$n1_pid" \
        --key-prefix "memr$1" --label mem
}
# r80_run REP: on what e1 left of hot1rREP, first the peak (closed loop, as
# e1) and then an open loop at 80% of it, with the latency plot. The peak is
# measured again right before, in the state the open loop runs in: by now
# the database and the node hold the earlier runs' live holds, and on a
# quiet machine a hold costs PostgreSQL more than on e1's emptier tables, so
# 80% of e1's figure can be all of what the node now does (a queue, not a
# tail).
r80_run() {
    local csv=$dir/r80-$1.csv peak rate
    escrow_routed --item "hot1r$1" --inflight "$inflight" --pids "$n1_pid" --pg-pid "$pg_pid" \
        --key-prefix "r80pr$1" --label r80peak
    peak=$(tail -n 1 "$dir/rep.txt" | grep -o ' r80peak_ok_s=[0-9.]*' | cut -d= -f2)
    rate=$(awk -v p="${peak:-0}" 'BEGIN { r = int(p * 0.8); print (r < 1 ? 1 : r) }')
    escrow_routed --item "hot1r$1" --inflight 8192 --rate "$rate" --key-prefix "r80r$1" --label r80 \
        --timeline "$csv"
    python3 "$support/latency_svg.py" --timeline "$csv" --pg-log "$ESC_PG_DIR/postgres.log" \
        --title "escrow, 1 node: holds at $rate/s (80% of the peak just before), repetition $1" \
        --out "$dir/r80-$1.svg" || esc_fail "latency_svg.py failed on $csv"
}
mix_run() { # REP
    escrow_direct --item "hot1r$1" --mix-item gone --mix-pct 99 --inflight "$inflight" \
        --key-prefix "mixr$1" --label mix
}
e2_run() { # REP
    create_item "hot2r$1" "$total" "$segments"
    esc_psql "SELECT '  ' || node_id || ': ' || count(*) || ' segments of hot2r$1' FROM segments
              WHERE tenant_id = '$tenant' AND item_id = 'hot2r$1' GROUP BY node_id ORDER BY node_id"
    escrow_routed --item "hot2r$1" --inflight "$inflight" --pids "$n1_pid,$n2_pid" \
        --pg-pid "$pg_pid" --key-prefix "e2r$1" --label e2
}

esc_step "escrow, 1 node: $total units in $segments segments, $inflight in flight"
measure e1_run

esc_step "escrow: node memory per live hold ($mem_holds holds, not confirmed)"
measure mem_run

esc_step "escrow: \"no\" once sold out (an item of 100 units, sold, confirmed)"
create_item gone 100 1
"$ESC_BIN/escrow-load" --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
    --tenant "$tenant" --item gone --buyers 200 --concurrency 50 --confirm 1 --release 0 \
    --key-prefix gone --quiet >"$dir/sellout.out" 2>&1 || true
esc_wait_for 60 grep -q "COORD-SOLD-OUT item=$tenant/gone sold_out=1" "$dir/cluster/coordinator.log" ||
    esc_fail "the coordinator did not flag item gone sold out (see $dir/sellout.out)"
measure bench_same escrow --endpoint "$n1_ep" --tenant "$tenant" --ttl-ms 600000 --item gone \
    --inflight "$inflight" --pids "$n1_pid" --key-prefix nonode --label nonode
measure bench_same escrow --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
    --tenant "$tenant" --ttl-ms 600000 --item gone --inflight "$inflight" --key-prefix nocache \
    --label nocache

esc_step "escrow: rate-limited at 80% of the 1-node peak; then 99% \"no\" next to a live sale"
measure r80_run
measure mix_run

# ---- escrow, 2 nodes ------------------------------------------------------------
esc_step "escrow, 2 nodes: a second node joins; a fresh item of $total units in $segments segments"
n2_ep=tcp://127.0.0.1:$(esc_free_port)
esc_node_start n2 "$n2_ep" "$dir/cluster/n2.log" --coordinator "$ESCROW_COORDINATOR"
n2_pid=$ESC_NODE_PID
# The coordinator moves segments of the earlier items to the new node; a new
# item placed before that settles would land on n2 alone (least loaded).
balanced() {
    [[ $(esc_psql "SELECT count(*) = 2 AND max(c) - min(c) <= 1 FROM (SELECT count(*) AS c
                   FROM segments s JOIN nodes n USING (node_id)
                   WHERE n.state = 'up' AND s.epoch > 0 GROUP BY node_id) x") == t ]]
}
esc_wait_for 30 balanced || echo "note: the segments were not spread evenly within 30 s"
measure e2_run

# ---- report -----------------------------------------------------------------
esc_step "stopping the nodes (their SEG-STOP lines carry the group-commit counters)"
cp "$ESC_PG_DIR/postgres.log" "$dir/postgres.log" 2>/dev/null || true
esc_node_stop "$n2_pid" || true
esc_cluster_stop "$dir/cluster" || true
for log in "$dir/cluster/n1.log" "$dir/cluster/n2.log"; do
    line=$(grep 'SEG-STOP.*stopped' "$log" | tail -n 1) || continue
    awk -v name="$(basename "$log" .log)" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "group commit, %s: %s batches, %s rows, %.1f rows per batch, commit avg %s ms, max %s ms\n",
            name, v["batches"], v["rows"], v["batches"] ? v["rows"] / v["batches"] : 0,
            v["commit_avg_ms"], v["commit_max_ms"] }' <<<"$line"
done

esc_step "report"
machine_state after
{
    echo
    cat "$dir/machine.txt"
    cat "$dir/pg_settings.txt"
    grep -h 'checkpoint starting\|automatic vacuum' "$dir/postgres.log" 2>/dev/null |
        sed 's/^/PGLOG /' | tail -n 20 || true
    for svg in "$dir"/r80-*.svg; do
        [[ -f $svg ]] && echo "latency over time, 80% of peak: $svg"
    done
} | tee "$dir/state.txt"
((have_redis)) || redis_box
"$ESC_BIN/escrow-bench" report "$results" | tee "$dir/report.txt" || true
result=$(grep '^RESULT ' "$dir/report.txt" || true)
[[ -n $result ]] || esc_fail "no RESULT line"
bad=$(tr ' ' '\n' <<<"${result#RESULT }" | awk -F= -v redis_ok="$((have_redis))" '
    $2 ~ /^-?[0-9]+(\.[0-9]+)?$/ { next }
    $2 == "skipped" && $1 ~ /redis/ && redis_ok == 0 { next }
    { print }')
[[ -z $bad ]] || esc_fail "RESULT keys without a measured figure: $(tr '\n' ' ' <<<"$bad")"
if ((quick && own_dir)); then
    rm -rf "$dir" # the smoke test keeps nothing after a pass
    echo "bench: done"
else
    echo "bench: done; results in $dir"
fi
