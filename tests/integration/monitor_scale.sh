#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# monitor_scale.sh - the invariant monitor (coord_mon.h) on a catalog of
# 2,000 idle items x 4 segments, --check-ms 200, --check-sweep-ms 3000:
#   - idle, a check looks at a round-robin slice of the items (256 of 2,000
#     per check: the slice's floor; 134 would cover them within the bound),
#     not at every item; the monitor's row still counts the whole
#     catalog (escrowctl status: 2000 items, 8000 segments);
#   - a segment row of an idle item changed by hand (sold + 1) is reported:
#     the catalog read sees the counter move and marks the item;
#   - a change the coordinator cannot see (a sold hold inserted by hand for
#     an idle item's segment: its holds no longer add up to its sold; no
#     catalog row moves) is reported within the sweep's bound, by the round
#     robin alone;
#   - once repaired, the monitor reports ok again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/itest_lib.sh"

command -v curl >/dev/null || esc_fail "monitor_scale: curl is needed"
itest_begin monitor_scale

ITEMS=2000
CHECK_MS=200
SWEEP_MS=3000
# Detection within the bound (one sweep and one check) on a machine that may
# be loaded: waited for up to 3 bounds.
BOUND_S=$((3 * (SWEEP_MS + CHECK_MS) / 1000 + 1))

itest_q "INSERT INTO tenants (tenant_id) VALUES ('t1');
  INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  SELECT 't1', 'sku-' || g, 400, 0, 4 FROM generate_series(1, $ITEMS) g;
  INSERT INTO segments (tenant_id, item_id, seg_no, available)
  SELECT 't1', 'sku-' || g, s, 100 FROM generate_series(1, $ITEMS) g, generate_series(0, 3) s;" >/dev/null

esc_step "a coordinator checking $ITEMS idle items"
CURL=tcp://127.0.0.1:$(itest_port)
MPORT=$(itest_port)
esc_spawn "$ITEST_DIR/coordinator.log" "$ESC_BIN/escrow-coordinator" --dsn "$ESCROW_DSN" \
    --listen "$CURL" --publish "tcp://127.0.0.1:$(itest_port)" --lease-ms 3000 \
    --heartbeat-ms 100 --catalog-poll-ms 200 --metrics "127.0.0.1:$MPORT" \
    --check-ms "$CHECK_MS" --check-sweep-ms "$SWEEP_MS"
CPID=$ESC_SPAWN_PID
esc_wait_for 60 grep -q COORD-READY "$ITEST_DIR/coordinator.log" || esc_fail "monitor_scale: no COORD-READY"

metric() { itest_metric "$MPORT" "$1"; } # NAME -> its value (0 when not yet exported)
metric_is() { [[ $(metric "$1") == "$2" ]]; }
metric_at_least() { (($(metric "$1") >= $2)); }
checks() { metric 'escrow_conservation_checks_total{result="ok"}'; }
status_says() { esc_ctl status >"$ITEST_DIR/status.out" 2>&1 && grep -qE "$1" "$ITEST_DIR/status.out"; }

esc_wait_for 60 metric_at_least escrow_conservation_sweeps_total 2 ||
    esc_fail "monitor_scale: the round robin did not go round twice"
esc_wait_for 30 metric_is escrow_conservation_ok 1 || esc_fail "monitor_scale: the catalog is not ok"
esc_wait_for 30 status_says "^invariant monitor: ok \(checked [0-9.]+ s ago, $ITEMS items, $((ITEMS * 4)) segments, every $CHECK_MS ms" ||
    esc_fail "monitor_scale: status: $(cat "$ITEST_DIR/status.out")"

esc_step "idle: a slice per check, not the catalog"
# checks and items checked from one scrape: "CHECKS ITEMS"
checked() {
    curl -sfS --max-time 30 "http://127.0.0.1:$MPORT/metrics" | awk '
        $1 == "escrow_conservation_checks_total{result=\"ok\"}" { c = $2 }
        $1 == "escrow_conservation_items_checked_total" { i = $2 }
        END { print c + 0, i + 0 }'
}
read -r c0 i0 < <(checked)
esc_wait_for 60 metric_at_least 'escrow_conservation_checks_total{result="ok"}' $((c0 + 10)) ||
    esc_fail "monitor_scale: the checks stopped"
read -r c1 i1 < <(checked)
per=$(((i1 - i0) / (c1 - c0)))
echo "items checked: $((i1 - i0)) in $((c1 - c0)) checks ($per per check; the slice is 256)"
itest_eq "$((i1 - i0))" "$((256 * (c1 - c0)))" "items checked by $((c1 - c0)) idle checks"

esc_step "a segment row changed by hand: seen through the catalog"
seg=$(itest_q "SELECT segment_id FROM segments WHERE item_id = 'sku-1234' AND seg_no = 2")
itest_q "UPDATE segments SET sold = sold + 1 WHERE segment_id = $seg" >/dev/null
esc_wait_for "$BOUND_S" metric_is escrow_conservation_segment_violations 1 ||
    esc_fail "monitor_scale: segment $seg's sold + 1 not reported within ${BOUND_S} s"
esc_wait_for 30 metric_is escrow_conservation_violations 1 ||
    esc_fail "monitor_scale: item sku-1234 not reported"
esc_wait_for 30 grep -q "WARN COORD-INVARIANT conservation violated: segment=$seg item=t1/sku-1234 held=0 (holds say 0) sold=1 (holds say 0)" \
    "$ITEST_DIR/coordinator.log" || esc_fail "monitor_scale: no WARN line naming segment $seg"
esc_wait_for 30 status_says '^invariant monitor: VIOLATED, 2 violations' ||
    esc_fail "monitor_scale: status: $(cat "$ITEST_DIR/status.out")"
itest_q "UPDATE segments SET sold = sold - 1 WHERE segment_id = $seg" >/dev/null
esc_wait_for 30 metric_is escrow_conservation_ok 1 || esc_fail "monitor_scale: not ok after the repair"

esc_step "a change the coordinator cannot see: found by the round robin within the bound"
seg=$(itest_q "SELECT segment_id FROM segments WHERE item_id = 'sku-777' AND seg_no = 1")
s0=$(metric escrow_conservation_sweeps_total)
c0=$(itest_q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM catalog_change_seq")
itest_q "INSERT INTO holds (hold_id, tenant_id, item_id, segment_id, buyer_id, qty, qty_sold, state,
  expires_at, ended_at, idempotency_key, request_hash, epoch)
  VALUES (($seg::bigint << 40) | 999, 't1', 'sku-777', $seg, 'b1', 1, 1, 'converted', now(), now(),
  'monitor-scale-1', 0, 0)" >/dev/null
itest_eq "$(itest_q "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM catalog_change_seq")" \
    "$c0" "the catalog's change counter after the hold"
t0=$(date +%s%3N)
esc_wait_for "$BOUND_S" metric_is escrow_conservation_segment_violations 1 ||
    esc_fail "monitor_scale: segment $seg's holds not found disagreeing within ${BOUND_S} s"
echo "found after $(($(date +%s%3N) - t0)) ms (the bound: $((SWEEP_MS + CHECK_MS)) ms); sweeps $s0 -> $(metric escrow_conservation_sweeps_total)"
itest_eq "$(metric escrow_conservation_violations)" 0 "items violating (the item's counters add up)"
esc_wait_for 30 grep -q "WARN COORD-INVARIANT conservation violated: segment=$seg item=t1/sku-777 held=0 (holds say 0) sold=0 (holds say 1)" \
    "$ITEST_DIR/coordinator.log" || esc_fail "monitor_scale: no WARN line naming segment $seg"
esc_wait_for 30 status_says '^invariant monitor: VIOLATED, 1 violations' ||
    esc_fail "monitor_scale: status: $(cat "$ITEST_DIR/status.out")"
rc=0
esc_ctl check >/dev/null || rc=$?
itest_eq "$rc" 1 "escrowctl check on the broken holds"

esc_step "repaired: ok again"
itest_q "DELETE FROM holds WHERE idempotency_key = 'monitor-scale-1'" >/dev/null
esc_wait_for 30 metric_is escrow_conservation_ok 1 || esc_fail "monitor_scale: not ok after the repair"
esc_wait_for 30 grep -q 'INFO COORD-INVARIANT conservation holds again' "$ITEST_DIR/coordinator.log" ||
    esc_fail "monitor_scale: no 'holds again' line"
esc_wait_for 30 status_says '^invariant monitor: ok ' || esc_fail "monitor_scale: status not ok after the repair"

esc_node_stop "$CPID" || esc_fail "monitor_scale: the coordinator did not stop cleanly"
itest_pass
