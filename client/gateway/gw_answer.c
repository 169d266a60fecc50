/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_answer.c - see gw_answer.h. One row per answer; the order follows
 * common/escrow_errors.h, then the gateway's own.
 */
#include "gw_answer.h"

#include "escrow_errors.h"

static const gw_answer table[] = {
    /* the stock's answers */
    {ESC_ESOLD_OUT, 409, "sold_out", false, 0, NULL},
    {ESC_ETRY_LATER, 503, "try_later", true, 1, NULL},
    {ESC_ESEGMENT_EMPTY, 503, "try_later", true, 1, NULL}, /* never in routing mode */
    {ESC_EEXPIRED, 410, "expired", false, 0, NULL},
    {ESC_ENOT_HELD, 409, "not_held", false, 0, NULL},
    {ESC_EIDEMPOTENCY_MISMATCH, 422, "idempotency_mismatch", false, 0, NULL},
    {ESC_EBUYER_LIMIT, 409, "buyer_limit", false, 0, NULL},
    {ESC_EORDER_LIMIT, 422, "order_limit", false, 0, NULL},
    {ESC_EALREADY_EXTENDED, 409, "already_extended", false, 0, NULL},
    {ESC_ENOT_FOUND, 404, "not_found", false, 0, NULL},
    {ESC_EUNKNOWN_TENANT, 404, "unknown_tenant", false, 0, NULL},
    {ESC_EUNKNOWN_ITEM, 404, "unknown_item", false, 0, NULL},
    /* libescrow retries these itself in routing mode; left over at the
     * deadline they mean "not now" */
    {ESC_ENOT_OWNER, 503, "unavailable", true, 1, NULL},
    {ESC_EFENCED, 503, "unavailable", true, 1, NULL},
    {ESC_EPAUSED, 409, "paused", false, 0, NULL},
    {ESC_EINVAL, 400, "invalid", false, 0, NULL},
    {ESC_ETOOBIG, 400, "invalid", false, 0, NULL},
    {ESC_EPROTO, 502, "bad_gateway", true, 0, NULL},
    {ESC_EUNAVAILABLE, 503, "unavailable", true, 1, NULL},
    {ESC_ETIMEDOUT, 504, "timed_out", true, 0, NULL},
    {ESC_ENOMEM, 503, "unavailable", true, 1, NULL},
    {ESC_EIO, 502, "bad_gateway", true, 0, NULL},
    {ESC_EINTERNAL, 500, "internal", false, 0, NULL},
    {ESC_EBUSY, 503, "busy", true, 1, NULL},
    {ESC_ECLOSED, 503, "closed", true, 1, NULL},
    {ESC_EDB, 503, "unavailable", true, 1, NULL},
    {ESC_ECONFIG, 500, "internal", false, 0, NULL},
    {ESC_EAUTH, 401, "unauthorized", false, 0, NULL},
    {ESC_ECONFLICT, 409, "conflict", false, 0, NULL},
    /* final for that cart key, as NOT_HELD is for a hold: a new key may succeed */
    {ESC_ECART_ENDED, 409, "cart_ended", false, 0, NULL},
    /* the gateway's own */
    {GW_ENO_ROUTE, 404, "no_route", false, 0, "no such path: the API is in /v1/openapi.json"},
    {GW_EMETHOD, 405, "method_not_allowed", false, 0, "this path does not take this method"},
    {GW_ETOO_LARGE, 413, "payload_too_large", false, 0, "the body is too large"},
    {GW_EFORBIDDEN, 403, "forbidden", false, 0, "this key may not use the API"},
    {GW_ERATE, 429, "rate_limited", true, 1, "over the tenant's rate limit"},
    {GW_EOVERLOADED, 503, "busy", true, 1, "the gateway is busy: retry"},
};

static const gw_answer fallback = {
    0, 502, "unknown_answer", true, 0, "the cluster gave an answer this gateway does not know"};

const gw_answer *gw_answer_of(int err)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (table[i].err == err) {
            return &table[i];
        }
    }
    return &fallback;
}

bool gw_answer_known(int err)
{
    return gw_answer_of(err) != &fallback;
}

const gw_answer *gw_answer_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}
