/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.c - see driver.h.
 *
 * A lane is busy from the moment its next callback is called until its job
 * ends (driver_done, DRIVER_NEXT, DRIVER_IDLE, or driver_stop while it
 * waits on its timer); nbusy counts busy lanes. A job that ends inside its
 * own next callback (driver_done from there) only marks the lane, and the
 * loop in lane_run starts the next job: lanes never recurse. Open loop keeps
 * the free lanes on a stack; closed loop has none, because a lane that is
 * not busy there has retired.
 *
 * Invariants (asserted): nbusy counts the busy lanes; a free lane is not
 * busy; driver_done and driver_later name a busy lane; end runs once, with
 * no lane busy.
 */
#include "driver.h"

#include <stdlib.h>

#include "clock.h"
#include "esc_assert.h"
#include "escrow_errors.h"

typedef struct lane {
    driver *d;        /* borrowed back pointer */
    uv_timer_t timer; /* embedded: driver_later */
    driver_timer_fn timer_cb;
    bool busy;
    bool in_next;     /* inside its next callback */
    bool ended_early; /* driver_done from inside the next callback */
} lane;

struct driver {
    uv_loop_t *loop; /* borrowed */
    driver_config cfg;
    lane *lanes;    /* owned, cfg.lanes */
    uint32_t *free; /* owned, open loop: stack of free lanes */
    uint32_t nfree;
    uint32_t nbusy;
    uint64_t jobs;
    uint64_t skipped;
    int64_t t0_us;
    uv_timer_t tick;     /* embedded: open-loop schedule */
    uv_timer_t run_stop; /* embedded: run_ms */
    int handles_open;
    bool started;
    bool starting; /* inside driver_start: lanes retiring there do not end the run */
    bool stopping;
    bool ended;
};

static bool open_loop(const driver *d)
{
    return d->cfg.rate_per_s > 0;
}

static bool exhausted(const driver *d)
{
    return d->cfg.jobs_max != 0 && d->jobs >= d->cfg.jobs_max;
}

static void closed(driver *d)
{
    ESC_ASSERT(d->handles_open > 0);
    d->handles_open--;
}

static void timer_closed(uv_handle_t *h)
{
    closed(h->data);
}

static void lane_timer_closed(uv_handle_t *h)
{
    closed(((lane *)h->data)->d);
}

/* Ends the run once no lane has a job and none will start one. */
static void maybe_end(driver *d)
{
    if (d->ended || !d->started || d->starting || d->nbusy > 0) {
        return;
    }
    if (open_loop(d) && !d->stopping && !exhausted(d)) {
        return; /* free lanes wait for the schedule */
    }
    d->ended = true;
    d->stopping = true;
    for (uint32_t i = 0; i < d->cfg.lanes; i++) {
        uv_close((uv_handle_t *)&d->lanes[i].timer, lane_timer_closed);
    }
    uv_close((uv_handle_t *)&d->tick, timer_closed);
    uv_close((uv_handle_t *)&d->run_stop, timer_closed);
    d->cfg.end(d, d->cfg.arg);
}

/* The lane's job ended and the lane is not busy any more. */
static void lane_rest(driver *d, uint32_t i)
{
    lane *l = &d->lanes[i];
    ESC_ASSERT(l->busy && d->nbusy > 0);
    l->busy = false;
    d->nbusy--;
}

/* Starts jobs on lane i until one keeps it busy, or it rests. */
static void lane_run(driver *d, uint32_t i)
{
    lane *l = &d->lanes[i];
    int rc = DRIVER_IDLE;
    /* Ends: each pass numbers a new job, and jobs_max or the tool's
     * DRIVER_IDLE ends the supply. */
    while (!d->stopping && !exhausted(d)) {
        uint64_t job = d->jobs++;
        l->busy = true;
        d->nbusy++;
        l->in_next = true;
        rc = d->cfg.next(d, i, job, d->cfg.arg);
        l->in_next = false;
        if (rc == DRIVER_BUSY && !l->ended_early) {
            return;
        }
        l->ended_early = false;
        lane_rest(d, i);
        if (rc == DRIVER_IDLE || open_loop(d)) {
            break;
        }
    }
    if (open_loop(d)) {
        ESC_ASSERT(d->nfree < d->cfg.lanes);
        d->free[d->nfree++] = i;
    }
}

static void tick_cb(uv_timer_t *t)
{
    driver *d = t->data;
    double due = (double)(esc_mono_us() - d->t0_us) / 1e6 * d->cfg.rate_per_s;
    if (d->cfg.jobs_max != 0 && due > (double)d->cfg.jobs_max) {
        due = (double)d->cfg.jobs_max;
    }
    while ((double)d->jobs < due && d->nfree > 0 && !d->stopping) {
        lane_run(d, d->free[--d->nfree]);
    }
    if ((double)d->jobs < due && !d->stopping) {
        /* every lane busy: skipped (and counted), not queued */
        d->skipped += (uint64_t)due - d->jobs;
        d->jobs = (uint64_t)due;
    }
    maybe_end(d);
}

static void run_stop_cb(uv_timer_t *t)
{
    driver_stop(t->data);
}

static void lane_timer_cb(uv_timer_t *t)
{
    lane *l = t->data;
    driver *d = l->d;
    uint32_t i = (uint32_t)(l - d->lanes);
    ESC_ASSERT(l->busy);
    l->timer_cb(d, i, d->cfg.arg);
}

/* uv_timer_init cannot fail on an initialised loop (libuv returns 0). */
static void timers_init(driver *d)
{
    (void)uv_timer_init(d->loop, &d->tick);
    (void)uv_timer_init(d->loop, &d->run_stop);
    d->tick.data = d->run_stop.data = d;
    for (uint32_t i = 0; i < d->cfg.lanes; i++) {
        d->lanes[i].d = d;
        (void)uv_timer_init(d->loop, &d->lanes[i].timer);
        d->lanes[i].timer.data = &d->lanes[i];
    }
    d->handles_open = (int)d->cfg.lanes + 2;
}

int driver_new(uv_loop_t *loop, const driver_config *cfg, driver **out)
{
    if (loop == NULL || cfg == NULL || out == NULL || cfg->next == NULL || cfg->end == NULL ||
        cfg->lanes == 0 || cfg->lanes > DRIVER_LANES_MAX || !(cfg->rate_per_s >= 0)) {
        return ESC_EINVAL;
    }
    driver *d = calloc(1, sizeof *d);
    if (d == NULL) {
        return ESC_ENOMEM;
    }
    d->loop = loop;
    d->cfg = *cfg;
    d->lanes = calloc(cfg->lanes, sizeof *d->lanes);
    d->free = calloc(cfg->lanes, sizeof *d->free);
    if (d->lanes == NULL || d->free == NULL) {
        driver_free(d);
        return ESC_ENOMEM;
    }
    *out = d;
    return 0;
}

void driver_start(driver *d)
{
    ESC_ASSERT(!d->started);
    timers_init(d);
    d->started = true;
    d->t0_us = esc_mono_us();
    if (d->cfg.run_ms > 0) {
        (void)uv_timer_start(&d->run_stop, run_stop_cb, d->cfg.run_ms, 0); /* 0: initialised */
    }
    if (open_loop(d)) {
        /* Push high lanes first so lane 0 is taken first. */
        for (uint32_t i = d->cfg.lanes; i > 0; i--) {
            d->free[d->nfree++] = i - 1;
        }
        (void)uv_timer_start(&d->tick, tick_cb, 0, DRIVER_TICK_MS);
        return;
    }
    d->starting = true;
    for (uint32_t i = 0; i < d->cfg.lanes && !d->stopping; i++) {
        lane_run(d, i);
    }
    d->starting = false;
    maybe_end(d);
}

void driver_done(driver *d, uint32_t i)
{
    ESC_ASSERT(i < d->cfg.lanes);
    lane *l = &d->lanes[i];
    ESC_ASSERT(l->busy && !uv_is_active((uv_handle_t *)&l->timer));
    if (l->in_next) {
        l->ended_early = true; /* lane_run goes on with the next job */
        return;
    }
    lane_rest(d, i);
    if (open_loop(d)) {
        d->free[d->nfree++] = i;
    } else {
        lane_run(d, i);
    }
    maybe_end(d);
}

int driver_later(driver *d, uint32_t i, uint64_t ms, driver_timer_fn cb)
{
    ESC_ASSERT(i < d->cfg.lanes && d->lanes[i].busy && cb != NULL);
    d->lanes[i].timer_cb = cb;
    return uv_timer_start(&d->lanes[i].timer, lane_timer_cb, ms, 0);
}

void driver_stop(driver *d)
{
    if (d->stopping) {
        return;
    }
    d->stopping = true;
    (void)uv_timer_stop(&d->tick); /* always 0 for an initialised timer */
    (void)uv_timer_stop(&d->run_stop);
    for (uint32_t i = 0; i < d->cfg.lanes; i++) {
        lane *l = &d->lanes[i];
        if (l->busy && uv_is_active((uv_handle_t *)&l->timer)) {
            (void)uv_timer_stop(&l->timer);
            lane_rest(d, i); /* a job waiting on its timer ends now */
        }
    }
    maybe_end(d);
}

bool driver_stopping(const driver *d)
{
    return d->stopping;
}

uint64_t driver_jobs(const driver *d)
{
    return d->jobs;
}

uint64_t driver_skipped(const driver *d)
{
    return d->skipped;
}

void driver_free(driver *d)
{
    if (d == NULL) {
        return;
    }
    ESC_ASSERT(d->handles_open == 0); /* never started, or ended and closed */
    free(d->lanes);
    free(d->free);
    free(d);
}
