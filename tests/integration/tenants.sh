#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tenants.sh - tenant isolation and credentials (docs/credentials.md): the
# TENANT MATRIX. A coordinator and a managed node run with --auth on (and a
# cluster key); two tenants, shop-a and shop-b, have the SAME item id and
# hold with the SAME idempotency key. Then, in both directions (a attacking
# b, b attacking a), every operation -- reserve, resolve, confirm, release, extend,
# get, stats (node), route (coordinator), operator release (node), every
# admin operation and quota move (coordinator), heartbeat (coordinator) --
# is sent as every kind of wrong sender:
#   foreign   the attacker's valid key and tenant, the victim's hold / segment id
#   forged    the attacker's valid key with the victim's tenant_id
#   missing   no credential
#   invalid   a malformed credential, a well-formed unknown key, the victim's
#             key id with a guessed secret
#   revoked   a revoked key of the victim's tenant
#   tenant    (admin, quota move, operator release, heartbeat) the victim's own valid key
# and must be refused (AUTH; NOT_FOUND for a foreign hold, with exactly the
# answer an unknown hold gets). Every row of both tenants in items,
# segments, holds and outbox is snapshot before and after: nothing may
# change. Prints
#   TENANT-MATRIX cases=N refused=N changed_rows=0
# Then the positive controls (the right keys work, escrowctl with and
# without its admin key, a key works again... never; a revocation takes
# effect within the reload period: a timing target, see itest_timing) and
# rate limits on a second node (refills of 1 per second, so that a slow
# machine's requests arrive well within one refill).
# Quota move between regions is covered by its refusal at the coordinator's
# door (the check runs before any region logic); no second region is started.
set -euo pipefail
# shellcheck source=tests/integration/shard_lib.sh
source "$(dirname "$0")/shard_lib.sh"

itest_begin tenants
K=$ITEST_DIR/keys
mkdir -p "$K"

esc_step "credentials: tenants, keys, an admin key, a cluster key"
esc_ctl tenant create shop-a --name "Shop A" >"$ITEST_DIR/t.out"
grep -q 'tenant shop-a created' "$ITEST_DIR/t.out" || esc_fail "tenant create: $(cat "$ITEST_DIR/t.out")"
esc_ctl tenant create shop-a | grep 'already exists' >/dev/null || esc_fail "tenant create is not idempotent"
esc_ctl tenant create shop-b >/dev/null
esc_ctl tenant create '*' >/dev/null 2>&1 && esc_fail "tenant '*' was accepted"
esc_ctl key create nosuch >/dev/null 2>&1 && esc_fail "a key for an unknown tenant was created"
esc_ctl key create shop-a >"$K/a" 2>/dev/null
esc_ctl key create shop-b >"$K/b" 2>/dev/null
esc_ctl key create shop-a >"$K/a-revoked" 2>/dev/null
esc_ctl key create shop-b >"$K/b-revoked" 2>/dev/null
esc_ctl admin-key create >"$K/admin" 2>/dev/null
esc_ctl cluster-key create >"$K/cluster"
for f in a b a-revoked b-revoked admin cluster; do
    grep -qE '^esk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$' "$K/$f" || esc_fail "key $f: '$(cat "$K/$f")'"
done
key_id() { cut -c5-20 "$K/$1"; }
itest_eq "$(itest_q "SELECT count(*) FROM credentials")" 5 "stored keys (the cluster key is not)"
itest_eq "$(itest_q "SELECT count(*) FROM credentials WHERE secret_hash::text LIKE '%$(cut -c22- "$K/a")%'")" \
    0 "the secret is not stored"
esc_ctl key list shop-a | grep -c "shop-a" | grep -x 2 >/dev/null || esc_fail "key list shop-a"
esc_ctl key revoke "$(key_id a-revoked)" >/dev/null
esc_ctl key revoke "$(key_id b-revoked)" >/dev/null
esc_ctl key revoke "$(key_id b-revoked)" | grep 'already revoked' >/dev/null || esc_fail "second revoke"
esc_ctl key revoke 0123456789abcdef >/dev/null 2>&1 && esc_fail "revoke of an unknown key succeeded"
KA=$(cat "$K/a")
KB=$(cat "$K/b")
KADMIN=$(cat "$K/admin")

esc_step "coordinator and node with --auth on"
shard_coord_start --auth on --cluster-key "$K/cluster"
shard_node_start n1 --auth on --cluster-key "$K/cluster"
NODE=$SHARD_NODE_EP
COORD=$SHARD_COORD_URL
export ESCROW_COORDINATOR=$COORD
# escrowctl without its admin key: the coordinator refuses the reload (the
# item is created in the database all the same: a warning, exit 0)
# (holds live 2 h: the matrix must not see a setup hold expire on a slow machine)
esc_ctl item create shop-a tee --total 100 --segments 1 --hold-ttl-ms 7200000 >"$ITEST_DIR/c.out" 2>&1
grep -qi 'auth\|credential' "$ITEST_DIR/c.out" || esc_fail "no refusal in: $(cat "$ITEST_DIR/c.out")"
ESCROW_ADMIN_KEY=$KADMIN esc_ctl item create shop-b tee --total 100 --segments 1 --hold-ttl-ms 7200000 >/dev/null
ESCROW_ADMIN_KEY=$KADMIN esc_ctl item create shop-a other --total 5 --segments 1 >/dev/null

# probe helpers: frame OP TENANT CREDENTIAL [ARGS...] to the node / coordinator
fnode() {
    local op=$1 tenant=$2 cred=$3
    shift 3
    itest_probe frame --endpoint "$NODE" --op "$op" --tenant "$tenant" --credential "$cred" \
        --deadline-ms 15000 "$@"
}
fcoord() {
    local op=$1 tenant=$2 cred=$3
    shift 3
    itest_probe frame --endpoint "$COORD" --op "$op" --tenant "$tenant" --credential "$cred" \
        --deadline-ms 15000 "$@"
}
_served() {
    local a b
    a=$(fnode stats shop-a "$KA" --item tee)
    b=$(fnode stats shop-b "$KB" --item tee)
    [[ $a == OK* && $(itest_field nsegs "$a") == 1 && $b == OK* && $(itest_field nsegs "$b") == 1 ]]
}
esc_wait_for 60 _served ||
    esc_fail "the node does not serve both items: $(fnode stats shop-a "$KA")"

esc_step "setup: the same item id and the same idempotency key in both tenants (libescrow)"
hold_of() { itest_field hold "$1"; }
ra=$(itest_probe reserve --endpoint "$NODE" --tenant shop-a --credential "$KA" --item tee --key k1 --buyer u1)
rb=$(itest_probe reserve --endpoint "$NODE" --tenant shop-b --credential "$KB" --item tee --key k1 --buyer u1)
[[ $ra == OK* && $rb == OK* ]] || esc_fail "setup reserves: '$ra' '$rb'"
HA=$(hold_of "$ra")
HB=$(hold_of "$rb")
[[ $HA != "$HB" ]] || esc_fail "two tenants got one hold"
SA=$(itest_q "SELECT segment_id FROM segments WHERE tenant_id = 'shop-a' AND item_id = 'tee'")
SB=$(itest_q "SELECT segment_id FROM segments WHERE tenant_id = 'shop-b' AND item_id = 'tee'")
# an id that names no hold, in the attacker's own segment: what "unknown" answers
unknown_in() { echo $(($1 * 1099511627776 + 999999)); }
nores=$(itest_probe reserve --endpoint "$NODE" --tenant shop-a --item tee --key k9 --buyer u9)
[[ $nores == AUTH* ]] || esc_fail "libescrow without a key: '$nores'"

snapshot() {
    esc_psql "
      SELECT 'item', tenant_id, item_id, total, unallocated, state FROM items
       WHERE tenant_id IN ('shop-a', 'shop-b') ORDER BY 2, 3;
      SELECT 'seg', segment_id, tenant_id, item_id, node_id, epoch, available, held, sold, state
        FROM segments WHERE tenant_id IN ('shop-a', 'shop-b') ORDER BY 2;
      SELECT 'hold', h.* FROM holds h WHERE tenant_id IN ('shop-a', 'shop-b') ORDER BY hold_id;
      SELECT 'event', o.event_id, o.tenant_id, o.item_id, o.hold_id, o.kind, o.qty FROM outbox o
       WHERE tenant_id IN ('shop-a', 'shop-b') ORDER BY event_id;
      SELECT 'node', node_id, state FROM nodes ORDER BY 2"
}
snapshot >"$ITEST_DIR/before.txt"

esc_step "the matrix"
cases=0
refused=0
bad=()
# case NAME WANT_STATUS LINE [WANT_MSG_LINE]: refused when LINE's status is
# WANT_STATUS (and, given, its status and msg equal WANT_MSG_LINE's)
check() {
    local name=$1 want=$2 line=$3 same=${4:-}
    cases=$((cases + 1))
    local st=${line%% *}
    if [[ $st == "$want" && (-z $same || "$st $(itest_field msg "$line")" == "${same%% *} $(itest_field msg "$same")") ]]; then
        refused=$((refused + 1))
    else
        bad+=("$name: got '$line'${same:+, unknown hold answers '$same'}")
    fi
}

ADMIN_OPS=(admin-restock admin-reduce admin-pause admin-resume admin-retire admin-split
    admin-collapse admin-rebalance admin-drain admin-undrain admin-reload)
# Every operation as sender $1 (credential text $2) naming tenant $3, hold
# $4, segment $5; each must be answered $6.
all_ops() {
    local who=$1 cred=$2 tenant=$3 hold=$4 seg=$5 want=$6 op
    check "$who reserve" "$want" "$(fnode reserve "$tenant" "$cred" --item tee --key k1)"
    check "$who resolve" "$want" "$(fnode resolve "$tenant" "$cred" --item tee --key k1 --segment "$seg")"
    for op in confirm release extend get; do
        check "$who $op" "$want" "$(fnode $op "$tenant" "$cred" --hold "$hold")"
    done
    check "$who stats" "$want" "$(fnode stats "$tenant" "$cred" --item tee)"
    check "$who stats-all" "$want" "$(fnode stats "$tenant" "$cred")"
    check "$who route" "$want" "$(fcoord route "$tenant" "$cred" --item tee)"
    check "$who op-release" "$want" "$(fnode op-release "$tenant" "$cred" --hold "$hold")"
    for op in "${ADMIN_OPS[@]}"; do
        check "$who $op" "$want" "$(fcoord "$op" "$tenant" "$cred" --item tee --qty 5 --node n1)"
    done
    check "$who quota-move" "$want" "$(fcoord quota-move "$tenant" "$cred" --item tee --qty 5 --node far)"
    check "$who quota-status" "$want" "$(fcoord quota-status "" "$cred" --node far)"
    check "$who heartbeat" "$want" "$(fcoord heartbeat "" "$cred" --node intruder)"
}

for dir in ab ba; do
    if [[ $dir == ab ]]; then
        me=shop-a mykey=$KA myseg=$SA victim=shop-b vkey=$K/b vrev=$(cat "$K/b-revoked") vhold=$HB vseg=$SB
    else
        me=shop-b mykey=$KB myseg=$SB victim=shop-a vkey=$K/a vrev=$(cat "$K/a-revoked") vhold=$HA vseg=$SA
    fi
    # foreign: the attacker's own valid key and tenant, the victim's ids. A
    # hold of the victim's segment (live or not) answers exactly as a hold of
    # a segment that exists nowhere: no answer tells which segments live here
    nowhere=$(unknown_in 999999)
    for op in confirm release extend get; do
        same=$(fnode $op "$me" "$mykey" --hold "$nowhere")
        check "$dir foreign $op" NOT_OWNER "$(fnode $op "$me" "$mykey" --hold "$vhold")" "$same"
        check "$dir foreign-unknown $op" NOT_OWNER \
            "$(fnode $op "$me" "$mykey" --hold "$(unknown_in "$vseg")")" "$same"
    done
    # (an unknown hold of the attacker's own segment is looked up: NOT_FOUND)
    r=$(fnode get "$me" "$mykey" --hold "$(unknown_in "$myseg")")
    itest_eq "${r%% *}" NOT_FOUND "$dir: an unknown hold of one's own segment"
    # the victim's segment answers exactly as a segment that does not exist
    r=$(fcoord route "$me" "$mykey" --item "" --segment "$vseg")
    check "$dir foreign route-by-segment" UNKNOWN_ITEM "$r"
    itest_eq "$(itest_field msg "$r")" "no_segment_${vseg}_for_tenant_$me" "route of a foreign segment"
    itest_eq "$(itest_field msg "$(fcoord route "$me" "$mykey" --item "" --segment 999999)")" \
        "no_segment_999999_for_tenant_$me" "route of an unknown segment"
    check "$dir foreign op-release" AUTH "$(fnode op-release "$me" "$mykey" --hold "$vhold")"
    # a resolve of the key both tenants use finds the attacker's own hold only,
    # and names the victim's segment as it would a segment of nobody
    r=$(fnode resolve "$me" "$mykey" --item tee --key k1 --qty 1 --segment "$myseg")
    [[ $(itest_field hold "$r") != "$vhold" ]] || esc_fail "$dir: a resolve answered the victim's hold"
    same=$(fnode resolve "$me" "$mykey" --item tee --key k-none --segment 999999)
    check "$dir foreign resolve" NOT_OWNER "$(fnode resolve "$me" "$mykey" --item tee --key k-none --segment "$vseg")" "$same"
    # forged: the attacker's key, the victim's tenant
    all_ops "$dir forged" "$mykey" "$victim" "$vhold" "$vseg" AUTH
    all_ops "$dir missing" "" "$victim" "$vhold" "$vseg" AUTH
    all_ops "$dir invalid-garbage" "hunter2" "$victim" "$vhold" "$vseg" AUTH
    all_ops "$dir invalid-unknown" "esk_0123456789abcdef_$(printf 'A%.0s' {1..43})" "$victim" "$vhold" "$vseg" AUTH
    all_ops "$dir invalid-secret" "esk_$(cut -c5-20 "$vkey")_$(printf 'B%.0s' {1..43})" "$victim" "$vhold" "$vseg" AUTH
    all_ops "$dir revoked" "$vrev" "$victim" "$vhold" "$vseg" AUTH
    # the victim's own valid key may not do what needs an admin or the cluster key
    vk=$(cat "$vkey")
    check "$dir tenant-key op-release" AUTH "$(fnode op-release "$victim" "$vk" --hold "$vhold")"
    for op in "${ADMIN_OPS[@]}"; do
        check "$dir tenant-key $op" AUTH "$(fcoord "$op" "$victim" "$vk" --item tee --qty 5 --node n1)"
    done
    check "$dir tenant-key quota-move" AUTH "$(fcoord quota-move "$victim" "$vk" --item tee --qty 5 --node far)"
    check "$dir tenant-key heartbeat" AUTH "$(fcoord heartbeat "" "$vk" --node intruder)"
done
check "admin-key heartbeat" AUTH "$(fcoord heartbeat "" "$KADMIN" --node intruder)"
check "admin-key quota-status" AUTH "$(fcoord quota-status "" "$KADMIN" --node far)"

# Signed frames (docs/credentials.md): the key's text never travels; a frame
# is refused when it carries the key in clear (an old client), when its MAC
# does not match its bytes, when it was signed outside the window (30 s by
# default, either way), and an admin frame when it is a copy of one accepted
signed_cases=$cases
for who in shop-a:$KA:$HA shop-b:$KB:$HB; do
    IFS=: read -r t key hold <<<"$who"
    check "$t cleartext key" AUTH "$(fnode get "$t" "$key" --hold "$hold" --cleartext)"
    check "$t tampered mac" AUTH "$(fnode get "$t" "$key" --hold "$hold" --tamper)"
    check "$t signed 31 s ago" AUTH "$(fnode get "$t" "$key" --hold "$hold" --sign-skew-ms -31000)"
    check "$t signed 31 s ahead" AUTH "$(fcoord route "$t" "$key" --item tee --sign-skew-ms 31000)"
    r=$(fnode get "$t" "$key" --hold "$hold" --sign-skew-ms -20000)
    [[ $r == OK* ]] || esc_fail "$t: a frame signed 20 s ago (inside the window) was refused: $r"
done
r=$(fcoord admin-reload shop-a "$KADMIN" --item tee --save "$ITEST_DIR/admin.bin")
[[ $r == OK* ]] || esc_fail "admin reload with the admin key: $r"
r=$(itest_probe frame --endpoint "$COORD" --frame-file "$ITEST_DIR/admin.bin" --deadline-ms 15000)
check "admin frame replayed inside the window" AUTH "$r"
[[ $(itest_field msg "$r") == *replay* ]] || esc_fail "the replay's refusal: $r"
echo "SIGNED-FRAMES cases=$((cases - signed_cases)) (of the matrix's $cases)"

snapshot >"$ITEST_DIR/after.txt"
changed=$(diff "$ITEST_DIR/before.txt" "$ITEST_DIR/after.txt" | grep -c '^[<>]' || true)
echo "TENANT-MATRIX cases=$cases refused=$refused changed_rows=$changed"
if ((${#bad[@]} > 0)); then
    printf '  not refused: %s\n' "${bad[@]}" >&2
fi
if ((changed > 0)); then
    diff "$ITEST_DIR/before.txt" "$ITEST_DIR/after.txt" >&2 || true
fi
itest_eq "$refused" "$cases" "refused cases"
itest_eq "$changed" 0 "rows changed by refused requests"

esc_step "same item id and key: each tenant sees only its own"
again=$(itest_probe reserve --endpoint "$NODE" --tenant shop-a --credential "$KA" --item tee --key k1 --buyer u1)
itest_eq "$(hold_of "$again")" "$HA" "a retry of shop-a's key k1 answers shop-a's hold"
st=$(fnode stats shop-a "$KA")
itest_eq "$(itest_field nsegs "$st")" 2 "shop-a's stats list its 2 segments only"

esc_step "positive controls: the right keys work"
r=$(fnode get shop-a "$KA" --hold "$HA")
[[ $r == OK* ]] || esc_fail "shop-a get own hold: $r"
r=$(fcoord route shop-b "$KB" --item tee)
[[ $r == OK* && $(itest_field route "$r") == 1 ]] || esc_fail "shop-b route: $r"
r=$(fnode get shop-b "$KADMIN" --hold "$HB")
[[ $r == OK* ]] || esc_fail "admin key on a tenant request: $r"
rc=0
esc_ctl item pause shop-b tee >/dev/null 2>"$ITEST_DIR/p.err" || rc=$?
itest_eq "$rc" 1 "escrowctl item pause without its admin key"
grep -q 'AUTH\|credential\|admin key' "$ITEST_DIR/p.err" || esc_fail "pause refusal: $(cat "$ITEST_DIR/p.err")"
esc_ctl --credential "$K/admin" item pause shop-b tee >/dev/null
esc_ctl --credential "$K/admin" item resume shop-b tee >/dev/null
ESCROW_ADMIN_KEY=$KADMIN esc_ctl release "$HB" >/dev/null
itest_eq "$(itest_q "SELECT state FROM holds WHERE hold_id = $HB")" cancelled "operator release with the admin key"

esc_step "the routing feed: a stranger subscribing during a sale reads nothing"
ESCROW_ADMIN_KEY=$KADMIN esc_ctl item create shop-a launch-a --total 200 --segments 4 >/dev/null
_launch_served() {
    local r
    r=$(fcoord route shop-a "$KA" --item launch-a)
    [[ $r == OK* && $(itest_field route "$r") == 1 ]]
}
esc_wait_for 60 _launch_served ||
    esc_fail "launch-a is not routed: $(fcoord route shop-a "$KA" --item launch-a)"
# subscribed to everything for 15 s: shop-b's key, no key, and shop-a's own
# key as the control; the sale runs meanwhile (libescrow in routing mode,
# which can only find the segments by opening the sealed updates)
"$COORD_PROBE" stranger "$SHARD_PUB_URL" 15 "$KB" launch-a >"$ITEST_DIR/stranger-b.out" &
sb=$!
"$COORD_PROBE" stranger "$SHARD_PUB_URL" 15 - launch-a >"$ITEST_DIR/stranger-none.out" &
sn=$!
"$COORD_PROBE" stranger "$SHARD_PUB_URL" 15 "$KA" launch-a >"$ITEST_DIR/stranger-a.out" &
sa=$!
"$ESC_BIN/escrow-load" --coordinator "$COORD" --routes "$SHARD_PUB_URL" --tenant shop-a \
    --credential "$K/a" --item launch-a --buyers 400 --concurrency 20 --confirm 1 --release 0 \
    --try-later-retries 100 --deadline-ms 30000 --seed 3 --quiet \
    >"$ITEST_DIR/launch.out" 2>"$ITEST_DIR/launch.log" ||
    { cat "$ITEST_DIR/launch.out" "$ITEST_DIR/launch.log" >&2; esc_fail "the sale failed"; }
line=$(grep '^RESULT' "$ITEST_DIR/launch.out") || esc_fail "no RESULT line"
echo "$line"
itest_eq "$(itest_field holds_ok "$line") $(itest_field sold "$line") $(itest_field errors "$line")" \
    "200 200 0" "holds, sold and errors of the sale through sealed routes"
wait "$sb" || esc_fail "the stranger received nothing: $(cat "$ITEST_DIR/stranger-b.out")"
wait "$sn" || esc_fail "the keyless stranger received nothing"
wait "$sa" || esc_fail "shop-a's subscriber received nothing"
for who in b none a; do
    echo "$who: $(cat "$ITEST_DIR/stranger-$who.out")"
done
b=$(cat "$ITEST_DIR/stranger-b.out")
none=$(cat "$ITEST_DIR/stranger-none.out")
a=$(cat "$ITEST_DIR/stranger-a.out")
itest_eq "$(itest_field clear "$b") $(itest_field opened_item "$b") $(itest_field leaks "$b")" "0 0 0" \
    "shop-b's key: clear updates, launch-a routes opened, messages naming launch-a"
itest_eq "$(itest_field clear "$none") $(itest_field opened "$none") $(itest_field leaks "$none")" "0 0 0" \
    "no key: clear updates, opened, messages naming launch-a"
itest_eq "$(itest_field sealed "$b")" "$(itest_field msgs "$b")" "every message is sealed"
(($(itest_field opened_item "$a") > 0)) || esc_fail "shop-a's key opened no launch-a route: $a"
itest_eq "$(itest_field leaks "$a")" 0 "messages naming launch-a in shop-a's feed (sealed too)"

esc_step "revocation takes effect within the reload period"
r=$(fnode get shop-a "$KA" --hold "$HA")
[[ $r == OK* ]] || esc_fail "before revoke: $r"
esc_ctl key revoke "$(key_id a)" >/dev/null
t0=$(date +%s%N)
_revoked() { [[ $(fnode get shop-a "$KA" --hold "$HA") == AUTH* ]]; }
esc_wait_for 60 _revoked || esc_fail "a revoked key still works after 60 s"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "revoked key refused after ${ms} ms"
itest_timing "$ms" 2500 "a revocation (credentials reloaded every 1000 ms)"
esc_ctl key create shop-a >"$K/a2" 2>/dev/null
_fresh() { [[ $(fnode get shop-a "$(cat "$K/a2")" --hold "$HA") == OK* ]]; }
esc_wait_for 60 _fresh || esc_fail "a new key does not work within 60 s"

esc_step "rate limits: a second node, 1 request/s per tenant (burst 20), 1 reserve/s per buyer (burst 5)"
# The probe sends its copies one after the other: a slow machine spreads
# them over seconds, and every second refills one token. With refills of 1/s
# the counts below hold until the 60 requests take 10 s (the 15 take 5 s).
port=$(itest_port)
itest_node n2 "$port" --dsn "$ESCROW_DSN" --auth on --cluster-key "$K/cluster" \
    --rate-tenant 1:20 --rate-buyer 1:5 --coordinator "$COORD"
N2=tcp://127.0.0.1:$port
r=$(itest_probe frame --endpoint "$N2" --op stats --tenant shop-b --credential "$KB" --n 60)
echo "tenant bucket 1/s, burst 20, 60 requests in a row: $r"
busy=$(itest_field busy "$r")
# past the bucket: answered OK, or UNKNOWN_TENANT when n2 serves none of shop-b's segments
((busy >= 30 && $(itest_field ok "$r") + $(itest_field other "$r") >= 20)) ||
    esc_fail "tenant rate limit: $r"
[[ $(itest_field busy_msg "$r") == rate_limited:_this_tenant* ]] || esc_fail "the BUSY answer: $r"
r=$(itest_probe frame --endpoint "$N2" --op stats --tenant shop-a --credential "$(cat "$K/a2")")
[[ $r != BUSY* ]] || esc_fail "shop-b's flood limited shop-a: $r"
# shop-a's own bucket has 19 tokens left: only the buyer bucket can say BUSY
r=$(itest_probe frame --endpoint "$N2" --op reserve --tenant shop-a --credential "$(cat "$K/a2")" \
    --item tee --key flood --n 15)
echo "buyer bucket 1/s, burst 5, 15 reserves of one buyer in a row: $r"
(($(itest_field busy "$r") >= 5)) || esc_fail "buyer rate limit: $r"
[[ $(itest_field busy_msg "$r") == rate_limited:_this_buyer* ]] || esc_fail "the buyer's BUSY answer: $r"

esc_step "a captured frame: the key cannot be read from it, a replay outside the window is refused"
# a third node with the shortest window (1 s), so the wait is short
port=$(itest_port)
itest_node n3 "$port" --dsn "$ESCROW_DSN" --auth on --cluster-key "$K/cluster" \
    --auth-window-ms 1000 --coordinator "$COORD"
N3=tcp://127.0.0.1:$port
_n3_keys() {
    itest_probe frame --endpoint "$N3" --op stats --tenant shop-b --credential "$KB" \
        --deadline-ms 15000 --save "$ITEST_DIR/captured.bin" >"$ITEST_DIR/first.out"
    [[ $(cat "$ITEST_DIR/first.out") != UNAVAILABLE* ]]
}
esc_wait_for 60 _n3_keys ||
    esc_fail "n3 did not read its keys: $(cat "$ITEST_DIR/first.out")"
first=$(cat "$ITEST_DIR/first.out")
[[ $first != AUTH* ]] || esc_fail "a fresh signed frame at n3: $first"
python3 - "$ITEST_DIR/captured.bin" "$KB" <<'PY' || esc_fail "the captured frame holds the key"
import base64, hashlib, sys
frame = open(sys.argv[1], "rb").read()
text = sys.argv[2]
key_id, secret_b64 = text[4:20], text[21:]
secret = base64.urlsafe_b64decode(secret_b64 + "=")
signing = hashlib.blake2b(secret + key_id.encode(), digest_size=32).digest()
found = {name: int(v in frame) for name, v in
         (("text", text.encode()), ("secret_text", secret_b64.encode()), ("secret", secret),
          ("signing_key", signing), ("signing_half", signing[:16]))}
print("CAPTURED-FRAME bytes=%d key_id=%d %s" % (len(frame), int(key_id.encode() in frame),
      " ".join("%s=%d" % kv for kv in found.items())))
sys.exit(1 if any(found.values()) or key_id.encode() not in frame else 0)
PY
_replay_refused() {
    itest_probe frame --endpoint "$N3" --frame-file "$ITEST_DIR/captured.bin" \
        --deadline-ms 15000 >"$ITEST_DIR/replay.out"
    [[ $(cat "$ITEST_DIR/replay.out") == AUTH* ]]
}
esc_wait_for 60 _replay_refused ||
    esc_fail "the captured frame still works: $(cat "$ITEST_DIR/replay.out")"
r=$(cat "$ITEST_DIR/replay.out")
echo "captured frame replayed later: $r"
[[ $(itest_field msg "$r") == *outside_the_time_window* ]] || esc_fail "the replay's refusal: $r"
r=$(itest_probe frame --endpoint "$N3" --op stats --tenant shop-b --credential "$KB" --deadline-ms 15000)
[[ $r != AUTH* ]] || esc_fail "a fresh frame of the same key after the replay: $r"

itest_invariants
itest_pass
