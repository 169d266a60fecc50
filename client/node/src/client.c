/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c - see client.h: a libescrow client's life inside a Node.js
 * environment.
 *
 * Three things end a client and any order of them is possible: close()
 * from JavaScript, the handle's finalizer (collected), and the
 * environment's async cleanup hook (teardown). The first of them that
 * finds the client open calls esc_async_close; closed_cb (libescrow's
 * close callback, on the loop) then resolves close()'s promise if there is
 * one and JavaScript may still run, and removes the cleanup hook, which
 * lets a tearing-down environment finish. The memory goes with the last of
 * closed_cb and the finalizer.
 */
#include "client.h"

#include <stdlib.h>

#include "call.h"
#include "value.h"

/* Tags our externals, so that another addon's external is refused. */
static const napi_type_tag client_tag = {0x6573637277636c69ULL, 0x6e6f64652d617069ULL};

static void client_free(nesc_client *c)
{
    free(c);
}

static napi_value make_undefined(napi_env env, void *arg, bool *ok)
{
    (void)arg;
    napi_value v;
    *ok = true;
    return napi_get_undefined(env, &v) == napi_ok ? v : NULL;
}

/* Resolves close()'s promise from the loop, in an async context of its
 * own (the name string needs a handle scope of its own too). */
static void resolve_close(nesc_client *c)
{
    napi_handle_scope hs;
    if (napi_open_handle_scope(c->env, &hs) != napi_ok) {
        return;
    }
    napi_async_context actx;
    napi_value name;
    if (napi_create_string_utf8(c->env, "escrow.close", NAPI_AUTO_LENGTH, &name) == napi_ok &&
        napi_async_init(c->env, NULL, name, &actx) == napi_ok) {
        nesc_settle(c->env, actx, c->close_deferred, make_undefined, NULL);
        (void)napi_async_destroy(c->env, actx);
    }
    (void)napi_close_handle_scope(c->env, hs);
}

/* libescrow closed the client (every pending call already failed). */
static void closed_cb(void *arg)
{
    nesc_client *c = arg;
    c->a = NULL;
    c->state = NESC_CLOSED;
    c->ne->clients_live--;
    if (c->close_deferred != NULL && !c->teardown) {
        resolve_close(c);
    }
    c->close_deferred = NULL;
    napi_async_cleanup_hook_handle hook = c->hook;
    c->hook = NULL;
    bool last = c->collected;
    if (last) {
        client_free(c);
    }
    /* Last: at teardown this lets the environment (and c->ne) go. */
    (void)napi_remove_async_cleanup_hook(hook);
}

static void start_close(nesc_client *c)
{
    c->state = NESC_CLOSING;
    esc_async_close(c->a, closed_cb, c);
}

/* The environment is going away: close now, it waits for closed_cb. */
static void teardown_hook(napi_async_cleanup_hook_handle handle, void *arg)
{
    (void)handle; /* the same as c->hook, removed by closed_cb */
    nesc_client *c = arg;
    c->teardown = true;
    if (c->state == NESC_OPEN) {
        start_close(c);
    }
}

/* The handle was collected (or the environment is freeing it). */
static void handle_finalize(napi_env env, void *data, void *hint)
{
    (void)hint;
    nesc_client *c = data;
    c->collected = true;
    if (c->self != NULL) {
        (void)napi_delete_reference(env, c->self);
        c->self = NULL;
    }
    if (c->state == NESC_OPEN) {
        start_close(c); /* nothing is pending: pending calls keep the handle */
    } else if (c->state == NESC_CLOSED) {
        client_free(c);
    }
}

/* The external for c, tagged, and c's reference to it. */
static int make_handle(napi_env env, nesc_client *c, napi_value *handle)
{
    if (!nesc_ok(env, napi_create_external(env, c, handle_finalize, NULL, handle),
                 "napi_create_external")) {
        c->collected = true; /* no handle will ever refer to it: closed_cb frees it */
        start_close(c);
        return NESC_THROWN;
    }
    if (!nesc_ok(env, napi_type_tag_object(env, *handle, &client_tag), "napi_type_tag_object") ||
        !nesc_ok(env, napi_create_reference(env, *handle, 0, &c->self), "napi_create_reference")) {
        return NESC_THROWN; /* the finalizer closes and frees c */
    }
    return 0;
}

int nesc_client_new(napi_env env, const esc_options *opts, napi_value *handle)
{
    nesc_env *ne = nesc_env_get(env);
    struct uv_loop_s *loop = NULL;
    if (ne == NULL || !nesc_ok(env, napi_get_uv_event_loop(env, &loop), "napi_get_uv_event_loop")) {
        return NESC_THROWN;
    }
    nesc_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return ESC_ENOMEM;
    }
    c->env = env;
    c->ne = ne;
    int rc = esc_async_new(loop, opts, &c->a);
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->state = NESC_OPEN;
    ne->clients_live++;
    if (!nesc_ok(env, napi_add_async_cleanup_hook(env, teardown_hook, c, &c->hook),
                 "napi_add_async_cleanup_hook")) {
        c->collected = true; /* nothing refers to it: closed_cb frees it */
        start_close(c);
        return NESC_THROWN;
    }
    return make_handle(env, c, handle);
}

nesc_client *nesc_client_of(napi_env env, napi_value handle)
{
    bool tagged = false;
    void *data = NULL;
    if (napi_check_object_type_tag(env, handle, &client_tag, &tagged) != napi_ok || !tagged ||
        napi_get_value_external(env, handle, &data) != napi_ok) {
        (void)napi_throw_type_error(env, NULL, "not an escrow client handle");
        return NULL;
    }
    return data;
}

void nesc_client_call_start(nesc_client *c)
{
    if (c->inflight++ == 0 && c->self != NULL) {
        (void)napi_reference_ref(c->env, c->self, NULL);
    }
}

void nesc_client_call_end(nesc_client *c)
{
    if (--c->inflight == 0 && c->self != NULL && !c->teardown) {
        (void)napi_reference_unref(c->env, c->self, NULL);
    }
}

napi_value nesc_client_close(napi_env env, nesc_client *c)
{
    napi_value promise;
    napi_deferred d;
    if (!nesc_ok(env, napi_create_promise(env, &d, &promise), "napi_create_promise")) {
        return NULL;
    }
    if (c->state != NESC_OPEN || c->close_deferred != NULL) {
        napi_value undef;
        (void)napi_get_undefined(env, &undef);
        (void)napi_resolve_deferred(env, d, undef); /* index.js hands out the first promise */
        return promise;
    }
    c->close_deferred = d;
    start_close(c);
    return promise;
}
