/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_import.h - `escrowctl item import FILE`: many items at once, from CSV
 * or JSON lines (ctl_import_parse.h), FILE "-" for stdin.
 *
 * Three steps:
 *   1. the whole file is read and validated (every line, and no item twice
 *      in the file); any error: the errors with their line numbers, nothing
 *      written, exit 2;
 *   2. the rows go to a temporary table in one COPY and are compared with
 *      the items that exist: an existing item with other values (total,
 *      segments, limits, ttl) is a conflict: its line is named, nothing is
 *      written, exit 1; an existing identical item is "unchanged";
 *   3. the new items are written with their segments (unassigned: the
 *      coordinator places them; split as item create splits), one
 *      transaction per chunk of --chunk rows (default CTL_IMPORT_CHUNK).
 * A conflict that appears while writing (someone created the same item
 * between steps 2 and 3) rolls back that chunk and stops; the chunks before
 * it stay committed, and re-running the same file completes the import
 * (what exists is counted unchanged). On a terminal (stderr) a progress line
 * is redrawn after each chunk; the summary goes to stdout:
 *   "import: 100000 rows: 100000 created, 0 unchanged, 0 failed in 12.3 s"
 */
#ifndef CTL_IMPORT_H
#define CTL_IMPORT_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* a->import_path, a->import_format, a->import_chunk, a->spec.region;
 * conn and out borrowed. Returns 0, ESC_EINVAL (a bad line or file: nothing
 * written), ESC_ECONFLICT, ESC_EIO, ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_import(PGconn *conn, const ctl_args *a, FILE *out);

#endif
