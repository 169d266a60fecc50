/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_region.c - the region's life cycle and its round (coord_region.h):
 * claiming the database, re-offering open quota transfers, the quota policy
 * per global item, and the requests on WIRE_OP_QUOTA. The sockets are
 * coord_peer.c's, the status exchange coord_status.c's, the quota transfers
 * coord_quota.c's, global restocks and reduces coord_gstock.c's, each
 * global item's state coord_gitem.c's.
 */
#include "coord_region.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_db.h"
#include "coord_gfresh.h"
#include "coord_gitem.h"
#include "coord_gstock.h"
#include "coord_peer.h"
#include "coord_policy.h"
#include "coord_quota.h"
#include "coord_reply.h"
#include "coord_status.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"
#include "region_cfg.h"

#define TAG "/* escrow:coord-region */ "
/* Open quota transfers offered again per round (the oldest first). */
#define REGION_OFFERS_MAX 256

typedef struct coord_region {
    const region_cfg *cfg;
    coord_region_fail_cb fail_cb;
    coord_peers peers;
    coord_quota quota;
    coord_status status;
    coord_gfresh fresh;
    coord_gstock gstock;
    int64_t last_round_us;
    bool offers_running;
    bool claimed;
} coord_region;

/* This region's view of the item. */
static void own_view(coord *c, coord_item *it, wire_quota_item *out)
{
    coord_gitem_view(c, c->region->cfg, c->region->peers.n, it, out);
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
            r->gstock.sums_loaded = false; /* the running totals of quota sent: read again */
        } else {
            ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA", "transfer=%" PRIu64 " not applied by %s yet: %s",
                    id, name, rep->message);
        }
        return;
    }
    if (rep->corr_id & COORD_PEER_CORR_FRESH) {
        coord_gfresh_answered(c, &r->fresh, peer, rep);
        return;
    }
    coord_status_answered(c, &r->status, peer, rep);
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
        coord_status_handle(c, &c->region->status, hdr, q);
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
    g->intent_why = "auto";
    if (coord_gstock_plan(c, &r->gstock, it, now)) {
        return; /* a reduce pending here, or a peer's reduce asks for units */
    }
    if (!r->cfg->quota_auto || it->state != COORD_ITEM_ACTIVE) {
        return;
    }
    wire_quota_item own;
    own_view(c, it, &own);
    coord_qpeer peers[REGION_PEERS_MAX];
    for (size_t i = 0; i < r->peers.n; i++) {
        const coord_gview *v = &g->peers[i];
        peers[i] = (coord_qpeer){
            .fresh = v->at_us != 0 && now - v->at_us <= coord_status_stale_us(&r->status, (int)i) &&
                     v->v.known,
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
        coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
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
    coord_status_round(c, &r->status);
    coord_gstock_round(c, &r->gstock);
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
    coord_gfresh_tick(c, &r->fresh);
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

int64_t coord_region_reduce_local(coord *c, coord_item *it)
{
    return c->region == NULL ? it->reduce_pending : coord_gstock_reduce_local(it);
}

void coord_region_admin(coord *c, coord_item *it, const wire_request *q, coord_gstock_cb cb,
                        void *arg)
{
    if (c->region == NULL || !c->region->claimed) {
        cb(c, c->region == NULL ? ESC_ECONFIG : ESC_EUNAVAILABLE,
           c->region == NULL ? "this coordinator runs without a region configuration (--config)"
                             : "the coordinator has not claimed its region's database yet",
           arg);
        return;
    }
    coord_gstock_admin(c, &c->region->gstock, it, q, cb, arg);
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
        if (v->at_us == 0 || now - v->at_us > coord_status_stale_us(&r->status, (int)i)) {
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
    coord_status_init(&r->status, cfg, &r->peers, &r->gstock);
    coord_gfresh_init(&r->fresh, cfg, &r->peers);
    coord_gstock_init(&r->gstock, cfg, &r->peers, &r->status, &r->fresh);
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
    coord_gfresh_close(c, &r->fresh);
    coord_quota_close(c, &r->quota);
    ESC_LOG(ESC_LOG_INFO, "COORD-REGION",
            "stopped region=%s quota_sent=%" PRIu64 " applied=%" PRIu64 " refused=%" PRIu64
            " answered=%" PRIu64 " global_restocks=%" PRIu64 " global_reduces=%" PRIu64
            " learned=%" PRIu64,
            r->cfg->name, r->quota.n_sent, r->quota.n_applied, r->quota.n_refused, r->quota.n_done,
            r->gstock.n_restocks, r->gstock.n_reduces, r->gstock.n_learned);
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
