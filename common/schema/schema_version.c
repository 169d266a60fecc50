/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema_version.c - see schema_version.h.
 */
#include "schema_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

int schema_version_binary(void)
{
    return schema_embedded[schema_embedded_count - 1].version;
}

schema_verdict schema_version_compat(int db, int bin)
{
    if (db == bin) {
        return SCHEMA_SAME;
    }
    if (db == bin + 1) {
        return SCHEMA_NEXT;
    }
    return db < bin ? SCHEMA_OLDER : SCHEMA_TOO_NEW;
}

void schema_version_message(schema_verdict v, int db, int bin, const char *prog, char *out,
                            size_t cap)
{
    switch (v) {
    case SCHEMA_SAME:
        snprintf(out, cap, "the database schema is at version %d, as %s expects", db, prog);
        return;
    case SCHEMA_NEXT:
        snprintf(out, cap,
                 "the database schema is at version %d, one ahead of %s's version %d: compatible "
                 "(a rolling upgrade; upgrade %s next)",
                 db, prog, bin, prog);
        return;
    case SCHEMA_OLDER:
        snprintf(out, cap,
                 "the database schema is at version %d, %s needs version %d: run `escrowctl "
                 "migrate` (of this release) first; refusing to start",
                 db, prog, bin);
        return;
    default:
        snprintf(out, cap,
                 "the database schema is at version %d, %s (schema version %d) runs on versions "
                 "%d and %d only: upgrade %s (`escrowctl migrate --status` shows the versions); "
                 "refusing to start",
                 db, prog, bin, bin, bin + 1, prog);
        return;
    }
}

int schema_version_read(const PGresult *res, const char *sqlstate, int *version)
{
    if (res == NULL) {
        if (sqlstate != NULL && strcmp(sqlstate, SCHEMA_SQLSTATE_NO_TABLE) == 0) {
            *version = 0;
            return 0;
        }
        return -1;
    }
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) != 1 ||
        PQgetisnull(res, 0, 0)) {
        return -1;
    }
    char *end;
    long v = strtol(PQgetvalue(res, 0, 0), &end, 10);
    if (*end != '\0' || v < 0 || v > 1000000) {
        return -1;
    }
    *version = (int)v;
    return 0;
}

int schema_version_query(PGconn *conn, int *version, char *why, size_t why_len)
{
    PGresult *res = PQexec(conn, SCHEMA_VERSION_SQL);
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    bool failed = res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK;
    int rc = schema_version_read(failed ? NULL : res, state != NULL ? state : "", version);
    if (rc != 0) {
        snprintf(why, why_len, "cannot read the schema version: %s",
                 res != NULL ? PQresultErrorMessage(res) : PQerrorMessage(conn));
        size_t n = strlen(why);
        while (n > 0 && why[n - 1] == '\n') {
            why[--n] = '\0';
        }
    }
    PQclear(res);
    return rc;
}
