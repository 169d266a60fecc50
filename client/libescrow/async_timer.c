/*
 * async_timer.c - see async_timer.h: the heap on due_us, the timer and the
 * idle handle, and what runs when a call is due.
 *
 * The heap is an array of borrowed call pointers (the calls live in the
 * slot table); each call knows its index (heap_idx). Asserted here: a call
 * the heap is asked about is where its heap_idx says, the heap never holds
 * more calls than the table has slots, and the call run first is due no
 * later than its children.
 */
#include "async_timer.h"

#include <stdlib.h>

#include "async.h"
#include "async_answer.h"
#include "async_routing.h"
#include "clock.h"
#include "esc_assert.h"

static void timer_cb(uv_timer_t *t);
static void idle_cb(uv_idle_t *h);

/* ---- the min-heap on due_us -------------------------------------------- */

static void heap_set(esc_async *a, uint32_t i, call *c)
{
    a->heap[i] = c;
    c->heap_idx = i;
}

static void heap_up(esc_async *a, uint32_t i)
{
    call *c = a->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (a->heap[parent]->due_us <= c->due_us) {
            break;
        }
        heap_set(a, i, a->heap[parent]);
        i = parent;
    }
    heap_set(a, i, c);
}

static void heap_down(esc_async *a, uint32_t i)
{
    call *c = a->heap[i];
    for (;;) {
        uint32_t m = 2 * i + 1;
        if (m >= a->nheap) {
            break;
        }
        if (m + 1 < a->nheap && a->heap[m + 1]->due_us < a->heap[m]->due_us) {
            m++;
        }
        if (a->heap[m]->due_us >= c->due_us) {
            break;
        }
        heap_set(a, i, a->heap[m]);
        i = m;
    }
    heap_set(a, i, c);
}

/* The call at heap index i is c itself. */
static void check_at(const esc_async *a, const call *c)
{
    ESC_ASSERT(c->heap_idx < a->nheap && a->heap[c->heap_idx] == c);
}

void cli_timer_fix(esc_async *a, call *c)
{
    check_at(a, c);
    uint32_t i = c->heap_idx;
    if (i > 0 && a->heap[(i - 1) / 2]->due_us > c->due_us) {
        heap_up(a, i);
    } else {
        heap_down(a, i);
    }
}

void cli_timer_push(esc_async *a, call *c)
{
    ESC_ASSERT(a->nheap < a->cap);
    heap_set(a, a->nheap++, c);
    heap_up(a, c->heap_idx);
}

void cli_timer_remove(esc_async *a, call *c)
{
    check_at(a, c);
    call *last = a->heap[--a->nheap];
    if (last != c) {
        heap_set(a, c->heap_idx, last);
        cli_timer_fix(a, last);
    }
}

void cli_timer_set_due(esc_async *a, call *c, int64_t due)
{
    c->due_us = due < c->deadline_us ? due : c->deadline_us;
    cli_timer_fix(a, c);
}

void cli_timer_arm(esc_async *a)
{
    if (a->closing) {
        return;
    }
    if (a->nheap == 0) {
        if (a->timer_armed) {
            (void)uv_timer_stop(&a->timer); /* always 0 for an initialised timer */
            a->timer_armed = false;
        }
        if (a->idle_on) {
            (void)uv_idle_stop(&a->idle); /* always 0 */
            a->idle_on = false;
        }
        return;
    }
    int64_t due = a->heap[0]->due_us;
    if (a->timer_armed && a->timer_due_us <= due) {
        return; /* fires earlier; timer_cb re-arms */
    }
    int64_t now = esc_mono_us();
    if (due <= now) {
        if (!a->idle_on) {
            int rc = uv_idle_start(&a->idle, idle_cb);
            if (rc != 0) {
                cli_log(&a->opts, 0, "ESC-CLIENT-TIMER uv_idle_start: %s", uv_strerror(rc));
                return;
            }
            a->idle_on = true;
        }
        return;
    }
    uint64_t delay_ms = (uint64_t)((due - now + 999) / 1000);
    int rc = uv_timer_start(&a->timer, timer_cb, delay_ms, 0);
    if (rc != 0) {
        cli_log(&a->opts, 0, "ESC-CLIENT-TIMER uv_timer_start: %s", uv_strerror(rc));
        return;
    }
    a->timer_armed = true;
    a->timer_due_us = due;
}

/* ---- the timer ---------------------------------------------------------- */

/* Runs every call whose due time has come (the timer and the idle handle). */
static void run_due(esc_async *a)
{
    int64_t now = esc_mono_us();
    /* Ends: each pass finishes a call or moves its due_us past now. */
    while (!a->closing && a->nheap > 0 && a->heap[0]->due_us <= now) {
        call *c = a->heap[0];
        ESC_ASSERT(a->nheap < 2 || a->heap[1]->due_us >= c->due_us);
        ESC_ASSERT(a->nheap < 3 || a->heap[2]->due_us >= c->due_us);
        if (c->phase == PH_DONE) {
            cli_answer_finish(a, c, c->last_status, NULL);
        } else if (now >= c->deadline_us) {
            if (c->kind == CALL_FETCH) {
                cli_routing_fetch_done(a, c, ESC_ETIMEDOUT);
            } else {
                cli_answer_finish(a, c, c->last_status != 0 ? c->last_status : ESC_ETIMEDOUT, NULL);
            }
        } else if (c->phase == PH_PARKED) {
            cli_routing_step(a, c, now);
        } else {
            cli_routing_resend(a, c, now);
        }
    }
    cli_timer_arm(a);
}

static void timer_cb(uv_timer_t *t)
{
    esc_async *a = t->data;
    a->timer_armed = false;
    run_due(a);
}

static void idle_cb(uv_idle_t *h)
{
    esc_async *a = h->data;
    (void)uv_idle_stop(&a->idle); /* always 0; run_due restarts it if work is due */
    a->idle_on = false;
    run_due(a);
}

static void timer_closed(uv_handle_t *h)
{
    cli_async_handle_closed(h->data);
}

int cli_timer_open(esc_async *a)
{
    if (uv_timer_init(a->loop, &a->timer) != 0) {
        return ESC_EIO;
    }
    a->timer.data = a;
    a->handles_open++;
    if (uv_idle_init(a->loop, &a->idle) != 0) {
        return ESC_EIO; /* the caller closes the timer (handles_open) */
    }
    a->idle.data = a;
    a->idle_inited = true;
    a->handles_open++;
    return 0;
}

void cli_timer_close(esc_async *a)
{
    (void)uv_timer_stop(&a->timer);
    uv_close((uv_handle_t *)&a->timer, timer_closed);
    if (a->idle_inited) {
        (void)uv_idle_stop(&a->idle);
        a->idle_on = false;
        uv_close((uv_handle_t *)&a->idle, timer_closed);
    }
}

int cli_timer_grow(esc_async *a, uint32_t ncap)
{
    call **heap = realloc(a->heap, ncap * sizeof *heap);
    if (heap == NULL) {
        return ESC_ENOMEM;
    }
    a->heap = heap;
    return 0;
}

void cli_timer_fini(esc_async *a)
{
    free(a->heap);
    a->heap = NULL;
}

uint32_t cli_timer_calls(const esc_async *a)
{
    return a->nheap;
}

call *cli_timer_last(const esc_async *a)
{
    return a->nheap > 0 ? a->heap[a->nheap - 1] : NULL;
}
