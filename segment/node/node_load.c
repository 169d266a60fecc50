/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_load.c - see node_load.h. Nothing here blocks the loop but the
 * static claim at start, before the loop runs.
 */
#include "node_load.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"
#include "node_commit.h"
#include "node_lookup.h"
#include "node_metrics.h"
#include "pg_result.h"
#include "schema_version.h"

/* ---- static mode ------------------------------------------------------------ */

/* A static node checks the schema before it claims anything (the commit
 * connection checks it again, as on every connection). */
static int check_schema(PGconn *conn)
{
    char why[512];
    int db = 0, bin = schema_version_binary();
    if (schema_version_query(conn, &db, why, sizeof why) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-SCHEMA", "%s", why);
        return ESC_EDB;
    }
    schema_verdict v = schema_version_compat(db, bin);
    schema_version_message(v, db, bin, "escrow-segment", why, sizeof why);
    if (!schema_version_runs(v)) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-SCHEMA", "%s", why);
        return ESC_ECONFIG;
    }
    return 0;
}

int node_load_owned(node *n)
{
    PGconn *conn = PQconnectdb(n->cfg.dsn);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-START", "cannot connect to PostgreSQL: %s",
                conn ? PQerrorMessage(conn) : "out of memory");
        PQfinish(conn);
        return ESC_EUNAVAILABLE;
    }
    char why[512] = "";
    int rc = check_schema(conn);
    if (rc != 0) {
        PQfinish(conn);
        return rc;
    }
    rc =
        seg_store_take_ownership(conn, n->cfg.node_id, n->cfg.advertise, &n->core, why, sizeof why);
    PQfinish(conn);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-START", "node=%s cannot take ownership: %s", n->cfg.node_id,
                why);
    }
    return rc;
}

/* ---- managed mode: the assignment -------------------------------------------- */

/* Segments one load reads (a node loads any number, this many at a time). */
#define NODE_LOAD_BATCH 1024

void node_load_init(node *n)
{
    n->load.rows = esc_xcalloc(NODE_LOAD_BATCH, sizeof *n->load.rows);
    pg_array_init(&n->load.ids);
    pg_array_init(&n->load.epochs);
}

void node_load_fini(node *n)
{
    if (n->load.rows != NULL) {
        pg_array_fini(&n->load.ids);
        pg_array_fini(&n->load.epochs);
    }
    free(n->load.rows);
    memset(&n->load, 0, sizeof n->load);
}

const wire_assignment *node_load_assignment(const node *n, uint64_t segment_id)
{
    return hb_assign_find(&n->hb.assign, segment_id);
}

bool node_load_wanted(node *n, const wire_assignment *a)
{
    const seg_segment *s = seg_core_find_segment(&n->core, a->segment_id);
    return s == NULL ||
           (s->fenced && (s->epoch < a->epoch || (s->released && s->epoch == a->epoch)));
}

/* The searches for wanted segments go round the assignment from
 * n->load.from, where the last one found the first: the assignment is
 * sorted by segment id and a placement assigns ascending ids, so the
 * segments already loaded lie behind it, and a search finds the next wanted
 * one at once instead of walking every loaded one first (with 200,000
 * segments, at every reply and every load). Any position is correct: the
 * search goes all the way round. */
static size_t search_start(const node *n)
{
    return n->load.from < n->hb.assign.n ? n->load.from : 0;
}

void node_load_assignment_changed(node *n)
{
    size_t cnt = n->hb.assign.n, start = search_start(n);
    n->load.wanted = false;
    for (size_t k = 0; k < cnt && !n->load.wanted; k++) {
        size_t i = (start + k) % cnt;
        if (node_load_wanted(n, &n->hb.assign.v[i])) {
            n->load.wanted = true;
            n->load.from = i;
        }
    }
    if (n->load.wanted) {
        node_lookup_kick(n);
    }
}

/* ---- managed mode: loading --------------------------------------------------- */

/* A load that failed, or added less than it read, has the next reply walk
 * every segment again (node_assign.c): what it did not load is looked for
 * there. One that added what it read needs no walk: each segment was added
 * at its assignment (add_loaded). */
static void load_finish(node *n, bool walk)
{
    if (walk) {
        n->hb.apply_again = true;
    }
    n->load.busy = false;
    n->load.nrows = 0;
    n->query_busy = false;
    node_lookup_kick(n);
    n->up.progress(n);
}

/* Adds the row's item (fresher than what an earlier load left) and segment
 * at assignment a. Returns 0 or an ESC_E* code after logging. */
static int add_row(node *n, node_load_row *l, const wire_assignment *a)
{
    seg_item *it;
    seg_segment *s;
    if (seg_core_add_item(&n->core, &l->item, &it) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "out of memory adding an item");
        return ESC_ENOMEM;
    }
    it->max_per_order = l->item.max_per_order;
    it->max_per_buyer = l->item.max_per_buyer;
    it->hold_ttl_ms = l->item.hold_ttl_ms;
    it->paused = l->item.paused || a->paused;
    l->seg.state = a->state == WIRE_SEG_DRAINING ? SEG_DRAINING : SEG_ACTIVE;
    int rc = seg_core_add_segment(&n->core, it, &l->seg, &s);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "seg=%" PRIu64 " cannot be added: %s", l->seg.segment_id,
                esc_err_name(rc));
    }
    return rc;
}

/* Adds the loaded rows still assigned at their epoch; returns how many. */
static size_t add_loaded(node *n)
{
    size_t added = 0;
    for (size_t i = 0; i < n->load.nrows; i++) {
        node_load_row *l = &n->load.rows[i];
        const wire_assignment *a = node_load_assignment(n, l->seg.segment_id);
        if (a == NULL || a->epoch != l->seg.epoch || !node_load_wanted(n, a)) {
            continue; /* the assignment moved on while we read */
        }
        added += add_row(n, l, a) == 0;
    }
    return added;
}

static void log_loaded(node *n)
{
    for (size_t i = 0; i < n->load.nrows; i++) {
        const seg_segment *s = seg_core_find_segment(&n->core, n->load.rows[i].seg.segment_id);
        if (s == NULL || s->fenced || s->epoch != n->load.rows[i].seg.epoch) {
            continue;
        }
        n->stats.segments_loaded++;
        node_metrics_segment(n, true);
        ESC_LOG(ESC_LOG_INFO, "SEG-LOADED",
                "seg=%" PRIu64 " item=%s/%s epoch=%" PRIu64 " state=%s available=%" PRId64
                " held=%" PRId64 " sold=%" PRId64,
                s->segment_id, s->item->tenant_id, s->item->item_id, s->epoch,
                s->state == SEG_DRAINING ? "draining" : "active", s->available, s->held, s->sold);
    }
}

/* Should never happen: refuses to serve what does not add up. Drops every
 * segment seg_core_check names, one at a time (it names the first).
 * Returns whether it found any. */
static bool drop_inconsistent(node *n)
{
    uint64_t bad = 0;
    bool found = false;
    while (seg_core_check(&n->core, &bad) == ESC_EINTERNAL && bad != 0) {
        found = true;
        ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "loaded state inconsistent (seg=%" PRIu64 ")", bad);
        seg_segment *s = seg_core_find_segment(&n->core, bad);
        if (s == NULL || s->fenced || node_commit_touches(n, s)) {
            return found;
        }
        node_commit_drop_segment(n, s, ESC_ENOT_OWNER);
        bad = 0;
    }
    return found;
}

static void on_load_holds(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node *n = arg;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-LOAD", "holds: %s", err->message);
        load_finish(n, true);
        return;
    }
    size_t added = add_loaded(n);
    bool walk = added < n->load.asked;
    if (added > 0) {
        char why[256] = "";
        if (seg_store_add_holds(res, &n->core, true, why, sizeof why) != 0) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "loaded state inconsistent (%s)", why);
            walk = true;
        }
        walk = drop_inconsistent(n) || walk;
        log_loaded(n);
    }
    load_finish(n, walk);
}

/* One row of SEG_SQL_LOAD_SEGMENTS. */
static void row_from_result(const PGresult *res, int i, node_load_row *l)
{
    memset(l, 0, sizeof *l);
    l->seg.segment_id = (uint64_t)pg_result_i64_or(res, i, 0, 0);
    snprintf(l->item.tenant_id, sizeof l->item.tenant_id, "%s", PQgetvalue(res, i, 1));
    snprintf(l->item.item_id, sizeof l->item.item_id, "%s", PQgetvalue(res, i, 2));
    l->seg.epoch = (uint64_t)pg_result_i64_or(res, i, 3, 0);
    l->seg.available = pg_result_i64_or(res, i, 4, 0);
    l->seg.held = pg_result_i64_or(res, i, 5, 0);
    l->seg.sold = pg_result_i64_or(res, i, 6, 0);
    seg_store_seq_range((uint64_t)pg_result_i64_or(res, i, 7, 0), &l->seg);
    l->seg.state = seg_store_segment_state(PQgetvalue(res, i, 8));
    l->item.max_per_order = pg_result_i32_or(res, i, 9, 0);
    l->item.max_per_buyer = pg_result_i32_or(res, i, 10, 0);
    l->item.hold_ttl_ms = (uint32_t)pg_result_i64_or(res, i, 11, 0);
    l->item.paused = strcmp(PQgetvalue(res, i, 12), "active") != 0;
}

static void on_load_segments(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    node *n = arg;
    node_loading *ld = &n->load;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-LOAD", "segments: %s", err->message);
        load_finish(n, true);
        return;
    }
    ld->nrows = 0;
    pg_array_reset(&ld->ids);
    for (int i = 0; i < PQntuples(res) && ld->nrows < NODE_LOAD_BATCH; i++) {
        node_load_row *l = &ld->rows[ld->nrows++];
        row_from_result(res, i, l);
        pg_array_i64(&ld->ids, (int64_t)l->seg.segment_id);
    }
    if (ld->nrows == 0) {
        load_finish(n, true); /* not ours at that epoch (any more): the next reply says more */
        return;
    }
    const char *v[1] = {pg_array_text(&ld->ids)};
    if (pgx_query(c, NULL, SEG_SQL_LOAD_HOLDS, 1, v, on_load_holds, n) != 0) {
        load_finish(n, true);
    }
}

bool node_load_next(node *n)
{
    node_loading *ld = &n->load;
    if (!ld->wanted || ld->busy || n->stopping) {
        return false;
    }
    ld->wanted = false;
    size_t k = 0, cnt = n->hb.assign.n, start = search_start(n);
    pg_array_reset(&ld->ids);
    pg_array_reset(&ld->epochs);
    for (size_t j = 0; j < cnt; j++) {
        size_t i = (start + j) % cnt;
        const wire_assignment *a = &n->hb.assign.v[i];
        if (!node_load_wanted(n, a)) {
            continue;
        }
        if (k == NODE_LOAD_BATCH) {
            ld->wanted = true; /* the rest in the next load */
            ld->from = i;
            break;
        }
        pg_array_i64(&ld->ids, (int64_t)a->segment_id);
        pg_array_i64(&ld->epochs, (int64_t)a->epoch);
        k++;
    }
    if (k == 0) {
        return false;
    }
    char range[24];
    snprintf(range, sizeof range, "%llu", (unsigned long long)ESC_HOLD_SEQ_RANGE);
    const char *v[4] = {n->cfg.node_id, pg_array_text(&ld->ids), pg_array_text(&ld->epochs), range};
    if (pgx_query(&n->query_conn, NULL, SEG_SQL_LOAD_SEGMENTS, 4, v, on_load_segments, n) != 0) {
        return false; /* the next reply asks again */
    }
    ld->busy = true;
    ld->asked = k;
    n->query_busy = true;
    return true;
}
