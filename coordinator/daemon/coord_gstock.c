/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_gstock.c - see coord_gstock.h.
 */
#include "coord_gstock.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "coord_db.h"
#include "coord_gfresh.h"
#include "coord_gitem.h"
#include "coord_policy.h"
#include "coord_state.h"
#include "coord_status.h"
#include "escrow_errors.h"
#include "failpoint.h"
#include "log.h"
#include "pg_result.h"

#define TAG "/* escrow:coord-gstock */ "

void coord_gstock_init(coord_gstock *gs, const region_cfg *cfg, coord_peers *peers,
                       struct coord_status *status, struct coord_gfresh *fresh)
{
    memset(gs, 0, sizeof *gs);
    gs->fresh = fresh;
    gs->cfg = cfg;
    gs->peers = peers;
    gs->status = status;
}

/* Peer i's view of it, when heard within the staleness bound and it has the
 * item; else NULL. */
static const wire_quota_item *fresh_view(const coord_gstock *gs, coord_item *it, int i, int64_t now)
{
    const coord_gview *v = &coord_gitem_of(it)->peers[i];
    if (v->at_us == 0 || now - v->at_us > coord_status_stale_us(gs->status, i) || !v->v.known) {
        return NULL;
    }
    return &v->v;
}

/* ---- an operator's restock or reduce ---------------------------------------------- */

typedef struct gstock_job {
    coord_gstock *gs;
    coord_item *it;
    coord_gstock_cb cb;
    void *arg;
    uint32_t op; /* WIRE_ADMIN_RESTOCK / REDUCE */
    int64_t qty;
    char op_id[ESC_KEY_LEN_MAX + 1];
    char place[ESC_REGION_LEN_MAX + 1]; /* restock: where the units go */
    int peer;                           /* restock: place's peer index; -1 = this region */
    bool uncollapse;                    /* restock here of a collapsed item */
    bool judged;                        /* reduce: the peers' fresh figures are in */
} gstock_job;

static void finish(coord *c, gstock_job *j, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void finish(coord *c, gstock_job *j, int status, const char *fmt, ...)
{
    char msg[WIRE_WHY_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ESC_LOG(status != 0 ? ESC_LOG_WARN : ESC_LOG_INFO, "COORD-GLOBAL", "item=%s/%s op=%s %s -> %s",
            j->it->tenant_id, j->it->item_id, j->op_id, msg, esc_err_name(status));
    j->cb(c, status, msg, j->arg);
    free(j);
}

/* The statement failed: the answer says what that means. */
static bool failed(coord *c, gstock_job *j, const pgx_err *err)
{
    j->it->write_busy = false;
    if (err->code == 0) {
        return false;
    }
    if (err->conn_lost && err->code != ESC_ECLOSED) {
        coord_db_unknown(c);
        j->gs->sums_loaded = false;
        finish(c, j, ESC_EUNAVAILABLE,
               "database connection lost: outcome unknown; send operation %s again (never "
               "applied twice)",
               j->op_id);
    } else if (strcmp(err->sqlstate, "ES011") == 0 || strcmp(err->sqlstate, "ES010") == 0) {
        finish(c, j, ESC_ECONFLICT, "%s", err->message);
    } else if (strcmp(err->sqlstate, "ES012") == 0) {
        finish(c, j, ESC_EINVAL, "%s", err->message);
    } else {
        finish(c, j, err->code == ESC_ECLOSED ? ESC_ECLOSED : ESC_EDB, "%s", err->message);
    }
    return true;
}

/* Columns of escrow_global_figures. */
enum {
    F_OUTCOME,
    F_FREE,
    F_PLACED,
    F_XFER,
    F_GTOTAL,
    F_CHANGES,
    F_DELTA,
    F_TOTAL,
    F_UNALLOC,
    F_RED
};

/* Memory follows the figures the statement returned. */
static void take_figures(coord *c, coord_item *it, const PGresult *res)
{
    coord_gitem *g = coord_gitem_of(it);
    it->global_total = pg_result_i64_or(res, 0, F_GTOTAL, it->global_total);
    g->own_changes = (uint64_t)pg_result_i64_or(res, 0, F_CHANGES, 0);
    g->own_delta = pg_result_i64_or(res, 0, F_DELTA, 0);
    it->total = pg_result_i64_or(res, 0, F_TOTAL, it->total);
    it->unallocated = pg_result_i64_or(res, 0, F_UNALLOC, it->unallocated);
    it->reduce_pending = pg_result_i64_or(res, 0, F_RED, it->reduce_pending);
    coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
    coord_cat_changed(&c->cat, it);
}

static void exit_if_armed(const gstock_job *j)
{
    if (failpoint_global_exit_after_commit()) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT: op=%s committed; exiting before the "
                "answer",
                j->op_id);
        _exit(FAILPOINT_EXIT_STATUS);
    }
}

static void on_restocked(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    gstock_job *j = arg;
    if (failed(c, j, err)) {
        return;
    }
    coord_item *it = j->it;
    take_figures(c, it, res);
    if (strcmp(PQgetvalue(res, 0, F_OUTCOME), "before") == 0) {
        finish(c, j, 0, "operation %s was carried out before (restock of %" PRId64 " placed in %s)",
               j->op_id, j->qty, PQgetvalue(res, 0, F_PLACED));
        return;
    }
    j->gs->n_restocks++;
    exit_if_armed(j);
    if (j->uncollapse) {
        coord_db_reload(c); /* the statement made the segments active again */
    }
    if (j->peer < 0) {
        finish(c, j, 0,
               "restocked %s/%s by %" PRId64 ": global total %" PRId64 ", quota here %" PRId64,
               it->tenant_id, it->item_id, j->qty, it->global_total, it->total);
        return;
    }
    /* step 1 of the quota transfer committed with it: offer it now */
    uint64_t id = (uint64_t)pg_result_i64_or(res, 0, F_XFER, 0);
    coord_gitem_of(it)->in_flight_to[j->peer] += j->qty;
    coord_gitem_of(it)->sent_to[j->peer] += j->qty;
    coord_peers_offer(j->gs->peers, j->peer, id, it->tenant_id, it->item_id, j->qty);
    finish(c, j, 0, "restocked %s/%s by %" PRId64 ": global total %" PRId64 "; on its way to %s",
           it->tenant_id, it->item_id, j->qty, it->global_total, j->place);
}

static void on_fresh(coord *c, int status, const char *msg, int64_t elsewhere, void *arg);

static void on_reduced(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    gstock_job *j = arg;
    if (failed(c, j, err)) {
        return;
    }
    coord_item *it = j->it;
    const char *outcome = PQgetvalue(res, 0, F_OUTCOME);
    take_figures(c, it, res);
    if (strcmp(outcome, "refused") == 0) {
        finish(c, j, ESC_EINVAL,
               "cannot reduce %s/%s by %" PRId64 ": only %s units are neither sold nor being "
               "reduced",
               it->tenant_id, it->item_id, j->qty, PQgetvalue(res, 0, F_FREE));
        return;
    }
    if (strcmp(outcome, "before") == 0) {
        finish(c, j, 0, "operation %s was carried out before (reduce of %" PRId64 ")", j->op_id,
               j->qty);
        return;
    }
    if (strcmp(outcome, "unjudged") == 0 && !j->judged) {
        /* not carried out before: judged on facts as new as the request */
        coord_gfresh_ask_all(c, j->gs->fresh, it, on_fresh, j);
        return;
    }
    if (strcmp(outcome, "unjudged") == 0) {
        finish(c, j, ESC_EINTERNAL, "the reduce of %s/%s was not judged; retry", it->tenant_id,
               it->item_id);
        return;
    }
    j->gs->n_reduces++;
    exit_if_armed(j);
    coord_gstock_plan(c, j->gs, it, esc_mono_us());
    finish(c, j, 0,
           "reduced %s/%s by %" PRId64 ": global total %" PRId64 ", %" PRId64 " still to take",
           it->tenant_id, it->item_id, j->qty, it->global_total, it->reduce_pending);
}

/* The region a restock without a named region goes to (coord_gstock.h). */
static int pick_place(coord *c, coord_gstock *gs, coord_item *it, int64_t qty)
{
    coord_qregion r[COORD_QREGIONS_MAX];
    wire_quota_item own;
    coord_gitem_view(c, gs->cfg, gs->peers->n, it, &own);
    r[0] = (coord_qregion){.usable = true,
                           .quota = own.quota,
                           .unused = own.unused,
                           .demand_milli = own.demand_milli,
                           .share = gs->cfg->share};
    int64_t now = esc_mono_us();
    for (size_t i = 0; i < gs->peers->n; i++) {
        const wire_quota_item *v = fresh_view(gs, it, (int)i, now);
        r[i + 1] = (coord_qregion){.usable = v != NULL,
                                   .quota = v != NULL ? v->quota : 0,
                                   .unused = v != NULL ? v->unused : 0,
                                   .demand_milli = v != NULL ? v->demand_milli : 0,
                                   .in_flight_to = coord_gitem_of(it)->in_flight_to[i],
                                   .share = v != NULL ? v->share : 0};
    }
    int k = coord_policy_restock_place(r, gs->peers->n + 1, gs->cfg->horizon_ms,
                                       it->global_total + qty);
    return k <= 0 ? -1 : k - 1;
}

static void restock(coord *c, gstock_job *j)
{
    static const char sql[] = TAG "SELECT * FROM escrow_global_restock($1, $2, $3, $4, $5)";
    coord_gstock *gs = j->gs;
    coord_item *it = j->it;
    if (j->place[0] == '\0') {
        j->peer = pick_place(c, gs, it, j->qty);
        snprintf(j->place, sizeof j->place, "%s",
                 j->peer < 0 ? gs->cfg->name : coord_peers_name(gs->peers, j->peer));
    } else if (strcmp(j->place, gs->cfg->name) != 0) {
        j->peer = coord_peers_find(gs->peers, j->place);
        if (j->peer < 0) {
            finish(c, j, ESC_EINVAL, "region %s is neither region %s nor one of its peers",
                   j->place, gs->cfg->name);
            return;
        }
    }
    j->uncollapse = j->peer < 0 && it->tail_segment != 0;
    char qty[24];
    snprintf(qty, sizeof qty, "%" PRId64, j->qty);
    const char *v[5] = {it->tenant_id, it->item_id, j->op_id, qty, j->place};
    if (coord_db_push(c, sql, 5, v, on_restocked, j) != 0) {
        finish(c, j, ESC_EBUSY, "the coordinator's database queue is full; retry");
        return;
    }
    it->write_busy = true;
}

/* The reduce's statement: without elsewhere (NULL), it only looks the id
 * up (outcome "before", else "unjudged" and nothing changes); with it (the
 * peers' sold and pending reduce), it judges and carries the reduce out. */
static void reduce_push(coord *c, gstock_job *j, const char *elsewhere)
{
    static const char sql[] = TAG "SELECT * FROM escrow_global_reduce($1, $2, $3, $4, $5)";
    char qty[24];
    snprintf(qty, sizeof qty, "%" PRId64, j->qty);
    const char *v[5] = {j->it->tenant_id, j->it->item_id, j->op_id, qty, elsewhere};
    if (coord_db_push(c, sql, 5, v, on_reduced, j) != 0) {
        finish(c, j, ESC_EBUSY, "the coordinator's database queue is full; retry");
        return;
    }
    j->it->write_busy = true;
}

/* Every peer's figures as of after the request arrived (coord_gfresh.h). */
static void on_fresh(coord *c, int status, const char *msg, int64_t elsewhere, void *arg)
{
    gstock_job *j = arg;
    if (status != 0) {
        finish(c, j, status, "%s", msg);
        return;
    }
    char other[24];
    snprintf(other, sizeof other, "%" PRId64, elsewhere);
    j->judged = true;
    reduce_push(c, j, other);
}

void coord_gstock_admin(coord *c, coord_gstock *gs, coord_item *it, const wire_request *q,
                        coord_gstock_cb cb, void *arg)
{
    gstock_job *j = esc_xcalloc(1, sizeof *j);
    j->gs = gs;
    j->it = it;
    j->cb = cb;
    j->arg = arg;
    j->op = q->admin_op;
    j->qty = q->qty;
    j->peer = -1;
    snprintf(j->op_id, sizeof j->op_id, "%s", q->global ? q->op_id : "-");
    snprintf(j->place, sizeof j->place, "%s", q->region);
    const char *what = q->admin_op == WIRE_ADMIN_RESTOCK ? "restock" : "reduce";
    if (!q->global) {
        finish(c, j, ESC_ECONFLICT,
               "%s/%s is a global item: escrowctl item %s ... --global, with every region's "
               "--config",
               it->tenant_id, it->item_id, what);
    } else if (!it->global) {
        finish(c, j, ESC_ECONFLICT, "%s/%s is not a global item in region %s: drop --global",
               it->tenant_id, it->item_id, gs->cfg->name);
    } else if (q->admin_op == WIRE_ADMIN_RESTOCK) {
        restock(c, j);
    } else {
        reduce_push(c, j, NULL);
    }
}

/* ---- learning the other regions' changes --------------------------------------------- */

typedef struct learn_job {
    coord_gstock *gs;
    coord_item *it;
    int peer;
} learn_job;

static void on_learned(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    learn_job *j = arg;
    coord_gitem *g = coord_gitem_of(j->it);
    g->learn_busy = false;
    if (err->code != 0) {
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            j->gs->sums_loaded = false; /* re-read what is known */
        }
        ESC_LOG(ESC_LOG_WARN, "COORD-GLOBAL", "item=%s/%s learning from %s: %s", j->it->tenant_id,
                j->it->item_id, coord_peers_name(j->gs->peers, j->peer), err->message);
    } else if (!PQgetisnull(res, 0, 0)) {
        uint64_t changes = (uint64_t)pg_result_i64_or(res, 0, 0, 0);
        j->it->global_total = pg_result_i64_or(res, 0, 1, j->it->global_total);
        if (changes > g->known_changes[j->peer]) {
            j->gs->n_learned++;
            ESC_LOG(ESC_LOG_INFO, "COORD-GLOBAL-LEARNED",
                    "item=%s/%s from=%s changes=%" PRIu64 " global_total=%" PRId64,
                    j->it->tenant_id, j->it->item_id, coord_peers_name(j->gs->peers, j->peer),
                    changes, j->it->global_total);
        }
        g->known_changes[j->peer] = changes;
    }
    free(j);
}

void coord_gstock_learn(coord *c, coord_gstock *gs, coord_item *it, int i)
{
    static const char sql[] =
        TAG "SELECT changes, global_total FROM escrow_global_learn($1, $2, $3, $4, $5)";
    coord_gitem *g = coord_gitem_of(it);
    if (g->learn_busy || !gs->sums_loaded) {
        return;
    }
    const wire_quota_item *v = &g->peers[i].v;
    char changes[24], sum[24];
    snprintf(changes, sizeof changes, "%" PRIu64, v->changes);
    snprintf(sum, sizeof sum, "%" PRId64, v->change_sum);
    const char *p[5] = {it->tenant_id, it->item_id, coord_peers_name(gs->peers, i), changes, sum};
    learn_job *j = esc_xcalloc(1, sizeof *j);
    *j = (learn_job){gs, it, i};
    if (coord_db_push(c, sql, 5, p, on_learned, j) != 0) {
        free(j); /* the next view tries again */
        return;
    }
    g->learn_busy = true;
}

static void on_sums(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    coord_gstock *gs = arg;
    gs->sums_busy = false;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-GLOBAL", "reading global_changes: %s", err->message);
        return;
    }
    for (size_t i = 0; i < c->cat.nitems; i++) {
        coord_item *it = c->cat.items[i];
        if (it->global) {
            coord_gitem *g = coord_gitem_of(it);
            g->own_changes = 0;
            g->own_delta = 0;
            memset(g->known_changes, 0, sizeof g->known_changes);
            memset(g->applied_from, 0, sizeof g->applied_from);
            memset(g->sent_to, 0, sizeof g->sent_to);
        }
    }
    for (int r = 0; r < PQntuples(res); r++) {
        coord_item *it = coord_cat_item(&c->cat, PQgetvalue(res, r, 1), PQgetvalue(res, r, 2));
        const char *kind = PQgetvalue(res, r, 0), *region = PQgetvalue(res, r, 3);
        int peer = coord_peers_find(gs->peers, region);
        if (it == NULL || (peer < 0 && strcmp(region, gs->cfg->name) != 0)) {
            continue;
        }
        coord_gitem *g = coord_gitem_of(it);
        int64_t n = pg_result_i64_or(res, r, 4, 0);
        if (kind[0] == 'r') {
            g->applied_from[peer] = n;
        } else if (kind[0] == 's') {
            g->sent_to[peer] = n;
        } else if (peer >= 0) {
            g->known_changes[peer] = (uint64_t)n;
        } else {
            g->own_changes = (uint64_t)n;
            g->own_delta = pg_result_i64_or(res, r, 5, 0);
        }
    }
    gs->sums_loaded = true;
}

void coord_gstock_round(coord *c, coord_gstock *gs)
{
    /* every region's global changes as known here, and the running totals
     * of quota applied from and sent to each peer (the reduce asks) */
    static const char sql[] = TAG
        "SELECT 'c', tenant_id, item_id, region, changes, delta FROM global_changes "
        "UNION ALL SELECT 'r', tenant_id, item_id, from_region, sum(qty), 0 "
        "FROM quota_receipts WHERE outcome = 'applied' GROUP BY tenant_id, item_id, from_region "
        "UNION ALL SELECT 's', tenant_id, item_id, to_region, sum(qty), 0 "
        "FROM quota_transfers WHERE state <> 'refused' GROUP BY tenant_id, item_id, to_region";
    if (gs->sums_loaded || gs->sums_busy || !c->loaded) {
        return;
    }
    if (coord_db_push(c, sql, 0, NULL, on_sums, gs) == 0) {
        gs->sums_busy = true;
    }
}

/* ---- the round's policy ----------------------------------------------------------------- */

/* A reduce pending here: this region's part and each peer's ask. */
static void plan_sources(coord *c, coord_gstock *gs, coord_item *it, int64_t now)
{
    coord_gitem *g = coord_gitem_of(it);
    coord_qregion r[COORD_QREGIONS_MAX];
    int64_t take[COORD_QREGIONS_MAX];
    wire_quota_item own;
    coord_gitem_view(c, gs->cfg, gs->peers->n, it, &own);
    r[0] = (coord_qregion){
        .usable = true, .unused = coord_gitem_remaining(c, it), .demand_milli = own.demand_milli};
    for (size_t i = 0; i < gs->peers->n; i++) {
        const wire_quota_item *v = fresh_view(gs, it, (int)i, now);
        /* what it has on its way (here, as far as this region can tell) counts:
         * it sends the running total less all it sent */
        r[i + 1] = (coord_qregion){.usable = v != NULL,
                                   .unused = v != NULL ? v->unused + v->in_flight : 0,
                                   .demand_milli = v != NULL ? v->demand_milli : 0};
    }
    coord_policy_reduce_sources(r, gs->peers->n + 1, it->reduce_pending, take);
    g->reduce_local = take[0];
    for (size_t i = 0; i < gs->peers->n; i++) {
        /* a running total: a late copy of an older status asks for no more */
        g->reduce_ask[i] =
            gs->sums_loaded && take[i + 1] > 0 ? g->applied_from[i] + take[i + 1] : 0;
    }
}

bool coord_gstock_plan(coord *c, coord_gstock *gs, coord_item *it, int64_t now)
{
    coord_gitem *g = coord_gitem_of(it);
    g->reduce_local = 0;
    memset(g->reduce_ask, 0, sizeof g->reduce_ask);
    if (it->reduce_pending > 0) {
        plan_sources(c, gs, it, now);
        coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
        return true; /* a region that reduces sends nothing away */
    }
    for (size_t i = 0; gs->sums_loaded && i < gs->peers->n; i++) {
        const wire_quota_item *v = fresh_view(gs, it, (int)i, now);
        int64_t want = v != NULL && v->reduce_ask > 0 ? v->reduce_ask - g->sent_to[i] : 0;
        if (want > 0) {
            g->intent_peer = (int)i;
            g->intent_left = want;
            g->intent_sent = 0;
            g->intent_why = "reduce";
            coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
            ESC_LOG(ESC_LOG_DEBUG, "COORD-GLOBAL", "item=%s/%s %s asks %" PRId64 " for its reduce",
                    it->tenant_id, it->item_id, coord_peers_name(gs->peers, (int)i), want);
            return true;
        }
    }
    return false;
}

int64_t coord_gstock_reduce_local(const coord_item *it)
{
    if (!it->global || it->g == NULL) {
        return it->reduce_pending;
    }
    return it->g->reduce_local < it->reduce_pending ? it->g->reduce_local : it->reduce_pending;
}
