/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_admin.c - see coord_admin.h.
 *
 * Each item operation is one statement (one transaction) that changes the
 * catalog and writes its outbox event (actor 'coordinator'); memory changes
 * when it committed and the reply goes out then. One write per item at a
 * time: a request for an item with a write in flight waits (up to
 * COORD_DEFER_MS_MAX, then ESC_EBUSY). An item or node the coordinator does
 * not know triggers one catalog read before the answer is "unknown", so an
 * item created by escrowctl a moment ago is found.
 *
 * Errors: ESC_EUNKNOWN_ITEM, ESC_ENOT_FOUND (node), ESC_EINVAL (arguments),
 * ESC_ECONFLICT (the item is retired), ESC_EBUSY, ESC_EUNAVAILABLE (the
 * database connection was lost: the outcome is unknown).
 */
#include "coord_admin.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_db.h"
#include "coord_metrics.h"
#include "coord_pass.h"
#include "coord_place.h"
#include "coord_region.h"
#include "coord_reply.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_array.h"
#include "pg_result.h"
#include "segment_lock.h"

/* An admin request until it is answered (owned by whichever list or job
 * holds it). */
typedef struct coord_admin_req coord_admin_req;
struct coord_admin_req {
    struct coord_admin_req *next;
    nnx_hdr hdr;
    wire_request req;
    int64_t deadline_us;
    bool reloaded;      /* an unknown item/node triggered one catalog reload already */
    uint64_t wait_read; /* answered once this catalog read completed */
};

static void decide(coord *c, coord_admin_req *r);

static void answer(coord *c, coord_admin_req *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void answer(coord *c, coord_admin_req *r, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ESC_LOG(status ? ESC_LOG_WARN : ESC_LOG_INFO, "COORD-ADMIN", "op=%u %s -> %s", r->req.admin_op,
            msg, esc_err_name(status));
    coord_metrics_admin(c, r->req.admin_op, status);
    coord_reply(c, &r->hdr, r->req.corr_id, status, msg);
    free(r);
}

/* Waits for the next catalog read, then decides again. */
static void after_reload(coord *c, coord_admin_req *r)
{
    r->reloaded = true;
    r->wait_read = c->db.reads_started + 1;
    r->next = c->admin.after_reload;
    c->admin.after_reload = r;
    coord_db_reload(c);
}

static void defer(coord *c, coord_admin_req *r)
{
    if (c->admin.ndeferred >= COORD_DEFERRED_MAX || esc_mono_us() > r->deadline_us) {
        answer(c, r, ESC_EBUSY, "the item is busy with another operation; retry");
        return;
    }
    r->next = c->admin.deferred;
    c->admin.deferred = r;
    c->admin.ndeferred++;
}

void coord_admin_tick(coord *c)
{
    coord_admin_req *r = c->admin.deferred;
    c->admin.deferred = NULL;
    c->admin.ndeferred = 0;
    while (r != NULL) {
        coord_admin_req *next = r->next;
        r->next = NULL;
        decide(c, r);
        r = next;
    }
}

void coord_admin_reload_done(coord *c)
{
    /* the requests that waited for this read are decided again */
    coord_admin_req *r = c->admin.after_reload, *later = NULL;
    c->admin.after_reload = NULL;
    while (r != NULL) {
        coord_admin_req *next = r->next;
        r->next = NULL;
        if (r->wait_read <= c->db.reads_done) {
            decide(c, r); /* may queue it again for the next read */
        } else {
            r->next = later; /* queued while this read ran: it waits for the next one */
            later = r;
        }
        r = next;
    }
    while (later != NULL) {
        coord_admin_req *next = later->next;
        later->next = c->admin.after_reload;
        c->admin.after_reload = later;
        later = next;
    }
}

void coord_admin_stop(coord *c)
{
    /* waiting requests were never decided: say so */
    for (coord_admin_req **list = &c->admin.deferred; list != NULL;
         list = list == &c->admin.deferred ? &c->admin.after_reload : NULL) {
        while (*list != NULL) {
            coord_admin_req *r = *list;
            *list = r->next;
            coord_reply(c, &r->hdr, r->req.corr_id, ESC_ECLOSED, "the coordinator is stopping");
            free(r);
        }
    }
    c->admin.ndeferred = 0;
}

/* ---- item writes ---------------------------------------------------------------- */

typedef struct admin_job {
    coord_admin_req *r;
    coord_item *it;
    int64_t qty;
    uint32_t nsegs;
    int state; /* pause/resume/retire: the new COORD_ITEM_* */
} admin_job;

static bool db_failed(coord *c, admin_job *j, const pgx_err *err)
{
    j->it->write_busy = false;
    if (err->code == 0) {
        return false;
    }
    if (err->conn_lost && err->code != ESC_ECLOSED) {
        coord_db_unknown(c);
        answer(c, j->r, ESC_EUNAVAILABLE,
               "the database connection was lost; the outcome is unknown (check the status)");
    } else {
        answer(c, j->r, err->code == ESC_ECLOSED ? ESC_ECLOSED : ESC_EDB, "%s", err->message);
    }
    free(j);
    return true;
}

static int push(coord *c, admin_job *j, const char *sql, int n, const char *const *v,
                coord_db_cb cb)
{
    int rc = coord_db_push(c, sql, n, v, cb, j);
    if (rc != 0) {
        answer(c, j->r, ESC_EBUSY, "the coordinator's database queue is full; retry");
        free(j);
        return rc;
    }
    j->it->write_busy = true;
    return 0;
}

/* Segment states after un-collapsing: the first segments_wanted active. */
static void states_text(const coord_item *it, uint32_t wanted, pg_array *ids, pg_array *sts)
{
    uint32_t k = 0;
    for (size_t i = 0; i < it->nsegs; i++) {
        if (it->segs[i]->state == WIRE_SEG_RETIRED) {
            continue;
        }
        pg_array_i64(ids, (int64_t)it->segs[i]->segment_id);
        pg_array_str(sts, k++ < wanted ? "active" : "draining");
    }
}

static void apply_states(coord_item *it, uint32_t wanted)
{
    uint32_t k = 0;
    for (size_t i = 0; i < it->nsegs; i++) {
        coord_seg *s = it->segs[i];
        if (s->state != WIRE_SEG_RETIRED) {
            s->state = k++ < wanted ? WIRE_SEG_ACTIVE : WIRE_SEG_DRAINING;
        }
    }
}

static const char sql_restock[] =
    "/* escrow:coord-admin */ WITH c AS (SELECT LEAST(reduce_pending, unallocated + $3) AS red "
    "FROM items WHERE tenant_id = $1 AND item_id = $2), "
    "i AS (UPDATE items i SET total = i.total + $3 - c.red, "
    "unallocated = i.unallocated + $3 - c.red, reduce_pending = i.reduce_pending - c.red, "
    "tail_segment = NULL FROM c WHERE i.tenant_id = $1 AND i.item_id = $2 "
    "AND i.state <> 'retired' RETURNING i.total, i.unallocated, i.reduce_pending), "
    "s AS (UPDATE segments s SET state = x.st FROM unnest($4::bigint[], $5::text[]) AS x(id, st), "
    "i, " SEGMENTS_LOCKED("segment_id = ANY ($4::bigint[])")
    " WHERE s.segment_id = l.segment_id AND s.segment_id = x.id RETURNING 1), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT $1, $2, 'restocked', $3, 'coordinator' FROM i) "
    "SELECT total, unallocated, reduce_pending FROM i";

static void on_restocked(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    admin_job *j = arg;
    if (db_failed(c, j, err)) {
        return;
    }
    coord_item *it = j->it;
    if (PQntuples(res) != 1) {
        answer(c, j->r, ESC_ECONFLICT, "%s/%s changed meanwhile; nothing restocked", it->tenant_id,
               it->item_id);
        coord_db_reload(c);
        free(j);
        return;
    }
    it->total = pg_result_i64_or(res, 0, 0, 0);
    it->unallocated = pg_result_i64_or(res, 0, 1, 0);
    it->reduce_pending = pg_result_i64_or(res, 0, 2, 0);
    if (it->tail_segment != 0) {
        it->tail_segment = 0;
        apply_states(it, it->segments_wanted);
    }
    coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
    coord_cat_changed(&c->cat, it);
    answer(c, j->r, 0, "restocked %s/%s by %" PRId64 ": total=%" PRId64 " unallocated=%" PRId64,
           it->tenant_id, it->item_id, j->qty, it->total, it->unallocated);
    free(j);
}

static void restock(coord *c, admin_job *j)
{
    coord_item *it = j->it;
    if (j->qty < 1 || j->qty > ESC_TOTAL_MAX - it->total) {
        answer(c, j->r, ESC_EINVAL,
               "restock qty must be 1..%lld (total %" PRId64 " of at most %lld)",
               ESC_TOTAL_MAX - (long long)it->total, it->total, ESC_TOTAL_MAX);
        free(j);
        return;
    }
    pg_array ids, sts;
    pg_array_init(&ids);
    pg_array_init(&sts);
    if (it->tail_segment != 0) {
        states_text(it, it->segments_wanted, &ids, &sts); /* a restock splits it again */
    }
    char q[24];
    snprintf(q, sizeof q, "%" PRId64, j->qty);
    const char *v[5] = {it->tenant_id, it->item_id, q, pg_array_text(&ids), pg_array_text(&sts)};
    (void)push(c, j, sql_restock, 5, v, on_restocked);
    pg_array_fini(&ids);
    pg_array_fini(&sts);
}

static const char sql_reduce[] =
    "/* escrow:coord-admin */ WITH c AS (SELECT i.unallocated, i.total - i.reduce_pending - "
    "(SELECT COALESCE(sum(s.held + s.sold), 0) FROM segments s WHERE s.tenant_id = $1 AND "
    "s.item_id = $2) AS free FROM items i WHERE i.tenant_id = $1 AND i.item_id = $2 "
    "AND i.state <> 'retired'), "
    "u AS (UPDATE items i SET total = i.total - LEAST($3, c.unallocated), "
    "unallocated = i.unallocated - LEAST($3, c.unallocated), "
    "reduce_pending = i.reduce_pending + $3 - LEAST($3, c.unallocated) FROM c "
    "WHERE i.tenant_id = $1 AND i.item_id = $2 AND c.free >= $3 "
    "RETURNING i.total, i.unallocated, i.reduce_pending), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT $1, $2, 'reduced', $3, 'coordinator' FROM u) "
    "SELECT c.free, u.total, u.unallocated, u.reduce_pending FROM c LEFT JOIN u ON true";

static void on_reduced(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    admin_job *j = arg;
    if (db_failed(c, j, err)) {
        return;
    }
    coord_item *it = j->it;
    if (PQntuples(res) != 1) {
        answer(c, j->r, ESC_ECONFLICT, "%s/%s changed meanwhile; nothing reduced", it->tenant_id,
               it->item_id);
        coord_db_reload(c);
    } else if (PQgetisnull(res, 0, 1)) {
        answer(c, j->r, ESC_EINVAL,
               "cannot reduce %s/%s by %" PRId64 ": only %s units are neither held nor sold",
               it->tenant_id, it->item_id, j->qty, PQgetvalue(res, 0, 0));
    } else {
        it->total = pg_result_i64_or(res, 0, 1, 0);
        it->unallocated = pg_result_i64_or(res, 0, 2, 0);
        it->reduce_pending = pg_result_i64_or(res, 0, 3, 0);
        coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
        answer(c, j->r, 0,
               "reduced %s/%s by %" PRId64 ": total=%" PRId64
               " still to reclaim from segments=%" PRId64,
               it->tenant_id, it->item_id, j->qty, it->total, it->reduce_pending);
    }
    free(j);
}

static void reduce(coord *c, admin_job *j)
{
    if (j->qty < 1 || j->qty > j->it->total) {
        answer(c, j->r, ESC_EINVAL, "reduce qty must be 1..%" PRId64 " (the item's total)",
               j->it->total);
        free(j);
        return;
    }
    char q[24];
    snprintf(q, sizeof q, "%" PRId64, j->qty);
    const char *v[3] = {j->it->tenant_id, j->it->item_id, q};
    (void)push(c, j, sql_reduce, 3, v, on_reduced);
}

static const char sql_state[] =
    "/* escrow:coord-admin */ WITH i AS (UPDATE items SET state = $3 WHERE tenant_id = $1 AND "
    "item_id = $2 AND state <> 'retired' RETURNING 1), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT $1, $2, $4, 0, 'coordinator' FROM i) SELECT count(*) FROM i";

static const char *const item_state_names[] = {"active", "paused", "retired"};
static const char *const item_event_names[] = {"resumed", "paused", "retired"};

static void on_state(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    admin_job *j = arg;
    if (db_failed(c, j, err)) {
        return;
    }
    coord_item *it = j->it;
    if (strcmp(PQgetvalue(res, 0, 0), "1") != 0) {
        answer(c, j->r, ESC_ECONFLICT, "%s/%s is retired", it->tenant_id, it->item_id);
        coord_db_reload(c);
    } else {
        it->state = j->state;
        coord_cat_changed(&c->cat, it);
        answer(c, j->r, 0, "%s/%s %s", it->tenant_id, it->item_id, item_event_names[j->state]);
    }
    free(j);
}

static void set_state(coord *c, admin_job *j, int state)
{
    j->state = state;
    const char *v[4] = {j->it->tenant_id, j->it->item_id, item_state_names[state],
                        item_event_names[state]};
    (void)push(c, j, sql_state, 4, v, on_state);
}

static const char sql_split[] =
    "/* escrow:coord-admin */ WITH i AS (UPDATE items SET segments_wanted = $3, "
    "tail_segment = NULL WHERE tenant_id = $1 AND item_id = $2 AND state <> 'retired' "
    "RETURNING 1), "
    "s AS (UPDATE segments s SET state = x.st FROM unnest($4::bigint[], $5::text[]) AS x(id, st), "
    "i, " SEGMENTS_LOCKED("segment_id = ANY ($4::bigint[])")
    " WHERE s.segment_id = l.segment_id AND s.segment_id = x.id RETURNING 1), "
    "n AS (INSERT INTO segments (tenant_id, item_id, seg_no, available) "
    "SELECT $1, $2, g, 0 FROM i, generate_series($6::integer, $7::integer) AS g "
    "RETURNING segment_id, seg_no), "
    "o AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT $1, $2, 'split', $3, 'coordinator' FROM i) "
    "SELECT 0, 0, (SELECT count(*) FROM i) UNION ALL SELECT segment_id, seg_no, 1 FROM n";

static void on_split(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    admin_job *j = arg;
    if (db_failed(c, j, err)) {
        return;
    }
    coord_item *it = j->it;
    if (PQntuples(res) < 1 || strcmp(PQgetvalue(res, 0, 2), "1") != 0) {
        answer(c, j->r, ESC_ECONFLICT, "%s/%s is retired", it->tenant_id, it->item_id);
        coord_db_reload(c);
        free(j);
        return;
    }
    for (int i = 1; i < PQntuples(res); i++) {
        coord_seg *s = coord_cat_add_seg(&c->cat, it, (uint64_t)pg_result_i64_or(res, i, 0, 0),
                                         pg_result_i32_or(res, i, 1, 0));
        if (s != NULL) {
            s->state = WIRE_SEG_ACTIVE;
        }
    }
    it->segments_wanted = j->nsegs;
    it->tail_segment = 0;
    apply_states(it, j->nsegs);
    coord_cat_mark(&c->cat, it, COORD_WORK_PASS);
    coord_cat_changed(&c->cat, it);
    answer(c, j->r, 0, "split %s/%s into %u active segments (%d new)", it->tenant_id, it->item_id,
           j->nsegs, PQntuples(res) - 1);
    free(j);
}

static void split(coord *c, admin_job *j)
{
    coord_item *it = j->it;
    uint32_t have = 0;
    for (size_t i = 0; i < it->nsegs; i++) {
        have += it->segs[i]->state != WIRE_SEG_RETIRED;
    }
    uint32_t add = j->nsegs > have ? j->nsegs - have : 0;
    if (j->nsegs < 1 || j->nsegs > ESC_SEGMENTS_PER_ITEM_MAX ||
        it->nsegs + add > ESC_SEGMENTS_PER_ITEM_MAX) {
        answer(c, j->r, ESC_EINVAL, "split needs 1..%d segments", ESC_SEGMENTS_PER_ITEM_MAX);
        free(j);
        return;
    }
    pg_array ids, sts;
    pg_array_init(&ids);
    pg_array_init(&sts);
    states_text(it, j->nsegs, &ids, &sts);
    char n[16], lo[16], hi[16];
    snprintf(n, sizeof n, "%u", j->nsegs);
    snprintf(lo, sizeof lo, "%d", it->next_seg_no);
    snprintf(hi, sizeof hi, "%d", it->next_seg_no + (int32_t)add - 1);
    const char *v[7] = {it->tenant_id,       it->item_id, n, pg_array_text(&ids),
                        pg_array_text(&sts), lo,          hi};
    (void)push(c, j, sql_split, 7, v, on_split);
    pg_array_fini(&ids);
    pg_array_fini(&sts);
}

/* ---- dispatch --------------------------------------------------------------------- */

/* WIRE_ADMIN_COLLAPSE's answer, from the pass (no COORD-ADMIN line: the
 * pass logged what it did). */
static void collapse_answered(coord *c, int status, const char *msg, void *arg)
{
    coord_admin_req *r = arg;
    coord_metrics_admin(c, r->req.admin_op, status);
    coord_reply(c, &r->hdr, r->req.corr_id, status, msg);
    free(r);
}

/* A global restock's or reduce's answer (coord_gstock.c logged it). */
static void region_answered(coord *c, int status, const char *msg, void *arg)
{
    coord_admin_req *r = arg;
    coord_metrics_admin(c, r->req.admin_op, status);
    coord_reply(c, &r->hdr, r->req.corr_id, status, msg);
    free(r);
}

static void collapse(coord *c, coord_admin_req *r, coord_item *it)
{
    size_t active = 0;
    for (size_t i = 0; i < it->nsegs; i++) {
        active += it->segs[i]->state == WIRE_SEG_ACTIVE;
    }
    if (it->tail_segment != 0 || active < 2) {
        answer(c, r, 0, "%s/%s already sells from one segment", it->tenant_id, it->item_id);
        return;
    }
    int rc = coord_pass_collapse(c, it, collapse_answered, r);
    if (rc != 0) {
        collapse_answered(c, ESC_EUNAVAILABLE,
                          rc == ESC_EBUSY
                              ? "the item is busy or the coordinator is reconciling; retry"
                              : "no active segment is served by a live node; nothing collapsed",
                          r);
    }
}

/* The operations that are one write of the item: restock, reduce, pause,
 * resume, retire, split. */
static void item_write(coord *c, coord_admin_req *r, coord_item *it)
{
    const wire_request *q = &r->req;
    if ((it->global || q->global) &&
        (q->admin_op == WIRE_ADMIN_RESTOCK || q->admin_op == WIRE_ADMIN_REDUCE)) {
        coord_region_admin(c, it, q, region_answered, r); /* coord_gstock.h */
        return;
    }
    admin_job *j = esc_xcalloc(1, sizeof *j);
    j->r = r;
    j->it = it;
    j->qty = q->qty;
    j->nsegs = q->nsegments;
    switch (q->admin_op) {
    case WIRE_ADMIN_RESTOCK:
        restock(c, j);
        return;
    case WIRE_ADMIN_REDUCE:
        reduce(c, j);
        return;
    case WIRE_ADMIN_PAUSE:
        set_state(c, j, COORD_ITEM_PAUSED);
        return;
    case WIRE_ADMIN_RESUME:
        set_state(c, j, COORD_ITEM_ACTIVE);
        return;
    case WIRE_ADMIN_RETIRE:
        set_state(c, j, COORD_ITEM_RETIRED);
        return;
    default: /* WIRE_ADMIN_SPLIT */
        split(c, j);
        return;
    }
}

static void item_op(coord *c, coord_admin_req *r)
{
    const wire_request *q = &r->req;
    coord_item *it = coord_cat_item(&c->cat, q->tenant_id, q->item_id);
    if (it == NULL) {
        if (!r->reloaded) {
            after_reload(c, r);
            return;
        }
        answer(c, r, ESC_EUNKNOWN_ITEM, "unknown item %s/%s", q->tenant_id, q->item_id);
        return;
    }
    if (it->write_busy || it->plan_busy > 0 || c->db.need_reconcile) {
        defer(c, r);
        return;
    }
    if (it->state == COORD_ITEM_RETIRED) {
        if (q->admin_op == WIRE_ADMIN_RETIRE) {
            answer(c, r, 0, "%s/%s is already retired", it->tenant_id, it->item_id);
        } else {
            answer(c, r, ESC_ECONFLICT, "%s/%s is retired", it->tenant_id, it->item_id);
        }
        return;
    }
    if (q->admin_op == WIRE_ADMIN_REBALANCE) {
        int n = coord_pass_run(c, it);
        answer(c, r, 0, "rebalance pass for %s/%s: %d transfers planned", it->tenant_id,
               it->item_id, n < 0 ? 0 : n);
        return;
    }
    if (q->admin_op == WIRE_ADMIN_COLLAPSE) {
        collapse(c, r, it);
        return;
    }
    item_write(c, r, it);
}

static void node_op(coord *c, coord_admin_req *r)
{
    const wire_request *q = &r->req;
    coord_node *n = q->node_id[0] ? coord_cat_node(&c->cat, q->node_id) : NULL;
    if (q->node_id[0] == '\0') {
        answer(c, r, ESC_EINVAL, "drain and undrain need a node id");
        return;
    }
    if (n == NULL) {
        if (!r->reloaded) {
            after_reload(c, r);
            return;
        }
        answer(c, r, ESC_ENOT_FOUND, "unknown node %s", q->node_id);
        return;
    }
    n->drained = q->admin_op == WIRE_ADMIN_DRAIN;
    coord_place_node_write(c, n, true);
    size_t owned = 0;
    for (size_t i = 0; i < c->cat.nsegs; i++) {
        owned += c->cat.segs[i]->owner == n;
    }
    if (n->drained) {
        answer(c, r, 0, "node %s draining: its %zu segments move to other live nodes", n->node_id,
               owned);
    } else {
        answer(c, r, 0, "node %s takes segments again (it owns %zu)", n->node_id, owned);
    }
}

void coord_admin_handle(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    c->n_admin++;
    coord_admin_req *r = esc_xcalloc(1, sizeof *r);
    r->hdr = *hdr;
    r->req = *q;
    r->req.hb = NULL;
    r->deadline_us = esc_mono_us() + (int64_t)COORD_DEFER_MS_MAX * 1000;
    decide(c, r);
}

static void decide(coord *c, coord_admin_req *r)
{
    if (c->stopping) {
        answer(c, r, ESC_ECLOSED, "the coordinator is stopping");
        return;
    }
    const wire_request *q = &r->req;
    switch (q->admin_op) {
    case WIRE_ADMIN_RELOAD:
        if (!r->reloaded) {
            after_reload(c, r);
            return;
        }
        if (!c->db.last_read_ok) {
            answer(c, r, ESC_EUNAVAILABLE, "the catalog could not be read");
            return;
        }
        answer(c, r, 0, "catalog read: %zu items, %zu segments, %zu nodes, %zu open transfers",
               c->cat.nitems, c->cat.nsegs, c->cat.nnodes, c->cat.nxfers);
        return;
    case WIRE_ADMIN_DRAIN:
    case WIRE_ADMIN_UNDRAIN:
        if (!c->loaded) {
            after_reload(c, r);
            return;
        }
        node_op(c, r);
        return;
    case WIRE_ADMIN_RESTOCK:
    case WIRE_ADMIN_REDUCE:
    case WIRE_ADMIN_PAUSE:
    case WIRE_ADMIN_RESUME:
    case WIRE_ADMIN_SPLIT:
    case WIRE_ADMIN_COLLAPSE:
    case WIRE_ADMIN_REBALANCE:
    case WIRE_ADMIN_RETIRE:
        if (!c->loaded) {
            r->reloaded = false;
            after_reload(c, r);
            r->reloaded = false;
            return;
        }
        item_op(c, r);
        return;
    default:
        answer(c, r, ESC_EINVAL, "unknown admin operation %u", q->admin_op);
        return;
    }
}
