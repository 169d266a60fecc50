/* SPDX-License-Identifier: Apache-2.0 */
/*
 * value.c - see value.h: conversions between JavaScript values and
 * libescrow's C types.
 */
#include "value.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

/* Throws "<what> must be <kind>" unless an exception is already pending. */
static int type_error(napi_env env, const char *what, const char *kind)
{
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && !pending) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be %s", what, kind);
        (void)napi_throw_type_error(env, NULL, msg);
    }
    return NESC_THROWN;
}

int nesc_value_string(napi_env env, napi_value v, char *buf, size_t cap, const char *what)
{
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
        return type_error(env, what, "a string");
    }
    if (len >= cap) {
        return ESC_EINVAL;
    }
    if (napi_get_value_string_utf8(env, v, buf, cap, &len) != napi_ok) {
        return type_error(env, what, "a string");
    }
    return 0;
}

int nesc_value_string_opt(napi_env env, napi_value v, size_t max, char **out, const char *what)
{
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok) {
        return type_error(env, what, "a string");
    }
    if (t == napi_null || t == napi_undefined) {
        *out = NULL;
        return 0;
    }
    char *buf = malloc(max + 1);
    if (buf == NULL) {
        return ESC_ENOMEM;
    }
    int rc = nesc_value_string(env, v, buf, max + 1, what);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    return 0;
}

int nesc_value_u32(napi_env env, napi_value v, uint32_t *out, const char *what)
{
    if (napi_get_value_uint32(env, v, out) != napi_ok) {
        return type_error(env, what, "a number");
    }
    return 0;
}

int nesc_value_i64(napi_env env, napi_value v, int64_t *out, const char *what)
{
    if (napi_get_value_int64(env, v, out) != napi_ok) {
        return type_error(env, what, "a number");
    }
    return 0;
}

int nesc_value_hold_id(napi_env env, napi_value v, uint64_t *out)
{
    bool lossless = false;
    uint64_t id = 0;
    if (napi_get_value_bigint_uint64(env, v, &id, &lossless) != napi_ok) {
        return type_error(env, "a hold id", "a BigInt");
    }
    if (!lossless) {
        return ESC_EINVAL; /* negative or above 2^64 - 1 */
    }
    *out = id;
    return 0;
}

/* ---- out -------------------------------------------------------------- */

static bool set_prop(napi_env env, napi_value obj, const char *name, napi_value v)
{
    return v != NULL && napi_set_named_property(env, obj, name, v) == napi_ok;
}

static napi_value str(napi_env env, const char *s)
{
    napi_value v;
    return napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v) == napi_ok ? v : NULL;
}

static napi_value num(napi_env env, double d)
{
    napi_value v;
    return napi_create_double(env, d, &v) == napi_ok ? v : NULL;
}

static napi_value big(napi_env env, uint64_t u)
{
    napi_value v;
    return napi_create_bigint_uint64(env, u, &v) == napi_ok ? v : NULL;
}

static napi_value boolean(napi_env env, bool b)
{
    napi_value v;
    return napi_get_boolean(env, b, &v) == napi_ok ? v : NULL;
}

napi_value nesc_value_hold(napi_env env, const esc_hold *h)
{
    napi_value o;
    if (napi_create_object(env, &o) != napi_ok) {
        return NULL;
    }
    /* qty, qty_sold (<= 10,000) and expires_at_ms (unix ms) are exact in a
     * double; the ids are not. */
    bool ok = set_prop(env, o, "holdId", big(env, h->hold_id)) &&
              set_prop(env, o, "segmentId", big(env, h->segment_id)) &&
              set_prop(env, o, "item", str(env, h->item_id)) &&
              set_prop(env, o, "buyer", str(env, h->buyer_id)) &&
              set_prop(env, o, "qty", num(env, (double)h->qty)) &&
              set_prop(env, o, "qtySold", num(env, (double)h->qty_sold)) &&
              set_prop(env, o, "state", str(env, esc_hold_state_name(h->state))) &&
              set_prop(env, o, "expiresAtMs", num(env, (double)h->expires_at_ms)) &&
              set_prop(env, o, "extended", boolean(env, h->extended));
    return ok ? o : NULL;
}

napi_value nesc_value_holds(napi_env env, const esc_hold *holds, size_t n)
{
    napi_value arr;
    if (napi_create_array_with_length(env, n, &arr) != napi_ok) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        napi_value h = nesc_value_hold(env, &holds[i]);
        if (h == NULL || napi_set_element(env, arr, (uint32_t)i, h) != napi_ok) {
            return NULL;
        }
    }
    return arr;
}

/* EscrowError(code, errno, message) if setup() gave the class, else an
 * Error with the same properties. */
static napi_value new_error(napi_env env, napi_ref error_ctor, int status, const char *msg)
{
    napi_value args[3] = {str(env, esc_err_name(status)), num(env, status), str(env, msg)};
    if (args[0] == NULL || args[1] == NULL || args[2] == NULL) {
        return NULL;
    }
    napi_value ctor = NULL;
    napi_value err = NULL;
    if (error_ctor != NULL && napi_get_reference_value(env, error_ctor, &ctor) == napi_ok &&
        ctor != NULL) {
        return napi_new_instance(env, ctor, 3, args, &err) == napi_ok ? err : NULL;
    }
    if (napi_create_error(env, args[0], args[2], &err) != napi_ok ||
        !set_prop(env, err, "errno", args[1])) {
        return NULL;
    }
    return err;
}

napi_value nesc_value_error(napi_env env, napi_ref error_ctor, int status, const char *detail,
                            const esc_hold *hold, size_t failed_line, size_t nlines)
{
    char msg[256];
    if (detail != NULL) {
        snprintf(msg, sizeof msg, "%s: %s", esc_strerror(status), detail);
    } else {
        snprintf(msg, sizeof msg, "%s", esc_strerror(status));
    }
    napi_value err = new_error(env, error_ctor, status, msg);
    if (err == NULL) {
        return NULL;
    }
    if (hold != NULL && !set_prop(env, err, "hold", nesc_value_hold(env, hold))) {
        return NULL;
    }
    if (failed_line < nlines && !set_prop(env, err, "failedLine", num(env, (double)failed_line))) {
        return NULL;
    }
    return err;
}

napi_value nesc_value_stats(napi_env env, const esc_stats *s)
{
    napi_value o;
    if (napi_create_object(env, &o) != napi_ok) {
        return NULL;
    }
    /* Counters that would need 2^53 calls to lose precision. */
    bool ok = set_prop(env, o, "framesSent", num(env, (double)s->frames_sent)) &&
              set_prop(env, o, "soldOutCached", num(env, (double)s->sold_out_cached)) &&
              set_prop(env, o, "routeFetches", num(env, (double)s->route_fetches)) &&
              set_prop(env, o, "routePushes", num(env, (double)s->route_pushes)) &&
              set_prop(env, o, "retargets", num(env, (double)s->retargets)) &&
              set_prop(env, o, "resolves", num(env, (double)s->resolves));
    return ok ? o : NULL;
}

napi_value nesc_value_codes(napi_env env)
{
    napi_value o;
    if (napi_create_object(env, &o) != napi_ok) {
        return NULL;
    }
    /* The codes are -1, -2, ... with no gap; esc_err_name() says UNKNOWN
     * past the last one. The bound only guards against a table that never
     * ends. */
    for (int code = -1; code > -1000; code--) {
        const char *name = esc_err_name(code);
        if (strcmp(name, "UNKNOWN") == 0) {
            break;
        }
        if (!set_prop(env, o, name, num(env, code))) {
            return NULL;
        }
    }
    return o;
}
