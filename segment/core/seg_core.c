/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_core.c - see seg_core.h. Decisions only; every function here is
 * deterministic given its inputs (time included).
 */
#include "seg_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"

#define RETAIN_MS_DEFAULT (15 * 60 * 1000)
#define RETAIN_MAX_DEFAULT (256u * 1024u)

/* ---- lookups ---------------------------------------------------------- */

typedef struct name_key {
    const char *tenant_id;
    const char *name;
} name_key;

/* One past the last hold sequence number a segment has. */
#define SEQ_END (1ULL << ESC_HOLD_SEQ_BITS)

static uint64_t name_hash(const char *tenant_id, const char *name)
{
    uint64_t h = hmap_hash_bytes(tenant_id, strlen(tenant_id), 0x9e3779b97f4a7c15ULL);
    return hmap_hash_bytes(name, strlen(name), h);
}

static bool item_eq(const hmap_node *n, const void *k)
{
    const seg_item *it = HMAP_ENTRY(n, seg_item, by_name);
    const name_key *key = k;
    return strcmp(it->item_id, key->name) == 0 && strcmp(it->tenant_id, key->tenant_id) == 0;
}

static bool hold_id_eq(const hmap_node *n, const void *k)
{
    return HMAP_ENTRY(n, seg_hold, by_id)->hold_id == *(const uint64_t *)k;
}

static bool hold_key_eq(const hmap_node *n, const void *k)
{
    const seg_hold *h = HMAP_ENTRY(n, seg_hold, by_key);
    const name_key *key = k;
    return strcmp(h->key, key->name) == 0 && strcmp(h->seg->item->tenant_id, key->tenant_id) == 0;
}

typedef struct buyer_key {
    const seg_item *item;
    const char *buyer_id;
} buyer_key;

static uint64_t buyer_hash(const seg_item *item, const char *buyer_id)
{
    return hmap_hash_bytes(buyer_id, strlen(buyer_id), hmap_hash_u64((uint64_t)(uintptr_t)item));
}

static bool buyer_eq(const hmap_node *n, const void *k)
{
    const seg_hold *h = HMAP_ENTRY(n, seg_hold, by_buyer);
    const buyer_key *key = k;
    return h->seg->item == key->item && strcmp(h->buyer_id, key->buyer_id) == 0;
}

seg_item *seg_core_find_item(seg_core *c, const char *tenant_id, const char *item_id)
{
    name_key k = {tenant_id, item_id};
    hmap_node *n = hmap_find(&c->items, name_hash(tenant_id, item_id), item_eq, &k);
    return n ? HMAP_ENTRY(n, seg_item, by_name) : NULL;
}

bool seg_core_knows_tenant(const seg_core *c, const char *tenant_id)
{
    for (size_t i = 0; i < c->nitems; i++) {
        if (strcmp(c->item_list[i]->tenant_id, tenant_id) == 0) {
            return true;
        }
    }
    return false;
}

seg_tenant *seg_core_find_tenant(seg_core *c, const char *tenant_id)
{
    for (size_t i = 0; i < c->ntenants; i++) {
        if (strcmp(c->tenants[i]->tenant_id, tenant_id) == 0) {
            return c->tenants[i];
        }
    }
    return NULL;
}

static seg_tenant *tenant_get(seg_core *c, const char *tenant_id)
{
    seg_tenant *t = seg_core_find_tenant(c, tenant_id);
    if (t != NULL) {
        return t;
    }
    if (c->ntenants == c->tenants_cap) {
        size_t cap = c->tenants_cap ? c->tenants_cap * 2 : 8;
        seg_tenant **l = realloc(c->tenants, cap * sizeof *l);
        if (l == NULL) {
            return NULL;
        }
        c->tenants = l;
        c->tenants_cap = cap;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    snprintf(t->tenant_id, sizeof t->tenant_id, "%s", tenant_id);
    t->live_holds_max = c->tenant_holds_max;
    c->tenants[c->ntenants++] = t;
    return t;
}

/* A hold of s became live (+1) or ended (-1): the node's count and its tenant's. */
static void live_add(seg_core *c, const seg_segment *s, int d)
{
    c->live_holds += (size_t)d;
    s->item->tenant->live_holds += (size_t)d;
}

static bool segment_eq(const hmap_node *n, const void *k)
{
    return HMAP_ENTRY(n, seg_segment, by_id)->segment_id == *(const uint64_t *)k;
}

seg_segment *seg_core_find_segment(seg_core *c, uint64_t segment_id)
{
    hmap_node *n = hmap_find(&c->segments, hmap_hash_u64(segment_id), segment_eq, &segment_id);
    return n ? HMAP_ENTRY(n, seg_segment, by_id) : NULL;
}

static seg_hold *find_hold(seg_core *c, uint64_t hold_id)
{
    hmap_node *n = hmap_find(&c->holds, hmap_hash_u64(hold_id), hold_id_eq, &hold_id);
    return n ? HMAP_ENTRY(n, seg_hold, by_id) : NULL;
}

static seg_hold *find_key(seg_core *c, const char *tenant_id, const char *key)
{
    name_key k = {tenant_id, key};
    hmap_node *n = hmap_find(&c->keys, name_hash(tenant_id, key), hold_key_eq, &k);
    return n ? HMAP_ENTRY(n, seg_hold, by_key) : NULL;
}

static seg_hold *find_pending_buyer(seg_core *c, const seg_item *item, const char *buyer_id)
{
    buyer_key k = {item, buyer_id};
    hmap_node *n = hmap_find(&c->pending_buyers, buyer_hash(item, buyer_id), buyer_eq, &k);
    return n ? HMAP_ENTRY(n, seg_hold, by_buyer) : NULL;
}

/* ---- setup ------------------------------------------------------------ */

void seg_core_touch(seg_core *c, seg_segment *s)
{
    if (!s->touched) {
        s->touched = true;
        c->touched[c->ntouched++] = (uint32_t)(s - c->segs); /* once each: <= segs_cap */
    }
}

void seg_core_set_state(seg_core *c, seg_segment *s, int state)
{
    if (s->state != state) {
        s->state = state;
        seg_core_touch(c, s);
    }
}

void seg_core_touched_clear(seg_core *c)
{
    for (size_t i = 0; i < c->ntouched; i++) {
        c->segs[c->touched[i]].touched = false;
    }
    c->ntouched = 0;
}

int seg_core_init(seg_core *c, size_t segs_cap)
{
    memset(c, 0, sizeof *c);
    if (segs_cap == 0 || segs_cap > ESC_NODE_SEGMENTS_MAX) {
        return ESC_EINVAL;
    }
    c->segs = calloc(segs_cap, sizeof *c->segs);
    c->touched = calloc(segs_cap, sizeof *c->touched);
    c->segs_cap = segs_cap;
    c->retain_ms = RETAIN_MS_DEFAULT;
    c->retain_max = RETAIN_MAX_DEFAULT;
    c->seq_range = ESC_HOLD_SEQ_RANGE;
    heap_init(&c->expiry);
    if (c->segs == NULL || c->touched == NULL || hmap_init(&c->items, 64) != 0 ||
        hmap_init(&c->holds, 1024) != 0 || hmap_init(&c->keys, 1024) != 0 ||
        hmap_init(&c->pending_buyers, 64) != 0 || hmap_init(&c->segments, 64) != 0 ||
        seg_voids_init(&c->voids) != 0) {
        seg_core_fini(c);
        return ESC_ENOMEM;
    }
    return 0;
}

static void hold_free(seg_hold *h)
{
    free(h);
}

void seg_core_fini(seg_core *c)
{
    if (c->holds.buckets != NULL) {
        for (size_t i = 0; i < c->holds.nbuckets; i++) {
            hmap_node *n = c->holds.buckets[i];
            while (n != NULL) {
                hmap_node *next = n->next;
                hold_free(HMAP_ENTRY(n, seg_hold, by_id));
                n = next;
            }
        }
    }
    for (size_t i = 0; i < c->nitems; i++) {
        free(c->item_list[i]);
    }
    free(c->item_list);
    for (size_t i = 0; i < c->ntenants; i++) {
        free(c->tenants[i]);
    }
    free(c->tenants);
    free(c->segs);
    free(c->touched);
    heap_fini(&c->expiry);
    hmap_fini(&c->items);
    hmap_fini(&c->holds);
    hmap_fini(&c->keys);
    hmap_fini(&c->pending_buyers);
    hmap_fini(&c->segments);
    seg_voids_fini(&c->voids);
    memset(c, 0, sizeof *c);
}

int seg_core_add_item(seg_core *c, const seg_item *proto, seg_item **out)
{
    seg_item *it = seg_core_find_item(c, proto->tenant_id, proto->item_id);
    if (it != NULL) {
        *out = it;
        return 0;
    }
    if (c->nitems == c->items_cap) {
        size_t cap = c->items_cap ? c->items_cap * 2 : 16;
        seg_item **l = realloc(c->item_list, cap * sizeof *l);
        if (l == NULL) {
            return ESC_ENOMEM;
        }
        c->item_list = l;
        c->items_cap = cap;
    }
    seg_tenant *t = tenant_get(c, proto->tenant_id);
    it = t != NULL ? malloc(sizeof *it) : NULL;
    if (it == NULL) {
        return ESC_ENOMEM;
    }
    *it = *proto;
    it->tenant = t;
    it->nsegs = 0;
    it->rr = 0;
    c->item_list[c->nitems++] = it;
    hmap_insert(&c->items, &it->by_name, name_hash(it->tenant_id, it->item_id));
    *out = it;
    return 0;
}

int seg_core_add_segment(seg_core *c, seg_item *item, const seg_segment *proto, seg_segment **out)
{
    if (proto->available < 0 || proto->held < 0 || proto->sold < 0 || proto->next_seq < 1 ||
        proto->seq_limit < proto->next_seq || proto->segment_id == 0 ||
        proto->segment_id > ESC_SEGMENT_ID_MAX) {
        return ESC_EINVAL;
    }
    seg_segment *s = seg_core_find_segment(c, proto->segment_id);
    if (s != NULL) {
        /* taken again after it was dropped: the tombstone comes back to life
         * (its holds went with the fence; the caller loads them again) */
        if (!s->fenced || s->item != item) {
            return ESC_ECONFLICT;
        }
        hmap_node by_id = s->by_id;
        bool touched = s->touched;
        *s = *proto;
        s->by_id = by_id;
        s->touched = touched; /* in c->touched or not: as it was */
    } else {
        if (c->nsegs == c->segs_cap || item->nsegs == ESC_SEGMENTS_PER_ITEM_MAX) {
            return ESC_ETOOBIG;
        }
        s = &c->segs[c->nsegs++];
        *s = *proto;
        s->touched = false;
        item->segs[item->nsegs++] = s;
        hmap_insert(&c->segments, &s->by_id, hmap_hash_u64(s->segment_id));
    }
    s->returning = 0;
    s->allocated = s->available + s->held + s->sold;
    if (s->seq_limit > SEQ_END) {
        s->seq_limit = SEQ_END;
    }
    s->seq_wanted = false;
    s->holds_qty = 0; /* its holds are added next (seg_core_add_hold) */
    s->fenced = false;
    s->dry = false;
    s->xfer_pending = false;
    s->reserved = 0;
    s->empties = 0;
    s->item = item;
    seg_core_touch(c, s);
    *out = s;
    return 0;
}

/* Puts h in the expiry order at its expiry (again). On ESC_ENOMEM it stays
 * out: it still expires at its point of use, only the sweeper misses it. */
static void expiry_arm(seg_core *c, seg_hold *h)
{
    if (heap_node_in(&h->expiry)) {
        heap_update(&c->expiry, &h->expiry, h->expires_at_ms);
    } else {
        (void)heap_push(&c->expiry, &h->expiry, h->expires_at_ms);
    }
}

static void expiry_disarm(seg_core *c, seg_hold *h)
{
    if (heap_node_in(&h->expiry)) {
        heap_remove(&c->expiry, &h->expiry);
    }
}

static void retain(seg_core *c, seg_hold *h)
{
    h->retain_next = NULL;
    if (c->retain_tail != NULL) {
        c->retain_tail->retain_next = h;
    } else {
        c->retain_head = h;
    }
    c->retain_tail = h;
    c->nretained++;
}

static seg_hold *hold_new(const char *buyer_id, const char *key)
{
    size_t nb = strlen(buyer_id) + 1, nk = strlen(key) + 1;
    seg_hold *h = malloc(offsetof(seg_hold, strs) + nb + nk);
    if (h == NULL) {
        return NULL;
    }
    memset(h, 0, offsetof(seg_hold, strs));
    heap_node_init(&h->expiry);
    h->buyer_id = h->strs;
    h->key = h->strs + nb;
    memcpy(h->buyer_id, buyer_id, nb);
    memcpy(h->key, key, nk);
    return h;
}

static void index_hold(seg_core *c, seg_hold *h)
{
    hmap_insert(&c->holds, &h->by_id, hmap_hash_u64(h->hold_id));
    hmap_insert(&c->keys, &h->by_key, name_hash(h->seg->item->tenant_id, h->key));
}

static void unindex_hold(seg_core *c, seg_hold *h)
{
    hmap_remove(&c->holds, &h->by_id);
    hmap_remove(&c->keys, &h->by_key);
}

int seg_core_add_hold(seg_core *c, seg_segment *seg, const seg_hold *proto, const char *buyer_id,
                      const char *key, seg_hold **out)
{
    seg_hold *h = hold_new(buyer_id, key);
    if (h == NULL) {
        return ESC_ENOMEM;
    }
    h->hold_id = proto->hold_id;
    h->seg = seg;
    h->qty = proto->qty;
    h->qty_sold = proto->qty_sold;
    h->expires_at_ms = proto->expires_at_ms;
    h->ended_at_ms = proto->ended_at_ms;
    h->request_hash = proto->request_hash;
    h->state = proto->state;
    h->extended = proto->extended;
    index_hold(c, h);
    if (h->state == SEG_HELD) {
        seg->holds_qty += h->qty;
        live_add(c, seg, 1);
        expiry_arm(c, h);
    } else {
        retain(c, h);
    }
    *out = h;
    return 0;
}

/* ---- decisions ---------------------------------------------------------- */

static void reply(seg_result *res, int status, seg_hold *h)
{
    res->disp = SEG_REPLY;
    res->status = status;
    res->hold = h;
}

static bool serves_reserves(const seg_segment *s)
{
    return !s->fenced && s->state == SEG_ACTIVE;
}

static seg_segment *pick_segment(seg_item *it, uint64_t hint, int64_t qty)
{
    if (hint != 0) {
        for (size_t i = 0; i < it->nsegs; i++) {
            seg_segment *s = it->segs[i];
            if (s->segment_id == hint && serves_reserves(s) && s->available >= qty) {
                return s;
            }
        }
    }
    for (size_t k = 0; k < it->nsegs; k++) {
        size_t i = (it->rr + k) % it->nsegs;
        seg_segment *s = it->segs[i];
        if (serves_reserves(s) && s->available >= qty) {
            it->rr = i + 1; /* spread buyers over the segments */
            return s;
        }
    }
    return NULL;
}

/* Why no local segment can take qty: "nothing to sell" and "someone was
 * faster" are different answers. */
static int classify_empty(const seg_item *it, int64_t qty)
{
    int64_t avail = 0, pending = 0;
    size_t live = 0;
    for (size_t i = 0; i < it->nsegs; i++) {
        const seg_segment *s = it->segs[i];
        if (s->fenced) {
            continue;
        }
        live++;
        if (s->state == SEG_ACTIVE) {
            avail += s->available;
        }
        pending += s->held + s->returning;
    }
    if (live == 0) {
        return ESC_ENOT_OWNER;
    }
    if (avail >= qty) {
        return ESC_ETRY_LATER; /* enough units, but split across segments */
    }
    if (it->remote_segments > 0) {
        return ESC_ESEGMENT_EMPTY;
    }
    if (pending > 0) {
        return ESC_ETRY_LATER;
    }
    return ESC_ESOLD_OUT;
}

/* Managed mode: the client named the segment its route gave it (or none:
 * any active segment of the item here). Returns the segment, or NULL with
 * the answer in res. */
static seg_segment *pick_managed(seg_core *c, seg_item *it, uint64_t hint, int64_t qty,
                                 seg_result *res)
{
    if (hint == 0) {
        seg_segment *s = pick_segment(it, 0, qty);
        if (s != NULL) {
            return s;
        }
        bool live = false;
        for (size_t i = 0; i < it->nsegs; i++) {
            seg_segment *o = it->segs[i];
            if (serves_reserves(o)) {
                live = true;
                res->went_dry = res->went_dry || !o->dry;
                o->dry = true;
                o->empties++;
                seg_core_touch(c, o);
            }
        }
        reply(res, live ? ESC_ESEGMENT_EMPTY : ESC_ENOT_OWNER, NULL);
        return NULL;
    }
    for (size_t i = 0; i < it->nsegs; i++) {
        seg_segment *s = it->segs[i];
        if (s->segment_id != hint) {
            continue;
        }
        if (s->fenced) {
            break;
        }
        if (s->state != SEG_ACTIVE) {
            reply(res, ESC_ENOT_OWNER, NULL);
            res->message = "this segment takes no new reserves (collapsed or draining): "
                           "refresh the route";
            return NULL;
        }
        if (s->available < qty) {
            res->went_dry = !s->dry;
            s->dry = true;
            s->empties++;
            seg_core_touch(c, s);
            reply(res, ESC_ESEGMENT_EMPTY, NULL);
            return NULL;
        }
        return s;
    }
    reply(res, ESC_ENOT_OWNER, NULL);
    return NULL;
}

static int reserve_precheck(seg_core *c, const seg_item *it, const seg_reserve_in *in,
                            seg_result *res)
{
    if (it->paused) {
        reply(res, ESC_EPAUSED, NULL);
        return -1;
    }
    if (it->max_per_order > 0 && in->qty > it->max_per_order) {
        reply(res, ESC_EORDER_LIMIT, NULL);
        return -1;
    }
    if (it->max_per_buyer > 0 && in->qty > it->max_per_buyer) {
        reply(res, ESC_EBUYER_LIMIT, NULL);
        return -1;
    }
    if (it->max_per_buyer > 0) {
        /* one pending reserve per (item, buyer): the database's per-buyer
         * arbiter may not touch one usage row twice in a batch */
        seg_hold *p = find_pending_buyer(c, it, in->buyer_id);
        if (p != NULL) {
            res->disp = SEG_PARK;
            res->hold = p;
            return -1;
        }
    }
    return 0;
}

/* A resolve whose key has no hold in memory. The segment it names (any
 * segment of the item when 0) must be served here, draining included: the
 * late copies it settles were sent to that segment's owner. Voiding comes
 * first, so no copy decided after this moment can reserve; then the
 * database says whether the key has a hold anywhere. */
static void resolve_miss(seg_core *c, const seg_item *it, const seg_reserve_in *in, int64_t now_ms,
                         seg_result *res)
{
    bool served = false;
    for (size_t i = 0; i < it->nsegs && !served; i++) {
        const seg_segment *s = it->segs[i];
        served = !s->fenced && (in->segment_id == 0 || s->segment_id == in->segment_id);
    }
    if (!served) {
        reply(res, ESC_ENOT_OWNER, NULL);
        return;
    }
    int rc = in->attempt != 0
                 ? seg_voids_add(&c->voids, in->tenant_id, in->key, in->attempt, now_ms)
                 : 0;
    if (rc < 0) {
        reply(res, rc, NULL);
        return;
    }
    res->disp = SEG_LOOKUP;
}

/* A new hold of in->qty on s, tentatively: the units move from available
 * to held now, the op goes to the batch. */
static void create_hold(seg_core *c, seg_item *it, seg_segment *s, const seg_reserve_in *in,
                        int64_t now_ms, seg_result *res)
{
    if (s->next_seq >= s->seq_limit) {
        /* the next id is not reserved yet: the next commit asks for more */
        if (!s->seq_wanted) {
            s->seq_wanted = true;
            c->seq_wanted++;
        }
        reply(res, ESC_EBUSY, NULL);
        res->message = "this segment's hold ids wait for the next range (its next commit)";
        return;
    }
    const seg_tenant *t = it->tenant;
    if (t->live_holds_max > 0 && t->live_holds >= t->live_holds_max) {
        reply(res, ESC_EBUSY, NULL);
        res->message = "this tenant has as many live holds on this node as its cap allows "
                       "(escrowctl tenant limits): retry later";
        return;
    }
    if (c->live_holds >= ESC_LIVE_HOLDS_MAX) {
        reply(res, ESC_EBUSY, NULL);
        return;
    }
    seg_hold *h = hold_new(in->buyer_id, in->key);
    if (h == NULL) {
        reply(res, ESC_ENOMEM, NULL);
        return;
    }
    h->hold_id = (s->segment_id << ESC_HOLD_SEQ_BITS) | s->next_seq++;
    h->seg = s;
    h->qty = in->qty;
    h->state = SEG_HELD;
    h->pending = SEG_PENDING_CREATE;
    h->expires_at_ms = now_ms + (in->ttl_ms ? in->ttl_ms : it->hold_ttl_ms);
    h->request_hash = in->request_hash;
    h->attempt = in->attempt;
    index_hold(c, h);
    if (it->max_per_buyer > 0) {
        hmap_insert(&c->pending_buyers, &h->by_buyer, buyer_hash(it, h->buyer_id));
    }
    s->available -= in->qty;
    s->held += in->qty;
    s->holds_qty += h->qty;
    seg_core_touch(c, s);
    live_add(c, s, 1);
    expiry_arm(c, h);
    res->disp = SEG_COMMIT;
    res->status = 0;
    res->hold = h;
    res->op.kind = SEG_OP_RESERVE;
    res->op.hold = h;
    res->op.seg = s;
}

void seg_core_reserve(seg_core *c, const seg_reserve_in *in, int64_t now_ms, seg_result *res)
{
    memset(res, 0, sizeof *res);
    seg_item *it = seg_core_find_item(c, in->tenant_id, in->item_id);
    if (it == NULL) {
        /* managed: the item may well exist, this node just serves none of it */
        reply(res,
              c->managed                                ? ESC_ENOT_OWNER
              : seg_core_knows_tenant(c, in->tenant_id) ? ESC_EUNKNOWN_ITEM
                                                        : ESC_EUNKNOWN_TENANT,
              NULL);
        return;
    }
    /* A retry gets its hold even when the item has sold out since. */
    seg_hold *h = find_key(c, in->tenant_id, in->key);
    if (h != NULL) {
        if (h->request_hash != in->request_hash) {
            reply(res, ESC_EIDEMPOTENCY_MISMATCH, NULL);
        } else if (h->pending == SEG_PENDING_CREATE) {
            res->disp = SEG_PARK;
            res->hold = h;
        } else {
            reply(res, 0, h);
            res->replay = h->attempt == 0 || h->attempt != in->attempt;
        }
        return;
    }
    if (in->resolve) {
        resolve_miss(c, it, in, now_ms, res);
        return;
    }
    if (in->attempt != 0 && seg_voids_has(&c->voids, in->tenant_id, in->key, in->attempt)) {
        reply(res, ESC_ECONFLICT, NULL);
        res->message = "a late copy of a reserve whose caller was already answered: "
                       "nothing reserved";
        return;
    }
    if (reserve_precheck(c, it, in, res) < 0) {
        return;
    }
    seg_segment *s;
    if (c->managed) {
        if ((s = pick_managed(c, it, in->segment_id, in->qty, res)) == NULL) {
            return;
        }
    } else if ((s = pick_segment(it, in->segment_id, in->qty)) == NULL) {
        reply(res, classify_empty(it, in->qty), NULL);
        return;
    }
    create_hold(c, it, s, in, now_ms, res);
}

/* Finds the hold for a transition; answers NOT_OWNER / NOT_FOUND / LOOKUP /
 * PARK itself and returns NULL then. A hold id whose segment is another
 * tenant's answers NOT_OWNER, exactly as one whose segment this node does
 * not have (none, or fenced), whether or not the hold exists: the answer
 * never tells which segment ids live here. Both are decided from memory,
 * before any lookup, so they take the same time too. */
static seg_hold *transition_target(seg_core *c, const char *tenant_id, uint64_t hold_id,
                                   seg_result *res)
{
    memset(res, 0, sizeof *res);
    seg_segment *s = seg_core_find_segment(c, seg_core_hold_segment(hold_id));
    if (s == NULL || s->fenced || strcmp(s->item->tenant_id, tenant_id) != 0) {
        reply(res, ESC_ENOT_OWNER, NULL);
        return NULL;
    }
    seg_hold *h = find_hold(c, hold_id);
    if (h == NULL) {
        res->disp = SEG_LOOKUP;
        return NULL;
    }
    ESC_ASSERT(h->seg == s); /* a hold id names its segment */
    if (h->pending != SEG_PENDING_NONE) {
        res->disp = SEG_PARK;
        res->hold = h;
        return NULL;
    }
    return h;
}

/* held -> a final state, tentatively. */
static void finish_hold(seg_core *c, seg_hold *h, int kind, int state, int64_t sold,
                        seg_result *res, int status)
{
    seg_segment *s = h->seg;
    int64_t returned = h->qty - sold;
    ESC_ASSERT(h->state == SEG_HELD && h->pending == SEG_PENDING_NONE && !s->fenced);
    ESC_ASSERT(sold >= 0 && returned >= 0);
    expiry_disarm(c, h);
    h->state = (uint8_t)state;
    s->holds_qty -= h->qty;
    h->qty_sold = sold;
    h->pending = SEG_PENDING_CHANGE;
    s->held -= h->qty;
    s->sold += sold;
    s->returning += returned;
    seg_core_touch(c, s);
    res->disp = SEG_COMMIT;
    res->status = status;
    res->hold = h;
    res->op.kind = (uint8_t)kind;
    res->op.hold = h;
    res->op.seg = s;
    res->op.sold = sold;
    res->op.returned = returned;
}

void seg_core_confirm(seg_core *c, const char *tenant_id, uint64_t hold_id, int64_t qty,
                      int64_t now_ms, seg_result *res)
{
    seg_hold *h = transition_target(c, tenant_id, hold_id, res);
    if (h == NULL) {
        return;
    }
    switch (h->state) {
    case SEG_HELD:
        break;
    case SEG_CONVERTED:
        reply(res, (qty == 0 || qty == h->qty_sold) ? 0 : ESC_ECONFLICT, h);
        return;
    case SEG_EXPIRED:
        reply(res, ESC_EEXPIRED, h);
        return;
    default:
        reply(res, ESC_ENOT_HELD, h);
        return;
    }
    if (now_ms >= h->expires_at_ms) {
        /* expiry is enforced here, at the point of use, not by the sweeper */
        finish_hold(c, h, SEG_OP_EXPIRE, SEG_EXPIRED, 0, res, ESC_EEXPIRED);
        return;
    }
    if (qty > h->qty || qty < 0) {
        reply(res, ESC_EINVAL, h);
        return;
    }
    finish_hold(c, h, SEG_OP_CONFIRM, SEG_CONVERTED, qty ? qty : h->qty, res, 0);
}

void seg_core_release(seg_core *c, const char *tenant_id, uint64_t hold_id, int64_t now_ms,
                      seg_result *res)
{
    seg_hold *h = transition_target(c, tenant_id, hold_id, res);
    if (h == NULL) {
        return;
    }
    switch (h->state) {
    case SEG_HELD:
        break;
    case SEG_CANCELLED:
        reply(res, 0, h); /* a second release reports the first outcome */
        return;
    case SEG_EXPIRED:
        /* the units are back, but not by this release: say so (the caller
         * that checks only the answer must not believe it released them) */
        reply(res, ESC_EEXPIRED, h);
        return;
    default:
        reply(res, ESC_ENOT_HELD, h);
        return;
    }
    if (now_ms >= h->expires_at_ms) {
        finish_hold(c, h, SEG_OP_EXPIRE, SEG_EXPIRED, 0, res, ESC_EEXPIRED);
        return;
    }
    finish_hold(c, h, SEG_OP_RELEASE, SEG_CANCELLED, 0, res, 0);
}

void seg_core_extend(seg_core *c, const char *tenant_id, uint64_t hold_id, uint32_t ttl_ms,
                     int64_t now_ms, seg_result *res)
{
    seg_hold *h = transition_target(c, tenant_id, hold_id, res);
    if (h == NULL) {
        return;
    }
    if (h->state != SEG_HELD) {
        reply(res, h->state == SEG_EXPIRED ? ESC_EEXPIRED : ESC_ENOT_HELD, h);
        return;
    }
    if (now_ms >= h->expires_at_ms) {
        finish_hold(c, h, SEG_OP_EXPIRE, SEG_EXPIRED, 0, res, ESC_EEXPIRED);
        return;
    }
    if (h->extended) {
        reply(res, ESC_EALREADY_EXTENDED, h);
        return;
    }
    int64_t at = now_ms + (ttl_ms ? ttl_ms : h->seg->item->hold_ttl_ms);
    res->op.prev_expires_at_ms = h->expires_at_ms;
    res->op.new_expires_at_ms = at > h->expires_at_ms ? at : h->expires_at_ms;
    h->expires_at_ms = res->op.new_expires_at_ms;
    h->extended = true;
    h->pending = SEG_PENDING_CHANGE;
    expiry_arm(c, h);
    res->disp = SEG_COMMIT;
    res->status = 0;
    res->hold = h;
    res->op.kind = SEG_OP_EXTEND;
    res->op.hold = h;
    res->op.seg = h->seg;
}

void seg_core_get(seg_core *c, const char *tenant_id, uint64_t hold_id, seg_result *res)
{
    seg_hold *h = transition_target(c, tenant_id, hold_id, res);
    if (h != NULL) {
        reply(res, 0, h);
    }
}

uint64_t seg_core_seq_ask(const seg_core *c, const seg_segment *s)
{
    uint64_t ask = s->next_seq + c->seq_range;
    ask = ask > SEQ_END ? SEQ_END : ask;
    return ask > s->seq_limit ? ask : s->seq_limit;
}

void seg_core_seq_granted(seg_core *c, seg_segment *s, uint64_t limit)
{
    if (s->fenced) {
        return;
    }
    if (limit > s->seq_limit) {
        s->seq_limit = limit > SEQ_END ? SEQ_END : limit;
    }
    if (s->seq_wanted && s->next_seq < s->seq_limit) {
        s->seq_wanted = false;
        c->seq_wanted--;
    }
}

size_t seg_core_sweep(seg_core *c, int64_t now_ms, seg_op *ops, size_t max)
{
    size_t n = 0;
    heap_node *top;
    while (n < max && (top = heap_top(&c->expiry)) != NULL && top->key <= now_ms) {
        seg_hold *h = HEAP_ENTRY(top, seg_hold, expiry);
        if (h->pending != SEG_PENDING_NONE) {
            /* busy now; the op's outcome arms it again if the hold stays held */
            expiry_disarm(c, h);
            continue;
        }
        seg_result res;
        memset(&res, 0, sizeof res);
        finish_hold(c, h, SEG_OP_EXPIRE, SEG_EXPIRED, 0, &res, 0);
        ops[n++] = res.op;
    }
    return n;
}

/* ---- transfers ---------------------------------------------------------- */

static int xfer_precheck(const seg_segment *s, int64_t qty)
{
    if (s->fenced) {
        return ESC_ENOT_OWNER;
    }
    if (s->xfer_pending) {
        return ESC_EBUSY;
    }
    return qty < 1 ? ESC_EINVAL : 0;
}

int seg_core_give(seg_core *c, seg_segment *s, uint64_t transfer_id, int64_t qty, seg_op *op)
{
    int rc = xfer_precheck(s, qty);
    if (rc != 0) {
        return rc;
    }
    int64_t given = qty < s->available ? qty : s->available;
    s->available -= given;
    s->allocated -= given;
    seg_core_touch(c, s);
    s->xfer_pending = true;
    memset(op, 0, sizeof *op);
    op->kind = SEG_OP_GIVE;
    op->seg = s;
    op->transfer_id = transfer_id;
    op->qty = given; /* 0: the donor has nothing; the transfer is cancelled */
    return 0;
}

int seg_core_receive(seg_core *c, seg_segment *s, uint64_t transfer_id, int64_t qty, seg_op *op)
{
    (void)c;
    int rc = xfer_precheck(s, qty);
    if (rc != 0) {
        return rc;
    }
    s->xfer_pending = true;
    memset(op, 0, sizeof *op);
    op->kind = SEG_OP_RECEIVE;
    op->seg = s;
    op->transfer_id = transfer_id;
    op->qty = qty;
    return 0;
}

/* ---- batch outcome ----------------------------------------------------- */

static void settle_pending_buyer(seg_core *c, seg_hold *h)
{
    if (h->pending == SEG_PENDING_CREATE && h->seg->item->max_per_buyer > 0) {
        hmap_remove(&c->pending_buyers, &h->by_buyer);
    }
}

static void commit_xfer(seg_core *c, const seg_op *op)
{
    seg_segment *s = op->seg;
    ESC_ASSERT(s->xfer_pending && op->qty >= 0);
    s->xfer_pending = false;
    if (op->kind == SEG_OP_RECEIVE) {
        s->available += op->qty;
        s->allocated += op->qty;
        s->dry = s->dry && op->qty == 0;
        seg_core_touch(c, s);
    }
    /* GIVE: the units left when it was decided */
}

static void undo_xfer(seg_core *c, const seg_op *op)
{
    seg_segment *s = op->seg;
    ESC_ASSERT(s->xfer_pending);
    s->xfer_pending = false;
    if (op->kind == SEG_OP_GIVE) {
        s->available += op->qty;
        s->allocated += op->qty;
        seg_core_touch(c, s);
    }
}

void seg_core_commit_op(seg_core *c, const seg_op *op, int64_t now_ms)
{
    if (op->hold == NULL) {
        commit_xfer(c, op);
        return;
    }
    seg_hold *h = op->hold;
    ESC_ASSERT(h->pending != SEG_PENDING_NONE && h->seg == op->seg);
    settle_pending_buyer(c, h);
    h->pending = SEG_PENDING_NONE;
    switch (op->kind) {
    case SEG_OP_RESERVE:
    case SEG_OP_EXTEND:
        if (op->kind == SEG_OP_RESERVE) {
            h->seg->reserved += (uint64_t)h->qty;
            seg_core_touch(c, h->seg);
        }
        if (!heap_node_in(&h->expiry)) {
            /* the sweeper met it while its commit was in flight (pending)
             * and let it go: arm it again */
            expiry_arm(c, h);
        }
        return;
    default:
        h->seg->returning -= op->returned;
        ESC_ASSERT(h->seg->returning >= 0);
        h->seg->available += op->returned;
        h->seg->dry = h->seg->dry && op->returned == 0;
        seg_core_touch(c, h->seg);
        h->ended_at_ms = now_ms;
        live_add(c, h->seg, -1);
        retain(c, h);
        return;
    }
}

void seg_core_undo_op(seg_core *c, const seg_op *op)
{
    if (op->hold == NULL) {
        undo_xfer(c, op);
        return;
    }
    seg_hold *h = op->hold;
    seg_segment *s = h->seg;
    ESC_ASSERT(h->pending != SEG_PENDING_NONE && s == op->seg);
    settle_pending_buyer(c, h);
    h->pending = SEG_PENDING_NONE;
    switch (op->kind) {
    case SEG_OP_RESERVE:
        s->available += h->qty;
        s->held -= h->qty;
        s->holds_qty -= h->qty;
        seg_core_touch(c, s);
        live_add(c, s, -1);
        expiry_disarm(c, h);
        unindex_hold(c, h);
        hold_free(h);
        return;
    case SEG_OP_EXTEND:
        h->extended = false;
        h->expires_at_ms = op->prev_expires_at_ms;
        expiry_arm(c, h);
        return;
    default:
        s->returning -= op->returned;
        s->sold -= op->sold;
        s->held += h->qty;
        seg_core_touch(c, s);
        h->state = SEG_HELD;
        s->holds_qty += h->qty;
        h->qty_sold = 0;
        expiry_arm(c, h);
        return;
    }
}

void seg_core_fence_mark(seg_core *c, seg_segment *seg)
{
    seg->fenced = true;
    seg->unswept = true;
    c->unswept++;
    seg->dry = false;
    seg->xfer_pending = false;
    seg_core_touch(c, seg);
    if (seg->seq_wanted) {
        seg->seq_wanted = false;
        c->seq_wanted--;
    }
}

/* Unlinks the final holds of unswept segments from the retention list. */
static void unretain_unswept(seg_core *c)
{
    seg_hold **pp = &c->retain_head;
    c->retain_tail = NULL;
    while (*pp != NULL) {
        seg_hold *h = *pp;
        if (h->seg->unswept) {
            *pp = h->retain_next;
            c->nretained--;
            continue;
        }
        c->retain_tail = h;
        pp = &h->retain_next;
    }
}

size_t seg_core_fence_sweep(seg_core *c, void (*waiters_cb)(void *waiters, void *arg), void *arg)
{
    if (c->unswept == 0) {
        return 0;
    }
    c->fence_sweeps++;
    unretain_unswept(c);
    size_t freed = 0;
    for (size_t i = 0; i < c->holds.nbuckets; i++) {
        hmap_node *n = c->holds.buckets[i];
        while (n != NULL) {
            hmap_node *next = n->next;
            seg_hold *h = HMAP_ENTRY(n, seg_hold, by_id);
            if (h->seg->unswept) {
                seg_segment *seg = h->seg;
                if (h->waiters != NULL && waiters_cb != NULL) {
                    waiters_cb(h->waiters, arg);
                }
                settle_pending_buyer(c, h);
                if (h->state == SEG_HELD) {
                    seg->holds_qty -= h->qty;
                    live_add(c, seg, -1);
                }
                expiry_disarm(c, h);
                unindex_hold(c, h);
                hold_free(h);
                freed++;
            }
            n = next;
        }
    }
    for (size_t i = 0; i < c->nsegs; i++) {
        c->segs[i].unswept = false;
    }
    c->unswept = 0;
    return freed;
}

void seg_core_fence(seg_core *c, seg_segment *seg, void (*waiters_cb)(void *waiters, void *arg),
                    void *arg)
{
    seg_core_fence_mark(c, seg);
    seg_core_fence_sweep(c, waiters_cb, arg);
}

void seg_core_trim(seg_core *c, int64_t now_ms)
{
    seg_voids_trim(&c->voids, now_ms);
    while (c->retain_head != NULL &&
           (c->nretained > c->retain_max || c->retain_head->ended_at_ms + c->retain_ms <= now_ms)) {
        seg_hold *h = c->retain_head;
        c->retain_head = h->retain_next;
        if (c->retain_head == NULL) {
            c->retain_tail = NULL;
        }
        c->nretained--;
        ESC_ASSERT(h->state != SEG_HELD && !heap_node_in(&h->expiry));
        unindex_hold(c, h);
        hold_free(h);
    }
}

/* Every hold in the expiry order is held and keyed by its expiry. */
static bool expiry_ok(const seg_core *c)
{
    for (uint32_t i = 0; i < c->expiry.len; i++) {
        const seg_hold *h = HEAP_ENTRY(c->expiry.nodes[i], seg_hold, expiry);
        if (h->state != SEG_HELD || h->expiry.key != h->expires_at_ms) {
            return false;
        }
    }
    return true;
}

int seg_core_check(const seg_core *c, uint64_t *bad_segment)
{
    /* one pass over the holds (this runs at start-up over every live hold) */
    int64_t *live = calloc(c->nsegs ? c->nsegs : 1, sizeof *live);
    if (live == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t b = 0; b < c->holds.nbuckets; b++) {
        for (const hmap_node *n = c->holds.buckets[b]; n != NULL; n = n->next) {
            const seg_hold *h = HMAP_ENTRY(n, seg_hold, by_id);
            if (h->state == SEG_HELD) {
                live[h->seg - c->segs] += h->qty;
            }
        }
    }
    int rc = 0;
    for (size_t i = 0; i < c->nsegs && rc == 0; i++) {
        const seg_segment *s = &c->segs[i];
        if (!s->fenced && (s->available < 0 || s->held < 0 || s->sold < 0 || s->returning < 0 ||
                           s->available + s->held + s->sold + s->returning != s->allocated ||
                           live[i] != s->held || s->holds_qty != s->held)) {
            if (bad_segment != NULL) {
                *bad_segment = s->segment_id;
            }
            rc = ESC_EINTERNAL;
        }
    }
    free(live);
    if (rc == 0 && !expiry_ok(c)) {
        rc = ESC_EINTERNAL; /* no segment to name: the order itself is wrong */
    }
    return rc;
}

void seg_core_assert_segment(const seg_segment *s)
{
    if (s->fenced) {
        return;
    }
    ESC_ASSERT(s->available >= 0 && s->held >= 0 && s->sold >= 0 && s->returning >= 0);
    ESC_ASSERT(s->available + s->held + s->sold + s->returning == s->allocated);
    ESC_ASSERT(s->held == s->holds_qty);
}
