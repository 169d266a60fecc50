/* SPDX-License-Identifier: Apache-2.0 */
/*
 * call.c - see call.h: a call's promise and async context, settled from
 * libescrow's callbacks.
 *
 * Invariants: a call is settled or dropped exactly once (libescrow runs
 * each accepted call's callback exactly once; a refused call is rejected
 * by the function that made it and never reaches libescrow); nesc_env's
 * calls_live counts the calls made and not yet freed.
 */
#include "call.h"

#include <stdlib.h>

#include "value.h"

int nesc_call_new(napi_env env, nesc_client *c, const char *name, nesc_call **out,
                  napi_value *promise)
{
    nesc_call *call = calloc(1, sizeof *call);
    if (call == NULL) {
        (void)napi_throw_error(env, "NOMEM", "escrow: out of memory");
        return NESC_THROWN;
    }
    napi_value resource_name;
    if (!nesc_ok(env, napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource_name), name) ||
        !nesc_ok(env, napi_async_init(env, NULL, resource_name, &call->actx), "napi_async_init")) {
        free(call);
        return NESC_THROWN;
    }
    if (!nesc_ok(env, napi_create_promise(env, &call->deferred, promise), "napi_create_promise")) {
        (void)napi_async_destroy(env, call->actx);
        free(call);
        return NESC_THROWN;
    }
    call->client = c;
    c->ne->calls_live++;
    *out = call;
    return 0;
}

static void call_free(nesc_call *call)
{
    call->client->ne->calls_live--;
    free(call);
}

/* When make fails, the promise is rejected with the exception it left. */
static napi_value make_or_exception(napi_env env, nesc_make_fn make, void *arg, bool *ok)
{
    napi_value v = make(env, arg, ok);
    if (v != NULL) {
        return v;
    }
    *ok = false;
    if (napi_get_and_clear_last_exception(env, &v) != napi_ok || v == NULL) {
        (void)napi_get_undefined(env, &v);
    }
    return v;
}

void nesc_settle(napi_env env, napi_async_context actx, napi_deferred deferred, nesc_make_fn make,
                 void *arg)
{
    napi_handle_scope hs;
    if (napi_open_handle_scope(env, &hs) != napi_ok) {
        return; /* the environment is stopping: nothing to run */
    }
    napi_callback_scope cs;
    /* The resource argument is ignored: the context carries its own. */
    if (napi_open_callback_scope(env, NULL, actx, &cs) == napi_ok) {
        bool ok = false;
        napi_value v = make_or_exception(env, make, arg, &ok);
        napi_status st =
            ok ? napi_resolve_deferred(env, deferred, v) : napi_reject_deferred(env, deferred, v);
        napi_value exc;
        if (st != napi_ok && napi_get_and_clear_last_exception(env, &exc) == napi_ok) {
            (void)napi_fatal_exception(env, exc); /* cannot happen; never lose it silently */
        }
        (void)napi_close_callback_scope(env, cs); /* runs what awaited the promise */
    }
    (void)napi_close_handle_scope(env, hs);
}

void nesc_call_end(nesc_call *call, nesc_make_fn make, void *arg)
{
    nesc_client *c = call->client;
    /* Counted out before the code awaiting the promise runs (it may look). */
    c->ne->calls_live--;
    if (!c->teardown) {
        nesc_settle(c->env, call->actx, call->deferred, make, arg);
        (void)napi_async_destroy(c->env, call->actx);
    }
    /* At teardown no JavaScript can run: the promise stays pending and
     * goes away with the environment. */
    free(call);
    nesc_client_call_end(c);
}

void nesc_call_refuse(napi_env env, nesc_call *call, int status, const char *detail)
{
    napi_value err =
        nesc_value_error(env, call->client->ne->error_ctor, status, detail, NULL, 0, 0);
    if (err == NULL && napi_get_and_clear_last_exception(env, &err) != napi_ok) {
        err = NULL;
    }
    if (err == NULL) {
        (void)napi_get_undefined(env, &err);
    }
    (void)napi_reject_deferred(env, call->deferred, err);
    (void)napi_async_destroy(env, call->actx);
    call_free(call);
}

/* ---- libescrow's callbacks --------------------------------------------- */

typedef struct hold_answer {
    nesc_call *call;
    int status;
    const esc_hold *hold; /* borrowed: valid during the callback */
    size_t nholds;
    size_t failed_line;
} hold_answer;

static napi_value make_hold(napi_env env, void *arg, bool *ok)
{
    hold_answer *ans = arg;
    *ok = ans->status == 0;
    if (*ok) {
        return nesc_value_hold(env, ans->hold);
    }
    return nesc_value_error(env, ans->call->client->ne->error_ctor, ans->status, NULL, ans->hold, 0,
                            0);
}

void nesc_call_hold_cb(int status, const esc_hold *hold, void *arg)
{
    hold_answer ans = {.call = arg, .status = status, .hold = hold};
    if (status == 0 && hold == NULL) {
        ans.status = ESC_EINTERNAL; /* libescrow promises a hold with 0 */
    }
    nesc_call_end(ans.call, make_hold, &ans);
}

static napi_value make_cart(napi_env env, void *arg, bool *ok)
{
    hold_answer *ans = arg;
    *ok = ans->status == 0;
    if (*ok) {
        return nesc_value_holds(env, ans->hold, ans->nholds);
    }
    return nesc_value_error(env, ans->call->client->ne->error_ctor, ans->status, NULL, NULL,
                            ans->failed_line, ans->call->nlines);
}

void nesc_call_cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line,
                       void *arg)
{
    hold_answer ans = {
        .call = arg, .status = status, .hold = holds, .nholds = nholds, .failed_line = failed_line};
    if (status == 0 && holds == NULL) {
        ans.status = ESC_EINTERNAL;
    }
    nesc_call_end(ans.call, make_cart, &ans);
}
