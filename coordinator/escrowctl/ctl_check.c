/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_check.c - see ctl_check.h.
 *
 * The window count(*) OVER () is computed before LIMIT, so the number of
 * violations is exact even when only the first CTL_CHECK_PRINT_MAX are
 * fetched. The schema's CHECK constraints already forbid negative counters;
 * the check looks anyway, because a check that trusts the thing it checks
 * proves nothing (a dropped constraint would go unnoticed).
 */
#include "ctl_check.h"

#include <inttypes.h>
#include <stdint.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-check */ "
#define STR_(x) #x
#define STR(x) STR_(x)

static const char sql_items[] =
    TAG "SELECT tenant_id, item_id, total, available, held, sold, in_flight, unallocated, "
        "available + held + sold + in_flight + unallocated AS accounted, count(*) OVER () "
        "FROM conservation WHERE NOT ok OR unallocated < 0 "
        "ORDER BY tenant_id, item_id LIMIT " STR(CTL_CHECK_PRINT_MAX);
static const char sql_segments[] =
    TAG "SELECT s.segment_id, s.tenant_id, s.item_id, s.available, s.held, s.sold, "
        "a.holds_live, a.holds_sold, (s.available < 0 OR s.held < 0 OR s.sold < 0), "
        "count(*) OVER () "
        "FROM segments s JOIN segment_holds_agree a USING (segment_id) "
        "WHERE NOT a.ok OR s.available < 0 OR s.held < 0 OR s.sold < 0 "
        "ORDER BY s.segment_id LIMIT " STR(CTL_CHECK_PRINT_MAX);
/* Units of a 'sent' transfer are in no segment: the conservation view
 * counts them as in flight; they are reported so a reader sees them. */
static const char sql_counts[] =
    TAG "SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM segments), "
        "(SELECT count(*) FROM transfers WHERE state = 'sent'), "
        "(SELECT COALESCE(sum(qty), 0) FROM transfers WHERE state = 'sent'), "
        "(SELECT count(*) FROM transfers WHERE state = 'planned')";

enum { C_TENANT, C_ITEM, C_TOTAL, C_AVAIL, C_HELD, C_SOLD, C_FLIGHT, C_UNALLOC, C_ACC, C_N };
enum { G_ID, G_TENANT, G_ITEM, G_AVAIL, G_HELD, G_SOLD, G_LIVE, G_HSOLD, G_NEG, G_N };

typedef struct check_result {
    PGresult *items;    /* owned */
    PGresult *segments; /* owned */
    int64_t items_checked;
    int64_t segments_checked;
    int64_t transfers_sent; /* in flight: counted by conservation */
    int64_t units_in_flight;
    int64_t transfers_planned; /* nothing moved yet */
    int64_t items_violated;
    int64_t segments_violated;
} check_result;

/* The violation count of a result set (its window column), 0 if empty. */
static int violations(const PGresult *res, int col, int64_t *out)
{
    *out = 0;
    return PQntuples(res) > 0 ? ctl_db_i64(res, 0, col, out) : 0;
}

/* The queries, in the caller's open transaction (its snapshot). */
static int run_queries_tx(PGconn *conn, check_result *r)
{
    PGresult *counts = NULL;
    int rc = ctl_db_query(conn, sql_items, 0, NULL, &r->items);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_segments, 0, NULL, &r->segments);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_counts, 0, NULL, &counts);
    if (rc != 0) {
        PQclear(counts);
        return rc;
    }
    rc = ctl_db_i64(counts, 0, 0, &r->items_checked);
    rc = rc != 0 ? rc : ctl_db_i64(counts, 0, 1, &r->segments_checked);
    rc = rc != 0 ? rc : ctl_db_i64(counts, 0, 2, &r->transfers_sent);
    rc = rc != 0 ? rc : ctl_db_i64(counts, 0, 3, &r->units_in_flight);
    rc = rc != 0 ? rc : ctl_db_i64(counts, 0, 4, &r->transfers_planned);
    rc = rc != 0 ? rc : violations(r->items, C_N, &r->items_violated);
    rc = rc != 0 ? rc : violations(r->segments, G_N, &r->segments_violated);
    PQclear(counts);
    return rc;
}

static void print_human(FILE *out, const check_result *r)
{
    const PGresult *c = r->items;
    const PGresult *g = r->segments;
    for (int i = 0; i < PQntuples(c); i++) {
        fprintf(out,
                "VIOLATION item %s/%s total=%s available=%s held=%s sold=%s in_flight=%s "
                "unallocated=%s accounted=%s\n",
                PQgetvalue(c, i, C_TENANT), PQgetvalue(c, i, C_ITEM), PQgetvalue(c, i, C_TOTAL),
                PQgetvalue(c, i, C_AVAIL), PQgetvalue(c, i, C_HELD), PQgetvalue(c, i, C_SOLD),
                PQgetvalue(c, i, C_FLIGHT), PQgetvalue(c, i, C_UNALLOC), PQgetvalue(c, i, C_ACC));
    }
    for (int i = 0; i < PQntuples(g); i++) {
        fprintf(out,
                "VIOLATION segment %s of %s/%s available=%s held=%s (holds say %s) sold=%s "
                "(holds say %s)%s\n",
                PQgetvalue(g, i, G_ID), PQgetvalue(g, i, G_TENANT), PQgetvalue(g, i, G_ITEM),
                PQgetvalue(g, i, G_AVAIL), PQgetvalue(g, i, G_HELD), PQgetvalue(g, i, G_LIVE),
                PQgetvalue(g, i, G_SOLD), PQgetvalue(g, i, G_HSOLD),
                pg_result_true(g, i, G_NEG) ? " negative counter" : "");
    }
    if (r->items_violated > PQntuples(c) || r->segments_violated > PQntuples(g)) {
        fprintf(out, "(only the first %d violations of each kind are shown)\n",
                CTL_CHECK_PRINT_MAX);
    }
    fprintf(out,
            "checked %" PRId64 " items, %" PRId64 " segments, %" PRId64
            " transfers in flight (%" PRId64 " units), %" PRId64 " planned\n",
            r->items_checked, r->segments_checked, r->transfers_sent, r->units_in_flight,
            r->transfers_planned);
    if (r->items_violated == 0 && r->segments_violated == 0) {
        fprintf(out, "conservation=ok\n");
    } else {
        fprintf(out, "conservation=VIOLATED items=%" PRId64 " segments=%" PRId64 "\n",
                r->items_violated, r->segments_violated);
    }
}

static void json_violations(ctl_json *j, const check_result *r)
{
    static const char *const item_keys[] = {"total",     "available",   "held",     "sold",
                                            "in_flight", "unallocated", "accounted"};
    static const char *const seg_keys[] = {"available", "held", "sold", "holds_live", "holds_sold"};
    const PGresult *c = r->items;
    const PGresult *g = r->segments;
    for (int i = 0; i < PQntuples(c); i++) {
        ctl_json_begin_obj(j, NULL);
        ctl_json_str(j, "kind", "item");
        ctl_json_str(j, "tenant", PQgetvalue(c, i, C_TENANT));
        ctl_json_str(j, "item", PQgetvalue(c, i, C_ITEM));
        for (int k = 0; k < 7; k++) {
            ctl_json_num(j, item_keys[k], PQgetvalue(c, i, C_TOTAL + k));
        }
        ctl_json_end_obj(j);
    }
    for (int i = 0; i < PQntuples(g); i++) {
        ctl_json_begin_obj(j, NULL);
        ctl_json_str(j, "kind", "segment");
        ctl_json_num(j, "segment_id", PQgetvalue(g, i, G_ID));
        ctl_json_str(j, "tenant", PQgetvalue(g, i, G_TENANT));
        ctl_json_str(j, "item", PQgetvalue(g, i, G_ITEM));
        for (int k = 0; k < 5; k++) {
            ctl_json_num(j, seg_keys[k], PQgetvalue(g, i, G_AVAIL + k));
        }
        ctl_json_bool(j, "negative_counter", pg_result_true(g, i, G_NEG));
        ctl_json_end_obj(j);
    }
}

static void print_json(FILE *out, const check_result *r)
{
    bool ok = r->items_violated == 0 && r->segments_violated == 0;
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_str(&j, "conservation", ok ? "ok" : "VIOLATED");
    ctl_json_i64(&j, "items_checked", r->items_checked);
    ctl_json_i64(&j, "segments_checked", r->segments_checked);
    ctl_json_i64(&j, "transfers_in_flight", r->transfers_sent);
    ctl_json_i64(&j, "units_in_flight", r->units_in_flight);
    ctl_json_i64(&j, "transfers_planned", r->transfers_planned);
    ctl_json_i64(&j, "items_violated", r->items_violated);
    ctl_json_i64(&j, "segments_violated", r->segments_violated);
    ctl_json_begin_arr(&j, "violations");
    json_violations(&j, r);
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

static int run_queries(PGconn *conn, check_result *r)
{
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    rc = rc != 0 ? rc : run_queries_tx(conn, r);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
    }
    return rc;
}

int ctl_check_tx(PGconn *conn, FILE *out, int64_t *items_violated, int64_t *segments_violated)
{
    check_result r = {0};
    int rc = run_queries_tx(conn, &r);
    if (rc == 0) {
        if (out != NULL) {
            print_human(out, &r);
        }
        *items_violated = r.items_violated;
        *segments_violated = r.segments_violated;
    }
    PQclear(r.items);
    PQclear(r.segments);
    return rc;
}

int ctl_check(PGconn *conn, const ctl_args *a, FILE *out, bool *violated)
{
    check_result r = {0};
    int rc = run_queries(conn, &r);
    if (rc == 0) {
        if (a->json) {
            print_json(out, &r);
        } else {
            print_human(out, &r);
        }
        *violated = r.items_violated > 0 || r.segments_violated > 0;
    }
    PQclear(r.items);
    PQclear(r.segments);
    return rc;
}
