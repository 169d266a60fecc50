/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_migrate.c - see ctl_migrate.h.
 *
 * Every transaction takes the lock first and only then looks at
 * schema_migrations; in READ COMMITTED each statement sees what committed
 * before it started, so a migrate that waited for the lock sees the rows the
 * other one wrote and skips those versions.
 */
#include "ctl_migrate.h"

#include <stdbool.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "log.h"
#include "schema.h"

#define TAG "/* escrow:ctl-migrate */ "

/* Embedded migrations one binary may carry (one bool each on the stack). */
#define CTL_MIGRATIONS_MAX 1024

static const char sql_lock[] = TAG "SELECT pg_advisory_xact_lock(" CTL_MIGRATE_LOCK_KEY ")";
static const char sql_table[] = TAG "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                    "version integer PRIMARY KEY, name text NOT NULL, "
                                    "applied_at timestamptz NOT NULL DEFAULT now())";
static const char sql_get[] = TAG "SELECT name FROM schema_migrations WHERE version = $1";
static const char sql_put[] = TAG "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)";
static const char sql_newer[] = TAG "SELECT version, name FROM schema_migrations "
                                    "WHERE version > $1 ORDER BY version LIMIT 100";

/* Lock, table, and "is m already there?" inside an open transaction. */
static int is_applied(PGconn *conn, const schema_migration *m, bool *applied)
{
    char version[16];
    snprintf(version, sizeof version, "%d", m->version);
    const char *params[] = {version};
    PGresult *res = NULL;
    int rc = ctl_db_exec(conn, sql_lock, 0, NULL);
    rc = rc != 0 ? rc : ctl_db_exec(conn, sql_table, 0, NULL);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_get, 1, params, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), m->name) != 0) {
        fprintf(stderr,
                "escrowctl: the database has migration %d as '%s', this escrowctl as '%s'\n",
                m->version, PQgetvalue(res, 0, 0), m->name);
        rc = ESC_ECONFLICT;
    }
    *applied = PQntuples(res) == 1;
    PQclear(res);
    return rc;
}

/* One migration in one transaction. *applied_now tells whether it ran. */
static int migrate_one(PGconn *conn, const schema_migration *m, bool *applied_now)
{
    bool present = false;
    char version[16];
    snprintf(version, sizeof version, "%d", m->version);
    const char *params[] = {version, m->name};
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL READ COMMITTED");
    rc = rc != 0 ? rc : is_applied(conn, m, &present);
    if (rc == 0 && !present) {
        rc = ctl_db_exec_script(conn, m->sql);
        if (rc != 0) {
            fprintf(stderr, "escrowctl: migration %s failed; it was rolled back\n", m->name);
        }
        rc = rc != 0 ? rc : ctl_db_exec(conn, sql_put, 2, params);
    }
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        return rc;
    }
    *applied_now = !present;
    return 0;
}

/* Versions the database has and this binary does not know: a newer escrowctl
 * migrated it. Worth a warning, not a failure. */
static int warn_newer(PGconn *conn, int latest)
{
    char version[16];
    snprintf(version, sizeof version, "%d", latest);
    const char *params[] = {version};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_newer, 1, params, &res);
    if (rc != 0) {
        return rc;
    }
    for (int i = 0; i < PQntuples(res); i++) {
        fprintf(stderr,
                "escrowctl: warning: the database has migration %s (%s) that this "
                "escrowctl does not know; this escrowctl is older than the schema\n",
                PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
    }
    PQclear(res);
    return 0;
}

int ctl_migrate(PGconn *conn, const ctl_args *a, FILE *out)
{
    bool applied[CTL_MIGRATIONS_MAX];
    size_t count = schema_embedded_count;
    ESC_ASSERT(count > 0 && count <= sizeof applied / sizeof applied[0]);
    size_t n_applied = 0;
    for (size_t i = 0; i < count; i++) {
        const schema_migration *m = &schema_embedded[i];
        ESC_ASSERT(i == 0 || m->version > schema_embedded[i - 1].version);
        int rc = migrate_one(conn, m, &applied[i]);
        if (rc != 0) {
            return rc;
        }
        n_applied += applied[i] ? 1 : 0;
        if (applied[i] && !a->json) {
            fprintf(out, "applied %s\n", m->name);
        }
    }
    int latest = schema_embedded[count - 1].version;
    int rc = warn_newer(conn, latest);
    if (rc != 0) {
        return rc;
    }
    if (!a->json) {
        fprintf(out, "schema at version %d (%zu applied now, %zu already present)\n", latest,
                n_applied, count - n_applied);
        return 0;
    }
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "applied");
    for (size_t i = 0; i < count; i++) {
        if (applied[i]) {
            ctl_json_str(&j, NULL, schema_embedded[i].name);
        }
    }
    ctl_json_end_arr(&j);
    ctl_json_i64(&j, "version", latest);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
    return 0;
}
