/*
 * coord_region.c - the region's life cycle and its round (coord_region.h):
 * claiming the database, the status exchange with the peers, re-offering
 * open quota transfers, the automatic quota policy, and the requests on
 * WIRE_OP_QUOTA. The sockets are coord_peer.c's, the quota transfers
 * coord_quota.c's, each global item's state coord_gitem.c's.
 */
#include "coord_region.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_db.h"
#include "coord_gitem.h"
#include "coord_peer.h"
#include "coord_policy.h"
#include "coord_quota.h"
#include "coord_reply.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"
#include "region_cfg.h"

#define TAG "/* escrow:coord-region */ "
/* Open quota transfers offered again per round (the oldest first). */
#define REGION_OFFERS_MAX 256
/* A peer's view older than this many rounds is not trusted. */
#define REGION_STALE_ROUNDS 3

/* The status exchange with one peer. */
typedef struct peer_status {
    uint64_t seq, done; /* status sent, and the newest answered */
    size_t cursor;      /* next item index for the status page */
} peer_status;

typedef struct coord_region {
    const region_cfg *cfg;
    coord_region_fail_cb fail_cb;
    coord_peers peers;
    coord_quota quota;
    peer_status status[REGION_PEERS_MAX];
    int64_t last_round_us;
    bool offers_running;
    bool claimed;
    wire_quota scratch;                         /* the status sent to a peer */
    wire_quota_item items[ESC_QUOTA_ITEMS_MAX]; /* the answer to a peer's status */
} coord_region;

static int64_t stale_us(const coord_region *r)
{
    return (int64_t)r->cfg->interval_ms * 1000 * REGION_STALE_ROUNDS;
}

/* This region's view of the item. */
static void own_view(coord *c, coord_item *it, wire_quota_item *out)
{
    coord_gitem_view(c, c->region->cfg, c->region->peers.n, it, out);
}

/* ---- the status exchange --------------------------------------------------------- */

static void send_status(coord *c, int peer)
{
    coord_region *r = c->region;
    peer_status *ps = &r->status[peer];
    wire_quota *q = &r->scratch;
    memset(q, 0, sizeof *q);
    q->kind = WIRE_QUOTA_STATUS;
    snprintf(q->from_region, sizeof q->from_region, "%s", r->cfg->name);
    size_t n = c->cat.nitems, scanned = 0;
    if (ps->cursor >= n) {
        ps->cursor = 0;
    }
    while (scanned < n && q->nitems < ESC_QUOTA_ITEMS_MAX) {
        coord_item *it = c->cat.items[ps->cursor];
        ps->cursor = (ps->cursor + 1) % n;
        scanned++;
        if (it->global) {
            own_view(c, it, &q->items[q->nitems++]);
        }
    }
    ps->seq++;
    coord_peers_send(&r->peers, peer, ps->seq, NULL, q, NULL, 0);
}

static void merge_views(coord *c, int peer, const wire_quota_item *items, size_t n)
{
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < n; i++) {
        coord_item *it = coord_cat_item(&c->cat, items[i].tenant_id, items[i].item_id);
        if (it == NULL || !it->global) {
            continue;
        }
        coord_gview *v = &coord_gitem_of(it)->peers[peer];
        v->v = items[i];
        v->at_us = now;
    }
}

/* coord_peers' callback: the answer to an offer or to a status. */
static void on_peer_reply(coord *c, int peer, const wire_reply *rep, void *arg)
{
    coord_region *r = arg;
    const char *name = coord_peers_name(&r->peers, peer);
    if (rep->corr_id & COORD_PEER_CORR_OFFER) {
        uint64_t id = rep->corr_id & ~COORD_PEER_CORR_OFFER;
        if (rep->status == 0) {
            coord_quota_done(c, &r->quota, id, false);
        } else if (rep->status == ESC_EUNKNOWN_ITEM) {
            ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "transfer=%" PRIu64 " refused by %s: %s", id, name,
                    rep->message);
            coord_quota_done(c, &r->quota, id, true);
        } else {
            ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA", "transfer=%" PRIu64 " not applied by %s yet: %s",
                    id, name, rep->message);
        }
        return;
    }
    if (rep->status != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s status refused: %s", name, rep->message);
        return;
    }
    if (strcmp(rep->region, name) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-PEER",
                "peer=%s answered as region '%s': check [peers] in %s; its answers are ignored",
                name, rep->region, r->cfg->path);
        return;
    }
    if (rep->corr_id <= r->status[peer].done) {
        return; /* an older status overtaken by a newer one */
    }
    r->status[peer].done = rep->corr_id;
    merge_views(c, peer, rep->quota, rep->nquota);
}

/* A peer's (or escrowctl's) WIRE_QUOTA_STATUS: our view of the items it
 * names, after taking its view of them. */
static void handle_status(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    coord_region *r = c->region;
    int peer = coord_peers_find(&r->peers, q->quota->from_region);
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
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    rep.quota = r->items;
    rep.nquota = n;
    snprintf(rep.region, sizeof rep.region, "%s", r->cfg->name);
    coord_reply_send(c, hdr, &rep);
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
        coord_quota_apply(c, &c->region->quota, hdr, q);
        return;
    default:
        coord_quota_move(c, &c->region->quota, hdr, q);
        return;
    }
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
        int peer = coord_peers_find(&r->peers, to);
        if (peer < 0) {
            ESC_LOG(ESC_LOG_ERROR, "COORD-QUOTA",
                    "transfer=%" PRIu64 " to region %s which is not in [peers] of %s: it waits", id,
                    to, r->cfg->path);
            continue;
        }
        coord_item *it = coord_cat_item(&c->cat, tenant, item);
        if (it != NULL) {
            coord_gitem_of(it)->in_flight_to[peer] += qty;
        }
        coord_peers_offer(&r->peers, peer, id, tenant, item, qty);
    }
}

/* A manual move past its time is dropped; true while one is in progress. */
static bool manual_move(coord *c, coord_item *it, int64_t now)
{
    coord_gitem *g = coord_gitem_of(it);
    if (g->intent_peer < 0 || !g->intent_manual) {
        return false;
    }
    if (now > g->intent_until_us) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA-MOVE",
                "item=%s/%s: %" PRId64 " units could not be reclaimed within %d s; the "
                "rest of the move is dropped",
                it->tenant_id, it->item_id, g->intent_left, COORD_QUOTA_INTENT_MS / 1000);
        coord_quota_answer_move(c, &c->region->quota, it);
        g->intent_peer = -1;
        g->intent_left = 0;
        g->intent_manual = false;
    }
    return true;
}

/* The automatic policy for one global item: sets its export intent. */
static void plan_item(coord *c, coord_item *it, int64_t now)
{
    coord_region *r = c->region;
    if (manual_move(c, it, now)) {
        return;
    }
    coord_gitem *g = coord_gitem_of(it);
    g->intent_peer = -1;
    g->intent_left = 0;
    if (!r->cfg->quota_auto || it->state != COORD_ITEM_ACTIVE) {
        return;
    }
    wire_quota_item own;
    own_view(c, it, &own);
    coord_qpeer peers[REGION_PEERS_MAX];
    for (size_t i = 0; i < r->peers.n; i++) {
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
        .npeers = r->peers.n,
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
                it->tenant_id, it->item_id, qty, coord_peers_name(&r->peers, peer));
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
    for (size_t i = 0; i < r->peers.n; i++) {
        coord_peers_check(&r->peers, (int)i);
        send_status(c, (int)i);
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
        coord_quota_send_ready(c, &r->quota, it);
        if (it->g->intent_req != NULL && now >= it->g->answer_at_us) {
            coord_quota_answer_move(c, &r->quota, it);
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
    coord_gitem *g = coord_gitem_of(it);
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < r->peers.n; i++) {
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

/* ---- life cycle --------------------------------------------------------------------- */

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
            r->cfg->name, r->peers.n, r->cfg->interval_ms, r->cfg->quota_auto);
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
    coord_quota_init(&r->quota, cfg, &r->peers);
    int rc = coord_peers_open(c, &r->peers, cfg, on_peer_reply, r);
    if (rc != 0) {
        return rc;
    }
    const char *v[1] = {cfg->name};
    if (coord_db_push(c, sql, 1, v, on_claimed, NULL) != 0) {
        return ESC_EBUSY;
    }
    return 0;
}

void coord_region_close(coord *c)
{
    coord_region *r = c->region;
    if (r == NULL) {
        return;
    }
    coord_peers_close(&r->peers);
    coord_quota_close(c, &r->quota);
    ESC_LOG(ESC_LOG_INFO, "COORD-REGION",
            "stopped region=%s quota_sent=%" PRIu64 " applied=%" PRIu64 " refused=%" PRIu64
            " answered=%" PRIu64,
            r->cfg->name, r->quota.n_sent, r->quota.n_applied, r->quota.n_refused, r->quota.n_done);
}

void coord_region_free(coord *c)
{
    coord_region *r = c->region;
    coord_gitem_free_all(&c->cat);
    if (r == NULL) {
        return;
    }
    coord_peers_free(&r->peers);
    free(r);
    c->region = NULL;
}
