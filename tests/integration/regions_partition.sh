#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_partition.sh - the link between the two regions' coordinators is
# cut (every connection through tests/support/faultproxy.py black-holed, then
# reset) in the middle of a sale:
#   - a quota move committed by the donor during the cut waits, counted in
#     flight (check --global ok);
#   - each region keeps selling and sells exactly the quota it holds, never
#     more: its buyers hear TRY_LATER, not SOLD_OUT, while the other region is
#     out of reach;
#   - after the heal the pending transfer completes exactly once (one receipt,
#     one 'received'), the receiver sells the units, and the global
#     invariant holds.
set -euo pipefail
source "$(dirname "$0")/region_lib.sh"

esc_step "two regions, every link between them through a fault proxy"
region_start --proxy
eu_cfg=$(region_get CONFIG eu)
us_cfg=$(region_get CONFIG us)
check_global() {
    esc_ctl check --global --config "$eu_cfg" --config "$us_cfg" >"$REGION_DIR/check.out" 2>&1 || {
        cat "$REGION_DIR/check.out" >&2
        esc_fail "check --global: $1"
    }
}
total_of() { region_psql "$1" "SELECT total FROM items WHERE item_id = 'gig'"; }
sold_of() { region_psql "$1" "SELECT sum(sold) FROM segments WHERE item_id = 'gig'"; }

esc_ctl item create t1 gig --global --total 1000 --segments 4 --config "$eu_cfg" --config "$us_cfg"
# Both coordinators know the item before the cut (us to send quota, eu to
# apply it after the heal). Whether they exchanged a status first does not
# matter: a peer never heard from, or stale, counts as possibly holding
# units, so buyers hear TRY_LATER either way.
region_wait_placed gig

esc_step "cut the link (black hole: connections stay open, nothing passes)"
region_link blackhole

esc_step "a quota move during the cut: us commits it, eu cannot hear it"
esc_ctl quota move t1 gig 100 --from us --to eu --config "$eu_cfg" --config "$us_cfg" ||
    esc_fail "quota move during the partition"
region_wait us "SELECT count(*) FROM quota_transfers WHERE state = 'sent'" 1 60 ||
    esc_fail "the move did not reach 'sent' in us"
esc_assert_eq "$(total_of us)" 400 "us quota after sending 100"
esc_assert_eq "$(total_of eu)" 500 "eu quota: the offer did not arrive"
check_global "100 units in flight during the cut"

esc_step "both regions sell during the cut, more buyers than units"
for r in eu us; do
    region_load_bg "$r" "$REGION_DIR/load-${r}1.out" --item gig --buyers 1500 --concurrency 100 \
        --confirm 1 --release 0 --give-up-ms 2000 --key-prefix "${r}1" --quiet
done
region_load_wait
esc_assert_eq "$(sold_of eu)" 500 "eu sold exactly its quota during the cut"
esc_assert_eq "$(sold_of us)" 400 "us sold exactly its quota during the cut"
for r in eu us; do
    grep -q 'rejected_sold_out=0 ' "$REGION_DIR/load-${r}1.out" ||
        esc_fail "$r's buyers heard SOLD_OUT while the other region was out of reach"
done
check_global "after selling during the cut"

esc_step "reset every connection, then heal"
xfer=$(region_psql us "SELECT transfer_id FROM quota_transfers WHERE state = 'sent'")
region_link cut
sleep 1 # the cut lasts a moment: every connection reset, reconnects refused
region_link pass
region_wait us "SELECT state FROM quota_transfers WHERE transfer_id = $xfer" received 60 ||
    esc_fail "the pending transfer did not complete after the heal"
esc_assert_eq "$(region_psql eu "SELECT count(*) || ' ' || sum(qty) FROM quota_receipts WHERE from_region = 'us' AND transfer_id = $xfer AND outcome = 'applied'")" "1 100" \
    "eu applied the pending transfer exactly once"
check_global "after the heal"

esc_step "both regions sell again until the item is sold out everywhere"
for r in eu us; do
    region_load_bg "$r" "$REGION_DIR/load-${r}2.out" --item gig --buyers 400 --concurrency 50 \
        --confirm 1 --release 0 --give-up-ms 14000 --key-prefix "${r}2" --quiet
done
region_load_wait
esc_assert_eq "$(( $(sold_of eu) + $(sold_of us) ))" 1000 "sold across regions"
(($(sold_of eu) >= 500 && $(sold_of us) >= 400)) || esc_fail "a region lost units it had sold"
grep -q 'rejected_sold_out=[1-9]' "$REGION_DIR"/load-??2.out ||
    esc_fail "after the heal and the sellout, the last buyers should hear SOLD_OUT"
check_global "at the end"
echo "PASS regions_partition"
