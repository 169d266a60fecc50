/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_timer.c - see async_timer.h: the calls on a min-heap (heap.h) by
 * the moment each is due, the timer and the idle handle, and what runs when
 * a call is due.
 *
 * Each call embeds its heap node (call.due: the key is the due time); the
 * heap's array of borrowed nodes lives in esc_async and is reserved with the
 * slot table (cli_timer_grow), so a push never allocates and cannot fail.
 * Asserted here and in heap.c: a call the heap is asked about is where its
 * node says, the heap never holds more calls than the table has slots, and
 * the call run first is due no later than its children.
 */
#include "async_timer.h"

#include "async.h"
#include "async_answer.h"
#include "async_routing.h"
#include "clock.h"
#include "esc_assert.h"
#include "heap.h"

static void timer_cb(uv_timer_t *t);
static void idle_cb(uv_idle_t *h);

/* ---- the heap of calls ---------------------------------------------------- */

/* The call whose heap node n is. */
static call *call_of(heap_node *n)
{
    return HEAP_ENTRY(n, call, due);
}

void cli_timer_push(esc_async *a, call *c, int64_t due)
{
    ESC_ASSERT(a->heap.len < a->cap);
    heap_node_init(&c->due);
    int rc = heap_push(&a->heap, &c->due, due);
    ESC_ASSERT(rc == 0); /* slots_grow reserved room for every call */
}

void cli_timer_remove(esc_async *a, call *c)
{
    heap_remove(&a->heap, &c->due);
}

void cli_timer_move(esc_async *a, call *c, int64_t due)
{
    heap_update(&a->heap, &c->due, due);
}

void cli_timer_set_due(esc_async *a, call *c, int64_t due)
{
    cli_timer_move(a, c, due < c->deadline_us ? due : c->deadline_us);
}

void cli_timer_arm(esc_async *a)
{
    if (a->closing) {
        return;
    }
    heap_node *top = heap_top(&a->heap);
    if (top == NULL) {
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
    int64_t due = top->key;
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
    /* Ends: each pass finishes a call or moves its due time past now. */
    heap_node *top;
    while (!a->closing && (top = heap_top(&a->heap)) != NULL && top->key <= now) {
        call *c = call_of(top);
        ESC_ASSERT(a->heap.len < 2 || a->heap.nodes[1]->key >= top->key);
        ESC_ASSERT(a->heap.len < 3 || a->heap.nodes[2]->key >= top->key);
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
    return heap_reserve(&a->heap, ncap);
}

void cli_timer_fini(esc_async *a)
{
    heap_fini(&a->heap);
}

uint32_t cli_timer_calls(const esc_async *a)
{
    return a->heap.len;
}

call *cli_timer_last(const esc_async *a)
{
    return a->heap.len > 0 ? call_of(a->heap.nodes[a->heap.len - 1]) : NULL;
}
