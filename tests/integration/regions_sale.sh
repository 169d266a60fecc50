#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_sale.sh - two regions from examples/regions (eu, us), one global
# item split 50/50, demand 80/20: as many buyers as units, 80% of them in
# eu. Every buyer gets exactly one unit, so eu must sell 80% of the total:
# 30% of it is quota that moved from us, automatically, while the sale
# ran. Every unit is sold exactly once across both databases and the
# global invariant holds (escrowctl check --global). Prints how fast quota
# followed demand: when the first transfer was sent and applied, counted
# from the start of the sale. `make regions` runs it with
# ESC_REGIONS_TOTAL=10000 as the two-region demo.
set -euo pipefail
source "$(dirname "$0")/region_lib.sh"

TOTAL=${ESC_REGIONS_TOTAL:-2000}
HALF=$((TOTAL / 2))
EU_BUYERS=$((TOTAL * 8 / 10))
US_BUYERS=$((TOTAL - EU_BUYERS))

esc_step "two regions: private PostgreSQL, a database, a coordinator and two nodes each"
region_start
eu_cfg=$(region_get CONFIG eu)
us_cfg=$(region_get CONFIG us)

esc_step "a global item: $TOTAL units split by the regions' shares (1:1)"
esc_ctl item create t1 concert --global --total "$TOTAL" --segments 4 \
    --config "$eu_cfg" --config "$us_cfg"
esc_assert_eq "$(region_psql eu "SELECT total FROM items WHERE item_id = 'concert'")" "$HALF" "eu quota"
esc_assert_eq "$(region_psql us "SELECT total FROM items WHERE item_id = 'concert'")" "$((TOTAL - HALF))" "us quota"
esc_ctl check --global --config "$eu_cfg" --config "$us_cfg" >/dev/null ||
    esc_fail "check --global before the sale"

esc_step "the sale: 80% of the buyers in eu, 20% in us, at the same time"
t0=$(date +%s.%N)
region_load_bg eu "$REGION_DIR/load-eu.out" --item concert --buyers "$EU_BUYERS" \
    --concurrency 40 --think-ms 20 --confirm 1 --release 0 --give-up-ms 105000 \
    --key-prefix eu --seed 1 --quiet
region_load_bg us "$REGION_DIR/load-us.out" --item concert --buyers "$US_BUYERS" \
    --concurrency 10 --think-ms 20 --confirm 1 --release 0 --give-up-ms 105000 \
    --key-prefix us --seed 2 --quiet
region_load_wait
t1=$(date +%s.%N)

eu_sold=$(region_psql eu "SELECT sum(sold) FROM segments WHERE item_id = 'concert'")
us_sold=$(region_psql us "SELECT sum(sold) FROM segments WHERE item_id = 'concert'")
held=$(( $(region_psql eu "SELECT sum(held) FROM segments WHERE item_id = 'concert'") +
    $(region_psql us "SELECT sum(held) FROM segments WHERE item_id = 'concert'") ))
echo "sold: eu=$eu_sold us=$us_sold held=$held in $(python3 -c "print(round($t1 - $t0, 1))") s"
esc_assert_eq "$((eu_sold + us_sold))" "$TOTAL" "units sold across both regions"
esc_assert_eq "$held" 0 "nothing left held"
esc_assert_eq "$eu_sold" "$EU_BUYERS" "eu sold one unit per eu buyer: quota followed demand"
esc_assert_eq "$us_sold" "$US_BUYERS" "us sold one unit per us buyer"
moved=$(region_psql us "SELECT COALESCE(sum(qty), 0) FROM quota_transfers WHERE to_region = 'eu' AND state = 'received'")
applied=$(region_psql eu "SELECT COALESCE(sum(qty), 0) FROM quota_receipts WHERE from_region = 'us' AND outcome = 'applied'")
esc_assert_eq "$applied" "$moved" "quota received by eu = quota us recorded as received"
esc_assert_eq "$(region_psql eu "SELECT total FROM items WHERE item_id = 'concert'")" "$eu_sold" \
    "eu's quota is what it sold"
esc_assert_eq "$(region_psql us "SELECT count(*) FROM quota_transfers WHERE state = 'sent'")" 0 \
    "no quota left in flight"
esc_ctl quota show t1 concert --config "$eu_cfg" --config "$us_cfg"
esc_ctl check --global --config "$eu_cfg" --config "$us_cfg" || esc_fail "check --global after the sale"
grep -q 'rejected_sold_out=0 ' "$REGION_DIR/load-eu.out" ||
    esc_fail "an eu buyer heard SOLD_OUT although us still had quota for it"

esc_step "how fast quota followed demand"
python3 - "$REGION_DIR" "$t0" <<'PY'
import datetime, re, sys
d, t0 = sys.argv[1], float(sys.argv[2])
def at(line):
    stamp = line.split()[0].rstrip("Z")
    return datetime.datetime.fromisoformat(stamp).replace(tzinfo=datetime.timezone.utc).timestamp()
def lines(path, word):
    with open(path) as f:
        return [l for l in f if word in l]
sent = lines(d + "/us-coordinator.log", "COORD-QUOTA-SENT")
applied = lines(d + "/eu-coordinator.log", "COORD-QUOTA-APPLIED")
qty = sum(int(re.search(r"qty=(\d+)", l).group(1)) for l in applied)
print("quota us->eu: %d transfers, %d units" % (len(applied), qty))
if sent and applied:
    print("first sent %.2f s after the sale started, first applied in eu %.2f s after it; "
          "last applied at %.2f s" % (at(sent[0]) - t0, at(applied[0]) - t0, at(applied[-1]) - t0))
PY
echo "PASS regions_sale"
