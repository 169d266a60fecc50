#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# node.sh - the Node.js package (client/node) as a shop installs and uses
# it, against a real cluster (tests/support/cluster.sh: private PostgreSQL,
# coordinator, 2 nodes):
#   1. `npm install` of a copy of client/node (the addon is built against
#      the build tree's libescrow: ESCROW_BUILD_DIR; the only download is
#      node-api-headers from the npm registry);
#   2. its test suite, `node --test` (client/node/test/: the race, the
#      idempotency, the error mapping, carts, hold ids, closing);
#   3. `npm pack` and `npm install` of the tarball into a fresh project,
#      which then sells a unit: what a shop's checkout does.
# Segment ids start at 5,000,000 here, so that every hold id is above 2^53
# and a hold id that went through a JavaScript number would be caught.
#
# When the build tree is instrumented (ESC_SANITIZE=ON, as in make test) the
# addon is too, and node runs with the ASan/UBSan runtime preloaded.
# Without node or npm on the machine the test is skipped (exit 77): install
# the packages nodejs and npm (CI has them: .ci/packages.txt).
#
# Environment: ESC_BIN (the build tree's bin/), ESC_SRC (the source tree),
# ESC_KEEP=1 keeps the work directory.
set -euo pipefail
ESC_SRC=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node and npm are not installed (apt-get install nodejs npm)"
    exit 77
fi
[[ -x ${ESC_BIN:-}/escrowctl ]] || esc_fail "no escrowctl in ESC_BIN='${ESC_BIN:-}'"
build_dir=$(cd "$ESC_BIN/.." && pwd)
# Where the addon's build finds libescrow: ESCROW_BUILD_DIR for the build
# tree's archives (client/node/cmake/escrow_build_tree.cmake); the build
# tree's escrow.pc, for a client/node/CMakeLists.txt that uses pkg-config.
pc_path=$build_dir/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}

t0=$SECONDS
passed=0
work=$(mktemp -d /tmp/escrow-node.XXXXXX)
esc_on_exit '((passed)) && [[ ${ESC_KEEP:-0} != 1 ]] && rm -rf "$work" || echo "logs kept in $work" >&2'
npm_flags=(--no-audit --no-fund --loglevel=error)

esc_step "npm install of client/node (node $(node --version), npm $(npm --version))"
pkg=$work/escrow
mkdir -p "$pkg"
tar -C "$ESC_SRC/client/node" --exclude=./node_modules --exclude=./build -cf - . | tar -C "$pkg" -xf -
(cd "$pkg" && ESCROW_BUILD_DIR=$build_dir PKG_CONFIG_PATH=$pc_path npm install "${npm_flags[@]}") >"$work/npm-install.log" 2>&1 || {
    cat "$work/npm-install.log" >&2
    esc_fail "npm install failed"
}

# The sanitizer runtime comes first in a process that loads an instrumented
# addon; node's own allocations at exit are not ours to report (leaks are
# checked by the tests themselves: live() counters, and valgrind by hand).
node_env=()
if grep -q '^ESC_SANITIZE:BOOL=ON$' "$build_dir/CMakeCache.txt"; then
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
    node_env=("LD_PRELOAD=$("$cc" -print-file-name=libasan.so) $("$cc" -print-file-name=libubsan.so)"
        "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
        "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
    echo "instrumented build: node runs with ${node_env[0]}"
fi

esc_step "a local cluster: PostgreSQL, coordinator, 2 nodes"
esc_cluster_start "$work/cluster" --nodes 2
esc_psql "ALTER TABLE segments ALTER COLUMN segment_id RESTART WITH 5000000" >/dev/null
export ESC_BIN ESCROW_DSN ESCROW_COORDINATOR ESC_CLUSTER_PUBLISH ESC_PG_BINDIR

esc_step "node --test (client/node/test/*.test.js)"
if ! (cd "$pkg" && env "${node_env[@]}" node --test --test-concurrency=1 test/*.test.js) 2>&1 |
    tee "$work/node-test.log"; then
    esc_fail "node --test failed"
fi

esc_step "npm pack, then npm install of the tarball into a new project"
tarball=$(cd "$pkg" && npm pack --silent "${npm_flags[@]}" | tail -n 1)
app=$work/app
mkdir -p "$app"
echo '{ "name": "shop-checkout", "version": "1.0.0", "private": true }' >"$app/package.json"
(cd "$app" && ESCROW_BUILD_DIR=$build_dir PKG_CONFIG_PATH=$pc_path npm install "${npm_flags[@]}" "$pkg/$tarball") \
    >"$work/app-install.log" 2>&1 || {
    cat "$work/app-install.log" >&2
    esc_fail "npm install $tarball failed"
}
esc_ctl item create shop-node app-tee --total 1 --segments 1 >/dev/null
have_segment() {
    [[ $(esc_psql "SELECT count(*) FROM segments s JOIN nodes n USING (node_id)
                   WHERE s.item_id = 'app-tee' AND n.state = 'up' AND s.epoch > 0") == 1 ]]
}
esc_wait_for 60 have_segment || esc_fail "item app-tee was not placed within 60 s"
cat >"$app/checkout.js" <<'EOF'
const { Client, EscrowError } = require('escrow');
const c = new Client({ coordinator: process.env.ESCROW_COORDINATOR,
  routes: process.env.ESC_CLUSTER_PUBLISH, tenant: 'shop-node', deadlineMs: 30000 });
(async () => {
  const hold = await c.reserve({ item: 'app-tee', buyer: 'b1', key: 'app-order-1' });
  const sold = await c.confirm(hold.holdId);
  // The next buyer: TRY_LATER until the cluster has heard of the sale, then
  // SOLD_OUT (the same key each time, as checkout code retries).
  let again;
  for (let i = 0; i < 600; i++) {
    again = await c.reserve({ item: 'app-tee', buyer: 'b2', key: 'app-order-2' }).catch((e) => e);
    if (!(again instanceof EscrowError) || again.code !== 'TRY_LATER') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`APP ${sold.state} ${sold.holdId} ${again instanceof EscrowError ? again.code : again}`);
  await c.close();
})();
EOF
out=$(cd "$app" && env "${node_env[@]}" node checkout.js) || esc_fail "the app failed: $out"
echo "$out"
id=$(esc_psql "SELECT hold_id FROM holds WHERE item_id = 'app-tee' AND state = 'converted'")
esc_assert_eq "$out" "APP converted $id SOLD_OUT" "the installed package sold the unit"

passed=1
echo "PASS node ($((SECONDS - t0)) s)"
