#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_node.sh - the Node.js binding against native libescrow, in one run
# on one local cluster (private PostgreSQL, coordinator, 1 node): holds/s
# of one Node process (client/node/bench/bench.js, the addon on Node's own
# loop) and of escrow-load (C, libescrow's async API on its own uv loop),
# at the same concurrency, the same sale (reserve 1 unit, confirm it) on
# items of the same shape, alternating native / node for ROUNDS rounds.
# A benchmark: it prints the figures and the ratio node/native (target
# >= 50%) and asserts nothing about them.
#
#   make build && tests/support/bench_node.sh
#
# Knobs: ESC_BIN (default build/bin: build without sanitizers for figures),
# ESC_BENCH_BUYERS (50000 per run), ESC_BENCH_CONCURRENCY (512),
# ESC_BENCH_ROUNDS (2), ESC_BENCH_SEGMENTS (8), ESC_BENCH_DIR (logs; default
# a fresh /tmp/escrow-bench-node.XXXXXX, kept).
set -euo pipefail
ESC_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ESC_BIN=${ESC_BIN:-$ESC_SRC/build/bin}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

buyers=${ESC_BENCH_BUYERS:-50000}
conc=${ESC_BENCH_CONCURRENCY:-512}
rounds=${ESC_BENCH_ROUNDS:-2}
segments=${ESC_BENCH_SEGMENTS:-8}
tenant=bench
for b in escrow-load escrow-segment escrow-coordinator escrowctl; do
    [[ -x $ESC_BIN/$b ]] || esc_fail "no $b in ESC_BIN=$ESC_BIN (make build first)"
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    esc_fail "node and npm are needed"
fi
build_dir=$(cd "$ESC_BIN/.." && pwd)
# Where the addon's build finds libescrow: ESCROW_BUILD_DIR for the build
# tree's archives (client/node/cmake/escrow_build_tree.cmake); the build
# tree's escrow.pc, for a client/node/CMakeLists.txt that uses pkg-config.
pc_path=$build_dir/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
if grep -q '^ESC_SANITIZE:BOOL=ON$' "$build_dir/CMakeCache.txt"; then
    esc_fail "$build_dir is built with sanitizers: figures would mean nothing (make build)"
fi
dir=${ESC_BENCH_DIR:-$(mktemp -d /tmp/escrow-bench-node.XXXXXX)}
mkdir -p "$dir"
echo "bench_node: logs in $dir"

esc_step "npm install of client/node against $build_dir"
pkg=$dir/escrow
rm -rf "$pkg"
mkdir -p "$pkg"
tar -C "$ESC_SRC/client/node" --exclude=./node_modules --exclude=./build -cf - . | tar -C "$pkg" -xf -
(cd "$pkg" && ESCROW_BUILD_DIR=$build_dir PKG_CONFIG_PATH=$pc_path npm install --no-audit --no-fund --loglevel=error) \
    >"$dir/npm-install.log" 2>&1 || { cat "$dir/npm-install.log" >&2; esc_fail "npm install failed"; }

esc_step "a local cluster: PostgreSQL, coordinator, 1 node"
esc_cluster_start "$dir/cluster" --nodes 1

served() { # ITEM
    [[ $(esc_psql "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
                   WHERE s.tenant_id = '$tenant' AND s.item_id = '$1' AND n.state = 'up'
                   AND s.epoch > 0") == "$segments" ]]
}

item() { # ITEM: stock for every buyer of one run
    esc_ctl item create "$tenant" "$1" --total "$buyers" --segments "$segments" \
        --hold-ttl-ms 600000 >/dev/null
    # a benchmark of one tenant's peak: no per-tenant rate limit (node_fair.h)
    esc_ctl tenant limits "$tenant" --rate 0 >/dev/null
    esc_wait_for 60 served "$1" || esc_fail "item $1 was not placed within 60 s"
}

field() { # NAME LINE
    grep -o "[[:space:]]$1=[0-9.]*" <<<" $2" | head -n 1 | cut -d= -f2
}

# Runs one sale (LABEL, then the command); prints its RESULT line with the
# process's CPU time per hold appended (user + system, bash's `time`), and
# sets `rate` to its holds/s.
sale() {
    local label=$1 line cpu
    shift
    line=$( { TIMEFORMAT='%U %S'; time "$@" 2>"$dir/$label.log"; } 2>"$dir/$label.cpu" |
        grep '^RESULT') || esc_fail "$label failed (see $dir/$label.log)"
    cpu=$(awk '{ print $1 + $2 }' "$dir/$label.cpu")
    line="$line cpu_s=$cpu cpu_us_per_hold=$(awk -v c="$cpu" -v n="$(field holds_ok "$line")" \
        'BEGIN { printf "%.0f", (n > 0 ? c * 1e6 / n : 0) }')"
    echo "$label $line" | tee -a "$dir/results.txt"
    rate=$(field holds_per_s "$line")
    rate=${rate%.*}
}

native_sum=0 node_sum=0
for r in $(seq 1 "$rounds"); do
    item "native$r"
    esc_step "round $r: escrow-load, $buyers buyers, $conc in flight"
    sale "native$r" "$ESC_BIN/escrow-load" --coordinator "$ESCROW_COORDINATOR" \
        --routes "$ESC_CLUSTER_PUBLISH" --tenant "$tenant" --item "native$r" --buyers "$buyers" \
        --concurrency "$conc" --confirm 1 --release 0 --key-prefix "native$r" --quiet
    native_sum=$((native_sum + rate))

    item "node$r"
    esc_step "round $r: one Node process, $buyers buyers, $conc in flight"
    sale "node$r" node "$pkg/bench/bench.js" --coordinator "$ESCROW_COORDINATOR" \
        --routes "$ESC_CLUSTER_PUBLISH" --tenant "$tenant" --item "node$r" --buyers "$buyers" \
        --concurrency "$conc" --key-prefix "node$r"
    node_sum=$((node_sum + rate))
done

native=$((native_sum / rounds))
node=$((node_sum / rounds))
ratio=$(awk -v a="$node" -v b="$native" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
echo
echo "BENCH_NODE native_holds_per_s=$native node_holds_per_s=$node ratio_node_native=$ratio" \
    "buyers=$buyers concurrency=$conc rounds=$rounds (target: ratio >= 0.50)" | tee -a "$dir/results.txt"
