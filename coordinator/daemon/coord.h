/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord.h - escrow-coordinator: placement with leases and epochs, transfers,
 * the tail-stock policy, routing tables and administration, on one libuv
 * loop. This header is the daemon's life cycle (coord_start, coord_stop,
 * coord_fini, which escrow-coordinator.c calls); its state, struct coord,
 * which every module receives, is coord_state.h.
 *
 * Sockets: one raw REP socket (nnx) for heartbeats (WIRE_OP_HEARTBEAT),
 * routing requests (WIRE_OP_ROUTE), administration (WIRE_OP_ADMIN) and quota
 * messages (WIRE_OP_QUOTA); one PUB socket for routing updates. Storage: one
 * asynchronous libpq connection (pgx) and a FIFO of statements (coord_db.h);
 * every change of ownership, state or stock is a conditional write, applied
 * to the in-memory catalog (coord_cat.h) only when it committed. Policy:
 * coord_policy.h, pure.
 *
 * Modules, each with its own header; calls go one way, down this list
 * (nothing calls back into coord.c: a finished catalog read and a changed
 * route are reported through callbacks):
 *   coord.c         life cycle, the REP socket's dispatch, timers, heartbeats
 *   coord_admin     AdminReq: item and node operations for escrowctl
 *   coord_pass      policy passes: snapshot, coord_policy_plan, writes
 *   coord_region    regions: the round and quota requests; below it
 *                   coord_quota (quota transfers and moves), coord_peer (the
 *                   peers' sockets), coord_gitem (a global item's state)
 *   coord_xfer      transfers reported by the nodes, received into unallocated
 *   coord_place     nodes, leases, placement, epochs
 *   coord_route     routing tables: versions, publishing, route requests
 *   coord_db        the statement queue and the catalog read
 *   coord_counts    the segment rows' counters, read for the items whose
 *                   owners reported other ones
 *   coord_leader    the region's leader lease and its fence (coord_db asks
 *                   it before each statement, and tells it of a refused write)
 *   coord_reply     replies on the REP socket
 *   coord_mon, coord_metrics, coord_auth, coord_failpoint
 * and coord_state.h, the data they share (types only).
 */
#ifndef ESC_COORD_H
#define ESC_COORD_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "coord_state.h"

/* Starts the coordinator on loop: the database connection and the leader
 * lease (coord_leader.h); once the lease is taken, the sockets, the timers
 * and the first catalog read (COORD-READY is logged when it completes).
 * Returns 0 or an ESC_E* code (then coord_fini and exit). */
int coord_start(coord *c, uv_loop_t *loop, const coord_config *cfg);
/* Begins a clean stop (daemon_run calls it at the first SIGINT/SIGTERM,
 * daemon.h): the loop ends once every handle closed. */
void coord_stop(coord *c);
/* True when the coordinator can do its work: its database connection up,
 * the schema checked (schema_version.h) and the catalog read; else false
 * with the reason in why (cap bytes). For /readyz (daemon.h). */
bool coord_ready(const coord *c, char *why, size_t cap);
/* Frees what coord_start allocated; after uv_run returned. */
void coord_fini(coord *c);

#endif
