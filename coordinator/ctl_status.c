/*
 * ctl_status.c - see ctl_status.h.
 *
 * Two ordered result sets (items, then their segments, in the same order of
 * tenant and item) are merged in one pass: for each item row, the segment
 * rows with the same tenant and item follow.
 */
#include "ctl_status.h"

#include <stdbool.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"

#define TAG "/* escrow:ctl-status */ "
#define STR_(x) #x
#define STR(x) STR_(x)

/* One row more than shown tells whether the list was cut. */
static const char sql_items[] =
    TAG "SELECT c.tenant_id, c.item_id, i.state, c.total, c.available, c.held, c.sold, "
        "c.in_flight, c.unallocated, c.ok "
        "FROM conservation c JOIN items i USING (tenant_id, item_id) "
        "WHERE ($1::text IS NULL OR c.tenant_id = $1) AND ($2::text IS NULL OR c.item_id = $2) "
        "ORDER BY c.tenant_id, c.item_id LIMIT " STR(CTL_STATUS_ITEMS_MAX) " + 1";
static const char sql_segments[] =
    TAG "WITH i AS (SELECT tenant_id, item_id FROM items "
        "WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR item_id = $2) "
        "ORDER BY tenant_id, item_id LIMIT " STR(
            CTL_STATUS_ITEMS_MAX) ") "
                                  "SELECT s.tenant_id, s.item_id, s.segment_id, s.seg_no, "
                                  "s.region, s.node_id, s.epoch, "
                                  "s.state, s.available, s.held, s.sold "
                                  "FROM segments s JOIN i USING (tenant_id, item_id) "
                                  "ORDER BY s.tenant_id, s.item_id, s.region, s.seg_no";

enum { I_TENANT, I_ITEM, I_STATE, I_TOTAL, I_AVAIL, I_HELD, I_SOLD, I_FLIGHT, I_UNALLOC, I_OK };
enum { S_TENANT, S_ITEM, S_ID, S_NO, S_REGION, S_NODE, S_EPOCH, S_STATE, S_AVAIL, S_HELD, S_SOLD };

static bool same_item(const PGresult *items, int i, const PGresult *segs, int s)
{
    return strcmp(PQgetvalue(items, i, I_TENANT), PQgetvalue(segs, s, S_TENANT)) == 0 &&
           strcmp(PQgetvalue(items, i, I_ITEM), PQgetvalue(segs, s, S_ITEM)) == 0;
}

static void human_item(FILE *out, const PGresult *items, int i)
{
    fprintf(out, "%-10s %-16s %-7s %10s %10s %8s %10s %9s %11s %s\n",
            PQgetvalue(items, i, I_TENANT), PQgetvalue(items, i, I_ITEM),
            PQgetvalue(items, i, I_STATE), PQgetvalue(items, i, I_TOTAL),
            PQgetvalue(items, i, I_AVAIL), PQgetvalue(items, i, I_HELD),
            PQgetvalue(items, i, I_SOLD), PQgetvalue(items, i, I_FLIGHT),
            PQgetvalue(items, i, I_UNALLOC), ctl_db_bool(items, i, I_OK) ? "ok" : "VIOLATED");
}

static void human_segment(FILE *out, const PGresult *segs, int s)
{
    fprintf(out,
            "    segment %-6s seg_no=%-3s region=%-6s node=%-8s epoch=%-4s %-8s "
            "available=%-9s held=%-7s sold=%s\n",
            PQgetvalue(segs, s, S_ID), PQgetvalue(segs, s, S_NO), PQgetvalue(segs, s, S_REGION),
            PQgetisnull(segs, s, S_NODE) ? "-" : PQgetvalue(segs, s, S_NODE),
            PQgetvalue(segs, s, S_EPOCH), PQgetvalue(segs, s, S_STATE),
            PQgetvalue(segs, s, S_AVAIL), PQgetvalue(segs, s, S_HELD), PQgetvalue(segs, s, S_SOLD));
}

static void print_human(FILE *out, const PGresult *items, int nitems, const PGresult *segs)
{
    fprintf(out, "%-10s %-16s %-7s %10s %10s %8s %10s %9s %11s %s\n", "TENANT", "ITEM", "STATE",
            "TOTAL", "AVAILABLE", "HELD", "SOLD", "IN_FLIGHT", "UNALLOCATED", "CONSERVATION");
    int s = 0;
    for (int i = 0; i < nitems; i++) {
        human_item(out, items, i);
        for (; s < PQntuples(segs) && same_item(items, i, segs, s); s++) {
            human_segment(out, segs, s);
        }
    }
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
    ctl_json_str(j, "node", PQgetisnull(segs, s, S_NODE) ? NULL : PQgetvalue(segs, s, S_NODE));
    ctl_json_num(j, "epoch", PQgetvalue(segs, s, S_EPOCH));
    ctl_json_str(j, "state", PQgetvalue(segs, s, S_STATE));
    ctl_json_num(j, "available", PQgetvalue(segs, s, S_AVAIL));
    ctl_json_num(j, "held", PQgetvalue(segs, s, S_HELD));
    ctl_json_num(j, "sold", PQgetvalue(segs, s, S_SOLD));
    ctl_json_end_obj(j);
}

static void json_item(ctl_json *j, const PGresult *items, int i)
{
    static const char *const num_keys[] = {"total", "available", "held",
                                           "sold",  "in_flight", "unallocated"};
    ctl_json_str(j, "tenant", PQgetvalue(items, i, I_TENANT));
    ctl_json_str(j, "item", PQgetvalue(items, i, I_ITEM));
    ctl_json_str(j, "state", PQgetvalue(items, i, I_STATE));
    for (int k = 0; k < 6; k++) {
        ctl_json_num(j, num_keys[k], PQgetvalue(items, i, I_TOTAL + k));
    }
    ctl_json_bool(j, "conservation_ok", ctl_db_bool(items, i, I_OK));
}

static void print_json(FILE *out, const PGresult *items, int nitems, const PGresult *segs)
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
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_status(PGconn *conn, const ctl_args *a, FILE *out)
{
    const char *params[] = {a->tenant[0] != '\0' ? a->tenant : NULL,
                            a->item[0] != '\0' ? a->item : NULL};
    PGresult *items = NULL;
    PGresult *segs = NULL;
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_items, 2, params, &items);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_segments, 2, params, &segs);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        goto out;
    }
    int nitems = PQntuples(items) > CTL_STATUS_ITEMS_MAX ? CTL_STATUS_ITEMS_MAX : PQntuples(items);
    if (nitems == 0 && a->item[0] != '\0') {
        fprintf(stderr, "escrowctl: no item %s/%s\n", a->tenant, a->item);
        rc = ESC_EUNKNOWN_ITEM;
        goto out;
    }
    if (a->json) {
        print_json(out, items, nitems, segs);
    } else if (nitems == 0) {
        fprintf(out, "no items%s%s\n", a->tenant[0] != '\0' ? " for tenant " : "", a->tenant);
    } else {
        print_human(out, items, nitems, segs);
    }
out:
    PQclear(items);
    PQclear(segs);
    return rc;
}
