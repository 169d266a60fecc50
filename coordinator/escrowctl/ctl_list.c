/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_list.c - see ctl_list.h.
 *
 * Filters are parameters that may be NULL ("$n IS NULL OR col = $n"); libpq's
 * unnamed statements are planned with the actual values, so the NULL branches
 * fold away and the indexes on holds and outbox are used.
 */
#include "ctl_list.h"

#include <inttypes.h>
#include <stdbool.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "pg_result.h"

/* Times as ISO-8601 UTC with milliseconds, the same for humans and JSON. */
static const char sql_holds[] =
    "/* escrow:ctl-holds */ "
    "SELECT hold_id, item_id, buyer_id, qty, qty_sold, state, "
    "to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), extended, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "idempotency_key, segment_id "
    "FROM holds WHERE tenant_id = $1 AND ($2::bigint IS NULL OR hold_id = $2) "
    "AND ($3::text IS NULL OR buyer_id = $3) AND ($4::text IS NULL OR item_id = $4) "
    "ORDER BY created_at, hold_id LIMIT $5";

static const char sql_events[] =
    "/* escrow:ctl-events */ "
    "SELECT event_id, item_id, segment_id, hold_id, buyer_id, kind, qty, "
    "to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') "
    "FROM outbox WHERE tenant_id = $1 AND ($2::text IS NULL OR item_id = $2) "
    "AND event_id > $3 ORDER BY event_id LIMIT $4";

enum {
    H_ID,
    H_ITEM,
    H_BUYER,
    H_QTY,
    H_SOLD,
    H_STATE,
    H_EXPIRES,
    H_EXT,
    H_CREATED,
    H_ENDED,
    H_KEY,
    H_SEG,
    H_COLS_
};
enum { E_ID, E_ITEM, E_SEG, E_HOLD, E_BUYER, E_KIND, E_QTY, E_AT, E_COLS_ };

static void holds_human(FILE *out, const PGresult *res)
{
    fprintf(out, "%-16s %-14s %-14s %4s %4s %-9s %-24s %-3s %-24s %-24s %s\n", "HOLD_ID", "ITEM",
            "BUYER", "QTY", "SOLD", "STATE", "EXPIRES_AT", "EXT", "CREATED_AT", "ENDED_AT",
            "IDEMPOTENCY_KEY");
    for (int r = 0; r < PQntuples(res); r++) {
        fprintf(out, "%-16s %-14s %-14s %4s %4s %-9s %-24s %-3s %-24s %-24s %s\n",
                pg_result_text_or(res, r, H_ID, "-"), pg_result_text_or(res, r, H_ITEM, "-"),
                pg_result_text_or(res, r, H_BUYER, "-"), pg_result_text_or(res, r, H_QTY, "-"),
                pg_result_text_or(res, r, H_SOLD, "-"), pg_result_text_or(res, r, H_STATE, "-"),
                pg_result_text_or(res, r, H_EXPIRES, "-"),
                pg_result_true(res, r, H_EXT) ? "yes" : "no",
                pg_result_text_or(res, r, H_CREATED, "-"), pg_result_text_or(res, r, H_ENDED, "-"),
                pg_result_text_or(res, r, H_KEY, "-"));
    }
    fprintf(out, "%d hold%s\n", PQntuples(res), PQntuples(res) == 1 ? "" : "s");
}

static void holds_json(FILE *out, const PGresult *res)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "holds");
    for (int r = 0; r < PQntuples(res); r++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "hold_id", pg_result_text(res, r, H_ID));
        ctl_json_num(&j, "segment_id", pg_result_text(res, r, H_SEG));
        ctl_json_str(&j, "item", pg_result_text(res, r, H_ITEM));
        ctl_json_str(&j, "buyer", pg_result_text(res, r, H_BUYER));
        ctl_json_num(&j, "qty", pg_result_text(res, r, H_QTY));
        ctl_json_num(&j, "qty_sold", pg_result_text(res, r, H_SOLD));
        ctl_json_str(&j, "state", pg_result_text(res, r, H_STATE));
        ctl_json_str(&j, "expires_at", pg_result_text(res, r, H_EXPIRES));
        ctl_json_bool(&j, "extended", pg_result_true(res, r, H_EXT));
        ctl_json_str(&j, "created_at", pg_result_text(res, r, H_CREATED));
        ctl_json_str(&j, "ended_at", pg_result_text(res, r, H_ENDED));
        ctl_json_str(&j, "idempotency_key", pg_result_text(res, r, H_KEY));
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_list_holds(PGconn *conn, const ctl_args *a, FILE *out)
{
    char hold[24], limit[16];
    snprintf(hold, sizeof hold, "%" PRId64, a->hold_id);
    snprintf(limit, sizeof limit, "%d", a->limit);
    const char *params[] = {a->tenant, a->hold_id > 0 ? hold : NULL,
                            a->buyer[0] != '\0' ? a->buyer : NULL,
                            a->item[0] != '\0' ? a->item : NULL, limit};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_holds, 5, params, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQnfields(res) != H_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the holds query\n");
        rc = ESC_EDB;
    } else if (a->hold_id > 0 && PQntuples(res) == 0) {
        fprintf(stderr, "escrowctl: tenant %s has no hold %s\n", a->tenant, hold);
        rc = ESC_ENOT_FOUND;
    } else if (a->json) {
        holds_json(out, res);
    } else {
        holds_human(out, res);
    }
    PQclear(res);
    return rc;
}

static void events_human(FILE *out, const PGresult *res, int limit)
{
    fprintf(out, "%-10s %-24s %-16s %-7s %-16s %-14s %-17s %s\n", "EVENT_ID", "AT", "ITEM",
            "SEGMENT", "HOLD_ID", "BUYER", "KIND", "QTY");
    int n = PQntuples(res);
    for (int r = 0; r < n; r++) {
        fprintf(out, "%-10s %-24s %-16s %-7s %-16s %-14s %-17s %s\n",
                pg_result_text_or(res, r, E_ID, "-"), pg_result_text_or(res, r, E_AT, "-"),
                pg_result_text_or(res, r, E_ITEM, "-"), pg_result_text_or(res, r, E_SEG, "-"),
                pg_result_text_or(res, r, E_HOLD, "-"), pg_result_text_or(res, r, E_BUYER, "-"),
                pg_result_text_or(res, r, E_KIND, "-"), pg_result_text_or(res, r, E_QTY, "-"));
    }
    fprintf(out, "%d event%s", n, n == 1 ? "" : "s");
    if (n == limit) {
        fprintf(out, "; more with --after %s", pg_result_text_or(res, n - 1, E_ID, "-"));
    }
    fputc('\n', out);
}

static void events_json(FILE *out, const PGresult *res)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "events");
    for (int r = 0; r < PQntuples(res); r++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "event_id", pg_result_text(res, r, E_ID));
        ctl_json_str(&j, "at", pg_result_text(res, r, E_AT));
        ctl_json_str(&j, "item", pg_result_text(res, r, E_ITEM));
        ctl_json_num(&j, "segment_id", pg_result_text(res, r, E_SEG));
        ctl_json_num(&j, "hold_id", pg_result_text(res, r, E_HOLD));
        ctl_json_str(&j, "buyer", pg_result_text(res, r, E_BUYER));
        ctl_json_str(&j, "kind", pg_result_text(res, r, E_KIND));
        ctl_json_num(&j, "qty", pg_result_text(res, r, E_QTY));
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_list_events(PGconn *conn, const ctl_args *a, FILE *out)
{
    char after[24], limit[16];
    snprintf(after, sizeof after, "%" PRId64, a->after);
    snprintf(limit, sizeof limit, "%d", a->limit);
    const char *params[] = {a->tenant, a->item[0] != '\0' ? a->item : NULL, after, limit};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_events, 4, params, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQnfields(res) != E_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the events query\n");
        rc = ESC_EDB;
    } else if (a->json) {
        events_json(out, res);
    } else {
        events_human(out, res, a->limit);
    }
    PQclear(res);
    return rc;
}
