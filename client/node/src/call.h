/* SPDX-License-Identifier: Apache-2.0 */
/*
 * call.h - one call from JavaScript: its promise, its async context, and
 * settling it from libescrow's callback on the loop.
 *
 * libescrow calls back from a libuv callback of Node's own loop, where no
 * JavaScript scope is open. Settling a promise there takes a handle scope
 * (the values made for it) and a callback scope on the call's async
 * context (napi_async_init at the call, napi_open_callback_scope at the
 * answer): closing the callback scope runs the microtasks and next-tick
 * queue, so the code awaiting the promise runs right away, and async_hooks
 * (AsyncLocalStorage) see the answer as the continuation of the call that
 * made it. This is what napi_make_callback does for a function; a promise
 * needs the scope form.
 */
#ifndef NESC_CALL_H
#define NESC_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include <node_api.h>

#include "client.h"
#include "escrow.h"

typedef struct nesc_call {
    nesc_client *client; /* borrowed: kept alive while the call is in flight */
    napi_deferred deferred;
    napi_async_context actx; /* owned: destroyed when the call ends */
    size_t nlines;           /* carts: the caller's lines (bounds failedLine) */
} nesc_call;

/* Makes the value a settled promise gets: resolve with it when *ok is
 * true, reject otherwise. NULL with an exception pending on failure (the
 * promise is then rejected with that exception). */
typedef napi_value (*nesc_make_fn)(napi_env env, void *arg, bool *ok);

/* Starts a call named name ("escrow.reserve"...): *out (owned by the
 * caller until nesc_call_end) and *promise. NESC_THROWN on failure. */
int nesc_call_new(napi_env env, nesc_client *c, const char *name, nesc_call **out,
                  napi_value *promise);
/* Settles the call from the loop (see above) unless the environment is
 * being torn down, then frees it and tells the client. */
void nesc_call_end(nesc_call *call, nesc_make_fn make, void *arg);
/* libescrow refused the call (status < 0, detail may be NULL): rejects
 * the promise now (we are inside JavaScript) and frees the call. */
void nesc_call_refuse(napi_env env, nesc_call *call, int status, const char *detail);

/* Settles deferred from the loop in a handle scope and a callback scope on
 * actx (borrowed); make as above. */
void nesc_settle(napi_env env, napi_async_context actx, napi_deferred deferred, nesc_make_fn make,
                 void *arg);

/* libescrow's callback for one hold (reserve, confirm, ...): arg is the
 * nesc_call. */
void nesc_call_hold_cb(int status, const esc_hold *hold, void *arg);
/* libescrow's callback for a cart. */
void nesc_call_cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line,
                       void *arg);

#endif
