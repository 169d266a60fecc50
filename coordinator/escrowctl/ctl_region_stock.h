/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_stock.h - `escrowctl item restock|reduce TENANT ITEM QTY
 * --global [--region R] [--via V] [--op-id ID]`: one request to the
 * coordinator of the region that carries the operation out: the item's
 * first region (global_items.regions, the same in every region's database),
 * or V when that one is down. A restock goes to region R, else where demand
 * or the [quota] shares say. The operation id (made up and printed when not
 * given) makes a retry safe: the carrying region answers a known id with
 * the first outcome and changes nothing. A given id is first looked up in
 * every other region's database (global_ops), so a retry through another
 * region (another --via) is answered from there and nothing is sent; when
 * one of those databases does not answer, nothing is sent either.
 */
#ifndef CTL_REGION_STOCK_H
#define CTL_REGION_STOCK_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_opts.h"
#include "ctl_region_set.h"

/* set loaded; a and out borrowed. Returns 0, or the coordinator's error with
 * *refused set, or ESC_EINVAL (no such region or item), ESC_ETIMEDOUT (no
 * answer: the outcome is unknown) or another ESC_E* code, each after a
 * sentence on stderr. */
int ctl_region_stock(ctl_region_set *set, const ctl_args *a, FILE *out, bool *refused);

#endif
