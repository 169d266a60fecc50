#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gateway_lib.sh - what the escrow-gateway tests (gateway*.sh) share, on top of
# tests/support/lib.sh (its EXIT trap stops every process and the cluster).
#
# Environment: ESC_BIN (escrow-gateway, escrowctl, the daemons), ESC_SRC (the
# source tree). Functions:
#   gw_begin NAME [CLUSTER_ARGS...]
#       work dir $GW_DIR; a local cluster (esc_cluster_start: PostgreSQL,
#       coordinator, nodes); tenant shop-1 and its key ($GW_KEY_FILE, $GW_KEY);
#       a certificate for 127.0.0.1 made here with openssl ($GW_CA: the
#       certificate, which is its own CA; $GW_CERT_KEY its key)
#   gw_start [ARGS...]   escrow-gateway with TLS on a free port, recording every
#       answer (ESCROW_GATEWAY_RECORD=$GW_DIR/record.jsonl); waits for GW-READY;
#       sets GW_URL, GW_PID, GW_LOG, GW_PORT (GW_SAME_PORT=1: the last one's port)
#   gw_stop              SIGTERM, wait; returns the exit status (0 = clean)
#   gw_req METHOD PATH [BODY [IDEMPOTENCY_KEY]]
#       one request as shop-1; sets GW_STATUS (000: no HTTP answer), GW_BODY,
#       and the headers in $GW_DIR/headers
#   gw_expect STATUS METHOD PATH [BODY [KEY]]   gw_req, fail unless STATUS
#   gw_eventually STATUS METHOD PATH [BODY [KEY]]  gw_req again until STATUS (30 s;
#                        a key made a moment ago is known within about a second)
#   gw_field NAME        a field of GW_BODY (echo; "" when absent; nested: a.b)
#   gw_header NAME       a header of the last answer (echo; "" when absent)
#   gw_check_openapi MIN every recorded answer against client/gateway/openapi.json
#   gw_pass              "PASS NAME (N s)"
source "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"
ESC_SRC=${ESC_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

gw_begin() {
    GW_NAME=$1
    shift
    GW_T0=$SECONDS
    local b
    for b in escrow-gateway escrow-coordinator escrow-segment escrowctl; do
        [[ -x ${ESC_BIN:-}/$b ]] || esc_fail "no $b in ESC_BIN='${ESC_BIN:-}'"
    done
    GW_DIR=$(mktemp -d "/tmp/escrow-$GW_NAME.XXXXXX")
    esc_cluster_start "$GW_DIR/cluster" "$@"
    esc_on_exit '[[ -n ${GW_PASSED:-} && ${ESC_KEEP:-0} != 1 ]] && rm -rf "$GW_DIR" || echo "logs kept in $GW_DIR" >&2'
    esc_ctl tenant create shop-1 >/dev/null
    GW_KEY_FILE=$GW_DIR/shop-1.key
    esc_ctl key create shop-1 >"$GW_KEY_FILE" 2>/dev/null
    GW_KEY=$(cat "$GW_KEY_FILE")
    GW_CA=$GW_DIR/gateway.crt
    GW_CERT_KEY=$GW_DIR/gateway.key
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$GW_CERT_KEY" -out "$GW_CA" 2>"$GW_DIR/openssl.log" ||
        { cat "$GW_DIR/openssl.log" >&2; esc_fail "openssl could not make a certificate"; }
    GW_STARTS=0
}

_gw_ready() {
    grep -q 'GW-READY' "$GW_LOG" 2>/dev/null
}

gw_start() {
    [[ ${GW_SAME_PORT:-0} == 1 && -n ${GW_PORT:-} ]] || GW_PORT=$(esc_free_port)
    GW_STARTS=$((GW_STARTS + 1))
    GW_LOG=$GW_DIR/gateway-$GW_STARTS.log
    esc_spawn "$GW_LOG" env ESCROW_GATEWAY_RECORD="$GW_DIR/record.jsonl" "$ESC_BIN/escrow-gateway" \
        --coordinator "$ESCROW_COORDINATOR" --routes "$ESC_CLUSTER_PUBLISH" --dsn "$ESCROW_DSN" \
        --listen "127.0.0.1:$GW_PORT" --tls-cert "$GW_CA" --tls-key "$GW_CERT_KEY" "$@"
    GW_PID=$ESC_SPAWN_PID
    GW_URL=https://127.0.0.1:$GW_PORT
    if ! esc_wait_for 60 _gw_ready; then
        tail -n 20 "$GW_LOG" >&2
        esc_fail "escrow-gateway did not log GW-READY"
    fi
}

gw_stop() {
    esc_node_stop "$GW_PID"
}

gw_req() {
    local method=$1 path=$2 body=${3:-} idem=${4:-}
    local args=(-sS -o "$GW_DIR/body" -D "$GW_DIR/headers" -w '%{http_code}' --cacert "$GW_CA"
        -X "$method" -H "Authorization: Bearer $GW_KEY")
    [[ -n $idem ]] && args+=(-H "Idempotency-Key: $idem")
    [[ -n $body ]] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
    : >"$GW_DIR/body"
    GW_STATUS=$(curl "${args[@]}" "$GW_URL$path" 2>"$GW_DIR/curl.err") || GW_STATUS=000
    GW_BODY=$(cat "$GW_DIR/body")
}

gw_expect() {
    local want=$1
    shift
    gw_req "$@"
    [[ $GW_STATUS == "$want" ]] || esc_fail "$1 $2 ${3:-}: status $GW_STATUS, expected $want: $GW_BODY $(cat "$GW_DIR/curl.err")"
}

_gw_is() {
    local want=$1
    shift
    gw_req "$@"
    [[ $GW_STATUS == "$want" ]]
}

gw_eventually() {
    esc_wait_for 30 _gw_is "$@" || esc_fail "$2 $3: status $GW_STATUS, expected $1 within 30 s: $GW_BODY"
}

gw_field() {
    jq -r --arg p "$1" 'getpath($p | split(".") | map(. as $k | try tonumber catch $k))
        | if . == null then "" else tostring end' <<<"${GW_BODY:-{\}}"
}

gw_header() {
    tr -d '\r' <"$GW_DIR/headers" | awk -v h="$1" 'BEGIN { h = tolower(h) }
        { i = index($0, ":"); if (i > 0 && tolower(substr($0, 1, i - 1)) == h) v = substr($0, i + 2) }
        END { print v }'
}

gw_check_openapi() {
    python3 "$ESC_SRC/tests/support/check_openapi.py" "$ESC_SRC/client/gateway/openapi.json" \
        "$GW_DIR/record.jsonl" --min "$1" || esc_fail "answers that break the OpenAPI document"
}

gw_pass() {
    export GW_PASSED=1 # read by the exit hook gw_begin installs
    echo "PASS $GW_NAME ($((SECONDS - GW_T0)) s)"
}
