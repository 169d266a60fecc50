/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_lookup.h - the query connection's queue: lookups of holds that are
 * not in memory (a transition of an old hold, a resolve whose key has no
 * hold here), answered from the database in arrival order, one query at a
 * time. Managed mode shares the connection with segment loads, which go
 * first (the query_first upcall): requests for a segment being loaded wait
 * until it is served.
 */
#ifndef ESC_NODE_LOOKUP_H
#define ESC_NODE_LOOKUP_H

#include "node.h"

/* Queues r (transferred) and starts it if the connection is free. */
void node_lookup_enqueue(node *n, node_req *r);
/* The query connection is free or has work: starts the next query, a
 * wanted segment load first, else the oldest lookup. */
void node_lookup_kick(node *n);

#endif
