#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_systemd_units.sh - the systemd units of the Debian packages
# (debian/escrow-{segment,coordinator,gateway}.service) pass
# `systemd-analyze verify` without a word of complaint, and each keeps what
# docs/packages.md promises: the escrow user, the config file, SIGHUP on
# reload, restart on failure, the sandbox.
#
#   check_systemd_units.sh SRC_DIR BIN_DIR
#
# The units name /usr/bin/escrow-*; verify insists that the command exists,
# so it checks copies whose ExecStart names the binary in BIN_DIR instead
# (the installed units are verified unchanged by tests/integration/package.sh).
# Exit 77 (skipped) only when systemd-analyze is missing.
set -euo pipefail

src=${1:?usage: check_systemd_units.sh SRC_DIR BIN_DIR}
bin=${2:?usage: check_systemd_units.sh SRC_DIR BIN_DIR}
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "SKIP: systemd-analyze is missing (Debian: apt-get install systemd)"
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
    echo "FAIL: $*" >&2
    failed=1
}

# Every line of WANT must be a line of UNIT, exactly.
check_lines() {
    local unit=$1 line
    shift
    for line in "$@"; do
        grep -qxF -- "$line" "$unit" || fail "$(basename "$unit") lacks the line '$line'"
    done
}

for d in segment coordinator gateway; do
    unit=$src/debian/escrow-$d.service
    [[ -f $unit ]] || {
        fail "$unit is missing"
        continue
    }
    [[ -x $bin/escrow-$d ]] || {
        fail "no escrow-$d in $bin (build first)"
        continue
    }
    # shellcheck disable=SC2016 # $MAINPID is for systemd, literally
    check_lines "$unit" \
        "ExecStart=/usr/bin/escrow-$d --config /etc/escrow/$d.ini" \
        'User=escrow' 'Group=escrow' \
        'ExecReload=/bin/kill -HUP $MAINPID' \
        'Restart=on-failure' \
        'NoNewPrivileges=yes' 'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' \
        'ConfigurationDirectory=escrow' "StateDirectory=escrow-$d" \
        'WantedBy=multi-user.target'
    nofile=$(sed -n 's/^LimitNOFILE=//p' "$unit")
    if [[ ! $nofile =~ ^[0-9]+$ ]] || ((nofile < 65536)); then
        fail "escrow-$d.service: LimitNOFILE='$nofile', want a number >= 65536"
    fi
    grep -qxF 'u escrow - "escrow daemons" - -' "$src/debian/escrow-$d.sysusers" ||
        fail "debian/escrow-$d.sysusers does not declare the escrow user"
    sed "s|^ExecStart=/usr/bin/escrow-$d |ExecStart=$bin/escrow-$d |" "$unit" >"$tmp/escrow-$d.service"
done

out=$(cd "$tmp" && systemd-analyze verify ./escrow-*.service 2>&1) || fail "systemd-analyze verify exited non-zero"
if [[ -n $out ]]; then
    echo "$out" >&2
    fail "systemd-analyze verify complained (above)"
fi
((failed == 0)) || exit 1
echo "OK: escrow-segment, escrow-coordinator and escrow-gateway units verify cleanly"
