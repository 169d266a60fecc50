/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_timer.h - when each call of the engine needs attention: a min-heap
 * (heap.h) of the calls by due time (the next resend, routing step or
 * deadline), one
 * uv_timer armed for the top, and an idle handle for work due at once.
 *
 * The heap is used here and only here (its array is in esc_async, reserved
 * with the slot table by cli_timer_grow); the rest of the engine reschedules
 * calls through these functions. run from the timer: a DONE call is
 * delivered, a call past its deadline ends (ESC_ETIMEDOUT, or the definite
 * answer it was backing off from), a PARKED one takes its routing step, a
 * SENT one is resent.
 */
#ifndef ESC_CLIENT_ASYNC_TIMER_H
#define ESC_CLIENT_ASYNC_TIMER_H

#include <stdint.h>

#include "async_state.h"

/* Initialises the timer and the idle handle on a->loop, each counted in
 * a->handles_open. Returns 0 or ESC_EIO (then the handles counted are the
 * ones to close). */
int cli_timer_open(esc_async *a);
/* Stops and closes the handles cli_timer_open made (a->closing is set). */
void cli_timer_close(esc_async *a);
/* Grows the heap's array to ncap entries. Returns 0 or ESC_ENOMEM (the old
 * array stands). */
int cli_timer_grow(esc_async *a, uint32_t ncap);
/* Frees the heap's array. */
void cli_timer_fini(esc_async *a);

/* Calls in the heap: every call in flight. */
uint32_t cli_timer_calls(const esc_async *a);
/* A call in the heap, the cheapest to take out (NULL when empty). */
call *cli_timer_last(const esc_async *a);

/* Adds c (borrowed, in the slot table, in no heap) due at due (monotonic
 * us). Cannot fail: cli_timer_grow reserved room for every slot. */
void cli_timer_push(esc_async *a, call *c, int64_t due);
/* Takes c out. */
void cli_timer_remove(esc_async *a, call *c);
/* Makes c due at due, even past its deadline (an answer due now). */
void cli_timer_move(esc_async *a, call *c, int64_t due);
/* Reschedules c at due, never past its deadline. */
void cli_timer_set_due(esc_async *a, call *c, int64_t due);
/* Arms the timer (or the idle handle) for the top of the heap; stops both
 * when the heap is empty, so an idle client does not keep the loop alive. */
void cli_timer_arm(esc_async *a);

#endif
