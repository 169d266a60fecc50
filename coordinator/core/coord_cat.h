/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_cat.h - the coordinator's catalog in memory: items, segments,
 * nodes and open transfers, with what the nodes reported.
 *
 * The database is the record; this is the coordinator's view of it, kept
 * in step by its own writes (applied when they COMMIT, never before) and by
 * re-reading the catalog. No I/O here: lookups, the heartbeat reply's
 * assignment and transfer commands, routing tables, policy snapshots.
 *
 * Ownership rules the catalog encodes:
 *   - seg->owner / seg->epoch are the COMMITTED owner and epoch;
 *   - a segment with an ownership write in flight (pending) or whose owner
 *     lost its lease (revoked: it needs a new epoch before anyone serves it)
 *     is in no assignment;
 *   - a node's segments are assigned only while the node is alive and its
 *     incarnation is the one in the database.
 * Items, segments and nodes are heap objects that live until
 * coord_cat_fini (pointers to them stay valid); transfers are freed when
 * they close.
 *
 * Routes: an item's routing table is derived from the catalog. The catalog
 * tells one watcher (coord_cat_watch; the daemon's routing, coord_route.h)
 * when an item was added and whenever a module that changed an item reports
 * it with coord_cat_changed, so the modules that write items never call the
 * routing themselves. The watcher runs synchronously, inside the call.
 */
#ifndef ESC_COORD_CAT_H
#define ESC_COORD_CAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_dirty.h"
#include "coord_policy.h"
#include "esc_limits.h"
#include "hmap.h"
#include "wire.h"

/* Bounds of the coordinator's tables (each entry costs < 3 KiB for an item,
 * ~200 bytes for a segment, ~400 bytes for a node, ~80 for a transfer). */
#define COORD_NODES_MAX 1024
/* items in the coordinator's catalog: a catalog of 100,000 items plus
 * room to grow (the item table grows as items come) */
#define COORD_ITEMS_MAX (1 << 18)
/* the whole catalog's segments: many nodes' worth (a node serves at most
 * ESC_NODE_SEGMENTS_MAX) */
#define COORD_SEGS_MAX (1u << 20)
#define COORD_XFERS_MAX 65536
/* seg->xfer_id while the INSERT of its transfer is in flight. */
#define COORD_XFER_INSERTING UINT64_MAX

enum { COORD_ITEM_ACTIVE = 0, COORD_ITEM_PAUSED, COORD_ITEM_RETIRED };
enum { COORD_NODE_UP = 0, COORD_NODE_DRAINING, COORD_NODE_DOWN };
enum { COORD_XF_PLANNED = 0, COORD_XF_SENT };

typedef struct coord_node {
    hmap_node by_id;
    char node_id[ESC_NODE_ID_LEN_MAX + 1];
    char endpoint[ESC_ENDPOINT_LEN_MAX + 1];
    uint64_t incarnation;    /* of its last heartbeat */
    uint64_t db_incarnation; /* nodes.incarnation, committed */
    bool seen;               /* heartbeated since this coordinator started */
    bool alive;              /* lease not expired (or in its grace after a restart) */
    bool stopping;           /* its last heartbeat said so */
    bool drained;            /* WIRE_ADMIN_DRAIN */
    bool write_busy;         /* a nodes write is in flight */
    bool inc_pending;        /* the write of a new incarnation is in flight */
    int db_state;            /* COORD_NODE_* last written or loaded */
    int64_t last_hb_us;      /* monotonic */
    int64_t last_hb_wall_ms;
    int64_t last_write_us;
    uint32_t nsegs; /* placement scratch: segments it owns or is being given */
    /* the segments whose committed owner it is (coord_cat_set_owner keeps
     * it; borrowed, in no order) */
    struct coord_seg **owned;
    size_t nowned, owned_cap;
    uint64_t sig;   /* what placement and assignment read of it, at the last check */
    /* delta heartbeats (coord_asg.h): the figures it reported, summed up */
    hmap mirror;         /* coord_mirror_ent by segment_id */
    uint64_t mirror_inc; /* the incarnation whose report the mirror holds */
    uint32_t mirror_count;
    uint64_t mirror_digest;
    bool want_resync; /* its next reply asks for a full report */
    /* its published assignment: count, digest, and the changes (oldest
     * first) since log_base; a node that has version >= log_base takes them */
    uint32_t asg_count;
    uint64_t asg_digest;
    struct coord_asg_ent *log;
    size_t nlog, log_cap;
    uint64_t log_base;
} coord_node;

struct coord_item;

typedef struct coord_seg {
    hmap_node by_id;
    uint64_t segment_id;
    struct coord_item *item; /* borrowed */
    int32_t seg_no;
    coord_node *owner;                      /* committed owner (borrowed); NULL = none:
                                             * set with coord_cat_set_owner */
    size_t owned_idx;                       /* in owner->owned */
    uint64_t epoch;                         /* committed */
    int state;                              /* WIRE_SEG_* */
    bool pending;                           /* an ownership write is in flight */
    bool revoked;                           /* its owner lost the lease: needs a new epoch */
    int64_t db_available, db_held, db_sold; /* at the last catalog read */
    bool reported;                          /* rep_* below are from the owner at epoch rep_epoch */
    uint64_t rep_epoch;
    int64_t available, held, sold;
    uint64_t reserved, empties; /* the node's counters at the last report */
    int64_t last_rep_us;
    double demand;
    bool dry;
    bool forwarded;   /* collapsed: gave to the tail at least once */
    uint64_t xfer_id; /* open transfer, 0 = none, COORD_XFER_INSERTING */
    /* published assignment (coord_asg.h): the node it is in, the entry */
    coord_node *pub_node;
    wire_assignment pub;
    uint64_t pub_hash; /* 0 = in no assignment */
} coord_seg;

typedef struct coord_item {
    hmap_node by_key;
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    int64_t total, unallocated, reduce_pending;
    int state; /* COORD_ITEM_* */
    uint32_t segments_wanted;
    int32_t next_seg_no;
    uint64_t tail_segment;
    size_t nsegs;
    coord_seg *segs[ESC_SEGMENTS_PER_ITEM_MAX]; /* borrowed, by seg_no */
    bool write_busy;                            /* a catalog write (collapse, admin) is in flight */
    int plan_busy;                              /* transfer INSERTs in flight */
    bool marked[COORD_WORK_KINDS];              /* on the work lists (coord_dirty.h) */
    /* the invariant monitor's last check of it (coord_mon.h) */
    bool mon_bad;         /* its conservation was violated */
    bool mon_listed;      /* on the monitor's list of violating items */
    uint32_t mon_segs_bad; /* its segments disagreeing with their holds */
    bool sold_out;
    uint64_t route_version;
    uint64_t route_hash;
    bool global;           /* a global_items row exists: its total is this region's quota */
    int64_t global_total;  /* that row's global_total, as this region knows it */
    struct coord_gitem *g; /* owned by coord_region.c (NULL until it first looks) */
} coord_item;

typedef struct coord_xfer {
    hmap_node by_id;
    uint64_t transfer_id;
    coord_item *item;  /* borrowed */
    uint64_t from, to; /* 0 = unallocated */
    int64_t qty;
    int state;          /* COORD_XF_* */
    const char *reason; /* static (coord_policy_reason_name) when planned here; NULL = not known */
    bool busy;          /* a coordinator-side commit or re-read is in flight */
    size_t idx;         /* in coord_cat.xfers */
    uint32_t gen;       /* catalog read that last saw it open */
} coord_xfer;

/* What the watcher is told about an item. */
typedef enum coord_cat_event {
    COORD_CAT_ADDED = 0, /* coord_cat_add_item created it */
    COORD_CAT_CHANGED,   /* coord_cat_changed: its route may differ now */
} coord_cat_event;

/* it is borrowed; arg is the one given to coord_cat_watch. */
typedef void (*coord_cat_watch_cb)(coord_item *it, coord_cat_event ev, void *arg);

typedef struct coord_cat {
    hmap items_by_key, segs_by_id, nodes_by_id, xfers_by_id;
    coord_cat_watch_cb watch_cb; /* NULL = nobody watches */
    void *watch_arg;
    coord_item **items;
    size_t nitems, items_cap;
    coord_seg **segs;
    size_t nsegs, segs_cap;
    coord_node **nodes;
    size_t nnodes, nodes_cap;
    coord_xfer **xfers;
    size_t nxfers, xfers_cap;
    uint64_t incarnation; /* random per coordinator process (heartbeat replies) */
    uint64_t asg_seq;     /* version of the published assignments */
    coord_dirty work[COORD_WORK_KINDS]; /* the items marked for each kind of work */
} coord_cat;

/* Returns 0 or ESC_ENOMEM. */
int coord_cat_init(coord_cat *c);
void coord_cat_fini(coord_cat *c);

/* Installs the one watcher (replacing any); cb NULL = none. */
void coord_cat_watch(coord_cat *c, coord_cat_watch_cb cb, void *arg);
/* Reports that it changed in a way its route may show (segments, states,
 * tail, sold out, paused...): the watcher hears COORD_CAT_CHANGED. */
void coord_cat_changed(coord_cat *c, coord_item *it);

/* Marks it for every kind of work (placement, assignment, route check,
 * policy pass at the next rebalance): something about it or its segments
 * changed. The daemon's timers look at marked items and at a slice of the
 * rest, so a change is seen at once when it is marked and within one sweep
 * when it is not. coord_cat_changed marks it too. */
void coord_cat_touch(coord_cat *c, coord_item *it);
/* coord_cat_touch for every item with a segment n owns (O(n's segments),
 * from its index: n->owned). */
void coord_cat_touch_node(coord_cat *c, const coord_node *n);
/* Makes n (NULL = none) s's committed owner and keeps both nodes' indexes
 * (n->owned) in step: the one way to change seg->owner. O(1). */
void coord_cat_set_owner(coord_seg *s, coord_node *n);
/* Touches the segments of every node whose state placement or assignment
 * read (alive, seen, stopping, drained, incarnations, a write of its
 * incarnation in flight, known to the database) changed since the last
 * call; returns how many nodes changed. O(nodes) when none did. */
size_t coord_cat_check_nodes(coord_cat *c);

/* The work lists (coord_dirty.h). A mark for COORD_WORK_POLICY marks
 * COORD_WORK_MONITOR too. */
void coord_cat_mark(coord_cat *c, coord_item *it, coord_work w);
/* The segment row's counters as the database has them (db_*): an item whose
 * counters moved is marked for a policy pass. */
void coord_cat_set_db_counts(coord_cat *c, coord_seg *s, int64_t available, int64_t held,
                             int64_t sold);
void coord_cat_unmark(coord_item *it, coord_work w);
bool coord_cat_marked(const coord_item *it, coord_work w);
/* The items marked for w, each once, unmarked; valid until the next take
 * of w. */
coord_item **coord_cat_take(coord_cat *c, coord_work w, size_t *n);
/* Marks the next k items of the catalog for w, in round robin. */
void coord_cat_sweep(coord_cat *c, coord_work w, size_t k);

/* How many of n items a timer of period_ms looks at per run, in round robin,
 * so that every one is seen at least once every sweep_ms (all of them when
 * sweep_ms <= period_ms; at least 1 when n > 0). */
size_t coord_cat_sweep_slice(size_t n, uint32_t period_ms, uint32_t sweep_ms);

coord_item *coord_cat_item(const coord_cat *c, const char *tenant_id, const char *item_id);
coord_seg *coord_cat_seg(const coord_cat *c, uint64_t segment_id);
coord_node *coord_cat_node(const coord_cat *c, const char *node_id);
coord_xfer *coord_cat_xfer(const coord_cat *c, uint64_t transfer_id);

/* Adds (zeroed but for the keys) and returns the entry, or NULL when the
 * table is at its bound. A new item is reported to the watcher
 * (COORD_CAT_ADDED) before it is returned. */
coord_item *coord_cat_add_item(coord_cat *c, const char *tenant_id, const char *item_id);
coord_seg *coord_cat_add_seg(coord_cat *c, coord_item *it, uint64_t segment_id, int32_t seg_no);
coord_node *coord_cat_add_node(coord_cat *c, const char *node_id);
coord_xfer *coord_cat_add_xfer(coord_cat *c, coord_item *it, uint64_t transfer_id, uint64_t from,
                               uint64_t to, int64_t qty, int state);
/* Closes a transfer: frees it and clears its segments' xfer_id. */
void coord_cat_drop_xfer(coord_cat *c, coord_xfer *x);

/* True if the node may be given segments. */
bool coord_cat_node_eligible(const coord_node *n);
/* True if the segment is served right now: owner alive, incarnation
 * committed, no write in flight, not revoked. */
bool coord_cat_seg_served(const coord_seg *s);

/* The heartbeat reply's whole assignment (at most ESC_HB_SEGMENTS_MAX: for
 * a node that sends whole heartbeats) and transfer commands for node n. */
void coord_cat_assignment(const coord_cat *c, const coord_node *n, wire_hb_reply *out);
/* The transfer commands alone. */
void coord_cat_commands(const coord_cat *c, const coord_node *n, wire_hb_reply *out);
/* True if node n's segments are in its assignment (alive, incarnation
 * committed). */
bool coord_cat_node_assignable(const coord_node *n);

/* The item's routing table (version and sold_out as stored in it). */
void coord_cat_route(const coord_item *it, wire_route *out);
/* A hash of everything in the route but its version. */
uint64_t coord_cat_route_hash(const wire_route *r);

/* The policy's snapshot of the item at now_us (monotonic); segs must hold
 * it->nsegs entries. A segment's demand is decayed over the time since its
 * last report: a node's heartbeat carries a segment only when its figures
 * changed, so no report means nothing was reserved or refused since. */
void coord_cat_snapshot(const coord_cat *c, const coord_item *it, uint32_t collapse_pct,
                        uint32_t low_water_pct, int64_t now_us, coord_pseg *segs, coord_pitem *out);

#endif
