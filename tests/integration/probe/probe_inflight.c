/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_inflight.c - esc_probe's in-flight loops (see probe_inflight.h):
 * libescrow's asynchronous client on one libuv loop, and the shared driver
 * (driver.h) keeping its calls in flight: a batch of calls and timer shots,
 * and a pool of story slots.
 */
#include "probe_inflight.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "probe.h"

typedef enum probe_op { PROBE_RESERVE, PROBE_CONFIRM, PROBE_RELEASE } probe_op;

/* One call of a batch: what to submit, on which connection, when, and
 * where its outcome goes. */
struct probe_call {
    probe_async *p; /* borrowed */
    probe_op op;
    bool second; /* on p->a2 */
    bool timed;  /* a shot: fired by its lane's timer after delay_ms */
    uint64_t delay_ms;
    uint64_t hold_id; /* confirm, release */
    int64_t qty;      /* reserve */
    uint32_t ttl_ms;  /* reserve */
    uint32_t deadline_ms;
    uint32_t lane;
    driver *d;        /* borrowed: the batch's driver while it runs */
    probe_outcome *o; /* borrowed */
    char item[ESC_ID_MAX + 1], buyer[ESC_ID_MAX + 1], key[ESC_ID_MAX + 1];
};

void probe_async_open(probe_async *p, const probe_args *args, bool two)
{
    memset(p, 0, sizeof *p);
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
    free(p->calls);
    p->calls = NULL;
}

/* ---- the batch: a driver lane per call ---------------------------------- */

static probe_call *batch_add(probe_async *p, probe_op op, uint32_t deadline_ms, probe_outcome *o)
{
    if (p->ncalls == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 64;
        probe_call *calls = realloc(p->calls, cap * sizeof *calls);
        if (calls == NULL) {
            probe_die("out of memory for %u calls", cap);
        }
        p->calls = calls;
        p->cap = cap;
    }
    probe_call *c = &p->calls[p->ncalls++];
    memset(c, 0, sizeof *c);
    c->p = p;
    c->op = op;
    c->deadline_ms = deadline_ms;
    c->o = o;
    return c;
}

static void outcome_cb(int status, const esc_hold *hold, void *arg)
{
    probe_call *c = arg;
    probe_outcome *o = c->o;
    if (o->done) {
        probe_die("a libescrow callback ran twice");
    }
    o->done = true;
    o->status = status;
    o->has_hold = hold != NULL;
    if (hold != NULL) {
        o->hold = *hold;
    }
    o->at_wall_ms = esc_wall_ms();
    driver_done(c->d, c->lane);
}

/* Submits c now. Dies if libescrow refuses it locally. */
static void call_submit(probe_call *c)
{
    esc_async *a = c->second ? c->p->a2 : c->p->a;
    int rc;
    if (c->op == PROBE_RESERVE) {
        esc_reserve_req req = {.item_id = c->item,
                               .buyer_id = c->buyer,
                               .qty = c->qty,
                               .idempotency_key = c->key,
                               .ttl_ms = c->ttl_ms};
        rc = esc_async_reserve(a, &req, c->deadline_ms, outcome_cb, c);
        if (rc != 0) {
            probe_die("esc_async_reserve(key=%s) refused locally: %s", c->key, esc_err_name(rc));
        }
        return;
    }
    bool confirm = c->op == PROBE_CONFIRM;
    rc = confirm ? esc_async_confirm(a, c->hold_id, 0, c->deadline_ms, outcome_cb, c)
                 : esc_async_release(a, c->hold_id, c->deadline_ms, outcome_cb, c);
    if (rc != 0) {
        probe_die("%s of %" PRIu64 " refused locally: %s", confirm ? "confirm" : "release",
                  c->hold_id, esc_err_name(rc));
    }
}

static void shot_fire(driver *d, uint32_t lane, void *arg)
{
    (void)d;
    call_submit(&((probe_async *)arg)->calls[lane]);
}

/* Lane i runs call i, the batch's job i (one job per lane). */
static int batch_next(driver *d, uint32_t lane, uint64_t job, void *arg)
{
    probe_async *p = arg;
    if (job != lane || job >= p->ncalls) {
        probe_die("batch: job %" PRIu64 " on lane %u", job, lane);
    }
    probe_call *c = &p->calls[lane];
    c->d = d;
    c->lane = lane;
    if (!c->timed) {
        call_submit(c);
    } else if (driver_later(d, lane, c->delay_ms, shot_fire) != 0) {
        probe_die("cannot arm the shot on lane %u", lane);
    }
    return DRIVER_BUSY;
}

static void batch_end(driver *d, void *arg)
{
    (void)d;
    ((probe_async *)arg)->batch_ended = true;
}

void probe_async_wait(probe_async *p)
{
    if (p->ncalls == 0) {
        return;
    }
    driver_config cfg = {
        .lanes = p->ncalls, .jobs_max = p->ncalls, .next = batch_next, .end = batch_end, .arg = p};
    driver *d = NULL;
    int rc = driver_new(&p->loop, &cfg, &d);
    if (rc != 0) {
        probe_die("driver_new(%u calls): %s", p->ncalls, esc_err_name(rc));
    }
    p->batch_ended = false;
    driver_start(d);
    while (!p->batch_ended) {
        (void)uv_run(&p->loop, UV_RUN_ONCE);
    }
    (void)uv_run(&p->loop, UV_RUN_NOWAIT); /* the driver's handles close */
    driver_free(d);
    p->ncalls = 0;
}

void probe_submit_reserve(probe_async *p, const char *item, const char *buyer, const char *key,
                          int64_t qty, uint32_t ttl_ms, uint32_t deadline_ms, probe_outcome *o)
{
    static unsigned turn;
    probe_call *c = batch_add(p, PROBE_RESERVE, deadline_ms, o);
    c->second = turn++ % 2 != 0;
    c->qty = qty;
    c->ttl_ms = ttl_ms;
    snprintf(c->item, sizeof c->item, "%s", item);
    snprintf(c->buyer, sizeof c->buyer, "%s", buyer);
    snprintf(c->key, sizeof c->key, "%s", key);
}

void probe_submit_hold_op(probe_async *p, bool confirm, uint64_t hold_id, uint32_t deadline_ms,
                          probe_outcome *o)
{
    probe_call *c = batch_add(p, confirm ? PROBE_CONFIRM : PROBE_RELEASE, deadline_ms, o);
    c->second = !confirm;
    c->hold_id = hold_id;
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

void probe_shot_arm(probe_async *p, probe_shot *s, uint64_t hold_id, uint32_t deadline_ms,
                    uint64_t delay_ms)
{
    s->hold_id = hold_id;
    probe_submit_hold_op(p, false, hold_id, deadline_ms, &s->o);
    probe_call *c = &p->calls[p->ncalls - 1];
    c->timed = true;
    c->delay_ms = delay_ms;
}

/* ---- the pool: a driver lane per slot, a job per story -------------------- */

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

/* A story on lane's slot, if story.more says so. */
static int pool_next(driver *d, uint32_t lane, uint64_t job, void *arg)
{
    (void)d;
    (void)job; /* stories are numbered by pool->next: a lane that retires takes a job number */
    probe_pool *pool = arg;
    if (!pool->story.more(pool, pool->story.arg)) {
        return DRIVER_IDLE;
    }
    const probe_args *args = pool->args;
    probe_slot *s = &pool->slots[lane];
    s->index = pool->next++;
    s->hold_id = 0;
    probe_format_key(s->key, sizeof s->key, args->prefix, s->index);
    esc_reserve_req req = {.item_id = args->item,
                           .buyer_id = s->key,
                           .qty = 1,
                           .idempotency_key = s->key,
                           .ttl_ms = args->ttl_ms};
    s->sent_ms = esc_wall_ms();
    int rc = esc_async_reserve(pool->p.a, &req, args->deadline_ms, slot_reserved_cb, s);
    if (rc != 0) {
        probe_die("reserve %s refused locally: %s", s->key, esc_err_name(rc));
    }
    return DRIVER_BUSY;
}

static void pool_end(driver *d, void *arg)
{
    (void)d;
    (void)arg; /* nothing left to run: uv_run returns once the loop is idle */
}

void probe_slot_next(probe_slot *s)
{
    driver_done(s->pool->d, s->lane);
}

static void slot_end(probe_slot *s, bool confirm)
{
    probe_pool *pool = s->pool;
    uint32_t deadline_ms = pool->args->deadline_ms;
    s->sent_ms = esc_wall_ms();
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
    pool->d = NULL;
    memset(pool->by_status, 0, sizeof pool->by_status);
    probe_async_open(&pool->p, args, false);
}

void probe_pool_run(probe_pool *pool)
{
    uint32_t n = pool->args->concurrency;
    pool->slots = probe_xcalloc(n, sizeof *pool->slots);
    for (uint32_t i = 0; i < n; i++) {
        pool->slots[i].pool = pool;
        pool->slots[i].lane = i;
    }
    driver_config cfg = {.lanes = n, .next = pool_next, .end = pool_end, .arg = pool};
    int rc = driver_new(&pool->p.loop, &cfg, &pool->d);
    if (rc != 0) {
        probe_die("driver_new(%u slots): %s", n, esc_err_name(rc));
    }
    driver_start(pool->d);
    (void)uv_run(&pool->p.loop, UV_RUN_DEFAULT);
    driver_free(pool->d);
    pool->d = NULL;
    probe_async_close(&pool->p);
    free(pool->slots);
    pool->slots = NULL;
}
