/*
 * esc.c - escrow, end to end through libescrow's asynchronous API: every
 * reserve is answered only after the node's group commit (durable), or
 * with a "no" from memory.
 *
 * Each request reserves one unit with its own idempotency key
 * ("<prefix>-<n>", also the buyer id), so none is a retry. Three shapes:
 *   - closed loop (default): o->inflight requests in flight, each answer
 *     sends the next; timed (warm-up, then o->seconds);
 *   - open loop (--rate R): a 1 ms timer sends what the schedule says is
 *     due, at most o->inflight in flight; latency runs from the send;
 *   - counted (--count N): exactly N requests, closed loop, no warm-up; the
 *     node's resident memory is read before the first and after the last,
 *     so (after - before) / N is the memory one live hold costs.
 * With --mix-item, mix_pct % of the requests go to that (sold-out) item
 * instead: a flood of "no" next to a live sale.
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

#include "clock.h"
#include "escrow.h"

/* Open-loop schedule tick. */
#define ESC_RATE_TICK_MS 1u
/* After the last request of a counted run: let the node finish its batch
 * bookkeeping before its memory is read. */
#define ESC_SETTLE_MS 300u

typedef struct esc_run esc_run;

typedef struct esc_slot {
    esc_run *r; /* borrowed */
    int64_t sent_us;
    bool busy;
    char key[ESC_ID_MAX + 1];
} esc_slot;

struct esc_run {
    const bench_opts *o; /* borrowed */
    uv_loop_t loop;
    esc_async *a;    /* owned until closed */
    esc_slot *slots; /* owned, o->inflight */
    uint32_t *free_slots;
    uint32_t nfree;
    bench_meter m;
    uv_timer_t open_timer; /* embedded: the window opens (proc sample) */
    uv_timer_t stop_timer; /* embedded: the window closes */
    uv_timer_t rate_timer; /* embedded: open-loop schedule, settle of a counted run */
    int64_t rate_t0_us;
    uint64_t next; /* requests sent */
    uint32_t busy;
    bool stopping;
    bool closing;
    bool settled;
    bench_proc_sample before, after;
    uint64_t errors_by_code[64];
    uint64_t no_sold_out, no_try_later, no_segment_empty;
    uint64_t holds_total; /* every hold taken, in the window or not */
    uint64_t skipped;     /* open loop: due while every slot was in flight */
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
    if (!r->stopping || r->busy > 0 || r->closing) {
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
    uv_close((uv_handle_t *)&r->rate_timer, noop_close);
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

static void slot_send(esc_slot *s);

static void settle_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    bench_procs_sample(&r->o->procs, &r->after);
    r->settled = true;
    maybe_close(r);
}

/* A counted run ends when its last answer is in: sample after a pause. */
static void counted_end(esc_run *r)
{
    if (r->o->count == 0 || r->busy > 0 || r->next < r->o->count || r->stopping) {
        return;
    }
    r->stopping = true;
    r->m.t1_us = esc_mono_us();
    if (uv_timer_start(&r->rate_timer, settle_cb, ESC_SETTLE_MS, 0) != 0) {
        r->settled = true; /* no settle: sample now */
        bench_procs_sample(&r->o->procs, &r->after);
    }
}

static void reserve_cb(int status, const esc_hold *hold, void *arg)
{
    (void)hold;
    esc_slot *s = arg;
    esc_run *r = s->r;
    bench_meter_add(&r->m, classify(r, status), s->sent_us, esc_mono_us());
    s->busy = false;
    r->busy--;
    if (r->o->rate > 0) {
        r->free_slots[r->nfree++] = (uint32_t)(s - r->slots);
    } else if (!r->stopping && (r->o->count == 0 || r->next < r->o->count)) {
        slot_send(s); /* closed loop: libescrow never calls back from inside a call */
    }
    counted_end(r);
    maybe_close(r);
}

static void slot_send(esc_slot *s)
{
    esc_run *r = s->r;
    const bench_opts *o = r->o;
    uint64_t n = r->next++;
    snprintf(s->key, sizeof s->key, "%s-%" PRIu64, o->key_prefix, n);
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
        /* refused before anything was sent: counted, the slot stays free */
        bench_meter_add(&r->m, classify(r, rc), s->sent_us, s->sent_us);
        if (o->rate > 0) {
            r->free_slots[r->nfree++] = (uint32_t)(s - r->slots);
        }
        return;
    }
    s->busy = true;
    r->busy++;
}

/* Open loop: send what the schedule says is due by now. */
static void rate_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    if (r->stopping) {
        return;
    }
    double due = (double)(esc_mono_us() - r->rate_t0_us) / 1e6 * r->o->rate;
    while ((double)r->next < due && r->nfree > 0) {
        slot_send(&r->slots[r->free_slots[--r->nfree]]);
    }
    if ((double)r->next < due) {
        /* at the in-flight cap: skipped (and counted), not queued */
        r->skipped += (uint64_t)due - r->next;
        r->next = (uint64_t)due;
    }
}

static void open_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    bench_procs_sample(&r->o->procs, &r->before);
}

static void stop_cb(uv_timer_t *t)
{
    esc_run *r = t->data;
    bench_procs_sample(&r->o->procs, &r->after);
    r->stopping = true;
    (void)uv_timer_stop(&r->rate_timer); /* always 0 for an initialised timer */
    maybe_close(r);
}

static int run_start(esc_run *r)
{
    const bench_opts *o = r->o;
    int rc = uv_timer_init(&r->loop, &r->open_timer);
    rc = rc ? rc : uv_timer_init(&r->loop, &r->stop_timer);
    rc = rc ? rc : uv_timer_init(&r->loop, &r->rate_timer);
    if (rc != 0) {
        return ESC_EIO; /* nothing to close: handles that exist are not active */
    }
    r->open_timer.data = r->stop_timer.data = r->rate_timer.data = r;
    for (uint32_t i = 0; i < o->inflight; i++) {
        r->slots[i].r = r;
        r->free_slots[r->nfree++] = o->inflight - 1 - i;
    }
    if (o->count > 0) {
        bench_meter_init(&r->m, 0, BENCH_SECONDS_MAX);
        bench_procs_sample(&o->procs, &r->before);
        for (uint32_t i = 0; i < o->inflight && r->next < o->count; i++) {
            slot_send(&r->slots[i]);
        }
        counted_end(r);
        return 0;
    }
    uv_update_time(&r->loop);
    bench_meter_init(&r->m, o->warmup_ms, o->seconds);
    uint64_t stop_ms = (uint64_t)(r->m.t1_us - esc_mono_us()) / 1000u + 1u;
    rc = uv_timer_start(&r->open_timer, open_cb, o->warmup_ms, 0);
    rc = rc ? rc : uv_timer_start(&r->stop_timer, stop_cb, stop_ms, 0);
    if (o->rate > 0) {
        r->rate_t0_us = esc_mono_us();
        rc = rc ? rc : uv_timer_start(&r->rate_timer, rate_cb, 0, ESC_RATE_TICK_MS);
    } else {
        r->nfree = 0;
        for (uint32_t i = 0; i < o->inflight; i++) {
            slot_send(&r->slots[i]);
        }
    }
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
           r->stats.sold_out_cached, l, r->stats.frames_sent, l, r->skipped);
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
    if (r == NULL || (r->slots = calloc(o->inflight, sizeof *r->slots)) == NULL ||
        (r->free_slots = calloc(o->inflight, sizeof *r->free_slots)) == NULL) {
        if (r != NULL) {
            free(r->free_slots);
            free(r->slots);
        }
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
        free(r->free_slots);
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
        maybe_close(r);
    }
    (void)uv_run(&r->loop, UV_RUN_DEFAULT); /* returns once every handle is closed */
    int crc = uv_loop_close(&r->loop);
    if (rc == 0 && crc == 0) {
        print_result(r);
    }
    print_errors(r);
    free(r->free_slots);
    free(r->slots);
    free(r);
    return rc == 0 && crc == 0 ? 0 : 1;
}
