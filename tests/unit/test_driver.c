/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_driver.c - unit tests for the driver (tests/tools/driver): jobs are
 * fake (they end on the lane's timer or at once), so every shape runs on a
 * real libuv loop without libescrow: closed loop to jobs_max, lanes that
 * retire, jobs that end inside their own start, driver_stop ending lanes
 * that wait on their timer, the open loop's skipped jobs, bad configs.
 * And backoff.h: the waits after "try later" and the time to give up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backoff.h"
#include "driver.h"
#include "escrow_errors.h"

#define LANES_MAX 8

typedef struct fake {
    uv_loop_t loop;
    driver *d;
    int mode;          /* how a job behaves: MODE_* */
    uint64_t started;  /* next calls */
    uint64_t finished; /* jobs that ended */
    uint32_t busy;     /* jobs running now */
    uint32_t busy_max;
    uint64_t idle_from; /* MODE_IDLE_FROM: jobs from this number on start nothing */
    uint64_t last_job;
    uint64_t jobs, skipped; /* the driver's counters at the end */
    uint32_t cut;           /* jobs ended by driver_stop */
    int ends;
    bool in_lane[LANES_MAX];
} fake;

enum { MODE_TIMER, MODE_AT_ONCE, MODE_DONE_INSIDE, MODE_IDLE_FROM, MODE_WAIT };

static void job_end_cb(driver *d, uint32_t lane, void *arg)
{
    fake *f = arg;
    assert_true(f->in_lane[lane]);
    f->in_lane[lane] = false;
    f->busy--;
    f->finished++;
    driver_done(d, lane);
}

static int next_cb(driver *d, uint32_t lane, uint64_t job, void *arg)
{
    fake *f = arg;
    assert_false(f->in_lane[lane]);
    if (f->started > 0) {
        assert_true(job > f->last_job); /* numbered in start order */
    }
    f->last_job = job;
    f->started++;
    if (f->mode == MODE_AT_ONCE || (f->mode == MODE_IDLE_FROM && job >= f->idle_from)) {
        return f->mode == MODE_AT_ONCE ? DRIVER_NEXT : DRIVER_IDLE;
    }
    if (f->mode == MODE_DONE_INSIDE) {
        driver_done(d, lane); /* ends inside its own start: the lane loops */
        return DRIVER_BUSY;
    }
    f->in_lane[lane] = true;
    f->busy++;
    f->busy_max = f->busy > f->busy_max ? f->busy : f->busy_max;
    uint64_t ms = f->mode == MODE_WAIT ? 60000 : 1 + job % 3;
    assert_int_equal(driver_later(d, lane, ms, job_end_cb), 0);
    return DRIVER_BUSY;
}

static void end_cb(driver *d, void *arg)
{
    fake *f = arg;
    assert_ptr_equal(d, f->d);
    /* jobs still waiting on their lane's timer were ended by a stop */
    f->cut = f->busy;
    f->busy = 0;
    memset(f->in_lane, 0, sizeof f->in_lane);
    f->ends++;
}

static void run(fake *f, int mode, const driver_config *base)
{
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->mode = mode;
    driver_config cfg = *base;
    cfg.next = next_cb;
    cfg.end = end_cb;
    cfg.arg = f;
    assert_int_equal(driver_new(&f->loop, &cfg, &f->d), 0);
    driver_start(f->d);
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(f->ends, 1);
    f->jobs = driver_jobs(f->d);
    f->skipped = driver_skipped(f->d);
    driver_free(f->d);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

static void test_closed_loop_to_jobs_max(void **state)
{
    (void)state;
    fake f = {0};
    run(&f, MODE_TIMER, &(driver_config){.lanes = 4, .jobs_max = 50});
    assert_int_equal(f.started, 50);
    assert_int_equal(f.finished, 50);
    assert_int_equal(f.busy_max, 4);
    assert_int_equal(f.cut, 0);
    assert_int_equal(f.jobs, 50);
}

static void test_jobs_ending_at_once(void **state)
{
    (void)state;
    fake f = {0};
    run(&f, MODE_AT_ONCE, &(driver_config){.lanes = 3, .jobs_max = 1000});
    assert_int_equal(f.started, 1000); /* one lane loops through all, no recursion */
    fake g = {0};
    run(&g, MODE_DONE_INSIDE, &(driver_config){.lanes = 3, .jobs_max = 1000});
    assert_int_equal(g.started, 1000);
}

static void test_idle_lanes_retire(void **state)
{
    (void)state;
    fake f = {0};
    f.idle_from = 10;
    run(&f, MODE_IDLE_FROM, &(driver_config){.lanes = 4});
    assert_int_equal(f.finished, 10);
    assert_int_equal(f.started, 14); /* each lane retires at its first idle start */
}

static void stop_cb(uv_timer_t *t)
{
    fake *f = t->data;
    assert_int_equal(f->busy, 4); /* every lane waits on its timer */
    driver_stop(f->d);
    driver_stop(f->d); /* again: nothing */
    assert_true(driver_stopping(f->d));
    uv_close((uv_handle_t *)t, NULL);
}

static void test_stop_ends_waiting_lanes(void **state)
{
    (void)state;
    fake f = {0};
    assert_int_equal(uv_loop_init(&f.loop), 0);
    f.mode = MODE_WAIT;
    driver_config cfg = {.lanes = 4, .next = next_cb, .end = end_cb, .arg = &f};
    assert_int_equal(driver_new(&f.loop, &cfg, &f.d), 0);
    uv_timer_t t;
    uv_timer_init(&f.loop, &t);
    t.data = &f;
    uv_timer_start(&t, stop_cb, 5, 0);
    driver_start(f.d);
    assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0); /* not 60 s */
    assert_int_equal(f.ends, 1);
    assert_int_equal(f.started, 4);
    assert_int_equal(f.cut, 4);
    driver_free(f.d);
    assert_int_equal(uv_loop_close(&f.loop), 0);
}

static void test_open_loop_skips(void **state)
{
    (void)state;
    fake f = {0};
    /* 2,000 jobs/s for 100 ms on 2 lanes whose jobs last 1..3 ms: most are
     * skipped, none queued, and run_ms stops the run. */
    run(&f, MODE_TIMER, &(driver_config){.lanes = 2, .run_ms = 100, .rate_per_s = 2000});
    assert_true(f.started > 0);
    assert_int_equal(f.finished + f.cut, f.started);
    assert_true(f.busy_max <= 2);
    assert_true(f.skipped > 0);
    assert_int_equal(f.jobs, f.started + f.skipped);
}

static void test_bad_config(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    driver *d = NULL;
    driver_config ok = {.lanes = 1, .next = next_cb, .end = end_cb};
    driver_config c = ok;
    c.lanes = 0;
    assert_int_equal(driver_new(&loop, &c, &d), ESC_EINVAL);
    c.lanes = DRIVER_LANES_MAX + 1;
    assert_int_equal(driver_new(&loop, &c, &d), ESC_EINVAL);
    c = ok;
    c.end = NULL;
    assert_int_equal(driver_new(&loop, &c, &d), ESC_EINVAL);
    c = ok;
    c.rate_per_s = -1;
    assert_int_equal(driver_new(&loop, &c, &d), ESC_EINVAL);
    assert_int_equal(driver_new(&loop, &ok, &d), 0);
    driver_free(d); /* never started: nothing on the loop */
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Each wait lies in [d/2, d] with d = min(cap, base * 2^k); the random
 * number moves it inside that range; no retry starts after give_up_ms. */
static void test_backoff_waits(void **state)
{
    (void)state;
    const backoff_policy p = {.base_ms = 50, .cap_ms = 2000, .give_up_ms = 60000};
    const uint64_t d[] = {50, 100, 200, 400, 800, 1600, 2000, 2000};
    for (uint32_t k = 0; k < 8; k++) {
        assert_int_equal(backoff_wait_ms(&p, k, 0, 0), d[k] / 2);
        assert_int_equal(backoff_wait_ms(&p, k, 0, d[k] - d[k] / 2), d[k]);
        for (uint64_t r = 0; r < 5000; r += 7) {
            int64_t w = backoff_wait_ms(&p, k, 0, r * 2654435761u);
            assert_true(w >= (int64_t)(d[k] / 2) && w <= (int64_t)d[k]);
        }
    }
    assert_int_equal(backoff_wait_ms(&p, 4000000000u, 0, 0), 1000); /* no overflow: the cap */
    /* giving up: a retry that would start after 60 s is not made */
    assert_int_equal(backoff_wait_ms(&p, 10, 59000, 0), 1000);
    assert_int_equal(backoff_wait_ms(&p, 10, 59001, 0), -1);
    assert_int_equal(backoff_wait_ms(&p, 10, 60000, 0), -1);
    /* a sum of waits stays under the give-up time */
    uint64_t t = 0;
    uint32_t k = 0;
    for (int64_t w; (w = backoff_wait_ms(&p, k, t, k * 40503u)) >= 0; k++) {
        t += (uint64_t)w;
    }
    assert_true(t <= 60000 && t > 60000 - 2000);
    assert_true(k > 30 && k < 130);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_loop_to_jobs_max),
        cmocka_unit_test(test_jobs_ending_at_once),
        cmocka_unit_test(test_idle_lanes_retire),
        cmocka_unit_test(test_stop_ends_waiting_lanes),
        cmocka_unit_test(test_open_loop_skips),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_backoff_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
