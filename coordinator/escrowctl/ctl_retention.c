/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_retention.c - see ctl_retention.h. show reads the plan; run calls the
 * run function (one transaction) and then prints the plan as it is after.
 */
#include "ctl_retention.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-retention */ "

static const char sql_settings[] =
    TAG "SELECT window_days, feed_max_days, ahead_days, holds_part_days FROM retention_settings";
static const char sql_plan[] =
    TAG "SELECT tbl, part, COALESCE(part_day::text, '-'), est_rows, bytes, "
        "pg_size_pretty(bytes), action, reason FROM escrow_retention_plan()";
static const char sql_run[] =
    TAG "SELECT tbl, part, COALESCE(part_day::text, '-'), est_rows, bytes, "
        "pg_size_pretty(bytes), action, reason FROM escrow_retention_run()";

enum { R_TBL, R_PART, R_DAY, R_ROWS, R_BYTES, R_SIZE, R_ACTION, R_REASON, R_COLS_ };

static void rows_human(FILE *out, const PGresult *res, const char *title)
{
    int n = PQntuples(res);
    fprintf(out, "%s\n", title);
    if (n == 0) {
        fprintf(out, "  (none)\n");
        return;
    }
    fprintf(out, "  %-6s %-16s %-10s %12s %10s %-7s %s\n", "TABLE", "PARTITION", "DAY", "ROWS",
            "SIZE", "ACTION", "REASON");
    for (int r = 0; r < n; r++) {
        fprintf(out, "  %-6s %-16s %-10s %12s %10s %-7s %s\n", PQgetvalue(res, r, R_TBL),
                PQgetvalue(res, r, R_PART), PQgetvalue(res, r, R_DAY), PQgetvalue(res, r, R_ROWS),
                PQgetvalue(res, r, R_SIZE), PQgetvalue(res, r, R_ACTION),
                PQgetvalue(res, r, R_REASON));
    }
}

/* Totals per table and what the plan would drop. */
static void totals_human(FILE *out, const PGresult *res)
{
    static const char *const tables[] = {"holds", "outbox"};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        long long rows = 0, bytes = 0, drop_rows = 0, drop_bytes = 0, parts = 0, drops = 0;
        const char *oldest = "-";
        for (int r = 0; r < PQntuples(res); r++) {
            if (strcmp(PQgetvalue(res, r, R_TBL), tables[t]) != 0) {
                continue;
            }
            long long nr = pg_result_i64_or(res, r, R_ROWS, 0);
            long long nb = pg_result_i64_or(res, r, R_BYTES, 0);
            bool drop = strcmp(PQgetvalue(res, r, R_ACTION), "drop") == 0;
            parts++, rows += nr, bytes += nb;
            drops += drop, drop_rows += drop ? nr : 0, drop_bytes += drop ? nb : 0;
            if (nr > 0 && strcmp(oldest, "-") == 0) {
                oldest = PQgetvalue(res, r, R_DAY);
            }
        }
        fprintf(out,
                "%s: %lld partitions, %lld rows, %lld bytes, oldest day with rows %s; "
                "would drop %lld partitions (%lld rows, %lld bytes)\n",
                tables[t], parts, rows, bytes, oldest, drops, drop_rows, drop_bytes);
    }
}

static void rows_json(ctl_json *j, const char *key, const PGresult *res)
{
    ctl_json_begin_arr(j, key);
    for (int r = 0; r < PQntuples(res); r++) {
        ctl_json_begin_obj(j, NULL);
        ctl_json_str(j, "table", PQgetvalue(res, r, R_TBL));
        ctl_json_str(j, "partition", PQgetvalue(res, r, R_PART));
        ctl_json_str(j, "day", PQgetvalue(res, r, R_DAY));
        ctl_json_num(j, "rows", PQgetvalue(res, r, R_ROWS));
        ctl_json_num(j, "bytes", PQgetvalue(res, r, R_BYTES));
        ctl_json_str(j, "action", PQgetvalue(res, r, R_ACTION));
        ctl_json_str(j, "reason", PQgetvalue(res, r, R_REASON));
        ctl_json_end_obj(j);
    }
    ctl_json_end_arr(j);
}

static int query_rows(PGconn *conn, const char *sql, int cols, PGresult **res)
{
    int rc = ctl_db_query(conn, sql, 0, NULL, res);
    if (rc == 0 && PQnfields(*res) != cols) {
        fprintf(stderr, "escrowctl: unexpected answer to the retention query\n");
        PQclear(*res);
        *res = NULL;
        rc = ESC_EDB;
    }
    return rc;
}

static void print_all(FILE *out, const ctl_args *a, const PGresult *set, const PGresult *dropped,
                      const PGresult *plan)
{
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "window_days", PQgetvalue(set, 0, 0));
        ctl_json_num(&j, "feed_max_days", PQgetvalue(set, 0, 1));
        ctl_json_num(&j, "ahead_days", PQgetvalue(set, 0, 2));
        ctl_json_num(&j, "holds_part_days", PQgetvalue(set, 0, 3));
        if (dropped != NULL) {
            rows_json(&j, "dropped", dropped);
        }
        rows_json(&j, "partitions", plan);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
        return;
    }
    fprintf(out,
            "idempotency window %s days, feed consumers held back at most %s days, "
            "partitions made %s days ahead, holds partitions of %s days\n",
            PQgetvalue(set, 0, 0), PQgetvalue(set, 0, 1), PQgetvalue(set, 0, 2),
            PQgetvalue(set, 0, 3));
    if (dropped != NULL) {
        rows_human(out, dropped, "dropped now:");
    }
    rows_human(out, plan, dropped != NULL ? "partitions after the run:" : "partitions:");
    totals_human(out, plan);
}

int ctl_retention(PGconn *conn, const ctl_args *a, FILE *out, bool run)
{
    PGresult *set = NULL, *dropped = NULL, *plan = NULL;
    int rc = query_rows(conn, sql_settings, 4, &set);
    if (rc == 0 && PQntuples(set) != 1) {
        fprintf(stderr, "escrowctl: retention_settings must hold one row\n");
        rc = ESC_EDB;
    }
    rc = rc != 0 || !run ? rc : query_rows(conn, sql_run, R_COLS_, &dropped);
    rc = rc != 0 ? rc : query_rows(conn, sql_plan, R_COLS_, &plan);
    if (rc == 0) {
        print_all(out, a, set, dropped, plan);
    }
    PQclear(set);
    PQclear(dropped);
    PQclear(plan);
    return rc;
}
