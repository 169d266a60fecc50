/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_gstock.h - restock and reduce of a global item, exactly once across
 * regions (migration 0010 explains the records and the invariant).
 *
 * An operator's restock or reduce (AdminReq with global set and an
 * operation id) is carried out by the region whose coordinator got it, in
 * one statement: a retried or repeated id is answered with the first
 * outcome and changes nothing.
 *   - restock: placed in the region the request names, else where demand is
 *     least covered, else by the regions' shares (coord_policy_restock_place);
 *     units placed in another region leave at once as a quota transfer
 *     (reason 'restock') and follow the three steps of coord_quota.h;
 *   - reduce: an id carried out before is answered at once; else the
 *     request waits until every peer has sent its figures of the item as of
 *     after the request arrived (coord_gfresh.h: one round trip; a peer
 *     silent for COORD_GFRESH_WAIT_MS: UNAVAILABLE, nothing changes). It is
 *     refused when fewer units are neither sold nor already being reduced
 *     in any region (this one from its database, the others from those
 *     figures): it could never complete. Otherwise
 *     items.reduce_pending takes what is unallocated now and the rest as it
 *     comes, never a held or sold unit: from this region's segments (held
 *     units once they come back), and from the other regions' unused quota,
 *     least demand first
 *     (coord_policy_reduce_sources): each peer is asked for its part in the
 *     status (reduce_ask) and sends it as quota transfers (reason 'reduce').
 * The other regions learn a region's changes from its status
 * (coord_gstock_learn: escrow_global_learn applies a region's row once).
 */
#ifndef ESC_COORD_GSTOCK_H
#define ESC_COORD_GSTOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_cat.h"
#include "coord_peer.h"
#include "region_cfg.h"
#include "wire.h"

typedef struct coord coord;
struct coord_status;
struct coord_quota;
struct coord_gfresh;

/* The answer to an operator's request (msg borrowed during the call). */
typedef void (*coord_gstock_cb)(coord *c, int status, const char *msg, void *arg);

typedef struct coord_gstock {
    const region_cfg *cfg;       /* borrowed: this region */
    coord_peers *peers;          /* borrowed */
    struct coord_status *status; /* borrowed: the peers' views and their age */
    struct coord_gfresh *fresh;  /* borrowed: what a reduce is judged on */
    bool sums_loaded;            /* global_changes read since start (or since an unknown outcome) */
    bool sums_busy;              /* that read is in flight */
    uint64_t n_restocks, n_reduces, n_learned;
} coord_gstock;

/* cfg, peers, status and fresh are borrowed for gs's life. */
void coord_gstock_init(coord_gstock *gs, const region_cfg *cfg, coord_peers *peers,
                       struct coord_status *status, struct coord_gfresh *fresh);

/* WIRE_ADMIN_RESTOCK or WIRE_ADMIN_REDUCE of it (q borrowed): carried out
 * when q->global and it is global; refused otherwise (and a global item's
 * restock without q->global). cb runs exactly once. */
void coord_gstock_admin(coord *c, coord_gstock *gs, coord_item *it, const wire_request *q,
                        coord_gstock_cb cb, void *arg);

/* Peer i's view of it reports more global changes than known here: they are
 * applied (unless an apply is in flight; the next view tries again). */
void coord_gstock_learn(coord *c, coord_gstock *gs, coord_item *it, int i);

/* Every round: reads the rows of global_changes once after start and after
 * an unknown outcome. */
void coord_gstock_round(coord *c, coord_gstock *gs);

/* The round's policy for one global item: with a reduce pending here, where
 * its units come from (this region's part, each peer's ask); else, a peer's
 * ask for this region's units becomes the item's export intent. Returns true
 * when it set the intent (the automatic policy then waits). */
bool coord_gstock_plan(coord *c, coord_gstock *gs, coord_item *it, int64_t now);

/* The part of it's pending reduce this region's segments give now (the
 * policy pass reclaims that much). */
int64_t coord_gstock_reduce_local(const coord_item *it);

#endif
