/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_policy.h - what the coordinator decides for one item, from a
 * snapshot of it: which transfers to plan, whether to collapse it, whether
 * it is sold out.
 *
 * Pure: no libuv, libpq or nanomsg; the daemon (coord.c) builds the
 * snapshot from its catalog and the nodes' heartbeats, and carries out the
 * decisions (database writes). Invariants of every plan:
 *   - a segment appears in at most one open transfer (donor or receiver),
 *     counting the transfers already open (coord_pseg.busy);
 *   - a donor is never asked for more than it reported available;
 *   - only segments served by a live owner give or receive.
 */
#ifndef ESC_COORD_POLICY_H
#define ESC_COORD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Transfers one pass may plan for one item (each needs two segments, or
 * one and items.unallocated). */
#define COORD_PLAN_XFERS_MAX 256

/* Why a transfer is planned; names as transfers.reason. */
typedef enum coord_reason {
    COORD_R_REBALANCE = 0,
    COORD_R_REFILL,   /* the receiver reported dry */
    COORD_R_COLLAPSE, /* a draining segment's stock to the tail, first time */
    COORD_R_FORWARD,  /* units that came back to a collapsed segment */
    COORD_R_RESTOCK,  /* from items.unallocated */
    COORD_R_REDUCE,   /* back to items.unallocated for a pending reduce */
    COORD_R_SPLIT,    /* a surplus (draining, not collapsed) segment's stock */
    COORD_R_LAST_
} coord_reason;

const char *coord_policy_reason_name(int reason);

typedef struct coord_pseg {
    uint64_t segment_id;
    int state;         /* WIRE_SEG_ACTIVE / DRAINING / RETIRED */
    int64_t available; /* reported at the current epoch, else the database's */
    int64_t held;
    bool reported;   /* available/held come from the owner at the current epoch */
    bool owner_live; /* served right now by a live owner at the committed epoch */
    bool busy;       /* in an open transfer already (donor or receiver) */
    bool dry;        /* its owner answered SEGMENT_EMPTY since the last pass */
    bool forwarded;  /* collapsed: it already gave to the tail once */
    double demand;   /* units per second wanted here (EWMA, empties included) */
} coord_pseg;

typedef struct coord_pitem {
    int64_t total;
    int64_t unallocated;
    int64_t reduce_pending;
    int64_t in_flight;     /* sum of 'sent' transfers */
    int64_t reclaiming;    /* sum of open transfers to unallocated */
    int64_t export_want;   /* quota to send to another region: reclaimed like a reduce,
                              kept in unallocated (coord_region.c sends it) */
    bool paused;           /* paused items do not rebalance (restock and reduce go on) */
    bool retired;          /* retired items plan nothing */
    uint64_t tail_segment; /* 0 = not collapsed */
    uint32_t collapse_pct; /* 0..100 */
    uint32_t low_water_pct;
    size_t nsegs;
    coord_pseg *segs; /* borrowed; busy flags are not changed */
} coord_pitem;

typedef struct coord_pxfer {
    uint64_t from; /* 0 = items.unallocated */
    uint64_t to;   /* 0 = items.unallocated */
    int64_t qty;   /* >= 1 */
    int reason;    /* coord_reason */
} coord_pxfer;

typedef struct coord_plan {
    bool collapse; /* collapse now into tail (nothing else planned then) */
    uint64_t tail;
    bool sold_out;
    size_t nxfers;
    coord_pxfer xfers[COORD_PLAN_XFERS_MAX];
} coord_plan;

/* Plans one pass for the item. force_collapse: WIRE_ADMIN_COLLAPSE (collapse
 * whatever is left if more than one segment is active). Writes *out
 * (xfers[nxfers..] keep whatever they held). */
void coord_policy_plan(const coord_pitem *in, bool force_collapse, coord_plan *out);

/* Sold out: every non-retired segment reported available 0 and held 0, none
 * in a transfer, nothing in flight or unallocated, at least one segment. */
bool coord_policy_sold_out(const coord_pitem *in);

/* Remaining stock that can still be sold: available + in flight + unallocated. */
int64_t coord_policy_remaining(const coord_pitem *in);

/* Demand EWMA: the new estimate after a report with d_reserved units reserved
 * and d_empties SEGMENT_EMPTY answers over dt_us microseconds. */
double coord_policy_demand(double prev, uint64_t d_reserved, uint64_t d_empties, int64_t dt_us);

/* ---- regions: the automatic quota policy ----------------------------------- */

/* One peer region's view of a global item, as its last status said. */
typedef struct coord_qpeer {
    bool fresh;           /* heard within the staleness bound, and it has the item */
    int64_t unused;       /* available + unallocated there */
    int64_t demand_milli; /* units per 1000 s wanted there */
    int64_t in_flight_to; /* our quota on its way there, not yet confirmed */
} coord_qpeer;

typedef struct coord_qin {
    int64_t unused;       /* here: available + in flight between segments + unallocated */
    int64_t demand_milli; /* here */
    int64_t floor;        /* never given away */
    uint32_t horizon_ms;  /* a region should hold this long of its demand */
    size_t npeers;
    const coord_qpeer *peers;
} coord_qin;

/* Which peer gets quota from here and how much: this region keeps
 * max(floor, its demand over the horizon); a peer needs its demand over the
 * horizon minus what it has and what is on its way; the neediest peer gets
 * min(spare, need). Returns the peer's index and *qty >= 1, or -1. Two
 * regions never send to each other in the same round: a region that needs
 * has no spare. */
int coord_policy_quota(const coord_qin *in, int64_t *qty);

/* ---- regions: where a global restock goes, where a global reduce takes from -- */

/* Regions the two choices below look at: this one and its peers. */
#define COORD_QREGIONS_MAX 32

/* One region's figures (this region or a peer) as the two choices below see
 * them. */
typedef struct coord_qregion {
    bool usable;          /* this region, or a peer heard recently that has the item */
    int64_t quota;        /* its items.total */
    int64_t unused;       /* neither held nor sold (nor taken by its own pending reduce) */
    int64_t demand_milli; /* units per 1000 s wanted there */
    int64_t in_flight_to; /* quota on its way to it */
    uint32_t share;       /* [quota] share; 0 counts as 1 */
} coord_qregion;

/* The region a restock of a global item is placed in (an index into r), or
 * -1 when none is usable: the region whose demand over horizon_ms exceeds
 * what it has and what is on its way by the most; without such a need
 * anywhere, the region furthest below its share of total_after (the global
 * total with the restock). Ties go to the lower index. */
int coord_policy_restock_place(const coord_qregion *r, size_t n, uint32_t horizon_ms,
                               int64_t total_after);

/* Where a pending reduce of `pending` units takes them from: the usable
 * regions by demand, least first (ties: most unused, then the lower index),
 * each up to its unused, until pending is covered. Writes take[0..n) and
 * returns their sum (less than pending while units are held or sold). */
int64_t coord_policy_reduce_sources(const coord_qregion *r, size_t n, int64_t pending,
                                    int64_t take[]);

#endif
