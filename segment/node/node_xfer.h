/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_xfer.h - managed mode: the transfer commands this node executes.
 *
 * A GIVE takes min(qty, available) out of the segment at once
 * (tentatively) and goes into the group commit; a RECEIVE adds units only
 * after the commit said received. The database decides exactly-once from
 * the transfer row's state; a step that is no longer allowed is STALE and
 * undone in memory. One op per transfer id at a time: a command whose id
 * is in a batch or still being reported is ignored. A settled transfer is
 * reported in every heartbeat until a reply to one of them arrives.
 */
#ifndef ESC_NODE_XFER_H
#define ESC_NODE_XFER_H

#include "node.h"

/* Starts the coordinator's command c: decides it in seg_core and records
 * it; the caller puts *op into the filling batch. Returns 0, or < 0 when
 * the command is not for now (known id, segment not served, table full,
 * another transfer op pending on the segment, bad qty): it comes again. */
int node_xfer_begin(node *n, const wire_xfer_cmd *c, seg_op *op);
/* The record of transfer_id, or NULL. */
node_xfer *node_xfer_find(node *n, uint64_t transfer_id);
/* Drops the record (its op left the batch unsettled). */
void node_xfer_forget(node *n, uint64_t transfer_id);
/* The database's verdict on one transfer of the inflight batch: state as
 * escrow_commit_batch returns it ("sent", "received", "cancelled", else
 * stale), qty the units the row moved. */
void node_xfer_verdict(node *n, uint64_t transfer_id, const char *state, int64_t qty);
/* The batch holding op settled: committed (after its verdict) or not.
 * Finishes op in seg_core and records the result to report. */
void node_xfer_settle(node *n, const seg_op *op, bool committed);
/* Puts the settled results into heartbeat m (number corr). */
void node_xfer_report(node *n, wire_heartbeat *m, uint64_t corr);
/* A reply to heartbeat corr arrived: the results it carried are known. */
void node_xfer_acked(node *n, uint64_t corr);

#endif
