/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_admin.h - escrowctl commands the coordinator carries out: item
 * restock/reduce/pause/resume/retire/split/collapse/rebalance, drain and
 * undrain, and the catalog reload that `item create` asks for.
 *
 * Each is one AdminReq to a->coordinator (ctl_rpc: one round trip, a->timeout_ms).
 * The coordinator's reply is a status and a sentence; the sentence is
 * printed as it is (stdout when it succeeded, stderr when it was refused),
 * or as {"status": NAME, "code": N, "message": ...} with --json.
 */
#ifndef CTL_ADMIN_H
#define CTL_ADMIN_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_opts.h"

/* a and out are borrowed; a->cmd is an admin command (ctl_opts_is_admin).
 * Returns 0 (done), or the coordinator's error with *refused set, or
 * ESC_ETIMEDOUT (no answer in time), ESC_EINVAL / ESC_EIO (cannot reach it);
 * every error was explained on stderr. */
int ctl_admin(const ctl_args *a, FILE *out, bool *refused);

/* Asks the coordinator at a->coordinator to re-read its catalog now. Best
 * effort: a failure is a warning on stderr, never an error (the coordinator
 * re-reads the catalog on its own every catalog-poll interval). Does
 * nothing when a->coordinator is empty. Returns true if it was reloaded. */
bool ctl_admin_reload(const ctl_args *a);

#endif
