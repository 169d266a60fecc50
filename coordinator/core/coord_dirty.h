/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_dirty.h - the coordinator's work lists: for each kind of work a
 * timer does on items (placement, assignment publication, route checks,
 * policy passes), the items that changed since it last ran. No I/O.
 *
 * An item is marked for a kind (a flag in the item, and its pointer on the
 * list once while the flag is set); the timer takes the list, which clears
 * the flags: an item marked again while the timer works on it is on the
 * next list. An unmarked item (coord_dirty_unmark: its work was done
 * another way) stays on the list but is skipped when the list is taken.
 * So a timer's work grows with what changed, not with the catalog; a
 * round-robin sweep (coord_dirty_sweep) marks a slice of every item per
 * run, so that a change nobody marked is still seen within one sweep.
 */
#ifndef ESC_COORD_DIRTY_H
#define ESC_COORD_DIRTY_H

#include <stdbool.h>
#include <stddef.h>

struct coord_item;

typedef enum coord_work {
    COORD_WORK_PLACE = 0, /* its segments may need an owner (coord_place.c) */
    COORD_WORK_ASSIGN,    /* its segments' published assignment (coord_asg.h) */
    COORD_WORK_ROUTE,     /* its route may differ (coord_route.c) */
    COORD_WORK_POLICY,    /* what the policy reads changed: a pass at the next rebalance */
    COORD_WORK_MONITOR,   /* its books may have moved: the invariant monitor checks it
                           * (coord_mon.h); marked with every POLICY mark */
    COORD_WORK_PASS,      /* a pass at the next tick */
    COORD_WORK_COUNTS,    /* an owner reported other counters: the poll reads its segment
                           * rows' counters (coord_counts.h) */
    COORD_WORK_KINDS
} coord_work;

/* An item's flag for a kind of work. */
typedef bool *(*coord_dirty_flag_fn)(struct coord_item *it, int kind);

/* One kind's list. */
typedef struct coord_dirty {
    struct coord_item **v; /* borrowed items; owned array */
    size_t n, cap;
    struct coord_item **taken; /* the last list taken (owned array) */
    size_t ntaken, taken_cap;
    size_t cursor; /* the sweep's round robin */
    int kind;      /* coord_work: passed to flag_of */
    unsigned long marks, sweeps; /* counters, for tests and figures */
} coord_dirty;

void coord_dirty_fini(coord_dirty *d);
/* Marks it (flag is its flag for this kind); a no-op when it is marked. */
void coord_dirty_mark(coord_dirty *d, bool *flag, struct coord_item *it);
/* The marked items, each once, their flags cleared; the array is valid
 * until the next take of this list. flag_of returns an item's flag for d->kind. */
struct coord_item **coord_dirty_take(coord_dirty *d, coord_dirty_flag_fn flag_of,
                                     size_t *n);
/* Marks k items of all[0..n) from the cursor on, in round robin. */
void coord_dirty_sweep(coord_dirty *d, struct coord_item *const *all, size_t n, size_t k,
                       coord_dirty_flag_fn flag_of);

#endif
