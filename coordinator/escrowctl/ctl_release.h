/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_release.h - `escrowctl release HOLD_ID`: an operator's force-release.
 *
 * The database says where the hold lives (holds.segment_id), who owns that
 * segment (segments.node_id) and where that node listens (nodes.endpoint);
 * escrowctl then sends the node a ReleaseReq with by_operator set, so the
 * hold ends exactly like a buyer's release (cancelled, units back in the
 * segment, one outbox event, actor 'operator') under the node's single
 * writer. escrowctl never writes a hold itself: the node's memory would
 * disagree with the database.
 *
 * A hold that already ended is answered from the database (final states
 * never change). A node that answers NOT_OWNER or FENCED lost the segment
 * meanwhile; the owner is looked up again, once.
 */
#ifndef CTL_RELEASE_H
#define CTL_RELEASE_H

#include <stdbool.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* Owners tried: the first one, and once more after NOT_OWNER / FENCED. */
#define CTL_RELEASE_TRIES_MAX 2

/* conn, a and out are borrowed; a->hold_id is valid. Prints the final state
 * of the hold. Returns 0 (cancelled now, or already cancelled / expired),
 * ESC_ENOT_FOUND (no such hold), the node's error with *refused set (e.g.
 * ESC_ENOT_HELD for a converted hold), ESC_ECLOSED (no owner, or the owner is
 * down: nothing was sent), ESC_ETIMEDOUT (the owner did not answer), or a
 * database error; every error was explained on stderr. */
int ctl_release(PGconn *conn, const ctl_args *a, FILE *out, bool *refused);

#endif
