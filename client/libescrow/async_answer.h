/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_answer.h - what an answer does to a call of the engine: deliver it,
 * back off and resend, move it (routing mode), or, for a reserve's "no",
 * settle first (resolve every segment a copy of its frame may still reach).
 *
 * A call's callback runs exactly once, after the call left the table and
 * the heap, and never inside an esc_async_* function: an answer known there
 * (a cached SOLD_OUT, an unencodable frame) is delivered from the timer.
 */
#ifndef ESC_CLIENT_ASYNC_ANSWER_H
#define ESC_CLIENT_ASYNC_ANSWER_H

#include <stdbool.h>
#include <stddef.h>

#include "async_state.h"

/* Decodes one reply that arrived on k (msg is transferred: freed here) and
 * completes, moves or backs off its call; a late or garbled reply is
 * logged and dropped. */
void cli_answer_reply(esc_async *a, conn *k, void *msg, size_t len, const nnx_hdr *hdr);

/* Delivers user call c's answer (hold borrowed, may be NULL) and frees c,
 * unless a reserve's "no" must wait for its strays (settle). */
void cli_answer_finish(esc_async *a, call *c, int status, const esc_hold *hold);

/* The answer of user call c is known: delivered now, or from the timer
 * when we are inside an esc_async_* function. */
void cli_answer_complete(esc_async *a, call *c, int status);

/* Schedules a resend after "nothing done, try again" (ESC_EBUSY,
 * ESC_EUNAVAILABLE), 10..320 ms with jitter. Returns false when that would
 * pass the deadline: then status is the final answer. */
bool cli_answer_backoff(esc_async *a, call *c, int status);

/* True if a copy of c's current frame may be unanswered: more copies went
 * out than replies came back, or the frame left an owner that never
 * answered it. */
bool cli_answer_in_doubt(const call *c);

#endif
