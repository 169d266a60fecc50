/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threaded.h - the threaded client's calls as values (jobs), between the
 * public esc_threaded_* functions (threaded_calls.c, which build jobs) and
 * the client's thread (threaded.c, which runs them on the engine).
 *
 * A job is one call: its arguments, its answer (an esc_completion) and, for
 * a blocking call, the waiter its caller sleeps on. A blocking call's job
 * lives on the caller's stack and borrows its arguments (the caller waits);
 * a queued call's job is on the heap and owns copies of them, and is freed
 * by esc_threaded_poll (or esc_threaded_free) after its answer was taken.
 *
 * Ownership moves with the job: the submitting thread hands it to the
 * client's inbox, the client's thread runs it and hands it to the waiter
 * (blocking) or the outbox (queued); nothing touches a job after handing it
 * on.
 */
#ifndef ESC_CLIENT_THREADED_H
#define ESC_CLIENT_THREADED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "escrow.h"

typedef enum thr_op {
    THR_RESERVE,
    THR_CONFIRM,
    THR_RELEASE,
    THR_EXTEND,
    THR_GET,
    THR_CART,
    THR_STATS,
} thr_op;

/* What a blocked caller sleeps on; set once, by the client's thread. */
typedef struct thr_waiter {
    uv_mutex_t mu;
    uv_cond_t cv;
    bool done;
} thr_waiter;

typedef struct thr_job thr_job;
struct thr_job {
    thr_job *next; /* inbox, backlog or outbox link */
    esc_threaded *t;
    thr_op op;
    uint32_t deadline_ms;
    esc_reserve_req reserve; /* THR_RESERVE */
    uint64_t hold_id;        /* confirm, release, extend, get */
    int64_t qty;             /* confirm */
    uint32_t ttl_ms;         /* extend, carts */
    const char *buyer_id;    /* carts */
    const char *cart_key;    /* carts */
    const esc_cart_line *lines;
    size_t nlines;
    esc_hold *holds;    /* carts: borrowed, the caller's, room for nlines */
    esc_stats *stats;   /* THR_STATS: borrowed, the caller's */
    void *copies;       /* queued calls: owned, the strings and lines above */
    thr_waiter *waiter; /* blocking calls; NULL for queued ones */
    esc_completion done;
};

/* Runs j (on the caller's stack, arguments borrowed) and waits for its
 * answer; j->done holds it afterwards. Returns ESC_ECLOSED without running
 * it when the client is closing. */
int cli_threaded_run(esc_threaded *t, thr_job *j);

/* Queues j (heap, arguments owned: transferred on success). Returns 0, or
 * ESC_ECLOSED (j stays the caller's). */
int cli_threaded_queue(esc_threaded *t, thr_job *j);

#endif
