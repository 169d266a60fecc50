/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops.h - the addon's exported functions, one per libescrow call. index.js
 * calls them with positional, already type-checked arguments; each returns
 * a Promise (settled from the loop by call.c) or throws a TypeError for an
 * argument of the wrong type.
 *
 *   clientNew(endpoint, coordinator, routes, tenant, credential,
 *             deadlineMs, resendMs)                 -> handle (throws EscrowError)
 *   reserve(h, item, buyer, qty, key, ttlMs, deadlineMs)  -> Promise<Hold>
 *   confirm(h, holdId, qty, deadlineMs)                   -> Promise<Hold>
 *   release(h, holdId, deadlineMs)                        -> Promise<Hold>
 *   extend(h, holdId, ttlMs, deadlineMs)                  -> Promise<Hold>
 *   get(h, holdId, deadlineMs)                            -> Promise<Hold>
 *   reserveCart(h, buyer, items, qtys, key, ttlMs, deadlineMs) -> Promise<Hold[]>
 *   close(h)                                              -> Promise<undefined>
 *   stats(h)                                              -> counters
 */
#ifndef NESC_OPS_H
#define NESC_OPS_H

#include <node_api.h>

napi_value nesc_op_client_new(napi_env env, napi_callback_info info);
napi_value nesc_op_reserve(napi_env env, napi_callback_info info);
napi_value nesc_op_confirm(napi_env env, napi_callback_info info);
napi_value nesc_op_release(napi_env env, napi_callback_info info);
napi_value nesc_op_extend(napi_env env, napi_callback_info info);
napi_value nesc_op_get(napi_env env, napi_callback_info info);
napi_value nesc_op_reserve_cart(napi_env env, napi_callback_info info);
napi_value nesc_op_close(napi_env env, napi_callback_info info);
napi_value nesc_op_stats(napi_env env, napi_callback_info info);

#endif
