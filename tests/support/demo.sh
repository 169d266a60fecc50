#!/usr/bin/env bash
# demo.sh - a flash sale, end to end, on this machine: a private PostgreSQL,
# one segment node, 100,000 buyers after 10,000 units; then the books are
# checked. Exits non-zero unless nothing was oversold and conservation holds.
#
# Builds nothing: ESC_BIN must name the directory with escrow-segment,
# escrowctl and escrow-load (`make demo` does all of it). Knobs, with their
# defaults: ESC_DEMO_TOTAL=10000 ESC_DEMO_SEGMENTS=4 ESC_DEMO_BUYERS=100000
# ESC_DEMO_CONCURRENCY=1000 ESC_DEMO_LOAD_TTL_MS=2000 ESC_DEMO_LOAD_TIMEOUT_S=900
# ESC_DEMO_DIR (logs; default a fresh directory under /tmp, kept afterwards).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

total=${ESC_DEMO_TOTAL:-10000}
segments=${ESC_DEMO_SEGMENTS:-4}
buyers=${ESC_DEMO_BUYERS:-100000}
concurrency=${ESC_DEMO_CONCURRENCY:-1000}
# The item's own hold TTL is 30 s, what a shop would give a checkout. The load
# asks for 2 s holds instead (--ttl-ms): 10% of its buyers abandon their hold,
# and with 30 s those units would still be parked in holds when the sale ends
# (the whole run takes well under 30 s), so the demo would end "sold out"
# with units that nobody pays for. With 2 s the abandoned holds expire during
# the run, the node's sweeper returns the units, and later buyers buy them:
# the full life of a unit (held -> expired -> held again -> converted) is
# exercised and the sale ends with sold == total. Buyers who confirm do so
# long before 2 s, so the short TTL costs them nothing.
load_ttl_ms=${ESC_DEMO_LOAD_TTL_MS:-2000}
load_timeout_s=${ESC_DEMO_LOAD_TIMEOUT_S:-900}
tenant=shop-1
item=flash-tee

for b in escrow-segment escrowctl escrow-load; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}' (build first: make demo)"
done
# A directory the caller named is kept; one made here is removed after a
# successful run (kept after a failure, for the logs).
dir=${ESC_DEMO_DIR:-}
own_dir=0
if [[ -z $dir ]]; then
    dir=$(mktemp -d /tmp/escrow-demo.XXXXXX)
    own_dir=1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "escrow demo: $buyers buyers, $concurrency at a time, for $total units in $segments segments"
echo "logs in $dir"

esc_step "1/8 starting a private PostgreSQL (fsync on)"
esc_pg_start
echo "ESCROW_DSN=$ESCROW_DSN"

esc_step "2/8 escrowctl migrate"
esc_ctl migrate

esc_step "3/8 escrowctl item create $tenant $item --total $total --segments $segments"
esc_ctl item create "$tenant" "$item" --total "$total" --segments "$segments" --node n1 \
    --max-per-order 5 --hold-ttl-ms 30000

esc_step "4/8 starting segment node n1"
endpoint="tcp://127.0.0.1:$(esc_free_port)"
esc_node_start n1 "$endpoint" "$dir/n1.log"
node_pid=$ESC_NODE_PID
echo "n1 (pid $node_pid) listens on $endpoint"

esc_step "5/8 the sale: escrow-load, 70% confirm / 20% release / 10% abandon, holds of ${load_ttl_ms} ms"
load_rc=0
timeout "$load_timeout_s" "$ESC_BIN/escrow-load" --endpoint "$endpoint" --tenant "$tenant" \
    --item "$item" --buyers "$buyers" --concurrency "$concurrency" --ttl-ms "$load_ttl_ms" \
    --dsn "$ESCROW_DSN" 2>&1 | tee "$dir/load.out" || load_rc=${PIPESTATUS[0]}
if ((load_rc == 124)); then
    esc_fail "escrow-load did not finish within $load_timeout_s s"
elif ((load_rc > 128)); then
    esc_fail "escrow-load died of signal $((load_rc - 128))"
elif ((load_rc != 0)); then
    echo "note: escrow-load exited $load_rc"
fi

esc_step "6/8 waiting up to $((load_ttl_ms / 1000 + 5)) s for abandoned holds to expire"
no_units_held() {
    [[ $(esc_psql "SELECT COALESCE(sum(held), 0) FROM segments") == 0 ]]
}
if esc_wait_for $((load_ttl_ms / 1000 + 5)) no_units_held; then
    echo "no units are held any more"
else
    echo "still held: $(esc_psql "SELECT sum(held) FROM segments") units (the check below still applies)"
fi

esc_step "7/8 escrowctl status $tenant, escrowctl check"
esc_ctl status "$tenant"
check_rc=0
esc_ctl check | tee "$dir/check.out" || check_rc=${PIPESTATUS[0]}

esc_step "8/8 stopping node n1 and PostgreSQL"
node_rc=0
esc_node_stop "$node_pid" || node_rc=$?
esc_pg_stop

result=$(grep '^RESULT' "$dir/load.out" | tail -n 1 || true)
echo
echo "load:  ${result:-<no RESULT line>}"
echo "check: $(tail -n 1 "$dir/check.out") (exit $check_rc)"
echo "node:  exit $node_rc after SIGTERM"
failed=0
if [[ -z $result ]]; then
    echo "FAIL: escrow-load printed no RESULT line" >&2
    failed=1
fi
for want in oversold=0 conservation=ok; do
    if [[ -n $result && ! $result =~ (^|[[:space:],])$want([[:space:],]|$) ]]; then
        echo "FAIL: the RESULT line lacks $want" >&2
        failed=1
    fi
done
if ((check_rc != 0)); then
    echo "FAIL: escrowctl check exited $check_rc" >&2
    failed=1
fi
if ((node_rc != 0)); then
    echo "FAIL: the node did not shut down cleanly (exit $node_rc); see $dir/n1.log" >&2
    tail -n 20 "$dir/n1.log" >&2
    failed=1
fi
if ((failed)); then
    echo "demo FAILED (logs in $dir)" >&2
    exit 1
fi
if ((own_dir)); then
    rm -rf "$dir"
    echo "demo OK: nothing oversold, every unit accounted for"
else
    echo "demo OK: nothing oversold, every unit accounted for (logs in $dir)"
fi
