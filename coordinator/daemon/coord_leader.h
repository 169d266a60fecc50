/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_leader.h - the region's leader lease: of the coordinators that run
 * on one database, one leads; the others stand by.
 *
 * The lease is the one row of coord_leader (migration 0014). A standby
 * tries to take it every leader_lease_ms / 4 with a conditional UPDATE that
 * succeeds only once the lease expired by the database's clock (or names
 * this same coordinator: a restart takes over at once) and bumps the epoch.
 * The leader renews it as often, with UPDATE ... WHERE epoch = its own.
 * Both go ahead of the statement queue (coord_db_push_front).
 *
 * Fencing: every session of the coordinator carries its epoch in the
 * setting escrow.coord_epoch (-1 while it does not lead), set before any
 * other statement of a new connection; the database refuses a write of a
 * session whose epoch is not the row's (ES004). A refused write, or a
 * renewal that finds another epoch, deposes this coordinator: it logs
 * COORD-DEPOSED, answers nothing more and stops with exit status 3 (a
 * service manager restarts it, as a standby).
 *
 * By its own clock the leader serves only while its last renewal is less
 * than a lease old (counted from when the renewal was queued, so never
 * later than the database's expiry): past that (a stalled loop, a database
 * that does not answer) it stops reading its socket and its timers do
 * nothing until a renewal succeeds. The database's fence is the guarantee;
 * this check only keeps a woken old leader from answering from memory.
 */
#ifndef ESC_COORD_LEADER_H
#define ESC_COORD_LEADER_H

#include <stdbool.h>

#include "coord_state.h"

/* The exit status of a deposed coordinator. */
#define COORD_EXIT_DEPOSED 3

/* Starts standing by: tries to take the lease now and then every
 * leader_lease_ms / 4; lead_cb runs once it is taken. Returns 0 or ESC_EIO. */
int coord_leader_start(coord *c, void (*lead_cb)(coord *c));
/* Closes the timer (c->handles_open counts it until it closed). */
void coord_leader_close(coord *c);

/* True while this coordinator leads and its lease holds by its own clock.
 * When it ran out: pauses the socket, renews at once, returns false. */
bool coord_leader_serving(coord *c);
/* True once this coordinator took the lease (and was not deposed). */
bool coord_leader_leads(const coord *c);
/* A new database session: queues its epoch setting ahead of everything. */
void coord_leader_session(coord *c);
/* The database refused a write of this coordinator (ES004): deposed. */
void coord_leader_refused(coord *c, const char *why);

#endif
