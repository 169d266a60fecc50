#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl.sh - escrowctl against a real, private PostgreSQL: migrate (idempotent,
# and safe when four run at once), item create (split, defaults, unassigned
# segments, refusals that change nothing), status, nodes, transfers, holds and
# events on holds written by the real escrow_commit_batch(), release's errors
# that need no daemon (unknown hold, ended holds, no owner, owner down, owner
# silent), the coordinator's commands with no coordinator (exit 2 and 3), and
# check (ok, in-flight transfers counted, then each kind of violation detected
# with exit 1, then "cannot judge" with exit 2). Everything with a live
# coordinator and nodes is tests/integration/ctl_cluster.sh.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

unset ESCROW_COORDINATOR # the coordinator's commands are tested without one here
work=$(mktemp -d /tmp/escrow-ctl-test.XXXXXX)
esc_on_exit "rm -rf '$work'"

# Runs escrowctl, expects exit code $1; output in $work/out, $work/err.
expect_rc() {
    esc_ctl_expect "$work" "$@"
}

esc_step "private PostgreSQL"
esc_pg_start

esc_step "migrate: four at once, then again"
pids=()
for i in 1 2 3 4; do
    esc_ctl migrate >"$work/m$i" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do
    wait "$p" || { cat "$work"/m*; esc_fail "a concurrent migrate failed"; }
done
migrations=("$ESC_SRC"/common/schema/migrations/*.sql)
esc_assert_eq "$(cat "$work"/m* | grep -c '^applied ')" "${#migrations[@]}" \
    "each migration applied exactly once"
expect_rc 0 migrate
grep -q '(0 applied now' "$work/out" || esc_fail "second migrate was not a no-op"

esc_step "item create"
expect_rc 0 item create shop-1 tee --total 10 --segments 3 --max-per-order 5 --hold-ttl-ms 30000
esc_assert_eq "$(esc_psql "SELECT string_agg(available::text, ',' ORDER BY seg_no) FROM segments WHERE item_id = 'tee'")" \
    "4,3,3" "split with the remainder on the first segments"
esc_assert_eq "$(esc_psql "SELECT count(*) FILTER (WHERE node_id IS NULL) || ' ' || max(epoch) FROM segments WHERE item_id = 'tee'")" \
    "3 0" "without --node the segments are unassigned, at epoch 0"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM nodes")" "0" "no node row without --node"
esc_assert_eq "$(esc_psql "SELECT unallocated || ' ' || hold_ttl_ms || ' ' || max_per_order || ' ' || segments_wanted FROM items WHERE item_id = 'tee'")" \
    "0 30000 5 3" "item row"
expect_rc 0 item create shop-1 pinned --total 4 --segments 2 --node n1
esc_assert_eq "$(esc_psql "SELECT string_agg(node_id || ':' || epoch, ',' ORDER BY seg_no) FROM segments WHERE item_id = 'pinned'")" \
    "n1:0,n1:0" "--node assigns the segments (static mode)"
grep -q 'node=n1' "$work/out" || esc_fail "item create does not name the node"
# a configured coordinator that does not answer: the item is created anyway,
# with a warning (the coordinator also polls the catalog)
ESCROW_COORDINATOR=tcp://127.0.0.1:1 expect_rc 0 --timeout-ms 200 item create shop-1 later --total 3
grep -q 'warning: the coordinator at tcp://127.0.0.1:1 did not answer within 200 ms' "$work/err" ||
    esc_fail "no warning when the coordinator does not answer: $(cat "$work/err")"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM segments WHERE item_id = 'later'")" "1" "item created without the coordinator"
expect_rc 0 --json item create shop-1 one --total 1
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["segments"][0]["available"] == 1' <"$work/out"

before=$(esc_psql "SELECT count(*) FROM items")/$(esc_psql "SELECT count(*) FROM segments")
expect_rc 1 item create shop-1 tee --total 99
grep -q 'already exists' "$work/err" || esc_fail "no sentence for an existing item"
expect_rc 2 item create shop-1 'bad id' --total 1
expect_rc 2 item create shop-1 x --total 1 --segments 257
expect_rc 2 item create shop-1 x --total 1 --region mars
expect_rc 2 item create shop-2 x
esc_assert_eq "$(esc_psql "SELECT count(*) FROM items")/$(esc_psql "SELECT count(*) FROM segments")" \
    "$before" "refused creates changed nothing"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM tenants WHERE tenant_id = 'shop-2'")" "0" \
    "refused create left no tenant"

esc_step "holds and events through escrow_commit_batch()"
h1=$(((1 << 40) | 1))
h2=$(((1 << 40) | 2))
exp_ms=$(($(date +%s) * 1000 + 30000))
seg=$(esc_psql "SELECT segment_id FROM segments WHERE item_id = 'tee' AND seg_no = 0")
esc_psql "SELECT count(*) FROM escrow_commit_batch(1, ARRAY[$seg]::bigint[], '{0}', '{-3}', '{3}', '{0}', '{3}',
    ARRAY[$h1, $h2]::bigint[], ARRAY[$seg, $seg]::bigint[], '{shop-1,shop-1}', '{tee,tee}', '{alice,alice}',
    '{2,1}', '{k1,k2}', '{42,43}', ARRAY[$exp_ms, $exp_ms]::bigint[], '{0,0}', '{0,0}',
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')" >/dev/null
esc_psql "SELECT count(*) FROM escrow_commit_batch(2, ARRAY[$seg]::bigint[], '{0}', '{0}', '{-2}', '{2}', '{3}',
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
    ARRAY[$h1]::bigint[], '{converted}', '{2}', '{0}', '{\"\"}', '{}', '{}', '{}', '{}')" >/dev/null
expect_rc 0 holds shop-1 --buyer alice --item tee
esc_assert_eq "$(grep -c alice "$work/out")" "2" "holds of alice"
expect_rc 0 --json holds shop-1 --hold "$h1"
python3 -c 'import json,sys; h=json.load(sys.stdin)["holds"][0]; assert h["state"]=="converted" and h["qty_sold"]==2, h' <"$work/out"
expect_rc 1 holds shop-1 --hold 12345
expect_rc 0 --json events shop-1 --item tee
python3 -c 'import json,sys; e=json.load(sys.stdin)["events"]; assert [x["kind"] for x in e]==["held","held","converted"], e' <"$work/out"
expect_rc 0 events shop-1 --after 2
esc_assert_eq "$(grep -c converted "$work/out")" "1" "events after 2"

esc_step "status"
expect_rc 0 status shop-1 tee
grep -q 'tee .* ok$' "$work/out" || esc_fail "status does not show tee as ok"
expect_rc 0 --json status
python3 -c '
import json, sys
d = json.load(sys.stdin)
tee = [i for i in d["items"] if i["item"] == "tee"][0]
assert (tee["available"], tee["held"], tee["sold"]) == (7, 1, 2), tee
assert sum(s["available"] + s["held"] + s["sold"] for s in tee["segments"]) == tee["total"]
' <"$work/out"
expect_rc 1 status shop-1 nope

esc_step "nodes"
expect_rc 0 nodes
esc_assert_eq "$(grep -c '^n1 ' "$work/out")" "1" "n1 listed"
grep -q '^n1 .* 2 (2 active, 0 draining)$' "$work/out" || esc_fail "n1 owns 2 segments: $(cat "$work/out")"
esc_psql "UPDATE nodes SET endpoint = 'tcp://127.0.0.1:1', lease_until = now() - interval '5 s' WHERE node_id = 'n1'"
expect_rc 0 --json nodes
python3 -c '
import json, sys
n = json.load(sys.stdin)["nodes"]
assert len(n) == 1 and n[0]["node"] == "n1" and n[0]["endpoint"] == "tcp://127.0.0.1:1", n
assert n[0]["segments"] == 2 and n[0]["segments_active"] == 2 and n[0]["lease_left_ms"] < -4000, n
' <"$work/out"
expect_rc 0 nodes
grep -q 'expired [0-9.]* s ago' "$work/out" || esc_fail "an expired lease is not shown: $(cat "$work/out")"
expect_rc 2 nodes extra

esc_step "transfers: open, all, in status and in check"
segs=($(esc_psql "SELECT segment_id FROM segments WHERE item_id = 'tee' ORDER BY seg_no"))
# one planned (nothing moved yet), one sent (1 unit out of seg_no 1, in no
# segment: in flight), one received long ago
esc_psql "INSERT INTO transfers (tenant_id, item_id, from_segment, to_segment, qty, planned_qty, state, reason)
          VALUES ('shop-1', 'tee', ${segs[0]}, ${segs[1]}, 2, 2, 'planned', 'rebalance'),
                 ('shop-1', 'tee', ${segs[1]}, ${segs[2]}, 1, 1, 'sent', 'collapse'),
                 ('shop-1', 'tee', NULL, ${segs[2]}, 5, 5, 'received', 'restock');
          UPDATE segments SET available = available - 1 WHERE segment_id = ${segs[1]};
          UPDATE items SET total = total + 5 WHERE item_id = 'tee';
          UPDATE segments SET available = available + 5 WHERE segment_id = ${segs[2]}"
expect_rc 0 transfers
esc_assert_eq "$(tail -n 1 "$work/out")" "2 open transfers" "open transfers"
grep -q ' planned ' "$work/out" && grep -q ' sent ' "$work/out" || esc_fail "open transfers: $(cat "$work/out")"
expect_rc 0 transfers shop-1 tee --all
esc_assert_eq "$(tail -n 1 "$work/out")" "3 transfers" "all transfers"
grep -q '^[0-9]* *shop-1 *tee *unallocated ' "$work/out" || esc_fail "restock source not shown as unallocated"
expect_rc 0 transfers --all --limit 1
esc_assert_eq "$(tail -n 1 "$work/out")" "1 transfer shown; more exist (raise --limit)" "limited"
expect_rc 0 --json transfers shop-1
python3 -c '
import json, sys
d = json.load(sys.stdin)
t = sorted(d["transfers"], key=lambda x: x["transfer_id"])
assert [x["state"] for x in t] == ["planned", "sent"] and not d["truncated"], d
assert t[1]["qty"] == 1 and t[1]["reason"] == "collapse" and t[1]["sent_at"] is None, t
' <"$work/out"
expect_rc 1 transfers shop-1 nope
esc_assert_eq "$(cat "$work/err")" "escrowctl: no item shop-1/nope" "transfers of an unknown item"
expect_rc 2 transfers --limit 0
expect_rc 0 status shop-1 tee
grep -q "segment ${segs[1]} .* xfers=2 out=1 in=0" "$work/out" || esc_fail "donor segment: $(cat "$work/out")"
grep -q "segment ${segs[2]} .* xfers=1 out=0 in=1" "$work/out" || esc_fail "receiving segment: $(cat "$work/out")"
grep -q '^shop-1 *tee .* 1 *0 *3/3 *0 *- *2 *ok$' "$work/out" || esc_fail "item summary: $(cat "$work/out")"
expect_rc 0 --json status shop-1 tee
python3 -c '
import json, sys
i = json.load(sys.stdin)["items"][0]
assert i["in_flight"] == 1 and i["transfers_open"] == 2 and i["tail_segment"] is None, i
assert i["segments_active"] == 3 and i["segments_wanted"] == 3, i
s = i["segments"]
assert [x["in_flight_out"] for x in s] == [0, 1, 0] and [x["in_flight_in"] for x in s] == [0, 0, 1], s
assert sum(x["available"] + x["held"] + x["sold"] for x in s) + i["in_flight"] == i["total"], i
' <"$work/out"
expect_rc 0 check
esc_assert_eq "$(tail -n 2 "$work/out" | head -n 1)" \
    "checked 4 items, 7 segments, 1 transfers in flight (1 units), 1 planned" "check counts the transfer in flight"
esc_assert_eq "$(tail -n 1 "$work/out")" "conservation=ok" "in flight units are accounted for"
# the transfer arrives; the planned one is cancelled
esc_psql "UPDATE transfers SET state = 'received' WHERE state = 'sent';
          UPDATE transfers SET state = 'cancelled' WHERE state = 'planned';
          UPDATE segments SET available = available + 1 WHERE segment_id = ${segs[2]}"
expect_rc 0 transfers
esc_assert_eq "$(cat "$work/out")" "no open transfers" "nothing open any more"

esc_step "release: errors that need no daemon"
expect_rc 1 release $(((1 << 40) | 999))
grep -q "no hold" "$work/err" || esc_fail "unknown hold: $(cat "$work/err")"
expect_rc 1 release "$h1"
grep -q 'converted (sold)' "$work/err" || esc_fail "converted hold: $(cat "$work/err")"
expect_rc 3 release "$h2"
grep -q "segment $seg has no owner right now" "$work/err" || esc_fail "no owner: $(cat "$work/err")"
esc_psql "UPDATE segments SET node_id = 'n1' WHERE segment_id = $seg"
expect_rc 3 release "$h2"
grep -q "node n1, owner of segment $seg, is down" "$work/err" || esc_fail "owner down: $(cat "$work/err")"
esc_psql "UPDATE nodes SET lease_until = now() + interval '1 hour', endpoint = '' WHERE node_id = 'n1'"
expect_rc 3 release "$h2"
grep -q "has no endpoint on record" "$work/err" || esc_fail "no endpoint: $(cat "$work/err")"
esc_psql "UPDATE nodes SET endpoint = 'tcp://127.0.0.1:1' WHERE node_id = 'n1'"
expect_rc 3 release "$h2" --timeout-ms 300
grep -q "node n1 at tcp://127.0.0.1:1 did not answer within 300 ms: nothing could be sent" "$work/err" ||
    esc_fail "silent owner: $(cat "$work/err")"
esc_assert_eq "$(esc_psql "SELECT state FROM holds WHERE hold_id = $h2")" "held" "nothing changed the hold"
expect_rc 2 release 42
expect_rc 2 release

esc_step "the coordinator's commands without a coordinator"
expect_rc 2 item pause shop-1 tee
grep -q 'pass --coordinator URL or set ESCROW_COORDINATOR' "$work/err" || esc_fail "no coordinator: $(cat "$work/err")"
expect_rc 3 --coordinator tcp://127.0.0.1:1 --timeout-ms 300 item restock shop-1 tee 5
grep -q 'coordinator at tcp://127.0.0.1:1 did not answer within 300 ms' "$work/err" ||
    esc_fail "coordinator down: $(cat "$work/err")"
ESCROW_COORDINATOR=tcp://127.0.0.1:1 expect_rc 3 --timeout-ms 100 drain n1
expect_rc 2 --coordinator localhost:1 drain n1
expect_rc 2 --coordinator tcp://127.0.0.1:1 item restock shop-1 tee 0

esc_step "check: ok, then violations"
expect_rc 0 check
esc_assert_eq "$(tail -n 1 "$work/out")" "conservation=ok" "check verdict"
esc_psql "UPDATE segments SET available = available + 1 WHERE segment_id = $seg"
expect_rc 1 check
esc_assert_eq "$(tail -n 1 "$work/out")" "conservation=VIOLATED items=1 segments=0" "lost unit"
esc_psql "UPDATE segments SET available = available - 2, held = held + 1 WHERE segment_id = $seg"
expect_rc 1 check
esc_assert_eq "$(tail -n 1 "$work/out")" "conservation=VIOLATED items=0 segments=1" "held disagrees"
expect_rc 1 --json check
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["conservation"]=="VIOLATED" and d["violations"][0]["holds_live"]==1, d' <"$work/out"
esc_psql "ALTER TABLE segments DROP CONSTRAINT segments_counters_nonneg;
          UPDATE segments SET sold = -1, available = available + 1 WHERE item_id = 'one'"
expect_rc 1 check
grep -q 'negative counter' "$work/out" || esc_fail "negative counter not reported"

esc_step "check cannot judge: exit 2"
expect_rc 2 --dsn "host=127.0.0.1 port=1 dbname=escrow connect_timeout=2" check
esc_psql "DROP VIEW segment_holds_agree"
expect_rc 2 check

echo "PASS ctl"
