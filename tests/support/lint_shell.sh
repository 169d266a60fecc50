#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# lint_shell.sh - the shell lint of `make test` (ctest shell_lint, label unit).
#
#   tests/support/lint_shell.sh [SOURCE_DIR]     default: two levels above this file
#
# Over every shell script of the suite (tests/**/*.sh, chaos/*.sh):
#   1. bash -n: it parses.
#   2. No stale wait condition. esc_wait_for (tests/support/lib.sh) runs its
#      command again on every try, but the command's words are expanded once,
#      by the caller: `esc_wait_for 5 test "$(itest_q ...)" = down` runs the
#      query once and re-tests that answer for 5 s. So a line that calls
#      esc_wait_for (or wait_value, which evals one string) holds no "$(" and
#      no backquote at all (arithmetic "$((" is fine), and esc_wait_for does
#      not run test or [ on values (=, -eq, -z ...: decided before the wait
#      starts; file tests such as -s are fine). Put the condition in a
#      function, or use esc_wait_sql; a fixed argument (a pid) goes into a
#      variable first; a failure message that needs "$(" goes on the next
#      line, after "||". Lines continued with a backslash count as one.
#   3. No `| grep -q` (nor -qx, -qE ...). Every script runs with pipefail;
#      grep -q exits at its first match, and a writer still writing then dies
#      of SIGPIPE, so the pipeline fails (141) now and then, on a fast
#      machine more often: `cat a b | grep -q x` failed CI with x in both.
#      Give grep the files itself, or write `| grep x >/dev/null` (grep
#      reads to the end).
#   4. shellcheck -S error, when shellcheck is installed (.ci/packages.txt
#      lists it for CI and make deps).
# Before the tree, rules 2 and 3 check themselves on lines it must refuse and lines it
# must accept, so a broken rule cannot pass everything.
# Exit 0: clean; 1: FILE:LINE: reasons on stderr.
set -euo pipefail

src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

# Rule 2 over the files given; prints FILE:LINE: reason per offence, exits 1
# if there is any.
stale_waits() {
    awk '
    function offend(why) {
        printf "%s:%d: %s\n", FILENAME, start, why
        bad++
    }
    function check(text,    s) {
        if (text ~ /^[ \t]*#/) return
        if (text !~ /(^|[ \t;&|({!])(esc_wait_for|wait_value)[ \t]/) return
        if (text ~ /(esc_wait_for|wait_value)[ \t]*\(\)/) return # the definition
        s = text
        gsub(/\$\(\(/, "", s) # arithmetic is evaluated once on purpose (a deadline)
        if (index(s, "$(") > 0 || index(text, "`") > 0) {
            offend("stale wait condition: \"$(\" or a backquote on a wait line is expanded " \
                   "once, before the wait starts; put the condition in a function (or use " \
                   "esc_wait_sql), a fixed value in a variable, a failure message on the " \
                   "next line")
            return
        }
        if (text ~ /esc_wait_for[ \t]+[^ \t]+[ \t]+(test|\[)[ \t]/ &&
            (text ~ /[ \t](=|==|!=|-eq|-ne|-lt|-le|-gt|-ge)[ \t]/ ||
             text ~ /(test|\[)[ \t]+(!?[ \t]*)(-z|-n)[ \t]/)) {
            offend("stale wait condition: test compares values expanded once, before the " \
                   "wait starts; put the condition in a function (or use esc_wait_sql)")
        }
    }
    FNR == 1 { if (acc != "") check(acc); acc = "" }
    {
        if (acc == "") start = FNR
        line = $0
        if (line ~ /\\$/) { acc = acc substr(line, 1, length(line) - 1) " "; next }
        check(acc line)
        acc = ""
    }
    END { if (acc != "") check(acc); exit bad > 0 }
    ' "$@"
}

# Rule 3 over the files given: FILE:LINE: reason per offence, exit 1 if any.
early_grep() {
    awk '
    $0 !~ /^[ \t]*#/ && $0 ~ /\|[ \t]*grep[ \t]+-[a-zA-Z]*q/ {
        printf "%s:%d: grep -q reading a pipe: under pipefail the writer can die of SIGPIPE " \
               "after the match and fail the line; give grep the file, or use " \
               "\"| grep PATTERN >/dev/null\"\n", FILENAME, FNR
        bad++
    }
    END { exit bad > 0 }
    ' "$@"
}

# Rule 2 on known lines: each of BAD must be refused, each of GOOD accepted.
self_test() {
    local dir rc=0 line out
    dir=$(mktemp -d /tmp/escrow-lint.XXXXXX)
    local bad=(
        'esc_wait_for 5 test "$(itest_q "SELECT state FROM nodes")" = down || esc_fail x'
        'esc_wait_for 10 gone "$(region_get COORD_PID us)" ||'
        'esc_wait_for 5 test `q` = 1'
        'if esc_wait_for 5 is_up "$(cat f)"; then'
        'esc_wait_for 5 test "$state" = down'
        'esc_wait_for 5 [ "$n" -ge 3 ]'
        'esc_wait_for 5 test -n "$x"'
        'wait_value 10 "$(metric 1 x)" 1'
        'esc_wait_for 30 has_n f 4 || esc_fail "got $(cat f)"'
        $'esc_wait_for 5 test \\\n    "$(q)" = x'
    )
    local good=(
        'esc_wait_for 30 has_n "$f" 4 || esc_fail "no"'
        'esc_wait_for $((TTL_MS / 1000 + 10)) held_zero || esc_fail "held"'
        'esc_wait_for 60 test -s "$ITEST_DIR/oks.txt" ||'
        $'esc_wait_for 30 grep -q x "$f" ||\n    esc_fail "$(cat "$f")"'
        'esc_wait_sql 30 "SELECT state FROM nodes" down'
        '# esc_wait_for 5 test "$(q)" = x is what not to write'
        'esc_wait_for() {'
        'wait_value 10 "metric $C_PORT x" 1'
        'x=$(esc_wait_for_nothing "$(q)")'
    )
    for line in 'cat a b | grep -q x || esc_fail y' 'ldd f | grep -qE "x|y"' 'p |grep -cq x'; do
        printf '%s\n' "$line" >"$dir/t.sh"
        if out=$(early_grep "$dir/t.sh"); then
            echo "lint_shell: self-test: not refused: $line" >&2
            rc=1
        fi
    done
    for line in 'grep -q x a b || esc_fail y' 'ldd f | grep x >/dev/null' '# cat a | grep -q x'; do
        printf '%s\n' "$line" >"$dir/t.sh"
        if ! out=$(early_grep "$dir/t.sh"); then
            echo "lint_shell: self-test: refused a good line: $line ($out)" >&2
            rc=1
        fi
    done
    for line in "${bad[@]}"; do
        printf '%s\n' "$line" >"$dir/t.sh"
        if out=$(stale_waits "$dir/t.sh"); then
            echo "lint_shell: self-test: not refused: $line" >&2
            rc=1
        fi
    done
    for line in "${good[@]}"; do
        printf '%s\n' "$line" >"$dir/t.sh"
        if ! out=$(stale_waits "$dir/t.sh"); then
            echo "lint_shell: self-test: refused a good line: $line ($out)" >&2
            rc=1
        fi
    done
    rm -rf "$dir"
    return "$rc"
}

self_test || { echo "lint_shell: a rule is broken (self-test)" >&2; exit 1; }

cd "$src"
mapfile -t files < <(find tests chaos -name '*.sh' -type f | sort)
((${#files[@]} > 0)) || { echo "lint_shell: no shell scripts under $src/tests or $src/chaos" >&2; exit 1; }
rc=0
for f in "${files[@]}"; do
    bash -n "$f" || { echo "$f: does not parse (bash -n)" >&2; rc=1; }
done
# this file's own examples (the self-test) are not calls
waiters=()
for f in "${files[@]}"; do
    [[ $f == tests/support/lint_shell.sh ]] || waiters+=("$f")
done
if ! out=$(stale_waits "${waiters[@]}"); then
    echo "$out" >&2
    rc=1
fi
if ! out=$(early_grep "${waiters[@]}"); then
    echo "$out" >&2
    rc=1
fi
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -S error "${files[@]}" >&2 || rc=1
    sc="shellcheck -S error"
else
    sc="shellcheck not installed: skipped"
fi
if ((rc == 0)); then
    echo "lint_shell: ${#files[@]} scripts: bash -n, no stale wait condition, no grep -q on a pipe, $sc"
fi
exit "$rc"
