/* SPDX-License-Identifier: Apache-2.0 */
/*
 * counters.c - see counters.h. The only libpq code of escrow-load.
 */
#include "counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "escrow_errors.h"
#include "pg_result.h"

static const char *const query =
    "/* escrow:load-counters */ SELECT total, available, held, sold, in_flight, unallocated, ok "
    "FROM conservation WHERE tenant_id = $1 AND item_id = $2";

/* libpq's messages end in a newline; the caller prints them inside a line. */
static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) {
        s[--n] = '\0';
    }
}

static int read_row(const PGresult *res, load_counters *out, char *why, size_t why_len)
{
    load_counters c;
    memset(&c, 0, sizeof c);
    int64_t *cols[] = {&c.total, &c.available, &c.held, &c.sold, &c.in_flight, &c.unallocated};
    for (int i = 0; i < 6; i++) {
        if (pg_result_i64(res, 0, i, cols[i]) != 0) {
            snprintf(why, why_len, "column %s is not an integer", PQfname(res, i));
            return ESC_EDB;
        }
    }
    if (PQgetisnull(res, 0, 6)) {
        snprintf(why, why_len, "column ok is NULL");
        return ESC_EDB;
    }
    c.ok = pg_result_true(res, 0, 6);
    *out = c;
    return 0;
}

int load_counters_read(const char *dsn, const char *tenant_id, const char *item_id,
                       load_counters *out, char *why, size_t why_len)
{
    PGconn *conn = PQconnectdb(dsn);
    if (conn == NULL) {
        snprintf(why, why_len, "out of memory connecting");
        return ESC_EDB;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        snprintf(why, why_len, "connect: %s", PQerrorMessage(conn));
        PQfinish(conn);
        chomp(why);
        return ESC_EDB;
    }
    const char *params[2] = {tenant_id, item_id};
    PGresult *res = PQexecParams(conn, query, 2, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(why, why_len, "query: %s", PQerrorMessage(conn));
        rc = ESC_EDB;
    } else if (PQntuples(res) != 1 || PQnfields(res) != 7) {
        snprintf(why, why_len, "no conservation row for tenant %s item %s", tenant_id, item_id);
        rc = ESC_ENOT_FOUND;
    } else {
        rc = read_row(res, out, why, why_len);
    }
    PQclear(res);
    PQfinish(conn);
    chomp(why);
    return rc;
}
