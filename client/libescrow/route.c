/* SPDX-License-Identifier: Apache-2.0 */
/*
 * route.c - see route.h. Pure: no I/O, no clock; the engine (async.c) owns
 * the sockets and the timing, this module owns the routing tables and every
 * decision taken from them.
 */
#include "route.h"

#include <stdlib.h>
#include <string.h>

#include "escrow.h"
#include "escrow_errors.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv_bytes(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        h ^= *p;
        h *= FNV_PRIME;
    }
    return h * FNV_PRIME; /* the separator, a NUL byte (xor with 0 is a no-op) */
}

uint64_t cli_route_hash(const char *tenant, const char *item, const char *buyer)
{
    uint64_t h = FNV_OFFSET;
    h = fnv_bytes(h, tenant != NULL ? tenant : "");
    h = fnv_bytes(h, item != NULL ? item : "");
    h = fnv_bytes(h, buyer != NULL ? buyer : "");
    /* splitmix64's finaliser: FNV's low bits are weak for short ids. */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

uint32_t esc_route_slot(const char *tenant_id, const char *item_id, const char *buyer_id,
                        uint32_t nslots)
{
    if (nslots == 0) {
        return 0;
    }
    return (uint32_t)(cli_route_hash(tenant_id, item_id, buyer_id) % nslots);
}

/* ---- the cache --------------------------------------------------------- */

int cli_route_cache_init(cli_route_cache *rc)
{
    memset(rc, 0, sizeof *rc);
    if (hmap_init(&rc->items, 64) < 0) {
        return ESC_ENOMEM;
    }
    if (hmap_init(&rc->segs, 256) < 0) {
        hmap_fini(&rc->items);
        return ESC_ENOMEM;
    }
    return 0;
}

static void list_unlink(cli_route_cache *rc, cli_route *r)
{
    *(r->older != NULL ? &r->older->newer : &rc->oldest) = r->newer;
    *(r->newer != NULL ? &r->newer->older : &rc->newest) = r->older;
    r->older = r->newer = NULL;
}

static void list_append(cli_route_cache *rc, cli_route *r)
{
    r->older = rc->newest;
    r->newer = NULL;
    *(rc->newest != NULL ? &rc->newest->newer : &rc->oldest) = r;
    rc->newest = r;
}

static void unref_nodes(cli_route_cache *rc, const cli_route *r)
{
    for (uint32_t i = 0; i < r->nsegs; i++) {
        uint32_t n = r->segs[i].node;
        if (n != CLI_NODE_NONE && rc->node_refs[n] > 0) {
            rc->node_refs[n]--;
        }
    }
}

/* Takes r out of every index and frees it. */
static void route_drop(cli_route_cache *rc, cli_route *r)
{
    for (uint32_t i = 0; i < r->nsegs; i++) {
        hmap_remove(&rc->segs, &r->segs[i].by_seg);
    }
    hmap_remove(&rc->items, &r->by_item);
    list_unlink(rc, r);
    unref_nodes(rc, r);
    rc->count--;
    free(r);
}

void cli_route_cache_fini(cli_route_cache *rc)
{
    while (rc->oldest != NULL) {
        route_drop(rc, rc->oldest);
    }
    hmap_fini(&rc->items);
    hmap_fini(&rc->segs);
}

static bool item_eq(const hmap_node *n, const void *key)
{
    return strcmp(HMAP_ENTRY(n, cli_route, by_item)->item_id, key) == 0;
}

static bool seg_eq(const hmap_node *n, const void *key)
{
    return HMAP_ENTRY(n, cli_rseg, by_seg)->segment_id == *(const uint64_t *)key;
}

static uint64_t item_hash(const char *item_id)
{
    return hmap_hash_bytes(item_id, strlen(item_id), 0x726f757465ULL);
}

cli_route *cli_route_find(const cli_route_cache *rc, const char *item_id)
{
    hmap_node *n = hmap_find(&rc->items, item_hash(item_id), item_eq, item_id);
    return n != NULL ? HMAP_ENTRY(n, cli_route, by_item) : NULL;
}

cli_rseg *cli_route_find_seg(const cli_route_cache *rc, uint64_t segment_id)
{
    hmap_node *n = hmap_find(&rc->segs, hmap_hash_u64(segment_id), seg_eq, &segment_id);
    return n != NULL ? HMAP_ENTRY(n, cli_rseg, by_seg) : NULL;
}

const char *cli_route_node_url(const cli_route_cache *rc, uint32_t idx)
{
    return idx < CLI_NODES_MAX ? rc->nodes[idx] : "";
}

/* The slot of url, taking one reference; CLI_NODE_NONE for "" or when every
 * slot is referenced or busy. A never-used slot is preferred to reusing one. */
static uint32_t intern_node(cli_route_cache *rc, const char *url, cli_node_idle_fn idle, void *arg)
{
    if (url[0] == '\0') {
        return CLI_NODE_NONE;
    }
    uint32_t spare = CLI_NODE_NONE;
    for (uint32_t i = 0; i < CLI_NODES_MAX; i++) {
        if (strcmp(rc->nodes[i], url) == 0) {
            rc->node_refs[i]++;
            return i;
        }
        if (rc->node_refs[i] != 0) {
            continue;
        }
        if (rc->nodes[i][0] == '\0') {
            if (spare == CLI_NODE_NONE || rc->nodes[spare][0] != '\0') {
                spare = i;
            }
        } else if (spare == CLI_NODE_NONE && (idle == NULL || idle(i, arg))) {
            spare = i;
        }
    }
    if (spare != CLI_NODE_NONE) {
        size_t n = strlen(url);
        memcpy(rc->nodes[spare], url, n + 1);
        rc->node_refs[spare] = 1;
    }
    return spare;
}

static int seg_cmp(const void *x, const void *y)
{
    uint64_t a = ((const cli_rseg *)x)->segment_id;
    uint64_t b = ((const cli_rseg *)y)->segment_id;
    return a < b ? -1 : a > b;
}

/* A new compact route from w, its endpoints interned; NULL with *err. */
static cli_route *route_build(cli_route_cache *rc, const wire_route *w, cli_node_idle_fn idle,
                              void *arg, int *err)
{
    cli_route *r = calloc(1, sizeof *r + w->nsegs * sizeof(cli_rseg));
    if (r == NULL) {
        *err = ESC_ENOMEM;
        return NULL;
    }
    memcpy(r->item_id, w->item_id, sizeof r->item_id);
    r->item_id[ESC_ITEM_LEN_MAX] = '\0';
    r->version = w->version;
    r->sold_out = w->sold_out;
    r->paused = w->paused;
    r->tail_segment = w->tail_segment;
    r->nsegs = (uint32_t)w->nsegs;
    for (size_t i = 0; i < w->nsegs; i++) {
        cli_rseg *s = &r->segs[i];
        s->segment_id = w->segs[i].segment_id;
        s->epoch = w->segs[i].epoch;
        s->state = w->segs[i].state;
        s->node = intern_node(rc, w->segs[i].endpoint, idle, arg);
        r->nactive += s->state == WIRE_SEG_ACTIVE;
    }
    qsort(r->segs, r->nsegs, sizeof r->segs[0], seg_cmp);
    for (uint32_t i = 1; i < r->nsegs; i++) {
        if (r->segs[i].segment_id == r->segs[i - 1].segment_id) {
            unref_nodes(rc, r);
            free(r);
            *err = ESC_EPROTO;
            return NULL;
        }
    }
    for (uint32_t i = 0; i < r->nsegs; i++) {
        r->segs[i].route = r; /* after the sort: the entries moved */
    }
    return r;
}

int cli_route_apply(cli_route_cache *rc, const wire_route *w, bool pushed, int64_t now_us,
                    cli_node_idle_fn idle, void *idle_arg, cli_route **out)
{
    cli_route *old = cli_route_find(rc, w->item_id);
    if (old != NULL && w->version < old->version) {
        return CLI_ROUTE_OLDER;
    }
    if (old != NULL && w->version == old->version) {
        if (pushed) {
            old->pushed_us = now_us;
        } else {
            old->fetched_us = now_us;
            old->stale = false;
        }
        *out = old;
        return CLI_ROUTE_SAME;
    }
    int err = 0;
    cli_route *r = route_build(rc, w, idle, idle_arg, &err);
    if (r == NULL) {
        return err;
    }
    r->fetched_us = pushed ? 0 : now_us;
    r->pushed_us = pushed ? now_us : 0;
    if (old != NULL) {
        r->next_fetch_us = old->next_fetch_us;
        route_drop(rc, old); /* after interning: shared endpoints keep their slot */
    } else if (rc->count >= CLI_ROUTES_MAX) {
        route_drop(rc, rc->oldest);
    }
    (void)hmap_insert(&rc->items, &r->by_item, item_hash(r->item_id)); /* inserted even on ENOMEM */
    for (uint32_t i = 0; i < r->nsegs; i++) {
        (void)hmap_insert(&rc->segs, &r->segs[i].by_seg, hmap_hash_u64(r->segs[i].segment_id));
    }
    list_append(rc, r);
    rc->count++;
    *out = r;
    return CLI_ROUTE_NEW;
}

/* ---- decisions --------------------------------------------------------- */

static const cli_rseg *find_in(const cli_route *r, uint64_t segment_id)
{
    for (uint32_t i = 0; i < r->nsegs; i++) {
        if (r->segs[i].segment_id == segment_id) {
            return &r->segs[i];
        }
    }
    return NULL;
}

/* The k-th active segment in segment_id order (k < nactive). */
static const cli_rseg *nth_active(const cli_route *r, uint32_t k)
{
    for (uint32_t i = 0; i < r->nsegs; i++) {
        if (r->segs[i].state == WIRE_SEG_ACTIVE && k-- == 0) {
            return &r->segs[i];
        }
    }
    return NULL;
}

uint32_t cli_route_tries(const cli_route *r)
{
    if (r->tail_segment != 0) {
        return 1;
    }
    return r->nactive < CLI_ROUTE_TRIES_MAX ? r->nactive : CLI_ROUTE_TRIES_MAX;
}

cli_pick cli_route_pick_reserve(const cli_route *r, uint64_t hash, uint32_t empties,
                                const cli_rseg **out)
{
    if (r->sold_out) {
        return CLI_PICK_SOLD_OUT;
    }
    if (r->paused) {
        return CLI_PICK_PAUSED;
    }
    const cli_rseg *s = NULL;
    if (r->tail_segment != 0) {
        s = find_in(r, r->tail_segment);
    } else if (r->nactive > 0) {
        s = nth_active(r, (uint32_t)((hash % r->nactive + empties) % r->nactive));
    }
    if (s == NULL) {
        return CLI_PICK_REFRESH; /* collapsed onto a segment the route lacks, or none active */
    }
    if (empties >= cli_route_tries(r)) {
        return CLI_PICK_EXHAUSTED;
    }
    if (s->node == CLI_NODE_NONE) {
        return CLI_PICK_REFRESH;
    }
    *out = s;
    return CLI_PICK_SEND;
}

bool cli_route_fresh(const cli_route *r, int64_t now_us)
{
    return (r->fetched_us != 0 && now_us - r->fetched_us <= CLI_ROUTE_FRESH_US) ||
           (r->pushed_us != 0 && now_us - r->pushed_us <= CLI_ROUTE_PUSH_ALIVE_US);
}

int cli_route_verdict(const cli_route *r, int64_t now_us)
{
    if (!cli_route_fresh(r, now_us)) {
        return 1;
    }
    return r->sold_out ? ESC_ESOLD_OUT : ESC_ETRY_LATER;
}
