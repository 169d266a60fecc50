/* SPDX-License-Identifier: Apache-2.0 */
/*
 * req.h - public call arguments <-> wire structs, for libescrow.
 *
 * Pure functions (no I/O): they validate what a caller passed the way a
 * segment node would, so a request the node would refuse is answered locally
 * with ESC_EINVAL and never sent; and they turn a decoded wire_reply's hold
 * into the public esc_hold. cmocka tests cover every branch.
 */
#ifndef ESC_CLIENT_REQ_H
#define ESC_CLIENT_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include "escrow.h"
#include "wire.h"

/* Fills *out (op RESERVE, corr_id 0) from req (borrowed) for tenant_id
 * (borrowed, already valid). Returns 0, or ESC_EINVAL for a missing or
 * invalid item, buyer or key (1..128 bytes of printable ASCII), qty outside
 * 1..ESC_QTY_MAX, or ttl_ms neither 0 nor within the ttl bounds. */
int cli_req_reserve(wire_request *out, const char *tenant_id, const esc_reserve_req *req);

/* Fills *out for confirm, release, extend or get on hold_id. qty is used by
 * confirm only (0 = all, up to ESC_QTY_MAX), ttl_ms by extend only (0 = the
 * item's ttl, else within bounds). Returns 0 or ESC_EINVAL. */
int cli_req_hold(wire_request *out, const char *tenant_id, wire_op op, uint64_t hold_id,
                 int64_t qty, uint32_t ttl_ms);

/* Copies a decoded hold into the public struct; unknown states become
 * ESC_HOLD_UNKNOWN. */
void cli_hold_from_wire(esc_hold *out, const wire_hold *in);

/* True if hold (as answered with ESC_ENOT_HELD to a resent op) is in the
 * state op asked for: confirm -> converted (with qty sold, unless qty is 0),
 * release -> cancelled. Then an earlier copy of the same call did the work. */
bool cli_goal_reached(wire_op op, int64_t qty, const wire_hold *hold);

/* True when a hold that came with answer status is shown to the caller
 * (esc_reserve's *out, esc_completion.has_hold): on 0 and with the answers
 * that carry the hold's final state, never with ESC_EIDEMPOTENCY_MISMATCH
 * or the sold-out family (that hold is not the caller's). */
bool cli_hold_shown(int status);

/* Maps a Reply.status to what the caller sees: 0 or an ESC_E* code from the
 * table; anything else (positive, unknown) is ESC_EPROTO, and so is success
 * without the hold that every escrow operation answers with. */
int cli_reply_status(int status, bool has_hold);

#endif
