#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gateway_clients.sh - checkout code in other languages through escrow-gateway
# against a real cluster, over HTTPS with a certificate made here:
#   - PHP (php-cli, php-curl): examples/gateway/checkout.php sells an item of
#     20 units while someone else holds 2: 18 bought, 2 told "try later"
#     (after retrying with the same key); then, the 2 released, 4 more
#     buyers: 2 bought, 2 told "sold out";
#   - Python, standard library only: examples/gateway/escrow_gateway.py
#     through reserve, replay, mismatch, extend, release, a cart, confirm, an
#     unknown hold and the event feed (gateway_clients.py), then
#     examples/gateway/checkout.py sells 30 units to 40 buyers on 4 threads.
# The database must show exactly the units sold, and every answer of the run
# must be valid against client/gateway/openapi.json.
set -euo pipefail
source "$(dirname "$0")/gateway_lib.sh"
command -v php >/dev/null || esc_fail "php-cli is not installed (.ci/packages.txt)"
php -m | grep -x curl >/dev/null || esc_fail "php-curl is not installed (.ci/packages.txt)"

gw_begin gateway_clients --nodes 2
esc_ctl item create shop-1 php-tee --total 20 --segments 2 >/dev/null
esc_ctl item create shop-1 py-tee --total 30 --segments 2 >/dev/null
esc_ctl item create shop-1 py-api --total 10 --segments 1 >/dev/null
gw_start

sold() {
    esc_psql "SELECT coalesce(sum(sold), 0) FROM segments WHERE tenant_id = 'shop-1' AND item_id = '$1'"
}

esc_step "PHP checkout: 2 of 20 units held by someone else, 20 buyers; then 4 more buyers"
gw_expect 201 POST /v1/holds '{"item":"php-tee","buyer":"someone","qty":2}' someone
held=$(gw_field id)
php_run() { # first count expected-RESULT
    php "$ESC_SRC/examples/gateway/checkout.php" "$GW_URL" "$GW_KEY_FILE" "$GW_CA" php-tee "$2" "$1" \
        >"$GW_DIR/php.out" 2>&1 || { cat "$GW_DIR/php.out" >&2; esc_fail "checkout.php failed"; }
    tail -n 2 "$GW_DIR/php.out"
    esc_assert_eq "$(grep '^RESULT' "$GW_DIR/php.out")" "$3" "PHP's tally"
}
php_run 0 20 "RESULT sold=18 sold_out=0 try_later=2 errors=0"
gw_expect 200 POST "/v1/holds/$held/release"
php_run 20 4 "RESULT sold=2 sold_out=2 try_later=0 errors=0"
esc_assert_eq "$(sold php-tee)" 20 "php-tee sold (PostgreSQL)"

esc_step "Python (standard library): the whole API, then 40 buyers for 30 units on 4 threads"
python3 "$ESC_SRC/tests/integration/gateway_clients.py" "$GW_URL" "$GW_KEY_FILE" "$GW_CA" py-api \
    "$ESC_SRC/examples/gateway" || esc_fail "gateway_clients.py failed"
PYTHONPATH="$ESC_SRC/examples/gateway" python3 "$ESC_SRC/examples/gateway/checkout.py" \
    "$GW_URL" "$GW_KEY_FILE" "$GW_CA" py-tee 40 4 >"$GW_DIR/py.out" 2>&1 ||
    { cat "$GW_DIR/py.out" >&2; esc_fail "checkout.py failed"; }
line=$(grep '^RESULT' "$GW_DIR/py.out")
echo "$line"
esc_assert_eq "$line" "RESULT sold=30 sold_out=10 try_later=0 replayed=0 errors=0" "Python's tally"
esc_assert_eq "$(sold py-tee)" 30 "py-tee sold (PostgreSQL)"
esc_assert_eq "$(sold py-api)" 2 "py-api sold (PostgreSQL)"

esc_step "checks"
gw_stop || esc_fail "escrow-gateway did not stop cleanly"
esc_ctl check >/dev/null || esc_fail "escrowctl check failed"
gw_check_openapi 100
gw_pass
