/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_snap.h - one sample of `escrowctl top`: a page of items with their
 * segments as the database saw them in one snapshot, the owners' counters
 * as the nodes reported them, and the rates measured against the sample
 * before.
 *
 * Where the figures come from:
 *   - PostgreSQL (ctl_top_db.h), one REPEATABLE READ transaction: the items
 *     matching the filter (how many, and one page of them), each item's
 *     state, total, unallocated, tail segment and units in flight, each
 *     segment's owner, epoch, state, region, available/held/sold and open
 *     transfers, the nodes;
 *   - the owners (ctl_top_stats.h), one StatsReq per node and item: the
 *     segment's `reserved` (units reserved and committed since the owner
 *     loaded it) and `empties` (reserves it refused with SEGMENT_EMPTY),
 *     the same counters the coordinator's demand estimate reads;
 *   - two samples of those counters (ctl_top_rates): units put on hold per
 *     second and rejections per second, per segment, summed per item. A
 *     segment whose owner did not answer in either sample, or whose epoch
 *     changed in between (a new owner counts from zero), has no rate.
 *
 * Pure: no I/O. ctl_top_snap_free frees what the collectors allocated.
 */
#ifndef CTL_TOP_SNAP_H
#define CTL_TOP_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_opts.h"
#include "esc_limits.h"

/* A rate that could not be measured. */
#define CTL_TOP_RATE_NONE (-1.0)
/* Nodes read per sample at most (a cluster's nodes are few). */
#define CTL_TOP_NODES_MAX 4096
/* Room for the note under the title ("node n2 did not answer ..."). */
#define CTL_TOP_NOTE_MAX 256

typedef struct ctl_top_seg {
    int64_t segment_id;
    int64_t seg_no;
    int64_t epoch;
    int64_t available, held, sold;
    int64_t xfers_open;    /* planned or sent transfers out of or into it */
    int64_t in_flight_out; /* units sent out of it, not yet received */
    int64_t in_flight_in;  /* units sent to it, not yet received */
    char region[CTL_REGION_LEN_MAX + 1];
    char node[ESC_NODE_ID_LEN_MAX + 1]; /* "" = no owner */
    char state[16];                     /* active, draining, retired */
    bool node_down;                     /* its owner is down or its lease ran out */
    bool tail;                          /* the item's tail segment (collapsed) */
    /* The owner's counters (StatsReq), when it answered. */
    bool has_stats;
    uint64_t stats_epoch; /* the epoch the owner counts under */
    uint64_t reserved;    /* units reserved since the owner loaded it */
    uint64_t empties;     /* SEGMENT_EMPTY answers since then */
    int64_t stats_us;     /* monotonic time of the answer */
    /* Filled by ctl_top_rates: per second, or CTL_TOP_RATE_NONE. */
    double hold_rate;
    double reject_rate;
} ctl_top_seg;

typedef struct ctl_top_item {
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    char state[16]; /* active, paused, retired */
    int64_t total;
    int64_t available, held, sold; /* sums over its segments */
    int64_t in_flight;             /* units of sent transfers */
    int64_t unallocated;
    int64_t tail_segment; /* 0 = not collapsed */
    int64_t segments_wanted;
    int64_t segments_active;
    int64_t xfers_open; /* planned or sent */
    size_t seg_first;   /* its segments: segs[seg_first .. seg_first + nsegs) */
    size_t nsegs;
    double hold_rate;   /* sum of its segments' known rates, or CTL_TOP_RATE_NONE */
    double reject_rate; /* likewise */
} ctl_top_item;

typedef struct ctl_top_node {
    char node[ESC_NODE_ID_LEN_MAX + 1];
    char endpoint[ESC_ENDPOINT_LEN_MAX + 1];
    bool down;
} ctl_top_node;

typedef struct ctl_top_snap {
    int64_t at_ms;       /* the database's clock at the snapshot (unix ms) */
    int64_t matched;     /* items matching the filter */
    int64_t offset;      /* items[0]'s position among them (0-based) */
    ctl_top_item *items; /* owned */
    size_t nitems;
    ctl_top_seg *segs; /* owned; each item's segments in a row */
    size_t nsegs;
    ctl_top_node *nodes; /* owned: every node the database knows */
    size_t nnodes;
    char note[CTL_TOP_NOTE_MAX]; /* "" or a sentence for the title */
} ctl_top_snap;

/* Frees what s owns and zeroes it; NULL-safe. */
void ctl_top_snap_free(ctl_top_snap *s);

/* Fills cur's segment and item rates from the counters of prev (borrowed;
 * NULL = no earlier sample: every rate is CTL_TOP_RATE_NONE). A segment's
 * rate needs its counters in both samples under the same epoch, counters
 * that did not go down and a later answer. Returns 0, or ESC_ENOMEM (every
 * rate then CTL_TOP_RATE_NONE). */
int ctl_top_rates(const ctl_top_snap *prev, ctl_top_snap *cur);

/* True when nothing of the item is left for a buyer, now or later: the
 * route's sold-out flag (nothing available, held, in flight or
 * unallocated), as the --sold-out filter reads it. */
bool ctl_top_item_sold_out(const ctl_top_item *it);

/* The node named name in s (borrowed), or NULL. */
const ctl_top_node *ctl_top_snap_node(const ctl_top_snap *s, const char *name);

/* Sums over s's items, for the title line; rates sum the known ones
 * (CTL_TOP_RATE_NONE when none is known). */
typedef struct ctl_top_totals {
    int64_t available, held, sold, in_flight, xfers_open;
    double hold_rate, reject_rate;
    int64_t nodes_up, nodes_down;
} ctl_top_totals;
void ctl_top_totals_of(const ctl_top_snap *s, ctl_top_totals *t);

#endif
