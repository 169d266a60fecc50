/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_retention.h - `escrowctl retention show` and `escrowctl retention
 * run`: the day partitions of holds and outbox (rows, size on disk, day)
 * with what a retention run would do to each and why, and the run itself
 * (escrow_retention_plan / escrow_retention_run in the database; the rules
 * are in docs/retention.md).
 */
#ifndef CTL_RETENTION_H
#define CTL_RETENTION_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn, a, out borrowed; run: drop what the plan marks 'drop'. Return 0,
 * ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_retention(PGconn *conn, const ctl_args *a, FILE *out, bool run);

#endif
