/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_create.h - `escrowctl item create TENANT ITEM --global`: the
 * item in every region's database, its total split into regional quotas
 * (by each file's [quota] share, ctl_quota_split, or --quota), with a
 * global_items row, one transaction per region.
 */
#ifndef CTL_REGION_CREATE_H
#define CTL_REGION_CREATE_H

#include <stdio.h>

#include "ctl_opts.h"
#include "ctl_region_set.h"

/* set loaded (not yet connected), a and out borrowed. Returns 0 or an ESC_E*
 * code (ESC_ECONFLICT: a region has the item otherwise; nothing written)
 * after a sentence on stderr. */
int ctl_region_create(ctl_region_set *set, const ctl_args *a, FILE *out);

#endif
