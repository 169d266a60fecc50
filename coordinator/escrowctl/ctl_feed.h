/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_feed.h - `escrowctl events --follow` and `escrowctl consumers`: the
 * event feed (coordinator/feed/include/escrow_feed.h) from the command line.
 *
 * events --follow is a consumer like any other: it prints each batch, flushes
 * stdout, and only then commits the cursor (process, then commit), so a
 * follower killed at any point resumes after the last batch it fully wrote;
 * what it prints again is at most the batch that was being written. SIGINT
 * and SIGTERM end it cleanly (exit 0) between batches.
 */
#ifndef CTL_FEED_H
#define CTL_FEED_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* Follows a->tenant as consumer a->consumer until SIGINT/SIGTERM; opens its
 * own connection (a->dsn). out is borrowed. Returns 0 when stopped by a
 * signal; ESC_EINVAL, ESC_ENOT_FOUND (--after names no final event),
 * ESC_ECONFLICT (the consumer has another item filter), ESC_EUNAVAILABLE
 * (cannot connect at start), ESC_EIO (stdout failed), ESC_EDB, ESC_ENOMEM. */
int ctl_feed_follow(const ctl_args *a, FILE *out);

/* Lists a->tenant's consumers with their cursor and lag. conn and out are
 * borrowed. Returns 0, ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_feed_consumers(PGconn *conn, const ctl_args *a, FILE *out);

#endif
