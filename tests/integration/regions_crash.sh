#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_crash.sh - a coordinator dies between the two commits of a quota
# transfer, and the transfer still happens exactly once:
#   1. the donor (us) exits right after its 'sent' committed, before it
#      offered (ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT): the units are in
#      flight; a restarted donor offers again; eu applies once;
#   2. the receiver (eu) exits right after its receipt committed, before it
#      answered (ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY): the donor keeps
#      offering; the restarted receiver answers "applied before"; the quota
#      is not applied twice.
# The global invariant holds at every step.
set -euo pipefail
source "$(dirname "$0")/region_lib.sh"

region_start
eu_cfg=$(region_get CONFIG eu)
us_cfg=$(region_get CONFIG us)
cfgs=(--config "$eu_cfg" --config "$us_cfg")
check_global() {
    esc_ctl check --global "${cfgs[@]}" >"$REGION_DIR/check.out" 2>&1 || {
        cat "$REGION_DIR/check.out" >&2
        esc_fail "check --global: $1"
    }
}
total_of() { region_psql "$1" "SELECT total FROM items WHERE item_id = 'seat'"; }
esc_ctl item create t1 seat --global --total 1000 --segments 2 "${cfgs[@]}"
region_wait_placed seat # both coordinators know the item (eu must, to apply the quota)

esc_step "1. the donor dies after 'sent', before the offer"
region_coord_restart us ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT=1
rc=0
esc_ctl quota move t1 seat 100 --from us --to eu "${cfgs[@]}" --timeout-ms 2000 || rc=$?
esc_wait_for 60 grep -q 'ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT' "$REGION_COORD_LOG" ||
    esc_fail "the failpoint did not fire"
us_coord=$(region_get COORD_PID us)
esc_wait_for 60 region_gone "$us_coord" ||
    esc_fail "the donor did not exit at the failpoint"
echo "escrowctl quota move exited $rc (the donor died before answering)"
esc_assert_eq "$(region_psql us "SELECT state || ' ' || qty FROM quota_transfers")" "sent 100" "us row"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM quota_receipts")" 0 "eu has not heard of it"
esc_assert_eq "$(total_of us)" 400 "us quota"
check_global "donor dead, 100 in flight"
region_coord_restart us
region_wait us "SELECT state FROM quota_transfers" received 60 ||
    esc_fail "the restarted donor did not complete the transfer"
esc_assert_eq "$(region_psql eu "SELECT count(*) || ' ' || sum(qty) FROM quota_receipts WHERE outcome = 'applied'")" "1 100" "applied once"
esc_assert_eq "$(total_of eu)" 600 "eu quota"
check_global "after the donor's restart"

esc_step "2. the receiver dies after applying, before the answer"
region_coord_restart eu ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY=1
esc_ctl quota move t1 seat 50 --from us --to eu "${cfgs[@]}" || esc_fail "second move"
esc_wait_for 60 grep -q 'ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY' "$REGION_COORD_LOG" ||
    esc_fail "the receiver's failpoint did not fire"
eu_coord=$(region_get COORD_PID eu)
esc_wait_for 60 region_gone "$eu_coord" ||
    esc_fail "the receiver did not exit at the failpoint"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM quota_receipts WHERE outcome = 'applied'")" 2 "eu applied the second"
esc_assert_eq "$(total_of eu)" 650 "eu quota after applying"
sleep 2 # the donor offers again into the void
esc_assert_eq "$(region_psql us "SELECT count(*) FROM quota_transfers WHERE state = 'sent'")" 1 \
    "the donor has no answer yet"
check_global "receiver dead after applying: the receipt counts, not the flight"
region_coord_restart eu
region_wait us "SELECT count(*) FROM quota_transfers WHERE state = 'received'" 2 60 ||
    esc_fail "the donor never heard the answer"
esc_assert_eq "$(total_of eu)" 650 "eu quota: the repeated offer was not applied again"
esc_assert_eq "$(total_of us)" 350 "us quota"
esc_assert_eq "$(region_psql eu "SELECT count(*) FROM quota_receipts")" 2 "two receipts"
check_global "at the end"
echo "PASS regions_crash"
