/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_region.h - the coordinator's side of regions: the peers (the other
 * regions' coordinators), global items' quota, and quota transfers between
 * two regions' databases, exactly once (migration 0008 explains the three
 * steps and the global invariant).
 *
 * Every interval_ms ([quota] in the region's INI file) the coordinator
 *   - reads its open quota transfers (quota_transfers 'sent') and offers each
 *     to its receiver again (WIRE_QUOTA_OFFER; the receiver applies it at
 *     most once per (from_region, transfer_id) and answers; the answer is
 *     recorded with escrow_quota_done);
 *   - sends every peer a status of all its global items (quota, unused,
 *     demand, floor, in flight, held, sold, global changes; coord_status.h)
 *     and learns the peer's view of the same items from the answers;
 *   - for each global item: a pending reduce plans where its units come
 *     from, a peer's reduce ask becomes an export intent (coord_gstock.h),
 *     else the automatic policy (coord_policy_quota) sets one.
 * An export intent (automatic, or WIRE_QUOTA_MOVE from escrowctl) asks the
 * policy to reclaim units from the segments into unallocated
 * (coord_pitem.export_want); whenever unallocated units are there, they are
 * sent (escrow_quota_send), then offered at once.
 *
 * A global item is sold out here only when every peer said, recently, that
 * it has nothing unused and nothing in flight, and nothing we sent is
 * unconfirmed: a partitioned region answers TRY_LATER, never SOLD_OUT, while
 * another region may still have units.
 *
 * The region is cut by job: coord_region.c (life cycle, the round, the
 * requests), coord_peer.h (the peers' sockets), coord_status.h (the status
 * exchange, in pages, every global item every round), coord_quota.h (quota
 * transfers and moves), coord_gstock.h (restock and reduce of a global
 * item), coord_gitem.h (a global item's state). Failpoints of the quota
 * steps: coord_failpoint.h.
 */
#ifndef ESC_COORD_REGION_H
#define ESC_COORD_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_cat.h"
#include "coord_gstock.h"
#include "nnx.h"
#include "wire.h"

typedef struct coord coord;

/* The region cannot run (its database belongs to another region, or cannot
 * be claimed): the coordinator stops with exit code 1. */
typedef void (*coord_region_fail_cb)(coord *c);

/* Opens the peers' sockets and claims the database for the region
 * (region_self); fail_cb runs if the claim fails. No-op without cfg.region.
 * Returns 0 or an ESC_E* code. */
int coord_region_start(coord *c, coord_region_fail_cb fail_cb);
/* Closes the peers' handles (coord_stop); frees everything (coord_fini). */
void coord_region_close(coord *c);
void coord_region_free(coord *c);

/* Every coordinator tick: sends the quota that is ready, answers moves
 * whose deadline passed; every interval_ms the exchange above. */
void coord_region_tick(coord *c);

/* WIRE_OP_QUOTA on the coordinator's REP socket. */
void coord_region_handle(coord *c, const nnx_hdr *hdr, const wire_request *q);

/* A restock or reduce (q borrowed) of a global item, or with q->global
 * (coord_gstock.h); refused without a region. cb runs exactly once. */
void coord_region_admin(coord *c, coord_item *it, const wire_request *q, coord_gstock_cb cb,
                        void *arg);
/* The part of the item's pending reduce its segments give now (all of it
 * for a regional item). */
int64_t coord_region_reduce_local(coord *c, coord_item *it);

/* The policy's export_want for the item (0 for a regional item). */
int64_t coord_region_export_want(coord *c, coord_item *it);
/* False while another region may still sell or send this global item
 * (true for a regional item). */
bool coord_region_may_sell_out(coord *c, coord_item *it);

#endif
