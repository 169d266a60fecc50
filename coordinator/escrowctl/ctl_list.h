/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_list.h - `escrowctl holds` and `escrowctl events`: row listings.
 *
 * holds: one tenant's holds of a buyer (optionally of one item), or one hold
 * by id. events: one tenant's outbox rows in event order, for paging with
 * --after. Both print at most a->limit rows (bounded by CTL_LIST_ROWS_MAX);
 * times are ISO-8601 UTC with milliseconds.
 */
#ifndef CTL_LIST_H
#define CTL_LIST_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn and out are borrowed. Returns 0, ESC_ENOT_FOUND for --hold with no
 * such hold of that tenant, ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_list_holds(PGconn *conn, const ctl_args *a, FILE *out);
/* conn and out are borrowed. Returns 0, ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_list_events(PGconn *conn, const ctl_args *a, FILE *out);

#endif
