/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_status.h - the status exchange with the peer regions: this region's
 * view of every global item goes to every peer, and each answer is the
 * peer's view of the same items (wire_quota_item: quota, unused, demand,
 * floor, in flight, held, sold, pending reduce, global changes, share).
 *
 * A status message carries at most ESC_QUOTA_ITEMS_MAX items (a page), so
 * every round (interval_ms) starts a sweep per peer over all the global
 * items: pages go out COORD_STATUS_WINDOW at a time, and each answer sends
 * the next one, until every global item was sent. A sweep still running
 * when the next round begins goes on; a page unanswered for two rounds
 * counts as lost (its items come again in the next sweep). So every global
 * item is covered once per max(interval, sweep) and a sweep grows linearly
 * with the number of global items (regions.md gives the figure for 10,000).
 *
 * A view is trusted for COORD_STATUS_STALE_ROUNDS times the longer of the
 * interval and the peer's last sweep. An answer older than the view an item
 * already has (pages answered out of order) is ignored for that item; a
 * view that reports more global changes than this region knows of that
 * peer is learned (coord_gstock_learn).
 */
#ifndef ESC_COORD_STATUS_H
#define ESC_COORD_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_peer.h"
#include "nnx.h"
#include "region_cfg.h"
#include "wire.h"

typedef struct coord coord;
struct coord_gstock;

/* Pages sent to one peer and not yet answered, at most: a page costs one
 * turn of each coordinator's loop, which a catalog of thousands of items
 * makes long (every item's policy pass runs on it), so many pages share
 * one; 16 pages are at most ~650 KiB in flight (the sockets buffer 4 MiB). */
#define COORD_STATUS_WINDOW 16
/* A view is trusted for this many times max(interval, the peer's sweep). */
#define COORD_STATUS_STALE_ROUNDS 3
/* A sweep's duration is logged (INFO) every this many sweeps, and when the
 * number of global items changed. */
#define COORD_STATUS_LOG_EVERY 30

/* The exchange with one peer. */
typedef struct coord_status_peer {
    uint64_t seq;   /* the last page sent (its corr_id) */
    size_t cursor;  /* the catalog index the sweep goes on from */
    bool sweeping;  /* pages of this sweep are still to be sent */
    size_t pending; /* pages sent, not answered */
    uint64_t pend_seq[COORD_STATUS_WINDOW];
    int64_t pend_us[COORD_STATUS_WINDOW];
    int64_t sweep_start_us;
    int64_t sweep_us; /* the last complete sweep, start to last answer; 0 = none yet */
    size_t sweep_items, last_sweep_items;
    uint64_t sweep_pages;
    uint64_t sweeps; /* complete sweeps */
} coord_status_peer;

typedef struct coord_status {
    const region_cfg *cfg;       /* borrowed: this region */
    coord_peers *peers;          /* borrowed */
    struct coord_gstock *gstock; /* borrowed: learns the peers' global changes */
    coord_status_peer p[REGION_PEERS_MAX];
    wire_quota scratch;                         /* a page being sent */
    wire_quota_item items[ESC_QUOTA_ITEMS_MAX]; /* the answer to a peer's page */
} coord_status;

/* cfg, peers and gstock are borrowed for st's life. */
void coord_status_init(coord_status *st, const region_cfg *cfg, coord_peers *peers,
                       struct coord_gstock *gstock);

/* A round began: a sweep starts for each peer whose last one ended; pages
 * unanswered for two rounds are given up. */
void coord_status_round(coord *c, coord_status *st);
/* Peer i answered a page (rep borrowed; its corr_id is the page's). */
void coord_status_answered(coord *c, coord_status *st, int i, const wire_reply *rep);
/* A peer's (or escrowctl's) WIRE_QUOTA_STATUS on the REP socket: its views
 * are taken, and ours of the same items are the answer. */
void coord_status_handle(coord *c, coord_status *st, const nnx_hdr *hdr, const wire_request *q);

/* How long a view of peer i stays trusted (microseconds). */
int64_t coord_status_stale_us(const coord_status *st, int i);

#endif
