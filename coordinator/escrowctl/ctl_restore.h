/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_restore.h - the two database steps of a restore (docs/backup.md),
 * run against the restored database before any daemon starts:
 *
 *   escrowctl restore fence      moves every segment's hold sequence 2^32
 *                                numbers on, so no hold id the lost database
 *                                gave out after the backup is given again;
 *                                refused while a coordinator's lease on this
 *                                database is live (a daemon is running).
 *   escrowctl restore xid-epoch  prints the transaction-id epoch a cluster
 *                                restored from pg_dump needs (pg_resetwal -e),
 *                                so new feed events sort after restored ones.
 */
#ifndef CTL_RESTORE_H
#define CTL_RESTORE_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn, a, out borrowed. Return 0, ESC_ECONFLICT (a coordinator leads this
 * database now: nothing changed), ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_restore_fence(PGconn *conn, const ctl_args *a, FILE *out);

/* conn, a, out borrowed. Prints the epoch E (and how to apply it). Return 0,
 * ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_restore_xid_epoch(PGconn *conn, const ctl_args *a, FILE *out);

#endif
