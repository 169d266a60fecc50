/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region.h - escrowctl's commands over several regions (docs/regions.md), each
 * region named by one INI file (--config, common/region_cfg.h) with its own
 * database and coordinator; there is no shared database.
 *
 *   item create --global   the item in every region's database, its total
 *                          split into regional quotas (ctl_quota.h), with a
 *                          global_items row, one transaction per region
 *   quota show             per global item and region: quota, counters,
 *                          quota sent and not yet confirmed, floor
 *   quota move             WIRE_QUOTA_MOVE to the donor region's coordinator
 *   regions                each region: database, region_self, coordinator
 *                          (answers?), peers, quota transfer counts
 *   status --global        each region's status, then a table per global item
 *   check --global         each region's check, then the global invariant of
 *                          migration 0008 (ctl_region_check.h)
 *
 * Every file is loaded and validated, and every database reached, before
 * anything is written; a region whose region_self names another region is
 * refused. Errors are sentences on stderr naming the region and its file.
 *
 * This module dispatches; each command is its own module (ctl_region_create,
 * ctl_region_show, ctl_region_check, ctl_region_move, ctl_region_list) on the
 * set of regions (ctl_region_set) and their view (ctl_region_view).
 */
#ifndef CTL_REGION_H
#define CTL_REGION_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_opts.h"

/* True for the commands ctl_region_run carries out. */
bool ctl_region_cmd(const ctl_args *a);

/* Runs one of them. a and out borrowed. Returns 0 or an ESC_E* code (every
 * error explained on stderr); *violated for check, *refused when a
 * coordinator answered with an error. check --global's "cannot judge" is
 * ESC_EUNAVAILABLE (exit 2). */
int ctl_region_run(const ctl_args *a, FILE *out, bool *violated, bool *refused);

#endif
