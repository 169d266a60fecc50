/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_snap.c - see ctl_top_snap.h.
 *
 * Rates: the earlier sample's segments are indexed by segment id (sorted
 * once, then binary search), so a page of n segments costs n log n whatever
 * the order of the two samples.
 */
#include "ctl_top_snap.h"

#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"

void ctl_top_snap_free(ctl_top_snap *s)
{
    if (s == NULL) {
        return;
    }
    free(s->items);
    free(s->segs);
    free(s->nodes);
    memset(s, 0, sizeof *s);
}

bool ctl_top_item_sold_out(const ctl_top_item *it)
{
    return it->available == 0 && it->held == 0 && it->in_flight == 0 && it->unallocated == 0;
}

const ctl_top_node *ctl_top_snap_node(const ctl_top_snap *s, const char *name)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        if (strcmp(s->nodes[i].node, name) == 0) {
            return &s->nodes[i];
        }
    }
    return NULL;
}

static int by_segment_id(const void *a, const void *b)
{
    const ctl_top_seg *x = *(const ctl_top_seg *const *)a;
    const ctl_top_seg *y = *(const ctl_top_seg *const *)b;
    return x->segment_id < y->segment_id ? -1 : x->segment_id > y->segment_id;
}

static const ctl_top_seg *find(const ctl_top_seg *const *index, size_t n, int64_t segment_id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (index[mid]->segment_id < segment_id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && index[lo]->segment_id == segment_id ? index[lo] : NULL;
}

/* One segment's rates against its earlier sample p (NULL = none). */
static void seg_rates(const ctl_top_seg *p, ctl_top_seg *c)
{
    c->hold_rate = CTL_TOP_RATE_NONE;
    c->reject_rate = CTL_TOP_RATE_NONE;
    if (p == NULL || !p->has_stats || !c->has_stats || p->stats_epoch != c->stats_epoch ||
        c->reserved < p->reserved || c->empties < p->empties || c->stats_us <= p->stats_us) {
        return;
    }
    double dt_s = (double)(c->stats_us - p->stats_us) / 1e6;
    c->hold_rate = (double)(c->reserved - p->reserved) / dt_s;
    c->reject_rate = (double)(c->empties - p->empties) / dt_s;
}

/* Adds a known rate r to *sum (which starts as CTL_TOP_RATE_NONE). */
static void add_rate(double *sum, double r)
{
    if (r >= 0) {
        *sum = *sum >= 0 ? *sum + r : r;
    }
}

static void item_rates(ctl_top_snap *cur)
{
    for (size_t i = 0; i < cur->nitems; i++) {
        ctl_top_item *it = &cur->items[i];
        it->hold_rate = CTL_TOP_RATE_NONE;
        it->reject_rate = CTL_TOP_RATE_NONE;
        for (size_t k = it->seg_first; k < it->seg_first + it->nsegs && k < cur->nsegs; k++) {
            add_rate(&it->hold_rate, cur->segs[k].hold_rate);
            add_rate(&it->reject_rate, cur->segs[k].reject_rate);
        }
    }
}

int ctl_top_rates(const ctl_top_snap *prev, ctl_top_snap *cur)
{
    int rc = 0;
    const ctl_top_seg **index = NULL;
    size_t n = prev != NULL ? prev->nsegs : 0;
    if (n > 0) {
        index = malloc(n * sizeof *index);
        if (index == NULL) {
            rc = ESC_ENOMEM;
            n = 0;
        }
    }
    for (size_t i = 0; i < n; i++) {
        index[i] = &prev->segs[i];
    }
    if (n > 1) {
        qsort(index, n, sizeof *index, by_segment_id);
    }
    for (size_t i = 0; i < cur->nsegs; i++) {
        ctl_top_seg *c = &cur->segs[i];
        seg_rates(n > 0 ? find(index, n, c->segment_id) : NULL, c);
    }
    free(index);
    item_rates(cur);
    return rc;
}

void ctl_top_totals_of(const ctl_top_snap *s, ctl_top_totals *t)
{
    memset(t, 0, sizeof *t);
    t->hold_rate = CTL_TOP_RATE_NONE;
    t->reject_rate = CTL_TOP_RATE_NONE;
    for (size_t i = 0; i < s->nitems; i++) {
        const ctl_top_item *it = &s->items[i];
        t->available += it->available;
        t->held += it->held;
        t->sold += it->sold;
        t->in_flight += it->in_flight;
        t->xfers_open += it->xfers_open;
        add_rate(&t->hold_rate, it->hold_rate);
        add_rate(&t->reject_rate, it->reject_rate);
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->nodes[i].down) {
            t->nodes_down++;
        } else {
            t->nodes_up++;
        }
    }
}
