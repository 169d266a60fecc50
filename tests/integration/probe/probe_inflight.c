/*
 * probe_inflight.c - esc_probe's in-flight loops (see probe_inflight.h):
 * libescrow's asynchronous client on one libuv loop, a count of the calls
 * whose outcome has not come yet, timer shots and a pool of story slots.
 */
#include "probe_inflight.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "probe.h"

/* Calls whose outcome_cb has not run yet (shots count from when they are
 * armed). One loop per process, so one count. */
static uint64_t g_pending;

void probe_async_open(probe_async *p, const probe_args *args, bool two)
{
    if (uv_loop_init(&p->loop) != 0) {
        probe_die("cannot create a libuv loop");
    }
    esc_options o = probe_options(args);
    int rc = esc_async_new(&p->loop, &o, &p->a);
    p->a2 = p->a;
    if (rc == 0 && (two || getenv("ESC_PROBE_TWO_CLIENTS") != NULL)) {
        rc = esc_async_new(&p->loop, &o, &p->a2);
    }
    if (rc != 0) {
        probe_die("esc_async_new(%s): %s", args->endpoint ? args->endpoint : args->coordinator,
                  esc_err_name(rc));
    }
}

static void on_async_closed(void *arg)
{
    *(bool *)arg = true;
}

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

void probe_async_close(probe_async *p)
{
    bool closed = false, closed2 = true;
    if (p->a2 != p->a) {
        closed2 = false;
        esc_async_close(p->a2, on_async_closed, &closed2);
    }
    esc_async_close(p->a, on_async_closed, &closed);
    (void)uv_run(&p->loop, UV_RUN_DEFAULT);
    if (!closed || !closed2) {
        probe_die("esc_async_close did not call its close_cb");
    }
    uv_walk(&p->loop, close_walk_cb, NULL);
    (void)uv_run(&p->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&p->loop) != 0) {
        probe_die("libuv loop still has handles after the client closed");
    }
}

void probe_async_wait(probe_async *p)
{
    while (g_pending > 0) {
        (void)uv_run(&p->loop, UV_RUN_ONCE);
    }
}

static void outcome_cb(int status, const esc_hold *hold, void *arg)
{
    probe_outcome *o = arg;
    if (o->done) {
        probe_die("a libescrow callback ran twice");
    }
    o->done = true;
    g_pending--;
    o->status = status;
    o->has_hold = hold != NULL;
    if (hold != NULL) {
        o->hold = *hold;
    }
    o->at_wall_ms = esc_wall_ms();
}

void probe_submit_reserve(probe_async *p, const char *item, const char *buyer, const char *key,
                          int64_t qty, uint32_t ttl_ms, uint32_t deadline_ms, probe_outcome *o)
{
    static unsigned turn;
    esc_reserve_req req = {
        .item_id = item, .buyer_id = buyer, .qty = qty, .idempotency_key = key, .ttl_ms = ttl_ms};
    int rc = esc_async_reserve(turn++ % 2 ? p->a2 : p->a, &req, deadline_ms, outcome_cb, o);
    if (rc != 0) {
        probe_die("esc_async_reserve(key=%s) refused locally: %s", key, esc_err_name(rc));
    }
    g_pending++;
}

void probe_submit_hold_op(probe_async *p, bool confirm, uint64_t hold_id, uint32_t deadline_ms,
                          probe_outcome *o)
{
    int rc = confirm ? esc_async_confirm(p->a, hold_id, 0, deadline_ms, outcome_cb, o)
                     : esc_async_release(p->a2, hold_id, deadline_ms, outcome_cb, o);
    if (rc != 0) {
        probe_die("%s of %" PRIu64 " refused locally: %s", confirm ? "confirm" : "release", hold_id,
                  esc_err_name(rc));
    }
    g_pending++;
}

probe_outcome *probe_reserve_many(probe_async *p, const probe_args *args, uint32_t ttl_ms)
{
    probe_outcome *o = probe_xcalloc(args->n, sizeof *o);
    for (uint32_t i = 0; i < args->n; i++) {
        char key[ESC_ID_MAX + 1];
        probe_format_key(key, sizeof key, args->prefix, i);
        probe_submit_reserve(p, args->item, key, key, args->qty, ttl_ms, args->deadline_ms, &o[i]);
    }
    probe_async_wait(p);
    for (uint32_t i = 0; i < args->n; i++) {
        if (o[i].status != 0 || !o[i].has_hold || o[i].hold.state != ESC_HOLD_HELD) {
            probe_die("reserve %s-%u: %s (state %s); the race needs every hold", args->prefix, i,
                      esc_err_name(o[i].status),
                      o[i].has_hold ? probe_state_name(&o[i].hold) : "none");
        }
    }
    return o;
}

/* ---- shots ---------------------------------------------------------------- */

int64_t probe_async_now_ms(probe_async *p)
{
    uv_update_time(&p->loop);
    return esc_wall_ms();
}

static void shot_fire(uv_timer_t *t)
{
    probe_shot *s = t->data;
    g_pending--; /* the shot becomes the call it submits */
    probe_submit_hold_op(s->p, false, s->hold_id, s->deadline_ms, &s->o);
    uv_close((uv_handle_t *)t, NULL);
}

void probe_shot_arm(probe_async *p, probe_shot *s, uint64_t hold_id, uint32_t deadline_ms,
                    uint64_t delay_ms)
{
    s->p = p;
    s->hold_id = hold_id;
    s->deadline_ms = deadline_ms;
    (void)uv_timer_init(&p->loop, &s->timer);
    s->timer.data = s;
    (void)uv_timer_start(&s->timer, shot_fire, delay_ms, 0);
    g_pending++;
}

/* ---- the pool ------------------------------------------------------------- */

void probe_pool_count(probe_pool *pool, int status)
{
    unsigned idx = status <= 0 && status > ESC_E_LAST_ ? (unsigned)-status : 0u;
    pool->by_status[idx < 32 ? idx : 0]++;
}

void probe_print_status_counts(const uint64_t by_status[32])
{
    for (int i = 0; i < 32; i++) {
        if (by_status[i] != 0) {
            printf("STATUS %s %" PRIu64 "\n", esc_err_name(-i), by_status[i]);
        }
    }
}

static void slot_reserved_cb(int status, const esc_hold *hold, void *arg)
{
    probe_slot *s = arg;
    probe_pool_count(s->pool, status);
    if (status != 0 || hold == NULL) {
        probe_slot_next(s); /* no hold: the story is over */
        return;
    }
    s->hold_id = hold->hold_id;
    s->pool->story.reserved(s, hold, s->pool->story.arg);
}

static void slot_ended_cb(int status, const esc_hold *hold, void *arg)
{
    probe_slot *s = arg;
    s->pool->story.ended(s, status, hold, s->pool->story.arg);
}

void probe_slot_next(probe_slot *s)
{
    probe_pool *pool = s->pool;
    if (!pool->story.more(pool, pool->story.arg)) {
        return;
    }
    const probe_args *args = pool->args;
    s->index = pool->next++;
    s->hold_id = 0;
    probe_format_key(s->key, sizeof s->key, args->prefix, s->index);
    esc_reserve_req req = {.item_id = args->item,
                           .buyer_id = s->key,
                           .qty = 1,
                           .idempotency_key = s->key,
                           .ttl_ms = args->ttl_ms};
    int rc = esc_async_reserve(pool->p.a, &req, args->deadline_ms, slot_reserved_cb, s);
    if (rc != 0) {
        probe_die("reserve %s refused locally: %s", s->key, esc_err_name(rc));
    }
}

static void slot_end(probe_slot *s, bool confirm)
{
    probe_pool *pool = s->pool;
    uint32_t deadline_ms = pool->args->deadline_ms;
    int rc = confirm ? esc_async_confirm(pool->p.a, s->hold_id, 0, deadline_ms, slot_ended_cb, s)
                     : esc_async_release(pool->p.a, s->hold_id, deadline_ms, slot_ended_cb, s);
    if (rc != 0) {
        probe_die("%s of %" PRIu64 " refused locally: %s", confirm ? "confirm" : "release",
                  s->hold_id, esc_err_name(rc));
    }
}

void probe_slot_confirm(probe_slot *s)
{
    slot_end(s, true);
}

void probe_slot_release(probe_slot *s)
{
    slot_end(s, false);
}

void probe_pool_open(probe_pool *pool, const probe_args *args, const probe_story *story)
{
    pool->args = args;
    pool->story = *story;
    pool->next = 0;
    memset(pool->by_status, 0, sizeof pool->by_status);
    probe_async_open(&pool->p, args, false);
}

void probe_pool_run(probe_pool *pool)
{
    uint32_t n = pool->args->concurrency;
    pool->slots = probe_xcalloc(n, sizeof *pool->slots);
    for (uint32_t i = 0; i < n; i++) {
        pool->slots[i].pool = pool;
        probe_slot_next(&pool->slots[i]);
    }
    (void)uv_run(&pool->p.loop, UV_RUN_DEFAULT);
    probe_async_close(&pool->p);
    free(pool->slots);
    pool->slots = NULL;
}
