#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gateway.sh - escrow-gateway with curl against a real cluster (PostgreSQL,
# coordinator, 2 nodes), over HTTPS with a certificate made here: the probes
# and the OpenAPI document; credentials (none, malformed, unknown, an admin
# key, a revoked key); reserve with its Idempotency-Key (201, 200 replay with
# the same hold, 422 with another body, 400 naming the field); get, extend
# (once; a keyed repeat is a replay), confirm (part, then a conflicting qty),
# release; 404/405/413; sold_out and try_later with Retry-After; a cart (201,
# replay, a failing line named and its other line released); the event feed
# as SSE (cursor commit, resume after the cursor and after Last-Event-ID);
# TLS refusals; the per-route metrics; the per-tenant rate limit (429); and
# every answer of the run validated against client/gateway/openapi.json;
# a spent cart key (409 cart_ended); the metrics port's /readyz.
set -euo pipefail
source "$(dirname "$0")/gateway_lib.sh"

gw_begin gateway --nodes 2
esc_ctl item create shop-1 tee --total 10 --segments 2 --max-per-order 3 --hold-ttl-ms 600000 >/dev/null
esc_ctl item create shop-1 last --total 1 --segments 1 >/dev/null
esc_ctl item create shop-1 hat --total 5 --segments 1 >/dev/null
metrics_port=$(esc_free_port)
gw_start --metrics "127.0.0.1:$metrics_port" --body-bytes-max 4096

esc_step "probes and the OpenAPI document (no credential needed)"
gw_expect 200 GET /healthz
gw_expect 200 GET /readyz
# the metrics port's probes, as the other daemons': ready once the key table was read
metrics_probe() { # $1 path, $2 the body's start
    [[ $(curl -sS --max-time 10 "http://127.0.0.1:$metrics_port/$1") == "$2"* ]]
}
esc_wait_for 30 metrics_probe healthz ok || esc_fail "metrics /healthz is not ok"
esc_wait_for 30 metrics_probe readyz ready || esc_fail "metrics /readyz is not ready"
# a gateway that cannot read the key table (no database there) is alive, not ready
nodb_metrics=$(esc_free_port)
esc_spawn "$GW_DIR/nodb.log" "$ESC_BIN/escrow-gateway" --coordinator "$ESCROW_COORDINATOR" \
    --dsn "host=127.0.0.1 port=$(esc_free_port) dbname=none connect_timeout=2" --plain-http on \
    --listen "127.0.0.1:$(esc_free_port)" --metrics "127.0.0.1:$nodb_metrics"
nodb_pid=$ESC_SPAWN_PID
nodb_probe() {
    [[ $(curl -sS --max-time 10 "http://127.0.0.1:$nodb_metrics/$1" 2>/dev/null) == "$2"* ]]
}
esc_wait_for 60 nodb_probe healthz ok ||
    esc_fail "no database: metrics /healthz: $(cat "$GW_DIR/nodb.log")"
esc_wait_for 30 nodb_probe readyz "not ready: the key table is not read yet" ||
    esc_fail "no database: metrics /readyz: $(curl -sS "http://127.0.0.1:$nodb_metrics/readyz")"
esc_node_stop "$nodb_pid" || true # its exit status is not what this step checks
gw_expect 200 GET /v1/openapi.json
python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1]) != json.load(open(sys.argv[2])))' \
    "$GW_BODY" "$ESC_SRC/client/gateway/openapi.json" || esc_fail "/v1/openapi.json is not client/gateway/openapi.json"

esc_step "credentials: 401 for none, malformed, unknown and revoked keys; 403 for an admin key"
good_key=$GW_KEY
GW_KEY=""
gw_expect 401 GET /v1/holds/1099511627777
GW_KEY="not-a-key"
gw_expect 401 GET /v1/holds/1099511627777
GW_KEY="esk_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
gw_expect 401 GET /v1/holds/1099511627777
esc_assert_eq "$(gw_field code)" unauthorized "code"
GW_KEY=$(esc_ctl admin-key create 2>/dev/null)
gw_eventually 403 GET /v1/holds/1099511627777
esc_assert_eq "$(gw_field code)" forbidden "code"
GW_KEY=$(esc_ctl key create shop-1 2>/dev/null)
gw_eventually 404 GET /v1/holds/1099511627777 # a valid key: the hold does not exist
second_id=$(echo "$GW_KEY" | cut -d_ -f2)
esc_ctl key revoke "$second_id" >/dev/null
revoked() {
    gw_req GET /v1/holds/1099511627777
    [[ $GW_STATUS == 401 ]]
}
esc_wait_for 30 revoked || esc_fail "a revoked key still works ($GW_STATUS)"
GW_KEY=$good_key

esc_step "reserve: Idempotency-Key required, 201, 200 replay, 422 mismatch, 400 naming the field"
gw_expect 400 POST /v1/holds '{"item":"tee","buyer":"b1","qty":1}'
esc_assert_eq "$(gw_field field)" Idempotency-Key "field"
gw_expect 400 POST /v1/holds '{"item":"tee","buyer":"b1","qty":0}' k1
esc_assert_eq "$(gw_field field)" qty "field"
gw_expect 400 POST /v1/holds '{"item":"tee","buyer":"b1","qty":1,"colour":"red"}' k1
esc_assert_eq "$(gw_field field)" colour "field"
gw_expect 400 POST /v1/holds '{"item":"tee",' k1
esc_assert_eq "$(gw_field field)" body "field"
gw_expect 201 POST /v1/holds '{"item":"tee","buyer":"b1","qty":2}' k1
h1=$(gw_field id)
esc_assert_eq "$(gw_field state)" held "state"
esc_assert_eq "$(gw_header Location)" "/v1/holds/$h1" "Location"
esc_assert_eq "$(gw_header Idempotent-Replayed)" "" "replay header on a new hold"
gw_expect 200 POST /v1/holds '{"item":"tee","buyer":"b1","qty":2}' k1
esc_assert_eq "$(gw_field id)" "$h1" "the replay's hold"
esc_assert_eq "$(gw_header Idempotent-Replayed)" true "replay header"
gw_expect 422 POST /v1/holds '{"item":"tee","buyer":"b1","qty":1}' k1
esc_assert_eq "$(gw_field code)" idempotency_mismatch "code"
gw_expect 422 POST /v1/holds '{"item":"tee","buyer":"b9","qty":4}' k-big
esc_assert_eq "$(gw_field code)" order_limit "code"
gw_expect 404 POST /v1/holds '{"item":"nope","buyer":"b1","qty":1}' k-nope
esc_assert_eq "$(gw_field code)" unknown_item "code"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds WHERE idempotency_key = 'k1'")" 1 "holds of k1"

esc_step "get, extend (once; a keyed repeat is a replay), confirm part, conflicting confirm, release"
gw_expect 200 GET "/v1/holds/$h1"
esc_assert_eq "$(gw_field qty)" 2 "qty"
gw_expect 200 POST "/v1/holds/$h1/extend" '{"ttl_ms":120000}'
esc_assert_eq "$(gw_field extended)" true "extended"
gw_expect 409 POST "/v1/holds/$h1/extend"
esc_assert_eq "$(gw_field code)" already_extended "code"
esc_assert_eq "$(gw_field hold.id)" "$h1" "the hold in the error"
gw_expect 200 POST "/v1/holds/$h1/extend" "" ext-1
esc_assert_eq "$(gw_header Idempotent-Replayed)" true "keyed extend repeat"
gw_expect 200 POST "/v1/holds/$h1/confirm" '{"qty":1}'
esc_assert_eq "$(gw_field state)/$(gw_field qty_sold)" converted/1 "partial confirm"
gw_expect 200 POST "/v1/holds/$h1/confirm" '{"qty":1}' # the same confirm again
gw_expect 409 POST "/v1/holds/$h1/confirm" '{"qty":2}'
esc_assert_eq "$(gw_field code)" conflict "code"
gw_expect 409 POST "/v1/holds/$h1/release"
esc_assert_eq "$(gw_field code)" not_held "code"
gw_expect 201 POST /v1/holds '{"item":"tee","buyer":"b2","qty":1}' k2
h2=$(gw_field id)
gw_expect 200 POST "/v1/holds/$h2/release"
esc_assert_eq "$(gw_field state)" cancelled "state"
gw_expect 400 POST "/v1/holds/$h2/release" '{"qty":1}'

esc_step "404, 405, 413"
gw_expect 404 GET /v1/holds/1099511627999
esc_assert_eq "$(gw_field code)" not_found "code"
gw_expect 400 GET /v1/holds/abc
esc_assert_eq "$(gw_field field)" id "field"
gw_expect 404 GET /v1/nothing
esc_assert_eq "$(gw_field code)" no_route "code"
gw_expect 405 DELETE "/v1/holds/$h1"
esc_assert_eq "$(gw_header Allow)" "GET, HEAD" "Allow on 405"
big=$(python3 -c 'print("{\"item\":\"" + "x" * 5000 + "\"}")')
gw_expect 413 POST /v1/holds "$big" k-big2

esc_step "sold_out (409) and try_later (503 with Retry-After)"
gw_expect 201 POST /v1/holds '{"item":"last","buyer":"b1","qty":1}' last-1
last=$(gw_field id)
gw_expect 503 POST /v1/holds '{"item":"last","buyer":"b2","qty":1}' last-2
esc_assert_eq "$(gw_field code)/$(gw_field retryable)" try_later/true "while the unit is held"
esc_assert_eq "$(gw_header Retry-After)" 1 "Retry-After"
gw_expect 200 POST "/v1/holds/$last/confirm"
sold_out() {
    gw_req POST /v1/holds '{"item":"last","buyer":"b3","qty":1}' last-3
    [[ $GW_STATUS == 409 ]]
}
esc_wait_for 30 sold_out || esc_fail "the sold item answers $GW_STATUS $GW_BODY"
esc_assert_eq "$(gw_field code)/$(gw_field retryable)" sold_out/false "once sold"

esc_step "a cart: 201, 200 replay, a failing line named and the other line released, then cart_ended"
gw_expect 201 POST /v1/carts '{"buyer":"c1","lines":[{"item":"tee","qty":1},{"item":"hat","qty":1}]}' cart-1
esc_assert_eq "$(gw_field holds.1.item)" hat "second hold"
gw_expect 200 POST /v1/carts '{"buyer":"c1","lines":[{"item":"tee","qty":1},{"item":"hat","qty":1}]}' cart-1
esc_assert_eq "$(gw_header Idempotent-Replayed)" true "cart replay"
gw_expect 409 POST /v1/carts '{"buyer":"c2","lines":[{"item":"hat","qty":1},{"item":"last","qty":1}]}' cart-2
esc_assert_eq "$(gw_field code)/$(gw_field line)" sold_out/1 "the failing line"
esc_assert_eq "$(esc_psql "SELECT state FROM holds WHERE idempotency_key = 'cart-2/hat'")" cancelled \
    "the cart's other line"
# that release spent the key: the same cart again is final for it (409 cart_ended)
gw_expect 409 POST /v1/carts '{"buyer":"c2","lines":[{"item":"hat","qty":1},{"item":"last","qty":1}]}' cart-2
esc_assert_eq "$(gw_field code)/$(gw_field retryable)" cart_ended/false "a spent cart key"
gw_expect 400 POST /v1/carts '{"buyer":"c3","lines":[{"item":"tee","qty":1},{"item":"hat"}]}' cart-3
esc_assert_eq "$(gw_field field)" "lines[1].qty" "field"

esc_step "the event feed: SSE, cursor commit, resume after the cursor and after Last-Event-ID"
# events of tee so far, in feed order
want=$(esc_psql "SELECT string_agg(event_id::text, ' ' ORDER BY txid, event_id) FROM outbox
                 WHERE tenant_id = 'shop-1' AND item_id = 'tee'")
read -ra ids <<<"$want"
((${#ids[@]} >= 6)) || esc_fail "expected at least 6 events of tee, got '${want}'"
stream() { # N consumer [curl args...]: the ids of the first N events a stream sends
    local n=$1 c=$2 line
    shift 2
    local seen=()
    coproc SSE { curl -sS -N --max-time 60 --cacert "$GW_CA" -H "Authorization: Bearer $GW_KEY" "$@" \
        "$GW_URL/v1/events?consumer=$c&item=tee" 2>/dev/null; }
    while ((${#seen[@]} < n)) && read -r line <&"${SSE[0]}"; do
        [[ $line == "id: "* ]] && seen+=("${line#id: }")
    done
    kill "$SSE_PID" 2>/dev/null || true
    wait "$SSE_PID" 2>/dev/null || true
    echo "${seen[*]}"
}
got=$(stream "${#ids[@]}" orders)
esc_assert_eq "$got" "$want" "a new consumer gets every event in order"
gw_expect 200 POST /v1/consumers/orders/cursor "{\"event_id\":\"${ids[2]}\"}"
esc_assert_eq "$(gw_field moved)" true "cursor moved"
gw_expect 200 POST /v1/consumers/orders/cursor "{\"event_id\":${ids[1]}}"
esc_assert_eq "$(gw_field moved)" false "an older event moves nothing"
esc_assert_eq "$(stream 1 orders)" "${ids[3]}" "after the committed cursor, the next event"
esc_assert_eq "$(stream 1 orders -H "Last-Event-ID: ${ids[4]}")" "${ids[5]}" "after Last-Event-ID"
gw_expect 404 POST /v1/consumers/nobody/cursor '{"event_id":"1"}'
gw_expect 400 POST /v1/consumers/orders/cursor '{"event_id":"x"}'
gw_expect 400 GET '/v1/events?item=tee'
esc_assert_eq "$(gw_field field)" consumer "field"
gw_expect 409 GET '/v1/events?consumer=orders&item=hat' # it was made with item=tee
esc_assert_eq "$(esc_psql "SELECT cursor_event_id FROM feed_consumers WHERE consumer = 'orders'")" \
    "${ids[2]}" "the committed cursor in the database"

esc_step "TLS: an unknown certificate authority and plain HTTP are refused"
rc=0
curl -sS -o /dev/null "$GW_URL/healthz" 2>/dev/null || rc=$?
esc_assert_eq "$rc" 60 "curl without the certificate (60: peer certificate cannot be verified)"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$GW_PORT/healthz" || true)
[[ $code != 200 ]] || esc_fail "plain HTTP answered 200 on the TLS port"

esc_step "metrics: requests by route and status, latency histograms"
metrics=$(curl -sS "http://127.0.0.1:$metrics_port/metrics")
grep -q '^escrow_gateway_requests_total{route="POST /v1/holds",status="201"} [1-9]' <<<"$metrics" ||
    esc_fail "no 201 count for POST /v1/holds"
grep -q '^escrow_gateway_requests_total{route="POST /v1/holds",status="422"} 2' <<<"$metrics" ||
    esc_fail "422 count of POST /v1/holds is not 2"
grep -q '^escrow_gateway_request_seconds_count{route="GET /v1/holds/{id}"} [1-9]' <<<"$metrics" ||
    esc_fail "no latency histogram for GET /v1/holds/{id}"
grep -q '^escrow_gateway_replays_total{route="POST /v1/holds"} 1$' <<<"$metrics" ||
    esc_fail "replays of POST /v1/holds are not 1"

esc_step "the per-tenant rate limit: 429 with Retry-After; the connection bound"
gw_stop || esc_fail "escrow-gateway did not stop cleanly"
gw_start --rate-tenant 1:1 --connections-max 2
# 20 requests on one keep-alive connection against 1 per second: 429s come,
# with Retry-After, on any machine that sends them in under 19 s
python3 - "$GW_URL" "$GW_KEY_FILE" "$GW_CA" "$h1" "$ESC_SRC/examples/gateway" <<'PY' ||
import sys
sys.path.insert(0, sys.argv[5])
from escrow_gateway import Client, EscrowError
c = Client(sys.argv[1], open(sys.argv[2]).read().strip(), cafile=sys.argv[3])
seen = {}
for _ in range(20):
    try:
        c.get(sys.argv[4])
        seen[200] = seen.get(200, 0) + 1
    except EscrowError as e:
        assert e.status == 429 and e.code == "rate_limited" and e.retry_after == 1, e
        seen[429] = seen.get(429, 0) + 1
print("RATE-LIMIT", seen)
sys.exit(0 if seen.get(429) and seen.get(200) else 1)
PY
    esc_fail "no 429 (or no 200 at all) in 20 requests at 1/s"
# two connections open: a third is not served until one of them closes
python3 - "$GW_PORT" "$GW_CA" <<'PY' || esc_fail "--connections-max 2 did not hold"
import socket, ssl, sys
port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)
def tls(timeout):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                        server_hostname="127.0.0.1", do_handshake_on_connect=False)
    s.settimeout(timeout)
    return s
a, b = tls(30), tls(30)
a.do_handshake(); b.do_handshake()
c = tls(2)
try:
    c.do_handshake()
    sys.exit("a third connection was served while two were open")
except (TimeoutError, socket.timeout):
    pass
c.close()
d = tls(30)
a.close()  # a slot frees: the next connection is served
d.do_handshake()
print("CONNECTIONS-MAX ok: the third waited, served once one closed")
PY
gw_stop || esc_fail "escrow-gateway did not stop cleanly"

esc_step "every answer of the run against the OpenAPI document"
gw_check_openapi 60
esc_ctl check >/dev/null || esc_fail "escrowctl check failed"
gw_pass
