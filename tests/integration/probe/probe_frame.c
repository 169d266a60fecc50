/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_frame.c - esc_probe's one-frame sub-commands (see probe_frame.h):
 * requests encoded with wire.h's encoders (signed with --credential's key),
 * or shaped the way a careless or hostile client would send them (a
 * cleartext credential, a clock outside the window, a tampered MAC, a
 * captured frame sent again), sent over a raw REQ socket (probe_req.h).
 */
#include "probe_frame.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "escrow_errors.h"
#include "nnx.h"
#include "probe.h"
#include "probe_req.h"
#include "wire.h"

/* frame resends every 25 ms (a raw socket drops frames until it is
 * connected), hint-reserve and op-release every 250 ms. */
#define FRAME_RESEND_MS 25
#define HINT_RESEND_MS 250

static const struct {
    const char *name;
    uint32_t op;
} k_admin[] = {
    {"admin-restock", WIRE_ADMIN_RESTOCK},     {"admin-reduce", WIRE_ADMIN_REDUCE},
    {"admin-pause", WIRE_ADMIN_PAUSE},         {"admin-resume", WIRE_ADMIN_RESUME},
    {"admin-split", WIRE_ADMIN_SPLIT},         {"admin-collapse", WIRE_ADMIN_COLLAPSE},
    {"admin-rebalance", WIRE_ADMIN_REBALANCE}, {"admin-retire", WIRE_ADMIN_RETIRE},
    {"admin-drain", WIRE_ADMIN_DRAIN},         {"admin-undrain", WIRE_ADMIN_UNDRAIN},
    {"admin-reload", WIRE_ADMIN_RELOAD},
};

static const struct {
    const char *name;
    wire_op op;
} k_tenant[] = {
    {"reserve", WIRE_OP_RESERVE}, {"confirm", WIRE_OP_CONFIRM},
    {"release", WIRE_OP_RELEASE}, {"extend", WIRE_OP_EXTEND},
    {"get", WIRE_OP_GET},         {"stats", WIRE_OP_STATS},
    {"route", WIRE_OP_ROUTE},     {"op-release", WIRE_OP_RELEASE},
    {"resolve", WIRE_OP_RESERVE},
};

/* Replaces spaces with _: the scripts split the answer line on spaces. */
static void one_word(char *s)
{
    for (; *s != '\0'; s++) {
        *s = *s == ' ' ? '_' : *s;
    }
}

static int encode_tenant_op(const probe_args *a, wire_op op, uint8_t *buf, size_t cap, size_t *len)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 9;
    q.op = op;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", a->tenant);
    snprintf(q.item_id, sizeof q.item_id, "%s", a->item ? a->item : "");
    snprintf(q.buyer_id, sizeof q.buyer_id, "%s", a->key ? a->key : "");
    snprintf(q.key, sizeof q.key, "%s", a->key ? a->key : "");
    q.qty = op == WIRE_OP_CONFIRM ? 0 : a->qty;
    q.hold_id = a->hold_id;
    q.segment_id = a->segment_id;
    q.by_operator = strcmp(a->op, "op-release") == 0;
    q.resolve = strcmp(a->op, "resolve") == 0; /* libescrow's question before a "no" */
    q.attempt = q.resolve ? 77 : 0;
    return wire_encode_request(&q, buf, cap, len);
}

/* quota-move / quota-status: --node names the other region. */
static int encode_quota(const probe_args *a, uint8_t *buf, size_t cap, size_t *len)
{
    static wire_quota q;
    memset(&q, 0, sizeof q);
    bool move = strcmp(a->op, "quota-move") == 0;
    q.kind = move ? WIRE_QUOTA_MOVE : WIRE_QUOTA_STATUS;
    snprintf(move ? q.to_region : q.from_region, sizeof q.to_region, "%s",
             a->node ? a->node : "elsewhere");
    return wire_encode_quota(9, move ? a->tenant : NULL, &q, move ? a->item : NULL,
                             move ? a->qty : 0, buf, cap, len);
}

static int encode(const probe_args *a, uint8_t *buf, size_t cap, size_t *len)
{
    for (size_t i = 0; i < sizeof k_tenant / sizeof k_tenant[0]; i++) {
        if (strcmp(a->op, k_tenant[i].name) == 0) {
            return encode_tenant_op(a, k_tenant[i].op, buf, cap, len);
        }
    }
    for (size_t i = 0; i < sizeof k_admin / sizeof k_admin[0]; i++) {
        if (strcmp(a->op, k_admin[i].name) == 0) {
            uint32_t op = k_admin[i].op;
            return wire_encode_admin(9, a->tenant, op, a->item ? a->item : "",
                                     a->node ? a->node : "", a->qty,
                                     op == WIRE_ADMIN_SPLIT ? (uint32_t)a->qty : 0, buf, cap, len);
        }
    }
    if (strcmp(a->op, "quota-move") == 0 || strcmp(a->op, "quota-status") == 0) {
        return encode_quota(a, buf, cap, len);
    }
    if (strcmp(a->op, "heartbeat") == 0) {
        static wire_heartbeat hb;
        memset(&hb, 0, sizeof hb);
        snprintf(hb.node_id, sizeof hb.node_id, "%s", a->node ? a->node : "intruder");
        snprintf(hb.endpoint, sizeof hb.endpoint, "tcp://127.0.0.1:1");
        hb.incarnation = 1;
        return wire_encode_heartbeat(9, &hb, buf, cap, len);
    }
    return ESC_EINVAL;
}

/* Sends buf and waits for its reply: 1 = reply in *rep (an undecodable one
 * as ESC_EPROTO), 0 = none within deadline_ms. The reply's segments and
 * route land in storage of this file's. */
static int frame_call(probe_req *c, const uint8_t *buf, size_t len, uint32_t deadline_ms,
                      int64_t resend_ms, wire_reply *rep)
{
    static wire_seg_stats segs[ESC_STATS_SEGMENTS_MAX];
    static wire_route route;
    void *msg = NULL;
    size_t mlen = 0;
    if (probe_req_call(c, buf, len, deadline_ms, resend_ms, &msg, &mlen) != 1) {
        return 0;
    }
    memset(rep, 0, sizeof *rep);
    rep->segs = segs;
    rep->segs_cap = ESC_STATS_SEGMENTS_MAX;
    rep->route = &route;
    int rc = wire_decode_reply(msg, mlen, rep);
    nnx_free(msg);
    if (rc != 0) {
        rep->status = ESC_EPROTO;
        snprintf(rep->message, sizeof rep->message, "undecodable reply");
    }
    return 1;
}

static void print_reply(wire_reply *rep)
{
    one_word(rep->message);
    printf("%s hold=%" PRIu64 " nsegs=%zu route=%d msg=%s\n", esc_err_name(rep->status),
           rep->has_hold ? rep->hold.hold_id : 0, rep->nsegs, rep->has_route ? 1 : 0,
           rep->message[0] ? rep->message : "-");
}

/* n copies one after the other: how many of each answer (rate limits). */
static void frame_counts(probe_req *c, const uint8_t *buf, size_t len, const probe_args *a)
{
    uint32_t ok = 0, busy = 0, other = 0, none = 0;
    char busy_msg[WIRE_WHY_MAX] = "-";
    wire_reply rep = {0};
    for (uint32_t i = 0; i < a->n; i++) {
        if (!frame_call(c, buf, len, a->deadline_ms, FRAME_RESEND_MS, &rep)) {
            none++;
        } else if (rep.status == 0) {
            ok++;
        } else if (rep.status == ESC_EBUSY) {
            if (busy++ == 0) {
                one_word(rep.message);
                snprintf(busy_msg, sizeof busy_msg, "%s", rep.message);
            }
        } else {
            other++;
        }
    }
    printf("COUNTS n=%u ok=%u busy=%u other=%u none=%u busy_msg=%s\n", a->n, ok, busy, other, none,
           busy_msg);
}

/* The bytes of --frame-file. Returns 0 or an ESC_E* code. */
static int load_frame(const char *path, uint8_t *buf, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return ESC_EIO;
    }
    *len = fread(buf, 1, cap, f);
    int rc = ferror(f) ? ESC_EIO : !feof(f) ? ESC_ETOOBIG : 0;
    fclose(f);
    return rc;
}

/* The retired cleartext field (Request.credential, field 4, bytes) appended
 * to an unsigned frame: what a client from before signing sent. */
static int add_cleartext(const char *text, uint8_t *buf, size_t cap, size_t *len)
{
    size_t n = strlen(text);
    if (n > ESC_CREDENTIAL_LEN_MAX || *len + 3 + n > cap) {
        return ESC_ETOOBIG;
    }
    buf[(*len)++] = (4 << 3) | 2;
    if (n >= 0x80) {
        buf[(*len)++] = (uint8_t)(0x80 | (n & 0x7f));
        n >>= 7;
    }
    buf[(*len)++] = (uint8_t)n;
    memcpy(buf + *len, text, strlen(text));
    *len += strlen(text);
    return 0;
}

/* What the options do to the encoded frame: a --credential that is not a
 * key (or --cleartext) goes in the cleartext field, --sign-skew-ms signs it
 * again at another time, --tamper flips a bit of its MAC (the last byte),
 * --save writes the bytes that will be sent. Returns 0 or an ESC_E* code. */
static int shape(const probe_args *a, uint8_t *buf, size_t cap, size_t *len)
{
    static uint8_t tmp[ESC_FRAME_BYTES_MAX];
    auth_key key;
    memset(&key, 0, sizeof key);
    const char *cred = a->credential;
    bool is_key = cred != NULL && auth_key_parse(cred, strlen(cred), key.key_id, key.hash) == 0;
    int rc = 0;
    if (cred != NULL && (a->cleartext || !is_key)) {
        rc = add_cleartext(cred, buf, cap, len);
    } else if (a->skew_set && is_key) {
        size_t n = 0;
        rc = wire_sign_frame(buf, *len, &key, esc_wall_ms() + a->sign_skew_ms, tmp, sizeof tmp, &n);
        if (rc == 0) {
            memcpy(buf, tmp, n);
            *len = n;
        }
    }
    if (rc == 0 && a->tamper && *len > 0) {
        buf[*len - 1] ^= 1;
    }
    FILE *f = rc == 0 && a->save_path != NULL ? fopen(a->save_path, "wb") : NULL;
    if (a->save_path != NULL && rc == 0 &&
        (f == NULL || fwrite(buf, 1, *len, f) != *len || fclose(f) != 0)) {
        rc = ESC_EIO;
    }
    return rc;
}

/* Tenant operations are idempotent and resent; the others (admin, quota,
 * heartbeat) are sent once, like escrowctl sends them: a resend of the
 * same signed bytes is a replay the daemons refuse, and its refusal could
 * arrive before the first copy's answer. */
static int64_t resend_ms_of(const probe_args *a)
{
    if (a->frame_file != NULL) {
        return 0;
    }
    for (size_t i = 0; i < sizeof k_tenant / sizeof k_tenant[0]; i++) {
        if (strcmp(a->op, k_tenant[i].name) == 0) {
            return FRAME_RESEND_MS;
        }
    }
    return 0;
}

int probe_frame(const probe_args *a)
{
    static uint8_t buf[ESC_FRAME_BYTES_MAX];
    if ((a->op == NULL && a->frame_file == NULL) || a->endpoint == NULL) {
        probe_die("frame needs --op (or --frame-file) and --endpoint (a node's or the "
                  "coordinator's)");
    }
    size_t len = 0;
    int rc = a->frame_file != NULL ? load_frame(a->frame_file, buf, sizeof buf, &len)
                                   : encode(a, buf, sizeof buf, &len);
    if (rc == 0 && a->frame_file == NULL) {
        rc = shape(a, buf, sizeof buf, &len);
    }
    if (rc != 0) {
        fprintf(stderr, "esc_probe: frame: cannot make '%s': %s\n",
                a->op != NULL ? a->op : a->frame_file, esc_err_name(rc));
        return PROBE_EXIT_USAGE;
    }
    probe_req c;
    if (probe_req_open(&c, a->endpoint) != 0) {
        fprintf(stderr, "esc_probe: frame: cannot reach %s\n", a->endpoint);
        return PROBE_EXIT_USAGE;
    }
    wire_reply rep = {0};
    if (a->n > 1) {
        frame_counts(&c, buf, len, a);
    } else if (frame_call(&c, buf, len, a->deadline_ms, resend_ms_of(a), &rep)) {
        print_reply(&rep);
    } else {
        printf("TIMEDOUT hold=0 nsegs=0 route=0 msg=-\n");
    }
    probe_req_close(&c);
    return 0;
}

/* ---- hint-reserve, op-release --------------------------------------------- */

static int hint_fail(const char *what, int rc)
{
    fprintf(stderr, "esc_probe: FAIL: %s: %s\n", what, esc_err_name(rc));
    return PROBE_EXIT_FAIL;
}

static void print_hold_reply(wire_reply *rep)
{
    const char *states[] = {"none", "held", "converted", "cancelled", "expired"};
    int st = rep->has_hold && rep->hold.state >= 1 && rep->hold.state <= 4 ? rep->hold.state : 0;
    one_word(rep->message);
    printf("%s hold=%" PRIu64 " seg=%" PRIu64 " state=%s qty=%" PRId64 " msg=%s\n",
           esc_err_name(rep->status), rep->has_hold ? rep->hold.hold_id : 0,
           rep->has_hold ? rep->hold.segment_id : 0, states[st], rep->has_hold ? rep->hold.qty : 0,
           rep->message[0] ? rep->message : "-");
}

/* One request; prints the outcome line. */
static int hint_call(const char *endpoint, const wire_request *q, uint32_t deadline_ms)
{
    unsigned char buf[4096];
    size_t len;
    int rc = wire_encode_request(q, buf, sizeof buf, &len);
    if (rc != 0) {
        return hint_fail("encode", rc);
    }
    probe_req c;
    if ((rc = probe_req_open(&c, endpoint)) != 0) {
        return hint_fail("connect", rc);
    }
    void *msg = NULL;
    size_t mlen = 0;
    if (probe_req_call(&c, buf, len, deadline_ms, HINT_RESEND_MS, &msg, &mlen) != 1) {
        printf("TIMEDOUT hold=0 seg=0 state=none qty=0 msg=-\n");
        probe_req_close(&c);
        return 0;
    }
    probe_req_close(&c);
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rc = wire_decode_reply(msg, mlen, &rep);
    nnx_free(msg);
    if (rc != 0) {
        return hint_fail("decode reply", rc);
    }
    print_hold_reply(&rep);
    return 0;
}

int probe_hint_reserve(const probe_args *a)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 7;
    q.op = WIRE_OP_RESERVE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", a->tenant);
    snprintf(q.item_id, sizeof q.item_id, "%s", a->item);
    snprintf(q.buyer_id, sizeof q.buyer_id, "%s", a->buyer != NULL ? a->buyer : a->key);
    snprintf(q.key, sizeof q.key, "%s", a->key);
    q.qty = a->qty;
    q.segment_id = a->segment_id;
    q.attempt = a->attempt;
    q.resolve = a->resolve;
    return hint_call(a->endpoint, &q, a->deadline_ms);
}

int probe_op_release(const probe_args *a)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 8;
    q.op = WIRE_OP_RELEASE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", a->tenant);
    q.hold_id = a->hold_id;
    q.by_operator = true;
    return hint_call(a->endpoint, &q, a->deadline_ms);
}
