/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_commit.h - the node's group commit: decided ops collect in the
 * filling batch; each commit stream (node_stream: a connection of its own)
 * commits one batch at a time (one escrow_commit_batch call), and the
 * outcome settles every op of it in memory, answers the requests, and
 * decides the parked and undone ones again.
 *
 * Streams commit at the same time, never on the same segment: an idle
 * stream takes the filling batch's ops of every segment no other stream is
 * committing (seg_segment.committing) and leaves the others, in order, for
 * when their segment's batch settled. So each segment's ops commit one
 * batch after the other, as with one stream, and the row locks two streams
 * take are of different segments (a per-buyer limit's row or an
 * idempotency key's index entry, shared by two batches, makes the second
 * wait for the first's commit). The last idle stream is kept for the
 * tenants with nothing committing (node_admit_lane_open): a tenant alone
 * commits on one stream at a time (two small commits at once would only
 * wait for each other's WAL flush), and another tenant's request does not
 * wait for a flood's batch to commit, only for its own.
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

/* Allocates the filling batch and the streams' batches and scratch
 * (cfg.commit_streams of them). */
void node_commit_init(node *n);
void node_commit_fini(node *n);
/* Adds op (copied) to the filling batch and sends it if a stream is idle
 * and its segment is not committing. At the batch's hard cap the op is
 * undone and its request answered BUSY. */
void node_commit_add(node *n, const seg_op *op);
/* True when the filling batch holds ESC_BATCH_ROWS_MAX ops: the socket
 * stops reading until it is sent (back-pressure). */
bool node_commit_full(const node *n);
/* Adds the expiries due at now_ms (seg_core_sweep), bounded per pass. */
void node_commit_sweep(node *n, int64_t now_ms);
/* Sends what it can of the filling batch (or, once per sweep tick, the
 * hold id ranges segments wait for) on idle streams whose connection is up. */
void node_commit_kick(node *n);
/* st's connection is (back) up: reconciles its batch of unknown outcome
 * first, else sends what it can. */
void node_commit_conn_up(node_stream *st);
/* True if no batch commits and none is filling (a stop may finish). */
bool node_commit_idle(const node *n);
/* True if a batch committing now names s (its ops, or its hold id range). */
bool node_commit_touches(const node *n, const seg_segment *s);
/* Stops serving s now: the filling batch's ops on it are undone, every
 * request waiting on it is answered status (ESC_EFENCED when a newer owner
 * refused us, ESC_ENOT_OWNER when the coordinator took it away), its holds
 * leave memory. No batch may be committing it (node_commit_touches). */
void node_commit_drop_segment(node *n, seg_segment *s, int status);
/* node_commit_drop_segment in two steps, for dropping many segments at once:
 * each is marked (its ops undone and answered, it serves nothing), then one
 * sweep drops the holds of all of them (one pass over the node's holds,
 * logged SEG-DROPPED) and answers their waiters status. The caller sweeps
 * before it returns to the loop. */
void node_commit_drop_mark(node *n, seg_segment *s, int status);
void node_commit_drop_sweep(node *n, int status);
/* node_commit_drop_segment(s, ESC_EFENCED) after a SEG-FENCED log line
 * saying why, counted as fenced. */
void node_commit_fence(node *n, seg_segment *s, const char *why);

#endif
