#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl_top.sh - escrowctl top against a real local cluster (private
# PostgreSQL, escrow-coordinator, two managed nodes): after a known sale on
# named segments (reserves with a segment hint straight to each owner,
# confirms, one refused reserve), `top --once` shows the exact counters per
# segment and per item, the owners' counters (units reserved, SEGMENT_EMPTY
# answers) and zero rates once the sale is over; the filters (tenant, item
# prefix with LIKE's special characters, state, paused, sold out,
# collapsed) and the pages (--limit, --page) give exact row counts; a
# stopped owner is named in the note and its segments have no rates; --batch
# prints N snapshots; during a sale the rates are positive exactly where the
# owner's counters moved; the live view (on a pseudo-terminal) draws, pages,
# follows a resize, quits on q and on SIGTERM and leaves the terminal as it
# found it. The coordinator runs policy passes only every 60 s; a transfer
# one of them makes during the sale is counted into the expected figures.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

for b in escrow-coordinator escrow-segment escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}'"
done
if [[ -z ${ESC_PROBE:-} ]]; then
    ESC_PROBE=$ESC_BIN/../tests/esc_probe
fi
[[ -x $ESC_PROBE ]] || esc_fail "esc_probe not found (set ESC_PROBE or build the esc_probe target)"

work=$(mktemp -d /tmp/escrow-ctl-top.XXXXXX)
passed=0

q() {
    esc_psql "$1"
}

# top with a short interval; expects exit code $1; output in $work/out.
top_rc() {
    local want=$1
    shift
    esc_ctl_expect "$work" "$want" top --interval-ms 100 --timeout-ms 5000 "$@"
}

# Item rows and segment rows of the text in $work/out.
item_rows() { grep -c '^shop-' "$work/out" || true; }
seg_rows() { grep -c '^  seg ' "$work/out" || true; }

# Asserts $work/out shows $1 item rows and $2 segment rows.
rows_are() {
    esc_assert_eq "$(item_rows) $(seg_rows)" "$1 $2" "item and segment rows of top $3"
}

esc_step "local cluster: PostgreSQL, coordinator (policy passes every 60 s), 2 nodes"
esc_cluster_start "$work/cluster" --nodes 2 --lease-ms 10000 --heartbeat-ms 100 --rebalance-ms 60000
esc_on_exit '((passed)) && [[ ${ESC_KEEP:-0} != 1 ]] && rm -rf "$work" || echo "logs kept in $work" >&2'

esc_step "a catalog: shop-1/tee (4 segments), shop-1/cap-01..12 and cap_x, shop-2/mug (2 segments)"
esc_ctl item create shop-1 tee --total 100 --segments 4 >/dev/null
for i in 01 02 03 04 05 06 07 08 09 10 11 12; do
    esc_ctl item create shop-1 "cap-$i" --total 3 >/dev/null
done
esc_ctl item create shop-1 cap_x --total 3 >/dev/null
esc_ctl item create shop-2 mug --total 10 --segments 2 >/dev/null
esc_wait_sql 60 "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
                 WHERE n.state = 'up' AND s.epoch > 0" 19 ||
    esc_fail "the coordinator did not place the 19 segments"

# Segment id, owner and endpoint of ITEM's segment SEG_NO.
seg_id() { q "SELECT segment_id FROM segments WHERE item_id = '$1' AND seg_no = $2"; }
seg_ep() {
    esc_cluster_node_ep "$(q "SELECT node_id FROM segments WHERE item_id = '$1' AND seg_no = $2")"
}

# One reserve of QTY on ITEM's segment SEG_NO (tenant TENANT), straight to its
# owner; prints the hold id. The owner may still be loading: retried.
try_reserve() { # tenant item seg_no key qty
    "$ESC_PROBE" hint-reserve --endpoint "$(seg_ep "$2" "$3")" --tenant "$1" --item "$2" \
        --key "$4" --qty "$5" --segment "$(seg_id "$2" "$3")" --deadline-ms 10000 \
        >"$work/reserve.out" 2>&1 || true
    grep -q '^OK' "$work/reserve.out"
}
reserve() {
    esc_wait_for 60 try_reserve "$@" ||
        esc_fail "reserve $*: $(cat "$work/reserve.out")"
    sed -n 's/.*hold=\([0-9]*\).*/\1/p' "$work/reserve.out"
}
confirm() { # tenant item seg_no hold
    "$ESC_PROBE" confirm --endpoint "$(seg_ep "$2" "$3")" --tenant "$1" --hold "$4" \
        >"$work/confirm.out" 2>&1 || true
    grep -q '^OK' "$work/confirm.out" || esc_fail "confirm $4: $(cat "$work/confirm.out")"
}

esc_step "the sale: tee #0 three holds of 2 (two confirmed), tee #1 one of 5 (confirmed); one refused on cap_x"
h1=$(reserve shop-1 tee 0 k1 2)
h2=$(reserve shop-1 tee 0 k2 2)
reserve shop-1 tee 0 k3 2 >/dev/null
h4=$(reserve shop-1 tee 1 k4 5)
confirm shop-1 tee 0 "$h1"
confirm shop-1 tee 0 "$h2"
confirm shop-1 tee 1 "$h4"
# 4 units asked of cap_x's only segment (3 units): SEGMENT_EMPTY, counted by
# its owner (an item of one segment: no other segment to refill it from)
"$ESC_PROBE" hint-reserve --endpoint "$(seg_ep cap_x 0)" --tenant shop-1 --item cap_x --key k5 \
    --qty 4 --segment "$(seg_id cap_x 0)" >"$work/reserve.out" 2>&1 || true
grep -q '^SEGMENT_EMPTY' "$work/reserve.out" || esc_fail "refused reserve: $(cat "$work/reserve.out")"
# cap-05 sold out (3 of 3 sold), cap-06 all held (not sold out: holds may come back)
confirm shop-1 cap-05 0 "$(reserve shop-1 cap-05 0 c5 3)"
reserve shop-1 cap-06 0 c6 3 >/dev/null
# paused: no more rebalancing; a transfer the policy started (its passes are
# rare, but a slow machine can meet one) is finished before figures are read
esc_ctl item pause shop-1 tee >/dev/null
esc_wait_sql 60 "SELECT count(*) FROM transfers WHERE state IN ('planned', 'sent')" 0 ||
    esc_fail "a transfer stayed open"

esc_step "top --once shop-1 --prefix tee: the exact figures"
top_rc 0 --once shop-1 --prefix tee
cat "$work/out"
esc_assert_eq "$(sed -n 2p "$work/out" | cut -d'|' -f1-2)" \
    "items 1-1 of 1 | available 89 held 2 sold 9 " "summary line"
grep -Eq '^shop-1/tee +4/4 segs +paused +89 +2 +9 +0\.0 +0\.0 +0 +0 total 100$' "$work/out" ||
    esc_fail "tee's row"
# available: 25 less what the sale held and sold there, plus what transfers
# brought, less what they took (none, unless a policy pass met the sale)
for no in 0 1 2 3; do
    id=$(seg_id tee "$no")
    node=$(q "SELECT node_id || ' e' || epoch FROM segments WHERE segment_id = $id")
    want=("2 4" "0 5" "0 0" "0 0")
    read -r he so <<<"${want[$no]}"
    moved=$(q "SELECT COALESCE(sum(qty) FILTER (WHERE to_segment = $id AND state = 'received'), 0)
                    - COALESCE(sum(qty) FILTER (WHERE from_segment = $id), 0)
               FROM transfers WHERE state IN ('sent', 'received')")
    av=$((25 - he - so + moved))
    grep -Eq "^  seg $id #$no +$node +active +$av +$he +$so +0\.0 +0\.0 +0 +0\$" "$work/out" ||
        esc_fail "segment $id (#$no) row: want $node $av $he $so"
done
rows_are 1 4 "--prefix tee"

esc_step "--json: the owners' counters (units reserved, SEGMENT_EMPTY answers) and the rates"
top_rc 0 --once --json shop-1 --prefix tee
python3 - "$work/out" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["matched"] == 1 and d["offset"] == 0 and d["note"] == "", d
it = d["items"][0]
assert (it["item"], it["state"], it["available"], it["held"], it["sold"]) == ("tee", "paused", 89, 2, 9), it
assert it["holds_per_s"] == 0.0 and it["rejections_per_s"] == 0.0, it
segs = {s["seg_no"]: s for s in it["segments"]}
got = [(segs[n]["reserved"], segs[n]["empties"]) for n in range(4)]
assert got == [(6, 0), (5, 0), (0, 0), (0, 0)], got
assert all(s["holds_per_s"] == 0.0 and s["rejections_per_s"] == 0.0 for s in segs.values()), segs
assert [n["node"] for n in d["nodes"]] == ["n1", "n2"] and not any(n["down"] for n in d["nodes"]), d
EOF
top_rc 0 --once --json shop-1 --prefix cap_
python3 -c '
import json, sys
s = json.load(sys.stdin)["items"][0]["segments"][0]
assert (s["reserved"], s["empties"], s["available"]) == (0, 1, 3), s
' <"$work/out"

esc_step "filters: tenant, prefix (LIKE's _ and % are literal), state, paused, sold out, collapsed"
top_rc 0 --once
rows_are 15 19 "(everything)"
grep -q '^items 1-15 of 15 |' "$work/out" || esc_fail "summary: $(sed -n 2p "$work/out")"
top_rc 0 --once shop-1
rows_are 14 17 "shop-1"
top_rc 0 --once shop-2
rows_are 1 2 "shop-2"
top_rc 0 --once --prefix cap-
rows_are 12 12 "--prefix cap-"
top_rc 0 --once --prefix cap-1
rows_are 3 3 "--prefix cap-1"
top_rc 0 --once --prefix cap_
rows_are 1 1 "--prefix cap_ (not cap-01 ...)"
grep -q '^shop-1/cap_x ' "$work/out" || esc_fail "cap_x"
top_rc 0 --once --prefix %
rows_are 0 0 "--prefix %"
grep -q '^no items match |' "$work/out" || esc_fail "no match: $(cat "$work/out")"
top_rc 0 --once --paused
rows_are 1 4 "--paused"
top_rc 0 --once --state active
rows_are 14 15 "--state active"
top_rc 0 --once --state retired
rows_are 0 0 "--state retired"
top_rc 0 --once --sold-out
rows_are 1 1 "--sold-out"
grep -Eq '^shop-1/cap-05 .* total 3, SOLD OUT$' "$work/out" || esc_fail "cap-05: $(cat "$work/out")"
top_rc 0 --once --sold-out --prefix cap-06
rows_are 0 0 "--sold-out --prefix cap-06 (held is not sold out)"

esc_step "pages: --limit and --page"
top_rc 0 --once --prefix cap- --limit 5
rows_are 5 5 "page 1 of 5"
grep -q '^items 1-5 of 12 |' "$work/out" || esc_fail "page 1: $(sed -n 2p "$work/out")"
top_rc 0 --once --prefix cap- --limit 5 --page 3
rows_are 2 2 "page 3 of 5"
esc_assert_eq "$(grep '^shop-' "$work/out" | cut -d' ' -f1 | tr '\n' ' ')" \
    "shop-1/cap-11 shop-1/cap-12 " "page 3's items"
top_rc 0 --once --prefix cap- --limit 5 --page 4
rows_are 0 0 "page 4 of 5"
grep -q '^no items past item 15 of 12' "$work/out" || esc_fail "past the end: $(cat "$work/out")"
top_rc 0 --once --json --prefix cap- --limit 5 --page 2
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["matched"] == 12 and d["offset"] == 5, d
assert [i["item"] for i in d["items"]] == ["cap-06", "cap-07", "cap-08", "cap-09", "cap-10"], d
' <"$work/out"
# stdout not a terminal and no --once: one snapshot too
esc_ctl top shop-2 --interval-ms 100 >"$work/out"
rows_are 1 2 "(a pipe)"

esc_step "--batch --iterations 3: three snapshots"
top_rc 0 --batch --iterations 3 shop-2
esc_assert_eq "$(grep -c '^escrowctl top ' "$work/out")" "3" "snapshots"
rows_are 3 6 "--batch --iterations 3"
top_rc 0 --batch --iterations 2 --json shop-2
esc_assert_eq "$(wc -l <"$work/out")" "2" "JSON lines"

esc_step "--batch --json during a sale: the owner's counters move and the rates show it"
# cap-07 (3 units, untouched so far): a hold of 2, then a reserve of 5 that
# its one segment refuses, while top samples every 200 ms. The snapshot
# whose two samples span the hold has holds/s > 0, the one spanning the
# refusal rejections/s > 0, every other 0 (on any machine: a rate is the
# difference of the owner's counters over the time between its answers).
"$ESC_BIN/escrowctl" top --batch --json --interval-ms 200 --timeout-ms 5000 shop-1 --prefix cap-07 \
    >"$work/rates.jsonl" 2>"$work/rates.err" &
rates_pid=$!
ESC_PIDS+=("$rates_pid")
# The last complete JSON line's counters of cap-07's segment: "reserved empties".
cap07_counters() {
    tail -n 1 "$work/rates.jsonl" | python3 -c '
import json, sys
line = sys.stdin.read()
s = json.loads(line)["items"][0]["segments"][0] if line.endswith("\n") else {}
print(s.get("reserved"), s.get("empties"))'
}
counters_are() { [[ $(cap07_counters) == "$1" ]]; }
esc_wait_for 60 counters_are "0 0" ||
    esc_fail "top did not sample cap-07: $(cat "$work/rates.err")"
reserve shop-1 cap-07 0 c7 2 >/dev/null
esc_wait_for 60 counters_are "2 0" ||
    esc_fail "the hold did not show: $(cap07_counters)"
"$ESC_PROBE" hint-reserve --endpoint "$(seg_ep cap-07 0)" --tenant shop-1 --item cap-07 --key c7b \
    --qty 5 --segment "$(seg_id cap-07 0)" >"$work/reserve.out" 2>&1 || true
grep -q '^SEGMENT_EMPTY' "$work/reserve.out" || esc_fail "refused reserve: $(cat "$work/reserve.out")"
esc_wait_for 60 counters_are "2 1" ||
    esc_fail "the refusal did not show: $(cap07_counters)"
kill -TERM "$rates_pid"
rc=0
wait "$rates_pid" || rc=$?
_esc_forget_pid "$rates_pid"
esc_assert_eq "$rc" "0" "top --batch after SIGTERM"
python3 - "$work/rates.jsonl" <<'EOF'
import json, sys
snaps = [json.loads(line) for line in open(sys.argv[1])]
segs = [d["items"][0]["segments"][0] for d in snaps]
unmeasured = [s for s in segs if None in (s["reserved"], s["holds_per_s"], s["rejections_per_s"])]
assert not unmeasured, ("the owner did not answer within 5 s", unmeasured[:2])
counters = [(s["reserved"], s["empties"]) for s in segs]
# the counters were these three, in this order
assert sorted(set(counters)) == [(0, 0), (2, 0), (2, 1)] and counters == sorted(counters), counters
# a rate is positive exactly where its counter moved (the first snapshot's
# earlier sample is not printed); the item's rates are its one segment's
for prev, cur, s, d in zip(counters, counters[1:], segs[1:], snaps[1:]):
    assert (s["holds_per_s"] > 0) == (cur[0] > prev[0]), (prev, cur, s)
    assert (s["rejections_per_s"] > 0) == (cur[1] > prev[1]), (prev, cur, s)
    it = d["items"][0]
    assert (it["holds_per_s"], it["rejections_per_s"]) == (s["holds_per_s"], s["rejections_per_s"]), d
print("rates: %d snapshots; holds/s %.1f and rejections/s %.1f where the counters moved" % (
    len(snaps), max(s["holds_per_s"] for s in segs), max(s["rejections_per_s"] for s in segs)))
EOF

esc_step "--collapsed: mug collapsed into its tail"
esc_ctl item collapse shop-2 mug >/dev/null
esc_wait_sql 60 "SELECT (tail_segment IS NOT NULL)::text FROM items WHERE item_id = 'mug'" true ||
    esc_fail "mug did not collapse"
tail=$(q "SELECT tail_segment FROM items WHERE item_id = 'mug'")
top_rc 0 --once --collapsed
rows_are 1 2 "--collapsed"
grep -Eq "^shop-2/mug +1/2 segs .*collapsed tail=$tail\$" "$work/out" || esc_fail "mug: $(cat "$work/out")"
grep -Eq "^  seg $tail #[01] .* TAIL\$" "$work/out" || esc_fail "tail row: $(cat "$work/out")"

esc_step "a stopped owner: named in the note, its segments without rates, the others measured"
owner=$(q "SELECT node_id FROM segments WHERE item_id = 'tee' AND seg_no = 0")
pid=$(esc_cluster_node_pid "$owner")
kill -STOP "$pid"
rc=0
esc_ctl top --once --interval-ms 100 --timeout-ms 300 shop-1 --prefix tee >"$work/out" 2>&1 || rc=$?
kill -CONT "$pid"
esc_assert_eq "$rc" "0" "top with a stopped owner"
grep -q "^node $owner did not answer: no rates for its segments\$" "$work/out" ||
    esc_fail "note: $(cat "$work/out")"
esc_assert_eq "$(grep -Ec "^  seg [0-9]+ #[0-3] +$owner e[0-9]+ .* - +- +0 +0\$" "$work/out")" \
    "$(q "SELECT count(*) FROM segments WHERE item_id = 'tee' AND node_id = '$owner'")" \
    "segments of the stopped owner without rates"
esc_assert_eq "$(grep -Ec '^  seg [0-9]+ #[0-3] .* 0\.0 +0\.0 +0 +0$' "$work/out")" \
    "$(q "SELECT count(*) FROM segments WHERE item_id = 'tee' AND node_id <> '$owner'")" \
    "segments of the other owner measured"

esc_step "bad arguments: exit 2, nothing read"
top_rc 2 --once --state sold
grep -q -- "--state must be active, paused or retired" "$work/err" || esc_fail "$(cat "$work/err")"
top_rc 2 --once --limit 0
top_rc 2 --once --iterations 2
esc_ctl_expect "$work" 0 top --help
grep -q '^usage: escrowctl .* top \[TENANT\]' "$work/out" || esc_fail "top --help: $(cat "$work/out")"
esc_ctl_expect "$work" 2 top --once --dsn "host=127.0.0.1 port=1 dbname=none connect_timeout=2"
grep -q 'cannot connect to PostgreSQL' "$work/err" || esc_fail "$(cat "$work/err")"

esc_step "the live view on a pseudo-terminal: draws, pages, resizes, quits, restores the terminal"
python3 - "$ESC_BIN/escrowctl" "$work" "$(esc_cluster_node_pid n1)" <<'EOF'
import fcntl, os, pty, select, signal, struct, sys, termios, time

ctl, work, n1_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])

def run(args, steps):
    """Runs escrowctl top on a pty (24 x 100) inside sh, which records the
    terminal's modes before and after; steps are (delay_s, action)."""
    script = ('stty -g >{w}/before; "$0" "$@"; echo "rc=$?" >{w}/rc; stty -g >{w}/after'
              .format(w=work))
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("sh", ["sh", "-c", script, ctl] + args)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    out = b""
    def pump(seconds):
        nonlocal out
        end = time.time() + seconds
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    return False
        return True
    for delay, action in steps:
        deadline = time.time() + 30
        while time.time() < deadline and not delay(out):
            pump(0.1)
        assert delay(out), ("timed out waiting", out[-2000:])
        action(pid, fd)
    deadline = time.time() + 30
    while time.time() < deadline:
        if not pump(0.2):
            break
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    else:
        raise AssertionError("escrowctl top did not exit")
    text = out.decode(errors="replace")
    rc = open(os.path.join(work, "rc")).read().strip()
    before = open(os.path.join(work, "before")).read()
    after = open(os.path.join(work, "after")).read()
    return text, rc, before == after

def seen(s):
    return lambda out: s.encode() in out

def frames(n):
    return lambda out: out.count(b"\x1b[H\x1b[1mescrowctl top") >= n

key = lambda k: (lambda pid, fd: os.write(fd, k))
args = ["top", "--interval-ms", "200", "--prefix", "cap-"]
# 24 rows: 4 top lines and the key line leave 19 rows, 9 items of 2 rows
text, rc, same = run(args, [
    (seen("items 1-9 of 12 |"), key(b"n")),
    (seen("items 10-12 of 12 |"), key(b"\x1b[5~")),                 # PgUp
    # the kernel sends SIGWINCH to the terminal's foreground processes
    (lambda o: o.count(b"items 1-9 of 12 |") >= 2,
     lambda pid, fd: fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 100, 0, 0))),
    (seen("items 1-3 of 12 |"), key(b"q")),
])
assert rc == "rc=0", rc
assert same, "the terminal's modes differ after top"
assert "\x1b[?1049h" in text and text.rstrip().endswith("\x1b[?1049l"), text[-300:]
assert "shop-1/cap-01" in text and "q quit  n next page" in text, text[-2000:]
# SIGTERM (to escrowctl, the child of sh): a clean exit, the terminal restored
def term_top(pid, fd):
    children = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
    assert len(children) == 1, children
    os.kill(int(children[0]), signal.SIGTERM)
text, rc, same = run(args, [(frames(2), term_top)])
assert rc == "rc=0", rc
assert same, "the terminal's modes differ after SIGTERM"
assert text.rstrip().endswith("\x1b[?1049l"), text[-300:]
# samples slower than the interval (a stopped owner takes --timeout-ms to
# give up, every sample): the keys are still read between samples
os.kill(n1_pid, signal.SIGSTOP)
try:
    text, rc, same = run(["top", "--interval-ms", "100", "--timeout-ms", "400", "--prefix", "cap-"],
                         [(seen("node n1 did not answer"), key(b"n")),
                          (seen("items 10-12 of 12 |"), key(b"q"))])
finally:
    os.kill(n1_pid, signal.SIGCONT)
assert rc == "rc=0" and same, (rc, same)
print("live view: pages, resize, q and SIGTERM ok; keys read while samples are slow")
EOF

esc_step "escrowctl check"
esc_ctl_expect "$work" 0 check
esc_assert_eq "$(tail -n 1 "$work/out")" "conservation=ok" "books balance"
passed=1
echo "ctl_top: all checks passed"
