#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo_gateway.sh - a sale through escrow-gateway, end to end, on this
# machine: `make demo DEMO_MODE=gateway` (or ESC_BIN=build/bin
# tests/support/demo_gateway.sh). A local cluster (tests/support/cluster.sh:
# private PostgreSQL, escrow-coordinator, 2 nodes), a shop with its key
# (escrowctl tenant create, key create), a certificate made with openssl,
# escrow-gateway on HTTPS; then one reserve with curl (shown), and
# ESC_DEMO_BUYERS buyers (default 1,500) for ESC_DEMO_TOTAL units (default
# 1,000) from ESC_DEMO_THREADS (16) Python threads with nothing but the
# standard library (examples/gateway/checkout.py); finally the books from
# PostgreSQL, escrowctl check and the gateway's request counts. Exits
# non-zero unless exactly the stock was sold and the books balance.
# Knobs: ESC_DEMO_DIR (logs; default a fresh directory under /tmp, removed
# after a good run).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)

total=${ESC_DEMO_TOTAL:-1000}
buyers=${ESC_DEMO_BUYERS:-1500}
threads=${ESC_DEMO_THREADS:-16}
item=flash-tee
for b in escrow-gateway escrow-coordinator escrow-segment escrowctl; do
    [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}' (build first: make demo DEMO_MODE=gateway)"
done
dir=${ESC_DEMO_DIR:-}
own_dir=0
if [[ -z $dir ]]; then
    dir=$(mktemp -d /tmp/escrow-demo-gateway.XXXXXX)
    own_dir=1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "escrow demo (gateway): $buyers buyers over HTTPS for $total units; logs in $dir"

esc_step "1/6 a local cluster: PostgreSQL (fsync on), escrow-coordinator, 2 segment nodes"
esc_cluster_start "$dir/cluster" --nodes 2
echo "ESCROW_DSN=$ESCROW_DSN  ESCROW_COORDINATOR=$ESCROW_COORDINATOR"

esc_step "2/6 a shop, its key, an item; a certificate for 127.0.0.1 (openssl)"
esc_ctl tenant create shop-1
esc_ctl key create shop-1 >"$dir/shop-1.key"
esc_ctl item create shop-1 "$item" --total "$total" --segments 4 --hold-ttl-ms 30000
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$dir/gateway.key" -out "$dir/gateway.crt" 2>/dev/null

esc_step "3/6 escrow-gateway on HTTPS"
port=$(esc_free_port)
metrics=$(esc_free_port)
url=https://127.0.0.1:$port
esc_spawn "$dir/gateway.log" "$ESC_BIN/escrow-gateway" --coordinator "$ESCROW_COORDINATOR" \
    --routes "$ESC_CLUSTER_PUBLISH" --dsn "$ESCROW_DSN" --listen "127.0.0.1:$port" \
    --tls-cert "$dir/gateway.crt" --tls-key "$dir/gateway.key" --metrics "127.0.0.1:$metrics"
gw_pid=$ESC_SPAWN_PID
ready() {
    grep -q GW-READY "$dir/gateway.log"
}
esc_wait_for 60 ready || { tail "$dir/gateway.log" >&2; esc_fail "escrow-gateway did not get ready"; }
grep GW-READY "$dir/gateway.log"

esc_step "4/6 one checkout with curl: reserve (Idempotency-Key), the same again (a replay), confirm"
reserve() {
    curl -sS -i --cacert "$dir/gateway.crt" -H "Authorization: Bearer $(cat "$dir/shop-1.key")" \
        -H "Idempotency-Key: order-1" -d "{\"item\":\"$item\",\"buyer\":\"alice\",\"qty\":1}" \
        "$url/v1/holds" | tr -d '\r' | grep -E '^(HTTP|Idempotent|Location)|^\{'
}
echo "\$ curl --cacert gateway.crt -H 'Authorization: Bearer <key>' -H 'Idempotency-Key: order-1' \\"
echo "       -d '{\"item\":\"$item\",\"buyer\":\"alice\",\"qty\":1}' $url/v1/holds"
reserve | tee "$dir/curl.out"
echo "\$ (the same request again)"
reserve
hold=$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$dir/curl.out" | head -n 1)
curl -sS --cacert "$dir/gateway.crt" -H "Authorization: Bearer $(cat "$dir/shop-1.key")" \
    -X POST "$url/v1/holds/$hold/confirm"
echo

esc_step "5/6 the sale: $buyers buyers on $threads Python threads (standard library), each reserves 1 and confirms"
PYTHONPATH="$src/examples/gateway" python3 "$src/examples/gateway/checkout.py" "$url" \
    "$dir/shop-1.key" "$dir/gateway.crt" "$item" "$buyers" "$threads" | tee "$dir/sale.out"

esc_step "6/6 the books from PostgreSQL, escrowctl check, the gateway's answers"
sold=$(esc_psql "SELECT sum(sold) FROM segments WHERE item_id = '$item'")
held=$(esc_psql "SELECT sum(held) FROM segments WHERE item_id = '$item'")
avail=$(esc_psql "SELECT sum(available) FROM segments WHERE item_id = '$item'")
echo "RESULT total=$total sold=$sold held=$held available=$avail oversold=$((sold > total ? sold - total : 0))"
check_rc=0
esc_ctl check || check_rc=$?
curl -sS "http://127.0.0.1:$metrics/metrics" | grep '^escrow_gateway_requests_total' || true
gw_rc=0
esc_node_stop "$gw_pid" || gw_rc=$?
esc_cluster_stop "$dir/cluster" >/dev/null || true
if ((sold != total || held != 0 || check_rc != 0 || gw_rc != 0)); then
    echo "demo FAILED: sold=$sold of $total, held=$held, check exit $check_rc, gateway exit $gw_rc (logs in $dir)" >&2
    exit 1
fi
((own_dir)) && rm -rf "$dir"
echo "demo OK (gateway): $total of $total sold over HTTPS, nothing oversold, the books balance"
