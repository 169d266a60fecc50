/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_asg.c - see coord_asg.h.
 */
#include "coord_asg.h"

#include <stdlib.h>
#include <string.h>

#include "hb_sync.h"
#include "log.h"

void coord_asg_start(coord_cat *c, uint64_t incarnation, uint64_t first_version)
{
    c->incarnation = incarnation != 0 ? incarnation : 1;
    c->asg_seq = first_version;
    for (size_t i = 0; i < c->nnodes; i++) {
        c->nodes[i]->log_base = first_version;
    }
}

void coord_asg_node_fini(coord_node *n)
{
    coord_mirror_clear(n);
    hmap_fini(&n->mirror);
    free(n->log);
    n->log = NULL;
    n->nlog = n->log_cap = 0;
}

/* ---- the mirror --------------------------------------------------------------- */

static bool ent_eq(const hmap_node *h, const void *key)
{
    return HMAP_ENTRY(h, coord_mirror_ent, by_id)->segment_id == *(const uint64_t *)key;
}

static coord_mirror_ent *mirror_find(const coord_node *n, uint64_t id)
{
    hmap_node *h = hmap_find(&n->mirror, hmap_hash_u64(id), ent_eq, &id);
    return h ? HMAP_ENTRY(h, coord_mirror_ent, by_id) : NULL;
}

void coord_mirror_clear(coord_node *n)
{
    for (size_t b = 0; b < n->mirror.nbuckets; b++) {
        hmap_node *h = n->mirror.buckets[b];
        while (h != NULL) {
            hmap_node *next = h->next;
            free(HMAP_ENTRY(h, coord_mirror_ent, by_id));
            h = next;
        }
        n->mirror.buckets[b] = NULL;
    }
    n->mirror.count = 0;
    n->mirror_count = 0;
    n->mirror_digest = 0;
}

void coord_mirror_put(coord_node *n, uint64_t segment_id, uint64_t hash)
{
    coord_mirror_ent *e = mirror_find(n, segment_id);
    if (e == NULL) {
        e = esc_xcalloc(1, sizeof *e);
        e->segment_id = segment_id;
        (void)hmap_insert(&n->mirror, &e->by_id, hmap_hash_u64(segment_id));
        n->mirror_count++;
    } else {
        n->mirror_digest -= e->hash;
    }
    e->hash = hash;
    n->mirror_digest += hash;
}

void coord_mirror_del(coord_node *n, uint64_t segment_id)
{
    coord_mirror_ent *e = mirror_find(n, segment_id);
    if (e != NULL) {
        hmap_remove(&n->mirror, &e->by_id);
        n->mirror_count--;
        n->mirror_digest -= e->hash;
        free(e);
    }
}

/* ---- the published assignment ---------------------------------------------------- */

static void log_add(coord_cat *c, coord_node *n, coord_seg *s)
{
    if (n->nlog >= COORD_ASG_LOG_MAX) {
        n->nlog = 0; /* too many unacknowledged: it takes a full assignment */
        n->log_base = c->asg_seq;
        return;
    }
    if (n->nlog == n->log_cap) {
        n->log_cap = n->log_cap ? n->log_cap * 2 : 64;
        n->log = esc_xrealloc(n->log, n->log_cap * sizeof *n->log);
    }
    n->log[n->nlog++] = (coord_asg_ent){c->asg_seq, s};
}

static void publish_seg(coord_cat *c, coord_seg *s)
{
    coord_node *to = NULL;
    wire_assignment a = {s->segment_id, 0, 0, false};
    if (s->owner != NULL && coord_cat_node_assignable(s->owner) && coord_cat_seg_served(s)) {
        to = s->owner;
        a.epoch = s->epoch;
        a.state = (uint32_t)s->state;
        a.paused = s->item->state != COORD_ITEM_ACTIVE;
    }
    uint64_t h = to != NULL ? hb_sync_assign_hash(&a) : 0;
    if (to == s->pub_node && h == s->pub_hash) {
        return;
    }
    c->asg_seq++;
    coord_node *from = s->pub_node;
    if (from != NULL) {
        from->asg_count--;
        from->asg_digest -= s->pub_hash;
        if (from != to) {
            log_add(c, from, s);
        }
    }
    if (to != NULL) {
        to->asg_count++;
        to->asg_digest += h;
        log_add(c, to, s);
    }
    s->pub_node = to;
    s->pub_hash = h;
    s->pub = a;
}

void coord_asg_publish(coord_cat *c)
{
    size_t n = 0;
    coord_item **v = coord_cat_take(c, COORD_WORK_ASSIGN, &n);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < v[i]->nsegs; j++) {
            publish_seg(c, v[i]->segs[j]);
        }
    }
}

/* Drops the log entries up to version v (the node has them). */
static void compact(coord_node *n, uint64_t v)
{
    size_t lo = 0, hi = n->nlog;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (n->log[mid].seq <= v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo > 0) {
        memmove(n->log, n->log + lo, (n->nlog - lo) * sizeof *n->log);
        n->nlog -= lo;
    }
    if (v > n->log_base) {
        n->log_base = v;
    }
}

static bool version_usable(const coord_cat *c, const coord_node *n, uint64_t v)
{
    return v != 0 && v >= n->log_base && v <= c->asg_seq;
}

bool coord_asg_full_start(const coord_cat *c, const coord_node *n, const wire_heartbeat *hb)
{
    return !(version_usable(c, n, hb->assign_full_version) && hb->assign_cursor <= c->nsegs) &&
           !version_usable(c, n, hb->assign_version);
}

static void delta(coord_cat *c, coord_node *n, uint64_t base, wire_hb_reply *out)
{
    compact(n, base);
    out->assign_delta = true;
    out->assign_base = base;
    size_t i = 0;
    for (;
         i < n->nlog && out->nsegs < ESC_HB_SEGMENTS_MAX && out->nunassigned < ESC_HB_SEGMENTS_MAX;
         i++) {
        const coord_seg *s = n->log[i].seg;
        if (s->pub_node == n) {
            out->segs[out->nsegs++] = s->pub;
        } else {
            out->unassigned[out->nunassigned++] = s->segment_id;
        }
    }
    out->assign_more = i < n->nlog;
    out->assign_version = out->assign_more ? n->log[i - 1].seq : c->asg_seq;
}

static void full_part(coord_cat *c, coord_node *n, uint64_t v, uint64_t cursor, wire_hb_reply *out)
{
    compact(n, v);
    out->assign_delta = false;
    out->assign_version = v;
    out->assign_cursor = cursor;
    size_t i = (size_t)cursor;
    for (; i < c->nsegs && out->nsegs < ESC_HB_SEGMENTS_MAX; i++) {
        const coord_seg *s = c->segs[i];
        if (s->pub_node == n) {
            out->segs[out->nsegs++] = s->pub;
        }
    }
    out->assign_next = i;
    out->assign_more = i < c->nsegs;
}

void coord_asg_reply(coord_cat *c, coord_node *n, const wire_heartbeat *hb, wire_hb_reply *out)
{
    out->coord_incarnation = c->incarnation;
    out->nsegs = out->nunassigned = 0;
    out->assign_delta = out->assign_more = false;
    out->assign_base = out->assign_cursor = out->assign_next = 0;
    out->assign_count = n->asg_count;
    out->assign_digest = n->asg_digest;
    if (version_usable(c, n, hb->assign_full_version) && hb->assign_cursor <= c->nsegs) {
        full_part(c, n, hb->assign_full_version, hb->assign_cursor, out);
    } else if (version_usable(c, n, hb->assign_version)) {
        delta(c, n, hb->assign_version, out);
    } else {
        full_part(c, n, c->asg_seq, 0, out);
    }
}
