/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_pass.c - see coord_pass.h.
 *
 * The pass is the only place where the policy's plan turns into writes:
 * transfers are INSERTed in one statement per kind (segment to segment, and
 * restocks from unallocated), each segment marked COORD_XFER_INSERTING while
 * its row is being written so no other pass gives it a second transfer; a
 * collapse is one statement that sets the tail and drains the others.
 */
#include "coord_pass.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_db.h"
#include "coord_metrics.h"
#include "coord_region.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_array.h"
#include "pg_result.h"
#include "segment_lock.h"

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
            coord_db_reload(c); /* unallocated was not what memory said */
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
    "s AS (UPDATE segments s SET state = 'draining' FROM i, "
    SEGMENTS_LOCKED("tenant_id = $1 AND item_id = $2 AND state = 'active' AND segment_id <> $3")
    " WHERE s.segment_id = l.segment_id AND s.tenant_id = $1 AND "
    "s.item_id = $2 AND s.state = 'active' AND s.segment_id <> $3 RETURNING s.segment_id), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, segment_id, kind, qty, actor) "
    "SELECT $1, $2, $3, 'collapsed', 0, 'coordinator' FROM i) "
    "SELECT (SELECT count(*) FROM i), (SELECT count(*) FROM s)";

typedef struct collapse_job {
    coord_item *it;
    uint64_t tail;
    coord_pass_cb cb; /* WIRE_ADMIN_COLLAPSE waiting for the answer, or NULL */
    void *arg;
} collapse_job;

/* The collapse committed (msg says so) or did not (status, msg why). */
static int collapse_outcome(coord *c, collapse_job *j, PGresult *res, const pgx_err *err, char *msg,
                            size_t cap)
{
    coord_item *it = j->it;
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
        snprintf(msg, cap, "collapsed %s/%s into segment %" PRIu64, it->tenant_id, it->item_id,
                 j->tail);
        coord_cat_changed(&c->cat, it);
        coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
        coord_metrics_collapse(c);
        return 0;
    }
    if (err->code == 0) {
        snprintf(msg, cap, "%s/%s changed meanwhile; nothing collapsed", it->tenant_id,
                 it->item_id);
        coord_db_reload(c);
        return ESC_ECONFLICT;
    }
    snprintf(msg, cap, "collapse failed: %s", err->message);
    if (err->conn_lost && err->code != ESC_ECLOSED) {
        coord_db_unknown(c);
    }
    return err->conn_lost ? ESC_EUNAVAILABLE : ESC_EDB;
}

static void on_collapsed(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    collapse_job *j = arg;
    j->it->write_busy = false;
    char msg[512];
    int status = collapse_outcome(c, j, res, err, msg, sizeof msg);
    if (j->cb != NULL) {
        j->cb(c, status, msg, j->arg);
    }
    free(j);
}

static bool push_collapse(coord *c, coord_item *it, uint64_t tail, coord_pass_cb cb, void *arg)
{
    collapse_job *j = esc_xcalloc(1, sizeof *j);
    j->it = it;
    j->tail = tail;
    j->cb = cb;
    j->arg = arg;
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

/* cb and arg go with a collapse this pass queues (force_collapse). */
static int pass(coord *c, coord_item *it, bool force_collapse, coord_pass_cb cb, void *arg)
{
    if (it->write_busy || it->plan_busy > 0 || c->db.need_reconcile || !c->loaded) {
        coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
        return -1;
    }
    coord_cat_unmark(it, COORD_WORK_PASS);
    coord_cat_unmark(it, COORD_WORK_POLICY);
    coord_metrics_policy_pass(c);
    static coord_pseg segs[ESC_SEGMENTS_PER_ITEM_MAX];
    static coord_plan plan;
    coord_pitem in;
    coord_cat_snapshot(&c->cat, it, c->cfg.collapse_pct, c->cfg.low_water_pct, esc_mono_us(), segs,
                       &in);
    in.export_want = coord_region_export_want(c, it);
    in.reduce_pending = coord_region_reduce_local(c, it);
    coord_policy_plan(&in, force_collapse, &plan);
    if (plan.sold_out && !coord_region_may_sell_out(c, it)) {
        plan.sold_out = false; /* another region may still sell or send it */
    }
    if (plan.sold_out != it->sold_out) {
        it->sold_out = plan.sold_out;
        ESC_LOG(ESC_LOG_INFO, "COORD-SOLD-OUT", "item=%s/%s sold_out=%d", it->tenant_id,
                it->item_id, it->sold_out);
        coord_cat_changed(&c->cat, it);
    }
    if (plan.collapse) {
        if (push_collapse(c, it, plan.tail, cb, arg)) {
            return 0;
        }
        return -1;
    }
    push_plan(c, it, &plan, false);
    push_plan(c, it, &plan, true);
    return (int)plan.nxfers;
}

int coord_pass_run(coord *c, coord_item *it)
{
    return pass(c, it, false, NULL, NULL);
}

void coord_pass_tick(coord *c)
{
    size_t n = 0;
    coord_item **v = coord_cat_take(&c->cat, COORD_WORK_PASS, &n);
    for (size_t i = 0; i < n; i++) {
        coord_pass_run(c, v[i]);
    }
}

int coord_pass_collapse(coord *c, coord_item *it, coord_pass_cb cb, void *arg)
{
    int rc = pass(c, it, true, cb, arg);
    if (rc == 0 && it->write_busy) {
        return 0; /* on_collapsed calls cb */
    }
    return rc < 0 ? ESC_EBUSY : ESC_ECONFLICT;
}

/* How long one sweep over n items takes. */
static uint32_t sweep_ms(size_t n)
{
    uint64_t ms = (uint64_t)n * 1000u / COORD_PASS_SWEEP_PER_S;
    return ms > COORD_PASS_SWEEP_MS ? (uint32_t)(ms < UINT32_MAX ? ms : UINT32_MAX)
                                    : COORD_PASS_SWEEP_MS;
}

void coord_pass_rebalance(coord *c)
{
    size_t n = c->cat.nitems;
    coord_cat_sweep(&c->cat, COORD_WORK_POLICY,
                    coord_cat_sweep_slice(n, c->cfg.rebalance_ms, sweep_ms(n)));
    coord_item **v = coord_cat_take(&c->cat, COORD_WORK_POLICY, &n);
    for (size_t i = 0; i < n; i++) {
        coord_pass_run(c, v[i]);
    }
}
