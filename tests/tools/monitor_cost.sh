#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# monitor_cost.sh - what one invariant monitor check (coord_mon.h) costs
# PostgreSQL on a large idle catalog. A benchmark, not a test: it prints
# figures and asserts nothing.
#
#   ESC_BIN=build/bin tests/tools/monitor_cost.sh [ITEMS (100000)] [CHECK_MS (5000)] [SWEEP_MS (300000)]
#
# A private PostgreSQL (tests/support/pg.sh), the schema (escrowctl migrate),
# ITEMS items of 4 segments each created in one SQL statement, then the
# monitor's own statement (read from coordinator/daemon/coord_mon.c),
# prepared, run 3 times each (the wall time psql reports) on:
#   every item      what a check of the whole catalog costs (the first check
#                   after a start; every check at or below --check-sweep-ms)
#   slice           ITEMS x CHECK_MS / SWEEP_MS random items: an idle check
#   slice+count     the same and the catalog's count(*) (once per round)
#   10 items        a check of 10 changed items
# and the share of one core the idle checks take (slice every CHECK_MS,
# the count once per round). The machine's load average is printed: on a
# shared machine the figures are noisy.
set -euo pipefail
ITEMS=${1:-100000}
CHECK_MS=${2:-5000}
SWEEP_MS=${3:-300000}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export ESC_BIN=${ESC_BIN:-$SRC/build/bin}
# shellcheck source=tests/support/lib.sh
source "$SRC/tests/support/lib.sh"
[[ -x $ESC_BIN/escrowctl ]] || esc_fail "no escrowctl in ESC_BIN=$ESC_BIN"
SLICE=$(((ITEMS * CHECK_MS + SWEEP_MS - 1) / SWEEP_MS))

# The statement: the C string literal's pieces, joined.
SQL=$(python3 - "$SRC/coordinator/daemon/coord_mon.c" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
a = s.index("static const char sql_check[] =")
b = s.index('";\n', a) + 2
print("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', s[a:b])))
PY
)
DIR=$(mktemp -d /tmp/monitor_cost.XXXXXX)
esc_on_exit "rm -rf '$DIR'"
esc_pg_start >/dev/null
esc_ctl migrate >/dev/null
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $ITEMS items x 4 segments"
esc_psql "INSERT INTO tenants (tenant_id) VALUES ('idle');
  INSERT INTO items (tenant_id, item_id, total, unallocated, segments_wanted)
  SELECT 'idle', 'sku-' || g, 400, 0, 4 FROM generate_series(1, $ITEMS) g;
  INSERT INTO segments (tenant_id, item_id, seg_no, available)
  SELECT 'idle', 'sku-' || g, s, 100 FROM generate_series(1, $ITEMS) g, generate_series(0, 3) s;" >/dev/null
esc_psql "VACUUM ANALYZE" >/dev/null

keys() { # N -> psql lines setting :ta and :ia to N random items' keys
    echo "SELECT array_agg(tenant_id) AS ta, array_agg(item_id) AS ia FROM (SELECT tenant_id, item_id FROM items ORDER BY random() LIMIT $1) x \\gset"
}
runs() { # LABEL COUNT(true|false)
    local i
    for i in 1 2 3; do
        echo "\\echo $1"
        echo "EXECUTE q(:'ta', :'ia', $2) \\g /dev/null"
    done
}
{
    # the coordinator sends it unnamed (PQsendQueryParams): planned each time
    echo "SET plan_cache_mode = force_custom_plan;"
    echo "PREPARE q(text[], text[], boolean) AS $SQL;"
    echo '\timing on'
    keys "$ITEMS"
    runs "every-item" false
    keys "$SLICE"
    runs "slice" false
    runs "slice+count" true
    keys 10
    runs "10-items" false
} >"$DIR/run.sql"
psql "$ESCROW_DSN" -Xq -f "$DIR/run.sql" 2>&1 | awk '
    /^(every-item|slice|slice\+count|10-items)$/ { label = $1; next }
    /^Time:/ && label != "" { t[label] = t[label] " " $2; n[label]++; s[label] += $2; label = "" }
    END {
        for (l in n) printf "%-12s ms:%s (mean %.1f)\n", l, t[l], s[l] / n[l]
        idle = (s["slice"] / n["slice"]) / '"$CHECK_MS"' + (s["slice+count"] / n["slice+count"] - s["slice"] / n["slice"]) / '"$SWEEP_MS"'
        printf "RESULT items=%d slice=%d every_item_ms=%.1f slice_ms=%.1f changed10_ms=%.1f idle_pg_pct=%.1f\n",
            '"$ITEMS"', '"$SLICE"', s["every-item"] / n["every-item"], s["slice"] / n["slice"],
            s["10-items"] / n["10-items"], 100 * idle
    }'
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
