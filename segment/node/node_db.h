/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_db.h - the node's two PostgreSQL connections (pgx.h, on the loop):
 * commit_conn carries only the group commit (its statement prepared),
 * query_conn the lookups and segment loads. A lost connection is
 * reconnected after NODE_DB_RECONNECT_MS; when one comes (back) up, its
 * user carries on: the commit reconciles or sends, the query queue starts
 * its next query.
 */
#ifndef ESC_NODE_DB_H
#define ESC_NODE_DB_H

#include "node.h"

/* Starts connecting both (asynchronously). Returns 0 or an ESC_E* code. */
int node_db_open(node *n);
/* Closes both connections and the reconnect timer (counted in
 * n->handles_open until their close callbacks ran). */
void node_db_close(node *n);

#endif
