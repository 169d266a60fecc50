/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_quota.c - see coord_quota.h.
 */
#include "coord_quota.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_db.h"
#include "coord_failpoint.h"
#include "coord_gitem.h"
#include "coord_reply.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"

#define TAG "/* escrow:coord-region */ "

void coord_quota_init(coord_quota *q, const region_cfg *cfg, coord_peers *peers)
{
    memset(q, 0, sizeof *q);
    q->cfg = cfg;
    q->peers = peers;
}

/* This region's view of the item. */
static void own_view(coord *c, coord_quota *q, coord_item *it, wire_quota_item *out)
{
    coord_gitem_view(c, q->cfg, q->peers->n, it, out);
}

/* ---- step 3: the receiver's answer, recorded at the donor ------------------------ */

typedef struct done_job {
    coord_quota *q;
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
        j->q->n_done++;
        ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-DONE", "transfer=%" PRIu64 " %s", j->transfer_id,
                j->refused ? "refused: units back in unallocated" : "received");
        if (j->refused) {
            coord_db_reload(c); /* the units came back: memory follows the database */
        }
    }
    free(j);
}

void coord_quota_done(coord *c, coord_quota *q, uint64_t transfer_id, bool refused)
{
    static const char sql[] = TAG "SELECT escrow_quota_done($1, $2)";
    done_job *j = esc_xcalloc(1, sizeof *j);
    j->q = q;
    j->transfer_id = transfer_id;
    j->refused = refused;
    char id[24];
    snprintf(id, sizeof id, "%" PRIu64, transfer_id);
    const char *v[2] = {id, refused ? "refused" : "received"};
    if (coord_db_push(c, sql, 2, v, on_done, j) != 0) {
        free(j); /* the next round offers it again and gets the answer again */
    }
}

/* ---- step 2: applying an offer at the receiver ------------------------------------ */

typedef struct apply_job {
    coord_quota *q;
    nnx_hdr hdr;
    uint64_t corr_id;
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    char from[ESC_REGION_LEN_MAX + 1];
    uint64_t transfer_id;
    int64_t qty;
    coord_item *it; /* write_busy set by this job; NULL if unknown here */
} apply_job;

/* What escrow_quota_apply answered ("applied", "applied-before", "refused",
 * "refused-before"): memory follows, and the answer's status. */
static int applied(coord *c, apply_job *j, const char *outcome)
{
    if (strcmp(outcome, "applied") == 0) {
        j->q->n_applied++;
        if (j->it != NULL) {
            /* as escrow_unallocated_add: a pending reduce takes them first */
            coord_item *it = j->it;
            int64_t red = it->reduce_pending < it->unallocated + j->qty ? it->reduce_pending
                                                                        : it->unallocated + j->qty;
            it->total += j->qty - red;
            it->unallocated += j->qty - red;
            it->reduce_pending -= red;
            coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
            int peer = coord_peers_find(j->q->peers, j->from);
            if (peer >= 0) {
                coord_gitem_of(it)->applied_from[peer] += j->qty; /* reduce asks' running total */
            }
        } else {
            coord_db_reload(c);
        }
        ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-APPLIED",
                "from=%s transfer=%" PRIu64 " item=%s/%s qty=%" PRId64, j->from, j->transfer_id,
                j->tenant_id, j->item_id, j->qty);
        coord_failpoint_quota_applied();
    }
    if (strncmp(outcome, "refused", 7) == 0) {
        j->q->n_refused++;
        return ESC_EUNKNOWN_ITEM;
    }
    return 0;
}

static void on_applied(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    apply_job *j = arg;
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
        status = applied(c, j, outcome);
        snprintf(msg, sizeof msg, "%s", outcome);
    }
    coord_reply(c, &j->hdr, j->corr_id, status, msg);
    free(j);
}

void coord_quota_apply(coord *c, coord_quota *q, const nnx_hdr *hdr, const wire_request *rq)
{
    static const char sql[] = TAG "SELECT escrow_quota_apply($1, $2, $3, $4, $5)";
    if (strcmp(rq->quota->to_region, q->cfg->name) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "this is region %s, not %s", q->cfg->name, rq->quota->to_region);
        coord_reply(c, hdr, rq->corr_id, ESC_ECONFIG, msg);
        return;
    }
    coord_item *it = coord_cat_item(&c->cat, rq->tenant_id, rq->item_id);
    if (it != NULL && (it->write_busy || it->plan_busy > 0 || c->db.need_reconcile)) {
        coord_reply(c, hdr, rq->corr_id, ESC_EBUSY, "the item is busy; offer again");
        return;
    }
    apply_job *j = esc_xcalloc(1, sizeof *j);
    j->q = q;
    j->hdr = *hdr;
    j->corr_id = rq->corr_id;
    snprintf(j->tenant_id, sizeof j->tenant_id, "%s", rq->tenant_id);
    snprintf(j->item_id, sizeof j->item_id, "%s", rq->item_id);
    snprintf(j->from, sizeof j->from, "%s", rq->quota->from_region);
    j->transfer_id = rq->quota->transfer_id;
    j->qty = rq->qty;
    char id[24], qty[24];
    snprintf(id, sizeof id, "%" PRIu64, j->transfer_id);
    snprintf(qty, sizeof qty, "%" PRId64, j->qty);
    const char *v[5] = {j->from, id, j->tenant_id, j->item_id, qty};
    if (coord_db_push(c, sql, 5, v, on_applied, j) != 0) {
        free(j);
        coord_reply(c, hdr, rq->corr_id, ESC_EBUSY, "the coordinator is busy; offer again");
        return;
    }
    if (it != NULL) {
        it->write_busy = true;
        j->it = it;
    }
}

/* ---- moves ------------------------------------------------------------------------- */

void coord_quota_answer_move(coord *c, coord_quota *q, coord_item *it)
{
    coord_gitem *g = it->g;
    coord_gmove *a = g->intent_req;
    if (a == NULL) {
        return;
    }
    g->intent_req = NULL;
    char msg[400];
    const char *to = coord_peers_name(q->peers, g->intent_peer);
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
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = a->corr_id;
    size_t n = strnlen(msg, sizeof rep.message - 1); /* a long sentence is cut */
    memcpy(rep.message, msg, n);
    rep.message[n] = '\0';
    own_view(c, q, it, &q->view);
    rep.quota = &q->view;
    rep.nquota = 1;
    snprintf(rep.region, sizeof rep.region, "%s", q->cfg->name);
    coord_reply_send(c, &a->hdr, &rep);
    ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-MOVE", "%s", msg);
    free(a);
}

/* Why the move cannot start (a sentence in msg), or 0. */
static int move_refused(coord *c, coord_quota *q, const wire_request *rq, int peer, coord_item *it,
                        char *msg, size_t cap)
{
    if (peer < 0) {
        snprintf(msg, cap, "region %s is not a peer of region %s", rq->quota->to_region,
                 q->cfg->name);
        return ESC_EINVAL;
    }
    if (it == NULL || !it->global) {
        snprintf(msg, cap, "no global item %s/%s in region %s", rq->tenant_id, rq->item_id,
                 q->cfg->name);
        return ESC_EUNKNOWN_ITEM;
    }
    if (it->state == COORD_ITEM_RETIRED) {
        snprintf(msg, cap, "%s/%s is retired", it->tenant_id, it->item_id);
        return ESC_ECONFLICT;
    }
    if (coord_gitem_of(it)->intent_manual && coord_gitem_of(it)->intent_left > 0) {
        snprintf(msg, cap, "a move of %s/%s is in progress (%" PRId64 " units left)", it->tenant_id,
                 it->item_id, it->g->intent_left);
        return ESC_ECONFLICT;
    }
    wire_quota_item v;
    own_view(c, q, it, &v);
    if (rq->qty > v.unused) {
        snprintf(msg, cap,
                 "region %s has only %" PRId64 " units of %s/%s that are neither held nor "
                 "sold; nothing moved",
                 q->cfg->name, v.unused, it->tenant_id, it->item_id);
        return ESC_ECONFLICT;
    }
    return 0;
}

void coord_quota_move(coord *c, coord_quota *q, const nnx_hdr *hdr, const wire_request *rq)
{
    char msg[600];
    int peer = coord_peers_find(q->peers, rq->quota->to_region);
    coord_item *it = coord_cat_item(&c->cat, rq->tenant_id, rq->item_id);
    int status = move_refused(c, q, rq, peer, it, msg, sizeof msg);
    if (status != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA-MOVE", "%s", msg);
        coord_reply(c, hdr, rq->corr_id, status, msg);
        return;
    }
    coord_gitem *g = it->g;
    coord_gmove *a = esc_xcalloc(1, sizeof *a);
    a->hdr = *hdr;
    a->corr_id = rq->corr_id;
    g->intent_peer = peer;
    g->intent_left = rq->qty;
    g->intent_sent = 0;
    g->intent_manual = true;
    g->intent_until_us = esc_mono_us() + (int64_t)COORD_QUOTA_INTENT_MS * 1000;
    g->intent_req = a;
    g->answer_at_us = esc_mono_us() + (int64_t)COORD_QUOTA_ANSWER_MS * 1000;
    coord_cat_mark(&c->cat, it, COORD_WORK_PASS); /* reclaim from the segments at once */
}

void coord_quota_close(coord *c, coord_quota *q)
{
    (void)q;
    for (size_t i = 0; i < c->cat.nitems; i++) {
        coord_item *it = c->cat.items[i];
        if (it->g != NULL && it->g->intent_req != NULL) {
            coord_reply(c, &it->g->intent_req->hdr, it->g->intent_req->corr_id, ESC_ECLOSED,
                        "the coordinator is stopping; see escrowctl quota show");
            free(it->g->intent_req);
            it->g->intent_req = NULL;
        }
    }
}

/* ---- step 1: sending --------------------------------------------------------------- */

typedef struct send_job {
    coord_quota *q;
    coord_item *it;
    int peer;
    int64_t qty;
} send_job;

/* The donor's 'sent' committed as transfer id: memory, then the offer. */
static void sent(coord *c, send_job *j, uint64_t id)
{
    coord_quota *q = j->q;
    coord_item *it = j->it;
    coord_gitem *g = coord_gitem_of(it);
    q->n_sent++;
    it->total -= j->qty;
    it->unallocated -= j->qty;
    g->in_flight_to[j->peer] += j->qty;
    g->sent_to[j->peer] += j->qty;
    if (g->intent_peer == j->peer) {
        g->intent_left = g->intent_left > j->qty ? g->intent_left - j->qty : 0;
        g->intent_sent += j->qty;
    }
    ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA-SENT",
            "transfer=%" PRIu64 " item=%s/%s qty=%" PRId64 " to=%s quota_left=%" PRId64, id,
            it->tenant_id, it->item_id, j->qty, coord_peers_name(q->peers, j->peer), it->total);
    coord_failpoint_quota_sent();
    coord_peers_offer(q->peers, j->peer, id, it->tenant_id, it->item_id, j->qty);
    if (g->intent_left == 0) {
        coord_quota_answer_move(c, q, it);
        g->intent_peer = -1;
        g->intent_manual = false;
    }
    coord_cat_changed(&c->cat, it);
}

static void on_sent(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    send_job *j = arg;
    coord_item *it = j->it;
    it->write_busy = false;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-QUOTA", "item=%s/%s send %" PRId64 " failed: %s",
                it->tenant_id, it->item_id, j->qty, err->message);
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            coord_db_unknown(c);
        }
    } else if (pg_result_null(res, 0, 0)) {
        ESC_LOG(ESC_LOG_INFO, "COORD-QUOTA",
                "item=%s/%s fewer than %" PRId64 " units unallocated: re-reading", it->tenant_id,
                it->item_id, j->qty);
        coord_db_reload(c);
    } else {
        sent(c, j, (uint64_t)pg_result_i64_or(res, 0, 0, 0));
    }
    free(j);
}

void coord_quota_send_ready(coord *c, coord_quota *q, coord_item *it)
{
    static const char sql[] = TAG "SELECT escrow_quota_send($1, $2, $3, $4, $5)";
    coord_gitem *g = it->g;
    int64_t free_units = it->unallocated - it->reduce_pending;
    if (g == NULL || g->intent_peer < 0 || g->intent_left <= 0 || free_units <= 0 ||
        it->write_busy || it->plan_busy > 0 || c->db.need_reconcile) {
        return;
    }
    send_job *j = esc_xcalloc(1, sizeof *j);
    j->q = q;
    j->it = it;
    j->peer = g->intent_peer;
    j->qty = g->intent_left < free_units ? g->intent_left : free_units;
    char qty[24];
    snprintf(qty, sizeof qty, "%" PRId64, j->qty);
    const char *v[5] = {it->tenant_id, it->item_id, coord_peers_name(q->peers, j->peer), qty,
                        g->intent_manual ? "manual" : g->intent_why};
    if (coord_db_push(c, sql, 5, v, on_sent, j) != 0) {
        free(j);
        return;
    }
    it->write_busy = true;
}
