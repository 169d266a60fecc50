#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regions_bench.sh - how fast quota follows demand between two regions when
# they hold many global items. A benchmark, not a test: it prints figures
# and a ratio and asserts nothing about them.
#
#   ESC_BIN=build/bin tests/support/regions_bench.sh [ITEMS]     (default 10000)
#
# One run, one pair of regions (examples/regions: eu and us, interval_ms
# 1000, horizon_ms 5000, automatic policy on; one private PostgreSQL):
#   baseline   100 global items, then a probe item;
#   measured   ITEMS global items in all, then a second probe item.
# The other global items are 100 units per region with no segments (a node
# serves at most 1,024 segments, ESC_HB_SEGMENTS_MAX), inserted with COPY;
# they ride in every status page all the same. A probe is a global item of
# 5,020 units, 20 in eu and 5,000 in us, 2 segments per region, created
# last so that it comes last in every sweep. Buyers ask for it in eu only;
# eu's 20 units go at once, and the figure is
#   follow_s   seconds from the first buyer until us's first quota transfer
#              of the probe is applied in eu (eu's coordinator log)
# with the sweep that covers every global item (COORD-STATUS: items, pages,
# ms, from each coordinator's log) beside it, then
#   RESULT items=... follow_s=... baseline_items=100 baseline_follow_s=...
#          ratio=... sweep_ms_eu=... sweep_ms_us=... pages=...
set -euo pipefail
ESC_SRC=$(cd "$(dirname "$0")/../.." && pwd)
ESC_BIN=${ESC_BIN:-$ESC_SRC/build/bin}
export ESC_SRC ESC_BIN
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

ITEMS=${1:-10000}
BASE=100
((ITEMS > BASE)) || { echo "ITEMS must be more than $BASE" >&2; exit 2; }

dir=$(mktemp -d /tmp/escrow-regions-bench.XXXXXX)
esc_cluster_start "$dir" --regions "$ESC_SRC/examples/regions"
[[ ${ESC_KEEP:-0} == 1 ]] || esc_on_exit "rm -rf '$dir'"
# shellcheck disable=SC1091
source "$dir/env"
cfgs=(--config "$ESC_REGION_CONFIG_eu" --config "$ESC_REGION_CONFIG_us")

sql() { # REGION: psql reading stdin
    local v=ESC_REGION_DSN_$1
    "$ESC_PG_BINDIR/psql" "${!v}" -At -X -q -v ON_ERROR_STOP=1 -f -
}

# Global items f<FROM>..f<TO-1> (a probe follows each batch), 100 units in
# each region, no segments.
fillers() {
    local r
    for r in eu us; do
        {
            echo "INSERT INTO tenants (tenant_id) VALUES ('t1') ON CONFLICT DO NOTHING;"
            echo "COPY items (tenant_id, item_id, total, unallocated) FROM STDIN;"
            seq -f 't1	f%06g	100	100' "$1" $(($2 - 1))
            echo '\.'
            echo "COPY global_items (tenant_id, item_id, global_total, regions, initial_quota) FROM STDIN;"
            seq -f 't1	f%06g	200	{eu,us}	100' "$1" $(($2 - 1))
            echo '\.'
        } | sql "$r"
    done
}

# The seconds from the first buyer of PROBE in eu to the first quota of it
# applied in eu; prints them.
follow() {
    local probe=$1 t0
    esc_ctl item create t1 "$probe" --global --total 5020 --quota eu=20,us=5000 --segments 2 \
        "${cfgs[@]}" >/dev/null
    local r
    for r in eu us; do
        local v=ESC_REGION_DSN_$r
        esc_wait_for 60 _placed "${!v}" "$probe" || { echo "$probe not placed in $r" >&2; exit 1; }
    done
    sleep 3 # two rounds: both coordinators have swept every item, probe included
    t0=$(date +%s.%N)
    "$ESC_BIN/escrow-load" --coordinator "$ESC_REGION_COORD_eu" --routes "$ESC_REGION_PUBLISH_eu" \
        --dsn "$ESC_REGION_DSN_eu" --tenant t1 --item "$probe" --buyers 4000 --concurrency 20 \
        --think-ms 20 --confirm 1 --release 0 --try-later-retries 100000 --deadline-ms 60000 \
        --key-prefix "$probe" --quiet >"$dir/load-$probe.out" 2>&1 &
    local load=$!
    esc_wait_for 300 grep -q "COORD-QUOTA-APPLIED from=us .*item=t1/$probe " \
        "$dir/eu-coordinator.log" || { echo "no quota for $probe within 300 s" >&2; exit 1; }
    kill "$load" 2>/dev/null || true
    wait "$load" 2>/dev/null || true
    python3 - "$dir/eu-coordinator.log" "$probe" "$t0" <<'PY'
import datetime, sys
path, probe, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
for line in open(path):
    if "COORD-QUOTA-APPLIED from=us" in line and ("item=t1/%s " % probe) in line:
        stamp = line.split()[0].rstrip("Z")
        t = datetime.datetime.fromisoformat(stamp).replace(tzinfo=datetime.timezone.utc).timestamp()
        print("%.2f" % (t - t0))
        break
PY
}

_placed() {
    [[ $("$ESC_PG_BINDIR/psql" "$1" -At -X -q -c "SELECT count(*) > 0 AND bool_and(node_id IS NOT NULL AND epoch > 0) FROM segments WHERE item_id = '$2'") == t ]]
}

# The last sweep of every global item (N of them) a coordinator logged:
# "ms pages".
sweep() {
    grep -h "COORD-STATUS .* items=$2 " "$dir/$1-coordinator.log" | tail -n 1 |
        sed -E 's/.* pages=([0-9]+) ms=([0-9.]+).*/\2 \1/'
}

esc_step "baseline: $BASE global items"
fillers 0 $((BASE - 1))
base_s=$(follow probe-a)
esc_step "measured: $ITEMS global items"
fillers $((BASE - 1)) $((ITEMS - 2)) # with the two probes: ITEMS
items_s=$(follow probe-b)
sleep 2
read -r eu_ms eu_pages <<<"$(sweep eu "$ITEMS")"
read -r us_ms us_pages <<<"$(sweep us "$ITEMS")"
read -r eu_base_ms _ <<<"$(sweep eu "$BASE")"
echo "baseline: $BASE global items: quota followed demand in $base_s s (sweep ${eu_base_ms:-?} ms)"
echo "measured: $ITEMS global items: quota followed demand in $items_s s" \
    "(sweep every item: eu ${eu_ms:-?} ms, us ${us_ms:-?} ms, ${eu_pages:-?} pages)"
echo "RESULT items=$ITEMS follow_s=$items_s baseline_items=$BASE baseline_follow_s=$base_s" \
    "ratio=$(python3 -c "print(round($items_s / $base_s, 2))") sweep_ms_eu=${eu_ms:-na}" \
    "sweep_ms_us=${us_ms:-na} pages=${eu_pages:-na}"
