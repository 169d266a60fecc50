/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_print.c - see ctl_top_print.h.
 */
#include "ctl_top_print.h"

#include <stdlib.h>

#include "ctl_json.h"
#include "escrow_errors.h"

int ctl_top_print_text(FILE *out, const ctl_top_snap *s, const ctl_top_view *v)
{
    ctl_top_view plain = *v;
    plain.width = 0;
    plain.height = 0;
    plain.live = false;
    ctl_top_lines lines = {.cap = ctl_top_layout_lines(s)};
    lines.line = malloc(lines.cap * sizeof *lines.line);
    if (lines.line == NULL) {
        return ESC_ENOMEM;
    }
    ctl_top_layout(s, &plain, &lines);
    for (size_t i = 0; i < lines.n; i++) {
        fputs(lines.line[i].text, out);
        fputc('\n', out);
    }
    free(lines.line);
    return fflush(out) == 0 && !ferror(out) ? 0 : ESC_EIO;
}

static void json_rate(ctl_json *j, const char *key, double r)
{
    if (r < 0) {
        ctl_json_str(j, key, NULL);
    } else {
        ctl_json_f64(j, key, r, 1);
    }
}

static void json_counter(ctl_json *j, const char *key, bool known, uint64_t v)
{
    if (known) {
        ctl_json_i64(j, key, (int64_t)v);
    } else {
        ctl_json_str(j, key, NULL);
    }
}

static void json_seg(ctl_json *j, const ctl_top_seg *g)
{
    ctl_json_begin_obj(j, NULL);
    ctl_json_i64(j, "segment_id", g->segment_id);
    ctl_json_i64(j, "seg_no", g->seg_no);
    ctl_json_str(j, "region", g->region);
    ctl_json_str(j, "node", g->node[0] != '\0' ? g->node : NULL);
    ctl_json_bool(j, "node_down", g->node_down);
    ctl_json_i64(j, "epoch", g->epoch);
    ctl_json_str(j, "state", g->state);
    ctl_json_i64(j, "available", g->available);
    ctl_json_i64(j, "held", g->held);
    ctl_json_i64(j, "sold", g->sold);
    ctl_json_i64(j, "transfers_open", g->xfers_open);
    ctl_json_i64(j, "in_flight_out", g->in_flight_out);
    ctl_json_i64(j, "in_flight_in", g->in_flight_in);
    ctl_json_bool(j, "tail", g->tail);
    json_counter(j, "reserved", g->has_stats, g->reserved);
    json_counter(j, "empties", g->has_stats, g->empties);
    json_rate(j, "holds_per_s", g->hold_rate);
    json_rate(j, "rejections_per_s", g->reject_rate);
    ctl_json_end_obj(j);
}

static void json_item(ctl_json *j, const ctl_top_snap *s, const ctl_top_item *it)
{
    ctl_json_begin_obj(j, NULL);
    ctl_json_str(j, "tenant", it->tenant);
    ctl_json_str(j, "item", it->item);
    ctl_json_str(j, "state", it->state);
    ctl_json_i64(j, "total", it->total);
    ctl_json_i64(j, "available", it->available);
    ctl_json_i64(j, "held", it->held);
    ctl_json_i64(j, "sold", it->sold);
    ctl_json_i64(j, "in_flight", it->in_flight);
    ctl_json_i64(j, "unallocated", it->unallocated);
    if (it->tail_segment != 0) {
        ctl_json_i64(j, "tail_segment", it->tail_segment);
    } else {
        ctl_json_str(j, "tail_segment", NULL);
    }
    ctl_json_bool(j, "sold_out", ctl_top_item_sold_out(it));
    ctl_json_i64(j, "segments_active", it->segments_active);
    ctl_json_i64(j, "segments_wanted", it->segments_wanted);
    ctl_json_i64(j, "transfers_open", it->xfers_open);
    json_rate(j, "holds_per_s", it->hold_rate);
    json_rate(j, "rejections_per_s", it->reject_rate);
    ctl_json_begin_arr(j, "segments");
    for (size_t k = it->seg_first; k < it->seg_first + it->nsegs; k++) {
        json_seg(j, &s->segs[k]);
    }
    ctl_json_end_arr(j);
    ctl_json_end_obj(j);
}

int ctl_top_print_json(FILE *out, const ctl_top_snap *s, int interval_ms)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_i64(&j, "at_ms", s->at_ms);
    ctl_json_i64(&j, "interval_ms", interval_ms);
    ctl_json_i64(&j, "matched", s->matched);
    ctl_json_i64(&j, "offset", s->offset);
    ctl_json_str(&j, "note", s->note);
    ctl_json_begin_arr(&j, "items");
    for (size_t i = 0; i < s->nitems; i++) {
        json_item(&j, s, &s->items[i]);
    }
    ctl_json_end_arr(&j);
    ctl_json_begin_arr(&j, "nodes");
    for (size_t i = 0; i < s->nnodes; i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "node", s->nodes[i].node);
        ctl_json_str(&j, "endpoint", s->nodes[i].endpoint);
        ctl_json_bool(&j, "down", s->nodes[i].down);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
    return fflush(out) == 0 && !ferror(out) ? 0 : ESC_EIO;
}
