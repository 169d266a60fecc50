/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_slot.h - the engine's calls and its in-flight table.
 *
 * Each accepted call is a `call` that owns its request (when it may be
 * re-encoded) and its encoded frame. slots[] is indexed by the low
 * CLI_SLOT_BITS of the call's corr_id (corr_id = seq << CLI_SLOT_BITS |
 * slot; seq grows and is never reused while the client lives), so a reply
 * is matched in O(1) and a late duplicate of an answered call (other seq)
 * is dropped. The table doubles from CLI_SLOTS_INITIAL up to
 * ESC_CLIENT_INFLIGHT_MAX, the heap's array with it (async_timer.h).
 */
#ifndef ESC_CLIENT_ASYNC_SLOT_H
#define ESC_CLIENT_ASYNC_SLOT_H

#include <stdint.h>

#include "async_state.h"

/* Makes the first table. Returns 0 or ESC_ENOMEM. */
int cli_slot_init(esc_async *a);
/* Frees the table (not the calls: the client has none left). */
void cli_slot_fini(esc_async *a);

/* A new call of kind (CALL_USER / CALL_FETCH) for req (borrowed; copied in
 * routing mode and for reserves), due now, PARKED, in the table and the
 * heap. Returns 0 and *out, or ESC_EBUSY (table full) / ESC_ENOMEM. */
int cli_slot_new(esc_async *a, int kind, const wire_request *req, uint32_t dl_ms, int64_t now,
                 call **out);
/* Encodes req (borrowed) as c's frame under c's corr_id. Returns 0,
 * ESC_EINVAL (unencodable) or ESC_ENOMEM; c keeps its old frame on error. */
int cli_slot_encode(const esc_async *a, call *c, wire_request *req);
/* Takes c out of the table and the heap and frees it (no callback). */
void cli_slot_free(esc_async *a, call *c);
/* The call a reply names, by the corr_id in its body or, without one, by
 * the transport's request id (hdr, borrowed); NULL if none (late). */
call *cli_slot_find(esc_async *a, uint64_t corr_id, const nnx_hdr *hdr);
/* Points c at segment seg (0: none, single-node mode) behind k: the same
 * frame when it is already out there, otherwise a new corr_id and a
 * re-encoded frame (segment hint, same key and attempt); then sends it. */
void cli_slot_aim(esc_async *a, call *c, conn *k, uint64_t seg, int64_t now);

#endif
