/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_check.h - `escrowctl check --global`: each region's own check
 * (conservation, counters against holds), then per global item the global
 * invariant of migration 0008 (quotas + units in flight = global_total),
 * from one snapshot per region (ctl_region_view.h explains why that is
 * exact). A region the view needs but no --config names makes the verdict
 * CANNOT-JUDGE.
 */
#ifndef CTL_REGION_CHECK_H
#define CTL_REGION_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_opts.h"
#include "ctl_region_set.h"

/* set loaded; a and out borrowed. Returns 0 with *violated (the verdict), or
 * ESC_EUNAVAILABLE when it cannot judge (a region cannot be read or is
 * missing: exit 2), or another ESC_E* code after a sentence on stderr. */
int ctl_region_check(ctl_region_set *set, const ctl_args *a, FILE *out, bool *violated);

#endif
