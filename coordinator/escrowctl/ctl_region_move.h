/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_move.h - `escrowctl quota move TENANT ITEM QTY --from R --to R`:
 * one WIRE_QUOTA_MOVE to the donor region's coordinator (its --config names
 * it; --coordinator stands for it when there is one region), which sends
 * the units to the peer as they become free and answers with what it sent.
 */
#ifndef CTL_REGION_MOVE_H
#define CTL_REGION_MOVE_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_opts.h"
#include "ctl_region_set.h"

/* set loaded; a and out borrowed. Returns 0, or the coordinator's error with
 * *refused set, or ESC_EINVAL (no such region or peer), ESC_ETIMEDOUT (no
 * answer) or another ESC_E* code, each after a sentence on stderr. */
int ctl_region_move(ctl_region_set *set, const ctl_args *a, FILE *out, bool *refused);

#endif
