/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.h - one libescrow asynchronous client on the environment's libuv
 * loop, and its life.
 *
 * JavaScript holds the client as an external value (the handle); the
 * native client is freed once BOTH the handle was collected and libescrow
 * reported the client closed, whichever comes last:
 *   - close() (nesc_client_close): libescrow fails the pending calls with
 *     CLOSED, closes its handles, and the close promise resolves;
 *   - the handle collected while open: the client is closed the same way,
 *     with no promise (nothing can be pending: see below);
 *   - the environment torn down (process end, worker terminated): the
 *     async cleanup hook closes the client and the environment waits for
 *     it; no JavaScript runs any more, so pending promises stay pending.
 * While calls are in flight the client holds a strong reference to its
 * own handle, so a client with pending promises is never collected: like
 * a socket with a pending write.
 */
#ifndef NESC_CLIENT_H
#define NESC_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <node_api.h>

#include "addon.h"
#include "escrow.h"

typedef enum nesc_client_state {
    NESC_OPEN,
    NESC_CLOSING, /* esc_async_close called, its callback not yet run */
    NESC_CLOSED,  /* libescrow freed the client; a == NULL */
} nesc_client_state;

typedef struct nesc_client {
    napi_env env; /* the environment whose loop the client runs on */
    nesc_env *ne; /* borrowed: the environment's state outlives the client */
    esc_async *a; /* owned; NULL once closed */
    nesc_client_state state;
    napi_ref self; /* the handle; strong while inflight > 0; owned */
    uint32_t inflight;
    bool collected;                      /* the handle was collected (its finalizer ran) */
    bool teardown;                       /* the environment is going away: no JavaScript */
    napi_deferred close_deferred;        /* close()'s promise, if any */
    napi_async_cleanup_hook_handle hook; /* until closed */
} nesc_client;

/* Creates a client with opts (borrowed) and its handle (*handle). On an
 * error from libescrow returns that ESC_E* code; NESC_THROWN if a
 * JavaScript exception is pending. */
int nesc_client_new(napi_env env, const esc_options *opts, napi_value *handle);
/* The client behind handle; NULL with a TypeError thrown if it is not one. */
nesc_client *nesc_client_of(napi_env env, napi_value handle);

/* A call was accepted by libescrow / its promise was settled (or dropped
 * at teardown): keeps the handle alive while calls are in flight. */
void nesc_client_call_start(nesc_client *c);
void nesc_client_call_end(nesc_client *c);

/* Closes the client; the promise resolves once every pending call was
 * failed with CLOSED and libescrow let go of the loop. A second close()
 * resolves at once if already closed, with the first one's promise
 * otherwise (index.js keeps it). */
napi_value nesc_client_close(napi_env env, nesc_client *c);

#endif
