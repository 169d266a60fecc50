/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_reply.c - the Reply frame (see wire.h): status and message, the
 * hold, a stats answer's segment figures, and the optional parts other
 * files convert (a route: wire_route.c; a heartbeat reply and quota items:
 * wire_cluster.c). Encoding borrows the caller's strings and allocates only
 * the arrays protobuf-c wants pointers to; decoding writes into storage the
 * caller lends through wire_reply's pointers and caps.
 */
#include <stdlib.h>
#include <string.h>

#include "escrow.pb-c.h"
#include "escrow_errors.h"
#include "wire.h"
#include "wire_cluster.h"
#include "wire_field.h"
#include "wire_route.h"

/* ---- encoding ------------------------------------------------------------ */

/* A Reply being built, with everything it points into (owned). */
typedef struct reply_pb {
    Escrow__Reply m;
    Escrow__Hold h;
    Escrow__SegmentStats *segs, **segp;
    Escrow__QuotaItem *qa, **qp;
    wire_route_pb route;
    wire_hb_reply_pb hb;
} reply_pb;

static void reply_pb_free(reply_pb *r)
{
    free(r->segs);
    free(r->segp);
    free(r->qa);
    free(r->qp);
    wire_route_pb_free(&r->route);
    wire_hb_reply_pb_free(&r->hb);
}

static void hold_to_pb(const wire_hold *w, Escrow__Hold *h)
{
    h->hold_id = w->hold_id;
    h->segment_id = w->segment_id;
    h->item_id = (char *)w->item_id;
    h->buyer_id = (char *)w->buyer_id;
    h->qty = w->qty;
    h->qty_sold = w->qty_sold;
    h->state = (Escrow__HoldState)w->state;
    h->expires_at_ms = w->expires_at_ms;
    h->extended = w->extended;
}

static int segs_to_pb(const wire_reply *rep, reply_pb *r)
{
    if (rep->nsegs == 0) {
        return 0;
    }
    r->segs = calloc(rep->nsegs, sizeof *r->segs);
    r->segp = calloc(rep->nsegs, sizeof *r->segp);
    if (r->segs == NULL || r->segp == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < rep->nsegs; i++) {
        wire_stats_to_pb(&rep->segs[i], &r->segs[i]);
        r->segp[i] = &r->segs[i];
    }
    r->m.n_segments = rep->nsegs;
    r->m.segments = r->segp;
    return 0;
}

/* The optional parts: quota items, route, heartbeat reply. */
static int parts_to_pb(const wire_reply *rep, reply_pb *r)
{
    int rc;
    if (rep->nquota > 0) {
        if (rep->nquota > ESC_QUOTA_ITEMS_MAX) {
            return ESC_ETOOBIG;
        }
        if ((rc = wire_quota_items_to_pb(rep->quota, rep->nquota, &r->qa, &r->qp)) != 0) {
            return rc;
        }
        r->m.n_quota = rep->nquota;
        r->m.quota = r->qp;
    }
    if (rep->route != NULL) {
        if (rep->route->nsegs > ESC_ROUTE_SEGMENTS_MAX) {
            return ESC_ETOOBIG;
        }
        if ((rc = wire_route_to_pb(rep->route, &r->route)) != 0) {
            return rc;
        }
        r->m.route = &r->route.msg;
    }
    if (rep->hb != NULL) {
        if ((rc = wire_hb_reply_to_pb(rep->hb, &r->hb)) != 0) {
            return rc;
        }
        r->m.heartbeat = &r->hb.msg;
    }
    return 0;
}

int wire_encode_reply(const wire_reply *rep, void *buf, size_t cap, size_t *len)
{
    if (rep->nsegs > ESC_STATS_SEGMENTS_MAX) {
        return ESC_ETOOBIG;
    }
    reply_pb r;
    memset(&r, 0, sizeof r);
    escrow__reply__init(&r.m);
    escrow__hold__init(&r.h);
    r.m.corr_id = rep->corr_id;
    r.m.status = rep->status;
    r.m.message = (char *)rep->message;
    r.m.region = (char *)rep->region;
    if (rep->has_hold) {
        hold_to_pb(&rep->hold, &r.h);
        r.m.hold = &r.h;
        r.m.replay = rep->replay;
    } else if (rep->replay) {
        return ESC_EINVAL; /* a replay names the hold it replays */
    }
    int rc = segs_to_pb(rep, &r);
    if (rc == 0) {
        rc = parts_to_pb(rep, &r);
    }
    if (rc == 0) {
        size_t n = escrow__reply__get_packed_size(&r.m);
        if (n > cap || n > ESC_FRAME_BYTES_MAX) {
            rc = ESC_ETOOBIG;
        } else {
            *len = escrow__reply__pack(&r.m, buf);
        }
    }
    reply_pb_free(&r);
    return rc;
}

/* ---- decoding ------------------------------------------------------------ */

static void hold_from_pb(const Escrow__Hold *h, wire_hold *w)
{
    w->hold_id = h->hold_id;
    w->segment_id = h->segment_id;
    wire_copy_str(w->item_id, ESC_ITEM_LEN_MAX, h->item_id);
    wire_copy_str(w->buyer_id, ESC_BUYER_LEN_MAX, h->buyer_id);
    w->qty = h->qty;
    w->qty_sold = h->qty_sold;
    w->state = (int)h->state;
    w->expires_at_ms = h->expires_at_ms;
    w->extended = h->extended;
}

static void stats_from_pb(const Escrow__SegmentStats *e, wire_seg_stats *s)
{
    s->segment_id = e->segment_id;
    wire_copy_str(s->item_id, ESC_ITEM_LEN_MAX, e->item_id);
    s->epoch = e->epoch;
    s->available = e->available;
    s->held = e->held;
    s->sold = e->sold;
    s->state = e->state;
    wire_copy_str(s->tenant_id, ESC_TENANT_LEN_MAX, e->tenant_id);
    s->reserved = e->reserved;
    s->empties = e->empties;
}

/* Empties out but for the storage the caller lent (pointers and caps). */
static void reply_reset(wire_reply *out)
{
    wire_reply lent = {
        .segs = out->segs,
        .segs_cap = out->segs_cap,
        .route = out->route,
        .hb = out->hb,
        .quota = out->quota,
        .quota_cap = out->quota_cap,
    };
    *out = lent;
}

/* The optional parts, into the storage the caller lent. */
static int parts_from_pb(const Escrow__Reply *m, wire_reply *out)
{
    int rc = 0;
    if (m->route != NULL && out->route != NULL) {
        rc = wire_route_from_pb(m->route, out->route);
        out->has_route = rc == 0;
    }
    if (rc == 0 && m->heartbeat != NULL && out->hb != NULL) {
        rc = wire_hb_reply_from_pb(m->heartbeat, out->hb);
        out->has_hb = rc == 0;
    }
    wire_copy_str(out->region, ESC_REGION_LEN_MAX, m->region);
    if (m->n_quota > ESC_QUOTA_ITEMS_MAX) {
        rc = ESC_EPROTO;
    }
    for (size_t i = 0;
         rc == 0 && out->quota != NULL && i < m->n_quota && out->nquota < out->quota_cap; i++) {
        char why[WIRE_WHY_MAX];
        if (wire_quota_item_from_pb(m->quota[i], &out->quota[out->nquota], why) != 0) {
            rc = ESC_EPROTO;
        } else {
            out->nquota++;
        }
    }
    return rc;
}

int wire_decode_reply(const void *buf, size_t len, wire_reply *out)
{
    reply_reset(out);
    if (len > ESC_FRAME_BYTES_MAX) {
        return ESC_ETOOBIG;
    }
    Escrow__Reply *m = escrow__reply__unpack(NULL, len, buf);
    if (m == NULL) {
        return ESC_EPROTO;
    }
    out->corr_id = m->corr_id;
    out->status = m->status;
    wire_copy_str(out->message, WIRE_WHY_MAX - 1, m->message);
    if (m->hold != NULL) {
        out->has_hold = true;
        hold_from_pb(m->hold, &out->hold);
        out->replay = m->replay;
    } else if (m->replay) {
        escrow__reply__free_unpacked(m, NULL);
        return ESC_EPROTO; /* a replay without the hold it replays */
    }
    for (size_t i = 0; i < m->n_segments && out->nsegs < out->segs_cap; i++) {
        stats_from_pb(m->segments[i], &out->segs[out->nsegs++]);
    }
    int rc = parts_from_pb(m, out);
    escrow__reply__free_unpacked(m, NULL);
    return rc;
}
