#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_reduce_fresh.sh - a global reduce is judged on every other region's
# figures as of after the request arrived, never on an older status (two
# regions, eu and us from examples/regions, automatic quota moves off, a
# status round of 3 s so that an old status is really old):
#   - three times 10 units sold in us, and at once (as soon as us's
#     database has them) a reduce in eu of one unit more than is unsold:
#     refused, naming exactly 190, 180, 170; nothing changes;
#   - the reduce of exactly 170: accepted, completes (us sends its unused
#     quota), check --global ok, every total exact;
#   - us's coordinator down: a reduce is answered "try later: region us
#     unreachable" (UNAVAILABLE) and changes nothing; the retry of one
#     carried out before is still answered "carried out before".
set -euo pipefail
source "$(dirname "$0")/region_lib.sh"

esc_step "two regions (no automatic quota moves, 3 s rounds); a global item of 200 units (100 + 100)"
region_start --quota auto=off --quota interval_ms=3000
eu_cfg=$(region_get CONFIG eu)
us_cfg=$(region_get CONFIG us)
cfgs=(--config "$eu_cfg" --config "$us_cfg")
q() { region_psql "$1" "SELECT $2 FROM items i JOIN global_items g USING (tenant_id, item_id) WHERE item_id = 'gig'"; }
seg() { region_psql "$1" "SELECT COALESCE(sum($2), 0) FROM segments WHERE item_id = 'gig'"; }
esc_ctl item create t1 gig --global --total 200 --segments 2 "${cfgs[@]}"
region_wait_placed gig

esc_step "a first reduce of 201 is refused (only 200 unsold): eu has heard us"
# asked again while the answer is "try later" (a coordinator that has just
# started); any other answer than a refusal fails at once
region_ctl_settled 60 1 item reduce t1 gig 201 --global --op-id r0 "${cfgs[@]}"
region_has err "cannot reduce t1/gig by 201: only 200 units are neither sold nor being reduced"

# three times: 10 more units sold in us, and the reduce goes as soon as us's
# database has them (not when the load generator has finished its own
# count, seconds later): one unit more than is unsold is refused, exactly
sell_then_reduce() {
    local sold=$1 unsold=$((200 - $1))
    region_load_bg us "$REGION_DIR/sale.out" --item gig --buyers 10 --concurrency 10 --confirm 1 \
        --release 0 --key-prefix "sale$sold"
    region_wait us "SELECT COALESCE(sum(sold), 0) FROM segments WHERE item_id = 'gig'" "$sold" 60 ||
        esc_fail "us did not sell $sold units"
    region_ctl 1 item reduce t1 gig $((unsold + 1)) --global --op-id "big$sold" "${cfgs[@]}"
    cat "$REGION_DIR/err"
    region_has err "refused operation big$sold: cannot reduce t1/gig by $((unsold + 1)): only $unsold units are neither sold nor being reduced"
    region_load_wait >/dev/null
}
for sold in 10 20 30; do
    esc_step "$sold units sold in us, then at once a reduce of $((201 - sold)) in eu: refused, exactly $((200 - sold)) unsold"
    sell_then_reduce "$sold"
done
esc_assert_eq "$(seg us sold)" 30 "sold in us"
esc_assert_eq "$(q eu "g.global_total || ' ' || i.total || ' ' || i.reduce_pending")" "200 100 0" \
    "eu unchanged"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM global_ops")" 0 "no operation recorded"

esc_step "the reduce of exactly 170: accepted, completes once us sent its 70 unused units"
region_ctl 0 item reduce t1 gig 170 --global --op-id exact "${cfgs[@]}"
cat "$REGION_DIR/out"
region_has out "reduced t1/gig by 170: global total 30"
region_wait eu "SELECT total || ' ' || reduce_pending FROM items WHERE item_id = 'gig'" "0 0" 60 ||
    esc_fail "the reduce did not complete in eu"
region_wait us "SELECT total || ' ' || global_total FROM items JOIN global_items USING (tenant_id, item_id) WHERE item_id = 'gig'" \
    "30 30" 60 || esc_fail "us did not send its unused units or learn the reduce"
esc_assert_eq "$(seg eu sold)/$(seg us sold)/$(seg us held)/$(q eu g.global_total)" "0/30/0/30" \
    "totals: the 30 sold units are all that is left"
esc_assert_eq "$(region_psql eu "SELECT string_agg(op_id || ':' || kind || ':' || qty, ' ') FROM global_ops")" \
    "exact:reduce:170" "one operation recorded"
region_check "after the reduce"

esc_step "us's coordinator down: a reduce is answered 'try later', nothing changes"
pid=$(region_get COORD_PID us)
kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
esc_wait_for 60 region_gone "$pid" || esc_fail "the coordinator of us survived SIGKILL"
region_ctl 1 item reduce t1 gig 1 --global --op-id down "${cfgs[@]}"
cat "$REGION_DIR/err"
region_has err "refused operation down: try later: region us unreachable"
region_has err "(UNAVAILABLE)"
esc_assert_eq "$(q eu "g.global_total || ' ' || i.total || ' ' || i.reduce_pending")" "30 0 0" \
    "eu unchanged"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM global_ops WHERE op_id = 'down'")" 0 "no record"
# an operation carried out before is still answered from its record
region_ctl 0 item reduce t1 gig 170 --global --op-id exact "${cfgs[@]}"
region_has out "operation exact was carried out before (reduce of 170)"
echo "PASS regions_reduce_fresh"
