/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_net.h - the node's REP socket: every request comes in here.
 *
 * A frame is checked before it is decoded (the credential, auth_guard.h,
 * then the tenant's token bucket), decoded, checked again for a reserve
 * (the buyer's bucket), and decided by seg_core. The decision says where
 * the request goes: answered at once (node_reply.h), into the filling
 * batch to be answered after COMMIT (node_commit.h), parked on a hold that
 * has an op pending until it settles, or to the database (node_lookup.h).
 * At most ESC_PENDING_MAX requests wait at once; over it, BUSY.
 *
 * Reading pauses while the filling batch is full (back-pressure: requests
 * queue in nanomsg, then the client's resends) and resumes once it is sent.
 */
#ifndef ESC_NODE_NET_H
#define ESC_NODE_NET_H

#include "node.h"

/* Credentials and rate limits, before anything is claimed or opened.
 * Returns 0 or an ESC_E* code. */
int node_net_guard_start(node *n);
/* A reload (SIGHUP): the rate limits and the cluster keys of fresh
 * (borrowed; its cluster_key is what heartbeats carry from now on, its
 * cluster_key_prev is accepted too), and the credentials table read again
 * now. Returns
 * 0, or an ESC_E* code when a limit or a key could not be taken (that part
 * keeps its old value). */
int node_net_reload(node *n, const node_config *fresh);
/* Opens the REP socket on every --listen endpoint and starts reading.
 * Returns 0 or an ESC_E* code after logging. */
int node_net_open(node *n);
/* Stops reading (back-pressure, or a stop). */
void node_net_pause(node *n);
/* Reads again unless stopping and drains what queued meanwhile. Returns 0,
 * or ESC_EIO when the socket cannot be watched again (the node stops). */
int node_net_resume(node *n);
/* Decides r again (the redecide upcall): r was parked on a hold that
 * settled, or its batch failed. r is transferred. */
void node_net_redecide(node *n, node_req *r);
/* Closes the watcher and the credential checker (counted in handles_open). */
void node_net_close(node *n);
/* Closes the socket and frees the buckets, after the loop ended. */
void node_net_fini(node *n);

#endif
