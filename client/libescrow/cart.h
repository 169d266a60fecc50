/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cart.h - plans an all-or-nothing cart: pure, no I/O.
 *
 * A cart becomes one reserve per distinct item: lines naming the same item
 * are summed, and each reserve's idempotency key is "<cart_key>/<item_id>",
 * so retrying the cart with the same cart_key retries every line with the
 * same key (and gets the same holds back). Planned lines keep the order in
 * which their item first appears; first_line is that input index, which is
 * what a failure reports.
 */
#ifndef ESC_CLIENT_CART_H
#define ESC_CLIENT_CART_H

#include <stddef.h>
#include <stdint.h>

#include "escrow.h"
#include "esc_limits.h"

typedef struct cli_cart_line {
    char item_id[ESC_ITEM_LEN_MAX + 1];
    char key[ESC_KEY_LEN_MAX + 1]; /* "<cart_key>/<item_id>" */
    int64_t qty;                   /* summed over the input lines of this item */
    size_t first_line;             /* index in the caller's lines */
} cli_cart_line;

/* Plans lines[0..nlines) (borrowed) under cart_key (borrowed) into out, which
 * has room for nlines entries (at most ESC_CART_LINES_MAX). Returns 0 and
 * *nout, or ESC_EINVAL: nlines is 0 or above ESC_CART_LINES_MAX, cart_key is
 * not a valid id, or a line is bad (invalid item, qty outside
 * 1..ESC_QTY_MAX, summed qty above ESC_QTY_MAX, composed key longer than
 * ESC_KEY_LEN_MAX); then *bad_line names the line, or is nlines when no
 * single line is to blame. */
int cli_cart_plan(const esc_cart_line *lines, size_t nlines, const char *cart_key,
                  cli_cart_line *out, size_t *nout, size_t *bad_line);

#endif
