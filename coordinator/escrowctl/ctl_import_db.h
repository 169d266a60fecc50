/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_import_db.h - the database side of `escrowctl item import`
 * (ctl_import.h): the rows into a temporary table by COPY, the conflicts
 * with existing items, and the chunked writes.
 */
#ifndef CTL_IMPORT_DB_H
#define CTL_IMPORT_DB_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "ctl_import_parse.h"

/* How many conflicts are named on stderr (all are counted). */
#define CTL_IMPORT_ERRORS_SHOWN 20

/* Creates the session's temporary table import_rows and COPYs rows[0..n)
 * into it (with each item's split), after checking that region exists; the
 * rows whose item exists with the same values are taken out again and
 * counted in *unchanged. conn and rows borrowed. Returns 0, ESC_EINVAL
 * (unknown region), ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_import_db_load(PGconn *conn, const ctl_import_row *rows, size_t n, const char *region,
                       int64_t *unchanged);

/* The rows in [lo, hi) (indexes into the loaded rows) whose item exists
 * with other values: each named on stderr (up to CTL_IMPORT_ERRORS_SHOWN)
 * with its line; their number in *conflicts. Returns 0, ESC_EDB or
 * ESC_EUNAVAILABLE. */
int ctl_import_db_conflicts(PGconn *conn, size_t lo, size_t hi, int64_t *conflicts);

/* Writes the items of rows [lo, hi) that do not exist yet (tenants, items,
 * segments) in one transaction; *created is how many, *unchanged how many
 * existed by then with the same values (created concurrently). A conflict
 * found after the insert (a concurrent create with other values) rolls
 * everything back: ESC_ECONFLICT. Returns 0, ESC_ECONFLICT, ESC_EDB or
 * ESC_EUNAVAILABLE. */
int ctl_import_db_chunk(PGconn *conn, size_t lo, size_t hi, const char *region, int64_t *created,
                        int64_t *unchanged);

/* ANALYZE items and segments after a large import, so that the next
 * statements over them are planned for their new size (best effort). */
void ctl_import_db_analyze(PGconn *conn);

#endif
