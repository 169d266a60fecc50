/*
 * test_wire.c - frames in, validated structs out: every bound, garbage,
 * truncation, round trips of every operation and of replies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "escrow.pb-c.h"
#include "escrow_errors.h"
#include "wire.h"

static wire_request reserve_req(void)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 42;
    q.op = WIRE_OP_RESERVE;
    strcpy(q.tenant_id, "shop-1");
    strcpy(q.item_id, "tee");
    strcpy(q.buyer_id, "b-1");
    strcpy(q.key, "k-1");
    q.qty = 2;
    q.ttl_ms = 1000;
    return q;
}

/* Packs a Request with a reserve the way a rogue client could, bypassing
 * wire_encode_request's own validation. */
static size_t pack_raw(uint32_t version, const char *tenant, const char *item, const char *key,
                       int64_t qty, uint32_t ttl, unsigned char *buf)
{
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__ReserveReq r = ESCROW__RESERVE_REQ__INIT;
    m.version = version;
    m.corr_id = 7;
    m.tenant_id = (char *)tenant;
    r.item_id = (char *)item;
    r.buyer_id = "b";
    r.idempotency_key = (char *)key;
    r.qty = qty;
    r.ttl_ms = ttl;
    m.op_case = ESCROW__REQUEST__OP_RESERVE;
    m.reserve = &r;
    return escrow__request__pack(&m, buf);
}

static int decode_raw(uint32_t version, const char *tenant, const char *item, const char *key,
                      int64_t qty, uint32_t ttl)
{
    unsigned char buf[4096];
    size_t n = pack_raw(version, tenant, item, key, qty, ttl, buf);
    wire_request q;
    char why[WIRE_WHY_MAX];
    int rc = wire_decode_request(buf, n, &q, why);
    if (rc != 0) {
        assert_true(strlen(why) > 0);   /* every refusal says why */
        assert_int_equal(q.corr_id, 7); /* and can be correlated */
    }
    return rc;
}

static void test_roundtrip_every_op(void **state)
{
    (void)state;
    int ops[] = {WIRE_OP_RESERVE, WIRE_OP_CONFIRM, WIRE_OP_RELEASE,
                 WIRE_OP_EXTEND,  WIRE_OP_GET,     WIRE_OP_STATS};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        wire_request q = reserve_req(), out;
        q.op = (wire_op)ops[i];
        q.hold_id = (3ULL << ESC_HOLD_SEQ_BITS) | 5;
        if (q.op == WIRE_OP_CONFIRM) {
            q.qty = 1;
        }
        unsigned char buf[2048];
        size_t n;
        char why[WIRE_WHY_MAX];
        assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
        assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
        assert_int_equal(out.op, q.op);
        assert_int_equal(out.corr_id, 42);
        assert_string_equal(out.tenant_id, "shop-1");
        if (q.op == WIRE_OP_RESERVE) {
            assert_string_equal(out.key, "k-1");
            assert_int_equal(out.qty, 2);
        } else if (q.op != WIRE_OP_STATS) {
            assert_int_equal(out.hold_id, q.hold_id);
        }
    }
}

static void test_bounds(void **state)
{
    (void)state;
    char key129[130];
    memset(key129, 'k', 129);
    key129[129] = '\0';
    char key128[129];
    memset(key128, 'k', 128);
    key128[128] = '\0';
    assert_int_equal(decode_raw(1, "t", "i", "k", 1, 0), 0);
    assert_int_equal(decode_raw(1, "t", "i", key128, 10000, 86400000), 0);
    assert_int_equal(decode_raw(1, "t", "i", "k", 0, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", "k", -1, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", "k", 10001, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", key129, 1, 0), ESC_ETOOBIG);
    assert_int_equal(decode_raw(1, "t", "i", "", 1, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", "has space", 1, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", "k\x01", 1, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "", "i", "k", 1, 0), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", "k", 1, 10), ESC_EINVAL);
    assert_int_equal(decode_raw(1, "t", "i", "k", 1, 86400001), ESC_EINVAL);
    assert_int_equal(decode_raw(2, "t", "i", "k", 1, 0), ESC_EPROTO);
}

static void test_garbage_and_truncation(void **state)
{
    (void)state;
    wire_request q;
    char why[WIRE_WHY_MAX];
    unsigned char junk[256];
    srand(1234);
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(rand() % (int)sizeof junk);
        for (size_t i = 0; i < n; i++) {
            junk[i] = (unsigned char)rand();
        }
        int rc = wire_decode_request(junk, n, &q, why);
        assert_true(rc == 0 || rc == ESC_EPROTO || rc == ESC_EINVAL || rc == ESC_ETOOBIG);
    }
    unsigned char buf[512];
    size_t n = pack_raw(1, "t", "item", "key", 1, 0, buf);
    for (size_t cut = 0; cut < n; cut++) {
        int rc = wire_decode_request(buf, cut, &q, why);
        assert_int_not_equal(rc, 0);
    }
    assert_int_equal(wire_decode_request("GET / HTTP/1.1\r\n\r\n", 18, &q, why), ESC_EPROTO);
    unsigned char *big = calloc(1, ESC_FRAME_BYTES_MAX + 1);
    assert_non_null(big);
    assert_int_equal(wire_decode_request(big, ESC_FRAME_BYTES_MAX + 1, &q, why), ESC_ETOOBIG);
    free(big);
}

static void test_hold_id_and_confirm_bounds(void **state)
{
    (void)state;
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__ConfirmReq c = ESCROW__CONFIRM_REQ__INIT;
    m.version = 1;
    m.tenant_id = "t";
    m.op_case = ESCROW__REQUEST__OP_CONFIRM;
    m.confirm = &c;
    unsigned char buf[256];
    wire_request q;
    char why[WIRE_WHY_MAX];
    c.hold_id = 5; /* segment 0 does not exist */
    size_t n = escrow__request__pack(&m, buf);
    assert_int_equal(wire_decode_request(buf, n, &q, why), ESC_EINVAL);
    c.hold_id = (1ULL << ESC_HOLD_SEQ_BITS) | 1;
    c.qty = -1;
    n = escrow__request__pack(&m, buf);
    assert_int_equal(wire_decode_request(buf, n, &q, why), ESC_EINVAL);
    c.qty = 0;
    n = escrow__request__pack(&m, buf);
    assert_int_equal(wire_decode_request(buf, n, &q, why), 0);
    m.op_case = ESCROW__REQUEST__OP__NOT_SET;
    n = escrow__request__pack(&m, buf);
    assert_int_equal(wire_decode_request(buf, n, &q, why), ESC_EPROTO);
}

static void test_encode_refuses_invalid(void **state)
{
    (void)state;
    wire_request q = reserve_req();
    unsigned char buf[2048];
    size_t n;
    assert_int_equal(wire_encode_request(&q, buf, 4, &n), ESC_ETOOBIG);
    q.op = WIRE_OP_NONE;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), ESC_EINVAL);
}

static void test_reply_roundtrip(void **state)
{
    (void)state;
    wire_seg_stats segs[2] = {{.segment_id = 1, .epoch = 3, .available = 5, .held = 1, .sold = 2},
                              {.segment_id = 2, .epoch = 4, .available = 0}};
    strcpy(segs[0].item_id, "tee");
    strcpy(segs[1].item_id, "tee");
    wire_reply r;
    memset(&r, 0, sizeof r);
    r.corr_id = 9;
    r.status = ESC_ESOLD_OUT;
    strcpy(r.message, "sold out");
    r.has_hold = true;
    r.hold.hold_id = 77;
    r.hold.qty = 3;
    r.hold.state = WIRE_HOLD_CONVERTED;
    strcpy(r.hold.item_id, "tee");
    strcpy(r.hold.buyer_id, "b");
    r.segs = segs;
    r.nsegs = 2;
    unsigned char buf[4096];
    size_t n;
    assert_int_equal(wire_encode_reply(&r, buf, sizeof buf, &n), 0);
    wire_seg_stats got[1];
    wire_reply out;
    out.segs = got;
    out.segs_cap = 1; /* fewer than sent: truncated, never overflowed */
    assert_int_equal(wire_decode_reply(buf, n, &out), 0);
    assert_int_equal(out.status, ESC_ESOLD_OUT);
    assert_int_equal(out.corr_id, 9);
    assert_true(out.has_hold);
    assert_int_equal(out.hold.hold_id, 77);
    assert_int_equal(out.hold.state, WIRE_HOLD_CONVERTED);
    assert_int_equal(out.nsegs, 1);
    assert_int_equal(got[0].epoch, 3);
    assert_int_equal(wire_decode_reply("\xff\xff\xff", 3, &out), ESC_EPROTO);
}

static void test_request_hash(void **state)
{
    (void)state;
    int64_t h = wire_reserve_hash("tee", "b", 1);
    assert_true(h >= 0);
    assert_int_equal(h, wire_reserve_hash("tee", "b", 1));
    assert_int_not_equal(h, wire_reserve_hash("tee", "b", 2));
    assert_int_not_equal(h, wire_reserve_hash("tee", "c", 1));
    assert_int_not_equal(wire_reserve_hash("ab", "c", 1), wire_reserve_hash("a", "bc", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_op),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_garbage_and_truncation),
        cmocka_unit_test(test_hold_id_and_confirm_bounds),
        cmocka_unit_test(test_encode_refuses_invalid),
        cmocka_unit_test(test_reply_roundtrip),
        cmocka_unit_test(test_request_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
