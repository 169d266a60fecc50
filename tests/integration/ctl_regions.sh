#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl_regions.sh - escrowctl over two regions: one private
# PostgreSQL, two databases (one per region), two INI files whose
# coordinators and peers point at unused ports. item create --global (by
# shares, by --quota, idempotent re-run, conflicting re-run that changes
# nothing, a database claimed by another region), quota show, check --global
# through every step of a quota move done by hand with the SQL functions of
# migration 0008 (sent, applied, duplicate apply, done, refused and
# returned), global restock and reduce by hand with those of migration 0010
# (restocked here, placed elsewhere, learned, reduced now and pending, quota
# taken by the pending reduce, refused), then violations (tampered quota, a
# tampered record of changes, a receipt with no donor row),
# "cannot judge" (a region without --config), regions and quota move with
# no coordinator.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

unset ESCROW_COORDINATOR
work=$(mktemp -d /tmp/escrow-ctl-regions.XXXXXX)
esc_on_exit "rm -rf '$work'"

expect_rc() {
    esc_ctl_expect "$work" "$@"
}
psql_in() { # DB SQL
    "$ESC_PG_BINDIR/psql" "host=127.0.0.1 port=$ESC_PG_PORT dbname=$1 user=$ESC_PG_USER" \
        -At -X -q -v ON_ERROR_STOP=1 -c "$2"
}
contains() { # FILE TEXT
    grep -qF -- "$2" "$1" || { cat "$work/out" "$work/err" >&2; esc_fail "no '$2' in $1"; }
}

esc_step "private PostgreSQL, two databases"
esc_pg_start
for db in escrow_eu escrow_us; do
    psql_in postgres "CREATE DATABASE $db"
done
dsn_eu="host=127.0.0.1 port=$ESC_PG_PORT dbname=escrow_eu user=$ESC_PG_USER"
dsn_us="host=127.0.0.1 port=$ESC_PG_PORT dbname=escrow_us user=$ESC_PG_USER"
expect_rc 0 --dsn "$dsn_eu" migrate
expect_rc 0 --dsn "$dsn_us" migrate

p=()
for i in 1 2 3 4 5 6; do p+=("$(esc_free_port)"); done
write_ini() { # FILE NAME DSN COORD PUB SHARE PEER PEER_COORD [EXTRA]
    cat >"$1" <<INI
[region]
name = $2
dsn = $3
coordinator = tcp://127.0.0.1:$4
publish = tcp://127.0.0.1:$5

[quota]
share = $6
floor = 5

[peers]
$7 = tcp://127.0.0.1:$8
${9:-}
INI
}
write_ini "$work/eu.ini" eu "$dsn_eu" "${p[0]}" "${p[1]}" 3 us "${p[2]}" $'\n[floors]\nshop/tee = 20'
write_ini "$work/us.ini" us "$dsn_us" "${p[2]}" "${p[3]}" 1 eu "${p[0]}"
write_ini "$work/xx.ini" xx "$dsn_eu" "${p[4]}" "${p[5]}" 1 us "${p[2]}"
both=(--config "$work/eu.ini" --config "$work/us.ini")
total_in() { psql_in "escrow_$1" "SELECT total FROM items WHERE tenant_id = 'shop' AND item_id = '$2'"; }

esc_step "item create --global: by shares (3:1), then by --quota"
expect_rc 0 --timeout-ms 100 item create shop tee --global --total 1001 --segments 2 "${both[@]}"
contains "$work/out" "region eu           created shop/tee quota=751"
esc_assert_eq "$(total_in eu tee)/$(total_in us tee)" "751/250" "largest remainder split"
esc_assert_eq "$(psql_in escrow_us "SELECT global_total || ' ' || array_to_string(regions, ',') || ' ' || initial_quota FROM global_items")" \
    "1001 eu,us 250" "global_items row"
esc_assert_eq "$(psql_in escrow_eu "SELECT region FROM region_self")" "eu" "region_self claimed"
esc_assert_eq "$(psql_in escrow_eu "SELECT string_agg(available::text, ',' ORDER BY seg_no) FROM segments WHERE item_id = 'tee'")" \
    "376,375" "the regional quota split over the segments"
expect_rc 0 --timeout-ms 100 --json item create shop cap --global --total 100 --quota us=70,eu=30 "${both[@]}"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert [(r["region"], r["quota"]) for r in d["regions"]] == [("eu", 30), ("us", 70)], d' <"$work/out"

esc_step "idempotent re-run; conflicting re-runs change nothing"
expect_rc 0 --timeout-ms 100 item create shop tee --global --total 1001 --segments 2 "${both[@]}"
contains "$work/out" "already has shop/tee quota=751"
before=$(psql_in escrow_eu "SELECT count(*) FROM items")/$(psql_in escrow_us "SELECT count(*) FROM segments")
expect_rc 1 item create shop tee --global --total 1000 "${both[@]}"
contains "$work/err" "region eu: global item shop/tee exists with global_total=1001"
expect_rc 1 item create shop cap --global --total 100 "${both[@]}" # shares would give 75/25
contains "$work/err" "was created with quota 30, this command would give it 75"
psql_in escrow_us "INSERT INTO tenants VALUES ('shop') ON CONFLICT DO NOTHING; INSERT INTO items (tenant_id, item_id, total, unallocated) VALUES ('shop', 'local-only', 5, 5)"
expect_rc 1 item create shop local-only --global --total 10 "${both[@]}"
contains "$work/err" "region us: item shop/local-only exists and is not a global item"
expect_rc 1 item create shop other --global --total 10 --config "$work/xx.ini" --config "$work/us.ini"
contains "$work/err" "region xx"
contains "$work/err" "belongs to region 'eu'"
expect_rc 2 item create shop other --global --total 10 --quota eu=5,mars=5 "${both[@]}"
expect_rc 2 item create shop other --global --total 10 --quota eu=5,us=4 "${both[@]}"
expect_rc 2 item create shop other --global --total 10
esc_assert_eq "$(psql_in escrow_eu "SELECT count(*) FROM items")/$(psql_in escrow_us "SELECT count(*) FROM segments")" \
    "$before" "refused creates changed nothing"
esc_assert_eq "$(psql_in escrow_us "SELECT count(*) FROM items WHERE item_id = 'other'")" "0" "nothing in us"

esc_step "quota show"
expect_rc 0 quota show shop "${both[@]}"
cat "$work/out"
contains "$work/out" "shop/tee global_total=1001"
grep -qE '^  eu +751 +751 +0 +0 +0 +0 +20$' "$work/out" || esc_fail "eu row of quota show (floor from [floors])"
grep -qE '^  us +250 +250 +0 +0 +0 +0 +5$' "$work/out" || esc_fail "us row of quota show"
expect_rc 0 --json quota show shop tee "${both[@]}"
python3 -c 'import json,sys; d=json.load(sys.stdin); i=d["items"][0]; assert i["quotas"] == 1001 and i["regions"][0]["floor"] == 20, d' <"$work/out"

check_ok() { # STEP
    expect_rc 0 check --global "${both[@]}"
    contains "$work/out" "global=ok"
}
esc_step "check --global, through a quota move done by hand"
check_ok
# the donor's coordinator first reclaims units from a segment into unallocated
psql_in escrow_eu "UPDATE segments SET available = available - 100 WHERE item_id = 'tee' AND seg_no = 0; UPDATE items SET unallocated = unallocated + 100 WHERE item_id = 'tee'"
check_ok
id=$(psql_in escrow_eu "SELECT escrow_quota_send('shop', 'tee', 'us', 100, 'manual')")
check_ok # sent, not applied: in flight
grep -qE '^shop +tee +901 .* 100 +1001 ok$' "$work/out" || esc_fail "100 in flight: $(cat "$work/out")"
esc_assert_eq "$(psql_in escrow_us "SELECT escrow_quota_apply('eu', $id, 'shop', 'tee', 100)")" "applied" "apply"
check_ok # applied, the donor not told yet
esc_assert_eq "$(psql_in escrow_us "SELECT escrow_quota_apply('eu', $id, 'shop', 'tee', 100)")" "applied-before" "duplicate apply"
esc_assert_eq "$(total_in eu tee)/$(total_in us tee)" "651/350" "a duplicate apply changes nothing"
esc_assert_eq "$(psql_in escrow_eu "SELECT escrow_quota_done($id, 'received')")" "t" "done"
check_ok
expect_rc 0 quota show shop tee "${both[@]}"
grep -qE '^  \(global\) +1001 ' "$work/out" || esc_fail "quota show's global line"

esc_step "a refused offer returns the units"
psql_in escrow_us "UPDATE items SET state = 'retired' WHERE item_id = 'cap'"
psql_in escrow_eu "UPDATE segments SET available = available - 10 WHERE item_id = 'cap'; UPDATE items SET unallocated = unallocated + 10 WHERE item_id = 'cap'"
id2=$(psql_in escrow_eu "SELECT escrow_quota_send('shop', 'cap', 'us', 10, 'manual')")
esc_assert_eq "$(total_in eu cap)" "20" "sent"
esc_assert_eq "$(psql_in escrow_us "SELECT escrow_quota_apply('eu', $id2, 'shop', 'cap', 10)")" "refused" "refused"
check_ok
esc_assert_eq "$(psql_in escrow_eu "SELECT escrow_quota_done($id2, 'refused')")" "t" "done refused"
esc_assert_eq "$(total_in eu cap)/$(total_in us cap)" "30/70" "the units came back"
check_ok
contains "$work/out" "1 received, 1 refused; 1 receipts applied"
expect_rc 0 --json check --global "${both[@]}"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["global"] == "ok" and len(d["regions"]) == 2, d' <"$work/out"
expect_rc 0 status --global "${both[@]}"
contains "$work/out" "== region us"
contains "$work/out" "shop/tee global_total=1001 ok"
grep -qE '^  eu +651 +651 +0 +0 +0 +0$' "$work/out" || esc_fail "status --global: eu's line"
grep -qE '^  \(global\) +1001 +1001 +0 +0 +0 +0$' "$work/out" || esc_fail "status --global: the global line"

esc_step "global restock and reduce by hand (migration 0010): learned or not, the check holds"
total_g() { psql_in "escrow_$1" "SELECT global_total FROM global_items WHERE item_id = '$2'"; }
psql_in escrow_us "SELECT * FROM escrow_global_restock('shop', 'tee', 'r1', 40, 'us')" >/dev/null
esc_assert_eq "$(total_in us tee)/$(total_g us tee)/$(total_g eu tee)" "390/1041/1001" "restocked in us, eu not told"
check_ok
grep -qE '^shop +tee +1041 .* 1041 ok$' "$work/out" || esc_fail "the global total with the restock"
esc_assert_eq "$(psql_in escrow_us "SELECT outcome || ' ' || global_total FROM escrow_global_restock('shop', 'tee', 'r1', 40, 'us')")" \
    "before 1041" "the same operation id again changes nothing"
expect_rc 0 check --global "${both[@]}" # status: placed in eu from us: in flight until eu applies it
psql_in escrow_us "SELECT * FROM escrow_global_restock('shop', 'tee', 'r2', 10, 'eu')" >/dev/null
id3=$(psql_in escrow_us "SELECT transfer_id FROM global_ops WHERE op_id = 'r2'")
esc_assert_eq "$(total_in us tee)/$(total_g us tee)" "390/1051" "placed in eu: us's quota unchanged"
check_ok
esc_assert_eq "$(psql_in escrow_eu "SELECT escrow_quota_apply('us', $id3, 'shop', 'tee', 10)")" "applied" "eu applies the restock's transfer"
check_ok
esc_assert_eq "$(psql_in escrow_eu "SELECT global_total FROM escrow_global_learn('shop', 'tee', 'us', 2, 50)")" "1051" "eu learns us's two changes"
esc_assert_eq "$(psql_in escrow_eu "SELECT changes || ' ' || global_total FROM escrow_global_learn('shop', 'tee', 'us', 1, 40)")" "2 1051" "an older row changes nothing"
check_ok
# a reduce in eu: 661 in eu, 210 of them unallocated now (taken at once), 90 more pending
psql_in escrow_eu "UPDATE segments SET available = available - 200 WHERE item_id = 'tee' AND seg_no = 1; UPDATE items SET unallocated = unallocated + 200 WHERE item_id = 'tee'"
esc_assert_eq "$(psql_in escrow_eu "SELECT outcome || ' ' || total || ' ' || reduce_pending FROM escrow_global_reduce('shop', 'tee', 'd1', 300, 0)")" \
    "done 451 90" "reduce: 210 taken, 90 pending"
check_ok
grep -qE '^shop +tee +.* 751 ok$' "$work/out" || esc_fail "the global total after the reduce"
expect_rc 0 status --global "${both[@]}"
grep -qE '^  eu +451 +361 +0 +0 +0 +90$' "$work/out" || esc_fail "status --global: eu reducing 90"
esc_assert_eq "$(psql_in escrow_eu "SELECT outcome || ' ' || free FROM escrow_global_reduce('shop', 'tee', 'd2', 800, 0)")" \
    "refused 661" "never more than is neither sold, held nor being reduced"
esc_assert_eq "$(psql_in escrow_eu "SELECT count(*) FROM global_ops WHERE op_id = 'd2'")" "0" "a refused reduce leaves no record"
# quota from us arrives: the pending reduce takes it
psql_in escrow_us "UPDATE segments SET available = available - 100 WHERE item_id = 'tee' AND seg_no = 0; UPDATE items SET unallocated = unallocated + 100 WHERE item_id = 'tee'"
id4=$(psql_in escrow_us "SELECT escrow_quota_send('shop', 'tee', 'eu', 100, 'reduce')")
check_ok
esc_assert_eq "$(psql_in escrow_eu "SELECT escrow_quota_apply('us', $id4, 'shop', 'tee', 100)")" "applied" "apply"
esc_assert_eq "$(total_in eu tee)/$(psql_in escrow_eu "SELECT reduce_pending FROM items WHERE item_id = 'tee'")" "461/0" "the reduce took the arriving quota"
check_ok
esc_assert_eq "$(psql_in escrow_us "SELECT escrow_quota_done($id4, 'received')")" "t" "done"
psql_in escrow_us "SELECT * FROM escrow_global_learn('shop', 'tee', 'eu', 1, -300)" >/dev/null
check_ok
grep -qE '^shop +tee +.* 751 ok$' "$work/out" || esc_fail "the global total after the reduce"
esc_assert_eq "$(total_g eu tee)/$(total_g us tee)" "751/751" "both regions agree on the global total"
esc_step "tampering with a region's record of the changes is caught"
psql_in escrow_us "UPDATE global_changes SET delta = delta + 1 WHERE region = 'eu'"
expect_rc 1 check --global "${both[@]}"
contains "$work/out" "region eu says created with 1001 over 'eu us', region us says 1000"
psql_in escrow_us "UPDATE global_changes SET delta = delta - 1 WHERE region = 'eu'"
check_ok

esc_step "violations: a tampered quota, a receipt without a donor row"
psql_in escrow_us "UPDATE items SET total = total + 5, unallocated = unallocated + 5 WHERE item_id = 'tee'"
expect_rc 1 check --global "${both[@]}"
contains "$work/out" "VIOLATION global item shop/tee: quotas 756 - pending reduces 0 + in flight 0 - counted twice 0 = 756, but the global total is 751"
contains "$work/out" "global=VIOLATED"
psql_in escrow_us "UPDATE items SET total = total - 5, unallocated = unallocated - 5 WHERE item_id = 'tee'"
check_ok
psql_in escrow_us "INSERT INTO quota_receipts VALUES ('eu', 999, 'shop', 'tee', 1, 'applied'); UPDATE items SET total = total + 1, unallocated = unallocated + 1 WHERE item_id = 'tee'"
expect_rc 1 check --global "${both[@]}"
contains "$work/out" "region us applied transfer eu/999 (1 units of shop/tee) but the donor has no such transfer"
psql_in escrow_us "DELETE FROM quota_receipts WHERE transfer_id = 999; UPDATE items SET total = total - 1, unallocated = unallocated - 1 WHERE item_id = 'tee'"
check_ok

esc_step "cannot judge: a region without --config"
expect_rc 2 check --global --config "$work/eu.ini"
contains "$work/out" "CANNOT JUDGE global item shop/tee is split over region us: no --config for it"

esc_step "regions and quota move without coordinators"
expect_rc 0 --timeout-ms 200 regions "${both[@]}"
cat "$work/out"
contains "$work/out" "tcp://127.0.0.1:${p[0]} not answering"
contains "$work/out" "global items 2; quota transfers sent 2 (open 0, received 1, refused 1)"
expect_rc 0 --timeout-ms 200 --json regions "${both[@]}"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["coordinator_answers"] for r in d["regions"]] == [False, False] and d["regions"][1]["receipts_applied"] == 1, d' <"$work/out"
expect_rc 3 --timeout-ms 200 quota move shop tee 10 --from eu --to us "${both[@]}"
contains "$work/err" "did not answer within 200 ms"
expect_rc 2 quota move shop tee 10 --from eu --to mars "${both[@]}"
expect_rc 2 quota move shop tee 10 --from eu --to eu "${both[@]}"
echo "ctl_regions: ok"
