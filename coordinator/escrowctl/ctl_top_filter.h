/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_filter.h - which items `escrowctl top` shows: the filter, its
 * words for the title line, and its SQL.
 *
 * The SQL is assembled from fixed fragments, one per condition given (the
 * values travel as parameters, never in the text): a condition that is not
 * given is not in the statement at all, so PostgreSQL plans each filter as
 * what it is (the sold-out test becomes an anti-join over the segments
 * instead of a subquery per item).
 *
 * Pure: no I/O; unit-tested (tests/unit/test_ctl_top.c).
 */
#ifndef CTL_TOP_FILTER_H
#define CTL_TOP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "esc_limits.h"

/* The item states a filter can name (items.state). */
typedef enum ctl_top_state {
    CTL_TOP_STATE_ANY = 0,
    CTL_TOP_STATE_ACTIVE,
    CTL_TOP_STATE_PAUSED,
    CTL_TOP_STATE_RETIRED,
} ctl_top_state;

/* Which items are shown; all conditions hold at once. */
typedef struct ctl_top_filter {
    char tenant[ESC_TENANT_LEN_MAX + 1]; /* "" = every tenant */
    char prefix[ESC_ITEM_LEN_MAX + 1];   /* item ids starting with it; "" = all */
    ctl_top_state state;
    bool sold_out;  /* nothing available, held, in flight or unallocated */
    bool collapsed; /* collapsed into a tail segment */
} ctl_top_filter;

/* The LIKE pattern of a prefix filter: prefix with '%', '_' and '\'
 * escaped by '\', then '%'. out must hold CTL_TOP_LIKE_MAX bytes. */
#define CTL_TOP_LIKE_MAX (2 * ESC_ITEM_LEN_MAX + 2)
void ctl_top_filter_like(const char *prefix, char out[CTL_TOP_LIKE_MAX]);

/* The filter as a condition over items aliased "i". */
#define CTL_TOP_WHERE_MAX 1024
#define CTL_TOP_WHERE_PARAMS_MAX 3
typedef struct ctl_top_where {
    char sql[CTL_TOP_WHERE_MAX];                  /* "TRUE AND ..." with $1.. placeholders */
    const char *params[CTL_TOP_WHERE_PARAMS_MAX]; /* borrowed from the filter and like */
    int nparams;
    char like[CTL_TOP_LIKE_MAX];
} ctl_top_where;

/* Fills *w for f (borrowed: w->params point into f and w). Sold out is the
 * route's flag: nothing available, held, in flight or unallocated. */
void ctl_top_filter_where(const ctl_top_filter *f, ctl_top_where *w);

/* The filter in words for the title line ("tenant=shop-1 prefix=tee
 * state=paused sold-out", or "all items"), into buf[cap]. */
void ctl_top_filter_describe(const ctl_top_filter *f, char *buf, size_t cap);

#endif
