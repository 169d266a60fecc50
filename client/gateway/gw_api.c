/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_api.c - see gw_api.h.
 */
#include "gw_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "gw_answer.h"
#include "gw_idem.h"
#include "gw_openapi.h"
#include "log.h"

static gw *gw_of(const gw_req *r)
{
    return (gw *)r->h->dispatch_arg;
}

/* ---- answers from libescrow ---------------------------------------------------- */

static void answer_outcome(gw_req *r, gw_outcome o, const esc_hold *hold)
{
    if (o.err != 0) {
        gw_http_error(r, o.err, NULL, NULL, -1, hold);
        return;
    }
    gw_reply_opts opts = {.replay = o.replay, .location_hold = o.http == 201 ? hold->hold_id : 0};
    gw_http_json(r, o.http, gw_json_hold(hold), &opts);
}

static void hold_cb(int status, const esc_hold *hold, void *arg)
{
    gw_req *r = arg;
    gw_client_done(r->client);
    r->client = NULL;
    answer_outcome(r, gw_idem_hold(r->op, status, hold, r->keyed, r->qty), hold);
}

static void cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line, void *arg)
{
    gw_req *r = arg;
    gw_client_done(r->client);
    r->client = NULL;
    gw_outcome o = gw_idem_cart(status, holds, nholds);
    if (o.err != 0) {
        /* failed_line is nlines when no single line is to blame */
        gw_http_error(r, o.err, NULL, NULL, failed_line < r->nlines ? (long)failed_line : -1, NULL);
        return;
    }
    gw_reply_opts opts = {.replay = o.replay};
    gw_http_json(r, o.http, gw_json_holds(holds, nholds), &opts);
}

/* ---- the calls ------------------------------------------------------------------- */

/* The tenant key's client, held for one call. Returns 0, or -1 after
 * answering (every client busy, or libescrow refused to make one). */
static int take_client(gw_req *r)
{
    gw_client *c;
    int rc = gw_clients_get(&gw_of(r)->clients, &r->who, &c);
    if (rc != 0) {
        gw_http_error(r, rc, rc == GW_EOVERLOADED ? "every cluster client is busy" : NULL, NULL, -1,
                      NULL);
        return -1;
    }
    gw_client_hold(c);
    r->client = c;
    metrics_set(gw_of(r)->metrics.clients, (double)gw_of(r)->clients.n);
    return 0;
}

/* Suspends r for a call that went out, or answers the call's refusal. */
static void after_call(gw_req *r, int rc)
{
    if (rc == 0) {
        gw_http_suspend(r);
        return;
    }
    gw_client_done(r->client);
    r->client = NULL;
    gw_http_error(r, rc, NULL, NULL, -1, NULL);
}

/* The Idempotency-Key: required by reserve and cart, optional elsewhere.
 * Returns it (NULL when absent and optional), or NULL after answering. */
static const char *idem_key(gw_req *r, bool required, bool *answered)
{
    const char *key = gw_http_header(r, "Idempotency-Key");
    *answered = false;
    if (key == NULL && !required) {
        return NULL;
    }
    if (key == NULL || !gw_idem_key_valid(key)) {
        gw_http_error(r, ESC_EINVAL,
                      key == NULL ? "the Idempotency-Key header is required: a retry with the "
                                    "same key never takes a second unit"
                                  : "the Idempotency-Key must be 1..128 printable ASCII "
                                    "characters (no spaces)",
                      "Idempotency-Key", -1, NULL);
        *answered = true;
        return NULL;
    }
    return key;
}

static void do_reserve(gw_req *r)
{
    gw_reserve_body b;
    gw_bad bad;
    bool answered;
    const char *key = idem_key(r, true, &answered);
    if (answered) {
        return;
    }
    if (gw_json_reserve(r->body, r->len, &b, &bad) != 0) {
        gw_http_error(r, ESC_EINVAL, bad.why, bad.field, -1, NULL);
        return;
    }
    esc_reserve_req q = {b.item, b.buyer, b.qty, key, b.ttl_ms};
    r->op = GW_OP_RESERVE;
    r->keyed = true;
    if (take_client(r) != 0) {
        return;
    }
    after_call(r, esc_async_reserve(r->client->a, &q, 0, hold_cb, r));
}

static void do_cart(gw_req *r)
{
    static gw_cart_body b; /* large; the loop is single-threaded and libescrow copies it */
    gw_bad bad;
    bool answered;
    const char *key = idem_key(r, true, &answered);
    if (answered) {
        return;
    }
    if (gw_json_cart(r->body, r->len, &b, &bad) != 0) {
        gw_http_error(r, ESC_EINVAL, bad.why, bad.field, -1, NULL);
        return;
    }
    esc_cart_line lines[ESC_CART_LINES_MAX];
    for (size_t i = 0; i < b.nlines; i++) {
        if (!gw_idem_cart_key_fits(key, strlen(b.lines[i].item))) {
            gw_http_error(r, ESC_EINVAL,
                          "the Idempotency-Key is too long for this cart: each line's key is "
                          "\"<key>/<item>\", at most 128 characters",
                          "Idempotency-Key", (long)i, NULL);
            return;
        }
        lines[i].item_id = b.lines[i].item;
        lines[i].qty = b.lines[i].qty;
    }
    r->keyed = true;
    r->nlines = b.nlines;
    if (take_client(r) != 0) {
        return;
    }
    int rc = esc_async_reserve_cart(r->client->a, b.buyer, lines, b.nlines, key, b.ttl_ms, 0,
                                    cart_cb, r);
    after_call(r, rc);
}

/* The body of confirm, release, extend (get has none to read). Returns 0,
 * or -1 after answering 400. */
static int hold_body(gw_req *r, uint32_t *ttl_ms)
{
    gw_bad bad;
    int rc = 0;
    switch (r->route.kind) {
    case GW_ROUTE_CONFIRM:
        r->op = GW_OP_CONFIRM;
        rc = gw_json_confirm(r->body, r->len, &r->qty, &bad);
        break;
    case GW_ROUTE_RELEASE:
        r->op = GW_OP_RELEASE;
        rc = gw_json_release(r->body, r->len, &bad);
        break;
    case GW_ROUTE_EXTEND:
        r->op = GW_OP_EXTEND;
        rc = gw_json_extend(r->body, r->len, ttl_ms, &bad);
        break;
    default:
        r->op = GW_OP_GET;
        break;
    }
    if (rc != 0) {
        gw_http_error(r, rc, bad.why, bad.field, -1, NULL);
        return -1;
    }
    return 0;
}

/* confirm, release, extend, get on the hold the path names. */
static void do_hold(gw_req *r)
{
    bool answered;
    const char *key = idem_key(r, false, &answered);
    uint32_t ttl_ms = 0;
    if (answered || hold_body(r, &ttl_ms) != 0 || take_client(r) != 0) {
        return;
    }
    r->keyed = key != NULL;
    esc_async *a = r->client->a;
    uint64_t id = r->route.hold_id;
    int rc;
    switch (r->op) {
    case GW_OP_CONFIRM:
        rc = esc_async_confirm(a, id, r->qty, 0, hold_cb, r);
        break;
    case GW_OP_RELEASE:
        rc = esc_async_release(a, id, 0, hold_cb, r);
        break;
    case GW_OP_EXTEND:
        rc = esc_async_extend(a, id, ttl_ms, 0, hold_cb, r);
        break;
    default:
        rc = esc_async_get(a, id, 0, hold_cb, r);
        break;
    }
    after_call(r, rc);
}

/* ---- documents and probes --------------------------------------------------------- */

static void do_document(gw_req *r)
{
    gw *g = gw_of(r);
    if (r->route.kind == GW_ROUTE_OPENAPI) {
        char *doc = malloc(gw_openapi_json_len + 1);
        if (doc != NULL) {
            memcpy(doc, gw_openapi_json, gw_openapi_json_len + 1);
        }
        gw_http_json(r, 200, doc, NULL);
        return;
    }
    bool ok = r->route.kind == GW_ROUTE_HEALTHZ || (g->ready && !g->stopping);
    const char *status = ok ? "ok" : g->stopping ? "stopping" : "starting";
    gw_http_json(r, ok ? 200 : 503, gw_json_status(status), NULL);
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* Credential and rate limit. Returns 0, or -1 after answering. */
static int admit(gw *g, gw_req *r)
{
    char why[GW_WHY_MAX];
    int rc = gw_auth_check(&g->auth, gw_http_header(r, "Authorization"), &r->who, why, sizeof why);
    if (rc != 0) {
        if (rc != ESC_EUNAVAILABLE) {
            metrics_inc(g->metrics.auth_refused);
        }
        gw_http_error(r, rc, why, NULL, -1, NULL);
        return -1;
    }
    uint64_t h = hmap_hash_bytes(r->who.tenant_id, strlen(r->who.tenant_id), g->rate_seed);
    if (!ratelim_take(&g->rate, h | 1, esc_mono_us())) {
        metrics_inc(g->metrics.rate_limited);
        gw_http_error(r, GW_ERATE,
                      "this tenant's request rate is over the gateway's limit "
                      "(--rate-tenant): retry after a second",
                      NULL, -1, NULL);
        return -1;
    }
    return 0;
}

void gw_api_dispatch(gw_req *r, void *arg)
{
    gw *g = arg;
    gw_route_kind k = r->route.kind;
    if (k == GW_ROUTE_NONE) {
        bool bad_id = r->route.err == ESC_EINVAL;
        gw_http_error(r, r->route.err,
                      bad_id ? "the path's id is not valid (a hold id is the decimal string "
                               "the API returned; a consumer 1..64 printable ASCII characters)"
                             : NULL,
                      bad_id ? "id" : NULL, -1, NULL);
        return;
    }
    if (k == GW_ROUTE_OPENAPI || k == GW_ROUTE_HEALTHZ || k == GW_ROUTE_READYZ) {
        do_document(r);
        return;
    }
    if (g->stopping) {
        gw_http_error(r, ESC_ECLOSED, "the gateway is stopping: retry (same Idempotency-Key)", NULL,
                      -1, NULL);
        return;
    }
    if (admit(g, r) != 0) {
        return;
    }
    switch (k) {
    case GW_ROUTE_RESERVE:
        do_reserve(r);
        return;
    case GW_ROUTE_CART:
        do_cart(r);
        return;
    case GW_ROUTE_EVENTS:
        gw_events_stream(&g->events, r);
        return;
    case GW_ROUTE_CURSOR:
        gw_events_cursor(&g->events, r);
        return;
    default:
        do_hold(r);
        return;
    }
}

void gw_api_done(gw_req *r, void *arg)
{
    gw *g = arg;
    ESC_ASSERT(r->client == NULL && r->work == NULL); /* a call in flight keeps r suspended */
    gw_events_request_done(&g->events, r);
}
