/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_cat.c - see coord_cat.h.
 */
#include "coord_cat.h"

#include "coord_asg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"

int coord_cat_init(coord_cat *c)
{
    memset(c, 0, sizeof *c);
    for (int w = 0; w < COORD_WORK_KINDS; w++) {
        c->work[w].kind = w;
    }
    if (hmap_init(&c->items_by_key, 64) != 0 || hmap_init(&c->segs_by_id, 256) != 0 ||
        hmap_init(&c->nodes_by_id, 16) != 0 || hmap_init(&c->xfers_by_id, 64) != 0) {
        coord_cat_fini(c);
        return ESC_ENOMEM;
    }
    return 0;
}

void coord_cat_fini(coord_cat *c)
{
    for (size_t i = 0; i < c->nitems; i++) {
        free(c->items[i]);
    }
    for (size_t i = 0; i < c->nsegs; i++) {
        free(c->segs[i]);
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        coord_asg_node_fini(c->nodes[i]);
        free(c->nodes[i]->owned);
        free(c->nodes[i]);
    }
    for (size_t i = 0; i < c->nxfers; i++) {
        free(c->xfers[i]);
    }
    free(c->items);
    free(c->segs);
    free(c->nodes);
    free(c->xfers);
    for (int w = 0; w < COORD_WORK_KINDS; w++) {
        coord_dirty_fini(&c->work[w]);
    }
    hmap_fini(&c->items_by_key);
    hmap_fini(&c->segs_by_id);
    hmap_fini(&c->nodes_by_id);
    hmap_fini(&c->xfers_by_id);
    memset(c, 0, sizeof *c);
}

void coord_cat_watch(coord_cat *c, coord_cat_watch_cb cb, void *arg)
{
    c->watch_cb = cb;
    c->watch_arg = arg;
}

static bool *flag_of(struct coord_item *it, int kind)
{
    return &it->marked[kind];
}

void coord_cat_mark(coord_cat *c, coord_item *it, coord_work w)
{
    coord_dirty_mark(&c->work[w], &it->marked[w], it);
    if (w == COORD_WORK_POLICY) {
        /* what the policy reads (figures, transfers, segments) is what the
         * conservation check adds up */
        coord_dirty_mark(&c->work[COORD_WORK_MONITOR], &it->marked[COORD_WORK_MONITOR], it);
    }
}

void coord_cat_set_db_counts(coord_cat *c, coord_seg *s, int64_t available, int64_t held,
                             int64_t sold)
{
    if (available != s->db_available || held != s->db_held || sold != s->db_sold) {
        coord_cat_mark(c, s->item, COORD_WORK_POLICY);
    }
    s->db_available = available;
    s->db_held = held;
    s->db_sold = sold;
}

void coord_cat_unmark(coord_item *it, coord_work w)
{
    it->marked[w] = false;
}

bool coord_cat_marked(const coord_item *it, coord_work w)
{
    return it->marked[w];
}

coord_item **coord_cat_take(coord_cat *c, coord_work w, size_t *n)
{
    return coord_dirty_take(&c->work[w], flag_of, n);
}

void coord_cat_sweep(coord_cat *c, coord_work w, size_t k)
{
    coord_dirty_sweep(&c->work[w], c->items, c->nitems, k, flag_of);
}

void coord_cat_touch(coord_cat *c, coord_item *it)
{
    for (int w = 0; w < COORD_WORK_KINDS; w++) {
        if (w != COORD_WORK_PASS) {
            coord_cat_mark(c, it, (coord_work)w);
        }
    }
}

void coord_cat_touch_node(coord_cat *c, const coord_node *n)
{
    for (size_t i = 0; i < n->nowned; i++) {
        coord_cat_touch(c, n->owned[i]->item);
    }
}

void coord_cat_set_owner(coord_seg *s, coord_node *n)
{
    coord_node *o = s->owner;
    if (o == n) {
        return;
    }
    if (o != NULL) {
        ESC_ASSERT(s->owned_idx < o->nowned && o->owned[s->owned_idx] == s);
        coord_seg *last = o->owned[--o->nowned];
        o->owned[s->owned_idx] = last;
        last->owned_idx = s->owned_idx;
    }
    s->owner = n;
    if (n != NULL) {
        if (n->nowned == n->owned_cap) {
            n->owned_cap = n->owned_cap ? n->owned_cap * 2 : 64;
            n->owned = esc_xrealloc(n->owned, n->owned_cap * sizeof *n->owned);
        }
        s->owned_idx = n->nowned;
        n->owned[n->nowned++] = s;
    }
}

static uint64_t node_sig(const coord_node *n)
{
    uint64_t flags = (uint64_t)n->alive | (uint64_t)n->seen << 1 | (uint64_t)n->stopping << 2 |
                     (uint64_t)n->drained << 3 | (uint64_t)n->inc_pending << 4 |
                     (uint64_t)(n->db_state >= 0) << 5 | (uint64_t)1 << 6;
    uint64_t h = hmap_hash_u64(flags);
    h = hmap_hash_u64(h ^ n->incarnation);
    h = hmap_hash_u64(h ^ n->db_incarnation);
    return h != 0 ? h : 1;
}

size_t coord_cat_check_nodes(coord_cat *c)
{
    size_t changed = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        coord_node *n = c->nodes[i];
        uint64_t sig = node_sig(n);
        if (sig != n->sig) {
            n->sig = sig;
            coord_cat_touch_node(c, n);
            changed++;
        }
    }
    return changed;
}

size_t coord_cat_sweep_slice(size_t n, uint32_t period_ms, uint32_t sweep_ms)
{
    if (n == 0) {
        return 0;
    }
    if (sweep_ms <= period_ms) {
        return n;
    }
    uint64_t k = ((uint64_t)n * period_ms + sweep_ms - 1) / sweep_ms;
    return k < 1 ? 1 : (size_t)k;
}

void coord_cat_changed(coord_cat *c, coord_item *it)
{
    coord_cat_mark(c, it, COORD_WORK_POLICY);
    coord_cat_mark(c, it, COORD_WORK_PLACE);
    coord_cat_mark(c, it, COORD_WORK_ASSIGN);
    if (c->watch_cb != NULL) {
        c->watch_cb(it, COORD_CAT_CHANGED, c->watch_arg);
    }
}

/* Appends p to a pointer array, growing it (the daemon aborts on OOM). */
static void push(void ***arr, size_t *n, size_t *cap, void *p)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *arr = esc_xrealloc(*arr, *cap * sizeof **arr);
    }
    (*arr)[(*n)++] = p;
}

static uint64_t item_hash(const char *tenant_id, const char *item_id)
{
    return hmap_hash_bytes(item_id, strlen(item_id),
                           hmap_hash_bytes(tenant_id, strlen(tenant_id), 0x1234));
}

typedef struct item_key {
    const char *tenant_id, *item_id;
} item_key;

static bool item_eq(const hmap_node *n, const void *key)
{
    const coord_item *it = HMAP_ENTRY(n, coord_item, by_key);
    const item_key *k = key;
    return strcmp(it->tenant_id, k->tenant_id) == 0 && strcmp(it->item_id, k->item_id) == 0;
}

static bool seg_eq(const hmap_node *n, const void *key)
{
    return HMAP_ENTRY(n, coord_seg, by_id)->segment_id == *(const uint64_t *)key;
}

static bool node_eq(const hmap_node *n, const void *key)
{
    return strcmp(HMAP_ENTRY(n, coord_node, by_id)->node_id, key) == 0;
}

static bool xfer_eq(const hmap_node *n, const void *key)
{
    return HMAP_ENTRY(n, coord_xfer, by_id)->transfer_id == *(const uint64_t *)key;
}

coord_item *coord_cat_item(const coord_cat *c, const char *tenant_id, const char *item_id)
{
    item_key k = {tenant_id, item_id};
    hmap_node *n = hmap_find(&c->items_by_key, item_hash(tenant_id, item_id), item_eq, &k);
    return n ? HMAP_ENTRY(n, coord_item, by_key) : NULL;
}

coord_seg *coord_cat_seg(const coord_cat *c, uint64_t segment_id)
{
    hmap_node *n = hmap_find(&c->segs_by_id, hmap_hash_u64(segment_id), seg_eq, &segment_id);
    return n ? HMAP_ENTRY(n, coord_seg, by_id) : NULL;
}

coord_node *coord_cat_node(const coord_cat *c, const char *node_id)
{
    hmap_node *n =
        hmap_find(&c->nodes_by_id, hmap_hash_bytes(node_id, strlen(node_id), 7), node_eq, node_id);
    return n ? HMAP_ENTRY(n, coord_node, by_id) : NULL;
}

coord_xfer *coord_cat_xfer(const coord_cat *c, uint64_t transfer_id)
{
    hmap_node *n = hmap_find(&c->xfers_by_id, hmap_hash_u64(transfer_id), xfer_eq, &transfer_id);
    return n ? HMAP_ENTRY(n, coord_xfer, by_id) : NULL;
}

coord_item *coord_cat_add_item(coord_cat *c, const char *tenant_id, const char *item_id)
{
    if (c->nitems >= COORD_ITEMS_MAX) {
        return NULL;
    }
    coord_item *it = esc_xcalloc(1, sizeof *it);
    snprintf(it->tenant_id, sizeof it->tenant_id, "%s", tenant_id);
    snprintf(it->item_id, sizeof it->item_id, "%s", item_id);
    it->segments_wanted = 1;
    (void)hmap_insert(&c->items_by_key, &it->by_key, item_hash(tenant_id, item_id));
    push((void ***)&c->items, &c->nitems, &c->items_cap, it);
    coord_cat_touch(c, it);
    if (c->watch_cb != NULL) {
        c->watch_cb(it, COORD_CAT_ADDED, c->watch_arg);
    }
    return it;
}

coord_seg *coord_cat_add_seg(coord_cat *c, coord_item *it, uint64_t segment_id, int32_t seg_no)
{
    if (c->nsegs >= COORD_SEGS_MAX || it->nsegs >= ESC_SEGMENTS_PER_ITEM_MAX) {
        return NULL;
    }
    coord_seg *s = esc_xcalloc(1, sizeof *s);
    s->segment_id = segment_id;
    s->item = it;
    s->seg_no = seg_no;
    (void)hmap_insert(&c->segs_by_id, &s->by_id, hmap_hash_u64(segment_id));
    push((void ***)&c->segs, &c->nsegs, &c->segs_cap, s);
    coord_cat_touch(c, it);
    /* keep the item's list in seg_no order */
    size_t j = it->nsegs++;
    while (j > 0 && it->segs[j - 1]->seg_no > seg_no) {
        it->segs[j] = it->segs[j - 1];
        j--;
    }
    it->segs[j] = s;
    if (seg_no >= it->next_seg_no) {
        it->next_seg_no = seg_no + 1;
    }
    return s;
}

coord_node *coord_cat_add_node(coord_cat *c, const char *node_id)
{
    if (c->nnodes >= COORD_NODES_MAX) {
        return NULL;
    }
    coord_node *n = esc_xcalloc(1, sizeof *n);
    snprintf(n->node_id, sizeof n->node_id, "%s", node_id);
    n->db_state = -1; /* not in the database yet */
    if (hmap_init(&n->mirror, 64) != 0) {
        free(n);
        return NULL;
    }
    n->log_base = c->asg_seq; /* changes before it joined are in a full assignment */
    (void)hmap_insert(&c->nodes_by_id, &n->by_id, hmap_hash_bytes(node_id, strlen(node_id), 7));
    push((void ***)&c->nodes, &c->nnodes, &c->nodes_cap, n);
    return n;
}

static void seg_set_xfer(coord_cat *c, uint64_t seg_id, uint64_t xfer_id)
{
    coord_seg *s = seg_id ? coord_cat_seg(c, seg_id) : NULL;
    if (s != NULL) {
        s->xfer_id = xfer_id;
    }
}

coord_xfer *coord_cat_add_xfer(coord_cat *c, coord_item *it, uint64_t transfer_id, uint64_t from,
                               uint64_t to, int64_t qty, int state)
{
    if (c->nxfers >= COORD_XFERS_MAX) {
        return NULL;
    }
    coord_xfer *x = esc_xcalloc(1, sizeof *x);
    coord_cat_mark(c, it, COORD_WORK_POLICY);
    x->transfer_id = transfer_id;
    x->item = it;
    x->from = from;
    x->to = to;
    x->qty = qty;
    x->state = state;
    x->idx = c->nxfers;
    (void)hmap_insert(&c->xfers_by_id, &x->by_id, hmap_hash_u64(transfer_id));
    push((void ***)&c->xfers, &c->nxfers, &c->xfers_cap, x);
    seg_set_xfer(c, from, transfer_id);
    seg_set_xfer(c, to, transfer_id);
    return x;
}

void coord_cat_drop_xfer(coord_cat *c, coord_xfer *x)
{
    coord_cat_mark(c, x->item, COORD_WORK_POLICY);
    coord_seg *f = x->from ? coord_cat_seg(c, x->from) : NULL;
    coord_seg *t = x->to ? coord_cat_seg(c, x->to) : NULL;
    if (f != NULL && f->xfer_id == x->transfer_id) {
        f->xfer_id = 0;
    }
    if (t != NULL && t->xfer_id == x->transfer_id) {
        t->xfer_id = 0;
    }
    hmap_remove(&c->xfers_by_id, &x->by_id);
    ESC_ASSERT(x->idx < c->nxfers && c->xfers[x->idx] == x);
    c->xfers[x->idx] = c->xfers[--c->nxfers];
    c->xfers[x->idx]->idx = x->idx;
    free(x);
}

bool coord_cat_node_eligible(const coord_node *n)
{
    return n->alive && n->seen && !n->stopping && !n->drained && !n->inc_pending &&
           n->db_state >= 0 && n->incarnation == n->db_incarnation;
}

static bool node_serving(const coord_node *n)
{
    /* after a coordinator restart a node that has not heartbeated yet keeps
     * serving through its grace period: its incarnation is the stored one */
    return n->alive && !n->inc_pending && (!n->seen || n->incarnation == n->db_incarnation);
}

bool coord_cat_seg_served(const coord_seg *s)
{
    return s->owner != NULL && !s->pending && !s->revoked && s->state != WIRE_SEG_RETIRED &&
           node_serving(s->owner);
}

static void add_cmd(wire_hb_reply *out, const coord_xfer *x, uint32_t kind, uint64_t seg)
{
    if (out->nxfers == ESC_HB_TRANSFERS_MAX) {
        return; /* the rest goes in a later reply */
    }
    wire_xfer_cmd *w = &out->xfers[out->nxfers++];
    w->transfer_id = x->transfer_id;
    w->kind = kind;
    w->segment_id = seg;
    w->qty = x->qty;
}

bool coord_cat_node_assignable(const coord_node *n)
{
    return n->alive && !n->inc_pending && n->incarnation == n->db_incarnation;
}

void coord_cat_assignment(const coord_cat *c, const coord_node *n, wire_hb_reply *out)
{
    out->nsegs = 0;
    out->nxfers = 0;
    if (!coord_cat_node_assignable(n)) {
        return;
    }
    for (size_t i = 0; i < c->nsegs && out->nsegs < ESC_HB_SEGMENTS_MAX; i++) {
        const coord_seg *s = c->segs[i];
        if (s->owner != n || !coord_cat_seg_served(s)) {
            continue;
        }
        wire_assignment *a = &out->segs[out->nsegs++];
        a->segment_id = s->segment_id;
        a->epoch = s->epoch;
        a->state = (uint32_t)s->state;
        a->paused = s->item->state != COORD_ITEM_ACTIVE;
    }
    coord_cat_commands(c, n, out);
}

void coord_cat_commands(const coord_cat *c, const coord_node *n, wire_hb_reply *out)
{
    out->nxfers = 0;
    if (!coord_cat_node_assignable(n)) {
        return;
    }
    for (size_t i = 0; i < c->nxfers; i++) {
        const coord_xfer *x = c->xfers[i];
        uint64_t seg_id = x->state == COORD_XF_PLANNED ? x->from : x->to;
        const coord_seg *s = seg_id ? coord_cat_seg(c, seg_id) : NULL;
        if (x->busy || s == NULL || s->owner != n || !coord_cat_seg_served(s)) {
            continue;
        }
        add_cmd(out, x, x->state == COORD_XF_PLANNED ? WIRE_XFER_GIVE : WIRE_XFER_RECEIVE, seg_id);
    }
}

void coord_cat_route(const coord_item *it, wire_route *out)
{
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", it->tenant_id);
    snprintf(out->item_id, sizeof out->item_id, "%s", it->item_id);
    out->version = it->route_version;
    out->sold_out = it->sold_out;
    out->paused = it->state != COORD_ITEM_ACTIVE;
    out->tail_segment = it->tail_segment;
    out->nsegs = 0;
    for (size_t i = 0; i < it->nsegs && out->nsegs < ESC_ROUTE_SEGMENTS_MAX; i++) {
        const coord_seg *s = it->segs[i];
        if (s->state == WIRE_SEG_RETIRED) {
            continue;
        }
        wire_route_seg *w = &out->segs[out->nsegs++];
        w->segment_id = s->segment_id;
        w->epoch = s->epoch;
        w->state = (uint32_t)s->state;
        snprintf(w->endpoint, sizeof w->endpoint, "%s",
                 coord_cat_seg_served(s) && s->owner->seen ? s->owner->endpoint : "");
    }
}

uint64_t coord_cat_route_hash(const wire_route *r)
{
    uint64_t h = hmap_hash_bytes(r->tenant_id, strlen(r->tenant_id), 99);
    h = hmap_hash_bytes(r->item_id, strlen(r->item_id), h);
    uint64_t flags[4] = {r->sold_out, r->paused, r->tail_segment, r->nsegs};
    h = hmap_hash_bytes(flags, sizeof flags, h);
    for (size_t i = 0; i < r->nsegs; i++) {
        const wire_route_seg *s = &r->segs[i];
        uint64_t v[3] = {s->segment_id, s->epoch, s->state};
        h = hmap_hash_bytes(v, sizeof v, h);
        h = hmap_hash_bytes(s->endpoint, strlen(s->endpoint), h);
    }
    return h;
}

void coord_cat_snapshot(const coord_cat *c, const coord_item *it, uint32_t collapse_pct,
                        uint32_t low_water_pct, int64_t now_us, coord_pseg *segs, coord_pitem *out)
{
    memset(out, 0, sizeof *out);
    out->total = it->total;
    out->unallocated = it->unallocated;
    out->reduce_pending = it->reduce_pending;
    out->paused = it->state == COORD_ITEM_PAUSED;
    out->retired = it->state == COORD_ITEM_RETIRED;
    out->tail_segment = it->tail_segment;
    out->collapse_pct = collapse_pct;
    out->low_water_pct = low_water_pct;
    out->segs = segs;
    out->nsegs = it->nsegs;
    for (size_t i = 0; i < c->nxfers; i++) {
        const coord_xfer *x = c->xfers[i];
        if (x->item != it) {
            continue;
        }
        if (x->state == COORD_XF_SENT) {
            out->in_flight += x->qty;
        }
        if (x->to == 0) {
            out->reclaiming += x->qty;
        }
    }
    for (size_t i = 0; i < it->nsegs; i++) {
        const coord_seg *s = it->segs[i];
        coord_pseg *p = &segs[i];
        memset(p, 0, sizeof *p);
        p->segment_id = s->segment_id;
        p->state = s->state;
        p->reported = s->reported && s->rep_epoch == s->epoch;
        p->available = p->reported ? s->available : s->db_available;
        p->held = p->reported ? s->held : s->db_held;
        p->owner_live = coord_cat_seg_served(s) && s->owner->seen;
        p->busy = s->xfer_id != 0;
        p->dry = s->dry;
        p->forwarded = s->forwarded;
        p->demand =
            p->reported ? coord_policy_demand(s->demand, 0, 0, now_us - s->last_rep_us) : s->demand;
    }
}
