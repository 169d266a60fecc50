#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - builds the libFuzzer targets with clang (ESC_FUZZ=ON, in
# build-fuzz/) and runs each for SECONDS on a work copy of its committed seed
# corpus (tests/fuzz/corpus/<target>; new inputs stay in build-fuzz/corpus).
#
#   tests/fuzz/run.sh [--if-clang] [SECONDS]     default 60 s per target
#   make fuzz FUZZ_SECONDS=3600                   a long run
#
# --if-clang: print SKIPPED and exit 0 when clang or its libFuzzer is missing
# (make test uses it; a fuzzer that cannot be built is never counted as run).
# A crash, leak or sanitizer report fails the run; the input is kept in
# build-fuzz/ (crash-*, leak-*) and printed as `reproduce with: ...`.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
if_clang=0
if [[ ${1:-} == --if-clang ]]; then
    if_clang=1
    shift
fi
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "run.sh: SECONDS must be a number" >&2; exit 2; }
out=${ESC_FUZZ_BUILD:-$src/build-fuzz}

skip() {
    echo "fuzz: SKIPPED ($*)"
    exit 0
}
probe_clang() {
    command -v clang >/dev/null 2>&1 || return 1
    local t
    t=$(mktemp -d)
    printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$t/p.c"
    clang -fsanitize=fuzzer "$t/p.c" -o "$t/p" >/dev/null 2>&1
    local rc=$?
    rm -rf "$t"
    return $rc
}
if ! probe_clang; then
    ((if_clang)) && skip "clang with libFuzzer is not installed"
    echo "run.sh: clang with libFuzzer (-fsanitize=fuzzer) is required" >&2
    exit 2
fi

CC=clang cmake -S "$src" -B "$out" -DESC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$out" -j 2 --target fuzz_request fuzz_reply >/dev/null

failed=0
for t in fuzz_request fuzz_reply; do
    work=$out/corpus/$t
    mkdir -p "$work"
    cp -n "$src/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
    echo "fuzz: $t for ${seconds} s (corpus $work)"
    if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "./bin/$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=1024 \
        -print_final_stats=1 "$work" >"$out/$t.log" 2>&1); then
        failed=1
        echo "fuzz: $t FAILED; last lines of $out/$t.log:" >&2
        tail -n 40 "$out/$t.log" >&2
        art=$(grep -o "Test unit written to [^ ]*" "$out/$t.log" | tail -n 1 | sed 's/Test unit written to //')
        [[ -n $art ]] && echo "reproduce with: (cd $out && ./bin/$t $art)" >&2
    else
        grep -E "^stat::number_of_executed_units|^Done" "$out/$t.log" | tr '\n' ' '
        echo
    fi
done
exit $failed
