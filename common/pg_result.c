/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_result.c - see pg_result.h. Integers are parsed by hand-checked strtoll
 * / strtoull: no leading spaces or '+', nothing after the digits.
 */
#include "pg_result.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"

int pg_result_parse_i64(const char *s, int64_t *out)
{
    const char *d = s[0] == '-' ? s + 1 : s;
    if (d[0] < '0' || d[0] > '9') {
        return ESC_EDB;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return ESC_EDB;
    }
    *out = (int64_t)v;
    return 0;
}

bool pg_result_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) != 0;
}

int pg_result_i64(const PGresult *res, int row, int col, int64_t *out)
{
    if (pg_result_null(res, row, col)) {
        return ESC_EDB;
    }
    return pg_result_parse_i64(PQgetvalue(res, row, col), out);
}

int pg_result_i32(const PGresult *res, int row, int col, int32_t *out)
{
    int64_t v = 0;
    int rc = pg_result_i64(res, row, col, &v);
    if (rc == 0 && (v < INT32_MIN || v > INT32_MAX)) {
        rc = ESC_EDB;
    }
    if (rc == 0) {
        *out = (int32_t)v;
    }
    return rc;
}

int pg_result_u64(const PGresult *res, int row, int col, uint64_t *out)
{
    const char *s = pg_result_text(res, row, col);
    if (s == NULL || s[0] < '0' || s[0] > '9') {
        return ESC_EDB;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return ESC_EDB;
    }
    *out = (uint64_t)v;
    return 0;
}

int pg_result_bool(const PGresult *res, int row, int col, bool *out)
{
    const char *s = pg_result_text(res, row, col);
    if (s == NULL || (strcmp(s, "t") != 0 && strcmp(s, "f") != 0)) {
        return ESC_EDB;
    }
    *out = s[0] == 't';
    return 0;
}

int64_t pg_result_i64_or(const PGresult *res, int row, int col, int64_t dflt)
{
    int64_t v = dflt;
    (void)pg_result_i64(res, row, col, &v); /* v stays dflt on failure */
    return v;
}

int32_t pg_result_i32_or(const PGresult *res, int row, int col, int32_t dflt)
{
    int32_t v = dflt;
    (void)pg_result_i32(res, row, col, &v);
    return v;
}

bool pg_result_true(const PGresult *res, int row, int col)
{
    const char *s = pg_result_text(res, row, col);
    return s != NULL && strcmp(s, "t") == 0;
}

const char *pg_result_text(const PGresult *res, int row, int col)
{
    return pg_result_null(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

const char *pg_result_text_or(const PGresult *res, int row, int col, const char *dflt)
{
    const char *s = pg_result_text(res, row, col);
    return s != NULL ? s : dflt;
}

int pg_result_text_copy(const PGresult *res, int row, int col, char *dst, size_t cap)
{
    const char *s = pg_result_text_or(res, row, col, "");
    size_t n = pg_result_null(res, row, col) ? 0 : (size_t)PQgetlength(res, row, col);
    if (n >= cap) {
        return ESC_EDB;
    }
    memcpy(dst, s, n + 1);
    return 0;
}
