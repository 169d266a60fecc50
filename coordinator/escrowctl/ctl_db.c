/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_db.c - see ctl_db.h.
 *
 * Connection defaults are set before the DSN so the DSN wins: a connect
 * timeout (a CLI must not hang forever on an unreachable host), an
 * application_name for pg_stat_activity, and client_min_messages=warning so
 * "relation already exists, skipping" notices do not clutter the output.
 */
#include "ctl_db.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "pg_result.h"
#include "sqlstate.h"

/* The error text without its trailing newline, for one-line messages. */
static void print_trimmed(const char *prefix, const char *msg)
{
    size_t n = msg != NULL ? strlen(msg) : 0;
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) {
        n--;
    }
    fprintf(stderr, "escrowctl: %s: %.*s", prefix, (int)n, msg != NULL ? msg : "");
}

int ctl_db_open(const char *dsn, PGconn **out)
{
    const char *const keys[] = {"connect_timeout", "application_name", "options", "dbname", NULL};
    const char *const vals[] = {CTL_DB_CONNECT_TIMEOUT_S, "escrowctl",
                                "-c client_min_messages=warning", dsn, NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (conn == NULL) {
        fprintf(stderr, "escrowctl: cannot connect to PostgreSQL: out of memory\n");
        return ESC_EUNAVAILABLE;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        print_trimmed("cannot connect to PostgreSQL", PQerrorMessage(conn));
        fputc('\n', stderr);
        PQfinish(conn);
        return ESC_EUNAVAILABLE;
    }
    *out = conn;
    return 0;
}

void ctl_db_close(PGconn *conn)
{
    if (conn != NULL) {
        PQfinish(conn);
    }
}

/* Reports a failed result (NULL = out of memory or connection lost). */
static int report(PGconn *conn, const PGresult *res)
{
    bool gone = PQstatus(conn) != CONNECTION_OK;
    if (res == NULL) {
        print_trimmed("database error", PQerrorMessage(conn));
        fputc('\n', stderr);
        return gone ? ESC_EUNAVAILABLE : ESC_EDB;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char *constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    print_trimmed("database error", PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
    fprintf(stderr, " (SQLSTATE %s%s%s)\n", state != NULL ? state : "?",
            constraint != NULL ? ", constraint " : "", constraint != NULL ? constraint : "");
    const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
    if (detail != NULL) {
        print_trimmed("detail", detail);
        fputc('\n', stderr);
    }
    if (state != NULL && (sqlstate_is(state, SQLSTATE_UNDEFINED_TABLE) ||
                          sqlstate_is(state, SQLSTATE_UNDEFINED_FUNCTION))) {
        fprintf(stderr, "escrowctl: this database has no escrow schema, or an older one: "
                        "run 'escrowctl migrate' on it first\n");
    }
    return gone ? ESC_EUNAVAILABLE : ESC_EDB;
}

int ctl_db_query(PGconn *conn, const char *sql, int nparams, const char *const *params,
                 PGresult **out)
{
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        int rc = report(conn, res);
        PQclear(res);
        return rc;
    }
    *out = res;
    return 0;
}

int ctl_db_exec(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql, nparams, params, &res);
    PQclear(res);
    return rc;
}

int ctl_db_exec_script(PGconn *conn, const char *sql)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        int rc = report(conn, res);
        PQclear(res);
        return rc;
    }
    PQclear(res);
    return 0;
}

int ctl_db_begin(PGconn *conn, const char *mode)
{
    char sql[128];
    int n = snprintf(sql, sizeof sql, "/* escrow:ctl */ BEGIN %s", mode);
    if (n < 0 || (size_t)n >= sizeof sql) {
        return ESC_EINTERNAL;
    }
    return ctl_db_exec(conn, sql, 0, NULL);
}

int ctl_db_commit(PGconn *conn)
{
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, "/* escrow:ctl */ COMMIT", 0, NULL, &res);
    if (rc == 0 && strcmp(PQcmdStatus(res), "COMMIT") != 0) {
        fprintf(stderr, "escrowctl: database error: the transaction was rolled back\n");
        rc = ESC_EDB;
    }
    PQclear(res);
    return rc;
}

void ctl_db_rollback(PGconn *conn)
{
    PGresult *res = PQexec(conn, "/* escrow:ctl */ ROLLBACK");
    PQclear(res);
}

int ctl_db_i64(const PGresult *res, int row, int col, int64_t *out)
{
    int rc = pg_result_i64(res, row, col, out);
    if (rc != 0 && pg_result_null(res, row, col)) {
        fprintf(stderr, "escrowctl: database error: unexpected NULL in column %s\n",
                PQfname(res, col));
    } else if (rc != 0) {
        fprintf(stderr, "escrowctl: database error: column %s is not an integer\n",
                PQfname(res, col));
    }
    return rc;
}

int ctl_db_region_self(PGconn *conn, char *out, size_t cap)
{
    static const char sql_has[] =
        "/* escrow:ctl-db */ SELECT to_regclass('region_self') IS NOT NULL";
    static const char sql_self[] = "/* escrow:ctl-db */ SELECT region FROM region_self";
    PGresult *res = NULL;
    out[0] = '\0';
    int rc = ctl_db_query(conn, sql_has, 0, NULL, &res);
    bool has = rc == 0 && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    res = NULL;
    if (rc == 0 && has) {
        rc = ctl_db_query(conn, sql_self, 0, NULL, &res);
        if (rc == 0 && PQntuples(res) == 1) {
            snprintf(out, cap, "%s", PQgetvalue(res, 0, 0));
        }
        PQclear(res);
    }
    return rc;

}

int ctl_db_scope(PGconn *conn, const char *tenant, const char *item)
{
    const char *p[2] = {tenant, item != NULL ? item : ""};
    PGresult *r = NULL;
    int rc =
        ctl_db_query(conn,
                     "/* escrow:ctl */ SELECT EXISTS (SELECT 1 FROM items WHERE tenant_id = $1) "
                     "OR EXISTS (SELECT 1 FROM tenants WHERE tenant_id = $1), "
                     "$2 = '' OR EXISTS (SELECT 1 FROM items "
                     "WHERE tenant_id = $1 AND item_id = $2)",
                     2, p, &r);
    if (rc != 0) {
        return rc;
    }
    bool tenant_known = PQgetvalue(r, 0, 0)[0] == 't';
    bool item_known = PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    if (!tenant_known) {
        fprintf(stderr, "escrowctl: no tenant %s\n", tenant);
        return ESC_ENOT_FOUND;
    }
    if (!item_known) {
        fprintf(stderr, "escrowctl: no item %s/%s\n", tenant, p[1]);
        return ESC_ENOT_FOUND;
    }
    return 0;
}
