/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_idem.h - escrow-gateway's idempotency rules: what a libescrow answer
 * becomes in HTTP terms, replays included. Pure: no I/O.
 *
 * Reserve and cart: the client's Idempotency-Key is the reserve's
 * idempotency key (a cart's line "<key>/<item>"), scoped by the tenant in
 * the cluster, so the cluster remembers it, not the gateway: a gateway
 * restarted, or another gateway, answers the same. A hold this call made
 * is 201; the hold the key already had (esc_hold.replayed) is 200 with the
 * replay header; the key with another item, buyer or qty is 422
 * idempotency_mismatch (the cluster compares those three).
 *
 * Confirm, release and extend take an optional Idempotency-Key. The hold
 * itself remembers what was done to it, so with a key, a "no" whose hold
 * shows that exactly this was done already (confirm: converted, and with
 * qty_sold = qty when qty was given; release: cancelled; extend: extended
 * and still held) is answered 200 with the replay header: a retry after a
 * 504 or a lost connection gets the success it is looking for. Without a
 * key the "no" stays a "no" (409 not_held with the hold).
 */
#ifndef ESC_GW_IDEM_H
#define ESC_GW_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "escrow.h"

typedef enum gw_op { GW_OP_RESERVE, GW_OP_CONFIRM, GW_OP_RELEASE, GW_OP_EXTEND, GW_OP_GET } gw_op;

/* What to answer: err 0 means the hold (or the cart's holds) is the body,
 * with status http (200 or 201) and the replay header when replay; else
 * err is the ESC_E* code whose gw_answer row is the answer. */
typedef struct gw_outcome {
    int err;
    unsigned http;
    bool replay;
} gw_outcome;

/* status and hold (may be NULL) as libescrow's callback gave them; keyed:
 * the request carried an Idempotency-Key; qty: confirm's qty (0 = all). */
gw_outcome gw_idem_hold(gw_op op, int status, const esc_hold *hold, bool keyed, int64_t qty);
/* A cart's answer: 201, or 200 with the replay header when every line was
 * a replay. */
gw_outcome gw_idem_cart(int status, const esc_hold *holds, size_t nholds);

/* True if key is a usable Idempotency-Key: 1..ESC_KEY_LEN_MAX printable
 * ASCII bytes (a cart also needs room for "/<item>": gw_idem_cart_key_fits). */
bool gw_idem_key_valid(const char *key);
/* True if "<key>/<item>" fits ESC_KEY_LEN_MAX for an item of item_len bytes. */
bool gw_idem_cart_key_fits(const char *key, size_t item_len);

#endif
