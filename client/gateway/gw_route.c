/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_route.c - see gw_route.h.
 */
#include "gw_route.h"

#include <stdbool.h>
#include <string.h>

#include "escrow_errors.h"
#include "gw_answer.h"
#include "wire.h"

static const char *const names[GW_ROUTE_COUNT_] = {
    [GW_ROUTE_NONE] = "other",
    [GW_ROUTE_RESERVE] = "POST /v1/holds",
    [GW_ROUTE_GET] = "GET /v1/holds/{id}",
    [GW_ROUTE_CONFIRM] = "POST /v1/holds/{id}/confirm",
    [GW_ROUTE_RELEASE] = "POST /v1/holds/{id}/release",
    [GW_ROUTE_EXTEND] = "POST /v1/holds/{id}/extend",
    [GW_ROUTE_CART] = "POST /v1/carts",
    [GW_ROUTE_EVENTS] = "GET /v1/events",
    [GW_ROUTE_CURSOR] = "POST /v1/consumers/{name}/cursor",
    [GW_ROUTE_OPENAPI] = "GET /v1/openapi.json",
    [GW_ROUTE_HEALTHZ] = "GET /healthz",
    [GW_ROUTE_READYZ] = "GET /readyz",
};

const char *gw_route_name(gw_route_kind kind)
{
    return kind > GW_ROUTE_NONE && kind < GW_ROUTE_COUNT_ ? names[kind] : names[GW_ROUTE_NONE];
}

int gw_route_hold_id(const char *s, uint64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 20 || (n > 1 && s[0] == '0')) {
        return ESC_EINVAL;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return ESC_EINVAL;
        }
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return ESC_EINVAL;
        }
        v = v * 10 + d;
    }
    uint64_t seg = v >> ESC_HOLD_SEQ_BITS;
    if (seg == 0 || seg > ESC_SEGMENT_ID_MAX) {
        return ESC_EINVAL;
    }
    *out = v;
    return 0;
}

/* The method the endpoint takes: GET (and HEAD) or POST. */
static void settle(const char *method, bool get, gw_route_kind kind, gw_route *out)
{
    bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool ok = get ? is_get : strcmp(method, "POST") == 0;
    out->kind = ok ? kind : GW_ROUTE_NONE;
    out->err = ok ? 0 : GW_EMETHOD;
    out->allow = get ? "GET, HEAD" : "POST";
}

/* /v1/holds/{id}[/verb] with rest pointing after "/v1/holds/". */
static void match_hold(const char *method, const char *rest, gw_route *out)
{
    const char *slash = strchr(rest, '/');
    size_t idlen = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    char id[24];
    if (idlen >= sizeof id) {
        out->err = ESC_EINVAL;
        return;
    }
    memcpy(id, rest, idlen);
    id[idlen] = '\0';
    static const struct {
        const char *verb;
        gw_route_kind kind;
    } verbs[] = {
        {"confirm", GW_ROUTE_CONFIRM}, {"release", GW_ROUTE_RELEASE}, {"extend", GW_ROUTE_EXTEND}};
    gw_route_kind kind = GW_ROUTE_NONE;
    if (slash == NULL) {
        kind = GW_ROUTE_GET;
    } else {
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
            if (strcmp(slash + 1, verbs[i].verb) == 0) {
                kind = verbs[i].kind;
            }
        }
    }
    if (kind == GW_ROUTE_NONE) {
        return; /* GW_ENO_ROUTE */
    }
    if (gw_route_hold_id(id, &out->hold_id) != 0) {
        out->err = ESC_EINVAL;
        return;
    }
    settle(method, kind == GW_ROUTE_GET, kind, out);
}

/* /v1/consumers/{name}/cursor with rest pointing after "/v1/consumers/". */
static void match_consumer(const char *method, const char *rest, gw_route *out)
{
    const char *slash = strchr(rest, '/');
    if (slash == NULL || strcmp(slash, "/cursor") != 0) {
        return;
    }
    size_t n = (size_t)(slash - rest);
    if (n > GW_CONSUMER_LEN_MAX) {
        out->err = ESC_EINVAL;
        return;
    }
    memcpy(out->consumer, rest, n);
    out->consumer[n] = '\0';
    if (!wire_id_valid(out->consumer, GW_CONSUMER_LEN_MAX)) {
        out->consumer[0] = '\0';
        out->err = ESC_EINVAL;
        return;
    }
    settle(method, false, GW_ROUTE_CURSOR, out);
}

void gw_route_match(const char *method, const char *path, gw_route *out)
{
    memset(out, 0, sizeof *out);
    out->err = GW_ENO_ROUTE;
    static const struct {
        const char *path;
        bool get;
        gw_route_kind kind;
    } fixed[] = {
        {"/v1/holds", false, GW_ROUTE_RESERVE}, {"/v1/carts", false, GW_ROUTE_CART},
        {"/v1/events", true, GW_ROUTE_EVENTS},  {"/v1/openapi.json", true, GW_ROUTE_OPENAPI},
        {"/healthz", true, GW_ROUTE_HEALTHZ},   {"/readyz", true, GW_ROUTE_READYZ}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (strcmp(path, fixed[i].path) == 0) {
            settle(method, fixed[i].get, fixed[i].kind, out);
            return;
        }
    }
    static const char holds[] = "/v1/holds/", consumers[] = "/v1/consumers/";
    if (strncmp(path, holds, sizeof holds - 1) == 0) {
        match_hold(method, path + sizeof holds - 1, out);
    } else if (strncmp(path, consumers, sizeof consumers - 1) == 0) {
        match_consumer(method, path + sizeof consumers - 1, out);
    }
}
