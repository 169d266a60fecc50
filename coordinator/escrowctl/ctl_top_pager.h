/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_pager.h - paging through `escrowctl top`'s items, and what a key
 * means.
 *
 * A live view shows as many items as fit, so pages are not of one size:
 * the pager remembers where each earlier page started (up to
 * CTL_TOP_PAGER_DEPTH of them; older ones are forgotten and "previous"
 * then steps back by the current page's size).
 *
 * Pure: unit-tested (tests/unit/test_ctl_top.c).
 */
#ifndef CTL_TOP_PAGER_H
#define CTL_TOP_PAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_TOP_PAGER_DEPTH 256

typedef struct ctl_top_pager {
    int64_t offset; /* the first item shown, 0-based */
    int64_t back[CTL_TOP_PAGER_DEPTH];
    size_t nback;
} ctl_top_pager;

typedef enum ctl_top_key {
    CTL_TOP_KEY_NONE = 0,
    CTL_TOP_KEY_QUIT,  /* q, Q, Ctrl-C (when it arrives as a byte) */
    CTL_TOP_KEY_NEXT,  /* n, space, PgDn, j, down arrow */
    CTL_TOP_KEY_PREV,  /* p, b, PgUp, k, up arrow */
    CTL_TOP_KEY_FIRST, /* g, Home */
    CTL_TOP_KEY_REDRAW /* Ctrl-L, r */
} ctl_top_key;

void ctl_top_pager_init(ctl_top_pager *p, int64_t offset);
/* Moves past the shown items when more match. Returns true if it moved. */
bool ctl_top_pager_next(ctl_top_pager *p, size_t shown, int64_t matched);
/* Back to where the previous page started; without a remembered one, back
 * by shown items (at least one). Returns true if it moved. */
bool ctl_top_pager_prev(ctl_top_pager *p, size_t shown);
void ctl_top_pager_first(ctl_top_pager *p);
/* After a sample: when the matches shrank below the page (items sold out
 * of a --sold-out filter's view, say), back to the first page. Returns
 * true if it moved. */
bool ctl_top_pager_clamp(ctl_top_pager *p, int64_t matched);

/* The first key in buf[0..n) (bytes read from the terminal; an escape
 * sequence counts as one key). *used is how many bytes it took (at least 1
 * when n > 0). */
ctl_top_key ctl_top_key_decode(const char *buf, size_t n, size_t *used);

#endif
