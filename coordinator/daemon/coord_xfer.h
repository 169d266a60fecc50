/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_xfer.h - transfers between segments once planned (coord_pass.h
 * plans them): the outcomes the nodes report in their heartbeats, and the
 * receiving end the coordinator commits itself (a transfer to
 * items.unallocated). coord_xfer.c describes the protocol.
 */
#ifndef ESC_COORD_XFER_H
#define ESC_COORD_XFER_H

#include "wire.h"

typedef struct coord coord;

/* The transfer outcomes of a node's heartbeat (hb borrowed): sent, received,
 * cancelled, or stale (then the row is re-read). */
void coord_xfer_results(coord *c, const wire_heartbeat *hb);
/* Every coordinator tick: commits the 'sent' transfers to unallocated. */
void coord_xfer_tick(coord *c);

#endif
