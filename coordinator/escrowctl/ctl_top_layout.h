/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_layout.h - what `escrowctl top` shows, as lines of text: the
 * title, the column header, one row per item and one per segment under it.
 *
 * Pure: a snapshot (ctl_top_snap.h) and the view's size go in, lines come
 * out; no terminal, no escape sequences (ctl_top_term.h draws them, plain
 * output prints them). Unit-tested (tests/unit/test_ctl_top.c).
 *
 * The rows (columns in this order; REGION only when a segment's region is
 * not "local", that is when regions are configured):
 *   ITEM / SEGMENT  "tenant/item", then "  seg ID #NO" per segment
 *   REGION          the segment's region
 *   OWNER           item: "ACTIVE/WANTED segs"; segment: "NODE eEPOCH", "down"
 *                   appended when the owner is down, "-" without an owner
 *   STATE           the item's (active, paused, retired) or the segment's
 *                   (active, draining, retired)
 *   AVAIL HELD SOLD the counters; the item's are its segments' sums
 *   HOLD/S REJ/S    units put on hold and reserves refused for lack of stock
 *                   (SEGMENT_EMPTY), per second; "-" when not measured
 *   XFERS           transfers planned or sent, out of or into it
 *   MOVING          units in flight: the item's, or "-OUT +IN" of a segment
 *   FLAGS           item: "total N", "unallocated N", "collapsed tail=ID",
 *                   "SOLD OUT"; segment: "TAIL"
 * A live view (a height) shows the items that fit and says how many items
 * it shows; plain output (no height, no width) shows every item of the page.
 */
#ifndef CTL_TOP_LAYOUT_H
#define CTL_TOP_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "ctl_top_snap.h"

/* A line's bytes at most: a wider terminal sees 400 columns. */
#define CTL_TOP_WIDTH_MAX 400
/* The narrowest and shortest live view that still shows a row. */
#define CTL_TOP_WIDTH_MIN 40
#define CTL_TOP_HEIGHT_MIN 8

typedef enum ctl_top_line_kind {
    CTL_TOP_LINE_TITLE = 0, /* the first line */
    CTL_TOP_LINE_TEXT,      /* summary, note, key help */
    CTL_TOP_LINE_HEADER,    /* the column names */
    CTL_TOP_LINE_ITEM,      /* an item's row */
    CTL_TOP_LINE_SEGMENT,   /* a segment's row */
} ctl_top_line_kind;

typedef struct ctl_top_line {
    ctl_top_line_kind kind;
    char text[CTL_TOP_WIDTH_MAX + 1];
} ctl_top_line;

typedef struct ctl_top_view {
    int width;          /* columns; 0 = CTL_TOP_WIDTH_MAX (plain output) */
    int height;         /* rows; 0 = every item of the page (plain output) */
    bool live;          /* a key help line at the bottom, a note line always */
    const char *clock;  /* borrowed: the time to show ("21:30:05") */
    const char *filter; /* borrowed: ctl_top_filter_describe's words */
    int interval_ms;
} ctl_top_view;

typedef struct ctl_top_lines {
    ctl_top_line *line; /* borrowed: cap lines of caller storage */
    size_t cap;
    size_t n;           /* lines written */
    size_t items_shown; /* items of the snapshot on screen (the next page starts after) */
} ctl_top_lines;

/* Lines plain output needs for s (title, summary, note, header, rows). */
size_t ctl_top_layout_lines(const ctl_top_snap *s);

/* Lays s out for v into out (out->line and out->cap set by the caller; at
 * most cap lines, and at most v->height when it is set). Width and height
 * below the minimums are raised to them (the terminal cuts the rest). */
void ctl_top_layout(const ctl_top_snap *s, const ctl_top_view *v, ctl_top_lines *out);

/* A rate as the rows show it: "12.5", or "-" for CTL_TOP_RATE_NONE. */
void ctl_top_format_rate(double r, char *buf, size_t cap);

#endif
