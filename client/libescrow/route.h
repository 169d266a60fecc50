/* SPDX-License-Identifier: Apache-2.0 */
/*
 * route.h - libescrow's routing decisions in routing mode: pure (no I/O, no
 * clock reads: the engine passes now_us), so cmocka tests every branch.
 *
 * The cache holds one routing table per item (wire_route, compacted): its
 * segments sorted by segment_id, each with the index of its owner's endpoint
 * in a small interned endpoint table (the engine keeps one nanomsg socket per
 * index). A segment_id index finds the route of a hold's segment
 * (hold_id >> 40). A route is replaced only by one with a higher version;
 * an equal version refreshes its timestamps.
 *
 * Reserve routing, in this order (escrow.h documents it for callers):
 *   sold_out -> ESC_ESOLD_OUT from the cache; paused -> ESC_EPAUSED;
 *   tail_segment -> the tail only; else the active segments in segment_id
 *   order, starting at hash(tenant, item, buyer) % n; after k SEGMENT_EMPTY
 *   answers the (start + k)-th in ring order, at most CLI_ROUTE_TRIES_MAX
 *   segments; then the verdict: a fresh route (fetched <= 100 ms ago, or kept
 *   by pushes) that says sold out -> ESC_ESOLD_OUT, otherwise ESC_ETRY_LATER.
 */
#ifndef ESC_CLIENT_ROUTE_H
#define ESC_CLIENT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"
#include "hmap.h"
#include "wire.h"

/* Items whose route one client caches; each costs ~200 bytes plus ~48 per
 * segment. Past it the least recently updated route is dropped (and fetched
 * again when needed). */
#define CLI_ROUTES_MAX 4096u
/* Distinct node endpoints one client talks to: one nanomsg socket (and its
 * threads' worth of buffers) each. A route naming more leaves the extra
 * segments ownerless until an endpoint falls out of use. */
#define CLI_NODES_MAX 64u
/* Segments one reserve tries (SEGMENT_EMPTY moves it to the next in ring
 * order): bounds the round trips of one call near sellout. */
#define CLI_ROUTE_TRIES_MAX 4u
/* A fetched route this young may answer SOLD_OUT after SEGMENT_EMPTY. */
#define CLI_ROUTE_FRESH_US 100000
/* The coordinator publishes every route every second: a route pushed within
 * this long is kept fresh by the push stream. */
#define CLI_ROUTE_PUSH_ALIVE_US 2500000
/* Without pushes, a route older than this is fetched again in the
 * background (the cached one keeps answering meanwhile). */
#define CLI_ROUTE_MAX_AGE_US 1000000
/* At most one RouteReq per item per this long: NOT_OWNER storms (every
 * buyer of a moved segment at once) cost the coordinator one request. */
#define CLI_ROUTE_REFETCH_US 50000

#define CLI_NODE_NONE UINT32_MAX

typedef struct cli_route cli_route;

typedef struct cli_rseg {
    hmap_node by_seg; /* in cli_route_cache.segs */
    cli_route *route; /* borrowed back pointer */
    uint64_t segment_id;
    uint64_t epoch;
    uint32_t state; /* WIRE_SEG_* */
    uint32_t node;  /* index in the endpoint table, CLI_NODE_NONE: no owner */
} cli_rseg;

struct cli_route {
    hmap_node by_item; /* in cli_route_cache.items */
    cli_route *older;  /* update order, for eviction (NULL at the ends) */
    cli_route *newer;
    char item_id[ESC_ITEM_LEN_MAX + 1];
    uint64_t version;
    bool sold_out;
    bool paused;
    bool stale;            /* the engine saw NOT_OWNER & co: fetch before trusting */
    uint64_t tail_segment; /* 0: not collapsed */
    int64_t fetched_us;    /* last fetch answer at this version (0: never) */
    int64_t pushed_us;     /* last push at this version (0: never) */
    int64_t next_fetch_us; /* the engine's rate limit for this item */
    uint32_t nsegs;
    uint32_t nactive;
    cli_rseg segs[]; /* nsegs, sorted by segment_id */
};

typedef struct cli_route_cache {
    hmap items; /* cli_route by item_id */
    hmap segs;  /* cli_rseg by segment_id */
    size_t count;
    cli_route *oldest; /* owned list (every route), oldest update first */
    cli_route *newest;
    char nodes[CLI_NODES_MAX][ESC_ENDPOINT_LEN_MAX + 1];
    uint32_t node_refs[CLI_NODES_MAX]; /* route segments naming each endpoint */
} cli_route_cache;

/* The stable hash of (tenant, item, buyer): FNV-1a 64 over the three ids
 * separated by NUL bytes, then the splitmix64 finaliser. Part of the public
 * contract through esc_route_slot(): it never changes. */
uint64_t cli_route_hash(const char *tenant, const char *item, const char *buyer);

/* Returns 0 or ESC_ENOMEM. */
int cli_route_cache_init(cli_route_cache *rc);
/* Frees every route. */
void cli_route_cache_fini(cli_route_cache *rc);

/* May the engine reuse endpoint slot idx for another URL (its socket has no
 * call in flight)? NULL means yes. */
typedef bool (*cli_node_idle_fn)(uint32_t idx, void *arg);

enum { CLI_ROUTE_NEW = 0, CLI_ROUTE_SAME = 1, CLI_ROUTE_OLDER = 2 };

/* Applies w (borrowed, decoded and validated by wire.c) received by a push
 * (pushed) or as a fetch answer at now_us. Returns CLI_ROUTE_NEW (replaced
 * or added; *out set), CLI_ROUTE_SAME (same version: timestamps refreshed; a
 * fetch also clears stale; *out set), CLI_ROUTE_OLDER (ignored), or
 * ESC_ENOMEM / ESC_EPROTO (a segment listed twice): the cache is unchanged. */
int cli_route_apply(cli_route_cache *rc, const wire_route *w, bool pushed, int64_t now_us,
                    cli_node_idle_fn idle, void *idle_arg, cli_route **out);

/* Lookups: NULL when not cached. */
cli_route *cli_route_find(const cli_route_cache *rc, const char *item_id);
cli_rseg *cli_route_find_seg(const cli_route_cache *rc, uint64_t segment_id);
/* The endpoint URL of slot idx ("" if unused). */
const char *cli_route_node_url(const cli_route_cache *rc, uint32_t idx);

typedef enum cli_pick {
    CLI_PICK_SEND,      /* *out is the segment to send to (it has an owner) */
    CLI_PICK_SOLD_OUT,  /* the route says sold out: answer with no round trip */
    CLI_PICK_PAUSED,    /* the item takes no reserves */
    CLI_PICK_REFRESH,   /* no usable segment or no owner: fetch the route, retry */
    CLI_PICK_EXHAUSTED, /* empties segments answered SEGMENT_EMPTY: time for the verdict */
} cli_pick;

/* Where a reserve with this hash (cli_route_hash) goes after `empties`
 * SEGMENT_EMPTY answers. *out is written only with CLI_PICK_SEND. */
cli_pick cli_route_pick_reserve(const cli_route *r, uint64_t hash, uint32_t empties,
                                const cli_rseg **out);

/* Segments a reserve may try on r (the ring's size, at most
 * CLI_ROUTE_TRIES_MAX; 0 when nothing takes reserves). */
uint32_t cli_route_tries(const cli_route *r);

/* True if r may be trusted for the verdict: fetched within
 * CLI_ROUTE_FRESH_US or pushed within CLI_ROUTE_PUSH_ALIVE_US. */
bool cli_route_fresh(const cli_route *r, int64_t now_us);

/* The verdict once every tried segment was empty: ESC_ESOLD_OUT or
 * ESC_ETRY_LATER from a fresh route, 1 when the route must be fetched first. */
int cli_route_verdict(const cli_route *r, int64_t now_us);

#endif
