/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_view.h - the global items as every region's database sees
 * them: one REPEATABLE READ snapshot per region (no shared database), the
 * quota transfers matched against the receivers' receipts, and the global
 * invariant of migration 0008:
 *
 *   sum over regions of (items.total - items.reduce_pending)
 *     + units in flight = the global total
 *
 * where a unit is in flight when the donor's row is 'sent' or 'received'
 * and the receiver has no 'applied' receipt for (donor, transfer_id), and
 * the global total is the total at creation plus every region's own global
 * changes (migration 0010; each region's global_total less the changes it
 * knows of must give the same total at creation everywhere).
 * Used by `check --global` (verdict), `status --global` (global table) and
 * `quota show` (per region figures). ctl_region_view.c explains why reading
 * the regions one after the other can never make a transfer completing
 * between two reads look like a loss or a double count.
 */
#ifndef CTL_REGION_VIEW_H
#define CTL_REGION_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_region_set.h"

/* Quota transfer rows and receipts read per region: the check holds them
 * all in memory (about 64 bytes each); past this it cannot judge. */
#define CTL_VIEW_ROWS_MAX 1000000
/* Violations and "cannot judge" reasons kept for printing (all counted). */
#define CTL_VIEW_NOTES_MAX CTL_CHECK_PRINT_MAX
#define CTL_VIEW_NOTE_LEN 400

/* One region's figures of one global item. */
typedef struct ctl_region_view_fig {
    bool present;         /* a global_items row in this region */
    const char *regions;  /* its regions, space separated (borrowed from the view) */
    const char *state;    /* items.state */
    int64_t global_total; /* its global_items.global_total */
    int64_t quota;        /* items.total */
    int64_t available, held, sold, unallocated;
    int64_t seg_in_flight;  /* between this region's segments */
    int64_t sent_out;       /* quota_transfers 'sent' (not yet answered) */
    int64_t floor;          /* from the region's file */
    int64_t reduce_pending; /* items.reduce_pending: a global reduce still to take here */
    int64_t own_delta;      /* its own row of global_changes: what its operations changed */
    int64_t known_delta;    /* every row it knows of (its global_total includes them) */
} ctl_region_view_fig;

typedef struct ctl_region_view_item {
    const char *tenant, *item; /* borrowed from the view's results */
    ctl_region_view_fig *fig;  /* one per region, in set order */
    int64_t global_total;      /* at creation + every region's own changes */
    int64_t quotas, available, held, sold;
    int64_t unused;        /* sum of ctl_region_view_unused */
    int64_t pending;       /* sum of the regions' pending reduces */
    int64_t changes;       /* sum of the regions' own changes */
    int64_t in_flight;     /* matched: no applied receipt at the receiver */
    int64_t counted_twice; /* sent after the donor's snapshot, applied before the receiver's */
    bool judged;           /* every region it lists was read */
    bool ok;               /* judged and the invariant holds */
} ctl_region_view_item;

typedef struct ctl_region_view_region {
    PGresult *items, *xfers, *receipts; /* owned */
    int64_t local_items_violated, local_segments_violated;
    int64_t xfers_sent, xfers_received, xfers_refused, receipts_applied;
} ctl_region_view_region;

typedef struct ctl_region_view {
    size_t nregions, nitems;
    ctl_region_view_item *items; /* owned, sorted by tenant then item (bytes) */
    ctl_region_view_fig *figs;   /* owned: nitems * set->n */
    ctl_region_view_region *reg; /* owned: set->n */
    bool more;                   /* more than CTL_STATUS_ITEMS_MAX global items */
    int64_t violations, cannot_judge;
    size_t nnotes;
    struct ctl_region_view_note {
        bool violation; /* else "cannot judge" */
        char text[CTL_VIEW_NOTE_LEN];
    } * notes; /* owned: CTL_VIEW_NOTES_MAX */
} ctl_region_view;

/* What ctl_region_view_read reads besides the global items. */
enum {
    CTL_VIEW_MATCH = 1, /* transfers and receipts: in flight, the verdict */
    CTL_VIEW_CHECK = 2, /* each region's local check (ctl_check_tx) */
};

/* A region's units of the item that are neither held nor sold nor taken
 * by its pending reduce: available, in flight between its segments,
 * unallocated, less the pending reduce. */
int64_t ctl_region_view_unused(const ctl_region_view_fig *f);

/* Reads the view from every region of set (connected; a->tenant / a->item
 * filter). With CTL_VIEW_CHECK and out != NULL (human output), each
 * region's local check is printed under a "== region NAME" header as it
 * runs. Returns 0 and *v (ctl_region_view_free), or ESC_EDB / ESC_EUNAVAILABLE /
 * ESC_ENOMEM after a sentence on stderr. */
int ctl_region_view_read(ctl_region_set *set, const ctl_args *a, int what, FILE *out,
                         ctl_region_view *v);
void ctl_region_view_free(ctl_region_view *v);

/* Counts a violation (or a reason the check cannot judge) and keeps its
 * sentence while there is room. */
void ctl_region_view_note(ctl_region_view *v, bool violation, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
