/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_layout.c - see ctl_top_layout.h.
 *
 * Three steps: choose the rows that fit (plan), measure every column over
 * those rows (widths), then write them. A row's cells are computed by one
 * function (row_cells) for both the measuring and the writing, so the two
 * can never disagree.
 */
#include "ctl_top_layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum {
    C_NAME = 0,
    C_REGION,
    C_OWNER,
    C_STATE,
    C_AVAIL,
    C_HELD,
    C_SOLD,
    C_HRATE,
    C_RRATE,
    C_XFERS,
    C_MOVING,
    C_FLAGS,
    C_COUNT_
};

/* The longest cell: "tenant/item" is 64 + 1 + 128 bytes. */
#define CELL_MAX 200
/* Lines above the rows: title, summary, note, header. */
#define TOP_LINES 4
/* The name column never gets narrower than this in a live view. */
#define NAME_MIN 12

static const char *const col_names[C_COUNT_] = {"ITEM / SEGMENT", "REGION", "OWNER",  "STATE",
                                                "AVAIL",          "HELD",   "SOLD",   "HOLD/S",
                                                "REJ/S",          "XFERS",  "MOVING", "FLAGS"};
static const bool col_right[C_COUNT_] = {
    [C_AVAIL] = true, [C_HELD] = true,  [C_SOLD] = true,  [C_HRATE] = true,
    [C_RRATE] = true, [C_XFERS] = true, [C_MOVING] = true};

typedef struct cells {
    char c[C_COUNT_][CELL_MAX + 1];
} cells;

/* Which rows are shown. */
typedef struct plan {
    size_t items;        /* items shown (the last may be partial) */
    size_t partial_segs; /* when the only item shown does not fit: its segments shown */
    bool partial;
    bool show_region;
    int width;
    size_t height; /* 0 = no limit */
} plan;

void ctl_top_format_rate(double r, char *buf, size_t cap)
{
    if (r < 0) {
        snprintf(buf, cap, "-");
    } else {
        snprintf(buf, cap, "%.1f", r);
    }
}

size_t ctl_top_layout_lines(const ctl_top_snap *s)
{
    return TOP_LINES + s->nitems + s->nsegs + 1;
}

static bool regions_shown(const ctl_top_snap *s)
{
    for (size_t i = 0; i < s->nsegs; i++) {
        if (strcmp(s->segs[i].region, "local") != 0) {
            return true;
        }
    }
    return false;
}

static plan plan_rows(const ctl_top_snap *s, const ctl_top_view *v, size_t cap)
{
    plan p = {.show_region = regions_shown(s)};
    p.width = v->width <= 0 ? CTL_TOP_WIDTH_MAX : v->width;
    p.width = p.width < CTL_TOP_WIDTH_MIN ? CTL_TOP_WIDTH_MIN : p.width;
    p.width = p.width > CTL_TOP_WIDTH_MAX ? CTL_TOP_WIDTH_MAX : p.width;
    size_t height = cap;
    if (v->height > 0) {
        size_t h = (size_t)(v->height < CTL_TOP_HEIGHT_MIN ? CTL_TOP_HEIGHT_MIN : v->height);
        height = h < cap ? h : cap;
        p.height = height;
    }
    /* rows for items: all but the top lines and, live, the key line */
    size_t room =
        height > TOP_LINES + (v->live ? 1u : 0u) ? height - TOP_LINES - (v->live ? 1u : 0u) : 0;
    for (size_t i = 0; i < s->nitems; i++) {
        size_t need = 1 + s->items[i].nsegs;
        if (need <= room) {
            room -= need;
            p.items++;
            continue;
        }
        if (i == 0 && room >= 3) {
            /* one item taller than the view: its first segments and a line
             * that says how many more */
            p.items = 1;
            p.partial = true;
            p.partial_segs = room - 2;
        }
        break;
    }
    return p;
}

static void owner_cell(const ctl_top_seg *g, char *buf)
{
    if (g->node[0] == '\0') {
        snprintf(buf, CELL_MAX + 1, "-");
    } else {
        snprintf(buf, CELL_MAX + 1, "%s e%" PRId64 "%s", g->node, g->epoch,
                 g->node_down ? " down" : "");
    }
}

static void moving_cell(const ctl_top_seg *g, char *buf)
{
    if (g->in_flight_out > 0 && g->in_flight_in > 0) {
        snprintf(buf, CELL_MAX + 1, "-%" PRId64 " +%" PRId64, g->in_flight_out, g->in_flight_in);
    } else if (g->in_flight_out > 0) {
        snprintf(buf, CELL_MAX + 1, "-%" PRId64, g->in_flight_out);
    } else if (g->in_flight_in > 0) {
        snprintf(buf, CELL_MAX + 1, "+%" PRId64, g->in_flight_in);
    } else {
        snprintf(buf, CELL_MAX + 1, "0");
    }
}

static void item_flags(const ctl_top_item *it, char *buf)
{
    int n = snprintf(buf, CELL_MAX + 1, "total %" PRId64, it->total);
    if (it->unallocated > 0 && n < CELL_MAX) {
        n += snprintf(buf + n, (size_t)(CELL_MAX + 1 - n), ", unallocated %" PRId64,
                      it->unallocated);
    }
    if (it->tail_segment != 0 && n < CELL_MAX) {
        n += snprintf(buf + n, (size_t)(CELL_MAX + 1 - n), ", collapsed tail=%" PRId64,
                      it->tail_segment);
    }
    if (ctl_top_item_sold_out(it) && n < CELL_MAX) {
        snprintf(buf + n, (size_t)(CELL_MAX + 1 - n), ", SOLD OUT");
    }
}

/* The cells an item and a segment share: state, available, held, sold
 * (n[0..2]), the two rates and the open transfers (n[3]). */
static void counter_cells(cells *c, const char *state, const int64_t n[4], double hold_rate,
                          double reject_rate)
{
    snprintf(c->c[C_STATE], CELL_MAX + 1, "%s", state);
    snprintf(c->c[C_AVAIL], CELL_MAX + 1, "%" PRId64, n[0]);
    snprintf(c->c[C_HELD], CELL_MAX + 1, "%" PRId64, n[1]);
    snprintf(c->c[C_SOLD], CELL_MAX + 1, "%" PRId64, n[2]);
    ctl_top_format_rate(hold_rate, c->c[C_HRATE], CELL_MAX + 1);
    ctl_top_format_rate(reject_rate, c->c[C_RRATE], CELL_MAX + 1);
    snprintf(c->c[C_XFERS], CELL_MAX + 1, "%" PRId64, n[3]);
}

static void item_cells(const ctl_top_item *it, cells *c)
{
    snprintf(c->c[C_NAME], CELL_MAX + 1, "%s/%s", it->tenant, it->item);
    c->c[C_REGION][0] = '\0';
    snprintf(c->c[C_OWNER], CELL_MAX + 1, "%" PRId64 "/%" PRId64 " segs", it->segments_active,
             it->segments_wanted);
    counter_cells(c, it->state,
                  (const int64_t[]){it->available, it->held, it->sold, it->xfers_open},
                  it->hold_rate, it->reject_rate);
    snprintf(c->c[C_MOVING], CELL_MAX + 1, "%" PRId64, it->in_flight);
    item_flags(it, c->c[C_FLAGS]);
}

static void seg_cells(const ctl_top_seg *g, cells *c)
{
    snprintf(c->c[C_NAME], CELL_MAX + 1, "  seg %" PRId64 " #%" PRId64, g->segment_id, g->seg_no);
    snprintf(c->c[C_REGION], CELL_MAX + 1, "%s", g->region);
    owner_cell(g, c->c[C_OWNER]);
    counter_cells(c, g->state, (const int64_t[]){g->available, g->held, g->sold, g->xfers_open},
                  g->hold_rate, g->reject_rate);
    moving_cell(g, c->c[C_MOVING]);
    snprintf(c->c[C_FLAGS], CELL_MAX + 1, "%s", g->tail ? "TAIL" : "");
}

/* Segments of item i that are shown. */
static size_t segs_shown(const ctl_top_snap *s, const plan *p, size_t i)
{
    return p->partial && i == 0 ? p->partial_segs : s->items[i].nsegs;
}

static void widen(int w[C_COUNT_], const cells *c)
{
    for (int k = 0; k < C_COUNT_; k++) {
        int n = (int)strlen(c->c[k]);
        w[k] = n > w[k] ? n : w[k];
    }
}

/* Column widths over the header and every shown row; the name column gives
 * way when the row would be wider than the view. */
static void widths(const ctl_top_snap *s, const plan *p, int w[C_COUNT_])
{
    static cells c; /* large: not on the stack */
    for (int k = 0; k < C_COUNT_; k++) {
        w[k] = (int)strlen(col_names[k]);
    }
    for (size_t i = 0; i < p->items; i++) {
        const ctl_top_item *it = &s->items[i];
        item_cells(it, &c);
        widen(w, &c);
        for (size_t k = 0; k < segs_shown(s, p, i); k++) {
            seg_cells(&s->segs[it->seg_first + k], &c);
            widen(w, &c);
        }
    }
    if (!p->show_region) {
        w[C_REGION] = -1; /* with its separator: no column at all */
    }
    int total = 0;
    for (int k = 0; k < C_FLAGS; k++) {
        total += w[k] + 1;
    }
    total += (int)strlen(col_names[C_FLAGS]);
    if (total > p->width && w[C_NAME] > NAME_MIN) {
        int cut = total - p->width;
        w[C_NAME] = w[C_NAME] - cut > NAME_MIN ? w[C_NAME] - cut : NAME_MIN;
    }
}

static ctl_top_line *next_line(ctl_top_lines *out, const plan *p, ctl_top_line_kind kind)
{
    size_t limit = p->height > 0 && p->height < out->cap ? p->height : out->cap;
    if (out->n >= limit) {
        return NULL;
    }
    ctl_top_line *l = &out->line[out->n++];
    l->kind = kind;
    l->text[0] = '\0';
    return l;
}

/* Writes one row of cells, cut at the view's width. */
static void put_row(ctl_top_lines *out, const plan *p, ctl_top_line_kind kind, const cells *c,
                    const int w[C_COUNT_])
{
    ctl_top_line *l = next_line(out, p, kind);
    if (l == NULL) {
        return;
    }
    size_t n = 0;
    for (int k = 0; k < C_COUNT_ && n < CTL_TOP_WIDTH_MAX; k++) {
        if (w[k] < 0) {
            continue;
        }
        const char *sep = k == 0 ? "" : " ";
        int width = k == C_FLAGS ? 0 : w[k];
        int r = col_right[k] ? snprintf(l->text + n, CTL_TOP_WIDTH_MAX + 1 - n, "%s%*.*s", sep,
                                        width, w[k], c->c[k])
                             : snprintf(l->text + n, CTL_TOP_WIDTH_MAX + 1 - n, "%s%-*.*s", sep,
                                        width, k == C_FLAGS ? CELL_MAX : w[k], c->c[k]);
        n += r > 0 ? (size_t)r : 0;
    }
    n = n > CTL_TOP_WIDTH_MAX ? CTL_TOP_WIDTH_MAX : n;
    n = n < (size_t)p->width ? n : (size_t)p->width;
    while (n > 0 && l->text[n - 1] == ' ') {
        n--; /* no trailing blanks (the flags of most segments are empty) */
    }
    l->text[n] = '\0';
}

static void put_text(ctl_top_lines *out, const plan *p, ctl_top_line_kind kind, const char *text)
{
    ctl_top_line *l = next_line(out, p, kind);
    if (l != NULL) {
        snprintf(l->text, (size_t)p->width + 1, "%s", text);
    }
}

/* "items 1-3 of 40 | available ... | nodes 2 up, 0 down". */
static void summary(const ctl_top_snap *s, const plan *p, char *buf, size_t cap)
{
    ctl_top_totals t;
    ctl_top_totals_of(s, &t);
    char hr[32], rr[32];
    ctl_top_format_rate(t.hold_rate, hr, sizeof hr);
    ctl_top_format_rate(t.reject_rate, rr, sizeof rr);
    int n = 0;
    if (s->matched == 0) {
        n = snprintf(buf, cap, "no items match");
    } else if (s->nitems == 0) {
        n = snprintf(buf, cap, "no items past item %" PRId64 " of %" PRId64 " (g: first page)",
                     s->offset, s->matched);
    } else if (p->items == 0) {
        n = snprintf(buf, cap, "items %" PRId64 "+ of %" PRId64 " (none fits this view)",
                     s->offset + 1, s->matched);
    } else {
        n = snprintf(buf, cap, "items %" PRId64 "-%" PRId64 " of %" PRId64, s->offset + 1,
                     s->offset + (int64_t)p->items, s->matched);
    }
    if (n > 0 && (size_t)n < cap) {
        snprintf(buf + n, cap - (size_t)n,
                 " | available %" PRId64 " held %" PRId64 " sold %" PRId64
                 " | holds/s %s rejections/s %s | transfers %" PRId64 " moving %" PRId64
                 " | nodes %" PRId64 " up %" PRId64 " down",
                 t.available, t.held, t.sold, hr, rr, t.xfers_open, t.in_flight, t.nodes_up,
                 t.nodes_down);
    }
}

static void put_top(const ctl_top_snap *s, const ctl_top_view *v, const plan *p, ctl_top_lines *out)
{
    char buf[CTL_TOP_WIDTH_MAX + 1];
    char every[32];
    if (v->interval_ms % 1000 == 0) {
        snprintf(every, sizeof every, "%d s", v->interval_ms / 1000);
    } else {
        snprintf(every, sizeof every, "%d ms", v->interval_ms);
    }
    snprintf(buf, sizeof buf, "escrowctl top  %s  every %s  %s", v->clock != NULL ? v->clock : "",
             every, v->filter != NULL ? v->filter : "");
    put_text(out, p, CTL_TOP_LINE_TITLE, buf);
    summary(s, p, buf, sizeof buf);
    put_text(out, p, CTL_TOP_LINE_TEXT, buf);
    if (v->live || s->note[0] != '\0') {
        put_text(out, p, CTL_TOP_LINE_TEXT, s->note);
    }
}

static void put_keys(const ctl_top_snap *s, const plan *p, ctl_top_lines *out)
{
    char buf[CTL_TOP_WIDTH_MAX + 1];
    bool more = s->offset + (int64_t)p->items < s->matched;
    snprintf(buf, sizeof buf, "q quit  n next page  p previous page  g first page%s",
             more ? "  (more items: n)" : "");
    put_text(out, p, CTL_TOP_LINE_TEXT, buf);
}

void ctl_top_layout(const ctl_top_snap *s, const ctl_top_view *v, ctl_top_lines *out)
{
    static cells c; /* large: not on the stack */
    out->n = 0;
    plan p = plan_rows(s, v, out->cap);
    out->items_shown = p.items;
    int w[C_COUNT_];
    widths(s, &p, w);
    put_top(s, v, &p, out);
    cells head;
    for (int k = 0; k < C_COUNT_; k++) {
        snprintf(head.c[k], sizeof head.c[k], "%s", col_names[k]);
    }
    put_row(out, &p, CTL_TOP_LINE_HEADER, &head, w);
    for (size_t i = 0; i < p.items; i++) {
        const ctl_top_item *it = &s->items[i];
        item_cells(it, &c);
        put_row(out, &p, CTL_TOP_LINE_ITEM, &c, w);
        size_t shown = segs_shown(s, &p, i);
        for (size_t k = 0; k < shown; k++) {
            seg_cells(&s->segs[it->seg_first + k], &c);
            put_row(out, &p, CTL_TOP_LINE_SEGMENT, &c, w);
        }
        if (shown < it->nsegs) {
            char buf[96];
            snprintf(buf, sizeof buf, "  ... %zu more segments (a taller window shows them)",
                     it->nsegs - shown);
            put_text(out, &p, CTL_TOP_LINE_TEXT, buf);
        }
    }
    if (v->live) {
        put_keys(s, &p, out);
    }
}
