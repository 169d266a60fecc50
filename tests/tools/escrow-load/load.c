/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.c - see load.h.
 *
 * The driver (driver.h) runs `concurrency` lanes over buyers 0..buyers-1:
 * a buyer is one job, and when its story ends (rejected, errored,
 * confirmed, released or abandoned) the lane takes the next index. Every
 * step is a libescrow callback or the lane's timer on the one loop; nothing
 * blocks. When the last lane runs dry, every handle is closed and uv_run
 * returns.
 */
#include "load.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "driver.h"

typedef struct run run;

typedef struct buyer {
    run *r;        /* borrowed */
    uint32_t lane; /* the driver's lane: its timer waits think time and TRY_LATER backoff */
    uint64_t index;
    uint64_t hold_id;
    int64_t sent_us;
    int64_t try_later_since_us; /* its first TRY_LATER */
    uint32_t try_later;
    int decision;
    char key[ESC_ID_MAX + 1];
    char buyer_id[ESC_ID_MAX + 1];
} buyer;

struct run {
    const load_config *cfg; /* borrowed */
    load_stats *st;         /* borrowed */
    esc_async *a;           /* owned until closed */
    driver *d;              /* owned */
    buyer *buyers;          /* owned, one per lane (cfg->concurrency) */
    bool progress_on;
    uv_timer_t progress; /* embedded, unreferenced */
    int64_t t0_us;
};

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int load_decide(const load_config *cfg, uint64_t index)
{
    uint64_t x = splitmix64(cfg->seed ^ splitmix64(index));
    double u = (double)(x >> 11) * 0x1.0p-53;
    if (u < cfg->confirm) {
        return 0;
    }
    return u < cfg->confirm + cfg->release ? 1 : 2;
}

void load_skew_buyer(const load_config *cfg, const char *base, uint64_t pick, char *out, bool *hot)
{
    *hot = false;
    if (cfg->segments == 0) {
        snprintf(out, ESC_ID_MAX + 1, "%s", base);
        return;
    }
    uint32_t nhot = (uint32_t)(((uint64_t)cfg->segments * cfg->hot_segments_pct + 99) / 100);
    nhot = nhot == 0 ? 1 : nhot;
    uint64_t x = splitmix64(cfg->seed ^ splitmix64(pick ^ 0x736b6577ULL));
    *hot = x % 100 < cfg->hot_pct || nhot >= cfg->segments;
    uint32_t lo = *hot ? 0 : nhot;
    uint32_t hi = *hot ? nhot : cfg->segments;
    for (uint32_t n = 0; n <= LOAD_SKEW_TRIES_MAX; n++) {
        snprintf(out, ESC_ID_MAX + 1, "%s~%u", base, n);
        uint32_t slot = esc_route_slot(cfg->tenant_id, cfg->item_id, out, cfg->segments);
        if (slot >= lo && slot < hi) {
            return;
        }
    }
}

static void count_error(run *r, int code)
{
    unsigned idx = code < 0 && code > ESC_E_LAST_ ? (unsigned)-code : 0u;
    r->st->errors_by_kind[idx < LOAD_ERR_KINDS ? idx : 0]++;
}

static void noop_closed(uv_handle_t *h)
{
    (void)h;
}

static void async_closed(void *arg)
{
    (void)arg;
}

/* Every buyer is done (driver_end_fn): stop the clock and close every
 * handle (the driver closes its own). */
static void run_finish(driver *d, void *arg)
{
    (void)d;
    run *r = arg;
    r->st->run_s = (double)(esc_mono_us() - r->t0_us) / 1e6;
    if (r->progress_on) {
        uv_close((uv_handle_t *)&r->progress, noop_closed);
    }
    esc_async_stats(r->a, &r->st->client);
    esc_async_close(r->a, async_closed, r);
}

static void reserve_cb(int status, const esc_hold *hold, void *arg);

static int reserve_send(buyer *b)
{
    const load_config *cfg = b->r->cfg;
    esc_reserve_req req = {
        .item_id = cfg->item_id,
        .buyer_id = b->buyer_id,
        .qty = cfg->qty,
        .idempotency_key = b->key,
        .ttl_ms = cfg->ttl_ms,
    };
    b->sent_us = esc_mono_us();
    return esc_async_reserve(b->r->a, &req, cfg->deadline_ms, reserve_cb, b);
}

/* Starts buyer `job` on lane (driver_next_fn). A reserve the library
 * refuses is that buyer's outcome: the lane takes the next buyer. */
static int buyer_start(driver *d, uint32_t lane, uint64_t job, void *arg)
{
    (void)d;
    run *r = arg;
    buyer *b = &r->buyers[lane];
    b->index = job;
    b->hold_id = 0;
    b->try_later = 0;
    snprintf(b->key, sizeof b->key, "%s-%" PRIu64, r->cfg->key_prefix, b->index);
    char base[ESC_ID_MAX + 1];
    uint64_t pick = b->index;
    if (r->cfg->buyer_pool > 0) {
        /* not prefixed: two load processes with a pool share their buyers */
        pick = b->index % r->cfg->buyer_pool;
        snprintf(base, sizeof base, "buyer-%" PRIu64, pick);
    } else {
        memcpy(base, b->key, sizeof base);
    }
    bool hot = false;
    load_skew_buyer(r->cfg, base, pick, b->buyer_id, &hot);
    r->st->hot_buyers += hot;
    int rc = reserve_send(b);
    if (rc == 0) {
        return DRIVER_BUSY;
    }
    r->st->reserve_errors++;
    r->st->buyers_done++;
    count_error(r, rc);
    return DRIVER_NEXT;
}

static void buyer_done(buyer *b)
{
    b->r->st->buyers_done++;
    driver_done(b->r->d, b->lane);
}

static void after_cb(int status, const esc_hold *hold, void *arg)
{
    (void)hold;
    buyer *b = arg;
    load_stats *st = b->r->st;
    if (status == 0) {
        *(b->decision == 0 ? &st->confirmed : &st->released) += 1;
    } else {
        *(b->decision == 0 ? &st->confirm_errors : &st->release_errors) += 1;
        count_error(b->r, status);
    }
    buyer_done(b);
}

static void act(buyer *b)
{
    run *r = b->r;
    int rc = b->decision == 0
                 ? esc_async_confirm(r->a, b->hold_id, 0, r->cfg->deadline_ms, after_cb, b)
                 : esc_async_release(r->a, b->hold_id, r->cfg->deadline_ms, after_cb, b);
    if (rc < 0) {
        after_cb(rc, NULL, b); /* our own callback: counts and moves on */
    }
}

static void think_cb(driver *d, uint32_t lane, void *arg)
{
    (void)d;
    act(&((run *)arg)->buyers[lane]);
}

static void retry_cb(driver *d, uint32_t lane, void *arg)
{
    (void)d;
    buyer *b = &((run *)arg)->buyers[lane];
    int rc = reserve_send(b);
    if (rc < 0) {
        b->r->st->reserve_errors++;
        count_error(b->r, rc);
        buyer_done(b);
    }
}

static void on_hold(buyer *b, const esc_hold *hold)
{
    run *r = b->r;
    r->st->holds_ok++;
    hist_add(&r->st->hold_latency_us, (uint64_t)(esc_mono_us() - b->sent_us));
    b->hold_id = hold->hold_id;
    b->decision = load_decide(r->cfg, b->index);
    if (b->decision == 2) {
        r->st->abandoned++;
        buyer_done(b);
        return;
    }
    if (r->cfg->think_ms == 0 || driver_later(r->d, b->lane, r->cfg->think_ms, think_cb) != 0) {
        act(b);
    }
}

/* Returns true if the buyer will ask again later (backoff.h). */
static bool try_later_again(buyer *b)
{
    run *r = b->r;
    int64_t now = esc_mono_us();
    if (b->try_later == 0) {
        b->try_later_since_us = now;
    }
    if (r->cfg->try_later_retries != 0 && b->try_later >= r->cfg->try_later_retries) {
        return false;
    }
    const backoff_policy policy = {
        .base_ms = LOAD_BACKOFF_BASE_MS,
        .cap_ms = LOAD_BACKOFF_CAP_MS,
        .give_up_ms = r->cfg->give_up_ms,
    };
    uint64_t x = splitmix64(r->cfg->seed ^ (b->index * 31 + b->try_later));
    int64_t ms =
        backoff_wait_ms(&policy, b->try_later, (uint64_t)(now - b->try_later_since_us) / 1000u, x);
    if (ms < 0 || driver_later(r->d, b->lane, (uint64_t)ms, retry_cb) != 0) {
        return false;
    }
    b->try_later++;
    r->st->try_later_retries++;
    return true;
}

static void reserve_cb(int status, const esc_hold *hold, void *arg)
{
    buyer *b = arg;
    load_stats *st = b->r->st;
    switch (status) {
    case 0:
        on_hold(b, hold);
        return;
    case ESC_ETRY_LATER:
        if (try_later_again(b)) {
            return;
        }
        st->rejected_try_later++;
        break;
    case ESC_ESOLD_OUT:
        st->rejected_sold_out++;
        break;
    case ESC_ESEGMENT_EMPTY:
        st->rejected_segment_empty++;
        break;
    default:
        st->reserve_errors++;
        count_error(b->r, status);
        break;
    }
    buyer_done(b);
}

static void progress_cb(uv_timer_t *t)
{
    run *r = t->data;
    const load_stats *st = r->st;
    fprintf(stderr,
            "escrow-load: %6.1fs buyers %" PRIu64 "/%" PRIu64 " holds %" PRIu64 " sold_out %" PRIu64
            " try_later_retries %" PRIu64 "\n",
            (double)(esc_mono_us() - r->t0_us) / 1e6, st->buyers_done, r->cfg->buyers, st->holds_ok,
            st->rejected_sold_out, st->try_later_retries);
}

static int run_open(uv_loop_t *loop, run *r)
{
    esc_options opts = {
        .endpoint = r->cfg->endpoint,
        .coordinator = r->cfg->coordinator,
        .routes = r->cfg->routes,
        .tenant_id = r->cfg->tenant_id,
        .deadline_ms = r->cfg->deadline_ms,
        .credential = r->cfg->credential,
    };
    driver_config dc = {.lanes = r->cfg->concurrency,
                        .jobs_max = r->cfg->buyers,
                        .next = buyer_start,
                        .end = run_finish,
                        .arg = r};
    r->buyers = calloc(r->cfg->concurrency, sizeof *r->buyers);
    if (r->buyers == NULL) {
        return ESC_ENOMEM;
    }
    int rc = driver_new(loop, &dc, &r->d);
    if (rc == 0) {
        rc = esc_async_new(loop, &opts, &r->a);
    }
    if (rc < 0) {
        driver_free(r->d); /* never started: nothing on the loop */
        free(r->buyers);
        return rc;
    }
    for (uint32_t i = 0; i < r->cfg->concurrency; i++) {
        r->buyers[i].r = r;
        r->buyers[i].lane = i;
    }
    if (!r->cfg->quiet && uv_timer_init(loop, &r->progress) == 0) {
        r->progress.data = r;
        r->progress_on = true;
        if (uv_timer_start(&r->progress, progress_cb, 1000, 1000) == 0) {
            uv_unref((uv_handle_t *)&r->progress);
        }
    }
    return 0;
}

int load_run(uv_loop_t *loop, const load_config *cfg, load_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    hist_init(&stats->hold_latency_us);
    run r;
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.st = stats;
    int rc = run_open(loop, &r);
    if (rc < 0) {
        return rc;
    }
    r.t0_us = esc_mono_us();
    driver_start(r.d);
    (void)uv_run(loop, UV_RUN_DEFAULT); /* returns once every handle closed */
    driver_free(r.d);
    free(r.buyers);
    return 0;
}
