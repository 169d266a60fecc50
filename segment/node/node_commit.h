/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_commit.h - the node's group commit: decided ops collect in the
 * filling batch while at most one batch commits (one escrow_commit_batch
 * call on commit_conn); the outcome settles every op in memory, answers
 * the requests, and decides the parked and undone ones again.
 *
 * The order of a batch's outcome handling matters: first every op is
 * settled in memory (commit or undo), then requests are answered, then
 * parked requests are decided again, so each decision sees settled state.
 * A batch whose COMMIT outcome is unknown (the connection was lost) is
 * reconciled when the connection is back, before anyone hears of it: the
 * old backend is terminated, then segments.last_batch tells whether it
 * committed and which of its holds and transfers exist. A batch the epoch
 * fence refused (SQLSTATE_ESC_FENCED) is undone, then the segments that
 * moved on are dropped. So is a batch refused the way only a stale owner's
 * is (a hold that diverged from the record, a hold id or a counter the
 * record does not allow): when one of its segments moved on that is
 * fencing; when none did, a bug (logged SEG-BUG).
 *
 * Every batch also carries, per segment, the limit of the hold ids its
 * owner may give next (seg_delta.h); a committed batch raises the limits
 * in memory. When a segment ran out of ids, the sweep tick sends a batch
 * for the range even without ops.
 */
#ifndef ESC_NODE_COMMIT_H
#define ESC_NODE_COMMIT_H

#include "node.h"

/* Allocates the two batches and the scratch of the commit call. */
void node_commit_init(node *n);
void node_commit_fini(node *n);
/* Adds op (copied) to the filling batch and sends it if none commits. At
 * the batch's hard cap the op is undone and its request answered BUSY. */
void node_commit_add(node *n, const seg_op *op);
/* True when the filling batch holds ESC_BATCH_ROWS_MAX ops: the socket
 * stops reading until it is sent (back-pressure). */
bool node_commit_full(const node *n);
/* Adds the expiries due at now_ms (seg_core_sweep), bounded per pass. */
void node_commit_sweep(node *n, int64_t now_ms);
/* Sends the filling batch if it has ops (or a segment waits for its hold
 * id range and the sweep tick asked), none commits and commit_conn is up. */
void node_commit_kick(node *n);
/* The commit connection is (back) up: reconciles an inflight batch of
 * unknown outcome first, else sends the filling batch. */
void node_commit_conn_up(node *n);
/* True if no batch commits and none is filling (a stop may finish). */
bool node_commit_idle(const node *n);
/* True if the inflight batch has an op on s. */
bool node_commit_touches(const node *n, const seg_segment *s);
/* Stops serving s now: the filling batch's ops on it are undone, every
 * request waiting on it is answered status (ESC_EFENCED when a newer owner
 * refused us, ESC_ENOT_OWNER when the coordinator took it away), its holds
 * leave memory. The inflight batch must not touch it (node_commit_touches). */
void node_commit_drop_segment(node *n, seg_segment *s, int status);
/* node_commit_drop_segment(s, ESC_EFENCED) after a SEG-FENCED log line
 * saying why, counted as fenced. */
void node_commit_fence(node *n, seg_segment *s, const char *why);

#endif
