/*
 * coord_xfer.c - transfers and policy passes.
 *
 * A transfer between two segments is planned here (INSERT ... 'planned'),
 * given by the donor node (GIVE in its heartbeat replies until it reports
 * sent or cancelled) and received by the receiver node (RECEIVE until it
 * reports received). The nodes write those states in their own group
 * commits, conditionally, so a command sent twice is applied once and a
 * late one is answered STALE; then the coordinator re-reads the row.
 * The coordinator commits the ends that touch items.unallocated itself:
 * a restock transfer is inserted already 'sent' together with
 * unallocated -= q, and a transfer to unallocated is received with
 * unallocated += q (and a pending reduce applied), conditional on 'sent'.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "coord.h"
#include "coord_metrics.h"
#include "coord_region.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_array.h"
#include "pg_result.h"

void coord_xfer_sent(coord *c, const coord_xfer *x)
{
    if (x->from != 0 && x->to != 0 && c->cfg.failpoint_exit_after_sent && !c->failpoint_fired) {
        c->failpoint_fired = true;
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_COORD_EXIT_AFTER_SENT: transfer=%" PRIu64 " from=%" PRIu64
                " to=%" PRIu64 " qty=%" PRId64 " is sent; exiting before any RECEIVE",
                x->transfer_id, x->from, x->to, x->qty);
        _exit(99);
    }
}

static void xfer_done(coord *c, coord_xfer *x, const char *how)
{
    ESC_LOG(ESC_LOG_INFO, "COORD-XFER",
            "transfer=%" PRIu64 " item=%s/%s from=%" PRIu64 " to=%" PRIu64 " qty=%" PRId64 " %s",
            x->transfer_id, x->item->tenant_id, x->item->item_id, x->from, x->to, x->qty, how);
    c->n_xfers_done++;
    c->xfer_changes++;
    coord_metrics_xfer_completed(c, x->reason,
                                 strncmp(how, "cancelled", 9) == 0 ? "cancelled" : "received");
    coord_cat_drop_xfer(&c->cat, x);
}

/* The transfer a statement's answer is about (its id is the query's arg), no
 * longer busy; NULL if it has left the catalog meanwhile. */
static coord_xfer *xfer_answered(coord *c, void *arg)
{
    coord_xfer *x = coord_cat_xfer(&c->cat, (uint64_t)(uintptr_t)arg);
    if (x != NULL) {
        x->busy = false;
    }
    return x;
}

/* ---- re-reading one transfer ---------------------------------------------------- */

static const char sql_reread[] =
    "/* escrow:coord-xfer */ SELECT state, qty FROM transfers WHERE transfer_id = $1";

static void on_reread(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    coord_xfer *x = xfer_answered(c, arg);
    if (x == NULL) {
        return;
    }
    if (err->code != 0) {
        return; /* the next STALE or catalog read tries again */
    }
    if (PQntuples(res) != 1) {
        xfer_done(c, x, "vanished");
        return;
    }
    const char *st = PQgetvalue(res, 0, 0);
    if (strcmp(st, "received") == 0 || strcmp(st, "cancelled") == 0) {
        xfer_done(c, x, st);
        return;
    }
    bool became_sent = x->state == COORD_XF_PLANNED && strcmp(st, "sent") == 0;
    x->state = strcmp(st, "sent") == 0 ? COORD_XF_SENT : COORD_XF_PLANNED;
    x->qty = pg_result_i64_or(res, 0, 1, 0);
    c->xfer_changes++;
    if (became_sent) {
        coord_xfer_sent(c, x);
    }
}

static void reread(coord *c, coord_xfer *x)
{
    if (x->busy) {
        return;
    }
    char id[24];
    snprintf(id, sizeof id, "%" PRIu64, x->transfer_id);
    const char *v[1] = {id};
    if (coord_db_push(c, sql_reread, 1, v, on_reread, (void *)(uintptr_t)x->transfer_id) == 0) {
        x->busy = true;
    }
}

void coord_xfer_results(coord *c, const wire_heartbeat *hb)
{
    for (size_t i = 0; i < hb->nxfers; i++) {
        const wire_transfer_result *r = &hb->xfers[i];
        coord_xfer *x = coord_cat_xfer(&c->cat, r->transfer_id);
        if (x == NULL || x->busy) {
            continue; /* already closed, or being committed here */
        }
        switch (r->outcome) {
        case WIRE_XFER_SENT:
            if (x->state == COORD_XF_PLANNED) {
                x->state = COORD_XF_SENT;
                x->qty = r->qty;
                c->xfer_changes++;
                coord_xfer_sent(c, x);
            }
            break;
        case WIRE_XFER_RECEIVED:
            xfer_done(c, x, "received");
            break;
        case WIRE_XFER_CANCELLED:
            xfer_done(c, x, "cancelled (the donor had nothing)");
            break;
        case WIRE_XFER_STALE:
            reread(c, x);
            break;
        default:
            break;
        }
    }
}

/* ---- receiving into unallocated ------------------------------------------------------ */

static const char sql_to_unallocated[] =
    "/* escrow:coord-xfer */ WITH t AS (UPDATE transfers SET state = 'received', "
    "received_at = now() WHERE transfer_id = $1 AND state = 'sent' AND to_segment IS NULL "
    "RETURNING tenant_id, item_id, qty), "
    "c AS (SELECT i.tenant_id, i.item_id, t.qty, "
    "LEAST(i.reduce_pending, i.unallocated + t.qty) AS red FROM items i JOIN t "
    "USING (tenant_id, item_id)), "
    "u AS (UPDATE items i SET unallocated = i.unallocated + c.qty - c.red, "
    "total = i.total - c.red, reduce_pending = i.reduce_pending - c.red FROM c "
    "WHERE i.tenant_id = c.tenant_id AND i.item_id = c.item_id "
    "RETURNING i.total, i.unallocated, i.reduce_pending), "
    "o1 AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT tenant_id, item_id, 'transfer_received', qty, 'coordinator' FROM c), "
    "o2 AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT tenant_id, item_id, 'reduced', red, 'coordinator' FROM c WHERE red > 0) "
    "SELECT total, unallocated, reduce_pending FROM u";

static void on_received_here(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    coord_xfer *x = xfer_answered(c, arg);
    if (x == NULL) {
        return;
    }
    if (err->code != 0) {
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            coord_db_unknown(c);
        }
        return;
    }
    if (PQntuples(res) != 1) {
        reread(c, x); /* not 'sent' any more */
        return;
    }
    coord_item *it = x->item;
    it->total = pg_result_i64_or(res, 0, 0, 0);
    it->unallocated = pg_result_i64_or(res, 0, 1, 0);
    it->reduce_pending = pg_result_i64_or(res, 0, 2, 0);
    xfer_done(c, x, "received into unallocated");
}

void coord_xfer_tick(coord *c)
{
    for (size_t i = 0; i < c->cat.nxfers; i++) {
        coord_xfer *x = c->cat.xfers[i];
        if (x->state != COORD_XF_SENT || x->to != 0 || x->busy || x->item->write_busy) {
            continue;
        }
        char id[24];
        snprintf(id, sizeof id, "%" PRIu64, x->transfer_id);
        const char *v[1] = {id};
        if (coord_db_push(c, sql_to_unallocated, 1, v, on_received_here,
                          (void *)(uintptr_t)x->transfer_id) == 0) {
            x->busy = true;
        }
    }
    for (size_t i = 0; i < c->cat.nitems; i++) {
        if (c->cat.items[i]->pass_now) {
            coord_policy_pass(c, c->cat.items[i], false);
        }
    }
}

/* ---- planning ---------------------------------------------------------------------- */

static const char sql_plan[] =
    "/* escrow:coord-plan */ INSERT INTO transfers (tenant_id, item_id, from_segment, "
    "to_segment, qty, planned_qty, reason) "
    "SELECT $1, $2, x.f, NULLIF(x.t, 0), x.q, x.q, x.r "
    "FROM unnest($3::bigint[], $4::bigint[], $5::bigint[], $6::text[]) AS x(f, t, q, r) "
    "RETURNING transfer_id, from_segment, COALESCE(to_segment, 0), qty";

static const char sql_restock[] =
    "/* escrow:coord-plan */ WITH x AS (SELECT * FROM unnest($3::bigint[], $4::bigint[]) "
    "AS x(t, q)), "
    "i AS (UPDATE items SET unallocated = unallocated - (SELECT sum(q) FROM x) "
    "WHERE tenant_id = $1 AND item_id = $2 AND unallocated >= (SELECT sum(q) FROM x) "
    "RETURNING unallocated), "
    "t AS (INSERT INTO transfers (tenant_id, item_id, from_segment, to_segment, qty, "
    "planned_qty, state, sent_at, reason) "
    "SELECT $1, $2, NULL, x.t, x.q, x.q, 'sent', now(), 'restock' FROM x, i "
    "RETURNING transfer_id, to_segment, qty), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, segment_id, kind, qty, actor) "
    "SELECT $1, $2, t.to_segment, 'transfer_sent', t.qty, 'coordinator' FROM t) "
    "SELECT t.transfer_id, 0, t.to_segment, t.qty, (SELECT unallocated FROM i) FROM t";

typedef struct plan_job {
    coord_item *it;
    bool restock;
    size_t n;
    coord_pxfer x[COORD_PLAN_XFERS_MAX];
} plan_job;

static void mark(coord *c, uint64_t seg_id, uint64_t from, uint64_t to)
{
    coord_seg *s = seg_id ? coord_cat_seg(&c->cat, seg_id) : NULL;
    if (s != NULL && s->xfer_id == from) {
        s->xfer_id = to;
    }
}

/* The reason of the planned transfer from -> to (rows come back without it). */
static const char *plan_reason(const plan_job *j, uint64_t from, uint64_t to)
{
    for (size_t i = 0; i < j->n; i++) {
        if (j->x[i].from == from && j->x[i].to == to) {
            return coord_policy_reason_name(j->x[i].reason);
        }
    }
    return NULL;
}

static void on_planned(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    plan_job *j = arg;
    coord_item *it = j->it;
    it->plan_busy--;
    if (err->code == 0) {
        for (int i = 0; i < PQntuples(res); i++) {
            uint64_t id = (uint64_t)pg_result_i64_or(res, i, 0, 0);
            uint64_t from = (uint64_t)pg_result_i64_or(res, i, 1, 0);
            uint64_t to = (uint64_t)pg_result_i64_or(res, i, 2, 0);
            int64_t qty = pg_result_i64_or(res, i, 3, 0);
            coord_xfer *x = coord_cat_add_xfer(&c->cat, it, id, from, to, qty,
                                               j->restock ? COORD_XF_SENT : COORD_XF_PLANNED);
            if (x == NULL) {
                continue; /* over the table's bound: the catalog read picks it up */
            }
            c->n_xfers_planned++;
            x->reason = plan_reason(j, from, to);
            coord_metrics_xfer_planned(c, x->reason);
            if (j->restock) {
                it->unallocated = pg_result_i64_or(res, i, 4, 0);
            }
            coord_seg *f = from ? coord_cat_seg(&c->cat, from) : NULL;
            if (f != NULL && f->state == WIRE_SEG_DRAINING && it->tail_segment == to) {
                f->forwarded = true;
            }
            ESC_LOG(ESC_LOG_INFO, "COORD-XFER",
                    "transfer=%" PRIu64 " item=%s/%s from=%" PRIu64 " to=%" PRIu64 " qty=%" PRId64
                    " %s",
                    id, it->tenant_id, it->item_id, from, to, qty,
                    j->restock ? "sent from unallocated" : "planned");
        }
        if (j->restock && PQntuples(res) == 0) {
            coord_reload(c); /* unallocated was not what memory said */
        }
    } else if (err->conn_lost && err->code != ESC_ECLOSED) {
        coord_db_unknown(c);
    }
    for (size_t i = 0; i < j->n; i++) {
        mark(c, j->x[i].from, COORD_XFER_INSERTING, 0);
        mark(c, j->x[i].to, COORD_XFER_INSERTING, 0);
    }
    free(j);
}

static void push_plan(coord *c, coord_item *it, const coord_plan *p, bool restock)
{
    plan_job *j = esc_xcalloc(1, sizeof *j);
    j->it = it;
    j->restock = restock;
    pg_array f, t, q, r;
    pg_array_init(&f);
    pg_array_init(&t);
    pg_array_init(&q);
    pg_array_init(&r);
    for (size_t i = 0; i < p->nxfers; i++) {
        const coord_pxfer *x = &p->xfers[i];
        if ((x->from == 0) != restock) {
            continue;
        }
        j->x[j->n++] = *x;
        pg_array_i64(&f, (int64_t)x->from);
        pg_array_i64(&t, (int64_t)x->to);
        pg_array_i64(&q, x->qty);
        pg_array_str(&r, coord_policy_reason_name(x->reason));
    }
    int rc = ESC_EINVAL;
    if (j->n > 0 && restock) {
        const char *v[4] = {it->tenant_id, it->item_id, pg_array_text(&t), pg_array_text(&q)};
        rc = coord_db_push(c, sql_restock, 4, v, on_planned, j);
    } else if (j->n > 0) {
        const char *v[6] = {it->tenant_id,     it->item_id,       pg_array_text(&f),
                            pg_array_text(&t), pg_array_text(&q), pg_array_text(&r)};
        rc = coord_db_push(c, sql_plan, 6, v, on_planned, j);
    }
    if (rc == 0) {
        it->plan_busy++;
        for (size_t i = 0; i < j->n; i++) {
            mark(c, j->x[i].from, 0, COORD_XFER_INSERTING);
            mark(c, j->x[i].to, 0, COORD_XFER_INSERTING);
        }
    } else {
        free(j);
    }
    pg_array_fini(&f);
    pg_array_fini(&t);
    pg_array_fini(&q);
    pg_array_fini(&r);
}

/* ---- collapse ------------------------------------------------------------------------ */

static const char sql_collapse[] =
    "/* escrow:coord-collapse */ WITH i AS (UPDATE items SET tail_segment = $3 "
    "WHERE tenant_id = $1 AND item_id = $2 AND tail_segment IS NULL AND state <> 'retired' "
    "RETURNING 1), "
    "s AS (UPDATE segments s SET state = 'draining' FROM i WHERE s.tenant_id = $1 AND "
    "s.item_id = $2 AND s.state = 'active' AND s.segment_id <> $3 RETURNING s.segment_id), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, segment_id, kind, qty, actor) "
    "SELECT $1, $2, $3, 'collapsed', 0, 'coordinator' FROM i) "
    "SELECT (SELECT count(*) FROM i), (SELECT count(*) FROM s)";

typedef struct collapse_job {
    coord_item *it;
    uint64_t tail;
    coord_admin_req *r; /* WIRE_ADMIN_COLLAPSE waiting for the answer, or NULL */
} collapse_job;

static void on_collapsed(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    collapse_job *j = arg;
    coord_item *it = j->it;
    it->write_busy = false;
    int status = 0;
    char msg[512];
    if (err->code == 0 && strcmp(PQgetvalue(res, 0, 0), "1") == 0) {
        it->tail_segment = j->tail;
        for (size_t i = 0; i < it->nsegs; i++) {
            coord_seg *s = it->segs[i];
            s->forwarded = false;
            if (s->state == WIRE_SEG_ACTIVE && s->segment_id != j->tail) {
                s->state = WIRE_SEG_DRAINING;
            }
        }
        ESC_LOG(ESC_LOG_INFO, "COORD-COLLAPSE", "item=%s/%s tail=%" PRIu64 " draining=%s",
                it->tenant_id, it->item_id, j->tail, PQgetvalue(res, 0, 1));
        snprintf(msg, sizeof msg, "collapsed %s/%s into segment %" PRIu64, it->tenant_id,
                 it->item_id, j->tail);
        coord_route_changed(c, it);
        it->pass_now = true;
        coord_metrics_collapse(c);
    } else if (err->code == 0) {
        status = ESC_ECONFLICT;
        snprintf(msg, sizeof msg, "%s/%s changed meanwhile; nothing collapsed", it->tenant_id,
                 it->item_id);
        coord_reload(c);
    } else {
        status = err->conn_lost ? ESC_EUNAVAILABLE : ESC_EDB;
        snprintf(msg, sizeof msg, "collapse failed: %s", err->message);
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            coord_db_unknown(c);
        }
    }
    if (j->r != NULL) {
        coord_metrics_admin(c, j->r->req.admin_op, status);
        coord_reply(c, &j->r->hdr, j->r->req.corr_id, status, msg);
        free(j->r);
    }
    free(j);
}

static bool push_collapse(coord *c, coord_item *it, uint64_t tail, coord_admin_req *r)
{
    collapse_job *j = esc_xcalloc(1, sizeof *j);
    j->it = it;
    j->tail = tail;
    j->r = r;
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, tail);
    const char *v[3] = {it->tenant_id, it->item_id, t};
    if (coord_db_push(c, sql_collapse, 3, v, on_collapsed, j) != 0) {
        free(j);
        return false;
    }
    it->write_busy = true;
    return true;
}

/* ---- a pass ---------------------------------------------------------------------------- */

static int pass(coord *c, coord_item *it, bool force_collapse, coord_admin_req *r)
{
    if (it->write_busy || it->plan_busy > 0 || c->need_reconcile || !c->loaded) {
        it->pass_now = true;
        return -1;
    }
    it->pass_now = false;
    static coord_pseg segs[ESC_SEGMENTS_PER_ITEM_MAX];
    static coord_plan plan;
    coord_pitem in;
    coord_cat_snapshot(&c->cat, it, c->cfg.collapse_pct, c->cfg.low_water_pct, segs, &in);
    in.export_want = coord_region_export_want(c, it);
    coord_policy_plan(&in, force_collapse, &plan);
    if (plan.sold_out && !coord_region_may_sell_out(c, it)) {
        plan.sold_out = false; /* another region may still sell or send it */
    }
    if (plan.sold_out != it->sold_out) {
        it->sold_out = plan.sold_out;
        ESC_LOG(ESC_LOG_INFO, "COORD-SOLD-OUT", "item=%s/%s sold_out=%d", it->tenant_id,
                it->item_id, it->sold_out);
        coord_route_changed(c, it);
    }
    if (plan.collapse) {
        if (push_collapse(c, it, plan.tail, r)) {
            return 0;
        }
        return -1;
    }
    push_plan(c, it, &plan, false);
    push_plan(c, it, &plan, true);
    return (int)plan.nxfers;
}

int coord_policy_pass(coord *c, coord_item *it, bool force_collapse)
{
    return pass(c, it, force_collapse, NULL);
}

/* WIRE_ADMIN_COLLAPSE: r is answered (and freed) here. */
void coord_xfer_collapse_now(coord *c, coord_item *it, coord_admin_req *r)
{
    int rc = pass(c, it, true, r);
    if (rc == 0 && it->write_busy) {
        return; /* on_collapsed answers */
    }
    coord_metrics_admin(c, r->req.admin_op, ESC_EUNAVAILABLE);
    coord_reply(c, &r->hdr, r->req.corr_id, ESC_EUNAVAILABLE,
                rc < 0 ? "the item is busy or the coordinator is reconciling; retry"
                       : "no active segment is served by a live node; nothing collapsed");
    free(r);
}
