/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_db.h - escrowctl's edge to PostgreSQL (synchronous libpq).
 *
 * The one place where libpq results are checked and libpq errors translated
 * (foreign errors are translated once, at the edge): a failed statement is reported on stderr once,
 * with its SQLSTATE and constraint name, and becomes ESC_EDB (or ESC_EUNAVAILABLE when the
 * connection is gone). Callers never see a failed PGresult.
 */
#ifndef CTL_DB_H
#define CTL_DB_H

#include <stdint.h>

#include <libpq-fe.h>

/* Seconds libpq waits for a connection when the DSN does not say. */
#define CTL_DB_CONNECT_TIMEOUT_S "10"

/* Connects with dsn (borrowed). Returns 0 and *out (owned by the caller,
 * ctl_db_close), or ESC_EUNAVAILABLE after a sentence on stderr. */
int ctl_db_open(const char *dsn, PGconn **out);
void ctl_db_close(PGconn *conn);

/* Runs sql with text parameters (NULL entries are SQL NULL). On success
 * returns 0 and *out (owned by the caller: PQclear) for a command or a row
 * set; on failure reports it and returns ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_db_query(PGconn *conn, const char *sql, int nparams, const char *const *params,
                 PGresult **out);
/* ctl_db_query for statements whose result is not needed. */
int ctl_db_exec(PGconn *conn, const char *sql, int nparams, const char *const *params);
/* Sends sql (may hold many statements) with the simple query protocol. */
int ctl_db_exec_script(PGconn *conn, const char *sql);

/* BEGIN with the given options ("" or e.g. "ISOLATION LEVEL REPEATABLE READ
 * READ ONLY"); COMMIT, which fails (ESC_EDB) unless the server really
 * committed (an aborted transaction answers COMMIT with ROLLBACK). */
int ctl_db_begin(PGconn *conn, const char *mode);
int ctl_db_commit(PGconn *conn);
/* ROLLBACK, ignoring the answer: used on error paths, where the first error
 * was already reported. */
void ctl_db_rollback(PGconn *conn);

/* Whether tenant (and item, unless NULL or "") exist: a tenant is known
 * when it has an item or was registered (escrowctl tenant create). Returns
 * 0, or ESC_ENOT_FOUND after "no tenant T" / "no item T/I" on stderr (an
 * unknown tenant and an unknown item get the same kind of answer), or the
 * query's error. */
int ctl_db_scope(PGconn *conn, const char *tenant, const char *item);

/* Cell (row, col) as an integer (pg_result_i64), with a sentence on stderr
 * when it is NULL or not an integer. Returns 0, or ESC_EDB (*out untouched).
 * The other cells are read with pg_result.h. */
int ctl_db_i64(const PGresult *res, int row, int col, int64_t *out);

/* The region this database belongs to (region_self, migration 0008) into
 * out[cap]; "" when it has none (or the schema predates regions). Returns
 * 0 or an ESC_E* code (reported). */
int ctl_db_region_self(PGconn *conn, char *out, size_t cap);

#endif
