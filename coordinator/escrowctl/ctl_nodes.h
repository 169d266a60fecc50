/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_nodes.h - `escrowctl nodes` and `escrowctl transfers`: what the
 * coordinator wrote about placement and stock in motion, read from the
 * database (one READ ONLY snapshot each).
 *
 * nodes: node id, region, endpoint, state (up / draining / down), the last
 * heartbeat the coordinator recorded, the lease and the segments the node
 * owns. transfers: the open ones (planned, sent) by default, every one with
 * all; newest first, at most a->limit.
 */
#ifndef CTL_NODES_H
#define CTL_NODES_H

#include <stdio.h>

#include <libpq-fe.h>

#include "ctl_opts.h"

/* conn, a, out borrowed. Return 0, ESC_EDB or ESC_EUNAVAILABLE. */
int ctl_nodes(PGconn *conn, const ctl_args *a, FILE *out);
int ctl_nodes_transfers(PGconn *conn, const ctl_args *a, FILE *out);

#endif
