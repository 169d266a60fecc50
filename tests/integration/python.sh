#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# python.sh - the Python binding (client/python), installed from the tree
# without the network and tested with Debian's python3-pytest:
#   python.sh --unit   tests/unit: no cluster (the answer table, versions,
#                      argument checks, both clients against nobody)
#   python.sh          tests/cluster: against a private PostgreSQL, a
#                      coordinator and two managed nodes, all with --auth on
#                      (races for 100 units from threads and asyncio, the
#                      answers, carts, the Django-style example)
# Both make a venv that sees the system's packages (pytest, pip, setuptools),
# install the package into it with `pip install --no-index
# --no-build-isolation` (no network), and run
# the tests from outside the source tree, so they import the installed copy.
# ESCROW_LIBRARY names the library under test (ctest: the build's
# libescrow.so); a sanitizer build's library gets ASan's runtime preloaded.
# Environment: ESC_PYTHON (default /usr/bin/python3, which has Debian's pytest).
set -euo pipefail
mode=${1:-cluster}
ESC_PYTHON=${ESC_PYTHON:-/usr/bin/python3}
if [[ $mode == --unit ]]; then
    ESC_SRC=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
    # shellcheck source=tests/support/lib.sh
    source "$ESC_SRC/tests/support/lib.sh"
    WORK=$(mktemp -d /tmp/escrow-itest-python-unit.XXXXXX)
    esc_on_exit "rm -rf '$WORK'"
else
    ITEST_BUDGET_S=${ITEST_BUDGET_S:-180} # a cluster, a venv and ~10 s of pytest
    # shellcheck source=tests/integration/shard_lib.sh
    source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"
fi
[[ -n ${ESCROW_LIBRARY:-} && -f $ESCROW_LIBRARY ]] ||
    esc_fail "ESCROW_LIBRARY (the libescrow.so under test) is not set or missing"
export ESCROW_LIBRARY
"$ESC_PYTHON" -c 'import pytest' 2>/dev/null ||
    esc_fail "$ESC_PYTHON has no pytest: apt-get install python3-pytest"

# The package, installed offline into a fresh venv. The venv borrows the
# system's pip and setuptools (Debian's python3-pip) instead of bootstrapping
# its own; pip builds from a copy, since it writes build/ and *.egg-info
# into the folder it installs from.
python_install() {
    local venv=$1/venv
    "$ESC_PYTHON" -m venv --without-pip --system-site-packages "$venv"
    cp -r "$ESC_SRC/client/python" "$1/pkg"
    "$venv/bin/python" -m pip install -q --no-index --no-build-isolation \
        --disable-pip-version-check "$1/pkg" >"$1/pip.log" 2>&1 ||
        { cat "$1/pip.log" >&2; esc_fail "pip install client/python failed"; }
    PY=$venv/bin/python
    local where
    where=$(cd "$1" && "$PY" -c 'import escrow; print(escrow.__file__)')
    [[ $where == "$venv"/* ]] || esc_fail "the tests would import escrow from $where, not the venv"
}

# pytest on a folder of client/python/tests, from outside the tree.
python_pytest() {
    local preload=""
    if readelf -d "$ESCROW_LIBRARY" | grep 'NEEDED.*libasan' >/dev/null; then
        preload="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
    fi
    (cd "$2" && LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0 \
        "$PY" -m pytest -v -p no:cacheprovider "$ESC_SRC/client/python/tests/$1")
}

if [[ $mode == --unit ]]; then
    python_install "$WORK"
    python_pytest unit "$WORK"
    exit 0
fi

itest_begin python
K=$ITEST_DIR/keys
mkdir -p "$K"
esc_ctl cluster-key create >"$K/cluster"
esc_ctl tenant create shop-py >/dev/null
esc_ctl key create shop-py >"$K/shop" 2>/dev/null
esc_ctl admin-key create >"$K/admin" 2>/dev/null
shard_coord_start --auth on --cluster-key "$K/cluster"
for n in n1 n2; do shard_node_start "$n" --auth on --cluster-key "$K/cluster"; done
esc_step "pip install client/python (offline)"
python_install "$ITEST_DIR"
esc_step "pytest client/python/tests/cluster"
ESCROW_TEST_COORDINATOR=$SHARD_COORD_URL ESCROW_TEST_ROUTES=$SHARD_PUB_URL \
    ESCROW_TEST_TENANT=shop-py ESCROW_TEST_KEY=$(cat "$K/shop") \
    ESCROW_TEST_ADMIN_KEY_FILE=$K/admin ESCROW_COORDINATOR=$SHARD_COORD_URL \
    ESC_PG_BINDIR=$ESC_PG_BINDIR python_pytest cluster "$ITEST_DIR"
itest_invariants
itest_pass
