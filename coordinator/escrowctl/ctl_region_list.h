/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_list.h - `escrowctl regions`: each region of the --config
 * files, reachable or not (the command shows, it does not refuse): its
 * database and region_self, its coordinator (does it answer, and as which
 * region?), its peers, its quota transfers and receipts.
 */
#ifndef CTL_REGION_LIST_H
#define CTL_REGION_LIST_H

#include <stdio.h>

#include "ctl_opts.h"
#include "ctl_region_set.h"

/* How long `regions` waits for each coordinator's status answer, at most
 * (--timeout-ms when it is shorter): a live coordinator answers on loopback
 * in well under a millisecond. */
#define CTL_REGION_PROBE_MS_MAX 1000

/* set loaded; a and out borrowed. Returns 0. */
int ctl_region_list(ctl_region_set *set, const ctl_args *a, FILE *out);

#endif
