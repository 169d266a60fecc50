/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_ret.h - the coordinator's retention schedule.
 *
 * Every --retention-s seconds (config key retention_s; 0 = never) the
 * coordinator calls escrow_retention_run() on a libpq connection of its own,
 * asynchronously on the loop: it makes the day partitions ahead and drops
 * the holds and outbox partitions that the rules allow (docs/retention.md).
 * The first run is one period after start. Logged: an INFO line
 * COORD-RETENTION per run that dropped something (the partitions), a WARN
 * line when a run failed (retried at the next period). A run that is still
 * going when the next is due is not doubled; two coordinators on one
 * database take turns (the function's advisory lock).
 */
#ifndef ESC_COORD_RET_H
#define ESC_COORD_RET_H

typedef struct coord coord;

/* Default and bounds of --retention-s (0 = off). */
#define COORD_RET_S_DEFAULT 3600
#define COORD_RET_S_MAX 604800

/* Starts the schedule on c's loop (nothing when c->cfg.retention_s is 0).
 * Returns 0 or an ESC_E* code. */
int coord_ret_start(coord *c);
/* Closes the timer and the connection (from coord_stop). */
void coord_ret_close(coord *c);
/* Frees what start allocated (from coord_fini). */
void coord_ret_free(coord *c);

#endif
