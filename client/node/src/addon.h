/* SPDX-License-Identifier: Apache-2.0 */
/*
 * addon.h - what every module of the Node.js addon shares: the state kept
 * per Node.js environment (the main thread and each worker thread load the
 * addon once each and get their own), and the one helper that checks a
 * Node-API status.
 *
 * The addon (escrow.node) is the native half of the `escrow` package: it
 * runs libescrow's asynchronous API on the environment's own libuv loop
 * (napi_get_uv_event_loop), so no thread is added and nothing blocks. The
 * JavaScript half (index.js) validates arguments, owns the EscrowError
 * class and gives the Promise API its shape; the native half turns each
 * call into one libescrow call and settles its promise from libescrow's
 * callback on the loop.
 *
 * Files: addon.c (module init, the exported functions' table), client.c
 * (a client's life: open, close, collected, environment teardown), call.c
 * (one call: its promise, its async context, settling it from the loop),
 * ops.c (the exported calls: reserve, confirm, ..., reserve_cart), value.c
 * (values between JavaScript and C).
 */
#ifndef NESC_ADDON_H
#define NESC_ADDON_H

#include <stdbool.h>
#include <stdint.h>

#include <node_api.h>

/* Per environment (napi_set_instance_data); freed when the environment is,
 * after every client of it (each client keeps the environment alive until
 * it has closed: its async cleanup hook). */
typedef struct nesc_env {
    napi_ref error_ctor;   /* EscrowError from index.js (setup()); owned */
    uint32_t clients_live; /* native clients not yet closed */
    uint32_t calls_live;   /* calls whose promise is not settled yet */
} nesc_env;

/* Returned (instead of 0 or an ESC_E* code) by a helper that left a
 * JavaScript exception pending: the caller returns to JavaScript at once. */
#define NESC_THROWN 1

/* The environment's state; NULL (and a JavaScript Error thrown) if missing. */
nesc_env *nesc_env_get(napi_env env);

/* True when st is napi_ok; otherwise throws an Error naming what failed
 * (unless an exception is already pending) and returns false. */
bool nesc_ok(napi_env env, napi_status st, const char *what);

#endif
