/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wire.c - frames in, validated structs out: every bound (the
 * signature fields included), garbage, truncation, round trips of every
 * operation and of replies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* A get frame with the given signature fields, packed by hand; trailer:
 * append a MAC field of mac_len bytes after packing (as the encoders do). */
static size_t pack_signed(const char *key_id, uint64_t sent_at, uint64_t nonce, size_t mac_len,
                          bool trailer, unsigned char *buf)
{
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__GetReq g = ESCROW__GET_REQ__INIT;
    static uint8_t mac[64];
    memset(mac, 0xab, sizeof mac);
    m.version = WIRE_VERSION;
    m.corr_id = 7;
    m.tenant_id = "t";
    m.key_id = (char *)key_id;
    m.sent_at_ms = sent_at;
    m.nonce = nonce;
    g.hold_id = (1ULL << 40) | 1;
    m.op_case = ESCROW__REQUEST__OP_GET;
    m.get = &g;
    if (!trailer) { /* packed in field order: before the operation */
        m.mac.data = mac;
        m.mac.len = mac_len;
    }
    size_t n = escrow__request__pack(&m, buf);
    if (trailer) {
        buf[n++] = (8 << 3) | 2;
        buf[n++] = (unsigned char)mac_len;
        memcpy(buf + n, mac, mac_len);
        n += mac_len;
    }
    return n;
}

static int decode_buf(const unsigned char *buf, size_t n)
{
    wire_request q;
    char why[WIRE_WHY_MAX] = "";
    int rc = wire_decode_request(buf, n, &q, why);
    if (rc != 0) {
        assert_true(strlen(why) > 0);
        assert_int_equal(q.corr_id, 7);
    }
    return rc;
}

/* The signature fields are bounded by the decoder, with or without a
 * credential check: all or none, a well-formed key id, a 32-byte MAC that
 * is the frame's last field, a clock that is a clock. */
static void test_signature_fields(void **state)
{
    (void)state;
    const char *id = "0123456789abcdef";
    unsigned char buf[512];
    assert_int_equal(decode_buf(buf, pack_signed("", 0, 0, 0, false, buf)), 0); /* unsigned */
    assert_int_equal(decode_buf(buf, pack_signed(id, 1, 2, 32, true, buf)), 0);
    assert_int_equal(
        decode_buf(buf, pack_signed(id, (uint64_t)WIRE_SENT_AT_MS_MAX, 2, 32, true, buf)), 0);
    assert_int_equal(
        decode_buf(buf, pack_signed(id, (uint64_t)WIRE_SENT_AT_MS_MAX + 1, 2, 32, true, buf)),
        ESC_EINVAL);
    assert_int_equal(decode_buf(buf, pack_signed(id, UINT64_MAX, 2, 32, true, buf)), ESC_EINVAL);
    assert_int_equal(decode_buf(buf, pack_signed("0123456789ABCDEF", 1, 2, 32, true, buf)),
                     ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed("0123", 1, 2, 32, true, buf)), ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed(id, 1, 2, 0, true, buf)), ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed(id, 1, 2, 31, true, buf)), ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed(id, 1, 2, 33, true, buf)), ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed(id, 1, 2, 0, false, buf)), ESC_EPROTO);
    /* the MAC inside the frame, not last: what it signs is ambiguous */
    assert_int_equal(decode_buf(buf, pack_signed(id, 1, 2, 32, false, buf)), ESC_EPROTO);
    /* anything after the MAC */
    size_t n = pack_signed(id, 1, 2, 32, true, buf);
    buf[n] = 0x08; /* field 1, varint 1: a valid field */
    buf[n + 1] = 0x01;
    assert_int_equal(decode_buf(buf, n + 2), ESC_EPROTO);
    /* signature fields without a key id */
    assert_int_equal(decode_buf(buf, pack_signed("", 0, 0, 32, true, buf)), ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed("", 5, 0, 0, false, buf)), ESC_EPROTO);
    assert_int_equal(decode_buf(buf, pack_signed("", 0, 5, 0, false, buf)), ESC_EPROTO);
    /* a signed frame cut anywhere is refused */
    n = pack_signed(id, 1, 2, 32, true, buf);
    for (size_t cut = 0; cut < n; cut++) {
        wire_request q;
        char why[WIRE_WHY_MAX];
        assert_int_not_equal(wire_decode_request(buf, cut, &q, why), 0);
    }
    /* the retired cleartext field is bounded too */
    wire_raw_request r = {.version = WIRE_VERSION,
                          .corr_id = 7,
                          .tenant_id = "t",
                          .op = WIRE_OP_GET,
                          .hold_id = (1ULL << 40) | 1};
    char cred[ESC_CREDENTIAL_LEN_MAX + 1];
    memset(cred, 'c', sizeof cred);
    r.credential = cred;
    r.credential_len = ESC_CREDENTIAL_LEN_MAX;
    assert_int_equal(wire_encode_raw(&r, buf, sizeof buf, &n), 0);
    assert_int_equal(decode_buf(buf, n), 0);
    r.credential_len = ESC_CREDENTIAL_LEN_MAX + 1;
    assert_int_equal(wire_encode_raw(&r, buf, sizeof buf, &n), 0);
    assert_int_equal(decode_buf(buf, n), ESC_ETOOBIG);
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
    memset(&out, 0, sizeof out);
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

/* Reply.replay: carried with a hold, false by default (an older node never
 * sets it), refused without the hold it names in either direction. */
static void test_reply_replay_flag(void **state)
{
    (void)state;
    wire_reply r;
    memset(&r, 0, sizeof r);
    r.corr_id = 5;
    r.has_hold = true;
    r.hold.hold_id = 1;
    r.hold.state = WIRE_HOLD_HELD;
    unsigned char buf[1024];
    size_t n;
    wire_reply out;
    memset(&out, 0, sizeof out);
    assert_int_equal(wire_encode_reply(&r, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_reply(buf, n, &out), 0);
    assert_false(out.replay);
    r.replay = true;
    assert_int_equal(wire_encode_reply(&r, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_reply(buf, n, &out), 0);
    assert_true(out.has_hold);
    assert_true(out.replay);
    r.has_hold = false;
    assert_int_equal(wire_encode_reply(&r, buf, sizeof buf, &n), ESC_EINVAL);
    /* a frame from a careless sender: replay set, no hold */
    Escrow__Reply m = ESCROW__REPLY__INIT;
    m.corr_id = 6;
    m.replay = true;
    n = escrow__reply__pack(&m, buf);
    assert_int_equal(wire_decode_reply(buf, n, &out), ESC_EPROTO);
}

static void test_route_request(void **state)
{
    (void)state;
    wire_request q = reserve_req(), out;
    q.op = WIRE_OP_ROUTE;
    unsigned char buf[2048];
    size_t n;
    char why[WIRE_WHY_MAX];
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.op, WIRE_OP_ROUTE);
    assert_string_equal(out.item_id, "tee");
    /* by segment instead of item */
    q.item_id[0] = '\0';
    q.segment_id = 17;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.segment_id, 17);
    /* both, or neither: refused */
    strcpy(q.item_id, "tee");
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    q.item_id[0] = '\0';
    q.segment_id = 0;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    /* a route needs a tenant */
    q.segment_id = 17;
    q.tenant_id[0] = '\0';
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
}

static void test_release_by_operator(void **state)
{
    (void)state;
    wire_request q = reserve_req(), out;
    q.op = WIRE_OP_RELEASE;
    q.hold_id = (3ULL << ESC_HOLD_SEQ_BITS) | 5;
    q.by_operator = true;
    unsigned char buf[2048];
    size_t n;
    char why[WIRE_WHY_MAX];
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_true(out.by_operator);
}

static wire_heartbeat *sample_heartbeat(void)
{
    wire_heartbeat *hb = calloc(1, sizeof *hb);
    assert_non_null(hb);
    strcpy(hb->node_id, "n1");
    strcpy(hb->endpoint, "tcp://127.0.0.1:7101");
    hb->incarnation = 99;
    hb->nsegs = 2;
    hb->segs[0] = (wire_seg_stats){.segment_id = 5,
                                   .epoch = 2,
                                   .available = 10,
                                   .held = 3,
                                   .sold = 4,
                                   .reserved = 7,
                                   .empties = 1};
    strcpy(hb->segs[0].tenant_id, "shop-1");
    hb->segs[1] = (wire_seg_stats){.segment_id = 6, .epoch = 3, .state = WIRE_SEG_DRAINING};
    hb->nxfers = 1;
    hb->xfers[0] = (wire_transfer_result){11, WIRE_XFER_SENT, 4};
    hb->ndry = 1;
    hb->dry[0] = 6;
    return hb;
}

static void test_heartbeat_roundtrip_and_bounds(void **state)
{
    (void)state;
    wire_heartbeat *hb = sample_heartbeat();
    static unsigned char buf[ESC_FRAME_BYTES_MAX];
    size_t n;
    wire_request out;
    char why[WIRE_WHY_MAX];
    assert_int_equal(wire_encode_heartbeat(3, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.op, WIRE_OP_HEARTBEAT);
    assert_int_equal(out.corr_id, 3);
    assert_string_equal(out.tenant_id, ""); /* a heartbeat is nobody's stock */
    assert_non_null(out.hb);
    assert_string_equal(out.hb->node_id, "n1");
    assert_int_equal(out.hb->incarnation, 99);
    assert_int_equal(out.hb->nsegs, 2);
    assert_int_equal(out.hb->segs[0].held, 3);
    assert_int_equal(out.hb->segs[0].reserved, 7);
    assert_string_equal(out.hb->segs[0].tenant_id, "shop-1");
    assert_int_equal(out.hb->segs[1].state, WIRE_SEG_DRAINING);
    assert_int_equal(out.hb->nxfers, 1);
    assert_int_equal(out.hb->xfers[0].qty, 4);
    assert_int_equal(out.hb->ndry, 1);
    assert_int_equal(out.hb->dry[0], 6);

    /* a full heartbeat fits the frame and the decoder's arena */
    hb->nsegs = ESC_HB_SEGMENTS_MAX;
    for (size_t i = 0; i < hb->nsegs; i++) {
        hb->segs[i] = (wire_seg_stats){.segment_id = i + 1,
                                       .epoch = 1u << 20,
                                       .available = 100000,
                                       .held = 100000,
                                       .sold = 100000,
                                       .reserved = 1u << 30,
                                       .empties = 1u << 20};
    }
    assert_int_equal(wire_encode_heartbeat(4, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.hb->nsegs, ESC_HB_SEGMENTS_MAX);

    /* bounds: negative counters, segment 0, bad outcome, no incarnation */
    free(hb);
    hb = sample_heartbeat();
    hb->segs[0].available = -1;
    assert_int_equal(wire_encode_heartbeat(5, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    free(hb);
    hb = sample_heartbeat();
    hb->dry[0] = 0;
    assert_int_equal(wire_encode_heartbeat(5, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    free(hb);
    hb = sample_heartbeat();
    hb->xfers[0].outcome = 9;
    assert_int_equal(wire_encode_heartbeat(5, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    free(hb);
    hb = sample_heartbeat();
    hb->incarnation = 0;
    assert_int_equal(wire_encode_heartbeat(5, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    hb->incarnation = 1;
    hb->endpoint[0] = '\0';
    assert_int_equal(wire_encode_heartbeat(5, hb, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    hb->nsegs = ESC_HB_SEGMENTS_MAX + 1;
    assert_int_equal(wire_encode_heartbeat(5, hb, buf, sizeof buf, &n), ESC_EINVAL);
    free(hb);
}

static void test_admin_requests(void **state)
{
    (void)state;
    unsigned char buf[2048];
    size_t n;
    wire_request out;
    char why[WIRE_WHY_MAX];
    assert_int_equal(
        wire_encode_admin(1, "shop-1", WIRE_ADMIN_RESTOCK, "tee", NULL, 50, 0, buf, sizeof buf, &n),
        0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.op, WIRE_OP_ADMIN);
    assert_int_equal(out.admin_op, WIRE_ADMIN_RESTOCK);
    assert_int_equal(out.qty, 50);
    assert_string_equal(out.item_id, "tee");
    /* drain needs a node, not a tenant */
    assert_int_equal(
        wire_encode_admin(2, NULL, WIRE_ADMIN_DRAIN, NULL, "n1", 0, 0, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_string_equal(out.node_id, "n1");
    assert_int_equal(
        wire_encode_admin(2, NULL, WIRE_ADMIN_DRAIN, NULL, NULL, 0, 0, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    /* item operations need a tenant and an item, restock a positive qty */
    assert_int_equal(
        wire_encode_admin(3, NULL, WIRE_ADMIN_PAUSE, "tee", NULL, 0, 0, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    assert_int_equal(
        wire_encode_admin(3, "shop-1", WIRE_ADMIN_PAUSE, "", NULL, 0, 0, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    assert_int_equal(
        wire_encode_admin(3, "shop-1", WIRE_ADMIN_RESTOCK, "tee", NULL, 0, 0, buf, sizeof buf, &n),
        0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    assert_int_equal(
        wire_encode_admin(3, "shop-1", WIRE_ADMIN_SPLIT, "tee", NULL, 0, 257, buf, sizeof buf, &n),
        0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    assert_int_equal(
        wire_encode_admin(3, "shop-1", WIRE_ADMIN_SPLIT, "tee", NULL, 0, 16, buf, sizeof buf, &n),
        0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.nsegments, 16);
    assert_int_equal(
        wire_encode_admin(3, "shop-1", WIRE_ADMIN_LAST_, "tee", NULL, 0, 0, buf, sizeof buf, &n),
        ESC_EINVAL);
}

/* Restock and reduce of a global item: the operation id and the region are
 * carried and bounded; they go with restock and reduce only. */
static void test_admin_global(void **state)
{
    (void)state;
    unsigned char buf[2048];
    size_t n;
    wire_request out;
    char why[WIRE_WHY_MAX];
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_RESTOCK, "tee", 50,
                                              "delivery-4711", "eu", buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.admin_op, WIRE_ADMIN_RESTOCK);
    assert_true(out.global);
    assert_string_equal(out.op_id, "delivery-4711");
    assert_string_equal(out.region, "eu");
    assert_int_equal(out.qty, 50);
    /* no region: the coordinator picks */
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_RESTOCK, "tee", 50, "op-1",
                                              NULL, buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_string_equal(out.region, "");
    /* a plain restock is not global */
    assert_int_equal(
        wire_encode_admin(1, "shop-1", WIRE_ADMIN_RESTOCK, "tee", NULL, 50, 0, buf, sizeof buf, &n),
        0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_false(out.global);
    assert_string_equal(out.op_id, "");
    /* a reduce names no region */
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_REDUCE, "tee", 5, "op-2",
                                              "us", buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_REDUCE, "tee", 5, "op-2", "",
                                              buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    assert_int_equal(out.admin_op, WIRE_ADMIN_REDUCE);
    /* an operation id is required, printable, at most 128 bytes */
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_REDUCE, "tee", 5, "", NULL,
                                              buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_REDUCE, "tee", 5, "a b", NULL,
                                              buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    char id[ESC_KEY_LEN_MAX + 2];
    memset(id, 'k', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_REDUCE, "tee", 5, id, NULL,
                                              buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_ETOOBIG);
    id[ESC_KEY_LEN_MAX] = '\0';
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_REDUCE, "tee", 5, id, NULL,
                                              buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), 0);
    /* a region name longer than 64 bytes */
    char region[ESC_REGION_LEN_MAX + 2];
    memset(region, 'r', sizeof region - 1);
    region[sizeof region - 1] = '\0';
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_RESTOCK, "tee", 5, "op",
                                              region, buf, sizeof buf, &n),
                     0);
    assert_int_equal(wire_decode_request(buf, n, &out, why), ESC_EINVAL);
    /* only restock and reduce are global */
    assert_int_equal(wire_encode_admin_global(1, "shop-1", WIRE_ADMIN_PAUSE, "tee", 0, "op", NULL,
                                              buf, sizeof buf, &n),
                     ESC_EINVAL);
}

static wire_route *sample_route(void)
{
    wire_route *r = calloc(1, sizeof *r);
    assert_non_null(r);
    strcpy(r->tenant_id, "shop-1");
    strcpy(r->item_id, "tee");
    r->version = 1234;
    r->tail_segment = 8;
    r->nsegs = 2;
    r->segs[0] = (wire_route_seg){.segment_id = 7, .epoch = 3, .state = WIRE_SEG_DRAINING};
    strcpy(r->segs[0].endpoint, "tcp://127.0.0.1:7101");
    r->segs[1] = (wire_route_seg){.segment_id = 8, .epoch = 4};
    return r;
}

static void test_route_pub_and_reply(void **state)
{
    (void)state;
    wire_route *r = sample_route();
    wire_route *got = calloc(1, sizeof *got);
    assert_non_null(got);
    static unsigned char buf[ESC_FRAME_BYTES_MAX];
    size_t n;
    assert_int_equal(wire_encode_route_pub(r, buf, sizeof buf, &n), 0);
    assert_memory_equal(buf, "shop-1", 7); /* the topic, NUL included */
    assert_int_equal(wire_decode_route_pub(buf, n, got), 0);
    assert_int_equal(got->version, 1234);
    assert_int_equal(got->tail_segment, 8);
    assert_int_equal(got->nsegs, 2);
    assert_string_equal(got->segs[0].endpoint, "tcp://127.0.0.1:7101");
    assert_string_equal(got->segs[1].endpoint, "");
    assert_int_equal(got->segs[0].state, WIRE_SEG_DRAINING);
    /* a topic that is not the route's tenant, or no topic at all: refused */
    buf[0] = 'x';
    assert_int_equal(wire_decode_route_pub(buf, n, got), ESC_EPROTO);
    assert_int_equal(wire_decode_route_pub("shop-1", 6, got), ESC_EPROTO);

    /* in a reply, with a heartbeat reply next to it */
    wire_hb_reply *hb = calloc(1, sizeof *hb), *hbgot = calloc(1, sizeof *hbgot);
    assert_non_null(hb);
    assert_non_null(hbgot);
    hb->lease_ms = 2000;
    hb->heartbeat_ms = 200;
    hb->nsegs = 1;
    hb->segs[0] = (wire_assignment){5, 9, WIRE_SEG_ACTIVE, true};
    hb->nxfers = 1;
    hb->xfers[0] = (wire_xfer_cmd){11, WIRE_XFER_RECEIVE, 5, 40};
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = 5;
    rep.route = r;
    rep.hb = hb;
    assert_int_equal(wire_encode_reply(&rep, buf, sizeof buf, &n), 0);
    wire_reply out;
    memset(&out, 0, sizeof out);
    assert_int_equal(wire_decode_reply(buf, n, &out), 0); /* no storage: parts ignored */
    assert_false(out.has_route);
    assert_false(out.has_hb);
    out.route = got;
    out.hb = hbgot;
    assert_int_equal(wire_decode_reply(buf, n, &out), 0);
    assert_true(out.has_route);
    assert_true(out.has_hb);
    assert_int_equal(got->nsegs, 2);
    assert_int_equal(hbgot->lease_ms, 2000);
    assert_int_equal(hbgot->segs[0].epoch, 9);
    assert_true(hbgot->segs[0].paused);
    assert_int_equal(hbgot->xfers[0].kind, WIRE_XFER_RECEIVE);
    assert_int_equal(hbgot->xfers[0].qty, 40);
    /* a part out of bounds spoils the reply */
    hb->xfers[0].qty = 0;
    assert_int_equal(wire_encode_reply(&rep, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_reply(buf, n, &out), ESC_EPROTO);
    free(r);
    free(got);
    free(hb);
    free(hbgot);
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

static void test_quota_requests_and_replies(void **state)
{
    (void)state;
    static unsigned char buf[ESC_FRAME_BYTES_MAX];
    static wire_quota q;
    size_t len;
    wire_request out;
    char why[WIRE_WHY_MAX];
    /* a status from eu with two items, no tenant of its own */
    memset(&q, 0, sizeof q);
    q.kind = WIRE_QUOTA_STATUS;
    strcpy(q.from_region, "eu");
    q.nitems = 2;
    strcpy(q.items[0].tenant_id, "t1");
    strcpy(q.items[0].item_id, "ticket");
    q.items[0].quota = 500;
    q.items[0].unused = 120;
    q.items[0].demand_milli = 80000;
    q.items[0].floor = 10;
    q.items[0].in_flight = 7;
    q.items[0].known = true;
    strcpy(q.items[1].tenant_id, "t2");
    strcpy(q.items[1].item_id, "seat");
    assert_int_equal(wire_encode_quota(9, NULL, &q, NULL, 0, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), 0);
    assert_int_equal(out.op, WIRE_OP_QUOTA);
    assert_non_null(out.quota);
    assert_int_equal(out.quota->kind, WIRE_QUOTA_STATUS);
    assert_string_equal(out.quota->from_region, "eu");
    assert_int_equal(out.quota->nitems, 2);
    assert_int_equal(out.quota->items[0].unused, 120);
    assert_int_equal(out.quota->items[0].in_flight, 7);
    assert_true(out.quota->items[0].known);
    assert_string_equal(out.quota->items[1].item_id, "seat");
    assert_false(out.quota->fresh);
    /* a fresh status (a reduce being judged) says so */
    q.fresh = true;
    assert_int_equal(wire_encode_quota(9, NULL, &q, NULL, 0, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), 0);
    assert_true(out.quota->fresh);
    /* an offer needs a tenant, an item, a qty, a transfer id and both regions */
    memset(&q, 0, sizeof q);
    q.kind = WIRE_QUOTA_OFFER;
    strcpy(q.from_region, "eu");
    strcpy(q.to_region, "us");
    q.transfer_id = 77;
    assert_int_equal(wire_encode_quota(10, "t1", &q, "ticket", 300, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), 0);
    assert_int_equal(out.quota->transfer_id, 77);
    assert_int_equal(out.qty, 300);
    assert_string_equal(out.item_id, "ticket");
    assert_string_equal(out.tenant_id, "t1");
    assert_int_equal(wire_encode_quota(10, NULL, &q, "ticket", 300, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), ESC_EINVAL); /* no tenant */
    assert_int_equal(wire_encode_quota(10, "t1", &q, "ticket", 0, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), ESC_EINVAL); /* qty 0 */
    q.transfer_id = 0;
    assert_int_equal(wire_encode_quota(10, "t1", &q, "ticket", 3, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), ESC_EINVAL);
    q.transfer_id = 5;
    q.to_region[0] = '\0';
    assert_int_equal(wire_encode_quota(10, "t1", &q, "ticket", 3, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), ESC_EINVAL);
    /* a move names no sender region; an unknown kind is refused */
    memset(&q, 0, sizeof q);
    q.kind = WIRE_QUOTA_MOVE;
    strcpy(q.to_region, "us");
    assert_int_equal(wire_encode_quota(11, "t1", &q, "ticket", 5, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), 0);
    assert_int_equal(out.quota->kind, WIRE_QUOTA_MOVE);
    q.kind = 9;
    assert_int_equal(wire_encode_quota(11, "t1", &q, "ticket", 5, buf, sizeof buf, &len),
                     ESC_EINVAL);
    /* negative figures in a status are refused */
    memset(&q, 0, sizeof q);
    q.kind = WIRE_QUOTA_STATUS;
    strcpy(q.from_region, "eu");
    q.nitems = 1;
    strcpy(q.items[0].tenant_id, "t1");
    strcpy(q.items[0].item_id, "ticket");
    q.items[0].unused = -1;
    assert_int_equal(wire_encode_quota(12, NULL, &q, NULL, 0, buf, sizeof buf, &len), 0);
    assert_int_equal(wire_decode_request(buf, len, &out, why), ESC_EINVAL);
    /* the stock figures: each bounded */
    q.items[0].unused = 0;
    const struct {
        int64_t held, sold, pending, ask, sum;
        uint64_t changes;
        uint32_t share;
        int rc;
    } cases[] = {
        {1, 2, 3, 4, -5, 6, 7, 0},
        {ESC_TOTAL_MAX, ESC_TOTAL_MAX, ESC_TOTAL_MAX, ESC_GLOBAL_CHANGE_SUM_MAX,
         ESC_GLOBAL_CHANGE_SUM_MAX, ESC_GLOBAL_CHANGES_MAX, ESC_QUOTA_SHARE_MAX, 0},
        {-1, 0, 0, 0, 0, 0, 0, ESC_EINVAL},
        {0, ESC_TOTAL_MAX + 1, 0, 0, 0, 0, 0, ESC_EINVAL},
        {0, 0, -1, 0, 0, 0, 0, ESC_EINVAL},
        {0, 0, 0, ESC_GLOBAL_CHANGE_SUM_MAX + 1, 0, 0, 0, ESC_EINVAL},
        {0, 0, 0, -1, 0, 0, 0, ESC_EINVAL},
        {0, 0, 0, 0, -ESC_GLOBAL_CHANGE_SUM_MAX - 1, 0, 0, ESC_EINVAL},
        {0, 0, 0, 0, 0, ESC_GLOBAL_CHANGES_MAX + 1, 0, ESC_EINVAL},
        {0, 0, 0, 0, 0, 0, ESC_QUOTA_SHARE_MAX + 1, ESC_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        q.items[0].held = cases[i].held;
        q.items[0].sold = cases[i].sold;
        q.items[0].reduce_pending = cases[i].pending;
        q.items[0].reduce_ask = cases[i].ask;
        q.items[0].change_sum = cases[i].sum;
        q.items[0].changes = cases[i].changes;
        q.items[0].share = cases[i].share;
        assert_int_equal(wire_encode_quota(12, NULL, &q, NULL, 0, buf, sizeof buf, &len), 0);
        assert_int_equal(wire_decode_request(buf, len, &out, why), cases[i].rc);
        if (cases[i].rc == 0) {
            const wire_quota_item *e = &out.quota->items[0];
            assert_int_equal(e->held, cases[i].held);
            assert_int_equal(e->sold, cases[i].sold);
            assert_int_equal(e->reduce_pending, cases[i].pending);
            assert_int_equal(e->reduce_ask, cases[i].ask);
            assert_int_equal(e->change_sum, cases[i].sum);
            assert_int_equal(e->changes, cases[i].changes);
            assert_int_equal(e->share, cases[i].share);
        }
    }
    /* a full page of the largest items fits in a frame */
    memset(&q, 0, sizeof q);
    q.kind = WIRE_QUOTA_STATUS;
    memset(q.from_region, 'r', ESC_REGION_LEN_MAX);
    q.nitems = ESC_QUOTA_ITEMS_MAX;
    for (size_t i = 0; i < q.nitems; i++) {
        wire_quota_item *e = &q.items[i];
        memset(e->tenant_id, 't', ESC_TENANT_LEN_MAX);
        memset(e->item_id, 'i', ESC_ITEM_LEN_MAX);
        e->quota = e->unused = e->floor = e->in_flight = e->held = e->sold = ESC_TOTAL_MAX;
        e->reduce_pending = ESC_TOTAL_MAX;
        e->reduce_ask = ESC_GLOBAL_CHANGE_SUM_MAX;
        e->demand_milli = INT64_MAX;
        e->changes = ESC_GLOBAL_CHANGES_MAX;
        e->change_sum = -ESC_GLOBAL_CHANGE_SUM_MAX;
        e->share = ESC_QUOTA_SHARE_MAX;
        e->known = true;
    }
    assert_int_equal(wire_encode_quota(13, NULL, &q, NULL, 0, buf, sizeof buf, &len), 0);
    assert_true(len <= ESC_FRAME_BYTES_MAX);
    assert_int_equal(wire_decode_request(buf, len, &out, why), 0);
    assert_int_equal(out.quota->nitems, ESC_QUOTA_ITEMS_MAX);
    /* a reply with the region and its view of the items */
    static wire_quota_item items[2], back[2];
    memset(items, 0, sizeof items);
    strcpy(items[0].tenant_id, "t1");
    strcpy(items[0].item_id, "ticket");
    items[0].quota = 400;
    items[0].known = true;
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = 12;
    strcpy(rep.region, "us");
    rep.quota = items;
    rep.nquota = 1;
    assert_int_equal(wire_encode_reply(&rep, buf, sizeof buf, &len), 0);
    wire_reply r2;
    memset(&r2, 0, sizeof r2);
    r2.quota = back;
    r2.quota_cap = 2;
    assert_int_equal(wire_decode_reply(buf, len, &r2), 0);
    assert_string_equal(r2.region, "us");
    assert_int_equal(r2.nquota, 1);
    assert_int_equal(back[0].quota, 400);
    assert_true(back[0].known);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_op),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_garbage_and_truncation),
        cmocka_unit_test(test_signature_fields),
        cmocka_unit_test(test_hold_id_and_confirm_bounds),
        cmocka_unit_test(test_encode_refuses_invalid),
        cmocka_unit_test(test_reply_roundtrip),
        cmocka_unit_test(test_reply_replay_flag),
        cmocka_unit_test(test_request_hash),
        cmocka_unit_test(test_route_request),
        cmocka_unit_test(test_release_by_operator),
        cmocka_unit_test(test_heartbeat_roundtrip_and_bounds),
        cmocka_unit_test(test_admin_requests),
        cmocka_unit_test(test_admin_global),
        cmocka_unit_test(test_route_pub_and_reply),
        cmocka_unit_test(test_quota_requests_and_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
