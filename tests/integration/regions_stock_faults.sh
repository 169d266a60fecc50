#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_stock_faults.sh - restock and reduce of a global item under a cut
# link and coordinators killed between their steps: each completes exactly
# once, and escrowctl check --global holds in every sample taken in the
# background the whole time (automatic quota moves off: exact figures).
#   partition (every link between the coordinators black-holed through
#   tests/support/faultproxy.py, then reset and healed):
#     - a restock carried out by eu and placed in us waits in flight; the
#       same operation id again is answered and changes nothing;
#     - a reduce is answered "try later: region us unreachable" (eu cannot
#       learn what us sold) and changes nothing; us sells;
#     - after the heal: the transfer is applied once, the same reduce is
#       carried out (eu's units at once, us sends what it asks), both
#       regions learn the other's changes once;
#   crash (failpoints):
#     - eu exits right after committing a restock placed in us
#       (ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT): escrowctl hears nothing and
#       says how to learn the outcome; us exits right after applying the
#       transfer (ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY); both restart; the
#       retry is answered "carried out before"; applied once;
#     - eu exits right after committing a reduce; restarted, it completes it
#       and answers the retry.
set -euo pipefail
source "$(dirname "$0")/region_lib.sh"

esc_step "two regions, their link through a fault proxy; a global item of 1000 (eu 600, us 400)"
region_start --proxy --quota auto=off
eu_cfg=$(region_get CONFIG eu)
us_cfg=$(region_get CONFIG us)
cfgs=(--config "$eu_cfg" --config "$us_cfg")
fig() { region_psql "$1" "SELECT total || ' ' || reduce_pending || ' ' || global_total FROM items JOIN global_items USING (tenant_id, item_id) WHERE item_id = 'gig'"; }
gt() { region_psql "$1" "SELECT global_total FROM global_items WHERE item_id = 'gig'"; }
esc_ctl item create t1 gig --global --total 1000 --quota eu=600,us=400 --segments 2 "${cfgs[@]}"
region_wait_placed gig

esc_step "restock 100 placed in us: the regions hear each other"
region_ctl 0 item restock t1 gig 100 --global --region us --op-id a0 "${cfgs[@]}"
cat "$REGION_DIR/out"
region_wait eu "SELECT state FROM quota_transfers" received 60 || esc_fail "a0 did not reach us"
region_wait us "SELECT global_total FROM global_items" 1100 60 || esc_fail "us did not learn a0"
region_sampler_start

esc_step "cut the link (black hole)"
region_link blackhole

esc_step "during the cut: restock 50 placed in us waits in flight; its retry changes nothing"
region_ctl 0 item restock t1 gig 50 --global --region us --op-id a1 "${cfgs[@]}"
region_has out "restocked t1/gig by 50: global total 1150; on its way to us"
region_ctl 0 item restock t1 gig 50 --global --region us --op-id a1 "${cfgs[@]}"
region_has out "operation a1 was carried out before"
esc_assert_eq "$(region_psql eu "SELECT count(*) || ' ' || sum(qty) FROM quota_transfers WHERE state = 'sent'")" \
    "1 50" "one transfer in flight"
esc_assert_eq "$(fig us)" "500 0 1100" "us has not heard of a1"

esc_step "during the cut: reduce 900 is answered 'try later', nothing changes; us sells"
region_ctl 1 item reduce t1 gig 900 --global --op-id a2 "${cfgs[@]}"
region_has err "refused operation a2: try later: region us unreachable"
esc_assert_eq "$(fig eu)" "600 0 1150" "eu unchanged"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM global_ops WHERE op_id = 'a2'")" 0 \
    "no record of a2"
region_load us --item gig --buyers 100 --concurrency 20 --confirm 1 --release 0 --key-prefix cut-us \
    --quiet
esc_assert_eq "$(region_psql us "SELECT sum(sold) FROM segments")" 100 "us sold during the cut"

esc_step "heal: reset every connection, then pass"
region_link cut
sleep 1 # the cut lasts a moment: every connection reset, reconnects refused
region_link pass
# a2 again: answered "try later" until the coordinators reconnected
reduce_a2() {
    local rc=0
    esc_ctl item reduce t1 gig 900 --global --op-id a2 "${cfgs[@]}" \
        >"$REGION_DIR/out" 2>"$REGION_DIR/err" || rc=$?
    ((rc == 0)) && return 0
    grep -qF "try later" "$REGION_DIR/err" || { cat "$REGION_DIR/err" >&2; esc_fail "a2 exited $rc"; }
    return 1
}
esc_wait_for 60 reduce_a2 || esc_fail "a2 was not carried out after the heal"
region_has out "reduced t1/gig by 900: global total 250"
region_wait eu "SELECT total || ' ' || reduce_pending FROM items" "0 0" 60 ||
    esc_fail "the reduce did not complete after the heal"
region_wait us "SELECT global_total FROM global_items" 250 60 || esc_fail "us did not learn the reduce"
region_wait eu "SELECT count(*) FROM quota_transfers WHERE state = 'sent'" 0 60 ||
    esc_fail "a1's transfer did not complete"
esc_assert_eq "$(fig us)" "250 0 250" "us: 400 + 100 + 50 - 300 sent for the reduce"
esc_assert_eq "$(region_psql us "SELECT string_agg(qty::text, ' ' ORDER BY transfer_id) FROM quota_receipts WHERE outcome = 'applied'")" \
    "100 50" "us applied a0 and a1 once each"
# us may send the 300 in pieces (as its segments give the units back)
esc_assert_eq "$(region_psql eu "SELECT count(*) || ' ' || sum(qty) FROM quota_receipts WHERE outcome = 'applied'")" \
    "$(region_psql us "SELECT count(*) || ' ' || sum(qty) FROM quota_transfers WHERE reason = 'reduce' AND state = 'received'")" \
    "eu applied each of us's transfers for the reduce once"
esc_assert_eq "$(region_psql us "SELECT sum(qty) FROM quota_transfers WHERE reason = 'reduce'")" 300 \
    "us sent what the reduce asked, not a unit more"
esc_assert_eq "$(region_psql us "SELECT region || ':' || changes || ':' || delta FROM global_changes ORDER BY region")" \
    "eu:3:-750" "us learned eu's three operations once"
region_check "after the heal"

esc_step "crash: eu dies after committing a restock placed in us, us after applying it"
region_coord_restart us ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY=1
us_log=$REGION_COORD_LOG
region_coord_restart eu ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT=1
eu_log=$REGION_COORD_LOG
region_ctl 3 --timeout-ms 3000 item restock t1 gig 60 --global --region us --op-id c1 "${cfgs[@]}"
region_has err "the outcome is unknown: run the same command with --op-id c1"
esc_wait_for 60 grep -q 'ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT' "$eu_log" || esc_fail "eu's failpoint"
eu_pid=$(region_get COORD_PID eu)
esc_wait_for 60 region_gone "$eu_pid" || esc_fail "eu did not exit"
esc_assert_eq "$(fig eu)" "0 0 310" "eu committed the restock"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM quota_transfers WHERE state = 'sent' AND reason = 'restock'")" \
    1 "its transfer waits"
region_check "eu dead, 60 in flight"
region_coord_restart eu
esc_wait_for 60 grep -q 'ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY' "$us_log" || esc_fail "us's failpoint"
us_pid=$(region_get COORD_PID us)
esc_wait_for 60 region_gone "$us_pid" || esc_fail "us did not exit"
esc_assert_eq "$(region_psql us "SELECT total FROM items")" 310 "us applied the restock"
region_check "us dead after applying"
region_coord_restart us
region_wait eu "SELECT count(*) FROM quota_transfers WHERE state = 'sent'" 0 60 ||
    esc_fail "eu never heard that us applied it"
region_ctl 0 item restock t1 gig 60 --global --region us --op-id c1 "${cfgs[@]}"
region_has out "operation c1 was carried out before"
region_wait us "SELECT global_total FROM global_items" 310 60 || esc_fail "us did not learn c1"
esc_assert_eq "$(region_psql us "SELECT count(*) || ' ' || sum(qty) FROM quota_receipts WHERE qty = 60")" \
    "1 60" "applied once"
esc_assert_eq "$(fig us)" "310 0 310" "us"

esc_step "crash: eu dies after committing a reduce of 100; restarted, it completes it"
region_coord_restart eu ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT=1
eu_log=$REGION_COORD_LOG
region_ctl 3 --timeout-ms 3000 item reduce t1 gig 100 --global --op-id c2 "${cfgs[@]}"
eu_pid=$(region_get COORD_PID eu)
esc_wait_for 60 region_gone "$eu_pid" || esc_fail "eu did not exit"
grep -q 'ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT' "$eu_log" || esc_fail "eu's failpoint"
esc_assert_eq "$(fig eu)" "0 100 210" "eu committed the reduce"
region_check "eu dead, reduce pending"
region_coord_restart eu
region_wait eu "SELECT total || ' ' || reduce_pending FROM items" "0 0" 60 ||
    esc_fail "the restarted eu did not complete the reduce"
region_ctl 0 item reduce t1 gig 100 --global --op-id c2 "${cfgs[@]}"
region_has out "operation c2 was carried out before"
region_wait us "SELECT global_total FROM global_items" 210 60 || esc_fail "us did not learn c2"
esc_assert_eq "$(fig us)" "210 0 210" "us sent 100 for the reduce"
esc_assert_eq "$(region_psql us "SELECT sum(qty) FROM quota_transfers WHERE reason = 'reduce'")" 400 \
    "us sent 300 + 100 for the two reduces"
esc_assert_eq "$(region_psql eu "SELECT string_agg(kind || ':' || qty, ' ' ORDER BY op_id) FROM global_ops")" \
    "restock:100 restock:50 reduce:900 restock:60 reduce:100" "eu's operations, once each"
region_sampler_stop
region_check "at the end"
echo "PASS regions_stock_faults"
