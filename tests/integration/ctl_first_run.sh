#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctl_first_run.sh - escrowctl's answers to a new user:
#   (a) `escrowctl CMD --help` shows that command's entries of the synopsis
#       and exits 0, for every command the synopsis lists (read from
#       `escrowctl --help`, so a new command is covered as it is added);
#       an unknown command with --help exits 2;
#   (b) a database without the schema: every command names `escrowctl migrate`;
#   (c) an unknown tenant and an unknown item get the same kind of answer
#       ("no tenant T" / "no item T/I", the coordinator's UNKNOWN_ITEM) and
#       the same exit code (1), from every command that takes them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/shard_lib.sh"

itest_begin ctl_first_run
work=$ITEST_DIR
# expect_rc RC ARGS...: run escrowctl, stdout in $work/out, stderr in $work/err
expect_rc() {
    esc_ctl_expect "$work" "$@"
}

esc_step "(a) every command's --help"
esc_ctl --help >"$work/full"
# the command words of each entry: "  item create TENANT ..." -> "item create"
# (two words when one space apart: a wider gap starts the description)
mapfile -t cmds < <(grep -oE '^  [a-z][a-z-]*( [a-z][a-z-]*( |$))?' "$work/full" |
    sed -E 's/^  //; s/ $//' | sort -u)
((${#cmds[@]} >= 29)) || esc_fail "only ${#cmds[@]} commands found in escrowctl --help"
for c in "${cmds[@]}" item quota key tenant; do
    # shellcheck disable=SC2086
    expect_rc 0 $c --help
    [[ -s $work/out ]] || esc_fail "escrowctl $c --help printed nothing"
    cmp -s "$work/out" "$work/full" && esc_fail "escrowctl $c --help reprints the whole help"
    grep -q "^  $c" "$work/out" || esc_fail "escrowctl $c --help does not show '$c': $(cat "$work/out")"
done
echo "${#cmds[@]} commands, each with its own --help: ${cmds[*]}"
expect_rc 0 --dsn x --timeout-ms 50 holds --help
grep -q '^  holds TENANT --buyer' "$work/out" || esc_fail "option values before the command were not skipped"
expect_rc 2 frobnicate --help
grep -q "no command 'frobnicate'" "$work/err" || esc_fail "unknown command: $(cat "$work/err")"

esc_step "(b) a database without the schema"
esc_psql "CREATE DATABASE bare"
BARE="host=127.0.0.1 port=$ESC_PG_PORT dbname=bare user=$ESC_PG_USER"
for c in status check nodes "holds t1 --buyer b" "events t1" "transfers" "key list" \
    "item create t1 x --total 5" "release $(((1 << 40) + 1))"; do
    # shellcheck disable=SC2086
    rc=0
    esc_ctl --dsn "$BARE" $c >"$work/out" 2>"$work/err" || rc=$?
    ((rc != 0)) || esc_fail "escrowctl $c on a database without the schema exited 0"
    grep -q "run 'escrowctl migrate'" "$work/err" ||
        esc_fail "escrowctl $c on a database without the schema: $(cat "$work/err")"
done

esc_step "(c) unknown tenant and unknown item: the same kind of answer, exit 1"
esc_ctl item create t1 tee --total 5 >/dev/null
for c in "status %s" "transfers %s" "consumers %t" "holds %t --buyer b%i" "events %t%i" "key list %t"; do
    for which in tenant item; do
        [[ $which == item && $c == *"%t"* && $c != *"%i"* ]] && continue # takes no item
        if [[ $which == tenant ]]; then
            args=${c//%s/nobody tee}
            args=${args//%t/nobody}
            args=${args//%i/}
            want="no tenant nobody"
        else
            args=${c//%s/t1 nope}
            args=${args//%t/t1}
            args=${args//%i/ --item nope}
            want="no item t1/nope"
        fi
        # shellcheck disable=SC2086
        expect_rc 1 $args
        itest_eq "$(cat "$work/err")" "escrowctl: $want" "escrowctl $args"
    done
done
shard_coord_start
for args in "item pause nobody tee" "item pause t1 nope" "item restock nobody tee 3" \
    "item restock t1 nope 3"; do
    # shellcheck disable=SC2086
    expect_rc 1 --coordinator "$SHARD_COORD_URL" $args
    grep -q "UNKNOWN_ITEM" "$work/err" || esc_fail "escrowctl $args: $(cat "$work/err")"
done
expect_rc 0 status t1 tee
itest_pass
