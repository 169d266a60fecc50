/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_status.c - see coord_status.h.
 */
#include "coord_status.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_db.h"
#include "coord_gitem.h"
#include "coord_gstock.h"
#include "coord_reply.h"
#include "coord_state.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"

#define TAG "/* escrow:coord-status */ "

void coord_status_init(coord_status *st, const region_cfg *cfg, coord_peers *peers,
                       struct coord_gstock *gstock)
{
    memset(st, 0, sizeof *st);
    st->cfg = cfg;
    st->peers = peers;
    st->gstock = gstock;
}

static int64_t interval_us(const coord_status *st)
{
    return (int64_t)st->cfg->interval_ms * 1000;
}

int64_t coord_status_stale_us(const coord_status *st, int i)
{
    int64_t sweep = st->p[i].sweep_us;
    int64_t base = sweep > interval_us(st) ? sweep : interval_us(st);
    return base * COORD_STATUS_STALE_ROUNDS;
}

/* This region's view of the item as peer i gets it (peer -1: escrowctl). */
static void own_view(coord *c, coord_status *st, coord_item *it, int peer, wire_quota_item *out)
{
    coord_gitem_view(c, st->cfg, st->peers->n, it, out);
    out->reduce_ask = peer >= 0 ? coord_gitem_of(it)->reduce_ask[peer] : 0;
}

/* Takes peer's views of the items; seq is the page they answer (0: they
 * came in the peer's own status). */
static void merge_views(coord *c, coord_status *st, int peer, const wire_quota_item *items,
                        size_t n, uint64_t seq)
{
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < n; i++) {
        coord_item *it = coord_cat_item(&c->cat, items[i].tenant_id, items[i].item_id);
        if (it == NULL || !it->global) {
            continue;
        }
        coord_gitem *g = coord_gitem_of(it);
        coord_gview *v = &g->peers[peer];
        if (seq != 0 && seq < v->rep_seq) {
            continue; /* an answer to an older page than the one this view came from */
        }
        v->v = items[i];
        v->at_us = now;
        v->rep_seq = seq != 0 ? seq : v->rep_seq;
        if (v->v.known && v->v.changes > g->known_changes[peer]) {
            coord_gstock_learn(c, st->gstock, it, peer);
        }
    }
}

/* ---- sweeps --------------------------------------------------------------------- */

static void sweep_done(coord_status *st, int i, int64_t now)
{
    coord_status_peer *ps = &st->p[i];
    ps->sweep_us = now - ps->sweep_start_us;
    ps->sweep_start_us = 0;
    ps->sweeps++;
    /* every COORD_STATUS_LOG_EVERY-th sweep, and one whose number of items
     * changed: how long covering every global item takes (regions.md) */
    bool changed = ps->sweep_items != ps->last_sweep_items;
    ps->last_sweep_items = ps->sweep_items;
    int level = changed || ps->sweeps % COORD_STATUS_LOG_EVERY == 1 ? ESC_LOG_INFO : ESC_LOG_DEBUG;
    ESC_LOG(level, "COORD-STATUS", "peer=%s sweep=%" PRIu64 " items=%zu pages=%" PRIu64 " ms=%.1f",
            coord_peers_name(st->peers, i), ps->sweeps, ps->sweep_items, ps->sweep_pages,
            (double)ps->sweep_us / 1000.0);
}

/* Sends the next page of peer i's sweep (the first may be empty: it still
 * tells the peer this region is there). */
static void send_page(coord *c, coord_status *st, int i)
{
    coord_status_peer *ps = &st->p[i];
    wire_quota *q = &st->scratch;
    memset(q, 0, offsetof(wire_quota, items));
    q->kind = WIRE_QUOTA_STATUS;
    snprintf(q->from_region, sizeof q->from_region, "%s", st->cfg->name);
    while (ps->cursor < c->cat.nitems && q->nitems < ESC_QUOTA_ITEMS_MAX) {
        coord_item *it = c->cat.items[ps->cursor++];
        if (it->global) {
            own_view(c, st, it, i, &q->items[q->nitems++]);
        }
    }
    ps->sweeping = ps->cursor < c->cat.nitems;
    if (q->nitems == 0 && ps->sweep_items > 0) {
        return; /* the tail of the catalog held no global item */
    }
    ps->sweep_items += q->nitems;
    ps->sweep_pages++;
    ps->seq++;
    ps->pend_seq[ps->pending] = ps->seq;
    ps->pend_us[ps->pending] = esc_mono_us();
    ps->pending++;
    coord_peers_send(st->peers, i, ps->seq, NULL, q, NULL, 0);
}

/* Keeps COORD_STATUS_WINDOW pages of peer i's sweep in flight; notes the
 * sweep's end once everything was sent and answered. */
static void fill_window(coord *c, coord_status *st, int i)
{
    coord_status_peer *ps = &st->p[i];
    while (ps->sweeping && ps->pending < COORD_STATUS_WINDOW) {
        send_page(c, st, i);
    }
    if (!ps->sweeping && ps->pending == 0 && ps->sweep_start_us != 0) {
        sweep_done(st, i, esc_mono_us());
    }
}

/* Forgets page k of peer i (answered, or given up). */
static void drop_page(coord_status_peer *ps, size_t k)
{
    ps->pending--;
    ps->pend_seq[k] = ps->pend_seq[ps->pending];
    ps->pend_us[k] = ps->pend_us[ps->pending];
}

void coord_status_round(coord *c, coord_status *st)
{
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < st->peers->n; i++) {
        coord_status_peer *ps = &st->p[i];
        coord_peers_check(st->peers, (int)i);
        for (size_t k = ps->pending; k-- > 0;) {
            if (now - ps->pend_us[k] > 2 * interval_us(st)) {
                drop_page(ps, k); /* lost: its items come again in the next sweep */
            }
        }
        if (ps->sweep_start_us == 0) {
            ps->sweep_start_us = now;
            ps->cursor = 0;
            ps->sweep_items = 0;
            ps->sweep_pages = 0;
            ps->sweeping = true;
            send_page(c, st, (int)i);
        }
        fill_window(c, st, (int)i);
    }
}

void coord_status_answered(coord *c, coord_status *st, int i, const wire_reply *rep)
{
    coord_status_peer *ps = &st->p[i];
    const char *name = coord_peers_name(st->peers, i);
    for (size_t k = 0; k < ps->pending; k++) {
        if (ps->pend_seq[k] == rep->corr_id) {
            drop_page(ps, k);
            break;
        }
    }
    if (rep->status != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s status refused: %s", name, rep->message);
    } else if (strcmp(rep->region, name) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-PEER",
                "peer=%s answered as region '%s': check [peers] in %s; its answers are ignored",
                name, rep->region, st->cfg->path);
    } else {
        merge_views(c, st, i, rep->quota, rep->nquota, rep->corr_id);
    }
    fill_window(c, st, i);
}

/* ---- a fresh status: answered once the sold units were read ----------------------- */

typedef struct fresh_job {
    coord_status *st;
    nnx_hdr hdr;
    uint64_t corr_id;
    int peer;
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
} fresh_job;

static void on_fresh_sold(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    fresh_job *j = arg;
    coord_status *st = j->st;
    if (err->code != 0) {
        coord_reply(c, &j->hdr, j->corr_id, err->code == ESC_ECLOSED ? ESC_ECLOSED : ESC_EDB,
                    err->message);
        free(j);
        return;
    }
    wire_quota_item *o = &st->items[0];
    coord_item *it = coord_cat_item(&c->cat, j->tenant_id, j->item_id);
    if (it != NULL && it->global) {
        own_view(c, st, it, j->peer, o);
        /* the database has every sale acknowledged so far; a node's report
         * may be ahead of it (decided, not yet committed): the larger */
        int64_t sold = pg_result_i64_or(res, 0, 0, 0);
        o->sold = sold > o->sold ? sold : o->sold;
    } else {
        memset(o, 0, sizeof *o);
        snprintf(o->tenant_id, sizeof o->tenant_id, "%s", j->tenant_id);
        snprintf(o->item_id, sizeof o->item_id, "%s", j->item_id);
    }
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = j->corr_id;
    snprintf(rep.region, sizeof rep.region, "%s", st->cfg->name);
    rep.quota = st->items;
    rep.nquota = 1;
    coord_reply_send(c, &j->hdr, &rep);
    free(j);
}

/* A peer judges a global reduce: the item's sold units as the database has
 * them now, then the answer (coord_gfresh.h). */
static void fresh_answer(coord *c, coord_status *st, const nnx_hdr *hdr, const wire_request *q,
                         int peer)
{
    static const char sql[] = TAG "SELECT COALESCE(sum(sold), 0) FROM segments "
                                  "WHERE tenant_id = $1 AND item_id = $2";
    if (q->quota->nitems != 1) {
        coord_reply(c, hdr, q->corr_id, ESC_EINVAL, "a fresh status carries exactly one item");
        return;
    }
    fresh_job *j = esc_xcalloc(1, sizeof *j);
    *j = (fresh_job){.st = st, .hdr = *hdr, .corr_id = q->corr_id, .peer = peer};
    snprintf(j->tenant_id, sizeof j->tenant_id, "%s", q->quota->items[0].tenant_id);
    snprintf(j->item_id, sizeof j->item_id, "%s", q->quota->items[0].item_id);
    const char *v[2] = {j->tenant_id, j->item_id};
    if (coord_db_push(c, sql, 2, v, on_fresh_sold, j) != 0) {
        free(j);
        coord_reply(c, hdr, q->corr_id, ESC_EBUSY, "the coordinator's database queue is full");
    }
}

void coord_status_handle(coord *c, coord_status *st, const nnx_hdr *hdr, const wire_request *q)
{
    int peer = coord_peers_find(st->peers, q->quota->from_region);
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    snprintf(rep.region, sizeof rep.region, "%s", st->cfg->name);
    if (peer < 0 && q->quota->nitems == 0) {
        coord_reply_send(c, hdr, &rep); /* escrowctl regions: who are you? */
        return;
    }
    if (peer < 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "region %s is not a peer of region %s (see [peers] in %s)",
                 q->quota->from_region, st->cfg->name, st->cfg->path);
        coord_reply(c, hdr, q->corr_id, ESC_ECONFIG, msg);
        return;
    }
    merge_views(c, st, peer, q->quota->items, q->quota->nitems, 0);
    if (q->quota->fresh) {
        fresh_answer(c, st, hdr, q, peer);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < q->quota->nitems; i++) {
        const wire_quota_item *e = &q->quota->items[i];
        coord_item *it = coord_cat_item(&c->cat, e->tenant_id, e->item_id);
        wire_quota_item *o = &st->items[n++];
        if (it != NULL && it->global) {
            own_view(c, st, it, peer, o);
        } else {
            memset(o, 0, sizeof *o);
            snprintf(o->tenant_id, sizeof o->tenant_id, "%s", e->tenant_id);
            snprintf(o->item_id, sizeof o->item_id, "%s", e->item_id);
        }
    }
    rep.quota = st->items;
    rep.nquota = n;
    coord_reply_send(c, hdr, &rep);
}
