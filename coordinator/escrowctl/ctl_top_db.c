/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_db.c - see ctl_top_db.h.
 *
 * Four statements in one read-only REPEATABLE READ transaction: the count of
 * matches (with the database's clock), the page of items (with their open
 * transfers), the page's segments (the same page, so the same items), the
 * nodes. The first three carry the filter's condition (ctl_top_filter.h). Items and segments come
 * ordered by tenant and item and are merged in one pass; an item's available, held and sold are its
 * segments' sums.
 */
#include "ctl_top_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-top */ "
/* A statement's text: the page CTE (the filter's condition at most
 * CTL_TOP_WHERE_MAX bytes) and the longest body. */
#define SQL_MAX 4096

/* The page of the matching items (ctl_top_filter_where's condition, then
 * the offset and limit as the next two parameters). */
#define PAGE_HEAD                                                                                  \
    "WITH p AS (SELECT i.tenant_id, i.item_id, i.state, i.total, i.unallocated, i.tail_segment, "  \
    "i.segments_wanted FROM items i WHERE "
#define PAGE_TAIL "ORDER BY i.tenant_id, i.item_id OFFSET $%d::bigint LIMIT $%d::integer) "

static const char sql_count_head[] =
    TAG "SELECT count(*), (extract(epoch FROM now()) * 1000)::bigint FROM items i WHERE ";

static const char sql_items[] =
    "SELECT p.tenant_id, p.item_id, p.state, p.total, p.unallocated, "
    "COALESCE(p.tail_segment, 0), p.segments_wanted, x.open, x.in_flight FROM p "
    "CROSS JOIN LATERAL (SELECT count(*) AS open, "
    "COALESCE(sum(t.qty) FILTER (WHERE t.state = 'sent'), 0) AS in_flight "
    "FROM transfers t WHERE t.state IN ('planned', 'sent') "
    "AND t.tenant_id = p.tenant_id AND t.item_id = p.item_id) x "
    "ORDER BY p.tenant_id, p.item_id";
enum {
    I_TENANT,
    I_ITEM,
    I_STATE,
    I_TOTAL,
    I_UNALLOC,
    I_TAIL,
    I_WANTED,
    I_XOPEN,
    I_FLIGHT,
    I_COLS_
};

/* The region: the database's own (region_self, once a region's
 * coordinator claimed it), else the segment row's. The owner is down when
 * marked so or when its lease ran out (leases exist under a coordinator). */
static const char sql_segments[] =
    "SELECT s.tenant_id, s.item_id, s.segment_id, s.seg_no, "
    "COALESCE((SELECT r.region FROM region_self r), s.region), "
    "COALESCE(s.node_id, ''), s.epoch, s.state, s.available, s.held, s.sold, "
    "COALESCE(n.state = 'down' OR (n.lease_until IS NOT NULL AND n.lease_until < now()), "
    "false), x.open, x.sending, x.receiving, p.tail_segment IS NOT DISTINCT FROM "
    "s.segment_id "
    "FROM segments s JOIN p USING (tenant_id, item_id) "
    "LEFT JOIN nodes n ON n.node_id = s.node_id "
    "CROSS JOIN LATERAL (SELECT count(*) AS open, "
    "COALESCE(sum(t.qty) FILTER (WHERE t.state = 'sent' "
    "AND t.from_segment = s.segment_id), 0) AS sending, "
    "COALESCE(sum(t.qty) FILTER (WHERE t.state = 'sent' "
    "AND t.to_segment = s.segment_id), 0) AS receiving "
    "FROM transfers t WHERE t.state IN ('planned', 'sent') "
    "AND (t.from_segment = s.segment_id OR t.to_segment = s.segment_id)) x "
    "ORDER BY s.tenant_id, s.item_id, s.region, s.seg_no";
enum {
    S_TENANT,
    S_ITEM,
    S_ID,
    S_NO,
    S_REGION,
    S_NODE,
    S_EPOCH,
    S_STATE,
    S_AVAIL,
    S_HELD,
    S_SOLD,
    S_DOWN,
    S_XOPEN,
    S_XOUT,
    S_XIN,
    S_TAIL,
    S_COLS_
};

static const char sql_nodes[] =
    TAG "SELECT node_id, endpoint, "
        "(state = 'down' OR (lease_until IS NOT NULL AND lease_until < now())) "
        "FROM nodes ORDER BY node_id LIMIT $1::integer";

/* Copies a text cell; a cell too long for dst is a schema mismatch. */
static int text(const PGresult *res, int row, int col, char *dst, size_t cap)
{
    if (pg_result_text_copy(res, row, col, dst, cap) != 0) {
        fprintf(stderr, "escrowctl: database error: column %s is longer than expected\n",
                PQfname(res, col));
        return ESC_EDB;
    }
    return 0;
}

/* Strict integers of columns first..last of a row into out[]. */
static int ints(const PGresult *res, int row, int first, int last, int64_t *out[])
{
    int rc = 0;
    for (int c = first; c <= last && rc == 0; c++) {
        rc = ctl_db_i64(res, row, c, out[c - first]);
    }
    return rc;
}

static int read_item(const PGresult *res, int r, ctl_top_item *it)
{
    int64_t *nums[] = {&it->total,           &it->unallocated, &it->tail_segment,
                       &it->segments_wanted, &it->xfers_open,  &it->in_flight};
    int rc = text(res, r, I_TENANT, it->tenant, sizeof it->tenant);
    rc = rc != 0 ? rc : text(res, r, I_ITEM, it->item, sizeof it->item);
    rc = rc != 0 ? rc : text(res, r, I_STATE, it->state, sizeof it->state);
    return rc != 0 ? rc : ints(res, r, I_TOTAL, I_FLIGHT, nums);
}

static int read_seg(const PGresult *res, int r, ctl_top_seg *g)
{
    int64_t *nums[] = {&g->available, &g->held, &g->sold};
    int64_t *xfers[] = {&g->xfers_open, &g->in_flight_out, &g->in_flight_in};
    int rc = ctl_db_i64(res, r, S_ID, &g->segment_id);
    rc = rc != 0 ? rc : ctl_db_i64(res, r, S_NO, &g->seg_no);
    rc = rc != 0 ? rc : text(res, r, S_REGION, g->region, sizeof g->region);
    rc = rc != 0 ? rc : text(res, r, S_NODE, g->node, sizeof g->node);
    rc = rc != 0 ? rc : ctl_db_i64(res, r, S_EPOCH, &g->epoch);
    rc = rc != 0 ? rc : text(res, r, S_STATE, g->state, sizeof g->state);
    rc = rc != 0 ? rc : ints(res, r, S_AVAIL, S_SOLD, nums);
    rc = rc != 0 ? rc : ints(res, r, S_XOPEN, S_XIN, xfers);
    g->node_down = pg_result_true(res, r, S_DOWN);
    g->tail = pg_result_true(res, r, S_TAIL);
    g->hold_rate = CTL_TOP_RATE_NONE;
    g->reject_rate = CTL_TOP_RATE_NONE;
    return rc;
}

static bool same_item(const PGresult *items, int i, const PGresult *segs, int s)
{
    return strcmp(PQgetvalue(items, i, I_TENANT), PQgetvalue(segs, s, S_TENANT)) == 0 &&
           strcmp(PQgetvalue(items, i, I_ITEM), PQgetvalue(segs, s, S_ITEM)) == 0;
}

/* Items and their segments, merged in order; the item's sums. */
static int read_page(const PGresult *items, const PGresult *segs, ctl_top_snap *out)
{
    size_t ni = (size_t)PQntuples(items), ns = (size_t)PQntuples(segs);
    out->items = calloc(ni > 0 ? ni : 1, sizeof *out->items);
    out->segs = calloc(ns > 0 ? ns : 1, sizeof *out->segs);
    if (out->items == NULL || out->segs == NULL) {
        return ESC_ENOMEM;
    }
    int s = 0;
    for (int i = 0; i < (int)ni; i++) {
        ctl_top_item *it = &out->items[out->nitems++];
        int rc = read_item(items, i, it);
        it->seg_first = out->nsegs;
        for (; rc == 0 && s < (int)ns && same_item(items, i, segs, s); s++) {
            ctl_top_seg *g = &out->segs[out->nsegs++];
            rc = read_seg(segs, s, g);
            it->nsegs++;
            it->available += g->available;
            it->held += g->held;
            it->sold += g->sold;
            it->segments_active += strcmp(g->state, "active") == 0 ? 1 : 0;
        }
        if (rc != 0) {
            return rc;
        }
        it->hold_rate = CTL_TOP_RATE_NONE;
        it->reject_rate = CTL_TOP_RATE_NONE;
    }
    return 0;
}

static int read_nodes(const PGresult *res, ctl_top_snap *out)
{
    size_t n = (size_t)PQntuples(res);
    out->nodes = calloc(n > 0 ? n : 1, sizeof *out->nodes);
    if (out->nodes == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        ctl_top_node *nd = &out->nodes[out->nnodes++];
        int rc = text(res, (int)i, 0, nd->node, sizeof nd->node);
        rc = rc != 0 ? rc : text(res, (int)i, 1, nd->endpoint, sizeof nd->endpoint);
        if (rc != 0) {
            return rc;
        }
        nd->down = pg_result_true(res, (int)i, 2);
    }
    return 0;
}

/* A statement: the count, or the page CTE followed by body. Returns 0 or
 * ESC_EINTERNAL when it does not fit (a programming error: the parts are
 * bounded). */
static int statement(char *buf, size_t cap, const ctl_top_where *w, const char *body)
{
    int n = body == NULL ? snprintf(buf, cap, "%s%s", sql_count_head, w->sql)
                         : snprintf(buf, cap, TAG PAGE_HEAD "%s " PAGE_TAIL "%s", w->sql,
                                    w->nparams + 1, w->nparams + 2, body);
    return n > 0 && (size_t)n < cap ? 0 : ESC_EINTERNAL;
}

static int query_all(PGconn *conn, const ctl_top_where *w, const char *const *params,
                     PGresult *res[4])
{
    static char sql[3][SQL_MAX]; /* not on the stack */
    char nodes_max[16];
    snprintf(nodes_max, sizeof nodes_max, "%d", CTL_TOP_NODES_MAX);
    const char *nodes_params[] = {nodes_max};
    int rc = statement(sql[0], SQL_MAX, w, NULL);
    rc = rc != 0 ? rc : statement(sql[1], SQL_MAX, w, sql_items);
    rc = rc != 0 ? rc : statement(sql[2], SQL_MAX, w, sql_segments);
    rc = rc != 0 ? rc : ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    rc = rc != 0 ? rc : ctl_db_query(conn, sql[0], w->nparams, params, &res[0]);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql[1], w->nparams + 2, params, &res[1]);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql[2], w->nparams + 2, params, &res[2]);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_nodes, 1, nodes_params, &res[3]);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        return rc;
    }
    if (PQntuples(res[0]) != 1 || PQnfields(res[1]) != I_COLS_ || PQnfields(res[2]) != S_COLS_ ||
        PQnfields(res[3]) != 3) {
        fprintf(stderr, "escrowctl: unexpected answer to the top queries\n");
        return ESC_EDB;
    }
    return 0;
}

int ctl_top_db_open(const char *dsn, PGconn **out)
{
    PGconn *conn = NULL;
    int rc = ctl_db_open(dsn, &conn);
    rc = rc != 0 ? rc : ctl_db_exec(conn, TAG "SET jit = off", 0, NULL);
    if (rc != 0) {
        ctl_db_close(conn);
        return rc;
    }
    *out = conn;
    return 0;
}

int ctl_top_db_sample(PGconn *conn, const ctl_top_filter *f, int64_t offset, int limit,
                      ctl_top_snap *out)
{
    static ctl_top_where w; /* not on the stack */
    memset(out, 0, sizeof *out);
    ctl_top_filter_where(f, &w);
    char off[24], lim[16];
    snprintf(off, sizeof off, "%lld", (long long)offset);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *params[CTL_TOP_WHERE_PARAMS_MAX + 2];
    for (int i = 0; i < w.nparams; i++) {
        params[i] = w.params[i];
    }
    params[w.nparams] = off;
    params[w.nparams + 1] = lim;
    PGresult *res[4] = {NULL, NULL, NULL, NULL};
    int rc = query_all(conn, &w, params, res);
    rc = rc != 0 ? rc : ctl_db_i64(res[0], 0, 0, &out->matched);
    rc = rc != 0 ? rc : ctl_db_i64(res[0], 0, 1, &out->at_ms);
    rc = rc != 0 ? rc : read_page(res[1], res[2], out);
    rc = rc != 0 ? rc : read_nodes(res[3], out);
    out->offset = offset;
    for (int i = 0; i < 4; i++) {
        PQclear(res[i]);
    }
    return rc;
}
