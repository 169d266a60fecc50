/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_check.h - `escrowctl check`: the invariants of docs/guarantees.md, in SQL.
 *
 * From one REPEATABLE READ snapshot: every item whose conservation row is
 * not ok (available + held + sold + in flight + unallocated != total, or held
 * + sold > total), every segment whose counters disagree with its holds
 * (segment_holds_agree) or has a negative counter. Each violation is printed
 * (up to CTL_CHECK_PRINT_MAX per kind; all are counted), then the verdict as
 * the last line: "conservation=ok" or
 * "conservation=VIOLATED items=N segments=M".
 */
#ifndef CTL_CHECK_H
#define CTL_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn and out are borrowed. Returns 0 and *violated (the verdict), or
 * ESC_EDB / ESC_EUNAVAILABLE when the check could not run. */
int ctl_check(PGconn *conn, const ctl_args *a, FILE *out, bool *violated);

/* The same checks in the caller's open transaction (check --global: one
 * REPEATABLE READ snapshot per region for its local and global reads).
 * Prints the human report to out (NULL: nothing). Returns 0 and the two
 * violation counts, or ESC_EDB / ESC_EUNAVAILABLE. */
int ctl_check_tx(PGconn *conn, FILE *out, int64_t *items_violated, int64_t *segments_violated);

#endif
