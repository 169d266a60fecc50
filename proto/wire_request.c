/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_request.c - the Request frame (see wire.h): decoding and validating a
 * request (the outer frame, the access check hook, the tenant operations),
 * and encoding one (wire_encode_request, wire_encode_raw, the process's
 * credential). The bodies of the cluster's own requests (heartbeat, admin,
 * quota) are wire_cluster.c's.
 *
 * Decoding unpacks with protobuf-c into the thread's arena (wire_arena.h: no
 * heap on the hot path), validates every field, copies it into the caller's
 * wire_request and frees nothing but the arena.
 *
 * Every encoder ends in pack_signed: the frame is packed with its key id,
 * clock and nonce, and the MAC of those bytes is appended as the frame's
 * last field (escrow.proto, Request.mac), so a verifier MACs the bytes
 * before it without decoding and re-encoding anything.
 */
#include "wire_request.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "wire.h"
#include "wire_arena.h"
#include "wire_cluster.h"
#include "wire_field.h"

/* ---- decoding ------------------------------------------------------------ */

static int decode_reserve(const Escrow__ReserveReq *r, wire_request *out, char *why)
{
    int rc;
    if ((rc = wire_copy_id(out->item_id, ESC_ITEM_LEN_MAX, r->item_id, why, "item_id")) < 0 ||
        (rc = wire_copy_id(out->buyer_id, ESC_BUYER_LEN_MAX, r->buyer_id, why, "buyer_id")) < 0 ||
        (rc = wire_copy_id(out->key, ESC_KEY_LEN_MAX, r->idempotency_key, why, "idempotency_key")) <
            0) {
        return rc;
    }
    if (r->qty < 1 || r->qty > ESC_QTY_MAX) {
        return wire_why(why, ESC_EINVAL, "qty must be between 1 and 10000");
    }
    if ((rc = wire_check_ttl(r->ttl_ms, why)) < 0) {
        return rc;
    }
    if (r->segment_id > ESC_SEGMENT_ID_MAX) {
        return wire_why(why, ESC_EINVAL, "segment_id out of range");
    }
    out->qty = r->qty;
    out->ttl_ms = r->ttl_ms;
    out->segment_id = r->segment_id;
    out->attempt = r->attempt;
    out->resolve = r->resolve;
    return 0;
}

static int decode_route_req(const Escrow__RouteReq *r, wire_request *out, char *why)
{
    bool has_item = r->item_id != NULL && r->item_id[0] != '\0';
    if (has_item == (r->segment_id != 0)) {
        return wire_why(why, ESC_EINVAL, "a route request names an item_id or a segment_id");
    }
    if (!has_item) {
        if (!wire_segment_id_valid(r->segment_id)) {
            return wire_why(why, ESC_EINVAL, "segment_id out of range");
        }
        out->segment_id = r->segment_id;
        return 0;
    }
    return wire_copy_id(out->item_id, ESC_ITEM_LEN_MAX, r->item_id, why, "item_id");
}

/* Confirm, release, extend, get: the operations on one hold. */
static int decode_hold_op(const Escrow__Request *m, wire_request *out, char *why)
{
    int rc;
    switch (m->op_case) {
    case ESCROW__REQUEST__OP_CONFIRM:
        if (m->confirm->qty < 0 || m->confirm->qty > ESC_QTY_MAX) {
            return wire_why(why, ESC_EINVAL, "confirm qty must be between 0 (all) and 10000");
        }
        out->qty = m->confirm->qty;
        out->hold_id = m->confirm->hold_id;
        break;
    case ESCROW__REQUEST__OP_RELEASE:
        out->hold_id = m->release->hold_id;
        out->by_operator = m->release->by_operator;
        break;
    case ESCROW__REQUEST__OP_EXTEND:
        out->hold_id = m->extend->hold_id;
        out->ttl_ms = m->extend->ttl_ms;
        if ((rc = wire_check_ttl(out->ttl_ms, why)) < 0) {
            return rc;
        }
        break;
    default: /* ESCROW__REQUEST__OP_GET */
        out->hold_id = m->get->hold_id;
        break;
    }
    return wire_check_hold_id(out->hold_id, why);
}

/* The operation of a parsed frame, before its body is decoded. */
static wire_op op_of(const Escrow__Request *m)
{
    switch (m->op_case) {
    case ESCROW__REQUEST__OP_RESERVE:
        return WIRE_OP_RESERVE;
    case ESCROW__REQUEST__OP_CONFIRM:
        return WIRE_OP_CONFIRM;
    case ESCROW__REQUEST__OP_RELEASE:
        return WIRE_OP_RELEASE;
    case ESCROW__REQUEST__OP_EXTEND:
        return WIRE_OP_EXTEND;
    case ESCROW__REQUEST__OP_GET:
        return WIRE_OP_GET;
    case ESCROW__REQUEST__OP_STATS:
        return WIRE_OP_STATS;
    case ESCROW__REQUEST__OP_ROUTE:
        return WIRE_OP_ROUTE;
    case ESCROW__REQUEST__OP_HEARTBEAT:
        return WIRE_OP_HEARTBEAT;
    case ESCROW__REQUEST__OP_ADMIN:
        return WIRE_OP_ADMIN;
    case ESCROW__REQUEST__OP_QUOTA:
        return WIRE_OP_QUOTA;
    default:
        return WIRE_OP_NONE;
    }
}

static int decode_op(const Escrow__Request *m, wire_decode_mem *mem, wire_request *out, char *why)
{
    int rc;
    out->op = op_of(m);
    switch (out->op) {
    case WIRE_OP_RESERVE:
        return decode_reserve(m->reserve, out, why);
    case WIRE_OP_CONFIRM:
    case WIRE_OP_RELEASE:
    case WIRE_OP_EXTEND:
    case WIRE_OP_GET:
        return decode_hold_op(m, out, why);
    case WIRE_OP_STATS:
        if (m->stats->item_id != NULL && m->stats->item_id[0] != '\0') {
            return wire_copy_id(out->item_id, ESC_ITEM_LEN_MAX, m->stats->item_id, why, "item_id");
        }
        return 0;
    case WIRE_OP_ROUTE:
        return decode_route_req(m->route, out, why);
    case WIRE_OP_HEARTBEAT:
        if ((rc = wire_heartbeat_from_pb(m->heartbeat, &mem->hb, why)) == 0) {
            out->hb = &mem->hb;
        }
        return rc;
    case WIRE_OP_ADMIN:
        return wire_admin_from_pb(m->admin, out, why);
    case WIRE_OP_QUOTA:
        if ((rc = wire_quota_from_pb(m->quota, &mem->quota, out, why)) == 0) {
            out->quota = &mem->quota;
        }
        return rc;
    default:
        return wire_why(why, ESC_EPROTO, "request names no operation");
    }
}

/* Requests that are not about one tenant's stock carry no tenant. */
static bool tenant_optional(const Escrow__Request *m)
{
    if (m->op_case == ESCROW__REQUEST__OP_HEARTBEAT) {
        return true;
    }
    if (m->op_case == ESCROW__REQUEST__OP_ADMIN) {
        uint32_t op = m->admin->op;
        return op == WIRE_ADMIN_DRAIN || op == WIRE_ADMIN_UNDRAIN || op == WIRE_ADMIN_RELOAD;
    }
    if (m->op_case == ESCROW__REQUEST__OP_QUOTA) {
        return m->quota->kind == WIRE_QUOTA_STATUS; /* its items name their tenants */
    }
    return false;
}

/* Who may send a parsed frame's operation (wire_access). */
static wire_access access_of(const Escrow__Request *m)
{
    switch (m->op_case) {
    case ESCROW__REQUEST__OP_HEARTBEAT:
        return WIRE_ACCESS_INTERNAL;
    case ESCROW__REQUEST__OP_ADMIN:
        return WIRE_ACCESS_ADMIN;
    case ESCROW__REQUEST__OP_QUOTA:
        return m->quota->kind == WIRE_QUOTA_MOVE ? WIRE_ACCESS_ADMIN : WIRE_ACCESS_INTERNAL;
    case ESCROW__REQUEST__OP_RELEASE:
        return m->release->by_operator ? WIRE_ACCESS_ADMIN : WIRE_ACCESS_TENANT;
    default:
        return WIRE_ACCESS_TENANT;
    }
}

/* The signature fields (wire.h: their bounds) into sig. buf and len are
 * the whole frame: a signed frame's MAC must be its last field, so that
 * the bytes before it are what was signed. */
static int decode_sig(const Escrow__Request *m, const uint8_t *buf, size_t len, auth_sig *sig,
                      char *why)
{
    memset(sig, 0, sizeof *sig);
    sig->key_id = "";
    if (m->credential.len > ESC_CREDENTIAL_LEN_MAX) {
        return wire_why(why, ESC_ETOOBIG, "credential too long");
    }
    sig->cleartext_len = m->credential.len;
    bool has_id = m->key_id != NULL && m->key_id[0] != '\0';
    if (!has_id) {
        if (m->mac.len != 0 || m->sent_at_ms != 0 || m->nonce != 0) {
            return wire_why(why, ESC_EPROTO, "signature fields without a key_id");
        }
        return 0;
    }
    if (!auth_key_id_valid(m->key_id)) {
        return wire_why(why, ESC_EPROTO, "key_id must be 16 lowercase hex characters");
    }
    if (m->mac.len != AUTH_MAC_BYTES || len < WIRE_MAC_TRAILER_BYTES) {
        return wire_why(why, ESC_EPROTO, "a signed frame needs a 32-byte mac");
    }
    const uint8_t *t = buf + len - WIRE_MAC_TRAILER_BYTES;
    if (t[0] != WIRE_MAC_TAG || t[1] != AUTH_MAC_BYTES ||
        memcmp(t + 2, m->mac.data, AUTH_MAC_BYTES) != 0) {
        return wire_why(why, ESC_EPROTO, "the mac must be the frame's last field");
    }
    if (m->sent_at_ms > (uint64_t)WIRE_SENT_AT_MS_MAX) {
        return wire_why(why, ESC_EINVAL, "sent_at_ms out of range");
    }
    sig->key_id = m->key_id;
    sig->sent_at_ms = (int64_t)m->sent_at_ms;
    sig->mac = t + 2;
    sig->signed_bytes = buf;
    sig->signed_len = len - WIRE_MAC_TRAILER_BYTES;
    return 0;
}

/* The outer frame: version, signature, tenant, then the check. */
static int decode_head(const Escrow__Request *m, const uint8_t *buf, size_t len, wire_request *out,
                       char *why, wire_check_fn check, void *arg)
{
    out->corr_id = m->corr_id;
    if (m->version != WIRE_VERSION) {
        return wire_why(why, ESC_EPROTO, "unsupported protocol version");
    }
    wire_head head = {.corr_id = out->corr_id, .op = op_of(m), .access = access_of(m)};
    int rc = decode_sig(m, buf, len, &head.sig, why);
    if (rc < 0) {
        return rc;
    }
    if (!tenant_optional(m) || (m->tenant_id != NULL && m->tenant_id[0] != '\0')) {
        rc = wire_copy_id(out->tenant_id, ESC_TENANT_LEN_MAX, m->tenant_id, why, "tenant_id");
        if (rc < 0) {
            return rc;
        }
    }
    if (check == NULL) {
        return 0;
    }
    head.tenant_id = out->tenant_id;
    return check(&head, why, arg);
}

int wire_decode_request(const void *buf, size_t len, wire_request *out, char why[WIRE_WHY_MAX])
{
    return wire_decode_request_checked(buf, len, out, why, NULL, NULL);
}

int wire_decode_request_checked(const void *buf, size_t len, wire_request *out,
                                char why[WIRE_WHY_MAX], wire_check_fn check, void *arg)
{
    memset(out, 0, sizeof *out);
    if (len > ESC_FRAME_BYTES_MAX) {
        return wire_why(why, ESC_ETOOBIG, "frame larger than the protocol maximum");
    }
    wire_decode_mem *mem = wire_decode_mem_get(); /* decoding does not nest */
    if (mem == NULL) {
        return wire_why(why, ESC_ENOMEM, "out of memory");
    }
    wire_arena a;
    wire_arena_init(&a, mem);
    Escrow__Request *m = escrow__request__unpack(&a.alloc, len, buf);
    if (m == NULL) {
        return wire_why(why, ESC_EPROTO, "frame is not a valid escrow request");
    }
    int rc = decode_head(m, buf, len, out, why, check, arg);
    if (rc < 0) {
        return rc;
    }
    return decode_op(m, mem, out, why);
}

/* ---- encoding ------------------------------------------------------------ */

/* The process's key (wire_set_credential): its id and signing key only. */
static auth_key g_signer;
static bool g_has_signer;

int wire_set_credential(const char *credential)
{
    g_has_signer = false;
    memset(&g_signer, 0, sizeof g_signer);
    if (credential == NULL || credential[0] == '\0') {
        return 0;
    }
    if (auth_key_parse(credential, strlen(credential), g_signer.key_id, g_signer.hash) != 0) {
        return ESC_EAUTH;
    }
    g_has_signer = true;
    return 0;
}

/* Packs m into buf, signed by key (NULL: unsigned) at sent_at_ms (0: now):
 * the signature fields first, then everything is packed, then the MAC of
 * those bytes is appended as the frame's last field. Returns 0 and *len,
 * or ESC_ETOOBIG when it does not fit cap. */
static int pack_signed(Escrow__Request *m, const auth_key *key, int64_t sent_at_ms, void *buf,
                       size_t cap, size_t *len)
{
    m->key_id = key != NULL ? (char *)key->key_id : "";
    m->sent_at_ms = key == NULL ? 0 : (uint64_t)(sent_at_ms != 0 ? sent_at_ms : esc_wall_ms());
    m->nonce = key != NULL ? auth_nonce() : 0;
    m->mac.data = NULL;
    m->mac.len = 0;
    size_t n = escrow__request__get_packed_size(m);
    size_t trailer = key != NULL ? WIRE_MAC_TRAILER_BYTES : 0;
    if (n > cap || trailer > cap - n) {
        return ESC_ETOOBIG;
    }
    n = escrow__request__pack(m, buf);
    if (key != NULL) {
        uint8_t *t = (uint8_t *)buf + n;
        t[0] = WIRE_MAC_TAG;
        t[1] = AUTH_MAC_BYTES;
        auth_mac(key->hash, buf, n, t + 2);
    }
    *len = n + trailer;
    return 0;
}

void wire_request_head(Escrow__Request *m, uint64_t corr_id, const char *tenant_id)
{
    m->version = WIRE_VERSION;
    m->corr_id = corr_id;
    if (tenant_id != NULL) {
        m->tenant_id = (char *)tenant_id;
    }
}

int wire_request_pack(Escrow__Request *m, void *buf, size_t cap, size_t *len)
{
    return pack_signed(m, g_has_signer ? &g_signer : NULL, 0, buf,
                       cap < ESC_FRAME_BYTES_MAX ? cap : ESC_FRAME_BYTES_MAX, len);
}

/* The bodies wire_encode_raw may point its Request at (on its stack). */
typedef struct raw_bodies {
    Escrow__ReserveReq rs;
    Escrow__ConfirmReq cf;
    Escrow__ReleaseReq rl;
    Escrow__ExtendReq ex;
    Escrow__GetReq gt;
    Escrow__StatsReq st;
    Escrow__RouteReq ro;
} raw_bodies;

static void raw_reserve(const wire_raw_request *r, Escrow__Request *m, Escrow__ReserveReq *rs)
{
    rs->item_id = (char *)r->item_id;
    rs->buyer_id = (char *)r->buyer_id;
    rs->qty = r->qty;
    rs->idempotency_key = (char *)r->key;
    rs->ttl_ms = r->ttl_ms;
    rs->segment_id = r->segment_id;
    rs->attempt = r->attempt;
    rs->resolve = r->resolve;
    m->op_case = ESCROW__REQUEST__OP_RESERVE;
    m->reserve = rs;
}

/* Points m at the body of r's operation; no operation for an unknown op. */
static void raw_body(const wire_raw_request *r, Escrow__Request *m, raw_bodies *b)
{
    switch (r->op) {
    case WIRE_OP_RESERVE:
        raw_reserve(r, m, &b->rs);
        break;
    case WIRE_OP_CONFIRM:
        b->cf.hold_id = r->hold_id;
        b->cf.qty = r->qty;
        m->op_case = ESCROW__REQUEST__OP_CONFIRM;
        m->confirm = &b->cf;
        break;
    case WIRE_OP_RELEASE:
        b->rl.hold_id = r->hold_id;
        b->rl.by_operator = r->by_operator;
        m->op_case = ESCROW__REQUEST__OP_RELEASE;
        m->release = &b->rl;
        break;
    case WIRE_OP_EXTEND:
        b->ex.hold_id = r->hold_id;
        b->ex.ttl_ms = r->ttl_ms;
        m->op_case = ESCROW__REQUEST__OP_EXTEND;
        m->extend = &b->ex;
        break;
    case WIRE_OP_GET:
        b->gt.hold_id = r->hold_id;
        m->op_case = ESCROW__REQUEST__OP_GET;
        m->get = &b->gt;
        break;
    case WIRE_OP_STATS:
        b->st.item_id = (char *)r->item_id;
        m->op_case = ESCROW__REQUEST__OP_STATS;
        m->stats = &b->st;
        break;
    case WIRE_OP_ROUTE:
        b->ro.item_id = (char *)(r->item_id != NULL ? r->item_id : "");
        b->ro.segment_id = r->segment_id;
        m->op_case = ESCROW__REQUEST__OP_ROUTE;
        m->route = &b->ro;
        break;
    default:
        break; /* no operation: a frame a server refuses */
    }
}

int wire_encode_raw(const wire_raw_request *r, void *buf, size_t cap, size_t *len)
{
    Escrow__Request m = ESCROW__REQUEST__INIT;
    raw_bodies b = {
        .rs = ESCROW__RESERVE_REQ__INIT,
        .cf = ESCROW__CONFIRM_REQ__INIT,
        .rl = ESCROW__RELEASE_REQ__INIT,
        .ex = ESCROW__EXTEND_REQ__INIT,
        .gt = ESCROW__GET_REQ__INIT,
        .st = ESCROW__STATS_REQ__INIT,
        .ro = ESCROW__ROUTE_REQ__INIT,
    };
    m.version = r->version;
    m.corr_id = r->corr_id;
    m.tenant_id = (char *)r->tenant_id;
    m.credential.data = (uint8_t *)r->credential;
    m.credential.len = r->credential_len;
    raw_body(r, &m, &b);
    return pack_signed(&m, r->signer, r->sent_at_ms, buf, cap, len);
}

int wire_encode_request(const wire_request *req, void *buf, size_t cap, size_t *len)
{
    if (req->op <= WIRE_OP_NONE || req->op > WIRE_OP_ROUTE) {
        return ESC_EINVAL;
    }
    wire_raw_request r = {
        .version = WIRE_VERSION,
        .corr_id = req->corr_id,
        .tenant_id = req->tenant_id,
        .op = req->op,
        .item_id = req->item_id,
        .buyer_id = req->buyer_id,
        .key = req->key,
        .qty = req->qty,
        .ttl_ms = req->ttl_ms,
        .segment_id = req->segment_id,
        .hold_id = req->hold_id,
        .by_operator = req->by_operator,
        .attempt = req->attempt,
        .resolve = req->resolve,
    };
    if (req->signer != NULL) {
        r.signer = req->signer;
    } else if (!req->unsigned_frame && g_has_signer) {
        r.signer = &g_signer;
    }
    return wire_encode_raw(&r, buf, cap < ESC_FRAME_BYTES_MAX ? cap : ESC_FRAME_BYTES_MAX, len);
}

int wire_sign_frame(const void *frame, size_t len, const auth_key *signer, int64_t sent_at_ms,
                    void *out, size_t cap, size_t *out_len)
{
    if (len > ESC_FRAME_BYTES_MAX) {
        return ESC_ETOOBIG;
    }
    Escrow__Request *m = escrow__request__unpack(NULL, len, frame);
    if (m == NULL) {
        return ESC_EPROTO;
    }
    char *key_id = m->key_id; /* the unpacked strings are freed with m */
    ProtobufCBinaryData mac = m->mac;
    int rc = pack_signed(m, signer, sent_at_ms, out, cap, out_len);
    m->key_id = key_id;
    m->mac = mac;
    escrow__request__free_unpacked(m, NULL);
    return rc;
}
