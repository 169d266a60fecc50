#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install.sh - libescrow as a shop's build machine sees it, against a real
# cluster run from the installed daemons:
#   1. `cmake --install` of this build: the daemons, escrowctl, the library,
#      its headers and package files land under the prefix;
#   2. a client-only build (-DESC_CLIENT_ONLY=ON) from the source tree: it
#      looks for no libpq, libmicrohttpd or libinih, and installs
#      a libescrow.so.0 that needs none of them and exports only esc_*, and a
#      libescrow.a whose only global symbols are esc_*;
#   3. the README's example (examples/checkout/checkout.c) built with nothing
#      but `pkg-config --cflags --libs escrow`, and a separate CMake project
#      (install_consumer/) with nothing but find_package(escrow), linked
#      shared and static; the version macros, esc_version(), pkg-config and
#      CMake agree;
#   4. the three programs run the README's checkout against one cluster: the
#      first sells one unit; the others, with the example's fixed order key,
#      get the same hold back and sell nothing more.
# About 1-2 minutes, most of it the client-only build.
set -euo pipefail
ESC_SRC=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# shellcheck source=tests/support/lib.sh
source "$ESC_SRC/tests/support/lib.sh"
[[ -n ${ESC_BIN:-} ]] || esc_fail "ESC_BIN (the build's bin directory) is not set"
BUILD=$(cd "$ESC_BIN/.." && pwd)
T=$(mktemp -d /tmp/escrow-itest-install.XXXXXX)
esc_on_exit "rm -rf '$T'"

esc_step "cmake --install of this build"
cmake --install "$BUILD" --prefix "$T/full" >"$T/install-full.log"
for f in bin/escrow-segment bin/escrow-coordinator bin/escrowctl lib/libescrow.so.0 lib/libescrow.a \
    include/escrow/escrow.h include/escrow/escrow_errors.h include/escrow/escrow_version.h \
    lib/pkgconfig/escrow.pc lib/cmake/escrow/escrowConfig.cmake; do
    [[ -e $T/full/$f ]] || esc_fail "cmake --install left out $f"
done

esc_step "client-only build and install"
cmake -S "$ESC_SRC" -B "$T/client-build" -DESC_CLIENT_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX="$T/client" >"$T/client-configure.log" 2>&1 ||
    { cat "$T/client-configure.log" >&2; esc_fail "client-only configure failed"; }
if grep -E '^(PQ|MHD|INIH|CMOCKA)_' "$T/client-build/CMakeCache.txt"; then
    esc_fail "the client-only build looked for a library libescrow does not need"
fi
nice cmake --build "$T/client-build" -j2 >"$T/client-build.log" 2>&1 ||
    { tail -n 40 "$T/client-build.log" >&2; esc_fail "client-only build failed"; }
cmake --install "$T/client-build" >"$T/client-install.log"
P=$T/client
[[ -e $P/bin ]] && esc_fail "the client-only install put programs in $P/bin: $(ls "$P/bin")"
soname=$(readelf -d "$P/lib/libescrow.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
esc_assert_eq "$soname" libescrow.so.0 "SONAME"
if readelf -d "$P/lib/libescrow.so" | grep -E 'NEEDED.*(libpq|microhttpd|inih)'; then
    esc_fail "libescrow.so needs a library of the daemons"
fi
exported=$(nm -D --defined-only "$P/lib/libescrow.so" | awk '{print $3}')
grep -qx esc_reserve <<<"$exported" || esc_fail "libescrow.so does not export esc_reserve"
if grep -v '^esc_' <<<"$exported"; then
    esc_fail "libescrow.so exports symbols other than esc_* (above)"
fi
if nm -g --defined-only "$P/lib/libescrow.a" | awk 'NF == 3 {print $3}' | grep -v '^esc_'; then
    esc_fail "libescrow.a has global symbols other than esc_* (above)"
fi

esc_step "the README's example with pkg-config alone; the CMake package alone"
export PKG_CONFIG_PATH=$P/lib/pkgconfig
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
cc -Wall -Werror -o "$T/checkout_pkgconfig" "$ESC_SRC/examples/checkout/checkout.c" \
    $(pkg-config --cflags --libs escrow) -Wl,-rpath,"$P/lib"
cat >"$T/version.c" <<'EOF'
#include <stdio.h>
#include "escrow.h"
int main(void)
{
    printf("%s %s %d\n", ESC_VERSION_STRING, esc_version(), ESC_VERSION_NUMBER);
    return 0;
}
EOF
# shellcheck disable=SC2046
cc -Wall -Werror -o "$T/version" "$T/version.c" $(pkg-config --cflags --libs escrow) \
    -Wl,-rpath,"$P/lib"
project_version=$(sed -n 's/^project(escrow VERSION \([0-9.]*\).*/\1/p' "$ESC_SRC/CMakeLists.txt")
IFS=. read -r major minor patch <<<"$project_version"
esc_assert_eq "$("$T/version")" \
    "$project_version $project_version $((major * 10000 + minor * 100 + patch))" \
    "header version, esc_version(), ESC_VERSION_NUMBER"
esc_assert_eq "$(pkg-config --modversion escrow)" "$project_version" "pkg-config --modversion"
cmake -S "$ESC_SRC/tests/integration/install_consumer" -B "$T/consumer" -DCMAKE_PREFIX_PATH="$P" \
    -DCHECKOUT_C="$ESC_SRC/examples/checkout/checkout.c" >"$T/consumer.log" 2>&1 ||
    { cat "$T/consumer.log" >&2; esc_fail "find_package(escrow) failed"; }
nice cmake --build "$T/consumer" >>"$T/consumer.log" 2>&1 ||
    { cat "$T/consumer.log" >&2; esc_fail "the find_package project did not build"; }
ldd "$T/consumer/checkout_shared" | grep "libescrow.so.0 => $P/lib/" >/dev/null ||
    esc_fail "checkout_shared does not load the installed libescrow.so.0"
if ldd "$T/consumer/checkout_static" | grep libescrow >/dev/null; then
    esc_fail "checkout_static loads libescrow.so"
fi

# The README's checkout on one cluster of the installed daemons. The
# example's order key is fixed, so the first program reserves, extends and
# sells one unit (exit 0); the others get the same hold back (the key's
# first answer), cannot extend or sell it again (NOT_HELD, exit 1), and
# nothing more is sold.
ESC_BIN=$T/full/bin
esc_step "a cluster of the installed daemons"
esc_cluster_start "$T/cluster"
esc_ctl item create shop-1 tee --total 5 --segments 2 >/dev/null
esc_cluster_wait_served shop-1 tee
first=""
for prog in "$T/checkout_pkgconfig" "$T/consumer/checkout_shared" "$T/consumer/checkout_static"; do
    esc_step "$(basename "$prog")"
    rc=0
    out=$("$prog" "$ESCROW_COORDINATOR" "$ESC_CLUSTER_PUBLISH") || rc=$?
    echo "$out"
    hold=$(sed -n 's/^hold \([0-9]*\): 1 unit(s) until [0-9]*$/\1/p' <<<"$out")
    [[ -n $hold ]] || esc_fail "no hold in: $out"
    if [[ -z $first ]]; then
        first=$hold
        esc_assert_eq "$rc" 0 "exit code of the first checkout"
        grep -qx 'OK: hold is converted' <<<"$out" || esc_fail "not sold: $out"
    else
        esc_assert_eq "$hold" "$first" "the hold of the same order key"
        esc_assert_eq "$rc" 1 "exit code of a checkout whose hold was sold already"
        grep -qx 'NOT_HELD: hold is converted' <<<"$out" || esc_fail "sold twice? $out"
    fi
    esc_assert_eq "$(esc_psql "SELECT sum(sold) FROM segments WHERE item_id = 'tee'")" 1 "units sold"
done
echo "PASS install"
