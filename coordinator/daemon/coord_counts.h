/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_counts.h - the segment rows' counters (available, held, sold) the
 * coordinator holds, kept up with what the nodes report.
 *
 * The catalog read (coord_db.h) fetches a segment row again only when a
 * column the catalog keeps changes (owner, epoch, state: migration 0018),
 * not when a node's batch moves its counters; the coordinator takes those
 * from the owners' heartbeats. Its copies of the rows' counters (db_*: for
 * a segment no owner reports, and escrow_coord_view_gap_units) are read
 * here: an owner that reports other counters marks the item
 * (COORD_WORK_COUNTS, coord_place.c), and each catalog poll reads the
 * counters of the marked items' segments, one statement by primary key,
 * at most COORD_COUNTS_ITEMS_MAX items at a time. A segment whose row still
 * differs from its owner's report (a batch committed after the report, or
 * a real divergence) is marked again and read at the next poll: once a
 * sale settles, the rows and the reports agree within a poll or two. Idle,
 * it reads nothing.
 */
#ifndef ESC_COORD_COUNTS_H
#define ESC_COORD_COUNTS_H

#include "coord_state.h"

#define COORD_COUNTS_ITEMS_MAX 4096

/* Queues a read of the marked items' segment counters, unless one is
 * queued or nothing is marked. */
void coord_counts_poll(coord *c);

#endif
