/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops.c - see ops.h: each exported function reads its arguments, starts a
 * call (call.c) and hands it to libescrow's asynchronous API.
 *
 * An argument libescrow would refuse (an id over its byte limit) and a
 * call libescrow refuses (returns an error instead of taking it) both
 * reject the promise at once with that code; only a value of the wrong
 * JavaScript type throws (index.js turns that into a rejection too).
 */
#include "ops.h"

#include <stdlib.h>

#include "addon.h"
#include "call.h"
#include "client.h"
#include "value.h"

#define NESC_ARGS_MAX 7
/* Endpoints and credentials: libescrow checks its own, tighter, limits;
 * this one only bounds what is copied. */
#define NESC_OPTION_LEN_MAX 4096
/* Cart lines read from JavaScript at most (libescrow allows fewer and
 * answers INVAL above its own limit). */
#define NESC_CART_LINES_MAX 1024

/* Reads exactly n arguments (missing ones are undefined). */
static bool args(napi_env env, napi_callback_info info, size_t n, napi_value *argv)
{
    size_t argc = n;
    return nesc_ok(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL), "napi_get_cb_info");
}

/* Reads n arguments, the first of which is a client handle. NULL with an
 * exception pending if it is not one. */
static nesc_client *client_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv)
{
    return args(env, info, n, argv) ? nesc_client_of(env, argv[0]) : NULL;
}

/* After libescrow was given the call: rc < 0 refused it (reject now),
 * else it runs (the client stays alive until it answers). */
static napi_value submitted(napi_env env, nesc_client *c, nesc_call *call, int rc,
                            napi_value promise)
{
    if (rc < 0) {
        nesc_call_refuse(env, call, rc, NULL);
    } else {
        nesc_client_call_start(c);
    }
    return promise;
}

/* The promise of a call refused before it started (rc: ESC_E* or
 * NESC_THROWN). */
static napi_value refused(napi_env env, nesc_client *c, const char *name, int rc,
                          const char *detail)
{
    if (rc == NESC_THROWN) {
        return NULL;
    }
    nesc_call *call;
    napi_value promise;
    if (nesc_call_new(env, c, name, &call, &promise) != 0) {
        return NULL;
    }
    nesc_call_refuse(env, call, rc, detail);
    return promise;
}

/* ---- the client ----------------------------------------------------- */

static void options_free(esc_options *o)
{
    free((char *)o->endpoint);
    free((char *)o->coordinator);
    free((char *)o->routes);
    free((char *)o->tenant_id);
    free((char *)o->credential);
}

static int options_read(napi_env env, const napi_value *argv, esc_options *o)
{
    char *s[5] = {NULL, NULL, NULL, NULL, NULL};
    static const char *const what[5] = {"endpoint", "coordinator", "routes", "tenant",
                                        "credential"};
    int rc = 0;
    for (int i = 0; i < 5 && rc == 0; i++) {
        rc = nesc_value_string_opt(env, argv[i], NESC_OPTION_LEN_MAX, &s[i], what[i]);
    }
    o->endpoint = s[0];
    o->coordinator = s[1];
    o->routes = s[2];
    o->tenant_id = s[3];
    o->credential = s[4];
    if (rc == 0) {
        rc = nesc_value_u32(env, argv[5], &o->deadline_ms, "deadlineMs");
    }
    if (rc == 0) {
        rc = nesc_value_u32(env, argv[6], &o->resend_ms, "resendMs");
    }
    return rc;
}

napi_value nesc_op_client_new(napi_env env, napi_callback_info info)
{
    napi_value argv[NESC_ARGS_MAX];
    if (!args(env, info, 7, argv)) {
        return NULL;
    }
    esc_options o = {0};
    napi_value handle = NULL;
    int rc = options_read(env, argv, &o);
    if (rc == 0) {
        rc = nesc_client_new(env, &o, &handle); /* copies what o points to */
    }
    options_free(&o);
    if (rc < 0) {
        nesc_env *ne = nesc_env_get(env);
        napi_value err =
            nesc_value_error(env, ne != NULL ? ne->error_ctor : NULL, rc, NULL, NULL, 0, 0);
        if (err != NULL) {
            (void)napi_throw(env, err);
        }
        return NULL;
    }
    return rc == 0 ? handle : NULL;
}

napi_value nesc_op_close(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    nesc_client *c = client_args(env, info, 1, argv);
    return c != NULL ? nesc_client_close(env, c) : NULL;
}

napi_value nesc_op_stats(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    nesc_client *c = client_args(env, info, 1, argv);
    if (c == NULL) {
        return NULL;
    }
    esc_stats s = {0};
    if (c->a != NULL) {
        esc_async_stats(c->a, &s);
    }
    return nesc_value_stats(env, &s);
}

/* ---- reserve ----------------------------------------------------------- */

napi_value nesc_op_reserve(napi_env env, napi_callback_info info)
{
    napi_value argv[NESC_ARGS_MAX];
    nesc_client *c = client_args(env, info, 7, argv);
    if (c == NULL) {
        return NULL;
    }
    char item[ESC_ID_MAX + 1], buyer[ESC_ID_MAX + 1], key[ESC_ID_MAX + 1];
    esc_reserve_req req = {.item_id = item, .buyer_id = buyer, .idempotency_key = key};
    uint32_t dl_ms = 0;
    const char *detail = "item is longer than 128 bytes";
    int rc = nesc_value_string(env, argv[1], item, sizeof item, "item");
    if (rc == 0) {
        detail = "buyer is longer than 128 bytes";
        rc = nesc_value_string(env, argv[2], buyer, sizeof buyer, "buyer");
    }
    if (rc == 0 && (rc = nesc_value_i64(env, argv[3], &req.qty, "qty")) == 0) {
        detail = "key is longer than 128 bytes";
        rc = nesc_value_string(env, argv[4], key, sizeof key, "key");
    }
    if (rc == 0 && (rc = nesc_value_u32(env, argv[5], &req.ttl_ms, "ttlMs")) == 0) {
        rc = nesc_value_u32(env, argv[6], &dl_ms, "deadlineMs");
    }
    if (rc != 0) {
        return refused(env, c, "escrow.reserve", rc, detail);
    }
    nesc_call *call;
    napi_value promise;
    if (nesc_call_new(env, c, "escrow.reserve", &call, &promise) != 0) {
        return NULL;
    }
    rc = c->a != NULL ? esc_async_reserve(c->a, &req, dl_ms, nesc_call_hold_cb, call) : ESC_ECLOSED;
    return submitted(env, c, call, rc, promise);
}

/* ---- calls on a hold --------------------------------------------------- */

typedef enum hold_op { OP_CONFIRM, OP_RELEASE, OP_EXTEND, OP_GET } hold_op;

static const char *const hold_op_name[] = {"escrow.confirm", "escrow.release", "escrow.extend",
                                           "escrow.get"};

static int hold_submit(nesc_client *c, hold_op op, uint64_t id, int64_t n, uint32_t dl_ms,
                       nesc_call *call)
{
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    switch (op) {
    case OP_CONFIRM:
        return esc_async_confirm(c->a, id, n, dl_ms, nesc_call_hold_cb, call);
    case OP_RELEASE:
        return esc_async_release(c->a, id, dl_ms, nesc_call_hold_cb, call);
    case OP_EXTEND:
        return esc_async_extend(c->a, id, (uint32_t)n, dl_ms, nesc_call_hold_cb, call);
    case OP_GET:
        return esc_async_get(c->a, id, dl_ms, nesc_call_hold_cb, call);
    }
    return ESC_EINVAL;
}

/* (h, holdId, [qty | ttlMs,] deadlineMs): confirm takes a qty, extend a
 * ttl, release and get neither. */
static napi_value hold_call(napi_env env, napi_callback_info info, hold_op op)
{
    bool has_n = op == OP_CONFIRM || op == OP_EXTEND;
    napi_value argv[4];
    nesc_client *c = client_args(env, info, has_n ? 4 : 3, argv);
    if (c == NULL) {
        return NULL;
    }
    uint64_t id = 0;
    int64_t n = 0;
    uint32_t dl_ms = 0;
    const char *detail = "hold id outside 0..2^64-1";
    int rc = nesc_value_hold_id(env, argv[1], &id);
    if (rc == 0 && has_n) {
        rc = nesc_value_i64(env, argv[2], &n, op == OP_CONFIRM ? "qty" : "ttlMs");
    }
    if (rc == 0) {
        rc = nesc_value_u32(env, argv[has_n ? 3 : 2], &dl_ms, "deadlineMs");
    }
    if (rc == 0 && op == OP_EXTEND && (n < 0 || n > UINT32_MAX)) {
        detail = "ttlMs outside 0..2^32-1";
        rc = ESC_EINVAL;
    }
    if (rc != 0) {
        return refused(env, c, hold_op_name[op], rc, detail);
    }
    nesc_call *call;
    napi_value promise;
    if (nesc_call_new(env, c, hold_op_name[op], &call, &promise) != 0) {
        return NULL;
    }
    return submitted(env, c, call, hold_submit(c, op, id, n, dl_ms, call), promise);
}

napi_value nesc_op_confirm(napi_env env, napi_callback_info info)
{
    return hold_call(env, info, OP_CONFIRM);
}

napi_value nesc_op_release(napi_env env, napi_callback_info info)
{
    return hold_call(env, info, OP_RELEASE);
}

napi_value nesc_op_extend(napi_env env, napi_callback_info info)
{
    return hold_call(env, info, OP_EXTEND);
}

napi_value nesc_op_get(napi_env env, napi_callback_info info)
{
    return hold_call(env, info, OP_GET);
}

/* ---- carts --------------------------------------------------------------- */

typedef struct cart_in {
    char buyer[ESC_ID_MAX + 1];
    char key[ESC_ID_MAX + 1];
    uint32_t ttl_ms;
    uint32_t dl_ms;
    uint32_t nlines;
    esc_cart_line *lines;          /* nlines; owned */
    char (*items)[ESC_ID_MAX + 1]; /* nlines; owned; lines[i].item_id points here */
} cart_in;

/* Lines i of items[] and qtys[] (two arrays of one length, index.js). */
static int cart_lines_read(napi_env env, napi_value items, napi_value qtys, cart_in *in,
                           const char **detail)
{
    uint32_t nq = 0;
    if (!nesc_ok(env, napi_get_array_length(env, items, &in->nlines), "lines") ||
        !nesc_ok(env, napi_get_array_length(env, qtys, &nq), "lines")) {
        return NESC_THROWN;
    }
    *detail = "a cart has 1 to 64 lines";
    if (in->nlines != nq || in->nlines == 0 || in->nlines > NESC_CART_LINES_MAX) {
        return ESC_EINVAL;
    }
    in->lines = calloc(in->nlines, sizeof *in->lines);
    in->items = calloc(in->nlines, sizeof *in->items);
    if (in->lines == NULL || in->items == NULL) {
        return ESC_ENOMEM;
    }
    *detail = "an item is longer than 128 bytes";
    for (uint32_t i = 0; i < in->nlines; i++) {
        napi_value item, qty;
        if (!nesc_ok(env, napi_get_element(env, items, i, &item), "lines") ||
            !nesc_ok(env, napi_get_element(env, qtys, i, &qty), "lines")) {
            return NESC_THROWN;
        }
        int rc = nesc_value_string(env, item, in->items[i], sizeof in->items[i], "item");
        if (rc == 0) {
            rc = nesc_value_i64(env, qty, &in->lines[i].qty, "qty");
        }
        if (rc != 0) {
            return rc;
        }
        in->lines[i].item_id = in->items[i];
    }
    return 0;
}

static int cart_read(napi_env env, const napi_value *argv, cart_in *in, const char **detail)
{
    *detail = "buyer is longer than 128 bytes";
    int rc = nesc_value_string(env, argv[1], in->buyer, sizeof in->buyer, "buyer");
    if (rc == 0) {
        rc = cart_lines_read(env, argv[2], argv[3], in, detail);
    }
    if (rc == 0) {
        *detail = "key is longer than 128 bytes";
        rc = nesc_value_string(env, argv[4], in->key, sizeof in->key, "key");
    }
    if (rc == 0) {
        rc = nesc_value_u32(env, argv[5], &in->ttl_ms, "ttlMs");
    }
    if (rc == 0) {
        rc = nesc_value_u32(env, argv[6], &in->dl_ms, "deadlineMs");
    }
    return rc;
}

static napi_value cart_submit(napi_env env, nesc_client *c, const cart_in *in)
{
    nesc_call *call;
    napi_value promise;
    if (nesc_call_new(env, c, "escrow.reserveCart", &call, &promise) != 0) {
        return NULL;
    }
    call->nlines = in->nlines;
    /* libescrow copies the lines before it returns. */
    int rc = c->a != NULL ? esc_async_reserve_cart(c->a, in->buyer, in->lines, in->nlines, in->key,
                                                   in->ttl_ms, in->dl_ms, nesc_call_cart_cb, call)
                          : ESC_ECLOSED;
    return submitted(env, c, call, rc, promise);
}

napi_value nesc_op_reserve_cart(napi_env env, napi_callback_info info)
{
    napi_value argv[NESC_ARGS_MAX];
    nesc_client *c = client_args(env, info, 7, argv);
    if (c == NULL) {
        return NULL;
    }
    cart_in *in = calloc(1, sizeof *in);
    if (in == NULL) {
        return refused(env, c, "escrow.reserveCart", ESC_ENOMEM, NULL);
    }
    const char *detail = NULL;
    int rc = cart_read(env, argv, in, &detail);
    napi_value promise =
        rc == 0 ? cart_submit(env, c, in)
                : refused(env, c, "escrow.reserveCart", rc, rc == ESC_EINVAL ? detail : NULL);
    free(in->lines);
    free(in->items);
    free(in);
    return promise;
}
