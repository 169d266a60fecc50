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

#include <stdbool.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-status */ "

/* One row more than shown tells whether the list was cut. */
static const char sql_items[] =
    TAG "SELECT c.tenant_id, c.item_id, i.state, c.total, c.available, c.held, c.sold, "
        "c.in_flight, c.unallocated, i.tail_segment, i.segments_wanted, i.reduce_pending, "
        "(SELECT count(*) FROM segments s WHERE s.tenant_id = c.tenant_id "
        "AND s.item_id = c.item_id AND s.state = 'active'), "
        "(SELECT count(*) FROM segments s WHERE s.tenant_id = c.tenant_id "
        "AND s.item_id = c.item_id AND s.state = 'draining'), "
        "(SELECT count(*) FROM transfers t WHERE t.tenant_id = c.tenant_id "
        "AND t.item_id = c.item_id AND t.state IN ('planned', 'sent')), "
        "c.ok "
        "FROM conservation c JOIN items i USING (tenant_id, item_id) "
        "WHERE ($1::text IS NULL OR c.tenant_id = $1) AND ($2::text IS NULL OR c.item_id = $2) "
        "ORDER BY c.tenant_id, c.item_id LIMIT $3::integer + 1";
/* Per segment: its region (the database's region_self, $4, once a region's
 * coordinator claimed it; else segments.region), its owner's liveness (state
 * 'down' or a lease that ran out; the lease is only written under a
 * coordinator) and its open transfers: units sent and not yet received, out
 * of and into the segment. */
static const char sql_segments[] = TAG
    "WITH i AS (SELECT tenant_id, item_id, tail_segment FROM items "
    "WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR item_id = $2) "
    "ORDER BY tenant_id, item_id LIMIT $3::integer) "
    "SELECT s.tenant_id, s.item_id, s.segment_id, s.seg_no, COALESCE(NULLIF($4, ''), s.region), "
    "s.node_id, s.epoch, "
    "s.state, s.available, s.held, s.sold, n.state, "
    "(n.state = 'down' OR (n.lease_until IS NOT NULL AND n.lease_until < now())), "
    "x.open, x.sending, x.receiving, i.tail_segment IS NOT DISTINCT FROM s.segment_id "
    "FROM segments s JOIN i USING (tenant_id, item_id) "
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

static void print_human(FILE *out, const PGresult *items, int nitems, const PGresult *segs)
{
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
    fprintf(out, "%d item%s, %d segment%s (%d without an owner, %d on a node that is down)\n",
            nitems, nitems == 1 ? "" : "s", nsegs, nsegs == 1 ? "" : "s", unowned, down);
    if (PQntuples(items) > nitems) {
        fprintf(out, "(only the first %d items are shown; name a TENANT or ITEM)\n", nitems);
    }
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

static void print_json(FILE *out, const PGresult *items, int nitems, const PGresult *segs,
                       const PGresult *mon)
{
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
    json_monitor(&j, mon);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_status(PGconn *conn, const ctl_args *a, FILE *out)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", CTL_STATUS_ITEMS_MAX);
    char region[CTL_REGION_LEN_MAX + 1] = "";
    const char *params[] = {a->tenant[0] != '\0' ? a->tenant : NULL,
                            a->item[0] != '\0' ? a->item : NULL, limit, region};
    PGresult *items = NULL;
    PGresult *segs = NULL;
    PGresult *mon = NULL;
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    rc = rc != 0 ? rc : ctl_db_region_self(conn, region, sizeof region);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_items, 3, params, &items);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_segments, 4, params, &segs);
    rc = rc != 0 ? rc : read_monitor(conn, &mon);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        goto out;
    }
    if (PQnfields(items) != I_COLS_ || PQnfields(segs) != S_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the status queries\n");
        rc = ESC_EDB;
        goto out;
    }
    int nitems = PQntuples(items) > CTL_STATUS_ITEMS_MAX ? CTL_STATUS_ITEMS_MAX : PQntuples(items);
    if (nitems == 0 && a->item[0] != '\0') {
        fprintf(stderr, "escrowctl: no item %s/%s\n", a->tenant, a->item);
        rc = ESC_EUNKNOWN_ITEM;
        goto out;
    }
    if (a->json) {
        print_json(out, items, nitems, segs, mon);
    } else if (nitems == 0) {
        fprintf(out, "no items%s%s\n", a->tenant[0] != '\0' ? " for tenant " : "", a->tenant);
        human_monitor(out, mon);
    } else {
        print_human(out, items, nitems, segs);
        human_monitor(out, mon);
    }
out:
    PQclear(items);
    PQclear(segs);
    PQclear(mon);
    return rc;
}
