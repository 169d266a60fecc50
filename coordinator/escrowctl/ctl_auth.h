/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_auth.h - escrowctl's credential commands and its admin credential.
 *
 * Commands (straight to the database, like item create): tenant create,
 * key create / list / revoke, admin-key create, cluster-key create. Keys
 * come from auth.h: shown once on stdout, stored only as hashes in the
 * credentials table (migration 0009). The admin key escrowctl sends with
 * its operations (admin requests, quota moves, operator release) comes
 * from --credential FILE or $ESCROW_ADMIN_KEY.
 */
#ifndef CTL_AUTH_H
#define CTL_AUTH_H

#include <stdbool.h>
#include <stdio.h>

/* Removes --credential FILE (or --credential=FILE) from argv (argc
 * adjusted, argv[0] must already be skipped) and makes that key, else
 * $ESCROW_ADMIN_KEY, the credential of every frame escrowctl sends.
 * Returns 0, or -1 after a sentence on stderr. */
int ctl_auth_credential(int *argc, char **argv);
/* True if argv (argv[0] skipped) is one of the commands above. */
bool ctl_auth_is_cmd(int argc, char **argv);
/* Runs it; returns an exit code (CTL_EXIT_*, ctl_exit.h). */
int ctl_auth_run(int argc, char **argv, FILE *out);
/* Their lines of `escrowctl --help`. */
void ctl_auth_usage(FILE *f);

#endif
