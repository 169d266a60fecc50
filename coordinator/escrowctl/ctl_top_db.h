/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_db.h - `escrowctl top`'s reads from PostgreSQL: one page of the
 * items that match a filter, with their segments, in one REPEATABLE READ
 * snapshot (so the segment rows add up to the item rows).
 *
 * Sized for a catalog of 100,000 items: the filter and the page are applied
 * by PostgreSQL (ORDER BY tenant, item with OFFSET and LIMIT over the items'
 * primary key), and only the page's segments and open transfers are read.
 * Counting the matches reads the items table once per sample.
 */
#ifndef CTL_TOP_DB_H
#define CTL_TOP_DB_H

#include <stdint.h>

#include <libpq-fe.h>

#include "ctl_top_filter.h"
#include "ctl_top_snap.h"

/* Opens top's connection to dsn (borrowed): ctl_db_open, then JIT off for
 * the session (compiling a plan costs a second or more; top's statements
 * run in milliseconds but over 100,000 items their estimates would call
 * for it). Returns 0 and *out, or ESC_EUNAVAILABLE / ESC_EDB (reported). */
int ctl_top_db_open(const char *dsn, PGconn **out);

/* Reads the items matching f (borrowed) from position offset (0-based),
 * at most limit (1..CTL_TOP_LIMIT_MAX) of them, their segments and the
 * nodes into *out (zeroed first; the caller frees it with
 * ctl_top_snap_free, also after a failure). The owners' counters and the
 * rates are left empty. Returns 0, ESC_EDB, ESC_EUNAVAILABLE (reported on
 * stderr) or ESC_ENOMEM. */
int ctl_top_db_sample(PGconn *conn, const ctl_top_filter *f, int64_t offset, int limit,
                      ctl_top_snap *out);

#endif
