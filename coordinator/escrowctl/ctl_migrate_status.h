/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_migrate_status.h - `escrowctl migrate --status`: where the database's
 * schema stands against this escrowctl (schema_version.h), changing
 * nothing: the database's version and this release's, the migrations
 * applied (with when), those pending, those this escrowctl does not know,
 * and whether the daemons of this release run on it.
 *
 * Exit status: 0 when the database is at this release's version, 1 when it
 * is not (*behind: migrations pending, or applied ones this escrowctl does
 * not know), so a script can run `escrowctl migrate --status || escrowctl
 * migrate`.
 */
#ifndef CTL_MIGRATE_STATUS_H
#define CTL_MIGRATE_STATUS_H

#include <stdbool.h>
#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn and out borrowed. Returns 0 (*behind: the database is not at this
 * release's version), or ESC_EDB / ESC_EUNAVAILABLE (reported on stderr). */
int ctl_migrate_status(PGconn *conn, const ctl_args *a, FILE *out, bool *behind);

#endif
