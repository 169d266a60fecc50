/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_db.h - the node's PostgreSQL connections (pgx.h, on the loop): one
 * per commit stream (node_commit.h), carrying only the group commit (its
 * statement prepared), and query_conn for the lookups and segment loads.
 * Each commit connection checks the schema before its first commit. A
 * lost connection is reconnected after NODE_DB_RECONNECT_MS; when one
 * comes (back) up, its user carries on: its stream reconciles or sends,
 * the query queue starts its next query.
 */
#ifndef ESC_NODE_DB_H
#define ESC_NODE_DB_H

#include "node.h"

/* Starts connecting them all (asynchronously). Returns 0 or an ESC_E* code. */
int node_db_open(node *n);
/* Closes the connections and the reconnect timer (counted in
 * n->handles_open until their close callbacks ran). */
void node_db_close(node *n);

#endif
