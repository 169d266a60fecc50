/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_item.h - `escrowctl item create`: a new item and its segments.
 *
 * One transaction: the tenant and the node rows if missing, the item with
 * every unit allocated (unallocated = 0), and K segments seg_no 0..K-1 at
 * epoch 0 whose available counters add up to the total
 * (ctl_num_split). An item that already exists changes nothing.
 */
#ifndef CTL_ITEM_H
#define CTL_ITEM_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn and out are borrowed; a->spec was validated by ctl_opts_parse.
 * Returns 0, ESC_ECONFLICT (the item exists), ESC_EINVAL (unknown region),
 * ESC_EDB or ESC_EUNAVAILABLE; on any error nothing was changed. */
int ctl_item_create(PGconn *conn, const ctl_args *a, FILE *out);

/* The same rows (tenant, node, item, segments) inside the caller's open
 * transaction, printing nothing but errors (item create --global: one
 * transaction per region with its global_items row). conn borrowed.
 * Returns 0 and *segs (owned by the caller: PQclear; segment_id, seg_no,
 * available per row), or the errors above; the caller rolls back. */
int ctl_item_insert(PGconn *conn, const ctl_item_spec *s, PGresult **segs);

#endif
