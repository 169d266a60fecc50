/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_periodic.h - a background job of the coordinator: a timer and a
 * libpq connection of its own (the invariant monitor, coord_mon.h; the
 * retention schedule, coord_ret.h).
 *
 * Every period the timer calls the job's tick, unless the job's statement
 * from an earlier tick is still in flight (busy) or the job is closing; a
 * connection that is down is reopened instead (the tick comes again one
 * period later). The tick starts its statement on p->db and returns true
 * when it did; the job's result callback clears p->busy when its work (one
 * statement or a chain) is done. A lost connection clears busy too: its
 * statement was failed already.
 */
#ifndef ESC_COORD_PERIODIC_H
#define ESC_COORD_PERIODIC_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "pgx.h"

typedef struct coord coord;
typedef struct coord_periodic coord_periodic;

struct coord_periodic {
    coord *c; /* borrowed */
    pgx_conn db;
    uv_timer_t timer;
    bool busy;    /* the job's work is in flight */
    bool closing; /* coord_periodic_close ran */
    /* Starts the job's statement; returns true when it is in flight. */
    bool (*tick)(coord_periodic *p);
    /* The connection came up or went down (optional, NULL). */
    void (*db_state)(coord_periodic *p, bool up);
};

/* Opens p->db (application name NAME) and starts the timer: the first tick
 * after first_ms, then every period_ms. p->tick (and p->db_state) are set by
 * the caller before. Returns 0 or an ESC_E* code; on failure
 * coord_periodic_close still releases what was made. */
int coord_periodic_start(coord *c, coord_periodic *p, const char *name, uint64_t first_ms,
                         uint64_t period_ms);
/* Closes the timer and the connection (from coord_stop); c->handles_open
 * counts them until their close callbacks ran. */
void coord_periodic_close(coord_periodic *p);

#endif
