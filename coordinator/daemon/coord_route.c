/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_route.c - see coord_route.h.
 */
#include "coord_route.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "auth_guard.h"
#include "auth_route.h"
#include "clock.h"
#include "coord_state.h"
#include "coord_metrics.h"
#include "coord_reply.h"
#include "escrow_errors.h"
#include "log.h"

/* Every route is published at least once per this long... */
#define ROUTE_SWEEP_MS_MIN 1000
/* ...or, with more items, at most this many unchanged routes per second. */
#define ROUTE_REPUBLISH_PER_S 2000

static void bump_version(coord *c, coord_item *it)
{
    uint64_t now = (uint64_t)esc_wall_ms() * 1000u;
    if (now < c->route.version_floor) {
        now = c->route.version_floor;
    }
    it->route_version = it->route_version + 1 > now ? it->route_version + 1 : now;
}

/* With --auth on an update is published once per live key of its tenant,
 * sealed for that key (auth_route.h), and never in clear: a subscriber
 * without one of the tenant's keys reads nothing. A tenant without keys
 * gets nothing published (its clients could not send a request either).
 * Returns 0 or the last error. */
static int publish_sealed(coord *c, const char *tenant_id, const void *clear, size_t len)
{
    const auth_keys *keys = &c->auth->keys;
    size_t first = 0;
    size_t n = auth_keys_tenant(keys, tenant_id, &first);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        auth_route_key rk;
        auth_route_key_derive(auth_keys_tenant_at(keys, first + i)->hash, &rk);
        size_t slen = 0;
        int one = auth_route_seal(&rk, clear, len, c->route.sealed, sizeof c->route.sealed, &slen);
        sodium_memzero(&rk, sizeof rk);
        if (one == 0) {
            one = nnx_publish(c->route.pub, c->route.sealed, slen);
        }
        if (one == 0) {
            c->route.sealed_n++;
        }
        rc = one != 0 ? one : rc;
    }
    return rc;
}

static void publish(coord *c, const wire_route *r)
{
    size_t len;
    int rc = wire_encode_route_pub(r, c->frame, sizeof c->frame, &len);
    if (rc == 0) {
        rc = c->cfg.auth ? publish_sealed(c, r->tenant_id, c->frame, len)
                         : nnx_publish(c->route.pub, c->frame, len);
    }
    if (rc == 0) {
        coord_metrics_route_published(c);
    }
    if (rc != 0) {
        ESC_LOG(ESC_LOG_DEBUG, "COORD-PUB", "item=%s/%s not published: %s", r->tenant_id,
                r->item_id, esc_err_name(rc));
    }
}

/* Publishes the item's route if its content changed since the last time. */
static void changed(coord *c, coord_item *it)
{
    wire_route *r = &c->route.scratch;
    coord_cat_route(it, r);
    uint64_t h = coord_cat_route_hash(r);
    if (h == it->route_hash) {
        return;
    }
    it->route_hash = h;
    bump_version(c, it);
    r->version = it->route_version;
    ESC_LOG(ESC_LOG_DEBUG, "COORD-ROUTE",
            "item=%s/%s version=%" PRIu64 " segments=%zu tail=%" PRIu64 " sold_out=%d paused=%d",
            it->tenant_id, it->item_id, it->route_version, r->nsegs, it->tail_segment, it->sold_out,
            r->paused);
    publish(c, r);
}

/* The catalog's watcher. */
static void on_catalog(coord_item *it, coord_cat_event ev, void *arg)
{
    coord *c = arg;
    if (ev == COORD_CAT_ADDED) {
        bump_version(c, it);
    } else {
        changed(c, it);
    }
}

void coord_route_init(coord *c)
{
    c->route.pub = -1;
    c->route.version_floor = (uint64_t)esc_wall_ms() * 1000u;
}

int coord_route_open(coord *c)
{
    int rc = nnx_open_pub(&c->route.pub);
    if (rc == 0) {
        rc = nnx_bind(c->route.pub, c->cfg.publish);
    }
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-LISTEN", "cannot publish on %s: %s", c->cfg.publish,
                esc_strerror(rc));
        return rc;
    }
    coord_cat_watch(&c->cat, on_catalog, c);
    return 0;
}

void coord_route_close(coord *c)
{
    nnx_close(c->route.pub);
    c->route.pub = -1;
}

/* How long one sweep over n routes takes. */
static uint32_t sweep_ms(size_t n)
{
    uint64_t ms = (uint64_t)n * 1000u / ROUTE_REPUBLISH_PER_S;
    return ms > ROUTE_SWEEP_MS_MIN ? (uint32_t)(ms < UINT32_MAX ? ms : UINT32_MAX)
                                   : ROUTE_SWEEP_MS_MIN;
}

void coord_route_tick(coord *c)
{
    if (!c->loaded) {
        return;
    }
    size_t nmarked = 0;
    coord_item **v = coord_cat_take(&c->cat, COORD_WORK_ROUTE, &nmarked);
    for (size_t i = 0; i < nmarked; i++) {
        changed(c, v[i]);
    }
    size_t n = c->cat.nitems;
    size_t k = coord_cat_sweep_slice(n, ROUTE_TICK_MS, sweep_ms(n));
    for (size_t j = 0; j < k; j++) {
        coord_item *it = c->cat.items[(c->route.cursor + j) % n];
        uint64_t before = it->route_version;
        changed(c, it);
        if (before == it->route_version) {
            coord_cat_route(it, &c->route.scratch);
            publish(c, &c->route.scratch);
        }
    }
    c->route.cursor = n > 0 ? (c->route.cursor + k) % n : 0;
}

void coord_route_handle(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    c->n_routes++;
    coord_item *it = NULL;
    char msg[512];
    if (q->segment_id != 0) {
        coord_seg *s = coord_cat_seg(&c->cat, q->segment_id);
        if (s != NULL && strcmp(s->item->tenant_id, q->tenant_id) == 0) {
            it = s->item;
        } else {
            snprintf(msg, sizeof msg, "no segment %" PRIu64 " for tenant %s", q->segment_id,
                     q->tenant_id);
        }
    } else {
        it = coord_cat_item(&c->cat, q->tenant_id, q->item_id);
        if (it == NULL) {
            snprintf(msg, sizeof msg, "unknown item %s/%s", q->tenant_id, q->item_id);
        }
    }
    if (it == NULL) {
        coord_reply(c, hdr, q->corr_id, ESC_EUNKNOWN_ITEM, msg);
        return;
    }
    changed(c, it); /* a change not yet published is published first */
    coord_cat_route(it, &c->route.scratch);
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    rep.route = &c->route.scratch;
    coord_reply_send(c, hdr, &rep);
}
