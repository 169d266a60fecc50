#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - the chaos suite: a real cluster under a seeded fault
# schedule, recorded histories, chaos/check.py. See chaos/README.md.
#
#   chaos/run.sh [--seed=N] [--long] [--workload NAME[,NAME]] [--seconds S]
#                [--dir DIR] [--keep] [--no-rogue]
#   chaos/run.sh --regressions     every seed in chaos/regressions.txt, CI tier
#
# CI tier (no options): 3 phases x 60 s (flash+tenant, cart+retry,
# skew+expiry), >= 15 faults each, every fault kind, the rogue client during
# the flash sale; ~8 minutes. --long: 300 s per phase, >= 100 faults.
# Environment: ESC_BIN (escrow-coordinator, escrow-segment, escrowctl;
# default build/bin), ESC_CHAOS_CLIENT (chaos_client; default
# build/tests/chaos_client). Exit 0 when every figure is met and the checker
# found nothing, 1 otherwise (the summary says why); always prints
# "reproduce with --seed=N".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)
export ESC_BIN=${ESC_BIN:-$src/build/bin}
export ESC_CHAOS_CLIENT=${ESC_CHAOS_CLIENT:-$src/build/tests/chaos_client}
for b in "$ESC_BIN/escrow-coordinator" "$ESC_BIN/escrow-segment" "$ESC_BIN/escrowctl" \
    "$ESC_CHAOS_CLIENT"; do
    [[ -x $b ]] || { echo "chaos: $b missing (build with -DESC_TESTS=ON first)" >&2; exit 1; }
done
# The driver is the process group leader of everything it starts (each
# daemon in a group of its own); INT/TERM reach it and it cleans up, and a
# detached watchdog cleans up if it is killed outright.
if [[ ${1:-} == --regressions ]]; then
    # The seeds that once found a violation, one CI-tier run each; any
    # failure fails the whole (each prints its own summary and seed).
    seeds=$(grep -E '^[0-9]+ ' "$here/regressions.txt" | awk '{print $1}')
    failed=()
    for seed in $seeds; do
        echo "=== regression seed $seed"
        python3 "$here/chaos.py" --seed="$seed" || failed+=("$seed")
    done
    if ((${#failed[@]} > 0)); then
        echo "REGRESSIONS FAIL: ${failed[*]} (of $(echo $seeds))"
        exit 1
    fi
    echo "REGRESSIONS PASS: $(echo $seeds)"
    exit 0
fi
exec python3 "$here/chaos.py" "$@"
