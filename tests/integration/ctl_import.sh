#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl_import.sh - `escrowctl item import` and `escrowctl status`'s filters
# and pages against a real, private PostgreSQL (no daemons): a good CSV file
# (quotes, defaults, the split as item create splits), its re-run (all
# unchanged, nothing written), a bad line, an item named twice, an existing
# item with other values (each: a clear error with the line number, exit
# code, and nothing changed), JSON lines from a file and from stdin, small
# chunks, 3,000 rows in one go; then status with --tenant, --item-prefix,
# --state, --paused, --sold-out, --limit and --offset, with the exact rows
# and the "N more" line.
set -euo pipefail
source "$(dirname "$0")/../support/lib.sh"

unset ESCROW_COORDINATOR
work=$(mktemp -d /tmp/escrow-ctl-import.XXXXXX)
esc_on_exit "rm -rf '$work'"

expect_rc() {
    esc_ctl_expect "$work" "$@"
}

# The catalog as one line: items and segments, with their sums.
catalog() {
    esc_psql "SELECT count(*) || ' items, ' || COALESCE(sum(total), 0) || ' units' FROM items"
    esc_psql "SELECT count(*) || ' segments, ' || COALESCE(sum(available), 0) || ' units' FROM segments"
}

esc_step "private PostgreSQL, schema"
esc_pg_start
expect_rc 0 migrate

esc_step "a CSV file: quotes, empty cells take item create's defaults"
cat >"$work/cat.csv" <<'EOF'
tenant,item,total,segments,max_per_order,max_per_buyer,hold_ttl_ms
shop-1,tee-red,10,3,5,,30000
shop-1,"tee,blue",7,2,,,

shop-2,mug,0,1,1,2,60000
shop-2,"say""hi",4,,,,
EOF
expect_rc 0 item import "$work/cat.csv"
esc_assert_eq "$(cat "$work/out")" "import: 4 rows: 4 created, 0 unchanged, 0 failed in $(sed -n 's/.* in \(.*\)$/\1/p' "$work/out")" "summary"
esc_assert_eq "$(esc_psql "SELECT string_agg(available::text, ',' ORDER BY seg_no) FROM segments WHERE item_id = 'tee-red'")" \
    "4,3,3" "split as item create splits it"
esc_assert_eq "$(esc_psql "SELECT total || ' ' || segments_wanted || ' ' || max_per_order || ' ' || max_per_buyer || ' ' || hold_ttl_ms || ' ' || unallocated FROM items WHERE item_id = 'tee,blue'")" \
    "7 2 0 0 600000 0" "quoted id, defaults"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM items WHERE item_id = 'say\"hi'")" "1" "a doubled quote"
esc_assert_eq "$(esc_psql "SELECT count(*) FILTER (WHERE node_id IS NULL) || '/' || count(*) FROM segments")" \
    "7/7" "segments unassigned: the coordinator places them"
esc_assert_eq "$(esc_psql "SELECT string_agg(tenant_id, ',' ORDER BY tenant_id) FROM tenants")" "shop-1,shop-2" "tenants"
expect_rc 0 check
before=$(catalog)

esc_step "the same file again: all unchanged, nothing written"
expect_rc 0 item import "$work/cat.csv"
grep -q '^import: 4 rows: 0 created, 4 unchanged, 0 failed in ' "$work/out" || esc_fail "re-run: $(cat "$work/out")"
esc_assert_eq "$(catalog)" "$before" "re-run changed nothing"

esc_step "a bad line: its number, exit 2, nothing changed (the good lines neither)"
printf 'tenant,item,total,segments\nshop-3,new-1,5,1\nshop-3,new-2,x,1\nshop-3,new-3,5,999\n' >"$work/bad.csv"
expect_rc 2 item import "$work/bad.csv"
grep -qx 'escrowctl: line 3: total must be an integer in 0..1000000000' "$work/err" || esc_fail "no line 3 error: $(cat "$work/err")"
grep -qx 'escrowctl: line 4: segments must be an integer in 1..256' "$work/err" || esc_fail "no line 4 error: $(cat "$work/err")"
grep -qx 'escrowctl: 2 bad lines; nothing was changed' "$work/err" || esc_fail "no verdict: $(cat "$work/err")"
grep -q '^import: 3 rows: 0 created, 0 unchanged, 2 failed in ' "$work/out" || esc_fail "summary: $(cat "$work/out")"
esc_assert_eq "$(catalog)" "$before" "a bad line changed nothing"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM tenants WHERE tenant_id = 'shop-3'")" "0" "no tenant either"
printf 'tenant,item,colour\n' >"$work/col.csv"
expect_rc 2 item import "$work/col.csv"
grep -q "line 1: unknown column 'colour'" "$work/err" || esc_fail "unknown column: $(cat "$work/err")"
printf 'tenant,item,total\nshop-3,new-1,5\nshop-3,new-1,5\n' >"$work/twice.csv"
expect_rc 2 item import "$work/twice.csv"
grep -q 'line 3: item shop-3/new-1 is already on line 2' "$work/err" || esc_fail "twice: $(cat "$work/err")"
expect_rc 2 item import "$work/cat.txt"
grep -q "cannot tell the format" "$work/err" || esc_fail "format: $(cat "$work/err")"
expect_rc 2 item import "$work/missing.csv"
grep -q "cannot open" "$work/err" || esc_fail "missing file: $(cat "$work/err")"
expect_rc 2 item import "$work/cat.csv" --region mars
grep -q "unknown region 'mars'" "$work/err" || esc_fail "region: $(cat "$work/err")"
esc_assert_eq "$(catalog)" "$before" "refused imports changed nothing"

esc_step "an existing item with other values: its line, exit 1, nothing changed"
printf 'tenant,item,total\nshop-3,new-1,5\nshop-1,tee-red,11\n' >"$work/conflict.csv"
expect_rc 1 item import "$work/conflict.csv"
grep -q 'line 3: item shop-1/tee-red already exists with other values (total 10, segments 3' "$work/err" ||
    esc_fail "conflict: $(cat "$work/err")"
grep -q '^import: 2 rows: 0 created, 0 unchanged, 1 failed in ' "$work/out" || esc_fail "summary: $(cat "$work/out")"
esc_assert_eq "$(catalog)" "$before" "a conflict changed nothing"

esc_step "JSON lines from a file, then from stdin; small chunks"
cat >"$work/more.jsonl" <<'EOF'
{"tenant": "shop-3", "item": "new-1", "total": 5}
{"tenant": "shop-3", "item": "new-2", "total": 8, "segments": 4, "max_per_order": 2, "hold_ttl_ms": null}

{"tenant": "shop-1", "item": "tee-red", "total": 10, "segments": 3, "max_per_order": 5, "hold_ttl_ms": 30000}
EOF
expect_rc 0 --json item import "$work/more.jsonl" --chunk 1
python3 -c 'import json,sys; d=json.load(sys.stdin); assert (d["rows"], d["created"], d["unchanged"], d["failed"]) == (3, 2, 1, 0), d' <"$work/out"
esc_assert_eq "$(esc_psql "SELECT string_agg(available::text, ',' ORDER BY seg_no) FROM segments WHERE item_id = 'new-2'")" \
    "2,2,2,2" "JSON row split"
printf '{"tenant": "shop-3", "item": "new-4", "total": "5"}\n' >"$work/str.jsonl"
expect_rc 2 item import "$work/str.jsonl"
grep -q 'line 1: total must be a JSON integer' "$work/err" || esc_fail "JSON type: $(cat "$work/err")"
printf '{"tenant": "shop-3", "item": "new-5", "total": 1}\n{"tenant": "shop-3", "item": "new-6", "total": 2}\n' |
    expect_rc 0 item import - --format jsonl
grep -q '^import: 2 rows: 2 created, 0 unchanged, 0 failed in ' "$work/out" || esc_fail "stdin: $(cat "$work/out")"
expect_rc 2 item import - </dev/null
grep -q "pass --format" "$work/err" || esc_fail "stdin without --format: $(cat "$work/err")"

esc_step "3,000 rows in chunks of 1,000, then again (unchanged)"
awk 'BEGIN { print "tenant,item,total,segments"; for (i = 1; i <= 3000; i++) printf "bulk,sku-%05d,%d,4\n", i, i }' >"$work/bulk.csv"
expect_rc 0 item import "$work/bulk.csv"
grep -q '^import: 3000 rows: 3000 created, 0 unchanged, 0 failed in ' "$work/out" || esc_fail "bulk: $(cat "$work/out")"
esc_assert_eq "$(esc_psql "SELECT count(*) || ' ' || sum(available) FROM segments WHERE tenant_id = 'bulk'")" \
    "12000 4501500" "bulk segments and units"
expect_rc 0 item import "$work/bulk.csv"
grep -q '^import: 3000 rows: 0 created, 3000 unchanged, 0 failed in ' "$work/out" || esc_fail "bulk again: $(cat "$work/out")"
expect_rc 0 check

esc_step "status: filters and pages, in SQL"
esc_psql "UPDATE items SET state = 'paused' WHERE item_id IN ('new-1', 'sku-00002')"
items_of() { grep -E '^(shop|bulk)' "$work/out" | awk '{print $1 "/" $2 "/" $3}' | paste -sd' '; }
expect_rc 0 status --tenant shop-3
esc_assert_eq "$(items_of)" "shop-3/new-1/paused shop-3/new-2/active shop-3/new-5/active shop-3/new-6/active" "--tenant"
grep -q '^4 items (1..4 of 4 matching), 7 segments' "$work/out" || esc_fail "status tail: $(cat "$work/out")"
grep -q 'more item' "$work/out" && esc_fail "a 'more' line with nothing more"
expect_rc 0 status --paused
esc_assert_eq "$(items_of)" "bulk/sku-00002/paused shop-3/new-1/paused" "--paused"
expect_rc 0 status --state active --item-prefix tee
esc_assert_eq "$(items_of)" "shop-1/tee,blue/active shop-1/tee-red/active" "--state --item-prefix"
expect_rc 0 status --sold-out
esc_assert_eq "$(items_of)" "shop-2/mug/active" "--sold-out (total 0)"
expect_rc 0 status bulk --item-prefix sku-0001 --limit 3
esc_assert_eq "$(items_of)" "bulk/sku-00010/active bulk/sku-00011/active bulk/sku-00012/active" "--limit"
grep -qx '7 more items; use --limit N or --offset 3' "$work/out" || esc_fail "more line: $(cat "$work/out")"
expect_rc 0 status bulk --item-prefix sku-0001 --limit 3 --offset 9
esc_assert_eq "$(items_of)" "bulk/sku-00019/active" "--offset"
grep -q '^1 item (10..10 of 10 matching), 4 segments' "$work/out" || esc_fail "offset tail: $(cat "$work/out")"
expect_rc 0 status
esc_assert_eq "$(grep -cE '^(shop|bulk)' "$work/out")" "50" "default page: 50 items"
grep -qx '2958 more items; use --limit N or --offset 50' "$work/out" || esc_fail "default more: $(cat "$work/out")"
expect_rc 0 --json status --tenant shop-2 --limit 1
python3 -c 'import json,sys; d=json.load(sys.stdin); assert [i["item"] for i in d["items"]] == ["mug"] and (d["matching"], d["more"]) == (2, 1), d' <"$work/out"
expect_rc 0 status shop-1 tee-red
esc_assert_eq "$(items_of)" "shop-1/tee-red/active" "TENANT ITEM"
expect_rc 1 status shop-1 nope
expect_rc 2 status --state sold
expect_rc 2 status --paused --state active
expect_rc 2 status shop-1 --tenant shop-2
echo "ctl_import: all checks passed"
