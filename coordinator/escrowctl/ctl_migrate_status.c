/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_migrate_status.c - see ctl_migrate_status.h. One read-only
 * transaction: whether schema_migrations exists, then its rows.
 */
#include "ctl_migrate_status.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "schema.h"
#include "schema_version.h"

#define TAG "/* escrow:ctl-migrate-status */ "

static const char sql_exists[] = TAG "SELECT to_regclass('schema_migrations') IS NOT NULL";
static const char sql_rows[] = TAG "SELECT version, name, to_char(applied_at AT TIME ZONE 'UTC', "
                                   "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM schema_migrations "
                                   "ORDER BY version";

/* The applied rows (res NULL: none, no table). */
static int read_rows(PGconn *conn, PGresult **res)
{
    PGresult *r = NULL;
    *res = NULL;
    int rc = ctl_db_query(conn, sql_exists, 0, NULL, &r);
    if (rc != 0) {
        return rc;
    }
    bool exists = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return exists ? ctl_db_query(conn, sql_rows, 0, NULL, res) : 0;
}

/* Is version v in the embedded migrations? */
static bool embedded(int v)
{
    for (size_t i = 0; i < schema_embedded_count; i++) {
        if (schema_embedded[i].version == v) {
            return true;
        }
    }
    return false;
}

static bool applied(const PGresult *res, int v)
{
    for (int i = 0; res != NULL && i < PQntuples(res); i++) {
        if (atoi(PQgetvalue(res, i, 0)) == v) {
            return true;
        }
    }
    return false;
}

static int db_version(const PGresult *res)
{
    int n = res != NULL ? PQntuples(res) : 0;
    return n > 0 ? atoi(PQgetvalue(res, n - 1, 0)) : 0;
}

static void print_text(const PGresult *res, FILE *out)
{
    int db = db_version(res), bin = schema_version_binary();
    char verdict[512];
    schema_version_message(schema_version_compat(db, bin), db, bin, "this release's daemons",
                           verdict, sizeof verdict);
    fprintf(out, "database schema version: %d\nthis escrowctl's version: %d\n", db, bin);
    fprintf(out, "daemons: %s\n", verdict);
    fprintf(out, "pending (escrowctl migrate applies them):");
    int n = 0;
    for (size_t i = 0; i < schema_embedded_count; i++) {
        if (!applied(res, schema_embedded[i].version)) {
            fprintf(out, " %s", schema_embedded[i].name);
            n++;
        }
    }
    fprintf(out, "%s\n", n == 0 ? " none" : "");
    fprintf(out, "applied:\n");
    for (int i = 0; res != NULL && i < PQntuples(res); i++) {
        int v = atoi(PQgetvalue(res, i, 0));
        fprintf(out, "  %-28s %s%s\n", PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                embedded(v) ? "" : "  (unknown to this escrowctl: a newer release)");
    }
}

static void print_json(const PGresult *res, FILE *out)
{
    int db = db_version(res), bin = schema_version_binary();
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_i64(&j, "database_version", db);
    ctl_json_i64(&j, "binary_version", bin);
    ctl_json_bool(&j, "daemons_run", schema_version_runs(schema_version_compat(db, bin)));
    ctl_json_begin_arr(&j, "pending");
    for (size_t i = 0; i < schema_embedded_count; i++) {
        if (!applied(res, schema_embedded[i].version)) {
            ctl_json_str(&j, NULL, schema_embedded[i].name);
        }
    }
    ctl_json_end_arr(&j);
    ctl_json_begin_arr(&j, "applied");
    for (int i = 0; res != NULL && i < PQntuples(res); i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_i64(&j, "version", atoi(PQgetvalue(res, i, 0)));
        ctl_json_str(&j, "name", PQgetvalue(res, i, 1));
        ctl_json_str(&j, "applied_at", PQgetvalue(res, i, 2));
        ctl_json_bool(&j, "known", embedded(atoi(PQgetvalue(res, i, 0))));
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_migrate_status(PGconn *conn, const ctl_args *a, FILE *out, bool *behind)
{
    PGresult *res = NULL;
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    rc = rc != 0 ? rc : read_rows(conn, &res);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        PQclear(res);
        return rc;
    }
    if (a->json) {
        print_json(res, out);
    } else {
        print_text(res, out);
    }
    bool current = db_version(res) == schema_version_binary();
    for (size_t i = 0; current && i < schema_embedded_count; i++) {
        current = applied(res, schema_embedded[i].version);
    }
    PQclear(res);
    *behind = !current;
    return 0;
}
