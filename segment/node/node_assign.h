/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_assign.h - the segment node under a coordinator (managed mode): the
 * heartbeat client and the assignment its replies bring.
 *
 * Heartbeats go out on a raw REQ socket every heartbeat_ms (the coordinator
 * sets it), and early (at most one per NODE_HB_MIN_GAP_MS) when a segment
 * went dry or a transfer result is ready. Each carries the served
 * segments' counters, the dry ones, and the settled transfer results
 * (node_xfer.h). corr_id rises with every heartbeat; a reply is applied
 * only if its corr_id is newer than every reply applied before (replies
 * can arrive late and out of order: the newest view of the coordinator
 * wins). Any reply acknowledges the transfer results its heartbeat carried.
 *
 * Assignment: the reply names every segment this node should serve, with
 * its epoch. A served segment missing from it, or assigned at a higher
 * epoch, is dropped like a fenced one (waiters answered NOT_OWNER); an
 * assigned segment not served is loaded (node_load.h). The reply's
 * transfer commands go into the group commit (node_xfer.h).
 *
 * At a stop, once the batches are finished, one last heartbeat says
 * "stopping" so the coordinator hands the segments over at once; the node
 * waits NODE_HB_STOP_WAIT_MS at most for its reply.
 */
#ifndef ESC_NODE_ASSIGN_H
#define ESC_NODE_ASSIGN_H

#include "node.h"

/* Connects to the coordinator and starts heartbeating. Returns 0 or an
 * ESC_E* code after logging. */
int node_assign_open(node *n);
/* Closes the socket's watcher and the timers (counted in n->handles_open). */
void node_assign_close(node *n);
/* Frees what node_assign_open allocated, after the loop ended. */
void node_assign_fini(node *n);
/* A segment went dry or a transfer result is ready: heartbeat soon (from
 * the loop, never in the middle of settling a batch). */
void node_assign_soon(node *n);
/* Takes the segments whose figures changed (n->core.touched) into the
 * heartbeats' work list (managed mode) and the unit gauges, and empties
 * the list: the heartbeat and the sweep tick call it. */
void node_assign_take_touched(node *n);
/* During a stop: true once the coordinator heard "stopping" (or gave up);
 * the first call sends that heartbeat. */
bool node_assign_stop_done(node *n);

#endif
