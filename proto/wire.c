/*
 * wire.c - see wire.h. Decoding unpacks with protobuf-c into a stack arena
 * (no heap on the hot path), validates, copies into the domain struct and
 * frees nothing but the arena.
 */
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow.pb-c.h"
#include "escrow_errors.h"

/* ---- a bump allocator for protobuf-c unpack (per call, on the stack) ---- */

typedef struct arena {
    unsigned char *base;
    size_t cap;
    size_t used;
} arena;

static void *arena_alloc(void *data, size_t size)
{
    arena *a = data;
    size_t off = (a->used + 15u) & ~(size_t)15u;
    if (off > a->cap || size > a->cap - off) {
        return NULL;
    }
    a->used = off + size;
    return a->base + off;
}

static void arena_free(void *data, void *ptr)
{
    (void)data;
    (void)ptr;
}

bool wire_id_valid(const char *s, size_t max)
{
    size_t n = 0;
    if (s == NULL) {
        return false;
    }
    for (; s[n] != '\0'; n++) {
        if (n >= max || (unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e) {
            return false;
        }
    }
    return n > 0;
}

static int why_set(char why[WIRE_WHY_MAX], int rc, const char *msg)
{
    if (why != NULL) {
        snprintf(why, WIRE_WHY_MAX, "%s", msg);
    }
    return rc;
}

static int copy_id(char *dst, size_t max, const char *src, char why[WIRE_WHY_MAX],
                   const char *field)
{
    char msg[WIRE_WHY_MAX];
    if (src == NULL || src[0] == '\0') {
        snprintf(msg, sizeof msg, "%s is required", field);
        return why_set(why, ESC_EINVAL, msg);
    }
    if (strlen(src) > max) {
        snprintf(msg, sizeof msg, "%s is longer than %zu bytes", field, max);
        return why_set(why, ESC_ETOOBIG, msg);
    }
    if (!wire_id_valid(src, max)) {
        snprintf(msg, sizeof msg, "%s must be printable ASCII without spaces", field);
        return why_set(why, ESC_EINVAL, msg);
    }
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

bool wire_ttl_valid(uint32_t ttl_ms)
{
    return ttl_ms == 0 || (ttl_ms >= ESC_TTL_MS_MIN && ttl_ms <= ESC_TTL_MS_MAX);
}

bool wire_hold_id_valid(uint64_t hold_id)
{
    uint64_t seg = hold_id >> ESC_HOLD_SEQ_BITS;
    return seg != 0 && seg <= ESC_SEGMENT_ID_MAX;
}

static int check_ttl(uint32_t ttl_ms, char why[WIRE_WHY_MAX])
{
    if (!wire_ttl_valid(ttl_ms)) {
        return why_set(why, ESC_EINVAL,
                       "ttl_ms out of bounds (50 ms .. 24 h, or 0 for the item's)");
    }
    return 0;
}

static int check_hold_id(uint64_t hold_id, char why[WIRE_WHY_MAX])
{
    if (!wire_hold_id_valid(hold_id)) {
        return why_set(why, ESC_EINVAL, "hold_id is not a valid hold id");
    }
    return 0;
}

static int decode_reserve(const Escrow__ReserveReq *r, wire_request *out, char *why)
{
    int rc;
    if ((rc = copy_id(out->item_id, ESC_ITEM_LEN_MAX, r->item_id, why, "item_id")) < 0 ||
        (rc = copy_id(out->buyer_id, ESC_BUYER_LEN_MAX, r->buyer_id, why, "buyer_id")) < 0 ||
        (rc = copy_id(out->key, ESC_KEY_LEN_MAX, r->idempotency_key, why, "idempotency_key")) < 0) {
        return rc;
    }
    if (r->qty < 1 || r->qty > ESC_QTY_MAX) {
        return why_set(why, ESC_EINVAL, "qty must be between 1 and 10000");
    }
    if ((rc = check_ttl(r->ttl_ms, why)) < 0) {
        return rc;
    }
    if (r->segment_id > ESC_SEGMENT_ID_MAX) {
        return why_set(why, ESC_EINVAL, "segment_id out of range");
    }
    out->qty = r->qty;
    out->ttl_ms = r->ttl_ms;
    out->segment_id = r->segment_id;
    return 0;
}

static int decode_op(const Escrow__Request *m, wire_request *out, char *why)
{
    int rc;
    switch (m->op_case) {
    case ESCROW__REQUEST__OP_RESERVE:
        out->op = WIRE_OP_RESERVE;
        return decode_reserve(m->reserve, out, why);
    case ESCROW__REQUEST__OP_CONFIRM:
        out->op = WIRE_OP_CONFIRM;
        if (m->confirm->qty < 0 || m->confirm->qty > ESC_QTY_MAX) {
            return why_set(why, ESC_EINVAL, "confirm qty must be between 0 (all) and 10000");
        }
        out->qty = m->confirm->qty;
        out->hold_id = m->confirm->hold_id;
        return check_hold_id(out->hold_id, why);
    case ESCROW__REQUEST__OP_RELEASE:
        out->op = WIRE_OP_RELEASE;
        out->hold_id = m->release->hold_id;
        return check_hold_id(out->hold_id, why);
    case ESCROW__REQUEST__OP_EXTEND:
        out->op = WIRE_OP_EXTEND;
        out->hold_id = m->extend->hold_id;
        out->ttl_ms = m->extend->ttl_ms;
        if ((rc = check_ttl(out->ttl_ms, why)) < 0) {
            return rc;
        }
        return check_hold_id(out->hold_id, why);
    case ESCROW__REQUEST__OP_GET:
        out->op = WIRE_OP_GET;
        out->hold_id = m->get->hold_id;
        return check_hold_id(out->hold_id, why);
    case ESCROW__REQUEST__OP_STATS:
        out->op = WIRE_OP_STATS;
        if (m->stats->item_id != NULL && m->stats->item_id[0] != '\0') {
            return copy_id(out->item_id, ESC_ITEM_LEN_MAX, m->stats->item_id, why, "item_id");
        }
        return 0;
    default:
        return why_set(why, ESC_EPROTO, "request names no operation");
    }
}

int wire_decode_request(const void *buf, size_t len, wire_request *out, char why[WIRE_WHY_MAX])
{
    memset(out, 0, sizeof *out);
    if (len > ESC_FRAME_BYTES_MAX) {
        return why_set(why, ESC_ETOOBIG, "frame larger than the protocol maximum");
    }
    /* Large enough for any frame under the limit, so that an over-long field
     * is refused by its own bound (ESC_ETOOBIG), not by the arena. One per
     * thread; decoding does not nest. */
    static _Thread_local _Alignas(16) unsigned char mem[2 * ESC_FRAME_BYTES_MAX];
    arena a = {mem, sizeof mem, 0};
    ProtobufCAllocator alloc = {arena_alloc, arena_free, &a};
    Escrow__Request *m = escrow__request__unpack(&alloc, len, buf);
    if (m == NULL) {
        return why_set(why, ESC_EPROTO, "frame is not a valid escrow request");
    }
    out->corr_id = m->corr_id;
    if (m->version != WIRE_VERSION) {
        return why_set(why, ESC_EPROTO, "unsupported protocol version");
    }
    if (m->credential.len > ESC_CREDENTIAL_LEN_MAX) {
        return why_set(why, ESC_ETOOBIG, "credential too long");
    }
    int rc = copy_id(out->tenant_id, ESC_TENANT_LEN_MAX, m->tenant_id, why, "tenant_id");
    if (rc < 0) {
        return rc;
    }
    return decode_op(m, out, why);
}

int wire_encode_raw(const wire_raw_request *r, void *buf, size_t cap, size_t *len)
{
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__ReserveReq rs = ESCROW__RESERVE_REQ__INIT;
    Escrow__ConfirmReq cf = ESCROW__CONFIRM_REQ__INIT;
    Escrow__ReleaseReq rl = ESCROW__RELEASE_REQ__INIT;
    Escrow__ExtendReq ex = ESCROW__EXTEND_REQ__INIT;
    Escrow__GetReq gt = ESCROW__GET_REQ__INIT;
    Escrow__StatsReq st = ESCROW__STATS_REQ__INIT;
    m.version = r->version;
    m.corr_id = r->corr_id;
    m.tenant_id = (char *)r->tenant_id;
    m.credential.data = (uint8_t *)r->credential;
    m.credential.len = r->credential_len;
    switch (r->op) {
    case WIRE_OP_RESERVE:
        rs.item_id = (char *)r->item_id;
        rs.buyer_id = (char *)r->buyer_id;
        rs.qty = r->qty;
        rs.idempotency_key = (char *)r->key;
        rs.ttl_ms = r->ttl_ms;
        rs.segment_id = r->segment_id;
        m.op_case = ESCROW__REQUEST__OP_RESERVE;
        m.reserve = &rs;
        break;
    case WIRE_OP_CONFIRM:
        cf.hold_id = r->hold_id;
        cf.qty = r->qty;
        m.op_case = ESCROW__REQUEST__OP_CONFIRM;
        m.confirm = &cf;
        break;
    case WIRE_OP_RELEASE:
        rl.hold_id = r->hold_id;
        m.op_case = ESCROW__REQUEST__OP_RELEASE;
        m.release = &rl;
        break;
    case WIRE_OP_EXTEND:
        ex.hold_id = r->hold_id;
        ex.ttl_ms = r->ttl_ms;
        m.op_case = ESCROW__REQUEST__OP_EXTEND;
        m.extend = &ex;
        break;
    case WIRE_OP_GET:
        gt.hold_id = r->hold_id;
        m.op_case = ESCROW__REQUEST__OP_GET;
        m.get = &gt;
        break;
    case WIRE_OP_STATS:
        st.item_id = (char *)r->item_id;
        m.op_case = ESCROW__REQUEST__OP_STATS;
        m.stats = &st;
        break;
    default:
        break; /* no operation: a frame a server refuses */
    }
    size_t n = escrow__request__get_packed_size(&m);
    if (n > cap) {
        return ESC_ETOOBIG;
    }
    *len = escrow__request__pack(&m, buf);
    return 0;
}

int wire_encode_request(const wire_request *req, void *buf, size_t cap, size_t *len)
{
    if (req->op <= WIRE_OP_NONE || req->op > WIRE_OP_STATS) {
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
    };
    return wire_encode_raw(&r, buf, cap < ESC_FRAME_BYTES_MAX ? cap : ESC_FRAME_BYTES_MAX, len);
}

int wire_encode_reply(const wire_reply *rep, void *buf, size_t cap, size_t *len)
{
    Escrow__Reply m = ESCROW__REPLY__INIT;
    Escrow__Hold h = ESCROW__HOLD__INIT;
    m.corr_id = rep->corr_id;
    m.status = rep->status;
    m.message = (char *)rep->message;
    if (rep->has_hold) {
        h.hold_id = rep->hold.hold_id;
        h.segment_id = rep->hold.segment_id;
        h.item_id = (char *)rep->hold.item_id;
        h.buyer_id = (char *)rep->hold.buyer_id;
        h.qty = rep->hold.qty;
        h.qty_sold = rep->hold.qty_sold;
        h.state = (Escrow__HoldState)rep->hold.state;
        h.expires_at_ms = rep->hold.expires_at_ms;
        h.extended = rep->hold.extended;
        m.hold = &h;
    }
    if (rep->nsegs > ESC_STATS_SEGMENTS_MAX) {
        return ESC_ETOOBIG;
    }
    Escrow__SegmentStats *big = NULL;
    Escrow__SegmentStats **bigp = NULL;
    if (rep->nsegs > 0) {
        big = calloc(rep->nsegs, sizeof *big);
        bigp = calloc(rep->nsegs, sizeof *bigp);
        if (big == NULL || bigp == NULL) {
            free(big);
            free(bigp);
            return ESC_ENOMEM;
        }
        for (size_t i = 0; i < rep->nsegs; i++) {
            escrow__segment_stats__init(&big[i]);
            big[i].segment_id = rep->segs[i].segment_id;
            big[i].item_id = (char *)rep->segs[i].item_id;
            big[i].epoch = rep->segs[i].epoch;
            big[i].available = rep->segs[i].available;
            big[i].held = rep->segs[i].held;
            big[i].sold = rep->segs[i].sold;
            big[i].state = rep->segs[i].state;
            bigp[i] = &big[i];
        }
        m.n_segments = rep->nsegs;
        m.segments = bigp;
    }
    int rc = 0;
    size_t n = escrow__reply__get_packed_size(&m);
    if (n > cap || n > ESC_FRAME_BYTES_MAX) {
        rc = ESC_ETOOBIG;
    } else {
        *len = escrow__reply__pack(&m, buf);
    }
    free(big);
    free(bigp);
    return rc;
}

static void copy_str(char *dst, size_t max, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n > max) {
        n = max;
    }
    if (n > 0) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
}

int wire_decode_reply(const void *buf, size_t len, wire_reply *out)
{
    wire_seg_stats *segs = out->segs;
    size_t segs_cap = out->segs_cap;
    memset(out, 0, sizeof *out);
    out->segs = segs;
    out->segs_cap = segs_cap;
    if (len > ESC_FRAME_BYTES_MAX) {
        return ESC_ETOOBIG;
    }
    Escrow__Reply *m = escrow__reply__unpack(NULL, len, buf);
    if (m == NULL) {
        return ESC_EPROTO;
    }
    out->corr_id = m->corr_id;
    out->status = m->status;
    copy_str(out->message, WIRE_WHY_MAX - 1, m->message);
    if (m->hold != NULL) {
        out->has_hold = true;
        out->hold.hold_id = m->hold->hold_id;
        out->hold.segment_id = m->hold->segment_id;
        copy_str(out->hold.item_id, ESC_ITEM_LEN_MAX, m->hold->item_id);
        copy_str(out->hold.buyer_id, ESC_BUYER_LEN_MAX, m->hold->buyer_id);
        out->hold.qty = m->hold->qty;
        out->hold.qty_sold = m->hold->qty_sold;
        out->hold.state = (int)m->hold->state;
        out->hold.expires_at_ms = m->hold->expires_at_ms;
        out->hold.extended = m->hold->extended;
    }
    for (size_t i = 0; i < m->n_segments && out->nsegs < segs_cap; i++) {
        wire_seg_stats *s = &segs[out->nsegs++];
        s->segment_id = m->segments[i]->segment_id;
        copy_str(s->item_id, ESC_ITEM_LEN_MAX, m->segments[i]->item_id);
        s->epoch = m->segments[i]->epoch;
        s->available = m->segments[i]->available;
        s->held = m->segments[i]->held;
        s->sold = m->segments[i]->sold;
        s->state = m->segments[i]->state;
    }
    escrow__reply__free_unpacked(m, NULL);
    return 0;
}

int64_t wire_reserve_hash(const char *item_id, const char *buyer_id, int64_t qty)
{
    uint64_t h = 1469598103934665603ULL;
    const char *parts[2] = {item_id, buyer_id};
    for (int p = 0; p < 2; p++) {
        for (const unsigned char *s = (const unsigned char *)parts[p]; *s; s++) {
            h = (h ^ *s) * 1099511628211ULL;
        }
        h = (h ^ 0xffu) * 1099511628211ULL; /* separator: ("ab","c") != ("a","bc") */
    }
    for (int i = 0; i < 8; i++) {
        h = (h ^ (uint8_t)((uint64_t)qty >> (8 * i))) * 1099511628211ULL;
    }
    return (int64_t)(h & 0x7fffffffffffffffULL);
}
