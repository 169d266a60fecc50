/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_load.h - getting segments into memory.
 *
 * Static mode: at start, synchronously (the loop is not running yet), the
 * node claims the segments whose row names it, raising their epochs, and
 * loads them with their items and holds (seg_store_take_ownership).
 *
 * Managed mode: an assigned segment that is not served is loaded on
 * query_conn, before any lookup: the segment and item rows at exactly the
 * assigned epoch and node, then the live and recently ended holds. It is
 * served once loaded, if it is still assigned at that epoch; a dropped
 * segment is only taken again at a higher epoch. State that does not add
 * up (seg_core_check) is refused: the segment is dropped again.
 */
#ifndef ESC_NODE_LOAD_H
#define ESC_NODE_LOAD_H

#include "node.h"

/* Static mode: claims and loads this node's segments. Returns 0, or an
 * ESC_E* code after logging why. */
int node_load_owned(node *n);

/* Managed mode: allocates and frees the loading state. */
void node_load_init(node *n);
void node_load_fini(node *n);
/* The newest assignment of segment_id (n->hb.assign), or NULL. */
const wire_assignment *node_load_assignment(const node *n, uint64_t segment_id);
/* True if a is a segment not served here that may be loaded now. */
bool node_load_wanted(node *n, const wire_assignment *a);
/* The assignment changed: notes whether a load is wanted and, if so,
 * asks the query connection for its turn. */
void node_load_assignment_changed(node *n);
/* Starts loading the wanted segments on query_conn (the query_first
 * upcall). Returns true if a load started. */
bool node_load_next(node *n);

#endif
