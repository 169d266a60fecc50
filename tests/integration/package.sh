#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package.sh - the Debian packages of `make deb` as an operator gets them, on
# this machine (root: it installs into the system):
#   1. a clean state: every escrow package purged, no escrow program left;
#   2. `apt-get install ./*.deb` of all seven packages; the escrow system
#      user exists, the installed units pass `systemd-analyze verify`
#      unchanged, each daemon's /etc/escrow/*.ini is a conffile, the man
#      pages are there, every program finds its libraries;
#   3. a cluster of the installed daemons, started by hand (this container
#      has no systemd as PID 1): /usr/bin/escrowctl migrate, then
#      /usr/bin/escrow-coordinator and two /usr/bin/escrow-segment;
#   4. a sale with /usr/bin/escrow-load (every buyer confirms, more buyers
#      than units): exactly the total sold, nothing oversold or left held;
#   5. libescrow-dev: the README's example built with nothing but
#      `pkg-config --cflags --libs escrow` against /usr/include/escrow, and
#      find_package(escrow) (tests/integration/install_consumer); both
#      load /usr/lib/<triplet>/libescrow.so.0 and sell one unit between them;
#      python3-escrow: Debian's /usr/bin/python3 imports escrow from
#      /usr/lib/python3/dist-packages and sells one more unit;
#   6. escrowctl check, the cluster stopped, every package purged again
#      (the conffiles and man pages gone too).
#
#   make test-package        (make deb, then this script)
#   ctest -L package         (this script, on the packages already in build-deb/)
# ESC_DEB_DIR names the folder of the .deb files (default: build-deb/ of the tree).
# ESC_PACKAGE_KEEP=1 leaves the packages installed at the end.
# About 1-2 minutes after make deb. Exit 77 (skipped) when not root.
set -euo pipefail
ESC_SRC=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"
if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: installs packages into the system: run as root"
    exit 77
fi
DEB=${ESC_DEB_DIR:-$ESC_SRC/build-deb}
compgen -G "$DEB/*.deb" >/dev/null || esc_fail "no .deb in $DEB: run make deb first (or make test-package)"
PKGS=(escrow-segment escrow-coordinator escrow-gateway escrowctl libescrow0 libescrow-dev
    python3-escrow)
DAEMONS=(escrow-segment escrow-coordinator escrow-gateway)
T=$(mktemp -d /tmp/escrow-itest-package.XXXXXX)
installed=0 # set once apt-get install ran: the packages are purged at exit
esc_on_exit "at_exit"
export DEBIAN_FRONTEND=noninteractive

# Purges whichever escrow packages are installed (or half-installed).
purge_all() {
    local p present=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -vx not-installed >/dev/null &&
            present+=("$p")
    done
    ((${#present[@]} == 0)) || apt-get purge -y -q "${present[@]}" >"$T/purge.log" 2>&1 ||
        { cat "$T/purge.log" >&2; return 1; }
}

at_exit() {
    if ((installed)) && [[ ${ESC_PACKAGE_KEEP:-0} != 1 ]]; then
        purge_all || echo "note: apt-get purge failed; the packages may still be installed" >&2
    fi
    rm -rf "$T"
}

# Fails if a file of the packages is still on the system.
assert_gone() {
    local f
    for f in /usr/bin/escrow-segment /usr/bin/escrow-coordinator /usr/bin/escrow-gateway \
        /usr/bin/escrowctl /usr/bin/escrow-load /usr/include/escrow \
        /usr/lib/python3/dist-packages/escrow /lib/systemd/system/escrow-segment.service \
        /etc/escrow/segment.ini /etc/escrow/coordinator.ini /etc/escrow/gateway.ini \
        /usr/share/man/man8/escrow-segment.8.gz /usr/share/man/man1/escrowctl.1.gz; do
        [[ ! -e $f ]] || esc_fail "$f is still there after the purge ($1)"
    done
    ! compgen -G "/usr/lib/*/libescrow.so*" >/dev/null || esc_fail "libescrow is still there ($1)"
}

esc_step "1/6 a clean state: purge every escrow package"
debs=()
for p in "${PKGS[@]}"; do
    f=$(compgen -G "$DEB/${p}_*.deb" || true)
    [[ -n $f && $(wc -l <<<"$f") == 1 ]] || esc_fail "want one ${p}_*.deb in $DEB, found: '$f'"
    debs+=("$f")
done
purge_all
assert_gone "before the install"

esc_step "2/6 apt-get install ${debs[*]##*/}"
installed=1
apt-get install -y -q --no-install-recommends "${debs[@]}" >"$T/install.log" 2>&1 ||
    { cat "$T/install.log" >&2; esc_fail "apt-get install failed"; }
want_version=$(dpkg-parsechangelog -l "$ESC_SRC/debian/changelog" -S Version)
for p in "${PKGS[@]}"; do
    esc_assert_eq "$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$p")" \
        "installed $want_version" "$p"
done
uid=$(getent passwd escrow | cut -d: -f3) || esc_fail "no escrow user after the install"
((uid < 1000)) || esc_fail "escrow is not a system user (uid $uid)"
out=$(systemd-analyze verify "${DAEMONS[@]/%/.service}" 2>&1) ||
    esc_fail "systemd-analyze verify of the installed units failed: $out"
[[ -z $out ]] || esc_fail "systemd-analyze verify of the installed units complained: $out"
for d in "${DAEMONS[@]}"; do
    unit=/lib/systemd/system/$d.service
    [[ -f $unit ]] || esc_fail "$d did not install $unit"
    grep -qx "ExecStart=/usr/bin/$d --config /etc/escrow/${d#escrow-}.ini" "$unit" ||
        esc_fail "$unit does not start /usr/bin/$d with its config file"
    # The config file is a conffile (an upgrade keeps the operator's edits).
    conf=/etc/escrow/${d#escrow-}.ini
    [[ -f $conf ]] || esc_fail "$d did not install $conf"
    dpkg-query -W -f='${Conffiles}\n' "$d" | grep "^ $conf " >/dev/null ||
        esc_fail "$conf is not a conffile of $d"
done
for page in man8/escrow-segment.8 man8/escrow-coordinator.8 man8/escrow-gateway.8 man1/escrowctl.1; do
    [[ -f /usr/share/man/$page.gz ]] || esc_fail "no /usr/share/man/$page.gz"
done
for b in "${DAEMONS[@]}" escrowctl escrow-load escrow-bench; do
    if ldd "/usr/bin/$b" | grep 'not found'; then esc_fail "/usr/bin/$b misses a library"; fi
    if ldd "/usr/bin/$b" | grep -F "$ESC_SRC"; then esc_fail "/usr/bin/$b loads from the tree"; fi
done

export ESC_BIN=/usr/bin
esc_step "3/6 a cluster of the installed daemons: PostgreSQL, escrowctl migrate, coordinator, 2 nodes"
esc_cluster_start "$T/cluster" --nodes 2
for pid in "$ESC_CLUSTER_COORD_PID" "$(esc_cluster_node_pid n1)" "$(esc_cluster_node_pid n2)"; do
    exe=$(readlink "/proc/$pid/exe")
    [[ $exe == /usr/bin/escrow-* ]] || esc_fail "pid $pid runs $exe, not an installed daemon"
done

total=300
esc_step "4/6 the sale: /usr/bin/escrow-load, 1,200 buyers for $total units, every one confirms"
esc_ctl item create shop-1 flash --total "$total" --segments 4 --max-per-order 5 \
    --hold-ttl-ms 30000 >/dev/null
esc_cluster_wait_served shop-1 flash
/usr/bin/escrow-load --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" \
    --tenant shop-1 --item flash --buyers 1200 --concurrency 40 --confirm 1 --release 0 \
    --dsn "$ESCROW_DSN" >"$T/load.out" 2>&1 || { cat "$T/load.out" >&2; esc_fail "escrow-load failed"; }
result=$(grep '^RESULT' "$T/load.out") || esc_fail "escrow-load printed no RESULT line"
echo "$result"
for want in "total=$total" oversold=0 conservation=ok stranded=0; do
    [[ $result =~ (^|[[:space:]])$want([[:space:]]|$) ]] || esc_fail "the RESULT line lacks $want"
done
esc_assert_eq "$(esc_psql "SELECT sum(sold) || ' ' || sum(held) FROM segments
                            WHERE tenant_id = 'shop-1' AND item_id = 'flash'")" "$total 0" \
    "units sold and held at the end of the sale"

esc_step "5/6 libescrow-dev: the README's example with pkg-config and find_package; python3-escrow"
esc_ctl item create shop-1 tee --total 5 --segments 2 >/dev/null
esc_cluster_wait_served shop-1 tee
esc_assert_eq "$(pkg-config --variable=includedir escrow)" /usr/include/escrow "escrow.pc's includedir"
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
(cd "$T" && cc -Wall -Werror -o checkout "$ESC_SRC/examples/checkout/checkout.c" \
    $(pkg-config --cflags --libs escrow)) || esc_fail "the example does not build with pkg-config"
# ldd's output in a variable: `ldd | grep -q` fails under pipefail when grep
# stops reading before ldd has written its last line (SIGPIPE)
libs=$(ldd "$T/checkout")
grep -Eq 'libescrow\.so\.0 => (/usr)?/lib/[^/]+/libescrow\.so\.0' <<<"$libs" ||
    esc_fail "the example does not load the installed libescrow.so.0: $libs"
out=$("$T/checkout" "$ESCROW_COORDINATOR" "$ESC_CLUSTER_PUBLISH") ||
    esc_fail "the example failed: $out"
echo "$out"
grep -qx 'OK: hold is converted' <<<"$out" || esc_fail "the example sold nothing: $out"
cmake -S "$ESC_SRC/tests/integration/install_consumer" -B "$T/consumer" \
    -DCHECKOUT_C="$ESC_SRC/examples/checkout/checkout.c" >"$T/consumer.log" 2>&1 ||
    { cat "$T/consumer.log" >&2; esc_fail "find_package(escrow) failed"; }
nice cmake --build "$T/consumer" >>"$T/consumer.log" 2>&1 ||
    { cat "$T/consumer.log" >&2; esc_fail "the find_package project did not build"; }
grep -Eq "^escrow_DIR:PATH=(/usr)?/lib/[^/]+/cmake/escrow$" "$T/consumer/CMakeCache.txt" ||
    esc_fail "find_package(escrow) did not find the installed package"
# The example's order key is fixed: the same hold comes back, already sold.
rc=0
out=$("$T/consumer/checkout_shared" "$ESCROW_COORDINATOR" "$ESC_CLUSTER_PUBLISH") || rc=$?
esc_assert_eq "$rc" 1 "exit code of a checkout whose order was sold already"
grep -qx 'NOT_HELD: hold is converted' <<<"$out" || esc_fail "sold twice? $out"
(cd "$T" && env -u ESCROW_LIBRARY -u PYTHONPATH /usr/bin/python3 - "$ESCROW_COORDINATOR" \
    "$ESC_CLUSTER_PUBLISH") <<'PY' || esc_fail "python3-escrow did not sell"
import sys
import escrow
assert escrow.__file__.startswith("/usr/lib/python3/dist-packages/escrow/"), escrow.__file__
print("escrow", escrow.__version__, "over libescrow", escrow.library_version(), "from", escrow.__file__)
client = escrow.Client(coordinator=sys.argv[1], routes=sys.argv[2], tenant="shop-1")
hold = client.reserve("tee", buyer="py-1", key="py-order-1")
client.confirm(hold)
client.close()
PY
esc_assert_eq "$(esc_psql "SELECT sum(sold) FROM segments WHERE item_id = 'tee'")" 2 \
    "units of tee sold (the example once, Python once)"

esc_step "6/6 escrowctl check; stop the cluster; purge"
esc_ctl check || esc_fail "escrowctl check failed"
esc_cluster_stop "$T/cluster" || esc_fail "a daemon did not stop on SIGTERM (logs in $T/cluster)"
if [[ ${ESC_PACKAGE_KEEP:-0} != 1 ]]; then
    purge_all || esc_fail "apt-get purge failed"
    installed=0
    assert_gone "after the purge"
fi
echo "OK: installed, sold $total + 2 units with the installed programs, purged"
