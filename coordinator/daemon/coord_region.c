/*
 * coord_region.c - peers, global items' quota and quota transfers between
 * regions (coord_region.h; migration 0008 for the protocol).
 */
#include "coord_region.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_db.h"
#include "coord_failpoint.h"
#include "coord_policy.h"
#include "coord_reply.h"
#include "coord_state.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"
#include "region_cfg.h"

#define TAG "/* escrow:coord-region */ "
/* Open quota transfers offered again per round (the oldest first). */
#define REGION_OFFERS_MAX 256
/* A peer's view older than this many rounds is not trusted. */
#define REGION_STALE_ROUNDS 3
/* An operator's move is answered after at most this long; it goes on. */
#define REGION_MOVE_ANSWER_MS 2000
/* An export that cannot find its units for this long is dropped. */
#define REGION_INTENT_MS 60000
/* Reconnect a peer's socket after this many silent rounds (nnx_reconnect). */
#define REGION_RECONNECT_ROUNDS 5
/* corr_id of an offer: this bit | transfer_id; status: a sequence below it. */
#define CORR_OFFER (1ULL << 62)

/* An operator's move waiting for its answer. */
typedef struct move_req {
    nnx_hdr hdr;
    uint64_t corr_id;
} move_req;

/* One peer's view of one global item. */
typedef struct coord_gview {
    wire_quota_item v;
    int64_t at_us; /* monotonic; 0 = never heard */
} coord_gview;

typedef struct coord_gitem {
    coord_gview peers[REGION_PEERS_MAX];
    int64_t in_flight_to[REGION_PEERS_MAX]; /* open transfers to each peer (last read) */
    /* export intent */
    int intent_peer; /* -1 = none */
    int64_t intent_left;
    int64_t intent_sent;
    bool intent_manual;
    int64_t intent_until_us;
    struct move_req *intent_req; /* owned: an operator waits for the answer */
    int64_t answer_at_us;
} coord_gitem;

typedef struct coord_peer {
    coord *c;
    const region_peer *cfg;
    int sock;
    int eid;
    nnx_watch watch;
    bool watch_open;
    uint64_t status_seq, status_done;
    int64_t last_reply_us;
    uint32_t silent_rounds;
    size_t cursor; /* next item index for the status page */
} coord_peer;

typedef struct coord_region {
    const region_cfg *cfg;
    coord_region_fail_cb fail_cb;
    size_t npeers;
    coord_peer peers[REGION_PEERS_MAX];
    int64_t last_round_us;
    bool offers_running;
    bool claimed;
    unsigned char frame[ESC_FRAME_BYTES_MAX];
    wire_quota scratch;
    wire_quota_item items[ESC_QUOTA_ITEMS_MAX];
    uint64_t n_sent, n_applied, n_refused, n_done;
} coord_region;

static coord_gitem *gitem(coord_item *it)
{
    if (it->g == NULL) {
        it->g = esc_xcalloc(1, sizeof *it->g);
        it->g->intent_peer = -1;
    }
    return it->g;
}

static int peer_index(const coord_region *r, const char *name)
{
    for (size_t i = 0; i < r->npeers; i++) {
        if (strcmp(r->peers[i].cfg->name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static int64_t stale_us(const coord_region *r)
{
    return (int64_t)r->cfg->interval_ms * 1000 * REGION_STALE_ROUNDS;
}

/* This region's view of the item. */
static void own_view(coord *c, coord_item *it, wire_quota_item *out)
{
    static coord_pseg segs[ESC_SEGMENTS_PER_ITEM_MAX];
    coord_pitem in;
    coord_cat_snapshot(&c->cat, it, c->cfg.collapse_pct, c->cfg.low_water_pct, segs, &in);
    memset(out, 0, sizeof *out);
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", it->tenant_id);
    snprintf(out->item_id, sizeof out->item_id, "%s", it->item_id);
    double demand = 0;
    for (size_t i = 0; i < in.nsegs; i++) {
        demand += segs[i].demand;
    }
    out->quota = it->total;
    out->unused = coord_policy_remaining(&in);
    out->demand_milli = (int64_t)(demand * 1000.0);
    out->floor = region_cfg_floor(c->region->cfg, it->tenant_id, it->item_id);
    coord_gitem *g = gitem(it);
    for (size_t i = 0; i < c->region->npeers; i++) {
        out->in_flight += g->in_flight_to[i];
    }
    out->known = it->state != COORD_ITEM_RETIRED;
}

/* ---- sending to peers ------------------------------------------------------------ */

static void peer_send(coord_peer *p, uint64_t corr, const char *tenant_id, const wire_quota *q,
                      const char *item_id, int64_t qty)
{
    coord_region *r = p->c->region;
    size_t len;
    int rc = wire_encode_quota(corr, tenant_id, q, item_id, qty, r->frame, sizeof r->frame, &len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-PEER", "peer=%s cannot encode: %s", p->cfg->name,
                esc_err_name(rc));
        return;
    }
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, (uint32_t)(corr & 0x7fffffffu));
    rc = nnx_send(p->sock, &hdr, r->frame, len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_DEBUG, "COORD-PEER", "peer=%s send: %s", p->cfg->name, esc_err_name(rc));
    }
}

static void send_offer(coord *c, int peer, uint64_t transfer_id, const char *tenant_id,
                       const char *item_id, int64_t qty)
{
    coord_region *r = c->region;
    wire_quota *q = &r->scratch;
    memset(q, 0, sizeof *q);
    q->kind = WIRE_QUOTA_OFFER;
    snprintf(q->from_region, sizeof q->from_region, "%s", r->cfg->name);
    snprintf(q->to_region, sizeof q->to_region, "%s", r->peers[peer].cfg->name);
    q->transfer_id = transfer_id;
    peer_send(&r->peers[peer], CORR_OFFER | transfer_id, tenant_id, q, item_id, qty);
}

static void send_status(coord *c, coord_peer *p)
{
    coord_region *r = c->region;
    wire_quota *q = &r->scratch;
    memset(q, 0, sizeof *q);
    q->kind = WIRE_QUOTA_STATUS;
    snprintf(q->from_region, sizeof q->from_region, "%s", r->cfg->name);
    size_t n = c->cat.nitems, scanned = 0;
    if (p->cursor >= n) {
        p->cursor = 0;
    }
    while (scanned < n && q->nitems < ESC_QUOTA_ITEMS_MAX) {
        coord_item *it = c->cat.items[p->cursor];
        p->cursor = (p->cursor + 1) % n;
        scanned++;
        if (it->global) {
            own_view(c, it, &q->items[q->nitems++]);
        }
    }
    p->status_seq++;
    peer_send(p, p->status_seq, NULL, q, NULL, 0);
}

/* ---- step 3: the receiver's answer, recorded at the donor ------------------------ */

typedef struct done_job {
    uint64_t transfer_id;
    bool refused;
} done_job;

static void on_done(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    done_job *j = arg;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "transfer=%" PRIu64 " recording the answer: %s",
                j->transfer_id, err->message);
    } else if (pg_result_true(res, 0, 0)) {
        c->region->n_done++;
        ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-DONE", "transfer=%" PRIu64 " %s", j->transfer_id,
                j->refused ? "refused: units back in unallocated" : "received");
        if (j->refused) {
            coord_db_reload(c); /* the units came back: memory follows the database */
        }
    }
    free(j);
}

static void record_answer(coord *c, uint64_t transfer_id, bool refused)
{
    static const char sql[] = TAG "SELECT escrow_quota_done($1, $2)";
    done_job *j = esc_xcalloc(1, sizeof *j);
    j->transfer_id = transfer_id;
    j->refused = refused;
    char id[24];
    snprintf(id, sizeof id, "%" PRIu64, transfer_id);
    const char *v[2] = {id, refused ? "refused" : "received"};
    if (coord_db_push(c, sql, 2, v, on_done, j) != 0) {
        free(j); /* the next round offers it again and gets the answer again */
    }
}

/* ---- answers from peers --------------------------------------------------------- */

static void merge_views(coord *c, int peer, const wire_quota_item *items, size_t n)
{
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < n; i++) {
        coord_item *it = coord_cat_item(&c->cat, items[i].tenant_id, items[i].item_id);
        if (it == NULL || !it->global) {
            continue;
        }
        coord_gview *v = &gitem(it)->peers[peer];
        v->v = items[i];
        v->at_us = now;
    }
}

static void on_peer_reply(coord *c, coord_peer *p, const void *buf, size_t len)
{
    coord_region *r = c->region;
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.quota = r->items;
    rep.quota_cap = ESC_QUOTA_ITEMS_MAX;
    int rc = wire_decode_reply(buf, len, &rep);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s malformed reply: %s", p->cfg->name,
                esc_err_name(rc));
        return;
    }
    p->last_reply_us = esc_mono_us();
    p->silent_rounds = 0;
    if (rep.corr_id & CORR_OFFER) {
        uint64_t id = rep.corr_id & ~CORR_OFFER;
        if (rep.status == 0) {
            record_answer(c, id, false);
        } else if (rep.status == ESC_EUNKNOWN_ITEM) {
            ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "transfer=%" PRIu64 " refused by %s: %s", id,
                    p->cfg->name, rep.message);
            record_answer(c, id, true);
        } else {
            ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA", "transfer=%" PRIu64 " not applied by %s yet: %s",
                    id, p->cfg->name, rep.message);
        }
        return;
    }
    if (rep.status != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s status refused: %s", p->cfg->name,
                rep.message);
        return;
    }
    if (strcmp(rep.region, p->cfg->name) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-PEER",
                "peer=%s answered as region '%s': check [peers] in %s; its answers are ignored",
                p->cfg->name, rep.region, r->cfg->path);
        return;
    }
    if (rep.corr_id <= p->status_done) {
        return; /* an older status overtaken by a newer one */
    }
    p->status_done = rep.corr_id;
    merge_views(c, (int)(p - r->peers), rep.quota, rep.nquota);
}

static void on_peer_readable(nnx_watch *w, void *arg)
{
    coord_peer *p = arg;
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && !p->c->stopping; i++) {
        void *msg;
        size_t len;
        nnx_hdr hdr;
        int rc = nnx_recv(w->sock, &msg, &len, &hdr);
        if (rc != 0 || msg == NULL) {
            return;
        }
        on_peer_reply(p->c, p, msg, len);
        nnx_free(msg);
    }
}

/* ---- requests from peers and escrowctl --------------------------------------------- */

typedef struct apply_job {
    nnx_hdr hdr;
    uint64_t corr_id;
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    char from[ESC_REGION_LEN_MAX + 1];
    uint64_t transfer_id;
    int64_t qty;
    coord_item *it; /* write_busy set by this job; NULL if unknown here */
} apply_job;

static void on_applied(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    apply_job *j = arg;
    coord_region *r = c->region;
    if (j->it != NULL) {
        j->it->write_busy = false;
    }
    int status = 0;
    char msg[400];
    if (err->code != 0) {
        status = err->conn_lost ? ESC_EUNAVAILABLE : ESC_EDB;
        snprintf(msg, sizeof msg, "not applied: %s", err->message);
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            coord_db_unknown(c);
        }
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "from=%s transfer=%" PRIu64 " %s", j->from,
                j->transfer_id, msg);
    } else {
        const char *outcome = PQgetvalue(res, 0, 0);
        if (strcmp(outcome, "applied") == 0) {
            r->n_applied++;
            if (j->it != NULL) {
                j->it->total += j->qty;
                j->it->unallocated += j->qty;
                j->it->pass_now = true;
            } else {
                coord_db_reload(c);
            }
            ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-APPLIED",
                    "from=%s transfer=%" PRIu64 " item=%s/%s qty=%" PRId64, j->from, j->transfer_id,
                    j->tenant_id, j->item_id, j->qty);
            coord_failpoint_quota_applied(&c->cfg.failpoints);
        }
        if (strncmp(outcome, "refused", 7) == 0) {
            r->n_refused++;
            status = ESC_EUNKNOWN_ITEM;
        }
        snprintf(msg, sizeof msg, "%s", outcome);
    }
    coord_reply(c, &j->hdr, j->corr_id, status, msg);
    free(j);
}

static void handle_offer(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    coord_region *r = c->region;
    static const char sql[] = TAG "SELECT escrow_quota_apply($1, $2, $3, $4, $5)";
    if (strcmp(q->quota->to_region, r->cfg->name) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "this is region %s, not %s", r->cfg->name, q->quota->to_region);
        coord_reply(c, hdr, q->corr_id, ESC_ECONFIG, msg);
        return;
    }
    coord_item *it = coord_cat_item(&c->cat, q->tenant_id, q->item_id);
    if (it != NULL && (it->write_busy || it->plan_busy > 0 || c->db.need_reconcile)) {
        coord_reply(c, hdr, q->corr_id, ESC_EBUSY, "the item is busy; offer again");
        return;
    }
    apply_job *j = esc_xcalloc(1, sizeof *j);
    j->hdr = *hdr;
    j->corr_id = q->corr_id;
    snprintf(j->tenant_id, sizeof j->tenant_id, "%s", q->tenant_id);
    snprintf(j->item_id, sizeof j->item_id, "%s", q->item_id);
    snprintf(j->from, sizeof j->from, "%s", q->quota->from_region);
    j->transfer_id = q->quota->transfer_id;
    j->qty = q->qty;
    char id[24], qty[24];
    snprintf(id, sizeof id, "%" PRIu64, j->transfer_id);
    snprintf(qty, sizeof qty, "%" PRId64, j->qty);
    const char *v[5] = {j->from, id, j->tenant_id, j->item_id, qty};
    if (coord_db_push(c, sql, 5, v, on_applied, j) != 0) {
        free(j);
        coord_reply(c, hdr, q->corr_id, ESC_EBUSY, "the coordinator is busy; offer again");
        return;
    }
    if (it != NULL) {
        it->write_busy = true;
        j->it = it;
    }
}

static void handle_status(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    coord_region *r = c->region;
    int peer = peer_index(r, q->quota->from_region);
    if (peer < 0 && q->quota->nitems == 0) {
        wire_reply probe; /* escrowctl regions: who are you? */
        memset(&probe, 0, sizeof probe);
        probe.corr_id = q->corr_id;
        snprintf(probe.region, sizeof probe.region, "%s", r->cfg->name);
        coord_reply_send(c, hdr, &probe);
        return;
    }
    if (peer < 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "region %s is not a peer of region %s (see [peers] in %s)",
                 q->quota->from_region, r->cfg->name, r->cfg->path);
        coord_reply(c, hdr, q->corr_id, ESC_ECONFIG, msg);
        return;
    }
    merge_views(c, peer, q->quota->items, q->quota->nitems);
    size_t n = 0;
    for (size_t i = 0; i < q->quota->nitems; i++) {
        const wire_quota_item *e = &q->quota->items[i];
        coord_item *it = coord_cat_item(&c->cat, e->tenant_id, e->item_id);
        wire_quota_item *o = &r->items[n++];
        if (it != NULL && it->global) {
            own_view(c, it, o);
        } else {
            memset(o, 0, sizeof *o);
            snprintf(o->tenant_id, sizeof o->tenant_id, "%s", e->tenant_id);
            snprintf(o->item_id, sizeof o->item_id, "%s", e->item_id);
        }
    }
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    rep.quota = r->items;
    rep.nquota = n;
    snprintf(rep.region, sizeof rep.region, "%s", r->cfg->name);
    coord_reply_send(c, hdr, &rep);
}

/* The answer to an operator's move: what was sent, what is still coming. */
static void answer_move(coord *c, coord_item *it)
{
    coord_gitem *g = it->g;
    move_req *a = g->intent_req;
    if (a == NULL) {
        return;
    }
    g->intent_req = NULL;
    char msg[400];
    const char *to = c->region->peers[g->intent_peer].cfg->name;
    if (g->intent_left == 0) {
        snprintf(msg, sizeof msg,
                 "sent %" PRId64 " units of %s/%s to %s; they count as in flight until %s "
                 "confirms",
                 g->intent_sent, it->tenant_id, it->item_id, to, to);
    } else {
        snprintf(msg, sizeof msg,
                 "sent %" PRId64 " units of %s/%s to %s so far; %" PRId64
                 " more are being reclaimed from the segments and follow",
                 g->intent_sent, it->tenant_id, it->item_id, to, g->intent_left);
    }
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.corr_id = a->corr_id;
    size_t n = strnlen(msg, sizeof rep.message - 1); /* a long sentence is cut */
    memcpy(rep.message, msg, n);
    rep.message[n] = '\0';
    own_view(c, it, &c->region->items[0]);
    rep.quota = c->region->items;
    rep.nquota = 1;
    snprintf(rep.region, sizeof rep.region, "%s", c->region->cfg->name);
    coord_reply_send(c, &a->hdr, &rep);
    ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-MOVE", "%s", msg);
    free(a);
}

static void handle_move(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    coord_region *r = c->region;
    char msg[600];
    int peer = peer_index(r, q->quota->to_region);
    coord_item *it = coord_cat_item(&c->cat, q->tenant_id, q->item_id);
    int status = 0;
    if (peer < 0) {
        status = ESC_EINVAL;
        snprintf(msg, sizeof msg, "region %s is not a peer of region %s", q->quota->to_region,
                 r->cfg->name);
    } else if (it == NULL || !it->global) {
        status = ESC_EUNKNOWN_ITEM;
        snprintf(msg, sizeof msg, "no global item %s/%s in region %s", q->tenant_id, q->item_id,
                 r->cfg->name);
    } else if (it->state == COORD_ITEM_RETIRED) {
        status = ESC_ECONFLICT;
        snprintf(msg, sizeof msg, "%s/%s is retired", it->tenant_id, it->item_id);
    } else if (gitem(it)->intent_manual && gitem(it)->intent_left > 0) {
        status = ESC_ECONFLICT;
        snprintf(msg, sizeof msg, "a move of %s/%s is in progress (%" PRId64 " units left)",
                 it->tenant_id, it->item_id, it->g->intent_left);
    } else {
        wire_quota_item v;
        own_view(c, it, &v);
        if (q->qty > v.unused) {
            status = ESC_ECONFLICT;
            snprintf(msg, sizeof msg,
                     "region %s has only %" PRId64 " units of %s/%s that are neither held nor "
                     "sold; nothing moved",
                     r->cfg->name, v.unused, it->tenant_id, it->item_id);
        }
    }
    if (status != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA-MOVE", "%s", msg);
        coord_reply(c, hdr, q->corr_id, status, msg);
        return;
    }
    coord_gitem *g = it->g;
    move_req *a = esc_xcalloc(1, sizeof *a);
    a->hdr = *hdr;
    a->corr_id = q->corr_id;
    g->intent_peer = peer;
    g->intent_left = q->qty;
    g->intent_sent = 0;
    g->intent_manual = true;
    g->intent_until_us = esc_mono_us() + (int64_t)REGION_INTENT_MS * 1000;
    g->intent_req = a;
    g->answer_at_us = esc_mono_us() + (int64_t)REGION_MOVE_ANSWER_MS * 1000;
    it->pass_now = true; /* reclaim from the segments at once */
}

void coord_region_handle(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    if (c->region == NULL) {
        coord_reply(c, hdr, q->corr_id, ESC_ECONFIG,
                    "this coordinator runs without a region configuration (--config)");
        return;
    }
    if (!c->region->claimed) {
        coord_reply(c, hdr, q->corr_id, ESC_EUNAVAILABLE,
                    "the coordinator has not claimed its region's database yet");
        return;
    }
    switch (q->quota->kind) {
    case WIRE_QUOTA_STATUS:
        handle_status(c, hdr, q);
        return;
    case WIRE_QUOTA_OFFER:
        handle_offer(c, hdr, q);
        return;
    default:
        handle_move(c, hdr, q);
        return;
    }
}

/* ---- step 1: sending --------------------------------------------------------------- */

typedef struct send_job {
    coord_item *it;
    int peer;
    int64_t qty;
} send_job;

static void on_sent(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    send_job *j = arg;
    coord_item *it = j->it;
    coord_gitem *g = gitem(it);
    it->write_busy = false;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "item=%s/%s send %" PRId64 " failed: %s",
                it->tenant_id, it->item_id, j->qty, err->message);
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            coord_db_unknown(c);
        }
        free(j);
        return;
    }
    if (pg_result_null(res, 0, 0)) {
        ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA",
                "item=%s/%s fewer than %" PRId64 " units unallocated: re-reading", it->tenant_id,
                it->item_id, j->qty);
        coord_db_reload(c);
        free(j);
        return;
    }
    uint64_t id = (uint64_t)pg_result_i64_or(res, 0, 0, 0);
    c->region->n_sent++;
    it->total -= j->qty;
    it->unallocated -= j->qty;
    g->in_flight_to[j->peer] += j->qty;
    if (g->intent_peer == j->peer) {
        g->intent_left = g->intent_left > j->qty ? g->intent_left - j->qty : 0;
        g->intent_sent += j->qty;
    }
    const char *to = c->region->peers[j->peer].cfg->name;
    ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-SENT",
            "transfer=%" PRIu64 " item=%s/%s qty=%" PRId64 " to=%s quota_left=%" PRId64, id,
            it->tenant_id, it->item_id, j->qty, to, it->total);
    coord_failpoint_quota_sent(&c->cfg.failpoints);
    send_offer(c, j->peer, id, it->tenant_id, it->item_id, j->qty);
    if (g->intent_left == 0) {
        answer_move(c, it);
        g->intent_peer = -1;
        g->intent_manual = false;
    }
    coord_cat_changed(&c->cat, it);
    free(j);
}

static void send_ready(coord *c, coord_item *it)
{
    static const char sql[] = TAG "SELECT escrow_quota_send($1, $2, $3, $4, $5)";
    coord_gitem *g = it->g;
    int64_t free_units = it->unallocated - it->reduce_pending;
    if (g == NULL || g->intent_peer < 0 || g->intent_left <= 0 || free_units <= 0 ||
        it->write_busy || it->plan_busy > 0 || c->db.need_reconcile) {
        return;
    }
    send_job *j = esc_xcalloc(1, sizeof *j);
    j->it = it;
    j->peer = g->intent_peer;
    j->qty = g->intent_left < free_units ? g->intent_left : free_units;
    char qty[24];
    snprintf(qty, sizeof qty, "%" PRId64, j->qty);
    const char *v[5] = {it->tenant_id, it->item_id, c->region->peers[j->peer].cfg->name, qty,
                        g->intent_manual ? "manual" : "auto"};
    if (coord_db_push(c, sql, 5, v, on_sent, j) != 0) {
        free(j);
        return;
    }
    it->write_busy = true;
}

/* ---- the round: open transfers, status, policy ----------------------------------- */

static void on_open_transfers(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)arg;
    coord_region *r = c->region;
    r->offers_running = false;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "reading open quota transfers: %s", err->message);
        return;
    }
    for (size_t i = 0; i < c->cat.nitems; i++) {
        if (c->cat.items[i]->g != NULL) {
            memset(c->cat.items[i]->g->in_flight_to, 0, sizeof c->cat.items[i]->g->in_flight_to);
        }
    }
    for (int i = 0; i < PQntuples(res); i++) {
        uint64_t id = (uint64_t)pg_result_i64_or(res, i, 0, 0);
        const char *tenant = PQgetvalue(res, i, 1), *item = PQgetvalue(res, i, 2);
        const char *to = PQgetvalue(res, i, 3);
        int64_t qty = pg_result_i64_or(res, i, 4, 0);
        int peer = peer_index(r, to);
        if (peer < 0) {
            ESC_LOG(ESC_LOG_ERROR, "COORD-QUOTA",
                    "transfer=%" PRIu64 " to region %s which is not in [peers] of %s: it waits", id,
                    to, r->cfg->path);
            continue;
        }
        coord_item *it = coord_cat_item(&c->cat, tenant, item);
        if (it != NULL) {
            gitem(it)->in_flight_to[peer] += qty;
        }
        send_offer(c, peer, id, tenant, item, qty);
    }
}

static void plan_item(coord *c, coord_item *it, int64_t now)
{
    coord_region *r = c->region;
    coord_gitem *g = gitem(it);
    if (g->intent_peer >= 0 && g->intent_manual) {
        if (now > g->intent_until_us) {
            ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA-MOVE",
                    "item=%s/%s: %" PRId64 " units could not be reclaimed within %d s; the "
                    "rest of the move is dropped",
                    it->tenant_id, it->item_id, g->intent_left, REGION_INTENT_MS / 1000);
            answer_move(c, it);
            g->intent_peer = -1;
            g->intent_left = 0;
            g->intent_manual = false;
        }
        return;
    }
    g->intent_peer = -1;
    g->intent_left = 0;
    if (!r->cfg->quota_auto || it->state != COORD_ITEM_ACTIVE) {
        return;
    }
    wire_quota_item own;
    own_view(c, it, &own);
    coord_qpeer peers[REGION_PEERS_MAX];
    for (size_t i = 0; i < r->npeers; i++) {
        const coord_gview *v = &g->peers[i];
        peers[i] = (coord_qpeer){
            .fresh = v->at_us != 0 && now - v->at_us <= stale_us(r) && v->v.known,
            .unused = v->v.unused,
            .demand_milli = v->v.demand_milli,
            .in_flight_to = g->in_flight_to[i],
        };
    }
    coord_qin in = {
        .unused = own.unused,
        .demand_milli = own.demand_milli,
        .floor = own.floor,
        .horizon_ms = r->cfg->horizon_ms,
        .npeers = r->npeers,
        .peers = peers,
    };
    int64_t qty = 0;
    int peer = coord_policy_quota(&in, &qty);
    if (peer >= 0) {
        g->intent_peer = peer;
        g->intent_left = qty;
        g->intent_sent = 0;
        it->pass_now = true;
        ESC_LOG(ESC_LOG_DEBUG, "COORD-QUOTA-PLAN", "item=%s/%s send %" PRId64 " to %s",
                it->tenant_id, it->item_id, qty, r->peers[peer].cfg->name);
    }
}

static void round_start(coord *c, int64_t now)
{
    static const char sql[] =
        TAG "SELECT transfer_id, tenant_id, item_id, to_region, qty FROM quota_transfers "
            "WHERE state = 'sent' ORDER BY transfer_id LIMIT 256";
    coord_region *r = c->region;
    if (!r->offers_running && coord_db_push(c, sql, 0, NULL, on_open_transfers, NULL) == 0) {
        r->offers_running = true;
    }
    for (size_t i = 0; i < r->npeers; i++) {
        coord_peer *p = &r->peers[i];
        if (++p->silent_rounds > REGION_RECONNECT_ROUNDS) {
            p->silent_rounds = 0;
            if (nnx_reconnect(p->sock, &p->eid, p->cfg->coordinator) != 0) {
                ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s cannot reconnect", p->cfg->name);
            }
        }
        send_status(c, p);
    }
    for (size_t i = 0; i < c->cat.nitems; i++) {
        if (c->cat.items[i]->global) {
            plan_item(c, c->cat.items[i], now);
        }
    }
}

void coord_region_tick(coord *c)
{
    coord_region *r = c->region;
    if (r == NULL || !r->claimed || !c->loaded || c->stopping) {
        return;
    }
    int64_t now = esc_mono_us();
    if (now - r->last_round_us >= (int64_t)r->cfg->interval_ms * 1000) {
        r->last_round_us = now;
        round_start(c, now);
    }
    for (size_t i = 0; i < c->cat.nitems; i++) {
        coord_item *it = c->cat.items[i];
        if (it->g == NULL) {
            continue;
        }
        send_ready(c, it);
        if (it->g->intent_req != NULL && now >= it->g->answer_at_us) {
            answer_move(c, it);
        }
    }
}

int64_t coord_region_export_want(coord *c, coord_item *it)
{
    if (c->region == NULL || !it->global || it->g == NULL || it->g->intent_peer < 0) {
        return 0;
    }
    return it->g->intent_left;
}

bool coord_region_may_sell_out(coord *c, coord_item *it)
{
    if (c->region == NULL || !it->global) {
        return true;
    }
    coord_region *r = c->region;
    coord_gitem *g = gitem(it);
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < r->npeers; i++) {
        const coord_gview *v = &g->peers[i];
        if (g->in_flight_to[i] != 0) {
            return false;
        }
        if (v->at_us == 0 || now - v->at_us > stale_us(r)) {
            return false; /* it may still have units: TRY_LATER, not SOLD_OUT */
        }
        if (v->v.known && (v->v.unused != 0 || v->v.in_flight != 0)) {
            return false;
        }
    }
    return true;
}

/* ---- lifecycle --------------------------------------------------------------------- */

static void on_claimed(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)arg;
    coord_region *r = c->region;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-REGION", "cannot claim the database for region %s: %s",
                r->cfg->name, err->message);
        r->fail_cb(c);
        return;
    }
    const char *owner = PQgetvalue(res, 0, 0);
    if (strcmp(owner, r->cfg->name) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-REGION",
                "the database in %s belongs to region %s, not %s: refusing to start", r->cfg->path,
                owner, r->cfg->name);
        r->fail_cb(c);
        return;
    }
    r->claimed = true;
    ESC_LOG(ESC_LOG_INFO, "COORD-REGION", "region=%s peers=%zu interval_ms=%u auto=%d",
            r->cfg->name, r->npeers, r->cfg->interval_ms, r->cfg->quota_auto);
}

int coord_region_start(coord *c, coord_region_fail_cb fail_cb)
{
    static const char sql[] =
        TAG "WITH ins AS (INSERT INTO region_self (region) VALUES ($1) "
            "ON CONFLICT (one_row) DO NOTHING RETURNING region) "
            "SELECT region FROM ins UNION ALL SELECT region FROM region_self LIMIT 1";
    const region_cfg *cfg = c->cfg.region;
    if (cfg == NULL) {
        return 0;
    }
    coord_region *r = esc_xcalloc(1, sizeof *r);
    c->region = r;
    r->cfg = cfg;
    r->fail_cb = fail_cb;
    for (size_t i = 0; i < cfg->npeers; i++) {
        coord_peer *p = &r->peers[i];
        p->c = c;
        p->cfg = &cfg->peers[i];
        p->sock = -1;
        int rc = nnx_open_req(&p->sock);
        if (rc == 0) {
            rc = nnx_connect(p->sock, p->cfg->coordinator, &p->eid);
        }
        if (rc == 0) {
            rc = nnx_watch_start(c->loop, &p->watch, p->sock, on_peer_readable, p);
        }
        if (rc != 0) {
            ESC_LOG(ESC_LOG_ERROR, "COORD-PEER", "peer=%s %s: %s", p->cfg->name,
                    p->cfg->coordinator, esc_strerror(rc));
            return rc;
        }
        p->watch_open = true;
        c->handles_open++;
        r->npeers++;
    }
    const char *v[1] = {cfg->name};
    if (coord_db_push(c, sql, 1, v, on_claimed, NULL) != 0) {
        return ESC_EBUSY;
    }
    return 0;
}

static void on_peer_closed(uv_handle_t *h)
{
    coord *c = h->data;
    c->handles_open--;
}

void coord_region_close(coord *c)
{
    coord_region *r = c->region;
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->npeers; i++) {
        coord_peer *p = &r->peers[i];
        if (p->watch_open) {
            p->watch_open = false;
            p->watch.poll.data = c;
            nnx_watch_close(&p->watch, on_peer_closed);
        }
    }
    for (size_t i = 0; i < c->cat.nitems; i++) {
        coord_item *it = c->cat.items[i];
        if (it->g != NULL && it->g->intent_req != NULL) {
            coord_reply(c, &it->g->intent_req->hdr, it->g->intent_req->corr_id, ESC_ECLOSED,
                        "the coordinator is stopping; see escrowctl quota show");
            free(it->g->intent_req);
            it->g->intent_req = NULL;
        }
    }
    ESC_LOG(ESC_LOG_INFO, "COORD-REGION",
            "stopped region=%s quota_sent=%" PRIu64 " applied=%" PRIu64 " refused=%" PRIu64
            " answered=%" PRIu64,
            r->cfg->name, r->n_sent, r->n_applied, r->n_refused, r->n_done);
}

void coord_region_free(coord *c)
{
    coord_region *r = c->region;
    for (size_t i = 0; i < c->cat.nitems; i++) {
        free(c->cat.items[i]->g);
        c->cat.items[i]->g = NULL;
    }
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->npeers; i++) {
        nnx_close(r->peers[i].sock);
    }
    free(r);
    c->region = NULL;
}
