/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_print.h - `escrowctl top`'s plain output: a snapshot as text (the
 * live view's lines, every item of the page, no escape sequences) or as
 * one JSON object on one line (JSON lines, one per snapshot: what a
 * script, or the demo's timeline, reads).
 *
 * The JSON object:
 *   {"at_ms": the database's clock (unix ms), "interval_ms", "matched",
 *    "offset", "note",
 *    "items": [{"tenant", "item", "state", "total", "available", "held",
 *               "sold", "in_flight", "unallocated", "tail_segment" (null when
 *               not collapsed), "sold_out", "segments_active",
 *               "segments_wanted", "transfers_open", "holds_per_s",
 *               "rejections_per_s",
 *               "segments": [{"segment_id", "seg_no", "region", "node" (null
 *                             without an owner), "node_down", "epoch",
 *                             "state", "available", "held", "sold",
 *                             "transfers_open", "in_flight_out",
 *                             "in_flight_in", "tail", "reserved",
 *                             "empties" (the owner's counters, null when it
 *                             did not answer), "holds_per_s",
 *                             "rejections_per_s"}]}],
 *    "nodes": [{"node", "endpoint", "down"}]}
 * Rates are null when not measured.
 */
#ifndef CTL_TOP_PRINT_H
#define CTL_TOP_PRINT_H

#include <stdio.h>

#include "ctl_top_layout.h"
#include "ctl_top_snap.h"

/* Writes s as text for view v (its width and height are ignored: every
 * item, full width). Returns 0, ESC_ENOMEM or ESC_EIO. */
int ctl_top_print_text(FILE *out, const ctl_top_snap *s, const ctl_top_view *v);

/* Writes s as one JSON line. Returns 0 or ESC_EIO. */
int ctl_top_print_json(FILE *out, const ctl_top_snap *s, int interval_ms);

#endif
