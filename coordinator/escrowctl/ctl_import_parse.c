/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_import_parse.c - see ctl_import_parse.h.
 *
 * Both formats come down to one text value (or none) per column, validated
 * by row_from_values() with item create's bounds and sentences.
 */
#include "ctl_import_parse.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ctl_num.h"
#include "escrow_errors.h"
#include "wire.h"

enum { F_TENANT, F_ITEM, F_TOTAL, F_SEGMENTS, F_MPO, F_MPB, F_TTL, F_COUNT_ };

static const char *const field_names[F_COUNT_] = {
    "tenant", "item", "total", "segments", "max_per_order", "max_per_buyer", "hold_ttl_ms"};

/* A value's longest text: an id, or a number. */
#define VALUE_MAX (ESC_ITEM_LEN_MAX + 2)

static int field_of(const char *name, size_t n)
{
    for (int f = 0; f < F_COUNT_; f++) {
        if (strlen(field_names[f]) == n && strncmp(field_names[f], name, n) == 0) {
            return f;
        }
    }
    return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

int ctl_import_format_of(const char *format, const char *path, ctl_import_format *out,
                         char why[CTL_WHY_MAX])
{
    if (format != NULL) {
        if (strcmp(format, "csv") == 0) {
            *out = CTL_IMPORT_CSV;
            return 0;
        }
        if (strcmp(format, "jsonl") == 0) {
            *out = CTL_IMPORT_JSONL;
            return 0;
        }
        return ctl_fail(why, "--format must be csv or jsonl, not '%s'", format);
    }
    if (ends_with(path, ".csv")) {
        *out = CTL_IMPORT_CSV;
        return 0;
    }
    if (ends_with(path, ".jsonl") || ends_with(path, ".ndjson") || ends_with(path, ".json")) {
        *out = CTL_IMPORT_JSONL;
        return 0;
    }
    return ctl_fail(why,
                    "cannot tell the format of '%s': name it .csv or .jsonl, or pass --format "
                    "csv|jsonl",
                    path);
}

bool ctl_import_blank(const char *line)
{
    return line[strspn(line, " \t\r")] == '\0';
}

/* Field at *p (quoted or not) into out[cap], truncated past cap (the
 * validation then refuses it as too long); advances *p to the byte after
 * the field's comma, or to NULL at the end of the line. */
static int csv_field(const char **p, char *out, size_t cap, long lineno, char why[CTL_WHY_MAX])
{
    const char *s = *p;
    size_t n = 0;
    bool quoted = *s == '"';
    s += quoted ? 1 : 0;
    for (;; s++) {
        if (quoted && *s == '"' && s[1] == '"') {
            s++;
        } else if (quoted && *s == '"') {
            quoted = false;
            s++;
            if (*s != ',' && *s != '\0' && !(*s == '\r' && s[1] == '\0')) {
                return ctl_fail(why, "line %ld: text after a closing quote", lineno);
            }
        }
        if (quoted && *s == '\0') {
            return ctl_fail(why, "line %ld: a quote is not closed", lineno);
        }
        if (!quoted && (*s == ',' || *s == '\0' || (*s == '\r' && s[1] == '\0'))) {
            break;
        }
        if (n + 1 < cap) {
            out[n++] = *s;
        } else {
            n = cap; /* too long: marked, refused by the caller */
        }
    }
    if (n >= cap) {
        out[0] = '\x01'; /* not printable: the validation refuses it */
        n = 1;
    }
    out[n] = '\0';
    *p = *s == ',' ? s + 1 : NULL;
    return 0;
}

int ctl_import_csv_header(const char *line, ctl_import_header *h, char why[CTL_WHY_MAX])
{
    ctl_import_header out = {.ncols = 0};
    bool seen[F_COUNT_] = {false};
    const char *p = line;
    while (p != NULL) {
        char name[VALUE_MAX];
        int rc = csv_field(&p, name, sizeof name, 1, why);
        if (rc != 0) {
            return rc;
        }
        int f = field_of(name, strlen(name));
        if (f < 0) {
            return ctl_fail(why,
                            "line 1: unknown column '%s' (the columns are tenant, item, total, "
                            "segments, max_per_order, max_per_buyer, hold_ttl_ms)",
                            name);
        }
        if (seen[f] || out.ncols == CTL_IMPORT_COLS_MAX) {
            return ctl_fail(why, "line 1: column '%s' given twice", name);
        }
        seen[f] = true;
        out.col[out.ncols++] = f;
    }
    for (int f = F_TENANT; f <= F_TOTAL; f++) {
        if (!seen[f]) {
            return ctl_fail(why,
                            "line 1: the header has no column '%s' (tenant, item and total are "
                            "required)",
                            field_names[f]);
        }
    }
    *h = out;
    return 0;
}

/* The integer of field f in [min, max], dflt when absent (NULL or ""). */
static int get_int(const char *const val[F_COUNT_], int f, int64_t min, int64_t max, int64_t dflt,
                   int64_t *out, long lineno, char why[CTL_WHY_MAX])
{
    if (val[f] == NULL || val[f][0] == '\0') {
        *out = dflt;
        return 0;
    }
    if (ctl_num_parse(val[f], min, max, out) != 0) {
        return ctl_fail(why, "line %ld: %s must be an integer in %" PRId64 "..%" PRId64, lineno,
                        field_names[f], min, max);
    }
    return 0;
}

static int get_id(char *dst, const char *src, size_t max, int f, long lineno, char why[CTL_WHY_MAX])
{
    if (src == NULL || !wire_id_valid(src, max)) {
        return ctl_fail(why,
                        "line %ld: %s must be 1..%zu printable ASCII characters without spaces",
                        lineno, field_names[f], max);
    }
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* item create's validation, one value (or NULL) per field. */
static int row_from_values(const char *const val[F_COUNT_], long lineno, ctl_import_row *row,
                           char why[CTL_WHY_MAX])
{
    ctl_import_row r = {.line = lineno};
    int64_t v[4];
    int rc = get_id(r.tenant, val[F_TENANT], ESC_TENANT_LEN_MAX, F_TENANT, lineno, why);
    rc = rc != 0 ? rc : get_id(r.item, val[F_ITEM], ESC_ITEM_LEN_MAX, F_ITEM, lineno, why);
    if (rc == 0 && (val[F_TOTAL] == NULL || val[F_TOTAL][0] == '\0')) {
        return ctl_fail(why, "line %ld: total is missing", lineno);
    }
    rc = rc != 0 ? rc : get_int(val, F_TOTAL, 0, ESC_TOTAL_MAX, 0, &r.total, lineno, why);
    rc = rc != 0 ? rc
                 : get_int(val, F_SEGMENTS, 1, ESC_SEGMENTS_PER_ITEM_MAX, 1, &v[0], lineno, why);
    rc = rc != 0 ? rc : get_int(val, F_MPO, 0, ESC_QTY_MAX, 0, &v[1], lineno, why);
    rc = rc != 0 ? rc : get_int(val, F_MPB, 0, ESC_TOTAL_MAX, 0, &v[2], lineno, why);
    rc = rc != 0 ? rc
                 : get_int(val, F_TTL, ESC_TTL_MS_MIN, ESC_TTL_MS_MAX, ESC_TTL_MS_DEFAULT, &v[3],
                           lineno, why);
    if (rc != 0) {
        return rc;
    }
    r.segments = (int)v[0];
    r.max_per_order = (int)v[1];
    r.max_per_buyer = (int)v[2];
    r.hold_ttl_ms = (int)v[3];
    *row = r;
    return 0;
}

int ctl_import_csv_row(const ctl_import_header *h, const char *line, long lineno,
                       ctl_import_row *row, char why[CTL_WHY_MAX])
{
    char text[CTL_IMPORT_COLS_MAX][VALUE_MAX];
    const char *val[F_COUNT_] = {NULL};
    const char *p = line;
    int n = 0;
    while (p != NULL) {
        if (n == h->ncols) {
            return ctl_fail(why, "line %ld: more than the header's %d columns", lineno, h->ncols);
        }
        int rc = csv_field(&p, text[n], sizeof text[n], lineno, why);
        if (rc != 0) {
            return rc;
        }
        val[h->col[n]] = text[n];
        n++;
    }
    if (n != h->ncols) {
        return ctl_fail(why, "line %ld: %d columns where the header has %d", lineno, n, h->ncols);
    }
    return row_from_values(val, lineno, row, why);
}

/* A JSON value as text: a string for the ids, an integer for the rest;
 * null is absent. */
static int json_text(json_t *v, int f, char *out, size_t cap, const char **val, long lineno,
                     char why[CTL_WHY_MAX])
{
    bool id = f == F_TENANT || f == F_ITEM;
    if (json_is_null(v)) {
        *val = NULL;
        return 0;
    }
    if (id && json_is_string(v)) {
        snprintf(out, cap, "%s",
                 strlen(json_string_value(v)) < cap ? json_string_value(v) : "\x01");
    } else if (!id && json_is_integer(v)) {
        snprintf(out, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    } else {
        return ctl_fail(why, "line %ld: %s must be a JSON %s", lineno, field_names[f],
                        id ? "string" : "integer");
    }
    *val = out;
    return 0;
}

int ctl_import_json_row(const char *line, long lineno, ctl_import_row *row, char why[CTL_WHY_MAX])
{
    json_error_t err;
    json_t *obj = json_loads(line, JSON_REJECT_DUPLICATES, &err);
    if (obj == NULL || !json_is_object(obj)) {
        json_decref(obj);
        return ctl_fail(why, "line %ld: not a JSON object%s%s", lineno, obj == NULL ? ": " : "",
                        obj == NULL ? err.text : "");
    }
    char text[F_COUNT_][VALUE_MAX];
    const char *val[F_COUNT_] = {NULL};
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(obj, key, v)
    {
        int f = field_of(key, strlen(key));
        if (f < 0) {
            rc = ctl_fail(why, "line %ld: unknown key '%.64s'", lineno, key);
            break;
        }
        rc = json_text(v, f, text[f], sizeof text[f], &val[f], lineno, why);
        if (rc != 0) {
            break;
        }
    }
    rc = rc != 0 ? rc : row_from_values(val, lineno, row, why);
    json_decref(obj);
    return rc;
}
