#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# events.sh - the event feed (coordinator/feed/include/escrow_feed.h, escrowctl events --follow)
# against real processes: a private PostgreSQL, a segment node in static
# mode, escrow-load, psql sessions and escrowctl followers.
#
#   a) out-of-order commits: two psql sessions insert into outbox and the one
#      with the later event id commits first. While the earlier one is open
#      the follower holds the later event back; then it delivers both. And
#      the dangerous case for an event_id cursor: a transaction with the
#      smaller transaction id inserts the LARGER event id and commits first;
#      the follower delivers it, and the smaller event id committed afterwards
#      is still delivered (an event_id cursor would have skipped it forever).
#   b) a sale (escrow-load: holds, confirms, releases, expiries) while a
#      follower (--json, batches of 10) prints; kill -9 mid-stream; a second
#      run dies (failpoint) after printing its 3rd batch and before
#      committing it (exactly that batch must come again); restart:
#      every outbox event appears at least once and none is missing (compared
#      with the outbox table exactly), both runs deliver in feed order
#      (txid, event_id) without gaps, the restart starts right after the
#      committed cursor, duplicates are only the uncommitted batch, per hold
#      'held' comes before its end; SIGTERM stops it with exit 0.
#   c) a new consumer started --after an event gets what follows it in feed
#      order; escrowctl consumers shows every consumer with its lag (one unconsumed event); a consumer
#      reopened with another item filter is refused (exit 1), so is --after
#      an event that does not exist, and --follow without --consumer (exit 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

BATCH=10

itest_begin events
command -v python3 >/dev/null || esc_fail "events: python3 is needed to check the follower output"

# follow_start NAME ARGS...: escrowctl events t1 --follow ARGS in the
# background (own process group), stdout to NAME.out, stderr to NAME.log;
# waits for its FEED-START line. Sets FOLLOW_PID.
follow_start() {
    local name=$1
    shift
    setsid "$ESC_BIN/escrowctl" events t1 --follow "$@" \
        >"$ITEST_DIR/$name.out" 2>"$ITEST_DIR/$name.log" &
    FOLLOW_PID=$!
    ESC_PIDS+=("$FOLLOW_PID")
    esc_wait_for 60 grep -q FEED-START "$ITEST_DIR/$name.log" ||
        esc_fail "events: follower $name did not start"
}

# follow_stop PID NAME: SIGTERM; it must exit 0 (30 s bound a hang).
follow_stop() {
    kill -TERM "$1"
    itest_wait_pid "$1" 30 "follower $2" || esc_fail "events: follower $2 did not exit 0 on SIGTERM"
    grep -q FEED-STOP "$ITEST_DIR/$2.log" || esc_fail "events: follower $2 did not log FEED-STOP"
}

# A psql session driven through a fifo on fd $2, named $1 in pg_stat_activity.
session_open() {
    mkfifo "$ITEST_DIR/$1.fifo"
    "$ESC_PG_BINDIR/psql" "$ESCROW_DSN application_name=$1" -AtXq -v ON_ERROR_STOP=1 \
        <"$ITEST_DIR/$1.fifo" >"$ITEST_DIR/$1.log" 2>&1 &
    ESC_PIDS+=($!)
    eval "exec $2>\"$ITEST_DIR/$1.fifo\""
}
# session_run NAME FD SQL STATE: send SQL, then wait until the session has
# run it: it renames itself (application_name) after SQL, and the new name
# must show up in pg_stat_activity in STATE ('idle' or 'idle in transaction').
SESSION_STEP=0
session_run() {
    SESSION_STEP=$((SESSION_STEP + 1))
    local tag="$1-$SESSION_STEP"
    echo "$3 SET application_name = '$tag';" >&"$2"
    esc_wait_for 60 q_is "SELECT state FROM pg_stat_activity WHERE application_name = '$tag'" "$4" ||
        esc_fail "events: psql session $1 did not reach '$4' after: $3 ($(cat "$ITEST_DIR/$1.log"))"
}
insert_sql() {
    echo "INSERT INTO outbox (tenant_id, item_id, kind, qty) VALUES ('t1', 'ooo', 'restocked', $1);"
}
ooo_seen() {
    grep -o 'qty=[0-9]*' "$ITEST_DIR/ooo.out" | tr '\n' ' ' | sed 's/ $//'
}
# Conditions for esc_wait_for, evaluated on every try.
seen_is() { [[ $(ooo_seen) == "$1" ]]; }
q_is() { [[ $(itest_q "$1") == "$2" ]]; }
lines_ge() { (($(wc -l <"$1") >= $2)); }

esc_step "a) out-of-order commits"
# the feed follows items that exist (escrowctl answers an unknown one "no item")
esc_ctl item create t1 ooo --total 10 --segments 1 --node n1 >/dev/null
follow_start ooo --consumer ooo --item ooo
session_open sa 7
session_open sb 8

# 1. A inserts (smaller event id) and stays open; B inserts and commits.
session_run sa 7 "BEGIN; $(insert_sql 1)" "idle in transaction"
session_run sb 8 "$(insert_sql 2)" "idle"
echo "A's event is uncommitted, B committed event $(itest_q "SELECT event_id FROM outbox WHERE item_id = 'ooo' AND qty = 2")"
itest_eq "$(esc_ctl events t1 --item ooo | grep -c restocked)" 1 "events listed while A is open (B's)"
sleep 1 # several poll intervals
itest_eq "$(ooo_seen)" "" "events the follower delivered while the older transaction was open"
session_run sa 7 "COMMIT;" "idle"
esc_wait_for 60 seen_is "qty=1 qty=2" ||
    esc_fail "events: after A's commit the follower shows '$(ooo_seen)', expected 'qty=1 qty=2'"

# 2. C takes its transaction id first, D inserts the smaller event id and
#    stays open, C inserts the larger event id and commits first.
session_run sa 7 "BEGIN; SELECT pg_current_xact_id();" "idle in transaction"
session_run sb 8 "BEGIN; $(insert_sql 3)" "idle in transaction"
session_run sa 7 "$(insert_sql 4) COMMIT;" "idle"
e3=$(itest_q "SELECT count(*) FROM outbox WHERE item_id = 'ooo' AND qty = 3") # invisible yet
itest_eq "$e3" 0 "D's event is not visible before D commits"
esc_wait_for 60 seen_is "qty=1 qty=2 qty=4" ||
    esc_fail "events: the follower shows '$(ooo_seen)', expected C's event (qty=4) delivered"
session_run sb 8 "COMMIT;" "idle"
esc_wait_for 60 seen_is "qty=1 qty=2 qty=4 qty=3" ||
    esc_fail "events: the follower shows '$(ooo_seen)': D's event (qty=3) was lost"
itest_eq "$(itest_q "SELECT (SELECT event_id FROM outbox WHERE item_id = 'ooo' AND qty = 3) <
                           (SELECT event_id FROM outbox WHERE item_id = 'ooo' AND qty = 4)")" t \
    "the late event has the smaller event id (an event_id cursor would have skipped it)"
exec 7>&- 8>&-
follow_stop "$FOLLOW_PID" ooo
itest_eq "$(itest_q "SELECT cursor_event_id FROM feed_consumers WHERE consumer = 'ooo'")" \
    "$(itest_q "SELECT event_id FROM outbox WHERE item_id = 'ooo' AND qty = 3")" \
    "consumer ooo's committed cursor (the last event in feed order)"

esc_step "b) a sale while a follower prints; kill -9 mid-stream; restart"
esc_ctl item create t1 X --total 1000 --segments 2 --node n1 --hold-ttl-ms 2000 >/dev/null
PORT=$(itest_port)
itest_node n1 "$PORT" --sweep-ms 100
follow_start f1 --consumer orders --json --limit $BATCH
"$ESC_BIN/escrow-load" --endpoint "tcp://127.0.0.1:$PORT" --tenant t1 --item X --buyers 3000 \
    --concurrency 100 --confirm 0.6 --release 0.25 --deadline-ms 10000 --quiet \
    >"$ITEST_DIR/load.out" 2>"$ITEST_DIR/load.log" &
LOAD_PID=$!
ESC_PIDS+=("$LOAD_PID")
esc_wait_for 120 lines_ge "$ITEST_DIR/f1.out" 300 ||
    esc_fail "events: the follower printed fewer than 300 events"
itest_kill9 "$FOLLOW_PID"
printed1=$(wc -l <"$ITEST_DIR/f1.out")
cursor1=$(itest_q "SELECT cursor_txid || ' ' || cursor_event_id FROM feed_consumers WHERE consumer = 'orders'")
echo "killed the follower after $printed1 lines; committed cursor (txid event_id) $cursor1"
# The crash between printing and committing, on cue: this run dies after
# printing its 3rd batch, so exactly that batch must come again.
ESC_FAILPOINT_FOLLOW_CRASH_BATCH=3 follow_start f1b --consumer orders --json --limit $BATCH
itest_wait_pid "$FOLLOW_PID" 60 "follower f1b" && esc_fail "events: follower f1b did not die at its failpoint"
grep -q "dying before the commit" "$ITEST_DIR/f1b.log" || esc_fail "events: f1b's failpoint did not fire"
grep -q "resumed cursor_event=${cursor1#* } " "$ITEST_DIR/f1b.log" ||
    esc_fail "events: f1b did not resume at the committed cursor ($(cat "$ITEST_DIR/f1b.log"))"
cursor1b=$(itest_q "SELECT cursor_txid || ' ' || cursor_event_id FROM feed_consumers WHERE consumer = 'orders'")
itest_wait_pid "$LOAD_PID" 120 escrow-load || esc_fail "events: escrow-load failed"
grep '^RESULT' "$ITEST_DIR/load.out"
# The abandoned holds expire (ttl 2 s, sweeper every 100 ms).
esc_wait_for 60 q_is "SELECT count(*) FROM holds WHERE item_id = 'X' AND state = 'held'" 0 ||
    esc_fail "events: holds did not expire"
total=$(itest_q "SELECT count(*) FROM outbox WHERE tenant_id = 't1'")
((printed1 < total)) || esc_fail "events: the follower was not killed mid-stream ($printed1 of $total)"

follow_start f2 --consumer orders --json --limit $BATCH --from-start
grep -q "resumed cursor_event=${cursor1b#* } " "$ITEST_DIR/f2.log" ||
    esc_fail "events: the restarted follower did not resume at the committed cursor ($(cat "$ITEST_DIR/f2.log"))"
grep -q "only place a new consumer" "$ITEST_DIR/f2.log" ||
    esc_fail "events: --from-start on an existing consumer was not reported as ignored"
last=$(itest_q "SELECT txid || ' ' || event_id FROM outbox WHERE tenant_id = 't1' ORDER BY txid DESC, event_id DESC LIMIT 1")
esc_wait_for 60 q_is "SELECT cursor_txid || ' ' || cursor_event_id FROM feed_consumers WHERE consumer = 'orders'" "$last" ||
    esc_fail "events: the restarted follower did not commit up to the last event ($last)"
follow_stop "$FOLLOW_PID" f2

itest_q "SELECT event_id, txid, item_id, coalesce(hold_id, 0), kind FROM outbox
         WHERE tenant_id = 't1' ORDER BY txid, event_id" >"$ITEST_DIR/outbox.txt"
python3 - "$ITEST_DIR" "$BATCH" "$cursor1" "$cursor1b" <<'EOF'
import json, sys
d, batch = sys.argv[1], int(sys.argv[2])
cursors = [(0, 0)] + [tuple(int(x) for x in c.split()) for c in sys.argv[3:]]
def fail(msg):
    print("FAIL: events: " + msg, file=sys.stderr)
    sys.exit(1)
db = []
for line in open(d + "/outbox.txt"):
    eid, txid, item, hold, kind = line.rstrip("\n").split("|")
    db.append((int(txid), int(eid), item, int(hold), kind))
def read(name):
    raw = open(d + "/" + name).read()
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        lines.pop()  # killed while writing: the last line is cut
    out = []
    for l in lines:
        e = json.loads(l)
        out.append((int(e["txid"]), e["event_id"], e["item"], e["hold_id"] or 0, e["kind"]))
    return out
runs = [read(n) for n in ("f1.out", "f1b.out", "f2.out")]
pos = {(t, e): i for i, (t, e, *_rest) in enumerate(db)}
ids_db = {e for _, e, *_ in db}
ids = {e for r in runs for _, e, *_ in r}
if ids != ids_db:
    fail("delivered %d distinct events, the outbox has %d; missing %s, unknown %s" % (
        len(ids), len(ids_db), sorted(ids_db - ids)[:10], sorted(ids - ids_db)[:10]))
# each run is the outbox in feed order, without a gap, starting right after
# the cursor committed before it started; what it printed beyond the cursor
# committed after it died is printed again by the next run
starts, dups, once = [], [], []
for i, (r, c) in enumerate(zip(runs, cursors)):
    if c != (0, 0) and c not in pos:
        fail("cursor %s is not an event" % (c,))
    k = pos[c] + 1 if c != (0, 0) else 0
    if r != db[k:k + len(r)]:
        fail("run %d is not the outbox in feed order right after its cursor" % (i + 1))
    starts.append(k)
for i in range(len(runs) - 1):
    committed = starts[i + 1] - starts[i]
    if committed > len(runs[i]):
        fail("run %d committed beyond what it printed" % (i + 1))
    dups.append(len(runs[i]) - committed)
    once += runs[i][:committed]
once += runs[-1]
if starts[-1] + len(runs[-1]) != len(db):
    fail("the last run did not reach the end of the outbox")
if max(dups) > batch:
    fail("duplicates %s: more than one batch (%d)" % (dups, batch))
if dups[1] != batch:
    fail("the run that died before committing its 3rd batch caused %d duplicates, not %d" % (dups[1], batch))
# per hold: 'held' before the end, in the order delivered
seen = {}
for t, e, item, hold, kind in once:
    if hold == 0:
        continue
    if kind == "held":
        if hold in seen:
            fail("hold %d: 'held' delivered twice outside the duplicate batch" % hold)
        seen[hold] = "held"
    elif kind in ("converted", "cancelled", "expired"):
        if seen.get(hold) != "held":
            fail("hold %d: '%s' delivered before its 'held'" % (hold, kind))
        seen[hold] = kind
kinds = sorted({x[4] for x in db})
print("outbox %d events %s; runs printed %s, started at %s; duplicates %s" %
      (len(db), kinds, [len(r) for r in runs], starts, dups))
if not {"held", "converted", "cancelled", "expired"} <= set(kinds):
    fail("the sale did not produce every hold event kind: %s" % kinds)
EOF

esc_step "c) a new consumer placed --after an event; consumers; refusals"
e4=$(itest_q "SELECT event_id FROM outbox WHERE item_id = 'ooo' AND qty = 4")
follow_start late --consumer late --item ooo --after "$e4"
esc_wait_for 60 grep -q 'qty=3' "$ITEST_DIR/late.out" ||
    esc_fail "events: consumer late did not print the event after $e4: $(cat "$ITEST_DIR/late.out")"
sleep 0.5 # and nothing else comes
itest_eq "$(grep -o 'qty=[0-9]*' "$ITEST_DIR/late.out" | tr '\n' ' ')" "qty=3 " \
    "what follows event $e4 (qty=4) in feed order"
follow_stop "$FOLLOW_PID" late
itest_q "$(insert_sql 5)" >/dev/null # one event nobody has consumed yet
esc_ctl consumers t1
itest_eq "$(esc_ctl --json consumers t1 | python3 -c '
import json, sys
print(" ".join("%s:%s:%s" % (c["consumer"], c["item"], c["lag_events"]) for c in json.load(sys.stdin)["consumers"]))')" \
    "late:ooo:1 ooo:ooo:1 orders:None:1" "consumers, item filter and lag (events)"
mkdir -p "$ITEST_DIR/c"
esc_ctl_expect "$ITEST_DIR/c" 1 events t1 --follow --consumer orders --item X
grep -q "item filter" "$ITEST_DIR/c/err" || esc_fail "events: no sentence about the item filter"
esc_ctl_expect "$ITEST_DIR/c" 1 events t1 --follow --consumer new --after 999999999
esc_ctl_expect "$ITEST_DIR/c" 2 events t1 --follow
itest_eq "$(itest_q "SELECT count(*) FROM feed_consumers")" 3 "consumers after the refused opens"

esc_node_stop "$ITEST_NODE_PID" || esc_fail "events: the node did not stop cleanly"
itest_invariants X
itest_pass
