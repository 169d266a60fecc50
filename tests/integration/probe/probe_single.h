/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_single.h - esc_probe's blocking sub-commands: one call through
 * libescrow's blocking API, its answer as the output. They exit 0 whatever
 * the node answered: the script asserts on the line.
 *
 *   reserve | confirm | release | extend | get    one call
 *   cart --item "a:2,b:1" --key CART              one all-or-nothing cart
 *   reserve-each --item PREFIX --n N --key K      one reserve (qty 1, key
 *       K-i) on each of the items PREFIX1 .. PREFIXN, one after the other;
 *       prints "reserved=R of=N" and a line for each refusal
 */
#ifndef ESC_PROBE_SINGLE_H
#define ESC_PROBE_SINGLE_H

#include "probe_args.h"

/* args->cmd names the call: reserve, confirm, release, extend or get. */
int probe_single(const probe_args *args);
int probe_cart(const probe_args *args);
int probe_reserve_each(const probe_args *args);

#endif
