/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_json.h - escrow-gateway's JSON, with jansson: request bodies parsed
 * and validated into plain structs (every field bounded as the wire bounds
 * it; an unknown field, a wrong type or a value out of range is refused
 * with the field's name), and the answers written (a hold, a cart's holds,
 * an error, an event, a cursor). Pure: no I/O.
 *
 * Hold ids and event ids travel as strings: they are 64-bit and a
 * JavaScript number holds 53 bits.
 *
 * The functions that write return a NUL-terminated string the caller owns
 * (free()), or NULL when out of memory.
 */
#ifndef ESC_GW_JSON_H
#define ESC_GW_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"
#include "escrow.h"
#include "escrow_feed.h"
#include "gw_answer.h"

#define GW_FIELD_LEN_MAX 47
#define GW_WHY_MAX 240

/* Why a body was refused: the field to blame ("body" when the document
 * itself is) and a sentence. */
typedef struct gw_bad {
    char field[GW_FIELD_LEN_MAX + 1];
    char why[GW_WHY_MAX];
} gw_bad;

/* POST /v1/holds: {item, buyer, qty, ttl_ms?} */
typedef struct gw_reserve_body {
    char item[ESC_ITEM_LEN_MAX + 1];
    char buyer[ESC_BUYER_LEN_MAX + 1];
    int64_t qty;     /* 1..ESC_QTY_MAX */
    uint32_t ttl_ms; /* 0 (the item's) or ESC_TTL_MS_MIN..ESC_TTL_MS_MAX */
} gw_reserve_body;

typedef struct gw_cart_line {
    char item[ESC_ITEM_LEN_MAX + 1];
    int64_t qty;
} gw_cart_line;

/* POST /v1/carts: {buyer, lines: [{item, qty}], ttl_ms?} */
typedef struct gw_cart_body {
    char buyer[ESC_BUYER_LEN_MAX + 1];
    size_t nlines; /* 1..ESC_CART_LINES_MAX */
    gw_cart_line lines[ESC_CART_LINES_MAX];
    uint32_t ttl_ms;
} gw_cart_body;

/* Each returns 0, or ESC_EINVAL with *bad filled; body is len bytes
 * (borrowed, need not be NUL-terminated). */
int gw_json_reserve(const char *body, size_t len, gw_reserve_body *out, gw_bad *bad);
int gw_json_cart(const char *body, size_t len, gw_cart_body *out, gw_bad *bad);
/* confirm {qty?}: 0 (or absent) sells the whole hold. An empty body is {}. */
int gw_json_confirm(const char *body, size_t len, int64_t *qty, gw_bad *bad);
/* extend {ttl_ms?}: absent = 0, the item's hold ttl. An empty body is {}. */
int gw_json_extend(const char *body, size_t len, uint32_t *ttl_ms, gw_bad *bad);
/* release: an empty body or {}. */
int gw_json_release(const char *body, size_t len, gw_bad *bad);
/* cursor {event_id}: a string of digits (as events show it) or a number. */
int gw_json_cursor(const char *body, size_t len, int64_t *event_id, gw_bad *bad);

/* {"id", "item", "buyer", "qty", "qty_sold", "state", "expires_at_ms", "extended"} */
char *gw_json_hold(const esc_hold *h);
/* {"holds": [hold, ...]} */
char *gw_json_holds(const esc_hold *holds, size_t n);
/* {"code", "message", "retryable", "field"?, "line"?, "hold"?}: field NULL
 * and line < 0 leave those out; hold may be NULL. */
char *gw_json_error(const gw_answer *a, const char *message, const char *field, long line,
                    const esc_hold *hold);
/* {"event_id", "item", "kind", "qty", "hold_id", "segment_id", "buyer",
 * "actor", "at"}: one event of the feed (hold_id and segment_id null when
 * the event has none). */
char *gw_json_event(const feed_event *e);
/* {"consumer", "event_id", "moved"} */
char *gw_json_cursor_answer(const char *consumer, int64_t event_id, bool moved);
/* {"status": status} */
char *gw_json_status(const char *status);

#endif
