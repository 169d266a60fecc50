/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_route.h - escrow-gateway's endpoints: a request's method and path
 * matched to one of them, with the hold id or consumer name the path
 * carries. Pure: no I/O.
 *
 *   POST /v1/holds                     reserve (Idempotency-Key required)
 *   GET  /v1/holds/{id}                the hold
 *   POST /v1/holds/{id}/confirm        sell it (or part of it)
 *   POST /v1/holds/{id}/release        give it back
 *   POST /v1/holds/{id}/extend         buy a slow payer time, once
 *   POST /v1/carts                     all-or-nothing cart (Idempotency-Key required)
 *   GET  /v1/events                    the event feed as Server-Sent Events
 *   POST /v1/consumers/{name}/cursor   commit a consumer's cursor
 *   GET  /v1/openapi.json              the OpenAPI document
 *   GET  /healthz, GET /readyz         liveness, readiness
 * HEAD is answered like GET for the documents and probes.
 */
#ifndef ESC_GW_ROUTE_H
#define ESC_GW_ROUTE_H

#include <stdint.h>

#include "esc_limits.h"

/* Consumer names, as the feed's (escrow_feed.h FEED_CONSUMER_LEN_MAX). */
#define GW_CONSUMER_LEN_MAX 64

typedef enum gw_route_kind {
    GW_ROUTE_NONE = 0, /* no endpoint: see gw_route.err */
    GW_ROUTE_RESERVE,
    GW_ROUTE_GET,
    GW_ROUTE_CONFIRM,
    GW_ROUTE_RELEASE,
    GW_ROUTE_EXTEND,
    GW_ROUTE_CART,
    GW_ROUTE_EVENTS,
    GW_ROUTE_CURSOR,
    GW_ROUTE_OPENAPI,
    GW_ROUTE_HEALTHZ,
    GW_ROUTE_READYZ,
    GW_ROUTE_COUNT_
} gw_route_kind;

typedef struct gw_route {
    gw_route_kind kind;
    int err;           /* kind NONE: GW_ENO_ROUTE, GW_EMETHOD or ESC_EINVAL (a bad id) */
    const char *allow; /* GW_EMETHOD: the methods the path takes, for the Allow header */
    uint64_t hold_id;  /* the hold routes */
    char consumer[GW_CONSUMER_LEN_MAX + 1]; /* GW_ROUTE_CURSOR */
} gw_route;

/* Matches method and path (borrowed; the path without the query string,
 * as libmicrohttpd hands it over). Always fills *out. */
void gw_route_match(const char *method, const char *path, gw_route *out);

/* The endpoint's name as a metric label and in logs, "POST /v1/holds/{id}/confirm";
 * "other" for GW_ROUTE_NONE. */
const char *gw_route_name(gw_route_kind kind);

/* Parses a hold id as the API shows it: decimal digits of a uint64 that
 * names a segment (wire_hold_id_valid's rule). Returns 0 or ESC_EINVAL. */
int gw_route_hold_id(const char *s, uint64_t *out);

#endif
