/* SPDX-License-Identifier: Apache-2.0 */
/*
 * addon.c - the module's entry point: the per-environment state and the
 * table of exported functions (ops.h), plus three small ones of its own:
 *
 *   setup(EscrowError)  the class the addon builds its errors with
 *   codes()             { SOLD_OUT: -1, ... } from libescrow's table
 *   live()              { clients, calls }: native clients not yet closed
 *                       and calls not yet settled (the tests check that
 *                       close() and collection leave nothing behind)
 */
#include "addon.h"

#include <stdio.h>
#include <stdlib.h>

#include "ops.h"
#include "value.h"

bool nesc_ok(napi_env env, napi_status st, const char *what)
{
    if (st == napi_ok) {
        return true;
    }
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && !pending) {
        char msg[128];
        snprintf(msg, sizeof msg, "escrow: %s failed (napi_status %d)", what, (int)st);
        (void)napi_throw_error(env, NULL, msg);
    }
    return false;
}

nesc_env *nesc_env_get(napi_env env)
{
    void *data = NULL;
    if (!nesc_ok(env, napi_get_instance_data(env, &data), "napi_get_instance_data")) {
        return NULL;
    }
    if (data == NULL) {
        (void)napi_throw_error(env, NULL, "escrow: the addon was not initialised");
    }
    return data;
}

static void env_free(napi_env env, void *data, void *hint)
{
    (void)hint;
    nesc_env *ne = data;
    if (ne->error_ctor != NULL) {
        (void)napi_delete_reference(env, ne->error_ctor);
    }
    free(ne);
}

static napi_value op_setup(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value ctor;
    nesc_env *ne = nesc_env_get(env);
    if (ne == NULL ||
        !nesc_ok(env, napi_get_cb_info(env, info, &argc, &ctor, NULL, NULL), "setup")) {
        return NULL;
    }
    napi_valuetype t;
    if (!nesc_ok(env, napi_typeof(env, ctor, &t), "setup")) {
        return NULL;
    }
    if (t != napi_function) {
        (void)napi_throw_type_error(env, NULL, "setup(EscrowError): a class is required");
        return NULL;
    }
    if (ne->error_ctor != NULL) {
        (void)napi_delete_reference(env, ne->error_ctor);
        ne->error_ctor = NULL;
    }
    if (!nesc_ok(env, napi_create_reference(env, ctor, 1, &ne->error_ctor), "setup")) {
        return NULL;
    }
    return NULL;
}

static napi_value op_codes(napi_env env, napi_callback_info info)
{
    (void)info;
    return nesc_value_codes(env);
}

static napi_value op_live(napi_env env, napi_callback_info info)
{
    (void)info;
    nesc_env *ne = nesc_env_get(env);
    napi_value o, clients, calls;
    if (ne == NULL || !nesc_ok(env, napi_create_object(env, &o), "live") ||
        !nesc_ok(env, napi_create_uint32(env, ne->clients_live, &clients), "live") ||
        !nesc_ok(env, napi_create_uint32(env, ne->calls_live, &calls), "live") ||
        !nesc_ok(env, napi_set_named_property(env, o, "clients", clients), "live") ||
        !nesc_ok(env, napi_set_named_property(env, o, "calls", calls), "live")) {
        return NULL;
    }
    return o;
}

NAPI_MODULE_INIT()
{
    nesc_env *ne = calloc(1, sizeof *ne);
    if (ne == NULL) {
        (void)napi_throw_error(env, NULL, "escrow: out of memory");
        return NULL;
    }
    if (!nesc_ok(env, napi_set_instance_data(env, ne, env_free, NULL), "napi_set_instance_data")) {
        free(ne);
        return NULL;
    }
#define FN(name, fn)                                                                               \
    {                                                                                              \
        name, NULL, fn, NULL, NULL, NULL, napi_default, NULL                                       \
    }
    static const napi_property_descriptor fns[] = {
        FN("setup", op_setup),
        FN("codes", op_codes),
        FN("live", op_live),
        FN("clientNew", nesc_op_client_new),
        FN("reserve", nesc_op_reserve),
        FN("confirm", nesc_op_confirm),
        FN("release", nesc_op_release),
        FN("extend", nesc_op_extend),
        FN("get", nesc_op_get),
        FN("reserveCart", nesc_op_reserve_cart),
        FN("close", nesc_op_close),
        FN("stats", nesc_op_stats),
    };
#undef FN
    if (!nesc_ok(env, napi_define_properties(env, exports, sizeof fns / sizeof fns[0], fns),
                 "napi_define_properties")) {
        return NULL;
    }
    return exports;
}
