/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cart.c - see cart.h.
 */
#include "cart.h"

#include <stdio.h>
#include <string.h>

#include "wire.h"

/* Index of item in out[0..n), or n. Carts are small (ESC_CART_LINES_MAX), so
 * a linear scan beats any table. */
static size_t find_item(const cli_cart_line *out, size_t n, const char *item_id)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(out[i].item_id, item_id) == 0) {
            return i;
        }
    }
    return n;
}

static int add_line(cli_cart_line *out, size_t *n, const esc_cart_line *line, size_t index,
                    const char *cart_key)
{
    if (!wire_id_valid(line->item_id, ESC_ITEM_LEN_MAX) || line->qty < 1 ||
        line->qty > ESC_QTY_MAX) {
        return ESC_EINVAL;
    }
    size_t at = find_item(out, *n, line->item_id);
    if (at < *n) {
        if (out[at].qty + line->qty > ESC_QTY_MAX) {
            return ESC_EINVAL;
        }
        out[at].qty += line->qty;
        return 0;
    }
    cli_cart_line *p = &out[at];
    int len = snprintf(p->key, sizeof p->key, "%s/%s", cart_key, line->item_id);
    if (len < 0 || (size_t)len > ESC_KEY_LEN_MAX) {
        return ESC_EINVAL;
    }
    memcpy(p->item_id, line->item_id, strlen(line->item_id) + 1);
    p->qty = line->qty;
    p->first_line = index;
    *n = at + 1;
    return 0;
}

int cli_cart_plan(const esc_cart_line *lines, size_t nlines, const char *cart_key,
                  cli_cart_line *out, size_t *nout, size_t *bad_line)
{
    if (lines == NULL || nlines == 0 || nlines > ESC_CART_LINES_MAX ||
        !wire_id_valid(cart_key, ESC_KEY_LEN_MAX)) {
        *bad_line = nlines;
        return ESC_EINVAL;
    }
    size_t n = 0;
    for (size_t i = 0; i < nlines; i++) {
        int rc = add_line(out, &n, &lines[i], i, cart_key);
        if (rc < 0) {
            *bad_line = i;
            return rc;
        }
    }
    *nout = n;
    return 0;
}
