#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_stock.sh - restock and reduce of a global item across two regions
# (eu, us from examples/regions, automatic quota moves off so that every
# figure is exact), with escrowctl check --global sampled in the background
# the whole time (every sample must be ok):
#   - a restock into a named region; the same operation id again is
#     answered "carried out before" and changes nothing, through another
#     region (--via) too; the id with another
#     qty is refused; the other region learns the new global total;
#   - a restock without a region, carried out by the item's first region
#     (eu) and placed by the regions' shares in us: a quota transfer
#     'restock' that completes once;
#   - with units held in eu and sold in us: a reduce of more than the unsold
#     units is refused and changes nothing; a reduce that needs held units
#     takes every unused unit of both regions at once and waits for the
#     rest (eu's buyers hear TRY_LATER, nobody gets a unit), then takes it
#     when the holds come back; the rest of the item sells, exactly the new
#     global total in all;
#   - status, nodes and status --global name each region.
set -euo pipefail
source "$(dirname "$0")/region_lib.sh"

esc_step "two regions (no automatic quota moves); a global item of 1000 units (500 + 500)"
region_start --quota auto=off
eu_cfg=$(region_get CONFIG eu)
us_cfg=$(region_get CONFIG us)
cfgs=(--config "$eu_cfg" --config "$us_cfg")
q() { region_psql "$1" "SELECT $2 FROM items i JOIN global_items g USING (tenant_id, item_id) WHERE item_id = 'gig'"; }
seg() { region_psql "$1" "SELECT COALESCE(sum($2), 0) FROM segments WHERE item_id = 'gig'"; }
esc_ctl item create t1 gig --global --total 1000 --segments 2 "${cfgs[@]}"
region_wait_placed gig
region_sampler_start

esc_step "restock 200 into eu (operation s1); us learns the new global total"
region_ctl 0 item restock t1 gig 200 --global --region eu --op-id s1 "${cfgs[@]}"
cat "$REGION_DIR/out"
region_has out "restocked t1/gig by 200: global total 1200"
region_wait us "SELECT global_total FROM global_items WHERE item_id = 'gig'" 1200 60 ||
    esc_fail "us did not learn eu's restock"
esc_assert_eq "$(q eu i.total)/$(q us i.total)" "700/500" "quotas"

esc_step "operation s1 again: answered with its first outcome, nothing changes"
region_ctl 0 item restock t1 gig 200 --global --region eu --op-id s1 "${cfgs[@]}"
region_has out "operation s1 was carried out before"
region_ctl 1 item restock t1 gig 201 --global --region eu --op-id s1 "${cfgs[@]}"
region_has err "was used before for restock of 200 units"
# the retry through another region: answered from eu's database, not sent
region_ctl 0 item restock t1 gig 200 --global --region eu --via us --op-id s1 "${cfgs[@]}"
region_has out "region eu, operation s1: carried out before by region eu (restock of 200 units)"
region_ctl 1 item restock t1 gig 201 --global --region eu --via us --op-id s1 "${cfgs[@]}"
region_has err "operation s1 was used before in region eu for restock of 200 units of t1/gig"
esc_assert_eq "$(q eu "i.total || ' ' || g.global_total")" "700 1200" "eu unchanged"
esc_assert_eq "$(region_psql eu "SELECT count(*) || ' ' || sum(qty) FROM global_ops")" "1 200" \
    "one operation recorded"
esc_assert_eq "$(region_psql us "SELECT count(*) FROM global_ops")" 0 "none carried out by us"

esc_step "restock 100, no region: eu carries it out, the shares (1:1) place it in us"
region_ctl 0 item restock t1 gig 100 --global --op-id s2 "${cfgs[@]}"
cat "$REGION_DIR/out"
region_has out "region eu, operation s2: restocked t1/gig by 100: global total 1300; on its way to us"
region_wait eu "SELECT state FROM quota_transfers WHERE reason = 'restock'" received 60 ||
    esc_fail "the restock's transfer to us did not complete"
region_wait us "SELECT global_total FROM global_items WHERE item_id = 'gig'" 1300 60 ||
    esc_fail "us did not learn the second restock"
esc_assert_eq "$(q eu i.total)/$(q us i.total)" "700/600" "quotas after the placement"
esc_assert_eq "$(region_psql us "SELECT count(*) || ' ' || sum(qty) FROM quota_receipts WHERE outcome = 'applied'")" \
    "1 100" "us applied the restock once"

esc_step "reduce 1400: only 1300 units are unsold: refused, nothing changes"
# eu asks us for its figures first; until us's coordinator answers, the
# answer is "try later: region us unreachable" (nothing changes): asked
# again. (A reduce right after a sale: regions_reduce_fresh.)
region_ctl_settled 60 1 item reduce t1 gig 1400 --global --op-id r0 "${cfgs[@]}"
region_has err "escrowctl: the coordinator of region eu refused operation r0: cannot reduce t1/gig by 1400: only 1300 units are neither sold nor being reduced"
esc_assert_eq "$(q eu "g.global_total || ' ' || i.reduce_pending")" "1300 0" "nothing reduced"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM global_ops WHERE op_id = 'r0'")" 0 "no record"

esc_step "buyers: 3 holds of 100 units in eu (long-lived), 200 units sold in us"
region_load eu --item gig --buyers 3 --qty 100 --concurrency 3 --confirm 0 --release 0 \
    --ttl-ms 600000 --key-prefix hold --quiet
region_load us --item gig --buyers 200 --concurrency 20 --confirm 1 --release 0 --key-prefix sale \
    --quiet
esc_assert_eq "$(seg eu held)/$(seg us sold)" "300/200" "held in eu, sold in us"

esc_step "reduce 1000: the 800 unused units of both regions now, the last 200 when eu's holds come back"
region_ctl 0 item reduce t1 gig 1000 --global --op-id r1 "${cfgs[@]}"
cat "$REGION_DIR/out"
region_has out "reduced t1/gig by 1000: global total 300"
region_wait eu "SELECT total || ' ' || reduce_pending FROM items WHERE item_id = 'gig'" "300 200" 60 ||
    esc_fail "eu did not take the unused units"
region_wait us "SELECT total FROM items WHERE item_id = 'gig'" 200 60 ||
    esc_fail "us did not send its unused quota for the reduce"
esc_assert_eq "$(region_psql us "SELECT count(*) FILTER (WHERE state <> 'received') || ' ' || sum(qty) FROM quota_transfers WHERE reason = 'reduce'")" \
    "0 400" "us sent its 400 unused units for the reduce"
esc_assert_eq "$(seg eu held)/$(seg eu available)/$(seg us available)" "300/0/0" "only held units left to sell"
esc_ctl status --global "${cfgs[@]}" | sed -n '/== global items/,$p'
region_load eu --item gig --buyers 20 --concurrency 5 --confirm 1 --release 0 --give-up-ms 0 \
    --key-prefix wait-eu --deadline-ms 5000 >"$REGION_DIR/wait-eu.out" 2>&1 || true
region_load us --item gig --buyers 20 --concurrency 5 --confirm 1 --release 0 --give-up-ms 0 \
    --key-prefix wait-us --deadline-ms 5000 >"$REGION_DIR/wait-us.out" 2>&1 || true
cat "$REGION_DIR/wait-eu.out" "$REGION_DIR/wait-us.out"
grep -q 'holds_ok=0 ' "$REGION_DIR/wait-eu.out" || esc_fail "an eu buyer got a unit during the reduce"
grep -q 'rejected_try_later=20 ' "$REGION_DIR/wait-eu.out" ||
    esc_fail "eu's buyers should hear TRY_LATER (every unit there is held)"
grep -q 'holds_ok=0 ' "$REGION_DIR/wait-us.out" || esc_fail "a us buyer got a unit during the reduce"

esc_step "eu's holds come back (an operator releases them): the reduce takes 200, 100 sell again"
for h in $(region_psql eu "SELECT hold_id FROM holds WHERE state = 'held'"); do
    esc_ctl release "$h" --config "$eu_cfg" >/dev/null
done
region_wait eu "SELECT total || ' ' || reduce_pending FROM items WHERE item_id = 'gig'" "100 0" 60 ||
    esc_fail "the reduce did not take the units that came back"
region_wait us "SELECT global_total FROM global_items WHERE item_id = 'gig'" 300 60 ||
    esc_fail "us did not learn the reduce"
region_load eu --item gig --buyers 150 --concurrency 20 --confirm 1 --release 0 \
    --try-later-retries 100 --key-prefix last --quiet
esc_assert_eq "$(seg eu sold)/$(seg us sold)" "100/200" "the new global total sold, not a unit more"
esc_assert_eq "$(region_psql eu "SELECT string_agg(kind || ':' || qty, ' ' ORDER BY op_id) FROM global_ops")" \
    "reduce:1000 restock:200 restock:100" "eu's operations, once each"

esc_step "views name their region"
esc_ctl status t1 gig --config "$eu_cfg" >"$REGION_DIR/out"
region_has out "region=eu"
esc_ctl top t1 --once --config "$eu_cfg" >"$REGION_DIR/out"
region_has out "region=eu tenant=t1"
esc_ctl nodes --config "$us_cfg" >"$REGION_DIR/out"
cat "$REGION_DIR/out"
grep -qE '^us-n1 +us ' "$REGION_DIR/out" || esc_fail "nodes: us-n1 in region us"
esc_ctl status --global t1 gig "${cfgs[@]}" >"$REGION_DIR/out"
sed -n '/== global items/,$p' "$REGION_DIR/out"
region_has out "t1/gig global_total=300 ok"
grep -qE '^  eu +100 +0 +0 +100 +0 +0$' "$REGION_DIR/out" || esc_fail "status --global: eu's line"
grep -qE '^  \(global\) +300 +0 +0 +300 +0 +0$' "$REGION_DIR/out" || esc_fail "status --global: the global line"
region_sampler_stop
region_check "at the end"
echo "PASS regions_stock"
