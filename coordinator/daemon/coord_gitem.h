/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_gitem.h - a global item's state in this region's coordinator: what
 * each peer region last said about it, the quota on its way to each peer,
 * and the export intent (units to send to one peer: set by the automatic
 * policy or by an operator's move). Hangs off the catalog's item
 * (coord_item.g), created when first needed, freed with the catalog.
 */
#ifndef ESC_COORD_GITEM_H
#define ESC_COORD_GITEM_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_cat.h"
#include "nnx.h"
#include "region_cfg.h"
#include "wire.h"

typedef struct coord coord;

/* One peer's view of one global item. */
typedef struct coord_gview {
    wire_quota_item v;
    int64_t at_us;    /* monotonic; 0 = never heard */
    uint64_t rep_seq; /* the status page whose answer set it (0: a status of the peer's) */
} coord_gview;

/* An operator's move waiting for its answer. */
typedef struct coord_gmove {
    nnx_hdr hdr;
    uint64_t corr_id;
} coord_gmove;

typedef struct coord_gitem {
    coord_gview peers[REGION_PEERS_MAX];
    int64_t in_flight_to[REGION_PEERS_MAX]; /* open transfers to each peer (last read) */
    /* export intent */
    int intent_peer; /* -1 = none */
    int64_t intent_left;
    int64_t intent_sent;
    bool intent_manual;
    int64_t intent_until_us;
    coord_gmove *intent_req; /* owned: an operator waits for the answer; NULL = none */
    int64_t answer_at_us;
    const char *intent_why; /* quota_transfers.reason of what it sends: "auto", "reduce" */
    /* global restocks and reduces (coord_gstock.h): this region's row of
     * global_changes, and each peer's row as applied here */
    uint64_t own_changes;
    int64_t own_delta;
    uint64_t known_changes[REGION_PEERS_MAX];
    bool learn_busy; /* an escrow_global_learn is in flight */
    /* a reduce pending here: what this region's segments give, and what
     * each peer is asked for as a running total (wire_quota_item.reduce_ask)
     */
    int64_t reduce_local;
    int64_t reduce_ask[REGION_PEERS_MAX];
    /* running totals of quota: applied here from each peer, sent to each
     * peer and not refused (read with global_changes, kept up on the way) */
    int64_t applied_from[REGION_PEERS_MAX];
    int64_t sent_to[REGION_PEERS_MAX];
} coord_gitem;

/* it's state, allocated (no intent) the first time. */
coord_gitem *coord_gitem_of(coord_item *it);
/* Frees every item's state (after the loop ended). */
void coord_gitem_free_all(coord_cat *cat);

/* This region's view of the item, as sent to peers: quota, unused (what can
 * still be sold here, less what a pending reduce still takes), demand, floor
 * and share (cfg, borrowed), quota in flight to the npeers peers, held,
 * sold, the pending reduce, this region's global changes; reduce_ask is
 * left 0 (it is per peer). */
void coord_gitem_view(coord *c, const region_cfg *cfg, size_t npeers, coord_item *it,
                      wire_quota_item *out);
/* The item's units here that are neither held nor sold: available, in
 * flight between its segments, unallocated (a pending reduce takes them). */
int64_t coord_gitem_remaining(coord *c, coord_item *it);

#endif
