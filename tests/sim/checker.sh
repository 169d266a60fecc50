#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# checker.sh SIM DIR - the separate history checker agrees with the
# simulator: histories and final dumps of every 100th seed of the CI range
# (same seeds, same runs as `sim`: a seed does not depend on the others)
# are written to DIR and must all pass check_history.py.
set -eu
sim=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"
"$sim" --seeds 1..2000 --steps 2000 --history "$dir" --every 100 | tail -1
python3 "$here/check_history.py" --dir "$dir"
