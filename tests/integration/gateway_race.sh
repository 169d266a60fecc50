#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gateway_race.sh - a race through escrow-gateway: 64 concurrent HTTPS
# clients, 1,500 buyers (every fifth one sent twice at once with the same
# Idempotency-Key) for 300 units in 4 segments on 2 nodes. Exactly 300 sold,
# read from PostgreSQL (segments and holds); one hold per key in the
# database; the two requests of a doubled key got the same hold and at most
# one of them a 201; every hold a client was answered is in the database,
# converted; conservation holds (escrowctl check).
set -euo pipefail
source "$(dirname "$0")/gateway_lib.sh"

TOTAL=300
BUYERS=1500
THREADS=64

gw_begin gateway_race --nodes 2
esc_ctl item create shop-1 flash --total $TOTAL --segments 4 >/dev/null
gw_start --connections-max 256

esc_step "$THREADS HTTPS clients, $BUYERS buyers for $TOTAL units"
python3 "$ESC_SRC/tests/integration/gateway_buyers.py" "$GW_URL" "$GW_KEY_FILE" "$GW_CA" flash \
    $BUYERS $THREADS "$GW_DIR/answers.txt" "$ESC_SRC/examples/gateway" --prefix race --confirm \
    --twins >"$GW_DIR/race.out" 2>&1 || { cat "$GW_DIR/race.out" >&2; esc_fail "gateway_buyers.py failed"; }
cat "$GW_DIR/race.out"
line=$(grep '^RESULT' "$GW_DIR/race.out")
sold_seen=$(sed -n 's/.* sold=\([0-9]*\).*/\1/p' <<<"$line")
errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$line")
esc_assert_eq "$errors" 0 "errors seen by the clients"

esc_step "the database"
esc_assert_eq "$(esc_psql "SELECT sum(sold) || ' ' || sum(held) FROM segments WHERE item_id = 'flash'")" \
    "$TOTAL 0" "sold held (segments)"
esc_assert_eq "$(esc_psql "SELECT count(*) FROM holds WHERE item_id = 'flash' AND state = 'converted'")" \
    $TOTAL "converted holds"
esc_assert_eq "$(esc_psql "SELECT count(*) - count(DISTINCT idempotency_key) FROM holds WHERE item_id = 'flash'")" \
    0 "keys with more than one hold"
# the doubled buyers' answers count twice in the clients' tally: count keys
sold_keys=$(awk '$3 != "-" { print $1 }' "$GW_DIR/answers.txt" | sort -u | wc -l)
esc_assert_eq "$sold_keys" $TOTAL "keys that were answered a hold"
((sold_seen >= TOTAL)) || esc_fail "the clients saw $sold_seen sales, fewer than $TOTAL"

esc_step "each doubled key: one hold, at most one 201; every answered hold converted in the database"
bad=$(awk '$3 != "-" { n[$1]++; if ($2 == 201) c[$1]++; h[$1] = h[$1] " " $3 }
           END { for (k in n) { split(h[k], a, " "); for (i in a) if (a[i] != a[1]) print "two holds", k, h[k];
                                if (c[k] > 1) print "two 201s", k } }' "$GW_DIR/answers.txt")
[[ -z $bad ]] || esc_fail "$bad"
awk '$3 != "-" { print $1 " " $3 }' "$GW_DIR/answers.txt" | sort -u | tr ' ' '\t' >"$GW_DIR/pairs.tsv"
missing=$(cut -f1,2 "$GW_DIR/pairs.tsv" | tr '\t' ' ' | esc_psql_with_rows answered \
    "SELECT count(*) FROM answered a LEFT JOIN holds h ON h.idempotency_key = split_part(a.v, ' ', 1)
       AND h.hold_id::text = split_part(a.v, ' ', 2) AND h.state = 'converted' WHERE h.hold_id IS NULL")
esc_assert_eq "$missing" 0 "answered holds that are not converted in the database"

gw_stop || esc_fail "escrow-gateway did not stop cleanly"
esc_ctl check >/dev/null || esc_fail "escrowctl check failed"
gw_check_openapi $TOTAL
gw_pass
