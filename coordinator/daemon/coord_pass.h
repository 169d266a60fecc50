/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_pass.h - policy passes: decide, then write. A pass snapshots one
 * item from the catalog (coord_cat_snapshot), asks the pure policy
 * (coord_policy_plan) what to do, and queues the writes: the transfers it
 * planned (INSERT ... 'planned'; restocks from unallocated go out 'sent' with
 * unallocated -= q), or the collapse of the item into one tail segment. The
 * catalog changes when a write committed. A pass waits (returns -1, and runs
 * at the next tick) while the item has a write in flight or the coordinator
 * is reconciling.
 */
#ifndef ESC_COORD_PASS_H
#define ESC_COORD_PASS_H

#include "coord_cat.h"

typedef struct coord coord;

/* A collapse that was asked for finished: status 0 or ESC_E*, msg (borrowed)
 * says what happened. */
typedef void (*coord_pass_cb)(coord *c, int status, const char *msg, void *arg);

/* Runs a pass for the item now. Returns the transfers planned, or -1 when
 * the item is busy (a write in flight) and the pass was postponed. */
int coord_pass_run(coord *c, coord_item *it);
/* Every coordinator tick: the passes that were asked for (COORD_WORK_PASS). */
void coord_pass_tick(coord *c);

/* WIRE_ADMIN_COLLAPSE: a pass that collapses whatever is left. Returns 0 when
 * the collapse was queued (cb runs exactly once, when it committed or
 * failed); ESC_EBUSY when the item is busy or the coordinator reconciles;
 * ESC_ECONFLICT when no active segment is served by a live node, so there
 * is no tail (the pass ran without collapsing). cb never runs on an error. */
int coord_pass_collapse(coord *c, coord_item *it, coord_pass_cb cb, void *arg);

/* The rebalance timer: a pass for every item whose demand or stock changed
 * (COORD_WORK_POLICY) and for the next slice of the rest, so that every
 * item gets one at least every COORD_PASS_SWEEP_MS (demand decays with time
 * alone), or, in a catalog of more than COORD_PASS_SWEEP_PER_S * 5 items,
 * every nitems / COORD_PASS_SWEEP_PER_S seconds. An idle catalog costs one
 * slice per run, not every item. */
#define COORD_PASS_SWEEP_MS 5000
#define COORD_PASS_SWEEP_PER_S 2000
void coord_pass_rebalance(coord *c);

#endif
