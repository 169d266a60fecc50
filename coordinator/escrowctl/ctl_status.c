/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_status.c - see ctl_status.h.
 *
 * Two ordered result sets (items, then their segments, in the same order of
 * tenant and item) are merged in one pass: for each item row, the segment
 * rows with the same tenant and item follow. Both come from one REPEATABLE
 * READ snapshot, so the per-item summary and the segments agree.
 */
#include "ctl_status.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "ctl_top_filter.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-status */ "

/* The page of matching items: the filter's condition over items "i"
 * (ctl_top_filter_where, its values $1..$n), then the exact ITEM, the
 * offset and the limit as the next parameters (PAGE_TAIL's %d). One row
 * more than shown tells whether more follow. */
#define PAGE_HEAD "WITH p AS (SELECT i.tenant_id, i.item_id FROM items i WHERE "
#define PAGE_TAIL "%s ORDER BY i.tenant_id, i.item_id OFFSET $%d::bigint LIMIT $%d::integer + %d) "
static const char sql_count_head[] = TAG "SELECT count(*) FROM items i WHERE ";
/* Per item: the segments' sums and the open transfers, for the page only
 * (lateral, so no statement reads the whole catalog); conservation as the
 * conservation view states it. */
static const char sql_items[] =
    "SELECT i.tenant_id, i.item_id, i.state, i.total, s.available, s.held, s.sold, "
    "t.in_flight, i.unallocated, i.tail_segment, i.segments_wanted, i.reduce_pending, "
    "s.active, s.draining, t.open, "
    "s.available + s.held + s.sold + t.in_flight + i.unallocated = i.total "
    "AND s.held + s.sold <= i.total "
    "FROM p JOIN items i USING (tenant_id, item_id) "
    "CROSS JOIN LATERAL (SELECT COALESCE(sum(g.available), 0) AS available, "
    "COALESCE(sum(g.held), 0) AS held, COALESCE(sum(g.sold), 0) AS sold, "
    "count(*) FILTER (WHERE g.state = 'active') AS active, "
    "count(*) FILTER (WHERE g.state = 'draining') AS draining "
    "FROM segments g WHERE g.tenant_id = p.tenant_id AND g.item_id = p.item_id) s "
    "CROSS JOIN LATERAL (SELECT COALESCE(sum(x.qty) FILTER (WHERE x.state = 'sent'), 0) "
    "AS in_flight, count(*) AS open FROM transfers x WHERE x.state IN ('planned', 'sent') "
    "AND x.tenant_id = p.tenant_id AND x.item_id = p.item_id) t "
    "ORDER BY i.tenant_id, i.item_id";
/* Per segment of the page: its region (the database's region_self, the last
 * parameter, once a region's coordinator claimed it; else segments.region),
 * its owner's liveness (state 'down' or a lease that ran out; the lease is
 * only written under a coordinator) and its open transfers: units sent and
 * not yet received, out of and into the segment. */
static const char sql_segments[] =
    "SELECT s.tenant_id, s.item_id, s.segment_id, s.seg_no, COALESCE(NULLIF($%d, ''), s.region), "
    "s.node_id, s.epoch, "
    "s.state, s.available, s.held, s.sold, n.state, "
    "(n.state = 'down' OR (n.lease_until IS NOT NULL AND n.lease_until < now())), "
    "x.open, x.sending, x.receiving, i.tail_segment IS NOT DISTINCT FROM s.segment_id "
    "FROM segments s JOIN p USING (tenant_id, item_id) JOIN items i USING (tenant_id, item_id) "
    "LEFT JOIN nodes n ON n.node_id = s.node_id "
    "CROSS JOIN LATERAL (SELECT count(*) AS open, "
    "COALESCE(sum(t.qty) FILTER (WHERE t.state = 'sent' AND t.from_segment = s.segment_id), "
    "0) AS sending, "
    "COALESCE(sum(t.qty) FILTER (WHERE t.state = 'sent' AND t.to_segment = s.segment_id), "
    "0) AS receiving "
    "FROM transfers t WHERE t.state IN ('planned', 'sent') "
    "AND (t.from_segment = s.segment_id OR t.to_segment = s.segment_id)) x "
    "ORDER BY s.tenant_id, s.item_id, s.region, s.seg_no";

/* The coordinator's invariant monitor (coord_mon.h): its last result, if
 * the monitor table exists (migration 0005) and a check ever ran. */
static const char sql_has_monitor[] = TAG "SELECT to_regclass('monitor') IS NOT NULL";
static const char sql_monitor[] =
    TAG "SELECT ok, violations, items, segments, "
        "round(extract(epoch FROM now() - checked_at)::numeric, 1), check_ms, detail, "
        "now() - checked_at > make_interval(secs => (3 * check_ms + 1000) / 1000.0) "
        "FROM monitor WHERE name = 'conservation'";
enum { M_OK, M_BAD, M_ITEMS, M_SEGS, M_AGE, M_CHECK_MS, M_DETAIL, M_STALE, M_COLS_ };

enum {
    I_TENANT,
    I_ITEM,
    I_STATE,
    I_TOTAL,
    I_AVAIL,
    I_HELD,
    I_SOLD,
    I_FLIGHT,
    I_UNALLOC,
    I_TAIL,
    I_WANTED,
    I_REDUCE,
    I_ACTIVE,
    I_DRAINING,
    I_XFERS,
    I_OK,
    I_COLS_
};
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
    S_NSTATE,
    S_NDOWN,
    S_XOPEN,
    S_XOUT,
    S_XIN,
    S_TAIL,
    S_COLS_
};

static bool same_item(const PGresult *items, int i, const PGresult *segs, int s)
{
    return strcmp(PQgetvalue(items, i, I_TENANT), PQgetvalue(segs, s, S_TENANT)) == 0 &&
           strcmp(PQgetvalue(items, i, I_ITEM), PQgetvalue(segs, s, S_ITEM)) == 0;
}

static void human_item(FILE *out, const PGresult *items, int i)
{
    char segs[32];
    snprintf(segs, sizeof segs, "%s/%s", PQgetvalue(items, i, I_ACTIVE),
             PQgetvalue(items, i, I_WANTED));
    fprintf(out, "%-10s %-16s %-7s %10s %10s %8s %10s %9s %11s %8s %8s %6s %9s %s\n",
            PQgetvalue(items, i, I_TENANT), PQgetvalue(items, i, I_ITEM),
            PQgetvalue(items, i, I_STATE), PQgetvalue(items, i, I_TOTAL),
            PQgetvalue(items, i, I_AVAIL), PQgetvalue(items, i, I_HELD),
            PQgetvalue(items, i, I_SOLD), PQgetvalue(items, i, I_FLIGHT),
            PQgetvalue(items, i, I_UNALLOC), segs, PQgetvalue(items, i, I_DRAINING),
            PQgetisnull(items, i, I_TAIL) ? "-" : PQgetvalue(items, i, I_TAIL),
            PQgetvalue(items, i, I_XFERS), pg_result_true(items, i, I_OK) ? "ok" : "VIOLATED");
}

static void human_segment(FILE *out, const PGresult *segs, int s)
{
    char owner[CTL_NODE_LEN_MAX + 16];
    if (PQgetisnull(segs, s, S_NODE)) {
        snprintf(owner, sizeof owner, "-");
    } else {
        snprintf(owner, sizeof owner, "%s%s", PQgetvalue(segs, s, S_NODE),
                 pg_result_true(segs, s, S_NDOWN) ? "(down)" : "");
    }
    fprintf(out,
            "    segment %-6s seg_no=%-3s region=%-6s node=%-10s epoch=%-4s %-8s "
            "available=%-9s held=%-7s sold=%-9s xfers=%s out=%s in=%s%s\n",
            PQgetvalue(segs, s, S_ID), PQgetvalue(segs, s, S_NO), PQgetvalue(segs, s, S_REGION),
            owner, PQgetvalue(segs, s, S_EPOCH), PQgetvalue(segs, s, S_STATE),
            PQgetvalue(segs, s, S_AVAIL), PQgetvalue(segs, s, S_HELD), PQgetvalue(segs, s, S_SOLD),
            PQgetvalue(segs, s, S_XOPEN), PQgetvalue(segs, s, S_XOUT), PQgetvalue(segs, s, S_XIN),
            pg_result_true(segs, s, S_TAIL) ? " TAIL" : "");
}

/* "invariant monitor: ok (checked 2 s ago ...)" or the violation with its
 * figures, one per line; mon NULL or empty: no result yet. */
static void human_monitor(FILE *out, const PGresult *mon)
{
    if (mon == NULL || PQntuples(mon) == 0) {
        fprintf(out, "invariant monitor: no result yet (escrow-coordinator checks every "
                     "--check-ms)\n");
        return;
    }
    const char *stale =
        pg_result_true(mon, 0, M_STALE) ? "; STALE: the coordinator is not checking" : "";
    if (pg_result_true(mon, 0, M_OK)) {
        fprintf(out,
                "invariant monitor: ok (checked %s s ago, %s items, %s segments, every %s ms%s)\n",
                PQgetvalue(mon, 0, M_AGE), PQgetvalue(mon, 0, M_ITEMS), PQgetvalue(mon, 0, M_SEGS),
                PQgetvalue(mon, 0, M_CHECK_MS), stale);
        return;
    }
    fprintf(out, "invariant monitor: VIOLATED, %s violations (checked %s s ago, every %s ms%s)\n",
            PQgetvalue(mon, 0, M_BAD), PQgetvalue(mon, 0, M_AGE), PQgetvalue(mon, 0, M_CHECK_MS),
            stale);
    const char *d = PQgetvalue(mon, 0, M_DETAIL);
    while (*d != '\0') {
        size_t n = strcspn(d, "\n");
        fprintf(out, "    %.*s\n", (int)n, d);
        d += n + (d[n] == '\n');
    }
}

static void json_monitor(ctl_json *j, const PGresult *mon)
{
    if (mon == NULL || PQntuples(mon) == 0) {
        ctl_json_str(j, "monitor", NULL);
        return;
    }
    ctl_json_begin_obj(j, "monitor");
    ctl_json_bool(j, "ok", pg_result_true(mon, 0, M_OK));
    ctl_json_num(j, "violations", PQgetvalue(mon, 0, M_BAD));
    ctl_json_num(j, "items", PQgetvalue(mon, 0, M_ITEMS));
    ctl_json_num(j, "segments", PQgetvalue(mon, 0, M_SEGS));
    ctl_json_num(j, "age_s", PQgetvalue(mon, 0, M_AGE));
    ctl_json_num(j, "check_ms", PQgetvalue(mon, 0, M_CHECK_MS));
    ctl_json_bool(j, "stale", pg_result_true(mon, 0, M_STALE));
    ctl_json_str(j, "detail", PQgetvalue(mon, 0, M_DETAIL));
    ctl_json_end_obj(j);
}

/* The monitor's row (NULL in *out when there is no monitor table). */
static int read_monitor(PGconn *conn, PGresult **out)
{
    PGresult *has = NULL;
    *out = NULL;
    int rc = ctl_db_query(conn, sql_has_monitor, 0, NULL, &has);
    if (rc == 0 && pg_result_true(has, 0, 0)) {
        rc = ctl_db_query(conn, sql_monitor, 0, NULL, out);
        if (rc == 0 && PQnfields(*out) != M_COLS_) {
            PQclear(*out);
            *out = NULL;
        }
    }
    PQclear(has);
    return rc;
}

/* What the page shows of the matching items. */
typedef struct page {
    int64_t offset;   /* items skipped */
    int64_t matching; /* items that match the filters */
    int shown;
} page;

/* "N more; use --limit/--offset" after the page, when more follow. */
static void human_more(FILE *out, const page *pg)
{
    int64_t more = pg->matching - pg->offset - pg->shown;
    if (more > 0) {
        fprintf(out, "%" PRId64 " more item%s; use --limit N or --offset %" PRId64 "\n", more,
                more == 1 ? "" : "s", pg->offset + pg->shown);
    }
}

static void print_human(FILE *out, const PGresult *items, const page *pg, const PGresult *segs)
{
    int nitems = pg->shown;
    fprintf(out, "%-10s %-16s %-7s %10s %10s %8s %10s %9s %11s %8s %8s %6s %9s %s\n", "TENANT",
            "ITEM", "STATE", "TOTAL", "AVAILABLE", "HELD", "SOLD", "IN_FLIGHT", "UNALLOCATED",
            "SEGMENTS", "DRAINING", "TAIL", "TRANSFERS", "CONSERVATION");
    int s = 0;
    int nsegs = 0;
    int down = 0;
    int unowned = 0;
    for (int i = 0; i < nitems; i++) {
        human_item(out, items, i);
        for (; s < PQntuples(segs) && same_item(items, i, segs, s); s++) {
            human_segment(out, segs, s);
            nsegs++;
            down += pg_result_true(segs, s, S_NDOWN) ? 1 : 0;
            unowned += PQgetisnull(segs, s, S_NODE) ? 1 : 0;
        }
    }
    fprintf(out,
            "%d item%s (%" PRId64 "..%" PRId64 " of %" PRId64 " matching), %d segment%s "
            "(%d without an owner, %d on a node that is down)\n",
            nitems, nitems == 1 ? "" : "s", pg->offset + 1, pg->offset + nitems, pg->matching,
            nsegs, nsegs == 1 ? "" : "s", unowned, down);
    human_more(out, pg);
}

static void json_segment(ctl_json *j, const PGresult *segs, int s)
{
    ctl_json_begin_obj(j, NULL);
    ctl_json_num(j, "segment_id", PQgetvalue(segs, s, S_ID));
    ctl_json_num(j, "seg_no", PQgetvalue(segs, s, S_NO));
    ctl_json_str(j, "region", PQgetvalue(segs, s, S_REGION));
    ctl_json_str(j, "node", pg_result_text(segs, s, S_NODE));
    ctl_json_str(j, "node_state", pg_result_text(segs, s, S_NSTATE));
    ctl_json_bool(j, "node_down", pg_result_true(segs, s, S_NDOWN));
    ctl_json_num(j, "epoch", PQgetvalue(segs, s, S_EPOCH));
    ctl_json_str(j, "state", PQgetvalue(segs, s, S_STATE));
    ctl_json_num(j, "available", PQgetvalue(segs, s, S_AVAIL));
    ctl_json_num(j, "held", PQgetvalue(segs, s, S_HELD));
    ctl_json_num(j, "sold", PQgetvalue(segs, s, S_SOLD));
    ctl_json_num(j, "transfers_open", PQgetvalue(segs, s, S_XOPEN));
    ctl_json_num(j, "in_flight_out", PQgetvalue(segs, s, S_XOUT));
    ctl_json_num(j, "in_flight_in", PQgetvalue(segs, s, S_XIN));
    ctl_json_bool(j, "tail", pg_result_true(segs, s, S_TAIL));
    ctl_json_end_obj(j);
}

static void json_item(ctl_json *j, const PGresult *items, int i)
{
    static const char *const num_keys[] = {"total",
                                           "available",
                                           "held",
                                           "sold",
                                           "in_flight",
                                           "unallocated",
                                           "tail_segment",
                                           "segments_wanted",
                                           "reduce_pending",
                                           "segments_active",
                                           "segments_draining",
                                           "transfers_open"};
    ctl_json_str(j, "tenant", PQgetvalue(items, i, I_TENANT));
    ctl_json_str(j, "item", PQgetvalue(items, i, I_ITEM));
    ctl_json_str(j, "state", PQgetvalue(items, i, I_STATE));
    for (int k = 0; k < I_OK - I_TOTAL; k++) {
        ctl_json_num(j, num_keys[k], pg_result_text(items, i, I_TOTAL + k));
    }
    ctl_json_bool(j, "conservation_ok", pg_result_true(items, i, I_OK));
}

static void print_json(FILE *out, const PGresult *items, const page *pg, const PGresult *segs,
                       const PGresult *mon)
{
    int nitems = pg->shown;
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "items");
    int s = 0;
    for (int i = 0; i < nitems; i++) {
        ctl_json_begin_obj(&j, NULL);
        json_item(&j, items, i);
        ctl_json_begin_arr(&j, "segments");
        for (; s < PQntuples(segs) && same_item(items, i, segs, s); s++) {
            json_segment(&j, segs, s);
        }
        ctl_json_end_arr(&j);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_bool(&j, "truncated", PQntuples(items) > nitems);
    ctl_json_i64(&j, "matching", pg->matching);
    ctl_json_i64(&j, "offset", pg->offset);
    ctl_json_i64(&j, "more",
                 pg->matching - pg->offset - nitems > 0 ? pg->matching - pg->offset - nitems : 0);
    json_monitor(&j, mon);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

/* The statements of a's filters and page: count, items, segments. */
typedef struct status_sql {
    ctl_top_filter f; /* w.params point into it */
    ctl_top_where w;
    char count[CTL_TOP_WHERE_MAX + 256];
    char items[CTL_TOP_WHERE_MAX + sizeof sql_items + 256];
    char segs[CTL_TOP_WHERE_MAX + sizeof sql_segments + 256];
    const char *params[CTL_TOP_WHERE_PARAMS_MAX + 4]; /* filter, item, offset, limit, region */
    int nfilter; /* parameters of the count: the filter's and the item's */
    char offset[24], limit[16];
} status_sql;

static void build_sql(const ctl_args *a, const char *region, status_sql *q)
{
    ctl_top_filter *f = &q->f;
    memset(f, 0, sizeof *f);
    f->state = (ctl_top_state)a->item_state;
    f->sold_out = a->sold_out;
    memcpy(f->tenant, a->tenant, sizeof f->tenant);
    memcpy(f->prefix, a->item_prefix, sizeof f->prefix);
    ctl_top_filter_where(f, &q->w);
    int n = q->w.nparams;
    for (int i = 0; i < n; i++) {
        q->params[i] = q->w.params[i];
    }
    char item_cond[32] = "";
    if (a->item[0] != '\0') {
        q->params[n++] = a->item;
        snprintf(item_cond, sizeof item_cond, " AND i.item_id = $%d", n);
    }
    q->nfilter = n;
    snprintf(q->offset, sizeof q->offset, "%" PRId64, a->offset);
    snprintf(q->limit, sizeof q->limit, "%d", a->limit);
    q->params[n] = q->offset;
    q->params[n + 1] = q->limit;
    q->params[n + 2] = region;
    snprintf(q->count, sizeof q->count, "%s%s%s", sql_count_head, q->w.sql, item_cond);
    int len = snprintf(q->items, sizeof q->items, TAG PAGE_HEAD "%s" PAGE_TAIL "%s", q->w.sql,
                       item_cond, n + 1, n + 2, 1, sql_items);
    ESC_ASSERT(len > 0 && (size_t)len < sizeof q->items);
    len = snprintf(q->segs, sizeof q->segs, TAG PAGE_HEAD "%s" PAGE_TAIL, q->w.sql, item_cond,
                   n + 1, n + 2, 0);
    ESC_ASSERT(len > 0 && (size_t)len < sizeof q->segs);
    snprintf(q->segs + len, sizeof q->segs - (size_t)len, sql_segments, n + 3);
}

static int read_all(PGconn *conn, const ctl_args *a, PGresult **count, PGresult **items,
                    PGresult **segs, PGresult **mon)
{
    static status_sql q; /* large: not on the stack */
    char region[CTL_REGION_LEN_MAX + 1] = "";
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    rc = rc != 0 ? rc : ctl_db_region_self(conn, region, sizeof region);
    if (rc == 0) {
        build_sql(a, region, &q);
    }
    rc = rc != 0 ? rc : ctl_db_query(conn, q.count, q.nfilter, q.params, count);
    rc = rc != 0 ? rc : ctl_db_query(conn, q.items, q.nfilter + 2, q.params, items);
    rc = rc != 0 ? rc : ctl_db_query(conn, q.segs, q.nfilter + 3, q.params, segs);
    rc = rc != 0 ? rc : read_monitor(conn, mon);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
    }
    return rc;
}

int ctl_status(PGconn *conn, const ctl_args *a, FILE *out)
{
    PGresult *count = NULL;
    PGresult *items = NULL;
    PGresult *segs = NULL;
    PGresult *mon = NULL;
    page pg = {.offset = a->offset};
    int rc = read_all(conn, a, &count, &items, &segs, &mon);
    if (rc != 0) {
        goto out;
    }
    if (PQnfields(items) != I_COLS_ || PQnfields(segs) != S_COLS_ ||
        ctl_db_i64(count, 0, 0, &pg.matching) != 0) {
        fprintf(stderr, "escrowctl: unexpected answer to the status queries\n");
        rc = ESC_EDB;
        goto out;
    }
    pg.shown = PQntuples(items) > a->limit ? a->limit : PQntuples(items);
    if (pg.matching == 0 && a->item[0] != '\0') {
        fprintf(stderr, "escrowctl: no item %s/%s\n", a->tenant, a->item);
        rc = ESC_EUNKNOWN_ITEM;
        goto out;
    }
    if (a->json) {
        print_json(out, items, &pg, segs, mon);
    } else if (pg.shown == 0) {
        fprintf(out, "no items%s%s", a->tenant[0] != '\0' ? " for tenant " : "", a->tenant);
        fprintf(out, pg.matching > 0 ? " past --offset %" PRId64 " (%" PRId64 " match)\n" : "\n",
                pg.offset, pg.matching);
        human_monitor(out, mon);
    } else {
        print_human(out, items, &pg, segs);
        human_monitor(out, mon);
    }
out:
    PQclear(count);
    PQclear(items);
    PQclear(segs);
    PQclear(mon);
    return rc;
}
