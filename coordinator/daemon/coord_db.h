/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_db.h - the coordinator's statement queue on its one libpq
 * connection, and the catalog read.
 *
 * Statements run one at a time, in the order they were queued (FIFO): a
 * write queued before a read is visible to it. A statement whose connection
 * was lost has an unknown outcome; its owner calls coord_db_unknown and the
 * catalog is read again once the connection is back, before memory is
 * trusted for new decisions (need_reconcile). Queued statements survive a
 * reconnect.
 *
 * A catalog read is a statement that reads its snapshot's xmin, then four
 * (items, nodes, segments, transfers), merged into c->cat as they arrive;
 * when the last one is merged the reload callback given to coord_db_open
 * runs (the daemon logs READY after the first full read and decides the
 * admin requests that waited for one). A full read (coord_db_reload) reads
 * every row (open transfers only); a read from the mark (coord_db_poll)
 * first asks whether any row's cat_xid is at or above the mark
 * (coord_change.h, migration 0018) and, if so, reads those rows only
 * (closed transfers too, which memory drops).
 */
#ifndef ESC_COORD_DB_H
#define ESC_COORD_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <uv.h>

#include "coord_state.h"
#include "pgx.h"

/* A statement's answer: res is its result (NULL on error); err->code is 0 on
 * success. Runs on the loop, once per queued statement, also when the
 * coordinator stops before it was sent (err->code ESC_ECLOSED). */
typedef void (*coord_db_cb)(coord *c, PGresult *res, const pgx_err *err, void *arg);

/* The connection found a schema the coordinator does not run on
 * (schema_version.h; logged): the coordinator must stop. */
typedef void (*coord_db_refused_cb)(coord *c);

/* Opens the connection on c->loop (it connects in the background and
 * reconnects with a backoff) and its reconnect timer; reload_cb runs after
 * every catalog read. Every connection checks the schema version before
 * its first statement; refused_cb runs when it is not one to run on.
 * Returns 0 or ESC_EIO; aborts on out of memory. */
int coord_db_open(coord *c, coord_db_reload_cb reload_cb, coord_db_refused_cb refused_cb);
/* Closes the connection and the timer (c->handles_open counts them until
 * they closed); statements never sent get ESC_ECLOSED. */
void coord_db_close(coord *c);

/* Queues a statement; sql is borrowed (static text), values are copied
 * (NULL entries are SQL NULL). Returns 0 (cb runs exactly once later), or
 * ESC_EBUSY when the queue is full or the coordinator stops (cb never runs). */
int coord_db_push(coord *c, const char *sql, int nparams, const char *const *values, coord_db_cb cb,
                  void *arg);
/* As coord_db_push, but the statement runs next, before every queued one
 * (the one already on the connection finishes first): the leader lease's. */
int coord_db_push_front(coord *c, const char *sql, int nparams, const char *const *values,
                        coord_db_cb cb, void *arg);
/* A write's outcome is unknown (connection lost): re-read the catalog. */
void coord_db_unknown(coord *c);
/* Queues a full catalog read (items, segments, nodes, open transfers);
 * coalesced with one already queued. For when memory may differ from the
 * database in a row nobody changed since (a write that failed, an outcome
 * not known, a belief the database refused). */
void coord_db_reload(coord *c);

/* The catalog poll: a read from the mark (one small query when nothing
 * changed), or a full read when the last full one failed, a write's outcome
 * is unknown, or the last full read is COORD_DB_FULL_READ_MS old (or one
 * poll, when polls are rarer). The full read is the safety net for rows
 * changed with the triggers off or deleted by hand, and it refreshes the
 * segment counters of the database (which change without moving cat_xid):
 * every 5 minutes, so that at 400,000 segments its cost stays well under 1%
 * of a core on both sides. */
#define COORD_DB_FULL_READ_MS 300000
void coord_db_poll(coord *c);

#endif
