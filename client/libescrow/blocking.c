/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blocking.c - the blocking API (esc_client_*) over the asynchronous engine.
 *
 * Each esc_client owns a private uv loop and one esc_async on it. A call
 * submits through esc_async_* and turns the loop (UV_RUN_ONCE) until its
 * callback has run; the engine's deadline timer guarantees it does. Nothing
 * is shared between clients, so one client per thread is safe.
 *
 * *out follows escrow.h: written on success, and for hold operations that
 * answer with the hold's final state (ESC_ENOT_HELD, ESC_EEXPIRED, ...); never
 * for ESC_EIDEMPOTENCY_MISMATCH or the sold-out family.
 */
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "escrow.h"
#include "req.h"

struct esc_client {
    uv_loop_t loop; /* embedded, private */
    esc_async *a;   /* owned; NULL once it had to be closed */
};

typedef struct wait_one {
    bool done;
    int status;
    bool has_hold;
    esc_hold hold;
} wait_one;

typedef struct wait_cart {
    bool done;
    int status;
    size_t failed_line;
    size_t nholds;
    esc_hold *holds; /* borrowed: the caller's, room for nlines */
} wait_cart;

static void closed_cb(void *arg)
{
    *(bool *)arg = true;
}

/* Closes the engine (failing what is pending) and runs the loop until the
 * last handle closed. */
static void close_engine(esc_client *c)
{
    if (c->a == NULL) {
        return;
    }
    bool closed = false;
    esc_async_close(c->a, closed_cb, &closed);
    c->a = NULL;
    (void)uv_run(&c->loop, UV_RUN_DEFAULT); /* returns when nothing is left */
}

/* Turns the loop until *done. The deadline timer keeps the loop alive while
 * a call is pending; should it ever stop (uv_timer_start failed), the engine
 * is closed, which fails the call with ESC_ECLOSED and sets *done. */
static void run_until(esc_client *c, const bool *done)
{
    while (!*done) {
        if (uv_run(&c->loop, UV_RUN_ONCE) == 0 && !*done) {
            close_engine(c);
        }
    }
}

int esc_client_new(const esc_options *opts, esc_client **out)
{
    if (out == NULL) {
        return ESC_EINVAL;
    }
    esc_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return ESC_ENOMEM;
    }
    if (uv_loop_init(&c->loop) != 0) {
        free(c);
        return ESC_EIO;
    }
    int rc = esc_async_new(&c->loop, opts, &c->a);
    if (rc < 0) {
        (void)uv_run(&c->loop, UV_RUN_DEFAULT); /* lets a half-started handle close */
        if (uv_loop_close(&c->loop) == 0) {
            free(c);
        }
        return rc;
    }
    *out = c;
    return 0;
}

void esc_client_free(esc_client *c)
{
    if (c == NULL) {
        return;
    }
    close_engine(c);
    /* A loop that still has handles cannot be freed under libuv: keep it. */
    if (uv_loop_close(&c->loop) == 0) {
        free(c);
    }
}

static void one_cb(int status, const esc_hold *hold, void *arg)
{
    wait_one *w = arg;
    w->status = status;
    if (hold != NULL) {
        w->hold = *hold;
        w->has_hold = true;
    }
    w->done = true;
}

/* Waits for a submitted call; rc is what the submission returned. */
static int wait_hold(esc_client *c, int rc, wait_one *w, esc_hold *out)
{
    if (rc < 0) {
        return rc;
    }
    run_until(c, &w->done);
    if (out != NULL && w->has_hold && cli_hold_shown(w->status)) {
        *out = w->hold;
    }
    return w->status;
}

int esc_reserve(esc_client *c, const esc_reserve_req *req, uint32_t deadline_ms, esc_hold *out)
{
    if (c == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    wait_one w = {0};
    return wait_hold(c, esc_async_reserve(c->a, req, deadline_ms, one_cb, &w), &w, out);
}

int esc_confirm(esc_client *c, uint64_t hold_id, int64_t qty, uint32_t deadline_ms, esc_hold *out)
{
    if (c == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    wait_one w = {0};
    return wait_hold(c, esc_async_confirm(c->a, hold_id, qty, deadline_ms, one_cb, &w), &w, out);
}

int esc_release(esc_client *c, uint64_t hold_id, uint32_t deadline_ms, esc_hold *out)
{
    if (c == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    wait_one w = {0};
    return wait_hold(c, esc_async_release(c->a, hold_id, deadline_ms, one_cb, &w), &w, out);
}

int esc_extend(esc_client *c, uint64_t hold_id, uint32_t ttl_ms, uint32_t deadline_ms,
               esc_hold *out)
{
    if (c == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    wait_one w = {0};
    return wait_hold(c, esc_async_extend(c->a, hold_id, ttl_ms, deadline_ms, one_cb, &w), &w, out);
}

int esc_get(esc_client *c, uint64_t hold_id, uint32_t deadline_ms, esc_hold *out)
{
    if (c == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    wait_one w = {0};
    return wait_hold(c, esc_async_get(c->a, hold_id, deadline_ms, one_cb, &w), &w, out);
}

static void cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line, void *arg)
{
    wait_cart *w = arg;
    w->status = status;
    w->failed_line = failed_line;
    if (status == 0 && holds != NULL) {
        memcpy(w->holds, holds, nholds * sizeof *holds);
        w->nholds = nholds;
    }
    w->done = true;
}

int esc_reserve_cart(esc_client *c, const char *buyer_id, const esc_cart_line *lines, size_t nlines,
                     const char *cart_key, uint32_t ttl_ms, uint32_t deadline_ms, esc_hold *holds,
                     size_t *nholds, size_t *failed_line)
{
    if (c == NULL || holds == NULL || nholds == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    wait_cart w = {.holds = holds};
    size_t bad_line = nlines;
    int rc = cli_async_cart(c->a, buyer_id, lines, nlines, cart_key, ttl_ms, deadline_ms, cart_cb,
                            &w, &bad_line);
    if (rc < 0) {
        if (failed_line != NULL) {
            *failed_line = bad_line;
        }
        return rc;
    }
    run_until(c, &w.done);
    if (w.status == 0) {
        *nholds = w.nholds;
    } else if (failed_line != NULL) {
        *failed_line = w.failed_line;
    }
    return w.status;
}

int esc_client_stats(esc_client *c, esc_stats *out)
{
    if (c == NULL || out == NULL) {
        return ESC_EINVAL;
    }
    if (c->a == NULL) {
        return ESC_ECLOSED;
    }
    esc_async_stats(c->a, out);
    return 0;
}
