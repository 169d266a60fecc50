/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_place.h - nodes, leases and placement (coord_place.c explains the
 * rules): heartbeats register nodes and their reports, leases expire,
 * segments without a live owner (or on a node being drained) get one, and
 * loads are evened out, every ownership change an epoch-conditional write.
 */
#ifndef ESC_COORD_PLACE_H
#define ESC_COORD_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_cat.h"
#include "wire.h"

typedef struct coord coord;

/* Every coordinator tick: expires leases, writes the nodes rows that are
 * due, and places the segments that need an owner (one write at a time). */
void coord_place_tick(coord *c);
/* The coordinator's own loop was stalled for stall_us, long enough that
 * the nodes' silence meant nothing (coord_lease.h): every live node gets a
 * lease of grace from now. Logs COORD-STALL. */
void coord_place_loop_stalled(coord *c, int64_t stall_us);
/* A node's heartbeat (hb borrowed): registers the node (a new incarnation is
 * written with a raise of its epochs) and takes its segments' reports.
 * *out is the node, or NULL when the node table is full. */
void coord_place_heartbeat(coord *c, const wire_heartbeat *hb, coord_node **out);
/* Writes n's nodes row (state, lease) when due, or now with force. */
void coord_place_node_write(coord *c, coord_node *n, bool force);

#endif
