/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_migrate.h - `escrowctl migrate`: brings the schema up to date.
 *
 * Applies each embedded migration (common/schema/schema.h) that schema_migrations does
 * not list, each in its own transaction together with its schema_migrations
 * row, under a transaction-scoped advisory lock: two migrates at once are
 * safe (the second waits, then finds the work done). Idempotent.
 */
#ifndef CTL_MIGRATE_H
#define CTL_MIGRATE_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* The advisory lock key: "escrow" as a big-endian integer. */
#define CTL_MIGRATE_LOCK_KEY "111546264088439"

/* conn and out are borrowed. Returns 0, ESC_EDB / ESC_EUNAVAILABLE (the
 * failing migration is rolled back, earlier ones stay), or ESC_ECONFLICT when
 * the database lists a version under another name. */
int ctl_migrate(PGconn *conn, const ctl_args *a, FILE *out);

#endif
