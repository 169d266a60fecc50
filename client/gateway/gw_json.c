/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_json.c - see gw_json.h. Bodies are parsed by one table-driven
 * walker: each endpoint lists its fields (name, kind, required, range,
 * where it goes); anything else in the object is refused by name.
 */
#include "gw_json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "escrow_errors.h"
#include "wire.h"

enum field_kind { F_ID, F_INT, F_TTL };

typedef struct field_def {
    const char *name;
    enum field_kind kind;
    bool required;
    int64_t min, max; /* F_INT; F_ID: max is the length bound */
    void *dest;       /* F_ID: char[max + 1]; F_INT: int64_t; F_TTL: uint32_t */
} field_def;

static int bad_at(gw_bad *bad, const char *fieldname, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad_at(gw_bad *bad, const char *fieldname, const char *fmt, ...)
{
    snprintf(bad->field, sizeof bad->field, "%s", fieldname);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bad->why, sizeof bad->why, fmt, ap);
    va_end(ap);
    return ESC_EINVAL;
}

/* The body as a JSON object; an empty (or blank) body is {} when
 * empty_ok. Returns the object (json_decref) or NULL with *bad. */
static json_t *load_object(const char *body, size_t len, bool empty_ok, gw_bad *bad)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t')) {
        i++;
    }
    if (i == len) {
        if (!empty_ok) {
            bad_at(bad, "body", "the body must be a JSON object");
            return NULL;
        }
        return json_object();
    }
    json_error_t err;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    if (doc == NULL) {
        bad_at(bad, "body", "the body is not JSON: %s (line %d, column %d)", err.text, err.line,
               err.column);
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        bad_at(bad, "body", "the body must be a JSON object");
        return NULL;
    }
    return doc;
}

static int take_field(const field_def *f, json_t *v, gw_bad *bad)
{
    if (f->kind == F_ID) {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (s == NULL || strlen(s) != json_string_length(v) || !wire_id_valid(s, (size_t)f->max)) {
            return bad_at(bad, f->name,
                          "%s must be a string of 1..%" PRId64
                          " printable ASCII characters (no spaces)",
                          f->name, f->max);
        }
        memcpy(f->dest, s, strlen(s) + 1);
        return 0;
    }
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
    if (f->kind == F_TTL) {
        if (!json_is_integer(v) || x < 0 || x > ESC_TTL_MS_MAX || (x > 0 && x < ESC_TTL_MS_MIN)) {
            return bad_at(bad, f->name, "%s must be 0 (the item's hold ttl) or an integer %u..%u",
                          f->name, ESC_TTL_MS_MIN, ESC_TTL_MS_MAX);
        }
        *(uint32_t *)f->dest = (uint32_t)x;
        return 0;
    }
    if (!json_is_integer(v) || x < f->min || x > f->max) {
        return bad_at(bad, f->name, "%s must be an integer %" PRId64 "..%" PRId64, f->name, f->min,
                      f->max);
    }
    *(int64_t *)f->dest = (int64_t)x;
    return 0;
}

/* Walks obj against fields[0..n): unknown fields, wrong kinds, values out
 * of range and missing required fields are refused, by name. */
static int walk(json_t *obj, const field_def *fields, size_t n, gw_bad *bad)
{
    bool seen[8] = {false};
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        size_t i = 0;
        while (i < n && strcmp(fields[i].name, key) != 0) {
            i++;
        }
        if (i == n) {
            return bad_at(bad, key, "unknown field '%.64s'", key);
        }
        if (fields[i].dest == NULL) {
            continue; /* handled by the caller (a cart's lines) */
        }
        int rc = take_field(&fields[i], v, bad);
        if (rc != 0) {
            return rc;
        }
        seen[i] = true;
    }
    for (size_t i = 0; i < n; i++) {
        if (fields[i].required && fields[i].dest != NULL && !seen[i]) {
            return bad_at(bad, fields[i].name, "%s is required", fields[i].name);
        }
    }
    return 0;
}

/* Loads body and walks it; 0 or ESC_EINVAL. */
static int parse(const char *body, size_t len, bool empty_ok, const field_def *fields, size_t n,
                 gw_bad *bad)
{
    json_t *obj = load_object(body, len, empty_ok, bad);
    if (obj == NULL) {
        return ESC_EINVAL;
    }
    int rc = walk(obj, fields, n, bad);
    json_decref(obj);
    return rc;
}

int gw_json_reserve(const char *body, size_t len, gw_reserve_body *out, gw_bad *bad)
{
    memset(out, 0, sizeof *out);
    const field_def fields[] = {
        {"item", F_ID, true, 1, ESC_ITEM_LEN_MAX, out->item},
        {"buyer", F_ID, true, 1, ESC_BUYER_LEN_MAX, out->buyer},
        {"qty", F_INT, true, 1, ESC_QTY_MAX, &out->qty},
        {"ttl_ms", F_TTL, false, 0, 0, &out->ttl_ms},
    };
    return parse(body, len, false, fields, sizeof fields / sizeof fields[0], bad);
}

/* lines[i] as {item, qty}. */
static int cart_line(json_t *v, size_t i, gw_cart_line *out, gw_bad *bad)
{
    char name[GW_FIELD_LEN_MAX + 1];
    if (!json_is_object(v)) {
        snprintf(name, sizeof name, "lines[%zu]", i);
        return bad_at(bad, name, "%s must be an object {item, qty}", name);
    }
    const field_def fields[] = {
        {"item", F_ID, true, 1, ESC_ITEM_LEN_MAX, out->item},
        {"qty", F_INT, true, 1, ESC_QTY_MAX, &out->qty},
    };
    int rc = walk(v, fields, 2, bad);
    if (rc != 0) {
        /* name the line: "lines[2].qty" */
        char inner[16]; /* item or qty (or an unknown name, cut) */
        size_t n = strnlen(bad->field, sizeof inner - 1);
        memcpy(inner, bad->field, n);
        inner[n] = '\0';
        snprintf(bad->field, sizeof bad->field, "lines[%zu].%s", i % 1000, inner);
    }
    return rc;
}

static int cart_lines(json_t *lines, gw_cart_body *out, gw_bad *bad)
{
    if (!json_is_array(lines) || json_array_size(lines) < 1 ||
        json_array_size(lines) > ESC_CART_LINES_MAX) {
        return bad_at(bad, "lines", "lines must be an array of 1..%d {item, qty} objects",
                      ESC_CART_LINES_MAX);
    }
    out->nlines = json_array_size(lines);
    for (size_t i = 0; i < out->nlines; i++) {
        int rc = cart_line(json_array_get(lines, i), i, &out->lines[i], bad);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int gw_json_cart(const char *body, size_t len, gw_cart_body *out, gw_bad *bad)
{
    memset(out, 0, sizeof *out);
    const field_def fields[] = {
        {"buyer", F_ID, true, 1, ESC_BUYER_LEN_MAX, out->buyer},
        {"lines", F_INT, true, 0, 0, NULL}, /* walked below */
        {"ttl_ms", F_TTL, false, 0, 0, &out->ttl_ms},
    };
    json_t *obj = load_object(body, len, false, bad);
    if (obj == NULL) {
        return ESC_EINVAL;
    }
    int rc = walk(obj, fields, 3, bad);
    json_t *lines = json_object_get(obj, "lines");
    if (rc == 0 && lines == NULL) {
        rc = bad_at(bad, "lines", "lines is required");
    }
    if (rc == 0) {
        rc = cart_lines(lines, out, bad);
    }
    json_decref(obj);
    return rc;
}

int gw_json_confirm(const char *body, size_t len, int64_t *qty, gw_bad *bad)
{
    int64_t q = 0;
    const field_def fields[] = {{"qty", F_INT, false, 0, ESC_QTY_MAX, &q}};
    int rc = parse(body, len, true, fields, 1, bad);
    if (rc == 0) {
        *qty = q;
    }
    return rc;
}

int gw_json_extend(const char *body, size_t len, uint32_t *ttl_ms, gw_bad *bad)
{
    uint32_t t = 0;
    const field_def fields[] = {{"ttl_ms", F_TTL, false, 0, 0, &t}};
    int rc = parse(body, len, true, fields, 1, bad);
    if (rc == 0) {
        *ttl_ms = t;
    }
    return rc;
}

int gw_json_release(const char *body, size_t len, gw_bad *bad)
{
    return parse(body, len, true, NULL, 0, bad);
}

/* A decimal event id, 1..INT64_MAX. */
static int event_id_of(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 1) {
            return ESC_EINVAL;
        }
        *out = (int64_t)x;
        return 0;
    }
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > 19 || s[0] == '0') {
        return ESC_EINVAL;
    }
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || x > (INT64_MAX - (s[i] - '0')) / 10) {
            return ESC_EINVAL;
        }
        x = x * 10 + (s[i] - '0');
    }
    *out = x;
    return 0;
}

int gw_json_cursor(const char *body, size_t len, int64_t *event_id, gw_bad *bad)
{
    json_t *obj = load_object(body, len, false, bad);
    if (obj == NULL) {
        return ESC_EINVAL;
    }
    const field_def fields[] = {{"event_id", F_INT, true, 0, 0, NULL}};
    int rc = walk(obj, fields, 1, bad);
    json_t *v = json_object_get(obj, "event_id");
    if (rc == 0 && (v == NULL || event_id_of(v, event_id) != 0)) {
        rc = bad_at(bad, "event_id", "event_id is required: an event's id, \"123\" or 123");
    }
    json_decref(obj);
    return rc;
}

/* ---- answers -------------------------------------------------------------- */

static json_t *id_string(uint64_t id)
{
    char s[24];
    snprintf(s, sizeof s, "%" PRIu64, id);
    return json_string(s);
}

static json_t *hold_object(const esc_hold *h)
{
    return json_pack("{s:o, s:s, s:s, s:I, s:I, s:s, s:I, s:b}", "id", id_string(h->hold_id),
                     "item", h->item_id, "buyer", h->buyer_id, "qty", (json_int_t)h->qty,
                     "qty_sold", (json_int_t)h->qty_sold, "state", esc_hold_state_name(h->state),
                     "expires_at_ms", (json_int_t)h->expires_at_ms, "extended", (int)h->extended);
}

/* Dumps and frees doc (NULL-safe). */
static char *dump(json_t *doc)
{
    if (doc == NULL) {
        return NULL;
    }
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}

char *gw_json_hold(const esc_hold *h)
{
    return dump(hold_object(h));
}

char *gw_json_holds(const esc_hold *holds, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < n; i++) {
        if (json_array_append_new(arr, hold_object(&holds[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr != NULL ? dump(json_pack("{s:o}", "holds", arr)) : NULL;
}

char *gw_json_error(const gw_answer *a, const char *message, const char *field, long line,
                    const esc_hold *hold)
{
    json_t *doc = json_pack("{s:s, s:s, s:b}", "code", a->code, "message", message, "retryable",
                            (int)a->retryable);
    if (doc == NULL) {
        return NULL;
    }
    int rc = 0;
    if (field != NULL) {
        rc |= json_object_set_new(doc, "field", json_string(field));
    }
    if (line >= 0) {
        rc |= json_object_set_new(doc, "line", json_integer(line));
    }
    if (hold != NULL) {
        rc |= json_object_set_new(doc, "hold", hold_object(hold));
    }
    if (rc != 0) {
        json_decref(doc);
        return NULL;
    }
    return dump(doc);
}

char *gw_json_event(const feed_event *e)
{
    json_t *hold = e->hold_id > 0 ? id_string((uint64_t)e->hold_id) : json_null();
    json_t *seg = e->segment_id > 0 ? id_string((uint64_t)e->segment_id) : json_null();
    return dump(json_pack("{s:o, s:s, s:s, s:I, s:o, s:o, s:s, s:s, s:s}", "event_id",
                          id_string((uint64_t)e->event_id), "item", e->item, "kind", e->kind, "qty",
                          (json_int_t)e->qty, "hold_id", hold, "segment_id", seg, "buyer", e->buyer,
                          "actor", e->actor, "at", e->at));
}

char *gw_json_cursor_answer(const char *consumer, int64_t event_id, bool moved)
{
    return dump(json_pack("{s:s, s:o, s:b}", "consumer", consumer, "event_id",
                          id_string((uint64_t)event_id), "moved", (int)moved));
}

char *gw_json_status(const char *status)
{
    return dump(json_pack("{s:s}", "status", status));
}
