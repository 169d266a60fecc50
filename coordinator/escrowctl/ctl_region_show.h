/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_show.h - what the global items look like across the regions,
 * from the view every region's database gives (ctl_region_view.h):
 *
 *   quota show [TENANT [ITEM]]  per global item and region: quota, counters,
 *                               quota sent and not yet confirmed, floor
 *   status --global             each region's status, then a table per
 *                               global item
 *
 * and the table and JSON figures check --global prints too.
 */
#ifndef CTL_REGION_SHOW_H
#define CTL_REGION_SHOW_H

#include <stdio.h>

#include "ctl_json.h"
#include "ctl_opts.h"
#include "ctl_region_set.h"
#include "ctl_region_view.h"

/* quota show; set loaded, a and out borrowed. Returns 0 or an ESC_E* code
 * after a sentence on stderr. */
int ctl_region_show_quota(ctl_region_set *set, const ctl_args *a, FILE *out);
/* status --global: each region's status (its own snapshot), then the global
 * table. Returns 0 or an ESC_E* code after a sentence on stderr. */
int ctl_region_show_status(ctl_region_set *set, const ctl_args *a, FILE *out);

/* One line per global item: quotas, sold, held, available, in flight,
 * global_total, ok / VIOLATED / CANNOT-JUDGE. */
void ctl_region_show_table(const ctl_region_view *v, FILE *out);
/* An item's global figures as JSON keys of the open object. */
void ctl_region_show_totals(ctl_json *j, const ctl_region_view_item *it);

#endif
