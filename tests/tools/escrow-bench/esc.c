/* SPDX-License-Identifier: Apache-2.0 */
/*
 * esc.c - escrow, end to end through libescrow's asynchronous API: every
 * reserve is answered only after the node's group commit (durable), or
 * with a "no" from memory.
 *
 * Each request reserves one unit with its own idempotency key
 * ("<prefix>-<n>", also the buyer id), so none is a retry. Three shapes:
 *   - closed loop (default): o->inflight requests in flight, each answer
 *     sends the next; timed (warm-up, then o->seconds);
 *   - open loop (--rate R): the driver's 1 ms tick sends what the schedule
 *     says is due, at most o->inflight in flight (the rest is skipped and
 *     counted); latency runs from the send;
 *   - counted (--count N): exactly N requests, closed loop, no warm-up; the
 *     node's resident memory is read before the first and after the last,
 *     so (after - before) / N is the memory one live hold costs.
 * With --mix-item, mix_pct % of the requests go to that (sold-out) item
 * instead: a flood of "no" next to a live sale. The driver (driver.h) keeps
 * the requests in flight: one request is one job, on one lane.
 *
 * With --pids the nodes' CPU (utime + stime) is read when the window opens
 * and closes: CPU per hold = delta / holds. --pg-pid does the same for the
 * PostgreSQL server and its backends.
 */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "driver.h"
#include "escrow.h"

/* After the last request of a counted run: let the node finish its batch
 * bookkeeping before its memory is read. */
#define ESC_SETTLE_MS 300u
/* Closed loop: a lane told TRY_LATER waits before its next request, as
 * escrow-load's buyers do (backoff.h: jittered, doubling from 25-50 ms up
 * to 1-2 s), so an overloaded node is not answered back at once. */
#define ESC_BACKOFF_BASE_MS 50u
#define ESC_BACKOFF_CAP_MS 2000u

typedef struct esc_run esc_run;

typedef struct esc_slot {
    esc_run *r;    /* borrowed */
    uint32_t lane; /* the driver's lane this slot is */
    int64_t sent_us;
    uint32_t try_later; /* TRY_LATER answers in a row on this lane */
    char key[ESC_ID_MAX + 1];
} esc_slot;

struct esc_run {
    const bench_opts *o; /* borrowed */
    uv_loop_t loop;
    esc_async *a;    /* owned until closed */
    driver *d;       /* owned */
    esc_slot *slots; /* owned, one per lane (o->inflight) */
    bench_meter m;
    bench_timeline tl;       /* --timeline */
    int64_t t0_wall_us;      /* unix time of m.t0_us */
    uint64_t backoffs;       /* closed loop: lanes that waited after TRY_LATER */
    uv_timer_t open_timer;   /* embedded: the window opens (proc sample) */
    uv_timer_t stop_timer;   /* embedded: the window closes */
    uv_timer_t settle_timer; /* embedded: settle of a counted run */
    bool stopping;
    bool ended; /* the driver's end ran: no request in flight */
    bool closing;
    bool settled;
    bench_proc_sample before, after;
    uint64_t errors_by_code[64];
    uint64_t no_sold_out, no_try_later, no_segment_empty;
    uint64_t holds_total; /* every hold taken, in the window or not */
    esc_stats stats;
};

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void async_closed(void *arg)
{
    (void)arg;
}

static void maybe_close(esc_run *r)
{
    if (!r->stopping || !r->ended || r->closing) {
        return;
    }
    if (r->o->count > 0 && !r->settled) {
        return; /* the settle timer samples, then calls us again */
    }
    r->closing = true;
    esc_async_stats(r->a, &r->stats);
    esc_async_close(r->a, async_closed, r);
    uv_close((uv_handle_t *)&r->open_timer, noop_close);
    uv_close((uv_handle_t *)&r->stop_timer, noop_close);
    uv_close((uv_handle_t *)&r->settle_timer, noop_close);
}

static int classify(esc_run *r, int status)
{
    switch (status) {
    case 0:
        r->holds_total++;
        return BENCH_OK;
    case ESC_ESOLD_OUT:
        r->no_sold_out++;
        return BENCH_NO;
    case ESC_ETRY_LATER:
        r->no_try_later++;
        return BENCH_NO;
    case ESC_ESEGMENT_EMPTY:
        r->no_segment_empty++;
        return BENCH_NO;
    default:
        r->errors_by_code[status < 0 && status > -64 ? -status : 0]++;
        return BENCH_ERR;
    }
}

static void settle_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    bench_procs_sample(&r->o->procs, &r->after);
    r->settled = true;
    maybe_close(r);
}

/* The driver's end: no request is in flight any more. A counted run ends
 * here (its last answer is in): sample after a pause. */
static void run_ended(driver *d, void *arg)
{
    (void)d;
    esc_run *r = arg;
    r->ended = true;
    if (r->o->count > 0 && !r->stopping) {
        r->stopping = true;
        r->m.t1_us = esc_mono_us();
        if (uv_timer_start(&r->settle_timer, settle_cb, ESC_SETTLE_MS, 0) != 0) {
            r->settled = true; /* no settle: sample now */
            bench_procs_sample(&r->o->procs, &r->after);
        }
    }
    maybe_close(r);
}

static void backoff_done(driver *d, uint32_t lane, void *arg)
{
    (void)arg;
    driver_done(d, lane);
}

/* Closed loop, after TRY_LATER: true if the lane waits before its next
 * request (driver_later ends the wait; driver_stop ends it at once). */
static bool back_off(esc_run *r, esc_slot *s, int status)
{
    if (status != ESC_ETRY_LATER || r->o->rate > 0) {
        s->try_later = 0;
        return false;
    }
    const backoff_policy policy = {
        .base_ms = ESC_BACKOFF_BASE_MS, .cap_ms = ESC_BACKOFF_CAP_MS, .give_up_ms = UINT32_MAX};
    int64_t ms = backoff_wait_ms(
        &policy, s->try_later, 0,
        bench_mix64(((uint64_t)s->lane << 32) ^ s->try_later ^ (uint64_t)s->sent_us));
    if (ms < 0 || driver_later(r->d, s->lane, (uint64_t)ms, backoff_done) != 0) {
        return false;
    }
    if (s->try_later < UINT32_MAX) {
        s->try_later++;
    }
    r->backoffs++;
    return true;
}

static void reserve_cb(int status, const esc_hold *hold, void *arg)
{
    (void)hold;
    esc_slot *s = arg;
    esc_run *r = s->r;
    int64_t now = esc_mono_us();
    int kind = classify(r, status);
    bench_meter_add(&r->m, kind, s->sent_us, now);
    if (r->o->timeline != NULL) {
        bench_timeline_add(&r->tl, &r->m, kind, s->sent_us, now);
    }
    if (back_off(r, s, status)) {
        return;
    }
    /* closed loop: sends the next; libescrow never calls back from inside a call */
    driver_done(r->d, s->lane);
}

/* Sends request number `job` from lane (driver_next_fn). */
static int slot_send(driver *d, uint32_t lane, uint64_t job, void *arg)
{
    (void)d;
    esc_run *r = arg;
    esc_slot *s = &r->slots[lane];
    const bench_opts *o = r->o;
    uint64_t n = job;
    if (o->key_hashed) { /* a random-looking key, as a shop's UUIDs: index pages at random */
        snprintf(s->key, sizeof s->key, "%016" PRIx64 "-%s", bench_mix64(n), o->key_prefix);
    } else {
        snprintf(s->key, sizeof s->key, "%s-%" PRIu64, o->key_prefix, n);
    }
    const char *item = o->item_id;
    if (o->mix_item_id != NULL && bench_mix64(n ^ 0x6d6978ULL) % 100u < o->mix_pct) {
        item = o->mix_item_id;
    }
    esc_reserve_req req = {.item_id = item,
                           .buyer_id = s->key,
                           .qty = 1,
                           .idempotency_key = s->key,
                           .ttl_ms = o->ttl_ms};
    s->sent_us = esc_mono_us();
    int rc = esc_async_reserve(r->a, &req, o->deadline_ms, reserve_cb, s);
    if (rc != 0) {
        /* refused before anything was sent: counted; the lane rests (open
         * loop: free for the schedule; closed loop: retired) */
        bench_meter_add(&r->m, classify(r, rc), s->sent_us, s->sent_us);
        return DRIVER_IDLE;
    }
    return DRIVER_BUSY;
}

static void open_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    bench_procs_sample(&r->o->procs, &r->before);
    r->t0_wall_us = esc_wall_ms() * 1000 - (esc_mono_us() - r->m.t0_us);
}

static void stop_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    bench_procs_sample(&r->o->procs, &r->after);
    r->stopping = true;
    driver_stop(r->d); /* requests in flight finish; then run_ended */
    maybe_close(r);
}

static int run_start(esc_run *r)
{
    const bench_opts *o = r->o;
    driver_config dc = {.lanes = o->inflight,
                        .jobs_max = o->count,
                        .rate_per_s = o->count > 0 ? 0 : o->rate,
                        .next = slot_send,
                        .end = run_ended,
                        .arg = r};
    int rc = uv_timer_init(&r->loop, &r->open_timer);
    rc = rc ? rc : uv_timer_init(&r->loop, &r->stop_timer);
    rc = rc ? rc : uv_timer_init(&r->loop, &r->settle_timer);
    if (rc != 0 || driver_new(&r->loop, &dc, &r->d) != 0) {
        return ESC_EIO; /* nothing to close: handles that exist are not active */
    }
    r->open_timer.data = r->stop_timer.data = r->settle_timer.data = r;
    for (uint32_t i = 0; i < o->inflight; i++) {
        r->slots[i].r = r;
        r->slots[i].lane = i;
    }
    if (o->count > 0) {
        bench_meter_init(&r->m, 0, BENCH_SECONDS_MAX);
        bench_procs_sample(&o->procs, &r->before);
        driver_start(r->d);
        return 0;
    }
    uv_update_time(&r->loop);
    bench_meter_init(&r->m, o->warmup_ms, o->seconds);
    uint64_t stop_ms = (uint64_t)(r->m.t1_us - esc_mono_us()) / 1000u + 1u;
    rc = uv_timer_start(&r->open_timer, open_cb, o->warmup_ms, 0);
    rc = rc ? rc : uv_timer_start(&r->stop_timer, stop_cb, stop_ms, 0);
    driver_start(r->d);
    return rc == 0 ? 0 : ESC_EIO;
}

static void print_errors(const esc_run *r)
{
    for (int i = 0; i < 64; i++) {
        if (r->errors_by_code[i] > 0) {
            fprintf(stderr, "escrow-bench: %s: %" PRIu64 " x %s\n", r->o->label,
                    r->errors_by_code[i], i == 0 ? "other" : esc_err_name(-i));
        }
    }
}

static void print_result(const esc_run *r)
{
    const bench_opts *o = r->o;
    const char *l = o->label;
    double s = bench_meter_seconds(&r->m);
    uint64_t answers = r->m.ok + r->m.no + r->m.err;
    double cpu = r->before.ok && r->after.ok && o->procs.npids > 0
                     ? (double)(r->after.cpu_us - r->before.cpu_us)
                     : -1.0;
    double pg_cpu = o->procs.pg_pid > 0 ? (double)(r->after.pg_cpu_us - r->before.pg_cpu_us) : -1.0;
    printf("BENCH %s_inflight=%u %s_req_s=%.0f %s_reject_pct=%.2f", l, o->inflight, l,
           (double)answers / s, l, answers ? 100.0 * (double)r->m.no / (double)answers : 0.0);
    bench_meter_print(&r->m, l);
    printf(" %s_holds=%" PRIu64 " %s_sold_out=%" PRIu64 " %s_try_later=%" PRIu64
           " %s_segment_empty=%" PRIu64 " %s_sold_out_cached=%" PRIu64 " %s_frames=%" PRIu64
           " %s_skipped=%" PRIu64,
           l, r->holds_total, l, r->no_sold_out, l, r->no_try_later, l, r->no_segment_empty, l,
           r->stats.sold_out_cached, l, r->stats.frames_sent, l, driver_skipped(r->d));
    printf(" %s_backoffs=%" PRIu64, l, r->backoffs);
    if (cpu >= 0) {
        printf(" %s_cpu_us_per_hold=%.2f %s_cpu_us_per_answer=%.3f %s_cpu_cores=%.2f", l,
               r->m.ok ? cpu / (double)r->m.ok : 0.0, l, answers ? cpu / (double)answers : 0.0, l,
               cpu / 1e6 / s);
        printf(" %s_rss_before=%" PRIu64 " %s_rss_after=%" PRIu64, l, r->before.rss_bytes, l,
               r->after.rss_bytes);
        if (o->count > 0 && r->holds_total > 0) {
            printf(" %s_bytes_per_hold=%.0f", l,
                   ((double)r->after.rss_bytes - (double)r->before.rss_bytes) /
                       (double)r->holds_total);
        }
    }
    if (o->rate > 0) {
        printf(" %s_rate=%.0f", l, o->rate);
    }
    if (pg_cpu >= 0) {
        printf(" %s_pg_cpu_us_per_hold=%.2f %s_pg_cpu_cores=%.2f", l,
               r->m.ok ? pg_cpu / (double)r->m.ok : 0.0, l, pg_cpu / 1e6 / s);
    }
    printf("\n");
}

int bench_esc_run(const bench_opts *o)
{
    esc_run *r = calloc(1, sizeof *r);
    if (r == NULL || (r->slots = calloc(o->inflight, sizeof *r->slots)) == NULL) {
        free(r);
        fprintf(stderr, "escrow-bench: out of memory\n");
        return 1;
    }
    r->o = o;
    esc_options eo = {.endpoint = o->endpoint,
                      .coordinator = o->coordinator,
                      .routes = o->routes,
                      .tenant_id = o->tenant_id,
                      .deadline_ms = o->deadline_ms};
    int rc = uv_loop_init(&r->loop);
    if (rc != 0) {
        fprintf(stderr, "escrow-bench: uv_loop_init: %s\n", uv_strerror(rc));
        free(r->slots);
        free(r);
        return 1;
    }
    if ((rc = esc_async_new(&r->loop, &eo, &r->a)) != 0) {
        fprintf(stderr, "escrow-bench: esc_async_new: %s\n", esc_strerror(rc));
    }
    if (rc == 0 && (rc = run_start(r)) != 0) {
        /* what was sent drains; then everything closes */
        fprintf(stderr, "escrow-bench: cannot start the run\n");
        r->stopping = r->settled = true;
        if (r->d != NULL) {
            driver_stop(r->d); /* started: ends once nothing is in flight */
        } else {
            r->ended = true; /* never started */
        }
        maybe_close(r);
    }
    (void)uv_run(&r->loop, UV_RUN_DEFAULT); /* returns once every handle is closed */
    int crc = uv_loop_close(&r->loop);
    if (rc == 0 && crc == 0 && o->timeline != NULL &&
        bench_timeline_write(&r->tl, o->timeline, r->t0_wall_us) != 0) {
        rc = 1;
    }
    if (rc == 0 && crc == 0) {
        print_result(r);
    }
    print_errors(r);
    bench_timeline_free(&r->tl);
    driver_free(r->d);
    free(r->slots);
    free(r);
    return rc == 0 && crc == 0 ? 0 : 1;
}
