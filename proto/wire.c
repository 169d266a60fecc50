/*
 * wire.c - see wire.h. Decoding unpacks with protobuf-c into a stack arena
 * (no heap on the hot path), validates, copies into the domain struct and
 * frees nothing but the arena.
 */
#include "wire.h"

#include <pthread.h>
#include <stddef.h>
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

static void copy_str(char *dst, size_t max, const char *src);

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
    out->attempt = r->attempt;
    out->resolve = r->resolve;
    return 0;
}

static bool segment_id_valid(uint64_t id)
{
    return id >= 1 && id <= ESC_SEGMENT_ID_MAX;
}

static int decode_route_req(const Escrow__RouteReq *r, wire_request *out, char *why)
{
    bool has_item = r->item_id != NULL && r->item_id[0] != '\0';
    if (has_item == (r->segment_id != 0)) {
        return why_set(why, ESC_EINVAL, "a route request names an item_id or a segment_id");
    }
    if (!has_item) {
        if (!segment_id_valid(r->segment_id)) {
            return why_set(why, ESC_EINVAL, "segment_id out of range");
        }
        out->segment_id = r->segment_id;
        return 0;
    }
    return copy_id(out->item_id, ESC_ITEM_LEN_MAX, r->item_id, why, "item_id");
}

static bool endpoint_valid(const char *s)
{
    return wire_id_valid(s, ESC_ENDPOINT_LEN_MAX);
}

/* Per-thread decoding memory, allocated on first use and freed when the
 * thread exits (a pthread key destructor): the unpack arena, large enough
 * for any frame under the limit (a full heartbeat unpacks to about twice its
 * size) so that an over-long field is refused by its own bound, not by the
 * arena; and the decoded heartbeat (wire_request.hb points at it). */
enum { ARENA_BYTES = 4 * ESC_FRAME_BYTES_MAX };
typedef struct decode_mem {
    _Alignas(16) unsigned char arena[ARENA_BYTES];
    wire_heartbeat hb;
    wire_quota quota;
} decode_mem;

static pthread_key_t mem_key;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static int mem_key_rc = -1;
static _Thread_local decode_mem *tl_mem;

static void mem_key_init(void)
{
    mem_key_rc = pthread_key_create(&mem_key, free);
}

static decode_mem *decode_mem_get(void)
{
    if (tl_mem != NULL) {
        return tl_mem;
    }
    if (pthread_once(&mem_once, mem_key_init) != 0 || mem_key_rc != 0) {
        return NULL;
    }
    decode_mem *m = malloc(sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    if (pthread_setspecific(mem_key, m) != 0) {
        free(m);
        return NULL;
    }
    tl_mem = m;
    return m;
}

static int decode_stats_entry(const Escrow__SegmentStats *e, wire_seg_stats *s, char *why)
{
    if (!segment_id_valid(e->segment_id)) {
        return why_set(why, ESC_EINVAL, "heartbeat: segment_id out of range");
    }
    if (e->available < 0 || e->held < 0 || e->sold < 0 || e->state > WIRE_SEG_RETIRED) {
        return why_set(why, ESC_EINVAL, "heartbeat: segment counters out of range");
    }
    memset(s, 0, sizeof *s);
    if (e->tenant_id != NULL && e->tenant_id[0] != '\0') {
        int rc = copy_id(s->tenant_id, ESC_TENANT_LEN_MAX, e->tenant_id, why, "tenant_id");
        if (rc < 0) {
            return rc;
        }
    }
    if (e->item_id != NULL && e->item_id[0] != '\0') {
        int rc = copy_id(s->item_id, ESC_ITEM_LEN_MAX, e->item_id, why, "item_id");
        if (rc < 0) {
            return rc;
        }
    }
    s->segment_id = e->segment_id;
    s->epoch = e->epoch;
    s->available = e->available;
    s->held = e->held;
    s->sold = e->sold;
    s->state = e->state;
    s->reserved = e->reserved;
    s->empties = e->empties;
    return 0;
}

static int decode_heartbeat(const Escrow__HeartbeatReq *h, wire_request *out, char *why)
{
    int rc;
    wire_heartbeat *hb = &tl_mem->hb; /* wire_decode_request allocated it */
    hb->nsegs = hb->nxfers = hb->ndry = 0;
    if ((rc = copy_id(hb->node_id, ESC_NODE_ID_LEN_MAX, h->node_id, why, "node_id")) < 0) {
        return rc;
    }
    if (h->endpoint == NULL || !endpoint_valid(h->endpoint)) {
        return why_set(why, ESC_EINVAL, "heartbeat: endpoint must be 1..255 printable bytes");
    }
    snprintf(hb->endpoint, sizeof hb->endpoint, "%s", h->endpoint);
    if (h->incarnation == 0) {
        return why_set(why, ESC_EINVAL, "heartbeat: incarnation must not be 0");
    }
    hb->incarnation = h->incarnation;
    hb->stopping = h->stopping;
    if (h->n_segments > ESC_HB_SEGMENTS_MAX || h->n_transfers > ESC_HB_TRANSFERS_MAX ||
        h->n_dry > ESC_HB_SEGMENTS_MAX) {
        return why_set(why, ESC_ETOOBIG, "heartbeat: too many entries");
    }
    for (size_t i = 0; i < h->n_segments; i++) {
        if ((rc = decode_stats_entry(h->segments[i], &hb->segs[i], why)) < 0) {
            return rc;
        }
    }
    hb->nsegs = h->n_segments;
    for (size_t i = 0; i < h->n_transfers; i++) {
        const Escrow__TransferResult *t = h->transfers[i];
        if (t->transfer_id == 0 || t->outcome < WIRE_XFER_SENT || t->outcome > WIRE_XFER_STALE ||
            t->qty < 0 || t->qty > ESC_TOTAL_MAX) {
            return why_set(why, ESC_EINVAL, "heartbeat: transfer result out of range");
        }
        hb->xfers[i] = (wire_transfer_result){t->transfer_id, t->outcome, t->qty};
    }
    hb->nxfers = h->n_transfers;
    for (size_t i = 0; i < h->n_dry; i++) {
        if (!segment_id_valid(h->dry[i])) {
            return why_set(why, ESC_EINVAL, "heartbeat: dry segment_id out of range");
        }
        hb->dry[i] = h->dry[i];
    }
    hb->ndry = h->n_dry;
    out->hb = hb;
    return 0;
}

static int decode_admin(const Escrow__AdminReq *a, wire_request *out, char *why)
{
    int rc;
    if (a->op <= WIRE_ADMIN_NONE || a->op >= WIRE_ADMIN_LAST_) {
        return why_set(why, ESC_EINVAL, "unknown admin operation");
    }
    out->admin_op = a->op;
    switch (a->op) {
    case WIRE_ADMIN_DRAIN:
    case WIRE_ADMIN_UNDRAIN:
        return copy_id(out->node_id, ESC_NODE_ID_LEN_MAX, a->node_id, why, "node_id");
    case WIRE_ADMIN_RELOAD:
        return 0;
    default:
        break;
    }
    if ((rc = copy_id(out->item_id, ESC_ITEM_LEN_MAX, a->item_id, why, "item_id")) < 0) {
        return rc;
    }
    if (a->op == WIRE_ADMIN_RESTOCK || a->op == WIRE_ADMIN_REDUCE) {
        if (a->qty < 1 || a->qty > ESC_TOTAL_MAX) {
            return why_set(why, ESC_EINVAL, "qty must be between 1 and 1000000000");
        }
        out->qty = a->qty;
    }
    if (a->op == WIRE_ADMIN_SPLIT) {
        if (a->segments < 1 || a->segments > ESC_SEGMENTS_PER_ITEM_MAX) {
            return why_set(why, ESC_EINVAL, "segments must be between 1 and 256");
        }
        out->nsegments = a->segments;
    }
    return 0;
}

static bool region_valid(const char *s)
{
    return s != NULL && wire_id_valid(s, ESC_REGION_LEN_MAX);
}

static int decode_quota_item(const Escrow__QuotaItem *e, wire_quota_item *q, char *why)
{
    int rc;
    memset(q, 0, sizeof *q);
    if ((rc = copy_id(q->tenant_id, ESC_TENANT_LEN_MAX, e->tenant_id, why, "tenant_id")) < 0 ||
        (rc = copy_id(q->item_id, ESC_ITEM_LEN_MAX, e->item_id, why, "item_id")) < 0) {
        return rc;
    }
    if (e->quota < 0 || e->quota > ESC_TOTAL_MAX || e->unused < 0 || e->unused > ESC_TOTAL_MAX ||
        e->floor < 0 || e->floor > ESC_TOTAL_MAX || e->in_flight < 0 ||
        e->in_flight > ESC_TOTAL_MAX || e->demand_milli < 0) {
        return why_set(why, ESC_EINVAL, "quota: item figures out of range");
    }
    q->quota = e->quota;
    q->unused = e->unused;
    q->demand_milli = e->demand_milli;
    q->floor = e->floor;
    q->in_flight = e->in_flight;
    q->known = e->known;
    return 0;
}

static int decode_quota(const Escrow__QuotaReq *r, wire_request *out, char *why)
{
    int rc;
    wire_quota *q = &tl_mem->quota; /* wire_decode_request allocated it */
    memset(q, 0, offsetof(wire_quota, items));
    if (r->kind < WIRE_QUOTA_STATUS || r->kind > WIRE_QUOTA_MOVE) {
        return why_set(why, ESC_EINVAL, "quota: unknown kind");
    }
    q->kind = r->kind;
    if (r->kind != WIRE_QUOTA_MOVE) {
        if (!region_valid(r->from_region)) {
            return why_set(why, ESC_EINVAL, "quota: from_region must be 1..64 printable bytes");
        }
        snprintf(q->from_region, sizeof q->from_region, "%s", r->from_region);
    }
    if (r->kind != WIRE_QUOTA_STATUS) {
        if (!region_valid(r->to_region)) {
            return why_set(why, ESC_EINVAL, "quota: to_region must be 1..64 printable bytes");
        }
        snprintf(q->to_region, sizeof q->to_region, "%s", r->to_region);
        if ((rc = copy_id(out->item_id, ESC_ITEM_LEN_MAX, r->item_id, why, "item_id")) < 0) {
            return rc;
        }
        if (r->qty < 1 || r->qty > ESC_TOTAL_MAX) {
            return why_set(why, ESC_EINVAL, "qty must be between 1 and 1000000000");
        }
        out->qty = r->qty;
    }
    if (r->kind == WIRE_QUOTA_OFFER) {
        if (r->transfer_id == 0 || r->transfer_id > INT64_MAX) {
            return why_set(why, ESC_EINVAL, "quota: transfer_id out of range");
        }
        q->transfer_id = r->transfer_id;
    }
    if (r->n_items > ESC_QUOTA_ITEMS_MAX) {
        return why_set(why, ESC_ETOOBIG, "quota: too many items");
    }
    if (r->kind != WIRE_QUOTA_STATUS && r->n_items > 0) {
        return why_set(why, ESC_EINVAL, "quota: only a status carries items");
    }
    for (size_t i = 0; i < r->n_items; i++) {
        if ((rc = decode_quota_item(r->items[i], &q->items[i], why)) < 0) {
            return rc;
        }
    }
    q->nitems = r->n_items;
    out->quota = q;
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
        out->by_operator = m->release->by_operator;
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
    case ESCROW__REQUEST__OP_ROUTE:
        out->op = WIRE_OP_ROUTE;
        return decode_route_req(m->route, out, why);
    case ESCROW__REQUEST__OP_HEARTBEAT:
        out->op = WIRE_OP_HEARTBEAT;
        return decode_heartbeat(m->heartbeat, out, why);
    case ESCROW__REQUEST__OP_ADMIN:
        out->op = WIRE_OP_ADMIN;
        return decode_admin(m->admin, out, why);
    case ESCROW__REQUEST__OP_QUOTA:
        out->op = WIRE_OP_QUOTA;
        return decode_quota(m->quota, out, why);
    default:
        return why_set(why, ESC_EPROTO, "request names no operation");
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

/* The operation and access class of a parsed frame, before decode_op. */
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

int wire_decode_request(const void *buf, size_t len, wire_request *out, char why[WIRE_WHY_MAX])
{
    return wire_decode_request_checked(buf, len, out, why, NULL, NULL);
}

int wire_decode_request_checked(const void *buf, size_t len, wire_request *out,
                                char why[WIRE_WHY_MAX], wire_check_fn check, void *arg)
{
    memset(out, 0, sizeof *out);
    if (len > ESC_FRAME_BYTES_MAX) {
        return why_set(why, ESC_ETOOBIG, "frame larger than the protocol maximum");
    }
    decode_mem *mem = decode_mem_get(); /* decoding does not nest */
    if (mem == NULL) {
        return why_set(why, ESC_ENOMEM, "out of memory");
    }
    arena a = {mem->arena, ARENA_BYTES, 0};
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
    if (!tenant_optional(m) || (m->tenant_id != NULL && m->tenant_id[0] != '\0')) {
        int rc = copy_id(out->tenant_id, ESC_TENANT_LEN_MAX, m->tenant_id, why, "tenant_id");
        if (rc < 0) {
            return rc;
        }
    }
    if (check != NULL) {
        wire_head head = {
            .corr_id = out->corr_id,
            .tenant_id = out->tenant_id,
            .credential = m->credential.data,
            .credential_len = m->credential.len,
            .op = op_of(m),
            .access = access_of(m),
        };
        int rc = check(&head, why, arg);
        if (rc < 0) {
            return rc;
        }
    }
    return decode_op(m, out, why);
}

/* ---- the process's credential ------------------------------------------- */

static char g_credential[ESC_CREDENTIAL_LEN_MAX + 1];

int wire_set_credential(const char *credential)
{
    size_t n = credential != NULL ? strlen(credential) : 0;
    if (n > ESC_CREDENTIAL_LEN_MAX) {
        return ESC_ETOOBIG;
    }
    memcpy(g_credential, credential != NULL ? credential : "", n);
    g_credential[n] = '\0';
    return 0;
}

/* Attaches the process's credential to an outgoing frame. */
static void set_credential(Escrow__Request *m)
{
    m->credential.data = (uint8_t *)g_credential;
    m->credential.len = strnlen(g_credential, ESC_CREDENTIAL_LEN_MAX);
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
    Escrow__RouteReq ro = ESCROW__ROUTE_REQ__INIT;
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
        rs.attempt = r->attempt;
        rs.resolve = r->resolve;
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
        rl.by_operator = r->by_operator;
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
    case WIRE_OP_ROUTE:
        ro.item_id = (char *)(r->item_id != NULL ? r->item_id : "");
        ro.segment_id = r->segment_id;
        m.op_case = ESCROW__REQUEST__OP_ROUTE;
        m.route = &ro;
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
    const char *cred = req->credential != NULL ? req->credential : g_credential;
    r.credential = cred;
    r.credential_len = strnlen(cred, ESC_CREDENTIAL_LEN_MAX);
    return wire_encode_raw(&r, buf, cap < ESC_FRAME_BYTES_MAX ? cap : ESC_FRAME_BYTES_MAX, len);
}

/* One segment's figures as a SegmentStats (strings borrowed from w). */
static void stats_to_pb(const wire_seg_stats *w, Escrow__SegmentStats *pb)
{
    escrow__segment_stats__init(pb);
    pb->segment_id = w->segment_id;
    pb->item_id = (char *)w->item_id;
    pb->tenant_id = (char *)w->tenant_id;
    pb->epoch = w->epoch;
    pb->available = w->available;
    pb->held = w->held;
    pb->sold = w->sold;
    pb->state = w->state;
    pb->reserved = w->reserved;
    pb->empties = w->empties;
}

int wire_encode_heartbeat(uint64_t corr_id, const wire_heartbeat *hb, void *buf, size_t cap,
                          size_t *len)
{
    if (hb->nsegs > ESC_HB_SEGMENTS_MAX || hb->nxfers > ESC_HB_TRANSFERS_MAX ||
        hb->ndry > ESC_HB_SEGMENTS_MAX) {
        return ESC_EINVAL;
    }
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__HeartbeatReq h = ESCROW__HEARTBEAT_REQ__INIT;
    m.version = WIRE_VERSION;
    m.corr_id = corr_id;
    m.op_case = ESCROW__REQUEST__OP_HEARTBEAT;
    m.heartbeat = &h;
    set_credential(&m);
    h.node_id = (char *)hb->node_id;
    h.incarnation = hb->incarnation;
    h.endpoint = (char *)hb->endpoint;
    h.stopping = hb->stopping;
    h.n_dry = hb->ndry;
    h.dry = (uint64_t *)hb->dry;
    Escrow__SegmentStats *st = calloc(hb->nsegs + 1, sizeof *st);
    Escrow__SegmentStats **stp = calloc(hb->nsegs + 1, sizeof *stp);
    Escrow__TransferResult *tr = calloc(hb->nxfers + 1, sizeof *tr);
    Escrow__TransferResult **trp = calloc(hb->nxfers + 1, sizeof *trp);
    int rc = 0;
    if (st == NULL || stp == NULL || tr == NULL || trp == NULL) {
        rc = ESC_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < hb->nsegs; i++) {
        stats_to_pb(&hb->segs[i], &st[i]);
        stp[i] = &st[i];
    }
    h.n_segments = hb->nsegs;
    h.segments = stp;
    for (size_t i = 0; i < hb->nxfers; i++) {
        escrow__transfer_result__init(&tr[i]);
        tr[i].transfer_id = hb->xfers[i].transfer_id;
        tr[i].outcome = hb->xfers[i].outcome;
        tr[i].qty = hb->xfers[i].qty;
        trp[i] = &tr[i];
    }
    h.n_transfers = hb->nxfers;
    h.transfers = trp;
    size_t n = escrow__request__get_packed_size(&m);
    if (n > cap || n > ESC_FRAME_BYTES_MAX) {
        rc = ESC_ETOOBIG;
    } else {
        *len = escrow__request__pack(&m, buf);
    }
out:
    free(st);
    free(stp);
    free(tr);
    free(trp);
    return rc;
}

int wire_encode_admin(uint64_t corr_id, const char *tenant_id, uint32_t admin_op,
                      const char *item_id, const char *node_id, int64_t qty, uint32_t nsegments,
                      void *buf, size_t cap, size_t *len)
{
    if (admin_op <= WIRE_ADMIN_NONE || admin_op >= WIRE_ADMIN_LAST_) {
        return ESC_EINVAL;
    }
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__AdminReq a = ESCROW__ADMIN_REQ__INIT;
    m.version = WIRE_VERSION;
    m.corr_id = corr_id;
    m.tenant_id = (char *)(tenant_id != NULL ? tenant_id : "");
    m.op_case = ESCROW__REQUEST__OP_ADMIN;
    m.admin = &a;
    set_credential(&m);
    a.op = admin_op;
    a.item_id = (char *)(item_id != NULL ? item_id : "");
    a.node_id = (char *)(node_id != NULL ? node_id : "");
    a.qty = qty;
    a.segments = nsegments;
    size_t n = escrow__request__get_packed_size(&m);
    if (n > cap || n > ESC_FRAME_BYTES_MAX) {
        return ESC_ETOOBIG;
    }
    *len = escrow__request__pack(&m, buf);
    return 0;
}

/* One region's view of a global item as a QuotaItem (strings borrowed). */
static void quota_item_to_pb(const wire_quota_item *w, Escrow__QuotaItem *pb)
{
    escrow__quota_item__init(pb);
    pb->tenant_id = (char *)w->tenant_id;
    pb->item_id = (char *)w->item_id;
    pb->quota = w->quota;
    pb->unused = w->unused;
    pb->demand_milli = w->demand_milli;
    pb->floor = w->floor;
    pb->known = w->known;
    pb->in_flight = w->in_flight;
}

/* n QuotaItems from items: *arr and *ptrs are allocated (free both). */
static int quota_items_to_pb(const wire_quota_item *items, size_t n, Escrow__QuotaItem **arr,
                             Escrow__QuotaItem ***ptrs)
{
    *arr = calloc(n + 1, sizeof **arr);
    *ptrs = calloc(n + 1, sizeof **ptrs);
    if (*arr == NULL || *ptrs == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        quota_item_to_pb(&items[i], &(*arr)[i]);
        (*ptrs)[i] = &(*arr)[i];
    }
    return 0;
}

int wire_encode_quota(uint64_t corr_id, const char *tenant_id, const wire_quota *q,
                      const char *item_id, int64_t qty, void *buf, size_t cap, size_t *len)
{
    if (q->kind < WIRE_QUOTA_STATUS || q->kind > WIRE_QUOTA_MOVE ||
        q->nitems > ESC_QUOTA_ITEMS_MAX) {
        return ESC_EINVAL;
    }
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__QuotaReq r = ESCROW__QUOTA_REQ__INIT;
    m.version = WIRE_VERSION;
    m.corr_id = corr_id;
    m.tenant_id = (char *)(tenant_id != NULL ? tenant_id : "");
    m.op_case = ESCROW__REQUEST__OP_QUOTA;
    m.quota = &r;
    set_credential(&m);
    r.kind = q->kind;
    r.from_region = (char *)q->from_region;
    r.to_region = (char *)q->to_region;
    r.transfer_id = q->transfer_id;
    r.item_id = (char *)(item_id != NULL ? item_id : "");
    r.qty = qty;
    Escrow__QuotaItem *arr = NULL, **ptrs = NULL;
    int rc = quota_items_to_pb(q->items, q->nitems, &arr, &ptrs);
    if (rc == 0) {
        r.n_items = q->nitems;
        r.items = ptrs;
        size_t n = escrow__request__get_packed_size(&m);
        if (n > cap || n > ESC_FRAME_BYTES_MAX) {
            rc = ESC_ETOOBIG;
        } else {
            *len = escrow__request__pack(&m, buf);
        }
    }
    free(arr);
    free(ptrs);
    return rc;
}

/* ---- routes ---- */

/* Fills pb from r; segs/ptrs have room for r->nsegs. */
static void route_to_pb(const wire_route *r, Escrow__Route *pb, Escrow__RouteSegment *segs,
                        Escrow__RouteSegment **ptrs)
{
    escrow__route__init(pb);
    pb->tenant_id = (char *)r->tenant_id;
    pb->item_id = (char *)r->item_id;
    pb->version = r->version;
    pb->sold_out = r->sold_out;
    pb->paused = r->paused;
    pb->tail_segment = r->tail_segment;
    for (size_t i = 0; i < r->nsegs; i++) {
        escrow__route_segment__init(&segs[i]);
        segs[i].segment_id = r->segs[i].segment_id;
        segs[i].epoch = r->segs[i].epoch;
        segs[i].endpoint = (char *)r->segs[i].endpoint;
        segs[i].state = r->segs[i].state;
        ptrs[i] = &segs[i];
    }
    pb->n_segments = r->nsegs;
    pb->segments = ptrs;
}

static int route_from_pb(const Escrow__Route *pb, wire_route *out)
{
    memset(out, 0, offsetof(wire_route, segs));
    if (!wire_id_valid(pb->tenant_id, ESC_TENANT_LEN_MAX) ||
        !wire_id_valid(pb->item_id, ESC_ITEM_LEN_MAX) || pb->n_segments > ESC_ROUTE_SEGMENTS_MAX ||
        (pb->tail_segment != 0 && !segment_id_valid(pb->tail_segment))) {
        return ESC_EPROTO;
    }
    copy_str(out->tenant_id, ESC_TENANT_LEN_MAX, pb->tenant_id);
    copy_str(out->item_id, ESC_ITEM_LEN_MAX, pb->item_id);
    out->version = pb->version;
    out->sold_out = pb->sold_out;
    out->paused = pb->paused;
    out->tail_segment = pb->tail_segment;
    for (size_t i = 0; i < pb->n_segments; i++) {
        const Escrow__RouteSegment *g = pb->segments[i];
        const char *ep = g->endpoint != NULL ? g->endpoint : "";
        if (!segment_id_valid(g->segment_id) || g->state > WIRE_SEG_RETIRED ||
            (ep[0] != '\0' && !endpoint_valid(ep))) {
            return ESC_EPROTO;
        }
        out->segs[i].segment_id = g->segment_id;
        out->segs[i].epoch = g->epoch;
        out->segs[i].state = g->state;
        copy_str(out->segs[i].endpoint, ESC_ENDPOINT_LEN_MAX, ep);
    }
    out->nsegs = pb->n_segments;
    return 0;
}

int wire_encode_route_pub(const wire_route *r, void *buf, size_t cap, size_t *len)
{
    if (r->nsegs > ESC_ROUTE_SEGMENTS_MAX || !wire_id_valid(r->tenant_id, ESC_TENANT_LEN_MAX)) {
        return ESC_EINVAL;
    }
    Escrow__RouteSegment *segs = calloc(r->nsegs + 1, sizeof *segs);
    Escrow__RouteSegment **ptrs = calloc(r->nsegs + 1, sizeof *ptrs);
    int rc = 0;
    if (segs == NULL || ptrs == NULL) {
        rc = ESC_ENOMEM;
        goto out;
    }
    Escrow__Route pb;
    route_to_pb(r, &pb, segs, ptrs);
    size_t tlen = strlen(r->tenant_id) + 1;
    size_t n = escrow__route__get_packed_size(&pb);
    if (tlen + n > cap || tlen + n > ESC_FRAME_BYTES_MAX) {
        rc = ESC_ETOOBIG;
        goto out;
    }
    memcpy(buf, r->tenant_id, tlen);
    *len = tlen + escrow__route__pack(&pb, (uint8_t *)buf + tlen);
out:
    free(segs);
    free(ptrs);
    return rc;
}

int wire_decode_route_pub(const void *buf, size_t len, wire_route *out)
{
    const unsigned char *p = buf;
    const unsigned char *nul =
        len > 0 ? memchr(p, '\0', len < ESC_TENANT_LEN_MAX + 1 ? len : ESC_TENANT_LEN_MAX + 1)
                : NULL;
    if (len > ESC_FRAME_BYTES_MAX || nul == NULL) {
        return ESC_EPROTO;
    }
    size_t tlen = (size_t)(nul - p) + 1;
    Escrow__Route *pb = escrow__route__unpack(NULL, len - tlen, p + tlen);
    if (pb == NULL) {
        return ESC_EPROTO;
    }
    int rc = route_from_pb(pb, out);
    if (rc == 0 && strcmp(out->tenant_id, (const char *)p) != 0) {
        rc = ESC_EPROTO; /* the topic must name the route's own tenant */
    }
    escrow__route__free_unpacked(pb, NULL);
    return rc;
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
            stats_to_pb(&rep->segs[i], &big[i]);
            bigp[i] = &big[i];
        }
        m.n_segments = rep->nsegs;
        m.segments = bigp;
    }
    int rc = 0;
    Escrow__Route route;
    Escrow__RouteSegment *rsegs = NULL, **rptrs = NULL;
    Escrow__HeartbeatReply hbr = ESCROW__HEARTBEAT_REPLY__INIT;
    Escrow__Assignment *as = NULL, **asp = NULL;
    Escrow__TransferCmd *xc = NULL, **xcp = NULL;
    Escrow__QuotaItem *qa = NULL, **qp = NULL;
    m.region = (char *)rep->region;
    if (rep->nquota > 0) {
        if (rep->nquota > ESC_QUOTA_ITEMS_MAX) {
            rc = ESC_ETOOBIG;
            goto out;
        }
        if ((rc = quota_items_to_pb(rep->quota, rep->nquota, &qa, &qp)) != 0) {
            goto out;
        }
        m.n_quota = rep->nquota;
        m.quota = qp;
    }
    if (rep->route != NULL) {
        if (rep->route->nsegs > ESC_ROUTE_SEGMENTS_MAX) {
            rc = ESC_ETOOBIG;
            goto out;
        }
        rsegs = calloc(rep->route->nsegs + 1, sizeof *rsegs);
        rptrs = calloc(rep->route->nsegs + 1, sizeof *rptrs);
        if (rsegs == NULL || rptrs == NULL) {
            rc = ESC_ENOMEM;
            goto out;
        }
        route_to_pb(rep->route, &route, rsegs, rptrs);
        m.route = &route;
    }
    if (rep->hb != NULL) {
        const wire_hb_reply *w = rep->hb;
        if (w->nsegs > ESC_HB_SEGMENTS_MAX || w->nxfers > ESC_HB_TRANSFERS_MAX) {
            rc = ESC_ETOOBIG;
            goto out;
        }
        as = calloc(w->nsegs + 1, sizeof *as);
        asp = calloc(w->nsegs + 1, sizeof *asp);
        xc = calloc(w->nxfers + 1, sizeof *xc);
        xcp = calloc(w->nxfers + 1, sizeof *xcp);
        if (as == NULL || asp == NULL || xc == NULL || xcp == NULL) {
            rc = ESC_ENOMEM;
            goto out;
        }
        hbr.lease_ms = w->lease_ms;
        hbr.heartbeat_ms = w->heartbeat_ms;
        for (size_t i = 0; i < w->nsegs; i++) {
            escrow__assignment__init(&as[i]);
            as[i].segment_id = w->segs[i].segment_id;
            as[i].epoch = w->segs[i].epoch;
            as[i].state = w->segs[i].state;
            as[i].paused = w->segs[i].paused;
            asp[i] = &as[i];
        }
        hbr.n_segments = w->nsegs;
        hbr.segments = asp;
        for (size_t i = 0; i < w->nxfers; i++) {
            escrow__transfer_cmd__init(&xc[i]);
            xc[i].transfer_id = w->xfers[i].transfer_id;
            xc[i].kind = w->xfers[i].kind;
            xc[i].segment_id = w->xfers[i].segment_id;
            xc[i].qty = w->xfers[i].qty;
            xcp[i] = &xc[i];
        }
        hbr.n_transfers = w->nxfers;
        hbr.transfers = xcp;
        m.heartbeat = &hbr;
    }
    size_t n = escrow__reply__get_packed_size(&m);
    if (n > cap || n > ESC_FRAME_BYTES_MAX) {
        rc = ESC_ETOOBIG;
    } else {
        *len = escrow__reply__pack(&m, buf);
    }
out:
    free(big);
    free(bigp);
    free(rsegs);
    free(rptrs);
    free(as);
    free(asp);
    free(xc);
    free(xcp);
    free(qa);
    free(qp);
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

static int hb_reply_from_pb(const Escrow__HeartbeatReply *pb, wire_hb_reply *out)
{
    if (pb->n_segments > ESC_HB_SEGMENTS_MAX || pb->n_transfers > ESC_HB_TRANSFERS_MAX) {
        return ESC_EPROTO;
    }
    out->lease_ms = pb->lease_ms;
    out->heartbeat_ms = pb->heartbeat_ms;
    out->nsegs = out->nxfers = 0;
    for (size_t i = 0; i < pb->n_segments; i++) {
        const Escrow__Assignment *a = pb->segments[i];
        if (!segment_id_valid(a->segment_id) || a->state > WIRE_SEG_RETIRED) {
            return ESC_EPROTO;
        }
        out->segs[i] = (wire_assignment){a->segment_id, a->epoch, a->state, a->paused};
    }
    out->nsegs = pb->n_segments;
    for (size_t i = 0; i < pb->n_transfers; i++) {
        const Escrow__TransferCmd *x = pb->transfers[i];
        if (x->transfer_id == 0 || (x->kind != WIRE_XFER_GIVE && x->kind != WIRE_XFER_RECEIVE) ||
            !segment_id_valid(x->segment_id) || x->qty < 1 || x->qty > ESC_TOTAL_MAX) {
            return ESC_EPROTO;
        }
        out->xfers[i] = (wire_xfer_cmd){x->transfer_id, x->kind, x->segment_id, x->qty};
    }
    out->nxfers = pb->n_transfers;
    return 0;
}

int wire_decode_reply(const void *buf, size_t len, wire_reply *out)
{
    wire_seg_stats *segs = out->segs;
    size_t segs_cap = out->segs_cap;
    wire_route *route = out->route;
    wire_hb_reply *hb = out->hb;
    wire_quota_item *quota = out->quota;
    size_t quota_cap = out->quota_cap;
    memset(out, 0, sizeof *out);
    out->segs = segs;
    out->segs_cap = segs_cap;
    out->route = route;
    out->hb = hb;
    out->quota = quota;
    out->quota_cap = quota_cap;
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
        copy_str(s->tenant_id, ESC_TENANT_LEN_MAX, m->segments[i]->tenant_id);
        s->reserved = m->segments[i]->reserved;
        s->empties = m->segments[i]->empties;
    }
    int rc = 0;
    if (m->route != NULL && route != NULL) {
        rc = route_from_pb(m->route, route);
        out->has_route = rc == 0;
    }
    if (rc == 0 && m->heartbeat != NULL && hb != NULL) {
        rc = hb_reply_from_pb(m->heartbeat, hb);
        out->has_hb = rc == 0;
    }
    copy_str(out->region, ESC_REGION_LEN_MAX, m->region);
    if (m->n_quota > ESC_QUOTA_ITEMS_MAX) {
        rc = ESC_EPROTO;
    }
    for (size_t i = 0; rc == 0 && quota != NULL && i < m->n_quota && out->nquota < quota_cap; i++) {
        char why[WIRE_WHY_MAX];
        if (decode_quota_item(m->quota[i], &quota[out->nquota], why) != 0) {
            rc = ESC_EPROTO;
        } else {
            out->nquota++;
        }
    }
    escrow__reply__free_unpacked(m, NULL);
    return rc;
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
