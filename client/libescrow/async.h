/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async.h - what the rest of libescrow needs from the asynchronous engine
 * beyond the public esc_async_* calls (async.c implements both, and
 * async_cart.c the carts), and the one life-cycle call the engine's own
 * files make.
 */
#ifndef ESC_CLIENT_ASYNC_H
#define ESC_CLIENT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "escrow.h"
#include "opts.h"

/* Calls that can still be accepted before ESC_CLIENT_INFLIGHT_MAX is reached;
 * 0 once the client is closing. */
size_t cli_async_room(const esc_async *a);

/* True once esc_async_close was called. */
bool cli_async_closing(const esc_async *a);

/* The client's validated options (borrowed; valid until the client is freed). */
const cli_opts *cli_async_opts(const esc_async *a);

/* esc_async_reserve_cart with the index of the offending line: on
 * ESC_EINVAL from planning, *bad_line names it (or is nlines when no single
 * line is to blame). Otherwise exactly esc_async_reserve_cart. */
int cli_async_cart(esc_async *a, const char *buyer_id, const esc_cart_line *lines, size_t nlines,
                   const char *cart_key, uint32_t ttl_ms, uint32_t deadline_ms, esc_cart_cb cb,
                   void *arg, size_t *bad_line);

/* For the engine's files: one of a's libuv handles finished closing; the
 * last one fails what is pending, frees a and runs the close callback. */
void cli_async_handle_closed(esc_async *a);

#endif
