/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_array.c - see pg_array.h.
 *
 * The builder keeps "{" and the elements in its buffer, with room for the
 * closing brace and the NUL: pg_array_text writes them past len without
 * counting them, so elements can still be appended after a look at the text.
 */
#include "pg_array.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"

/* Digits of an int64 with its sign, and the NUL. */
#define I64_TEXT_MAX 21

void pg_array_init(pg_array *a)
{
    memset(a, 0, sizeof *a);
}

void pg_array_fini(pg_array *a)
{
    free(a->p);
    pg_array_init(a);
}

void pg_array_reset(pg_array *a)
{
    a->len = 0;
    a->n = 0;
}

/* Appends n bytes, keeping room for "}" and the NUL. */
static void put(pg_array *a, const char *s, size_t n)
{
    if (a->len + n + 2 > a->cap) {
        a->cap = (a->len + n + 2) * 2;
        a->p = esc_xrealloc(a->p, a->cap);
    }
    memcpy(a->p + a->len, s, n);
    a->len += n;
}

/* "{" before the first element, "," between elements. */
static void sep(pg_array *a)
{
    if (a->len == 0) {
        put(a, "{", 1);
    }
    if (a->n++ > 0) {
        put(a, ",", 1);
    }
}

void pg_array_i64(pg_array *a, int64_t v)
{
    char b[I64_TEXT_MAX + 1];
    int n = snprintf(b, sizeof b, "%" PRId64, v);
    sep(a);
    put(a, b, (size_t)n);
}

void pg_array_str(pg_array *a, const char *s)
{
    sep(a);
    put(a, "\"", 1);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            put(a, "\\", 1);
        }
        put(a, s, 1);
    }
    put(a, "\"", 1);
}

const char *pg_array_text(pg_array *a)
{
    if (a->len == 0) {
        put(a, "{", 1);
    }
    a->p[a->len] = '}'; /* put() kept room for both */
    a->p[a->len + 1] = '\0';
    return a->p;
}

/* ---- reading -------------------------------------------------------------------- */

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
        p++;
    }
    return p;
}

int pg_array_iter_init(pg_array_iter *it, const char *text)
{
    const char *p = text != NULL ? skip_space(text) : NULL;
    if (p == NULL || *p != '{') {
        return ESC_EINVAL;
    }
    it->p = p + 1;
    it->started = false;
    it->done = false;
    return 0;
}

/* A quoted element at *pp (after its opening quote) into buf. */
static int read_quoted(const char **pp, char *buf, size_t cap)
{
    const char *p = *pp;
    size_t n = 0;
    for (; *p != '"'; p++) {
        if (*p == '\\') {
            p++;
        }
        if (*p == '\0' || n + 1 >= cap) {
            return ESC_EINVAL;
        }
        buf[n++] = *p;
    }
    buf[n] = '\0';
    *pp = p + 1;
    return 0;
}

/* An unquoted element at *pp into buf, trailing spaces dropped. NULL is the
 * SQL NULL unless a backslash made it text. */
static int read_bare(const char **pp, char *buf, size_t cap, bool *is_null)
{
    const char *p = *pp;
    size_t n = 0, kept = 0;
    bool escaped = false;
    for (; *p != ',' && *p != '}'; p++) {
        bool esc = *p == '\\';
        if (esc) {
            p++;
            escaped = true;
        } else if (*p == '{' || *p == '"') {
            return ESC_EINVAL; /* nested arrays are not read */
        }
        if (*p == '\0' || n + 1 >= cap) {
            return ESC_EINVAL;
        }
        buf[n++] = *p;
        kept = *p == ' ' && !esc ? kept : n;
    }
    buf[kept] = '\0';
    *is_null = !escaped && strcasecmp(buf, "NULL") == 0;
    if (*is_null) {
        buf[0] = '\0';
    }
    *pp = p;
    return kept == 0 ? ESC_EINVAL : 0;
}

int pg_array_iter_next(pg_array_iter *it, char *buf, size_t cap, bool *is_null)
{
    if (it->done || cap == 0) {
        return it->done ? 0 : ESC_EINVAL;
    }
    const char *p = skip_space(it->p);
    if (!it->started && *p == '}') {
        it->done = true;
        return *skip_space(p + 1) == '\0' ? 0 : ESC_EINVAL; /* "{}" */
    }
    it->started = true;
    *is_null = false;
    int rc = 0;
    if (*p == '"') {
        p++;
        rc = read_quoted(&p, buf, cap);
    } else {
        rc = read_bare(&p, buf, cap, is_null);
    }
    if (rc != 0) {
        return rc;
    }
    p = skip_space(p);
    if (*p == '}') {
        it->done = true;
        return *skip_space(p + 1) == '\0' ? 1 : ESC_EINVAL;
    }
    if (*p != ',') {
        return ESC_EINVAL;
    }
    it->p = p + 1;
    return 1;
}

/* Reads every element of text; writes them to out[0..cap) when out is set. */
static int read_all_i64(const char *text, int64_t *out, size_t cap, size_t *n)
{
    pg_array_iter it;
    char el[I64_TEXT_MAX + 1];
    bool is_null = false;
    size_t count = 0;
    int rc = pg_array_iter_init(&it, text);
    while (rc == 0 && (rc = pg_array_iter_next(&it, el, sizeof el, &is_null)) == 1) {
        int64_t v = 0;
        if (is_null || count == cap || pg_result_parse_i64(el, &v) != 0) {
            return ESC_EINVAL;
        }
        if (out != NULL) {
            out[count] = v;
        }
        count++;
        rc = 0;
    }
    *n = count;
    return rc;
}

int pg_array_parse_i64(const char *text, int64_t *out, size_t cap, size_t *n)
{
    size_t count = 0;
    int rc = read_all_i64(text, NULL, cap, &count); /* out is written only when all is valid */
    if (rc == 0) {
        rc = read_all_i64(text, out, cap, &count);
    }
    if (rc == 0) {
        *n = count;
    }
    return rc;
}
