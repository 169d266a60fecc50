/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_cluster.c - the cluster's own messages (see wire.h): a node's
 * heartbeat and the coordinator's answer to it (assignments, transfer
 * commands), escrowctl's AdminReq, and the QuotaReq regions exchange, both
 * ways. The Request frame around them is wire_request.c's, the Reply frame
 * wire_reply.c's.
 */
#include "wire_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "wire_field.h"
#include "wire_request.h"

/* ---- heartbeat ----------------------------------------------------------- */

static int stats_entry_from_pb(const Escrow__SegmentStats *e, wire_seg_stats *s, char *why)
{
    if (!wire_segment_id_valid(e->segment_id)) {
        return wire_why(why, ESC_EINVAL, "heartbeat: segment_id out of range");
    }
    if (e->available < 0 || e->held < 0 || e->sold < 0 || e->state > WIRE_SEG_RETIRED) {
        return wire_why(why, ESC_EINVAL, "heartbeat: segment counters out of range");
    }
    memset(s, 0, sizeof *s);
    if (e->tenant_id != NULL && e->tenant_id[0] != '\0') {
        int rc = wire_copy_id(s->tenant_id, ESC_TENANT_LEN_MAX, e->tenant_id, why, "tenant_id");
        if (rc < 0) {
            return rc;
        }
    }
    if (e->item_id != NULL && e->item_id[0] != '\0') {
        int rc = wire_copy_id(s->item_id, ESC_ITEM_LEN_MAX, e->item_id, why, "item_id");
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

/* The heartbeat's lists: segment figures, transfer results, dry segments. */
static int heartbeat_lists_from_pb(const Escrow__HeartbeatReq *h, wire_heartbeat *hb, char *why)
{
    int rc;
    if (h->n_segments > ESC_HB_SEGMENTS_MAX || h->n_transfers > ESC_HB_TRANSFERS_MAX ||
        h->n_dry > ESC_HB_SEGMENTS_MAX) {
        return wire_why(why, ESC_ETOOBIG, "heartbeat: too many entries");
    }
    for (size_t i = 0; i < h->n_segments; i++) {
        if ((rc = stats_entry_from_pb(h->segments[i], &hb->segs[i], why)) < 0) {
            return rc;
        }
    }
    hb->nsegs = h->n_segments;
    for (size_t i = 0; i < h->n_transfers; i++) {
        const Escrow__TransferResult *t = h->transfers[i];
        if (t->transfer_id == 0 || t->outcome < WIRE_XFER_SENT || t->outcome > WIRE_XFER_STALE ||
            t->qty < 0 || t->qty > ESC_TOTAL_MAX) {
            return wire_why(why, ESC_EINVAL, "heartbeat: transfer result out of range");
        }
        hb->xfers[i] = (wire_transfer_result){t->transfer_id, t->outcome, t->qty};
    }
    hb->nxfers = h->n_transfers;
    for (size_t i = 0; i < h->n_dry; i++) {
        if (!wire_segment_id_valid(h->dry[i])) {
            return wire_why(why, ESC_EINVAL, "heartbeat: dry segment_id out of range");
        }
        hb->dry[i] = h->dry[i];
    }
    hb->ndry = h->n_dry;
    if (h->n_gone > ESC_HB_SEGMENTS_MAX) {
        return wire_why(why, ESC_ETOOBIG, "heartbeat: too many entries");
    }
    for (size_t i = 0; i < h->n_gone; i++) {
        if (!wire_segment_id_valid(h->gone[i])) {
            return wire_why(why, ESC_EINVAL, "heartbeat: gone segment_id out of range");
        }
        hb->gone[i] = h->gone[i];
    }
    hb->ngone = h->n_gone;
    return 0;
}

int wire_heartbeat_from_pb(const Escrow__HeartbeatReq *h, wire_heartbeat *hb, char *why)
{
    int rc;
    hb->nsegs = hb->nxfers = hb->ndry = hb->ngone = 0;
    if ((rc = wire_copy_id(hb->node_id, ESC_NODE_ID_LEN_MAX, h->node_id, why, "node_id")) < 0) {
        return rc;
    }
    if (h->endpoint == NULL || !wire_endpoint_valid(h->endpoint)) {
        return wire_why(why, ESC_EINVAL, "heartbeat: endpoint must be 1..255 printable bytes");
    }
    snprintf(hb->endpoint, sizeof hb->endpoint, "%s", h->endpoint);
    if (h->incarnation == 0) {
        return wire_why(why, ESC_EINVAL, "heartbeat: incarnation must not be 0");
    }
    hb->incarnation = h->incarnation;
    hb->stopping = h->stopping;
    hb->delta = h->delta;
    hb->resync = h->resync;
    hb->more = h->more;
    hb->seg_count = h->seg_count;
    hb->seg_digest = h->seg_digest;
    hb->assign_version = h->assign_version;
    hb->assign_full_version = h->assign_full_version;
    hb->assign_cursor = h->assign_cursor;
    return heartbeat_lists_from_pb(h, hb, why);
}

void wire_stats_to_pb(const wire_seg_stats *w, Escrow__SegmentStats *pb)
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

/* n TransferResults from xfers: *arr and *ptrs are allocated (free both). */
static int xfer_results_to_pb(const wire_transfer_result *xfers, size_t n,
                              Escrow__TransferResult **arr, Escrow__TransferResult ***ptrs)
{
    *arr = calloc(n + 1, sizeof **arr);
    *ptrs = calloc(n + 1, sizeof **ptrs);
    if (*arr == NULL || *ptrs == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        Escrow__TransferResult *t = &(*arr)[i];
        escrow__transfer_result__init(t);
        t->transfer_id = xfers[i].transfer_id;
        t->outcome = xfers[i].outcome;
        t->qty = xfers[i].qty;
        (*ptrs)[i] = t;
    }
    return 0;
}

int wire_encode_heartbeat(uint64_t corr_id, const wire_heartbeat *hb, void *buf, size_t cap,
                          size_t *len)
{
    if (hb->nsegs > ESC_HB_SEGMENTS_MAX || hb->nxfers > ESC_HB_TRANSFERS_MAX ||
        hb->ndry > ESC_HB_SEGMENTS_MAX || hb->ngone > ESC_HB_SEGMENTS_MAX) {
        return ESC_EINVAL;
    }
    Escrow__Request m = ESCROW__REQUEST__INIT;
    Escrow__HeartbeatReq h = ESCROW__HEARTBEAT_REQ__INIT;
    wire_request_head(&m, corr_id, NULL);
    m.op_case = ESCROW__REQUEST__OP_HEARTBEAT;
    m.heartbeat = &h;
    h.node_id = (char *)hb->node_id;
    h.incarnation = hb->incarnation;
    h.endpoint = (char *)hb->endpoint;
    h.stopping = hb->stopping;
    h.n_dry = hb->ndry;
    h.dry = (uint64_t *)hb->dry;
    h.delta = hb->delta;
    h.resync = hb->resync;
    h.more = hb->more;
    h.n_gone = hb->ngone;
    h.gone = (uint64_t *)hb->gone;
    h.seg_count = hb->seg_count;
    h.seg_digest = hb->seg_digest;
    h.assign_version = hb->assign_version;
    h.assign_full_version = hb->assign_full_version;
    h.assign_cursor = hb->assign_cursor;
    Escrow__SegmentStats *st = calloc(hb->nsegs + 1, sizeof *st);
    Escrow__SegmentStats **stp = calloc(hb->nsegs + 1, sizeof *stp);
    Escrow__TransferResult *tr = NULL, **trp = NULL;
    int rc = xfer_results_to_pb(hb->xfers, hb->nxfers, &tr, &trp);
    if (rc == 0 && (st == NULL || stp == NULL)) {
        rc = ESC_ENOMEM;
    }
    if (rc == 0) {
        for (size_t i = 0; i < hb->nsegs; i++) {
            wire_stats_to_pb(&hb->segs[i], &st[i]);
            stp[i] = &st[i];
        }
        h.n_segments = hb->nsegs;
        h.segments = stp;
        h.n_transfers = hb->nxfers;
        h.transfers = trp;
        rc = wire_request_pack(&m, buf, cap, len);
    }
    free(st);
    free(stp);
    free(tr);
    free(trp);
    return rc;
}

/* ---- the coordinator's answer to a heartbeat ------------------------------ */

/* The delta assignment's fields (unassigned borrowed from w). */
static void hb_reply_delta_to_pb(const wire_hb_reply *w, Escrow__HeartbeatReply *m)
{
    m->coord_incarnation = w->coord_incarnation;
    m->assign_delta = w->assign_delta;
    m->assign_base = w->assign_base;
    m->assign_version = w->assign_version;
    m->n_unassigned = w->nunassigned;
    m->unassigned = (uint64_t *)w->unassigned;
    m->assign_more = w->assign_more;
    m->assign_cursor = w->assign_cursor;
    m->assign_next = w->assign_next;
    m->assign_count = w->assign_count;
    m->assign_digest = w->assign_digest;
    m->resync = w->resync;
}

static int hb_reply_delta_from_pb(const Escrow__HeartbeatReply *m, wire_hb_reply *w)
{
    if (m->n_unassigned > ESC_HB_SEGMENTS_MAX) {
        return ESC_EPROTO;
    }
    for (size_t i = 0; i < m->n_unassigned; i++) {
        if (!wire_segment_id_valid(m->unassigned[i])) {
            return ESC_EPROTO;
        }
        w->unassigned[i] = m->unassigned[i];
    }
    w->nunassigned = m->n_unassigned;
    w->coord_incarnation = m->coord_incarnation;
    w->assign_delta = m->assign_delta;
    w->assign_base = m->assign_base;
    w->assign_version = m->assign_version;
    w->assign_more = m->assign_more;
    w->assign_cursor = m->assign_cursor;
    w->assign_next = m->assign_next;
    w->assign_count = m->assign_count;
    w->assign_digest = m->assign_digest;
    w->resync = m->resync;
    return 0;
}

int wire_hb_reply_to_pb(const wire_hb_reply *w, wire_hb_reply_pb *pb)
{
    memset(pb, 0, sizeof *pb);
    escrow__heartbeat_reply__init(&pb->msg);
    if (w->nsegs > ESC_HB_SEGMENTS_MAX || w->nxfers > ESC_HB_TRANSFERS_MAX ||
        w->nunassigned > ESC_HB_SEGMENTS_MAX) {
        return ESC_ETOOBIG;
    }
    pb->as = calloc(w->nsegs + 1, sizeof *pb->as);
    pb->asp = calloc(w->nsegs + 1, sizeof *pb->asp);
    pb->xc = calloc(w->nxfers + 1, sizeof *pb->xc);
    pb->xcp = calloc(w->nxfers + 1, sizeof *pb->xcp);
    if (pb->as == NULL || pb->asp == NULL || pb->xc == NULL || pb->xcp == NULL) {
        return ESC_ENOMEM;
    }
    pb->msg.lease_ms = w->lease_ms;
    pb->msg.heartbeat_ms = w->heartbeat_ms;
    for (size_t i = 0; i < w->nsegs; i++) {
        escrow__assignment__init(&pb->as[i]);
        pb->as[i].segment_id = w->segs[i].segment_id;
        pb->as[i].epoch = w->segs[i].epoch;
        pb->as[i].state = w->segs[i].state;
        pb->as[i].paused = w->segs[i].paused;
        pb->asp[i] = &pb->as[i];
    }
    pb->msg.n_segments = w->nsegs;
    pb->msg.segments = pb->asp;
    for (size_t i = 0; i < w->nxfers; i++) {
        escrow__transfer_cmd__init(&pb->xc[i]);
        pb->xc[i].transfer_id = w->xfers[i].transfer_id;
        pb->xc[i].kind = w->xfers[i].kind;
        pb->xc[i].segment_id = w->xfers[i].segment_id;
        pb->xc[i].qty = w->xfers[i].qty;
        pb->xcp[i] = &pb->xc[i];
    }
    pb->msg.n_transfers = w->nxfers;
    pb->msg.transfers = pb->xcp;
    hb_reply_delta_to_pb(w, &pb->msg);
    return 0;
}

void wire_hb_reply_pb_free(wire_hb_reply_pb *pb)
{
    free(pb->as);
    free(pb->asp);
    free(pb->xc);
    free(pb->xcp);
    pb->as = NULL;
    pb->asp = NULL;
    pb->xc = NULL;
    pb->xcp = NULL;
}

int wire_hb_reply_from_pb(const Escrow__HeartbeatReply *pb, wire_hb_reply *out)
{
    if (pb->n_segments > ESC_HB_SEGMENTS_MAX || pb->n_transfers > ESC_HB_TRANSFERS_MAX) {
        return ESC_EPROTO;
    }
    out->lease_ms = pb->lease_ms;
    out->heartbeat_ms = pb->heartbeat_ms;
    out->nsegs = out->nxfers = out->nunassigned = 0;
    for (size_t i = 0; i < pb->n_segments; i++) {
        const Escrow__Assignment *a = pb->segments[i];
        if (!wire_segment_id_valid(a->segment_id) || a->state > WIRE_SEG_RETIRED) {
            return ESC_EPROTO;
        }
        out->segs[i] = (wire_assignment){a->segment_id, a->epoch, a->state, a->paused};
    }
    out->nsegs = pb->n_segments;
    for (size_t i = 0; i < pb->n_transfers; i++) {
        const Escrow__TransferCmd *x = pb->transfers[i];
        if (x->transfer_id == 0 || (x->kind != WIRE_XFER_GIVE && x->kind != WIRE_XFER_RECEIVE) ||
            !wire_segment_id_valid(x->segment_id) || x->qty < 1 || x->qty > ESC_TOTAL_MAX) {
            return ESC_EPROTO;
        }
        out->xfers[i] = (wire_xfer_cmd){x->transfer_id, x->kind, x->segment_id, x->qty};
    }
    out->nxfers = pb->n_transfers;
    return hb_reply_delta_from_pb(pb, out);
}

/* ---- admin --------------------------------------------------------------- */

/* A restock's or reduce's global part: op_id required with global, region
 * optional (a restock's); neither without global. */
static int admin_global_from_pb(const Escrow__AdminReq *a, wire_request *out, char *why)
{
    bool has_op = a->op_id != NULL && a->op_id[0] != '\0';
    bool has_region = a->region != NULL && a->region[0] != '\0';
    if (!a->global) {
        return has_op || has_region
                   ? wire_why(why, ESC_EINVAL, "op_id and region go with a global item")
                   : 0;
    }
    out->global = true;
    int rc = wire_copy_id(out->op_id, ESC_KEY_LEN_MAX, a->op_id, why, "op_id");
    if (rc < 0) {
        return rc;
    }
    if (has_region) {
        if (a->op != WIRE_ADMIN_RESTOCK || !wire_region_valid(a->region)) {
            return wire_why(why, ESC_EINVAL,
                            "region: a restock's 1..64 printable bytes (a reduce names none)");
        }
        snprintf(out->region, sizeof out->region, "%s", a->region);
    }
    return 0;
}

int wire_admin_from_pb(const Escrow__AdminReq *a, wire_request *out, char *why)
{
    int rc;
    if (a->op <= WIRE_ADMIN_NONE || a->op >= WIRE_ADMIN_LAST_) {
        return wire_why(why, ESC_EINVAL, "unknown admin operation");
    }
    out->admin_op = a->op;
    switch (a->op) {
    case WIRE_ADMIN_DRAIN:
    case WIRE_ADMIN_UNDRAIN:
        return wire_copy_id(out->node_id, ESC_NODE_ID_LEN_MAX, a->node_id, why, "node_id");
    case WIRE_ADMIN_RELOAD:
        return 0;
    default:
        break;
    }
    if ((rc = wire_copy_id(out->item_id, ESC_ITEM_LEN_MAX, a->item_id, why, "item_id")) < 0) {
        return rc;
    }
    if (a->op == WIRE_ADMIN_RESTOCK || a->op == WIRE_ADMIN_REDUCE) {
        if (a->qty < 1 || a->qty > ESC_TOTAL_MAX) {
            return wire_why(why, ESC_EINVAL, "qty must be between 1 and 1000000000");
        }
        out->qty = a->qty;
        if ((rc = admin_global_from_pb(a, out, why)) < 0) {
            return rc;
        }
    } else if (a->global || (a->op_id != NULL && a->op_id[0] != '\0') ||
               (a->region != NULL && a->region[0] != '\0')) {
        return wire_why(why, ESC_EINVAL, "global, op_id and region go with restock and reduce");
    }
    if (a->op == WIRE_ADMIN_SPLIT) {
        if (a->segments < 1 || a->segments > ESC_SEGMENTS_PER_ITEM_MAX) {
            return wire_why(why, ESC_EINVAL, "segments must be between 1 and 256");
        }
        out->nsegments = a->segments;
    }
    return 0;
}

/* A request carrying the admin operation *a. */
static int pack_admin(uint64_t corr_id, const char *tenant_id, Escrow__AdminReq *a, void *buf,
                      size_t cap, size_t *len)
{
    Escrow__Request m = ESCROW__REQUEST__INIT;
    wire_request_head(&m, corr_id, tenant_id != NULL ? tenant_id : "");
    m.op_case = ESCROW__REQUEST__OP_ADMIN;
    m.admin = a;
    return wire_request_pack(&m, buf, cap, len);
}

int wire_encode_admin(uint64_t corr_id, const char *tenant_id, uint32_t admin_op,
                      const char *item_id, const char *node_id, int64_t qty, uint32_t nsegments,
                      void *buf, size_t cap, size_t *len)
{
    if (admin_op <= WIRE_ADMIN_NONE || admin_op >= WIRE_ADMIN_LAST_) {
        return ESC_EINVAL;
    }
    Escrow__AdminReq a = ESCROW__ADMIN_REQ__INIT;
    a.op = admin_op;
    a.item_id = (char *)(item_id != NULL ? item_id : "");
    a.node_id = (char *)(node_id != NULL ? node_id : "");
    a.qty = qty;
    a.segments = nsegments;
    return pack_admin(corr_id, tenant_id, &a, buf, cap, len);
}

int wire_encode_admin_global(uint64_t corr_id, const char *tenant_id, uint32_t admin_op,
                             const char *item_id, int64_t qty, const char *op_id,
                             const char *region, void *buf, size_t cap, size_t *len)
{
    if ((admin_op != WIRE_ADMIN_RESTOCK && admin_op != WIRE_ADMIN_REDUCE) || op_id == NULL) {
        return ESC_EINVAL;
    }
    Escrow__AdminReq a = ESCROW__ADMIN_REQ__INIT;
    a.op = admin_op;
    a.item_id = (char *)(item_id != NULL ? item_id : "");
    a.qty = qty;
    a.global = true;
    a.op_id = (char *)op_id;
    a.region = (char *)(region != NULL ? region : "");
    return pack_admin(corr_id, tenant_id, &a, buf, cap, len);
}

/* ---- quota --------------------------------------------------------------- */

/* A count of units: 0..ESC_TOTAL_MAX. */
static bool units_valid(int64_t v)
{
    return v >= 0 && v <= ESC_TOTAL_MAX;
}

int wire_quota_item_from_pb(const Escrow__QuotaItem *e, wire_quota_item *q, char *why)
{
    int rc;
    memset(q, 0, sizeof *q);
    if ((rc = wire_copy_id(q->tenant_id, ESC_TENANT_LEN_MAX, e->tenant_id, why, "tenant_id")) < 0 ||
        (rc = wire_copy_id(q->item_id, ESC_ITEM_LEN_MAX, e->item_id, why, "item_id")) < 0) {
        return rc;
    }
    if (!units_valid(e->quota) || !units_valid(e->unused) || !units_valid(e->floor) ||
        !units_valid(e->in_flight) || e->demand_milli < 0) {
        return wire_why(why, ESC_EINVAL, "quota: item figures out of range");
    }
    if (!units_valid(e->held) || !units_valid(e->sold) || !units_valid(e->reduce_pending) ||
        e->reduce_ask < 0 || e->reduce_ask > ESC_GLOBAL_CHANGE_SUM_MAX ||
        e->changes > (uint64_t)ESC_GLOBAL_CHANGES_MAX ||
        e->change_sum < -ESC_GLOBAL_CHANGE_SUM_MAX || e->change_sum > ESC_GLOBAL_CHANGE_SUM_MAX ||
        e->share > ESC_QUOTA_SHARE_MAX) {
        return wire_why(why, ESC_EINVAL, "quota: item stock figures out of range");
    }
    q->quota = e->quota;
    q->unused = e->unused;
    q->demand_milli = e->demand_milli;
    q->floor = e->floor;
    q->in_flight = e->in_flight;
    q->known = e->known;
    q->held = e->held;
    q->sold = e->sold;
    q->reduce_pending = e->reduce_pending;
    q->reduce_ask = e->reduce_ask;
    q->changes = e->changes;
    q->change_sum = e->change_sum;
    q->share = e->share;
    return 0;
}

/* A QuotaReq's regions, item and qty (what a kind carries), into q and out. */
static int quota_head_from_pb(const Escrow__QuotaReq *r, wire_quota *q, wire_request *out,
                              char *why)
{
    if (r->kind != WIRE_QUOTA_MOVE) {
        if (!wire_region_valid(r->from_region)) {
            return wire_why(why, ESC_EINVAL, "quota: from_region must be 1..64 printable bytes");
        }
        snprintf(q->from_region, sizeof q->from_region, "%s", r->from_region);
    }
    if (r->kind != WIRE_QUOTA_STATUS) {
        if (!wire_region_valid(r->to_region)) {
            return wire_why(why, ESC_EINVAL, "quota: to_region must be 1..64 printable bytes");
        }
        snprintf(q->to_region, sizeof q->to_region, "%s", r->to_region);
        int rc = wire_copy_id(out->item_id, ESC_ITEM_LEN_MAX, r->item_id, why, "item_id");
        if (rc < 0) {
            return rc;
        }
        if (r->qty < 1 || r->qty > ESC_TOTAL_MAX) {
            return wire_why(why, ESC_EINVAL, "qty must be between 1 and 1000000000");
        }
        out->qty = r->qty;
    }
    if (r->kind == WIRE_QUOTA_OFFER) {
        if (r->transfer_id == 0 || r->transfer_id > INT64_MAX) {
            return wire_why(why, ESC_EINVAL, "quota: transfer_id out of range");
        }
        q->transfer_id = r->transfer_id;
    }
    return 0;
}

int wire_quota_from_pb(const Escrow__QuotaReq *r, wire_quota *q, wire_request *out, char *why)
{
    int rc;
    memset(q, 0, offsetof(wire_quota, items));
    if (r->kind < WIRE_QUOTA_STATUS || r->kind > WIRE_QUOTA_MOVE) {
        return wire_why(why, ESC_EINVAL, "quota: unknown kind");
    }
    q->kind = r->kind;
    q->fresh = r->kind == WIRE_QUOTA_STATUS && r->fresh;
    if ((rc = quota_head_from_pb(r, q, out, why)) < 0) {
        return rc;
    }
    if (r->n_items > ESC_QUOTA_ITEMS_MAX) {
        return wire_why(why, ESC_ETOOBIG, "quota: too many items");
    }
    if (r->kind != WIRE_QUOTA_STATUS && r->n_items > 0) {
        return wire_why(why, ESC_EINVAL, "quota: only a status carries items");
    }
    for (size_t i = 0; i < r->n_items; i++) {
        if ((rc = wire_quota_item_from_pb(r->items[i], &q->items[i], why)) < 0) {
            return rc;
        }
    }
    q->nitems = r->n_items;
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
    pb->held = w->held;
    pb->sold = w->sold;
    pb->reduce_pending = w->reduce_pending;
    pb->reduce_ask = w->reduce_ask;
    pb->changes = w->changes;
    pb->change_sum = w->change_sum;
    pb->share = w->share;
}

int wire_quota_items_to_pb(const wire_quota_item *items, size_t n, Escrow__QuotaItem **arr,
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
    wire_request_head(&m, corr_id, tenant_id != NULL ? tenant_id : "");
    m.op_case = ESCROW__REQUEST__OP_QUOTA;
    m.quota = &r;
    r.kind = q->kind;
    r.from_region = (char *)q->from_region;
    r.to_region = (char *)q->to_region;
    r.transfer_id = q->transfer_id;
    r.fresh = q->fresh;
    r.item_id = (char *)(item_id != NULL ? item_id : "");
    r.qty = qty;
    Escrow__QuotaItem *arr = NULL, **ptrs = NULL;
    int rc = wire_quota_items_to_pb(q->items, q->nitems, &arr, &ptrs);
    if (rc == 0) {
        r.n_items = q->nitems;
        r.items = ptrs;
        rc = wire_request_pack(&m, buf, cap, len);
    }
    free(arr);
    free(ptrs);
    return rc;
}
