#!/usr/bin/env bash
# ctl.sh - escrowctl against a real, private PostgreSQL: migrate (idempotent,
# and safe when four run at once), item create (split, defaults, refusals
# that change nothing), status, holds and events on holds written by the
# real escrow_commit_batch(), and check (ok, then each kind of violation
# detected with exit 1, then "cannot judge" with exit 2).
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

work=$(mktemp -d /tmp/escrow-ctl-test.XXXXXX)
esc_on_exit "rm -rf '$work'"

# Runs escrowctl, expects exit code $1; output in $work/out, $work/err.
expect_rc() {
    local want=$1 rc=0
    shift
    esc_ctl "$@" >"$work/out" 2>"$work/err" || rc=$?
    if [[ $rc -ne $want ]]; then
        cat "$work/out" "$work/err" >&2
        esc_fail "escrowctl $* exited $rc, expected $want"
    fi
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
migrations=("$ESC_SRC"/coordinator/migrations/*.sql)
esc_assert_eq "$(cat "$work"/m* | grep -c '^applied ')" "${#migrations[@]}" \
    "each migration applied exactly once"
expect_rc 0 migrate
grep -q '(0 applied now' "$work/out" || esc_fail "second migrate was not a no-op"

esc_step "item create"
expect_rc 0 item create shop-1 tee --total 10 --segments 3 --max-per-order 5 --hold-ttl-ms 30000
esc_assert_eq "$(esc_psql "SELECT string_agg(available::text, ',' ORDER BY seg_no) FROM segments WHERE item_id = 'tee'")" \
    "4,3,3" "split with the remainder on the first segments"
esc_assert_eq "$(esc_psql "SELECT node_id || ' ' || epoch FROM segments WHERE seg_no = 0 AND item_id = 'tee'")" \
    "n1 0" "default node and epoch"
esc_assert_eq "$(esc_psql "SELECT unallocated || ' ' || hold_ttl_ms || ' ' || max_per_order FROM items WHERE item_id = 'tee'")" \
    "0 30000 5" "item row"
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
    '{}', '{}', '{}', '{}')" >/dev/null
esc_psql "SELECT count(*) FROM escrow_commit_batch(2, ARRAY[$seg]::bigint[], '{0}', '{0}', '{-2}', '{2}', '{3}',
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
    ARRAY[$h1]::bigint[], '{converted}', '{2}', '{0}')" >/dev/null
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
