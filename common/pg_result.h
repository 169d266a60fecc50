/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_result.h - reading the cells of a libpq result (PGresult) as C values,
 * with the checks that the bare PQgetvalue + strtoll pair leaves out: SQL
 * NULL, text that is not a number, a number out of the C type's range.
 *
 * libpq returns every cell as text (the result format the daemons and
 * escrowctl use). Two kinds of getters:
 *   - strict ones return 0 and the value, or ESC_EDB (the statement did not
 *     return what its caller expects: a schema or query mismatch) and leave
 *     *out untouched; for cells a caller must not trust blindly;
 *   - _or ones return the value, or the given default for NULL or a cell
 *     that is not a number; for columns the statement itself guarantees
 *     (NOT NULL integer columns, COALESCE, count(*)), where a failure cannot
 *     happen short of a bug and the caller has nothing better to do.
 * Text getters say what SQL NULL becomes. row and col must be in range (a
 * programmer error otherwise, as for PQgetvalue). No I/O, nothing allocated.
 */
#ifndef ESC_PG_RESULT_H
#define ESC_PG_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

/* The text of a bigint as PostgreSQL writes it (optional '-', decimal
 * digits, nothing else, within int64). Returns 0 and *out, or ESC_EDB. */
int pg_result_parse_i64(const char *s, int64_t *out);

/* True for SQL NULL. */
bool pg_result_null(const PGresult *res, int row, int col);

/* Strict integers: decimal text, optional '-', within the type's range. */
int pg_result_i64(const PGresult *res, int row, int col, int64_t *out);
int pg_result_i32(const PGresult *res, int row, int col, int32_t *out);
/* No sign; the whole uint64 range (xid8 and the like). */
int pg_result_u64(const PGresult *res, int row, int col, uint64_t *out);
/* Strict boolean: "t" or "f". */
int pg_result_bool(const PGresult *res, int row, int col, bool *out);

/* The integer, or dflt when the cell is NULL or not an int64. */
int64_t pg_result_i64_or(const PGresult *res, int row, int col, int64_t dflt);
/* The integer, or dflt when the cell is NULL or not an int32. */
int32_t pg_result_i32_or(const PGresult *res, int row, int col, int32_t dflt);
/* True only for "t": NULL and anything else are false. */
bool pg_result_true(const PGresult *res, int row, int col);

/* The text, borrowed from res; NULL for SQL NULL. */
const char *pg_result_text(const PGresult *res, int row, int col);
/* The text, or dflt (borrowed) for SQL NULL. */
const char *pg_result_text_or(const PGresult *res, int row, int col, const char *dflt);
/* Copies the text into dst[cap] ("" for SQL NULL). Returns 0, or ESC_EDB
 * when it does not fit (dst untouched). */
int pg_result_text_copy(const PGresult *res, int row, int col, char *dst, size_t cap);

#endif
