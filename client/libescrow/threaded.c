/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threaded.c - the threaded client (esc_threaded_*): the engine on a libuv
 * loop of its own, on a thread of its own, fed by any number of threads.
 *
 * Three queues of jobs (threaded.h), each with one owner:
 *   - the inbox (in_mu): any thread appends a job and wakes the client's
 *     thread (uv_async_send, under the lock, so the wake handle is never
 *     used after the thread closed it);
 *   - the backlog (client's thread only): jobs taken from the inbox, in
 *     order, waiting for the engine to accept them. The engine refuses
 *     (ESC_EBUSY) above its in-flight maximum; such a job stays first in
 *     line and the backlog moves on when a running call ends;
 *   - the outbox (out_mu): answers to queued calls, taken by
 *     esc_threaded_poll. A byte is written to the pipe when the outbox turns
 *     non-empty and the pipe is drained when a poll empties it, so its read
 *     end (esc_threaded_fd) is readable exactly while answers wait.
 * A blocking call's answer skips the outbox: its caller is woken through the
 * job's waiter. No caller code runs on the client's thread, except the log
 * callback the caller installed.
 *
 * Shutdown: esc_threaded_free sets `closing` (under in_mu: no job enters
 * after it) and wakes the thread, which fails the backlog with ESC_ECLOSED,
 * closes the engine (that fails the calls in flight) and then its wake
 * handle; the loop ends, the thread exits and is joined.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <errno.h>
#include <pthread.h>

#include "async.h"
#include "esc_assert.h"
#include "req.h"
#include "threaded.h"

typedef struct thr_list {
    thr_job *head;
    thr_job *tail;
} thr_list;

struct esc_threaded {
    uv_loop_t loop;  /* embedded; run by `thread` only */
    uv_async_t wake; /* the inbox has jobs, or closing */
    uv_thread_t thread;
    esc_async *a; /* owned; the client's thread only; NULL once closed */
    uv_mutex_t in_mu;
    thr_list inbox; /* under in_mu */
    bool closing;   /* under in_mu */
    thr_list backlog;
    size_t running;     /* jobs inside the engine (client's thread only) */
    bool shutting_down; /* client's thread only */
    uv_mutex_t out_mu;
    thr_list outbox; /* under out_mu */
    uv_file fds[2];  /* pipe: [0] readable while the outbox is not empty */
};

static void list_push(thr_list *l, thr_job *j)
{
    j->next = NULL;
    if (l->tail != NULL) {
        l->tail->next = j;
    } else {
        l->head = j;
    }
    l->tail = j;
}

static thr_job *list_pop(thr_list *l)
{
    thr_job *j = l->head;
    if (j != NULL) {
        l->head = j->next;
        if (l->head == NULL) {
            l->tail = NULL;
        }
        j->next = NULL;
    }
    return j;
}

static void free_job(thr_job *j)
{
    free(j->copies);
    free(j);
}

/* ---- answers (client's thread) ------------------------------------------ */

static void signal_reader(esc_threaded *t)
{
    char b = 1;
    while (write(t->fds[1], &b, 1) < 0 && errno == EINTR) {
    }
    /* EAGAIN: the pipe is full, so it is readable already */
}

static void drain_reader(esc_threaded *t)
{
    char buf[64];
    ssize_t n;
    do {
        n = read(t->fds[0], buf, sizeof buf);
    } while (n > 0 || (n < 0 && errno == EINTR));
}

/* Hands a finished job on: to its waiter, or to the outbox. */
static void deliver(esc_threaded *t, thr_job *j)
{
    thr_waiter *w = j->waiter;
    if (w != NULL) {
        uv_mutex_lock(&w->mu);
        w->done = true;
        uv_cond_signal(&w->cv);
        uv_mutex_unlock(&w->mu);
        return; /* j belongs to the woken caller now */
    }
    uv_mutex_lock(&t->out_mu);
    bool was_empty = t->outbox.head == NULL;
    list_push(&t->outbox, j);
    if (was_empty) {
        signal_reader(t);
    }
    uv_mutex_unlock(&t->out_mu);
}

static void finish(esc_threaded *t, thr_job *j, int status)
{
    j->done.status = status;
    deliver(t, j);
}

static void start_backlog(esc_threaded *t);

/* A call the engine accepted has ended. */
static void engine_done(esc_threaded *t, thr_job *j)
{
    ESC_ASSERT(t->running > 0);
    t->running--;
    deliver(t, j);
    start_backlog(t);
}

static void hold_cb(int status, const esc_hold *hold, void *arg)
{
    thr_job *j = arg;
    j->done.status = status;
    if (hold != NULL && cli_hold_shown(status)) {
        j->done.hold = *hold;
        j->done.has_hold = true;
    }
    engine_done(j->t, j);
}

static void cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line, void *arg)
{
    thr_job *j = arg;
    j->done.status = status;
    if (status == 0 && holds != NULL) {
        memcpy(j->holds, holds, nholds * sizeof *holds);
        j->done.nholds = nholds;
    } else {
        j->done.failed_line = failed_line;
    }
    engine_done(j->t, j);
}

/* ---- running jobs (client's thread) ------------------------------------- */

/* Hands j to the engine: 0 (a callback comes) or the engine's refusal. */
static int start_job(esc_threaded *t, thr_job *j)
{
    switch (j->op) {
    case THR_RESERVE:
        return esc_async_reserve(t->a, &j->reserve, j->deadline_ms, hold_cb, j);
    case THR_CONFIRM:
        return esc_async_confirm(t->a, j->hold_id, j->qty, j->deadline_ms, hold_cb, j);
    case THR_RELEASE:
        return esc_async_release(t->a, j->hold_id, j->deadline_ms, hold_cb, j);
    case THR_EXTEND:
        return esc_async_extend(t->a, j->hold_id, j->ttl_ms, j->deadline_ms, hold_cb, j);
    case THR_GET:
        return esc_async_get(t->a, j->hold_id, j->deadline_ms, hold_cb, j);
    case THR_CART:
        j->done.failed_line = j->nlines;
        return cli_async_cart(t->a, j->buyer_id, j->lines, j->nlines, j->cart_key, j->ttl_ms,
                              j->deadline_ms, cart_cb, j, &j->done.failed_line);
    case THR_STATS:
        break;
    }
    ESC_ASSERT(j->op == THR_STATS);
    esc_async_stats(t->a, j->stats);
    return 0;
}

/* Starts backlog jobs in order until the engine has no room. */
static void start_backlog(esc_threaded *t)
{
    thr_job *j;
    while ((j = t->backlog.head) != NULL) {
        if (t->shutting_down) {
            finish(t, list_pop(&t->backlog), ESC_ECLOSED);
            continue;
        }
        int rc = start_job(t, j);
        if (rc == ESC_EBUSY && t->running > 0) {
            return; /* first in line until a running call ends */
        }
        (void)list_pop(&t->backlog);
        if (rc < 0) {
            finish(t, j, rc);
        } else if (j->op == THR_STATS) {
            finish(t, j, 0);
        } else {
            t->running++;
        }
    }
}

static void engine_closed_cb(void *arg)
{
    esc_threaded *t = arg;
    uv_close((uv_handle_t *)&t->wake, NULL); /* the last handle: the loop ends */
}

static void wake_cb(uv_async_t *h)
{
    esc_threaded *t = h->data;
    uv_mutex_lock(&t->in_mu);
    thr_list in = t->inbox;
    t->inbox = (thr_list){0};
    bool closing = t->closing;
    uv_mutex_unlock(&t->in_mu);
    thr_job *j;
    while ((j = list_pop(&in)) != NULL) {
        list_push(&t->backlog, j);
    }
    if (closing && !t->shutting_down) {
        t->shutting_down = true;
        start_backlog(t); /* fails it */
        esc_async_close(t->a, engine_closed_cb, t);
        t->a = NULL;
        return;
    }
    start_backlog(t);
}

static void thread_main(void *arg)
{
    esc_threaded *t = arg;
    (void)uv_run(&t->loop, UV_RUN_DEFAULT);
}

/* ---- submitting (any thread) -------------------------------------------- */

static int push_inbox(esc_threaded *t, thr_job *j)
{
    j->t = t;
    uv_mutex_lock(&t->in_mu);
    if (t->closing) {
        uv_mutex_unlock(&t->in_mu);
        return ESC_ECLOSED;
    }
    list_push(&t->inbox, j);
    int rc = uv_async_send(&t->wake);
    ESC_ASSERT(rc == 0); /* fails only on a closed handle: never before closing */
    uv_mutex_unlock(&t->in_mu);
    return 0;
}

int cli_threaded_run(esc_threaded *t, thr_job *j)
{
    thr_waiter w = {.done = false};
    if (uv_mutex_init(&w.mu) != 0) {
        return ESC_ENOMEM;
    }
    if (uv_cond_init(&w.cv) != 0) {
        uv_mutex_destroy(&w.mu);
        return ESC_ENOMEM;
    }
    j->waiter = &w;
    int rc = push_inbox(t, j);
    if (rc == 0) {
        uv_mutex_lock(&w.mu);
        while (!w.done) {
            uv_cond_wait(&w.cv, &w.mu);
        }
        uv_mutex_unlock(&w.mu);
    }
    uv_cond_destroy(&w.cv);
    uv_mutex_destroy(&w.mu);
    return rc;
}

int cli_threaded_queue(esc_threaded *t, thr_job *j)
{
    j->waiter = NULL;
    return push_inbox(t, j);
}

size_t esc_threaded_poll(esc_threaded *t, esc_completion *out, size_t max)
{
    if (t == NULL || out == NULL) {
        return 0;
    }
    thr_list taken = {0};
    size_t n = 0;
    uv_mutex_lock(&t->out_mu);
    while (n < max && t->outbox.head != NULL) {
        list_push(&taken, list_pop(&t->outbox));
        n++;
    }
    if (t->outbox.head == NULL) {
        drain_reader(t);
    }
    uv_mutex_unlock(&t->out_mu);
    thr_job *j;
    for (size_t i = 0; (j = list_pop(&taken)) != NULL; i++) {
        out[i] = j->done;
        free_job(j);
    }
    return n;
}

int esc_threaded_fd(const esc_threaded *t)
{
    return t == NULL ? -1 : t->fds[0];
}

/* ---- life cycle --------------------------------------------------------- */

/* Starts the thread with every signal blocked in it: signals stay with the
 * host's threads. */
static int start_thread(esc_threaded *t)
{
    sigset_t all, old;
    sigfillset(&all);
    if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0) {
        return ESC_EIO;
    }
    int rc = uv_thread_create(&t->thread, thread_main, t);
    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0 ? 0 : ESC_EIO;
}

/* Closes what esc_threaded_new opened, from the loop on down; frees t
 * unless libuv still holds a handle of it (never expected: then t leaks
 * rather than being freed under libuv). */
static void close_all(esc_threaded *t)
{
    (void)uv_run(&t->loop, UV_RUN_DEFAULT); /* runs the close callbacks */
    bool loop_closed = uv_loop_close(&t->loop) == 0;
    thr_job *j;
    while ((j = list_pop(&t->outbox)) != NULL) {
        free_job(j);
    }
    close(t->fds[0]);
    close(t->fds[1]);
    uv_mutex_destroy(&t->out_mu);
    uv_mutex_destroy(&t->in_mu);
    if (loop_closed) {
        free(t);
    }
}

static int open_io(esc_threaded *t)
{
    if (uv_loop_init(&t->loop) != 0) {
        return ESC_EIO;
    }
    if (uv_mutex_init(&t->in_mu) != 0) {
        goto fail_in_mu;
    }
    if (uv_mutex_init(&t->out_mu) != 0) {
        goto fail_out_mu;
    }
    if (uv_pipe(t->fds, UV_NONBLOCK_PIPE, UV_NONBLOCK_PIPE) != 0) {
        goto fail_pipe;
    }
    if (uv_async_init(&t->loop, &t->wake, wake_cb) != 0) {
        goto fail_wake;
    }
    t->wake.data = t;
    return 0;
fail_wake:
    close(t->fds[0]);
    close(t->fds[1]);
fail_pipe:
    uv_mutex_destroy(&t->out_mu);
fail_out_mu:
    uv_mutex_destroy(&t->in_mu);
fail_in_mu:
    (void)uv_loop_close(&t->loop);
    return ESC_EIO;
}

int esc_threaded_new(const esc_options *opts, esc_threaded **out)
{
    if (out == NULL) {
        return ESC_EINVAL;
    }
    esc_threaded *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return ESC_ENOMEM;
    }
    int rc = open_io(t);
    if (rc < 0) {
        free(t);
        return rc;
    }
    rc = esc_async_new(&t->loop, opts, &t->a);
    if (rc == 0) {
        rc = start_thread(t);
        if (rc < 0) {
            esc_async_close(t->a, NULL, NULL);
        }
    }
    if (rc < 0) {
        uv_close((uv_handle_t *)&t->wake, NULL);
        close_all(t);
        return rc;
    }
    *out = t;
    return 0;
}

void esc_threaded_free(esc_threaded *t)
{
    if (t == NULL) {
        return;
    }
    uv_mutex_lock(&t->in_mu);
    t->closing = true;
    int rc = uv_async_send(&t->wake);
    ESC_ASSERT(rc == 0);
    uv_mutex_unlock(&t->in_mu);
    (void)uv_thread_join(&t->thread);
    close_all(t);
}
