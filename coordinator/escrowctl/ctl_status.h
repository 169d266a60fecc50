/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_status.h - `escrowctl status [TENANT [ITEM]]`: the counters.
 *
 * Per item (the summary line): state, total, available, held, sold,
 * in_flight, unallocated, active/wanted segments, draining segments, the
 * tail segment (collapsed), open transfers and the conservation verdict (the
 * conservation view); per segment: id, seg_no, region, owner node (marked
 * "(down)" when its lease ran out), epoch, state, available, held, sold, open
 * transfers and units in flight out of / into it, TAIL. Both come from one
 * REPEATABLE READ snapshot, so the segment rows add up to the item row.
 * At most CTL_STATUS_ITEMS_MAX items are shown; the output says when more
 * exist. A last line gives the coordinator's invariant monitor (coord_mon.h,
 * the `monitor` table): "invariant monitor: ok (checked 2 s ago, ...)" or
 * "VIOLATED" with one line of figures per violation, STALE when the
 * coordinator stopped checking; in JSON, the object "monitor" (null before
 * the first check).
 */
#ifndef CTL_STATUS_H
#define CTL_STATUS_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn and out are borrowed. Returns 0, ESC_EUNKNOWN_ITEM when TENANT ITEM
 * names no item, ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_status(PGconn *conn, const ctl_args *a, FILE *out);

#endif
