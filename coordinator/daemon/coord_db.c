/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_db.c - see coord_db.h.
 *
 * A read is full (every row) or from the mark (the rows whose cat_xid is at
 * or above the previous read's snapshot xmin, coord_change.h); either
 * applies rows the same way, so a row read twice changes nothing.
 *
 * The catalog read never overwrites what a write in flight is about to
 * change (a segment with an ownership write pending, a transfer being
 * committed), and its transfer part is dropped when a heartbeat changed a
 * transfer while it ran (it would be older than memory). New items are added
 * to the catalog, which tells its watcher (the routing gives them a version).
 */
#include "coord_db.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_failpoint.h"
#include "coord_leader.h"
#include "coord_metrics.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"
#include "schema_version.h"
#include "sqlstate.h"

#define RECONNECT_MS_MIN 100
#define RECONNECT_MS_MAX 2000
#define JOB_PARAMS_MAX 16

typedef struct coord_job {
    struct coord_job *next;
    const char *sql; /* borrowed: static text */
    int nparams;
    char *values[JOB_PARAMS_MAX]; /* owned */
    coord_db_cb cb;
    void *arg;
    bool lease; /* queued with coord_db_push_front: the leader lease's own */
} coord_job;

/* ---- the queue ------------------------------------------------------------ */

static void job_free(coord_job *j)
{
    for (int i = 0; i < j->nparams; i++) {
        free(j->values[i]);
    }
    free(j);
}

static void run_next(coord *c);

static void on_job_done(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg)
{
    (void)pc;
    coord *c = arg;
    coord_db *db = &c->db;
    coord_job *j = db->head;
    ESC_ASSERT(j != NULL && db->running);
    db->head = j->next;
    if (db->head == NULL) {
        db->tail = NULL;
    }
    db->njobs--;
    db->running = false;
    if (err->code != 0 && !c->stopping) {
        ESC_LOG(ESC_LOG_WARN, "COORD-DB", "statement failed: %s%s%s (sqlstate=%s)", err->message,
                err->constraint[0] ? " constraint=" : "", err->constraint, err->sqlstate);
    }
    j->cb(c, res, err, j->arg);
    job_free(j);
    if (err->code != 0 && sqlstate_is(err->sqlstate, SQLSTATE_ESC_NOT_LEADER)) {
        coord_leader_refused(c, err->message);
    }
    run_next(c);
}

static void run_next(coord *c)
{
    coord_db *db = &c->db;
    if (db->running || db->head == NULL || !db->schema_ok || !pgx_ready(&db->conn)) {
        return;
    }
    coord_job *j = db->head;
    /* a leader whose lease ran out by its clock sends nothing but the lease's
     * statements until a renewal succeeded, a deposed one nothing at all
     * (coord_leader.h) */
    if (c->lead.deposed || (!j->lease && coord_leader_leads(c) && !coord_leader_serving(c))) {
        return;
    }
    int rc = pgx_query(&db->conn, NULL, j->sql, j->nparams, (const char *const *)j->values,
                       on_job_done, c);
    if (rc == 0) {
        db->running = true;
    }
}

static coord_job *job_new(const char *sql, int nparams, const char *const *values, coord_db_cb cb,
                          void *arg)
{
    ESC_ASSERT(nparams <= JOB_PARAMS_MAX);
    coord_job *j = esc_xcalloc(1, sizeof *j);
    j->sql = sql;
    j->nparams = nparams;
    for (int i = 0; i < nparams; i++) {
        j->values[i] = values[i] ? esc_xstrdup(values[i]) : NULL;
    }
    j->cb = cb;
    j->arg = arg;
    return j;
}

int coord_db_push(coord *c, const char *sql, int nparams, const char *const *values, coord_db_cb cb,
                  void *arg)
{
    coord_db *db = &c->db;
    if (db->njobs >= COORD_JOBS_MAX || c->stopping) {
        return ESC_EBUSY;
    }
    coord_job *j = job_new(sql, nparams, values, cb, arg);
    if (db->tail != NULL) {
        db->tail->next = j;
    } else {
        db->head = j;
    }
    db->tail = j;
    db->njobs++;
    run_next(c);
    return 0;
}

int coord_db_push_front(coord *c, const char *sql, int nparams, const char *const *values,
                        coord_db_cb cb, void *arg)
{
    coord_db *db = &c->db;
    if (c->stopping) {
        return ESC_EBUSY;
    }
    coord_job *j = job_new(sql, nparams, values, cb, arg);
    j->lease = true;
    coord_job **at = db->running ? &db->head->next : &db->head;
    j->next = *at;
    *at = j;
    if (j->next == NULL) {
        db->tail = j;
    }
    db->njobs++;
    run_next(c);
    return 0;
}

void coord_db_unknown(coord *c)
{
    c->db.need_reconcile = true;
    c->db.unknown_count++;
    coord_db_reload(c);
}

static void on_reconnect_timer(uv_timer_t *t)
{
    coord *c = t->data;
    pgx_reconnect(&c->db.conn);
}

/* The schema check's answer (schema_version.h): run the queue, or refuse
 * the schema and stop (exit status 1). */
static void on_schema(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg)
{
    (void)pc;
    coord *c = arg;
    int db = 0, bin = schema_version_binary();
    char msg[512];
    if (c->stopping) {
        return;
    }
    if (schema_version_read(err->code == 0 ? res : NULL, err->sqlstate, &db) != 0) {
        if (err->conn_lost) {
            return; /* the state callback reconnects, and the check runs again */
        }
        snprintf(msg, sizeof msg, "cannot read the schema version: %s", err->message);
    } else {
        schema_verdict v = schema_version_compat(db, bin);
        schema_version_message(v, db, bin, "escrow-coordinator", msg, sizeof msg);
        if (schema_version_runs(v)) {
            if (v == SCHEMA_NEXT && !c->db.schema_noted) {
                ESC_LOG(ESC_LOG_WARN, "COORD-SCHEMA", "%s", msg);
                c->db.schema_noted = true;
            }
            c->db.schema_ok = true;
            coord_leader_session(c); /* the session's epoch, before anything else */
            run_next(c);
            return;
        }
    }
    ESC_LOG(ESC_LOG_ERROR, "COORD-SCHEMA", "%s", msg);
    c->db.refused_cb(c);
}

static void on_db_state(pgx_conn *pc, bool up, void *arg)
{
    (void)pc;
    coord *c = arg;
    coord_db *db = &c->db;
    coord_metrics_db(c, "coord", up);
    if (c->stopping) {
        return;
    }
    if (!up) {
        db->reconnect_ms = db->reconnect_ms ? db->reconnect_ms * 2 : RECONNECT_MS_MIN;
        if (db->reconnect_ms > RECONNECT_MS_MAX) {
            db->reconnect_ms = RECONNECT_MS_MAX;
        }
        (void)uv_timer_start(&db->reconnect_timer, on_reconnect_timer, db->reconnect_ms, 0);
        return;
    }
    db->reconnect_ms = 0;
    /* every connection checks the schema before the first statement */
    db->schema_ok = false;
    if (pgx_query(&db->conn, NULL, SCHEMA_VERSION_SQL, 0, NULL, on_schema, c) != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-SCHEMA", "cannot send the schema check; reconnecting");
        pgx_drop(&db->conn);
    }
}

/* A statement of the coordinator's connection with no answer after this long
 * is given up like one whose connection was lost (pgx.h): the leader lease
 * is renewed on this connection, so a primary that hangs without closing
 * its connections (a stopped process, a frozen machine) must not keep the
 * coordinator from serving for longer than this, nor the default 60 s. Its
 * statements take milliseconds; a whole read of 400,000 segments ~0.15 s. */
#define COORD_DB_QUERY_TIMEOUT_MS 10000

int coord_db_open(coord *c, coord_db_reload_cb reload_cb, coord_db_refused_cb refused_cb)
{
    coord_db *db = &c->db;
    db->reload_cb = reload_cb;
    db->refused_cb = refused_cb;
    if (uv_timer_init(c->loop, &db->reconnect_timer) != 0) {
        return ESC_EIO;
    }
    c->handles_open++;
    db->reconnect_timer.data = c;
    int rc = pgx_open(c->loop, &db->conn, c->cfg.dsn, "coord", NULL, NULL, 0, on_db_state, c);
    ESC_ASSERT(rc == 0 || rc == ESC_ENOMEM);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-DB", "out of memory");
        abort();
    }
    pgx_set_query_timeout(&db->conn, COORD_DB_QUERY_TIMEOUT_MS);
    return 0;
}

static void on_db_closed(uv_handle_t *h)
{
    coord *c = ((pgx_conn *)h->data)->state_arg;
    c->handles_open--;
}

static void on_timer_closed(uv_handle_t *h)
{
    coord *c = h->data;
    c->handles_open--;
}

void coord_db_close(coord *c)
{
    coord_db *db = &c->db;
    if (db->reconnect_timer.loop != NULL && !uv_is_closing((uv_handle_t *)&db->reconnect_timer)) {
        uv_close((uv_handle_t *)&db->reconnect_timer,
                 on_timer_closed); /* coord_db_open inited it */
    }
    db->conn.state_arg = c;
    c->handles_open++;
    if (!pgx_close(&db->conn, on_db_closed)) {
        c->handles_open--;
    }
    /* statements never sent are dropped: their callbacks learn it */
    while (db->head != NULL) {
        coord_job *j = db->head;
        db->head = j->next;
        pgx_err err;
        memset(&err, 0, sizeof err);
        err.code = ESC_ECLOSED;
        snprintf(err.message, sizeof err.message, "coordinator stopping");
        j->cb(c, NULL, &err, j->arg);
        job_free(j);
    }
    db->tail = NULL;
    db->njobs = 0;
}

/* ---- the catalog read ------------------------------------------------------ */

#define TAG "/* escrow:coord-catalog */ "

/* The first statement of every read: its snapshot's xmin (coord_change.h);
 * the statements after it take later snapshots, whose missing transactions
 * all have ids >= this one. */
static const char sql_xmin[] = TAG "SELECT pg_snapshot_xmin(pg_current_snapshot())::text";
/* The poll's first statement: the xmin, and whether any row changed since
 * the mark ($1). */
static const char sql_probe[] =
    TAG "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, "
        "EXISTS (SELECT 1 FROM items WHERE cat_xid >= $1::xid8) "
        "OR EXISTS (SELECT 1 FROM segments WHERE cat_xid >= $1::xid8) "
        "OR EXISTS (SELECT 1 FROM transfers WHERE cat_xid >= $1::xid8) "
        "OR EXISTS (SELECT 1 FROM global_items WHERE cat_xid >= $1::xid8) "
        "OR EXISTS (SELECT 1 FROM nodes WHERE cat_xid >= $1::xid8)";

#define ITEM_COLS                                                                                  \
    "i.tenant_id, i.item_id, i.total, i.unallocated, i.reduce_pending, i.state, "                 \
    "i.segments_wanted, COALESCE(i.tail_segment, 0), g.global_total, "                            \
    "GREATEST(i.cat_xid, g.cat_xid)::text"
static const char sql_items_full[] =
    TAG "SELECT " ITEM_COLS " FROM items i LEFT JOIN global_items g USING (tenant_id, item_id)";
/* An item whose global_items row changed is read too (global_total). */
static const char sql_items_since[] =
    TAG "SELECT " ITEM_COLS " FROM items i LEFT JOIN global_items g USING (tenant_id, item_id) "
        "WHERE i.cat_xid >= $1::xid8 UNION SELECT " ITEM_COLS
        " FROM global_items g JOIN items i USING (tenant_id, item_id) WHERE g.cat_xid >= $1::xid8";
static const char sql_nodes[] =
    TAG "SELECT node_id, endpoint, incarnation, state, cat_xid::text FROM nodes "
        "WHERE cat_xid >= $1::xid8";
static const char sql_segments[] =
    TAG "SELECT segment_id, tenant_id, item_id, seg_no, COALESCE(node_id, ''), epoch, "
        "available, held, sold, state, cat_xid::text FROM segments WHERE cat_xid >= $1::xid8 "
        "AND state <> 'retired' AND region = 'local' ORDER BY segment_id";
#define XFER_COLS                                                                                  \
    "transfer_id, tenant_id, item_id, COALESCE(from_segment, 0), COALESCE(to_segment, 0), qty, "   \
    "state, cat_xid::text"
static const char sql_transfers_full[] =
    TAG "SELECT " XFER_COLS " FROM transfers WHERE state IN ('planned', 'sent') "
        "AND from_region = 'local' AND to_region = 'local' ORDER BY transfer_id";
/* Closed ones too: memory drops them. */
static const char sql_transfers_since[] =
    TAG "SELECT " XFER_COLS " FROM transfers WHERE cat_xid >= $1::xid8 "
        "AND from_region = 'local' AND to_region = 'local' ORDER BY transfer_id";

typedef struct reload_run {
    uint64_t xfer_changes; /* c->db.xfer_changes when the read was queued */
    uint32_t gen;
    uint64_t unknown_count; /* c->db.unknown_count when the read was queued */
    bool failed;
    coord_change_run ch; /* its mark's bookkeeping (coord_change.h) */
    char since[24];      /* ch.since as text: the reads' $1 */
} reload_run;

static uint32_t g_reload_gen;

/* Every cell the read turns into a number is NOT NULL or COALESCEd. */
static int64_t i64(const PGresult *r, int row, int col)
{
    return pg_result_i64_or(r, row, col, 0);
}

/* A row not applied: the next read fetches it again. */
static void keep_row(reload_run *run, const PGresult *r, int row, int col)
{
    uint64_t x = 0;
    if (coord_change_parse_xid(PQgetvalue(r, row, col), &x) != 0) {
        run->ch.incomplete = true;
        return;
    }
    coord_change_keep(&run->ch, x);
}

/* A row whose item is not in memory: its item was committed after the items
 * were read, and the next read brings both; unless the catalog is full
 * (merge_items ignores the items beyond COORD_ITEMS_MAX), when it would
 * never be applied and keeping it would hold the mark back for good. */
static void keep_item_row(coord *c, reload_run *run, const PGresult *r, int row, int col)
{
    if (c->cat.nitems < COORD_ITEMS_MAX) {
        keep_row(run, r, row, col);
    }
}

static void count_rows(coord *c, const reload_run *run, const PGresult *res)
{
    coord_metrics_catalog_rows(c, run->ch.full ? "full" : "changes", (uint64_t)PQntuples(res));
}

static int item_state(const char *s)
{
    return strcmp(s, "active") == 0   ? COORD_ITEM_ACTIVE
           : strcmp(s, "paused") == 0 ? COORD_ITEM_PAUSED
                                      : COORD_ITEM_RETIRED;
}

static int seg_state(const char *s)
{
    return strcmp(s, "active") == 0     ? WIRE_SEG_ACTIVE
           : strcmp(s, "draining") == 0 ? WIRE_SEG_DRAINING
                                        : WIRE_SEG_RETIRED;
}

static int node_state(const char *s)
{
    return strcmp(s, "up") == 0         ? COORD_NODE_UP
           : strcmp(s, "draining") == 0 ? COORD_NODE_DRAINING
                                        : COORD_NODE_DOWN;
}

static void on_xmin(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    reload_run *run = arg;
    uint64_t x = 0;
    if (err->code != 0 || PQntuples(res) != 1 ||
        coord_change_parse_xid(PQgetvalue(res, 0, 0), &x) != 0) {
        run->failed = true;
        return;
    }
    coord_change_xmin(&run->ch, x);
}

static void merge_items(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    reload_run *run = arg;
    if (err->code != 0) {
        run->failed = true;
        return;
    }
    count_rows(c, run, res);
    for (int i = 0; i < PQntuples(res); i++) {
        const char *tenant = PQgetvalue(res, i, 0), *item = PQgetvalue(res, i, 1);
        coord_item *it = coord_cat_item(&c->cat, tenant, item);
        if (it == NULL && (it = coord_cat_add_item(&c->cat, tenant, item)) == NULL) {
            ESC_LOG(ESC_LOG_WARN, "COORD-CATALOG", "more than %d items; ignoring the rest",
                    COORD_ITEMS_MAX);
            return;
        }
        if (it->write_busy) {
            keep_row(run, res, i, 9);
            continue; /* the write in flight carries the newer values */
        }
        coord_item was = *it;
        it->total = i64(res, i, 2);
        it->unallocated = i64(res, i, 3);
        it->reduce_pending = i64(res, i, 4);
        it->state = item_state(PQgetvalue(res, i, 5));
        it->segments_wanted = (uint32_t)i64(res, i, 6);
        it->tail_segment = (uint64_t)i64(res, i, 7);
        it->global = !PQgetisnull(res, i, 8);
        it->global_total = i64(res, i, 8);
        if (was.total != it->total || was.unallocated != it->unallocated ||
            was.reduce_pending != it->reduce_pending || was.state != it->state ||
            was.segments_wanted != it->segments_wanted || was.tail_segment != it->tail_segment ||
            was.global != it->global || was.global_total != it->global_total) {
            coord_cat_touch(&c->cat, it);
        }
    }
}

static void merge_nodes(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    reload_run *run = arg;
    if (err->code != 0) {
        run->failed = true;
        return;
    }
    count_rows(c, run, res);
    int64_t now = esc_mono_us();
    for (int i = 0; i < PQntuples(res); i++) {
        coord_node *n = coord_cat_node(&c->cat, PQgetvalue(res, i, 0));
        int st = node_state(PQgetvalue(res, i, 3));
        if (n == NULL) {
            n = coord_cat_add_node(&c->cat, PQgetvalue(res, i, 0));
            if (n == NULL) {
                return;
            }
            /* a node the coordinator has not heard from gets one lease of
             * grace: it may be serving right now */
            n->alive = st != COORD_NODE_DOWN;
            n->last_hb_us = now;
            n->drained = st == COORD_NODE_DRAINING;
            snprintf(n->endpoint, sizeof n->endpoint, "%s", PQgetvalue(res, i, 1));
        }
        if (n->write_busy) {
            /* the write in flight sets what memory keeps of the row (only
             * this coordinator writes a known node's row): when it commits
             * a change of endpoint, incarnation or state, the row's cat_xid
             * moves and the next read fetches it; when it fails memory
             * keeps what it had, which is the row. Keeping the row would
             * hold the mark back while the writes queue behind others (a
             * large placement): every read would fetch every row changed
             * since the node registered, the whole catalog. */
            continue;
        }
        n->db_state = st;
        n->db_incarnation = (uint64_t)i64(res, i, 2);
        if (!n->seen) {
            n->incarnation = n->db_incarnation;
        }
    }
}

static void merge_one_seg(coord *c, PGresult *res, int i, reload_run *run)
{
    uint64_t id = (uint64_t)i64(res, i, 0);
    coord_seg *s = coord_cat_seg(&c->cat, id);
    if (s == NULL) {
        coord_item *it = coord_cat_item(&c->cat, PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
        if (it == NULL) {
            keep_item_row(c, run, res, i, 10);
            return;
        }
        if ((s = coord_cat_add_seg(&c->cat, it, id, pg_result_i32_or(res, i, 3, 0))) == NULL) {
            return;
        }
    }
    coord_cat_set_db_counts(&c->cat, s, i64(res, i, 6), i64(res, i, 7), i64(res, i, 8));
    if (s->pending || s->item->write_busy) {
        /* a write in flight will set owner, epoch or state. An ownership
         * write (s->pending) that commits moves the row's cat_xid, so the
         * next read fetches it; one that changed no row reads the whole
         * catalog (coord_place.c). Keeping the row for those would hold the
         * mark back for as long as placement runs. */
        if (!s->pending) {
            keep_row(run, res, i, 10);
        }
        return;
    }
    const char *node_id = PQgetvalue(res, i, 4);
    coord_node *owner = node_id[0] ? coord_cat_node(&c->cat, node_id) : NULL;
    uint64_t epoch = (uint64_t)i64(res, i, 5);
    int state = seg_state(PQgetvalue(res, i, 9));
    if (owner != s->owner || epoch != s->epoch || state != s->state) {
        coord_cat_touch(&c->cat, s->item);
    }
    if (owner != s->owner || epoch != s->epoch) {
        s->revoked = owner != NULL && !owner->alive;
        coord_cat_set_owner(s, owner);
        s->epoch = epoch;
    }
    s->state = state;
}

static void merge_segments(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    reload_run *run = arg;
    if (err->code != 0) {
        run->failed = true;
        return;
    }
    count_rows(c, run, res);
    for (int i = 0; i < PQntuples(res); i++) {
        merge_one_seg(c, res, i, run);
    }
}

/* An open transfer's row (planned or sent) into memory. */
static void merge_one_xfer(coord *c, PGresult *res, int i, reload_run *run)
{
    uint64_t id = (uint64_t)i64(res, i, 0);
    int state = strcmp(PQgetvalue(res, i, 6), "sent") == 0 ? COORD_XF_SENT : COORD_XF_PLANNED;
    coord_xfer *x = coord_cat_xfer(&c->cat, id);
    if (x == NULL) {
        coord_item *it = coord_cat_item(&c->cat, PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
        if (it == NULL) {
            keep_item_row(c, run, res, i, 7);
            return;
        }
        x = coord_cat_add_xfer(&c->cat, it, id, (uint64_t)i64(res, i, 3), (uint64_t)i64(res, i, 4),
                               i64(res, i, 5), state);
        if (x == NULL) {
            return;
        }
        x->gen = run->gen;
        if (state == COORD_XF_SENT) {
            coord_failpoint_xfer_sent(x);
        }
        return;
    }
    x->gen = run->gen;
    if (x->busy) {
        keep_row(run, res, i, 7);
        return;
    }
    bool became_sent = x->state == COORD_XF_PLANNED && state == COORD_XF_SENT;
    x->state = state;
    x->qty = i64(res, i, 5);
    if (became_sent) {
        coord_failpoint_xfer_sent(x);
    }
}

/* Memory follows the transfers just read: open in memory but closed in the
 * database is dropped; every segment's open transfer is set from them. */
static void adopt_transfers(coord *c, PGresult *res, reload_run *run)
{
    for (int i = 0; i < PQntuples(res); i++) {
        merge_one_xfer(c, res, i, run);
    }
    for (size_t i = 0; i < c->cat.nxfers;) {
        coord_xfer *x = c->cat.xfers[i];
        if (x->gen != run->gen && !x->busy) {
            coord_cat_drop_xfer(&c->cat, x);
            continue;
        }
        i++;
    }
    for (size_t i = 0; i < c->cat.nsegs; i++) {
        if (c->cat.segs[i]->xfer_id != COORD_XFER_INSERTING) {
            c->cat.segs[i]->xfer_id = 0;
        }
    }
    for (size_t i = 0; i < c->cat.nxfers; i++) {
        coord_xfer *x = c->cat.xfers[i];
        coord_seg *f = x->from ? coord_cat_seg(&c->cat, x->from) : NULL;
        coord_seg *t = x->to ? coord_cat_seg(&c->cat, x->to) : NULL;
        if (f != NULL) {
            f->xfer_id = x->transfer_id;
        }
        if (t != NULL) {
            t->xfer_id = x->transfer_id;
        }
    }
}

/* The transfers changed since the mark: open ones are merged (and set on
 * their segments), closed ones dropped from memory. */
static void apply_transfer_changes(coord *c, PGresult *res, reload_run *run)
{
    for (int i = 0; i < PQntuples(res); i++) {
        const char *st = PQgetvalue(res, i, 6);
        if (strcmp(st, "planned") == 0 || strcmp(st, "sent") == 0) {
            merge_one_xfer(c, res, i, run);
            coord_xfer *x = coord_cat_xfer(&c->cat, (uint64_t)i64(res, i, 0));
            coord_seg *f = x && x->from ? coord_cat_seg(&c->cat, x->from) : NULL;
            coord_seg *t = x && x->to ? coord_cat_seg(&c->cat, x->to) : NULL;
            if (f != NULL) {
                f->xfer_id = x->transfer_id;
            }
            if (t != NULL) {
                t->xfer_id = x->transfer_id;
            }
            continue;
        }
        coord_xfer *x = coord_cat_xfer(&c->cat, (uint64_t)i64(res, i, 0));
        if (x == NULL) {
            continue;
        }
        if (x->busy) {
            keep_row(run, res, i, 7);
            continue;
        }
        coord_cat_drop_xfer(&c->cat, x); /* clears its segments' xfer_id */
    }
}

static void start_read(coord *c, bool full);

/* The read is over: its mark, its bookkeeping, the owner's callback, then
 * the read that was asked for meanwhile. */
static void reload_finished(coord *c, reload_run *run, bool ok)
{
    coord_db *db = &c->db;
    bool full = run->ch.full;
    coord_change_finish(&db->change, &run->ch, ok);
    free(run);
    db->reload_running = false;
    if (full) {
        db->reads_done++;
        db->last_read_ok = ok;
    }
    db->reload_cb(c, ok);
    if (db->reload_again) {
        db->reload_again = false;
        db->refresh_again = false;
        start_read(c, true);
    } else if (db->refresh_again) {
        db->refresh_again = false;
        start_read(c, false);
    }
}

static void merge_transfers(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    reload_run *run = arg;
    bool ok = err->code == 0 && !run->failed;
    if (err->code == 0) {
        count_rows(c, run, res);
    }
    if (ok && run->xfer_changes == c->db.xfer_changes) {
        if (run->ch.full) {
            adopt_transfers(c, res, run);
        } else {
            apply_transfer_changes(c, res, run);
        }
    } else if (ok) {
        /* a heartbeat moved a transfer meanwhile: read again, from here */
        run->ch.incomplete = true;
        if (run->ch.full) {
            c->db.reload_again = true;
        } else {
            c->db.refresh_again = true;
        }
    }
    if (ok && run->ch.full && run->unknown_count == c->db.unknown_count) {
        c->db.need_reconcile = false; /* read after every write of unknown outcome */
    }
    reload_finished(c, run, ok);
}

/* Queues the four reads after the statement that read the xmin. */
static void push_reads(coord *c, reload_run *run)
{
    const char *since[1] = {run->since};
    bool full = run->ch.full;
    (void)coord_db_push(c, full ? sql_items_full : sql_items_since, full ? 0 : 1, since,
                        merge_items, run);
    (void)coord_db_push(c, sql_nodes, 1, since, merge_nodes, run);
    (void)coord_db_push(c, sql_segments, 1, since, merge_segments, run);
    (void)coord_db_push(c, full ? sql_transfers_full : sql_transfers_since, full ? 0 : 1, since,
                        merge_transfers, run);
}

/* The poll's probe answered: nothing changed since the mark (the mark
 * moves to the probe's xmin), or read what changed. */
static void on_probe(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    reload_run *run = arg;
    uint64_t x = 0;
    if (err->code != 0 || PQntuples(res) != 1 ||
        coord_change_parse_xid(PQgetvalue(res, 0, 0), &x) != 0) {
        c->db.reload_again = true; /* cannot tell: read everything */
        reload_finished(c, run, false);
        return;
    }
    coord_change_xmin(&run->ch, x);
    bool changed = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    coord_metrics_catalog_poll(c, changed ? "changes" : "skipped");
    if (!changed) {
        reload_finished(c, run, true);
        return;
    }
    run->xfer_changes = c->db.xfer_changes;
    run->unknown_count = c->db.unknown_count;
    if (c->db.njobs + 4 > COORD_JOBS_MAX || c->stopping) {
        c->db.refresh_again = !c->stopping;
        reload_finished(c, run, false);
        return;
    }
    push_reads(c, run);
}

static void start_read(coord *c, bool full)
{
    coord_db *db = &c->db;
    if (c->stopping) {
        return;
    }
    if (db->reload_running) {
        if (full) {
            db->reload_again = true;
        } else {
            db->refresh_again = true;
        }
        return;
    }
    reload_run *run = esc_xcalloc(1, sizeof *run);
    coord_change_begin(&db->change, &run->ch, full);
    full = run->ch.full;
    snprintf(run->since, sizeof run->since, "%" PRIu64, run->ch.since);
    run->xfer_changes = db->xfer_changes;
    run->unknown_count = db->unknown_count;
    run->gen = ++g_reload_gen;
    if (db->njobs + 5 > COORD_JOBS_MAX) {
        free(run);
        if (full) {
            db->reload_again = true;
        } else {
            db->refresh_again = true;
        }
        return;
    }
    db->reload_running = true;
    if (full) {
        db->reads_started++;
        db->last_full_us = esc_mono_us();
        coord_metrics_catalog_poll(c, "full");
        (void)coord_db_push(c, sql_xmin, 0, NULL, on_xmin, run);
        push_reads(c, run);
        return;
    }
    const char *since[1] = {run->since};
    (void)coord_db_push(c, sql_probe, 1, since, on_probe, run);
}

void coord_db_reload(coord *c)
{
    start_read(c, true);
}

/* ---- the poll ---------------------------------------------------------------- */

void coord_db_poll(coord *c)
{
    coord_db *db = &c->db;
    if (c->stopping || db->reload_running) {
        return;
    }
    int64_t full_us = (int64_t)COORD_DB_FULL_READ_MS * 1000;
    if ((int64_t)c->cfg.catalog_poll_ms * 1000 > full_us) {
        full_us = (int64_t)c->cfg.catalog_poll_ms * 1000;
    }
    /* a failed full read, or a write of unknown outcome, is read in full at
     * the next poll */
    bool full = !db->last_read_ok || db->need_reconcile ||
                coord_change_full_due(&db->change, esc_mono_us() - db->last_full_us, full_us);
    start_read(c, full);
}
