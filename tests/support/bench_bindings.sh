#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_bindings.sh - the language bindings against C, in one run on one
# local cluster (tests/support/cluster.sh: a private PostgreSQL, a
# coordinator, 2 nodes). A benchmark, not a test: it prints figures and
# ratios and asserts nothing about them.
#
#   make bench-bindings                      build (no sanitizers) and run this
#   ESC_BIN=build/bin tests/support/bench_bindings.sh
#
# Each runner checks out ESC_BB_BUYERS buyers (reserve, then confirm) with
# ESC_BB_CONCURRENCY calls in flight from ONE process, on an item of its own
# with two units for every buyer in 8 segments (no segment runs dry, so no
# call waits for stock to move), in turn:
#   native   escrow-load (C, libescrow's async API on its own libuv loop)
#   threads  Python: ESC_BB_CONCURRENCY threads sharing one escrow.Client
#   asyncio  Python: ESC_BB_CONCURRENCY tasks on one escrow.AsyncClient
# (client/python/benchmarks/holds_per_s.py), then one line per runner and
#   RESULT native_holds_per_s=... python_threads_holds_per_s=...
#          python_asyncio_holds_per_s=... ratio_threads=... ratio_asyncio=...
# where a ratio is the runner's holds/s over native's from the same run.
# Knobs: ESC_BB_BUYERS (20000), ESC_BB_CONCURRENCY (256), ESCROW_LIBRARY
# (default ESC_BIN/../lib/libescrow.so.0), ESC_PYTHON (python3),
# ESC_BB_DIR (logs; default a fresh /tmp/escrow-bench-bindings.XXXXXX, kept).
set -euo pipefail
# shellcheck source=tests/support/lib.sh
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[[ -n ${ESC_BIN:-} ]] || esc_fail "ESC_BIN (a build's bin directory) is not set"
buyers=${ESC_BB_BUYERS:-20000}
conc=${ESC_BB_CONCURRENCY:-256}
export ESCROW_LIBRARY=${ESCROW_LIBRARY:-$ESC_BIN/../lib/libescrow.so.0}
[[ -f $ESCROW_LIBRARY ]] || esc_fail "no libescrow at ESCROW_LIBRARY=$ESCROW_LIBRARY"
if readelf -d "$ESCROW_LIBRARY" | grep 'NEEDED.*libasan' >/dev/null; then
    echo "note: $ESCROW_LIBRARY is a sanitizer build: figures mean little" >&2
fi
py=${ESC_PYTHON:-python3}
dir=${ESC_BB_DIR:-$(mktemp -d /tmp/escrow-bench-bindings.XXXXXX)}
mkdir -p "$dir"

esc_step "a local cluster (2 nodes); logs in $dir"
esc_cluster_start "$dir/cluster" --nodes 2
n=0
new_item() {
    n=$((n + 1))
    item=bb-$n
    esc_ctl item create t1 "$item" --total $((2 * buyers)) --segments 8 >/dev/null
    # a benchmark of one tenant's peak: no per-tenant rate limit (node_fair.h)
    esc_ctl tenant limits t1 --rate 0 >/dev/null
    esc_cluster_wait_served t1 "$item"
}

declare -A rate
field() {
    sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p" <<<"$2"
}

new_item
esc_step "native: escrow-load, $buyers buyers, $conc in flight"
"$ESC_BIN/escrow-load" --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
    --tenant t1 --item "$item" --buyers "$buyers" --concurrency "$conc" --confirm 1 --release 0 \
    --quiet >"$dir/native.out" 2>"$dir/native.log" ||
    { cat "$dir/native.out" "$dir/native.log" >&2; esc_fail "escrow-load failed"; }
line=$(grep '^RESULT' "$dir/native.out")
echo "$line"
rate[native]=$(field holds_per_s "$line")

for mode in threads asyncio; do
    new_item
    esc_step "python $mode: $buyers buyers, $conc in flight"
    PYTHONPATH=$SRC/client/python "$py" "$SRC/client/python/benchmarks/holds_per_s.py" \
        --mode "$mode" --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
        --tenant t1 --item "$item" --buyers "$buyers" --concurrency "$conc" \
        >"$dir/$mode.out" 2>"$dir/$mode.log" ||
        { cat "$dir/$mode.out" "$dir/$mode.log" >&2; esc_fail "python $mode failed"; }
    line=$(grep '^RESULT' "$dir/$mode.out")
    echo "$line"
    rate[$mode]=$(field holds_per_s "$line")
done

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'
}
echo
printf '%-22s %12s %10s\n' runner holds/s "x native"
printf '%-22s %12s %10s\n' "native (escrow-load)" "${rate[native]}" 1.00
for mode in threads asyncio; do
    printf '%-22s %12s %10s\n' "python $mode" "${rate[$mode]}" "$(ratio "${rate[$mode]}" "${rate[native]}")"
done
echo "RESULT native_holds_per_s=${rate[native]} python_threads_holds_per_s=${rate[threads]}" \
    "python_asyncio_holds_per_s=${rate[asyncio]}" \
    "ratio_threads=$(ratio "${rate[threads]}" "${rate[native]}")" \
    "ratio_asyncio=$(ratio "${rate[asyncio]}" "${rate[native]}")" \
    "buyers=$buyers concurrency=$conc"
