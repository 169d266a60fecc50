/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_metrics.h - what escrow-coordinator exports to Prometheus
 * (--metrics), and the hooks its modules call where things happen.
 *
 * The registry and HTTP server are common/metrics*.h (the server on its own
 * thread; values are C11 atomics, see metrics.h). Hooks are no-ops when
 * metrics are off. State gauges (nodes, segments, transfers in flight) are
 * sampled from the in-memory catalog at most every COORD_METRICS_SAMPLE_MS,
 * from the coordinator's tick. The invariant monitor (coord_mon.h) adds its
 * own escrow_conservation_* metrics to the same registry.
 *
 * Metrics (prefixed escrow_coord_ unless noted; counters end in _total):
 *   nodes{state}                    up / draining / down (gauge)
 *   lease_expiries_total            nodes that missed their lease
 *   loop_stalls_total               stalls of its own loop that gave every node grace
 *   epoch_changes_total             segments granted with a raised epoch
 *   segments{state}                 active / draining (gauge), and
 *   segments_unserved               segments without a live owner (gauge)
 *   view_gap_units                  |owners' reports - segment rows as last read|
 *                                   summed over segments (gauge: the gap between
 *                                   the routing view and the database view; the
 *                                   rows' counters are read by coord_counts.h)
 *   transfers_in_flight{state}      open transfers: planned / sent (gauge)
 *   transfers_planned_total{reason} rebalance, refill, collapse, forward, restock, ...
 *   transfers_completed_total{reason,outcome}   received / cancelled ("unknown" reason
 *                                   for transfers planned before a restart)
 *   routes_published_total          routing tables published on --publish
 *   collapses_total                 items collapsed into a tail
 *   heartbeats_total                heartbeats answered
 *   admin_requests_total{op,outcome}  escrowctl operations by status name
 *   escrow_db_up{conn="coord"}, escrow_db_disconnects_total, escrow_db_reconnects_total
 */
#ifndef ESC_COORD_METRICS_H
#define ESC_COORD_METRICS_H

#include <stdbool.h>

#include "metrics.h"

typedef struct coord coord;
typedef struct coord_metrics coord_metrics;

#define COORD_METRICS_SAMPLE_MS 100

/* Builds the registry and, when c->cfg.metrics is set, starts the HTTP
 * server. With metrics off it does nothing and returns 0. Returns 0 or an
 * ESC_E* code after logging. */
int coord_metrics_open(coord *c);
/* Stops the server and frees the registry; NULL-safe, idempotent. */
void coord_metrics_free(coord *c);
/* The registry (borrowed), or NULL when metrics are off. */
metrics_registry *coord_metrics_registry(coord *c);

void coord_metrics_lease_expired(coord *c);
void coord_metrics_loop_stall(coord *c);
void coord_metrics_grant(coord *c);
void coord_metrics_xfer_planned(coord *c, const char *reason);
/* reason NULL = unknown. */
void coord_metrics_xfer_completed(coord *c, const char *reason, const char *outcome);
void coord_metrics_route_published(coord *c);
/* A catalog read: "full", "changes" (the rows changed since the last
 * read) or "skipped" (none changed). */
void coord_metrics_catalog_poll(coord *c, const char *read);
/* Rows a catalog read of that kind ("full" or "changes") returned. */
void coord_metrics_catalog_rows(coord *c, const char *read, uint64_t n);
/* A policy pass ran for one item. */
void coord_metrics_policy_pass(coord *c);
void coord_metrics_collapse(coord *c);
void coord_metrics_heartbeat(coord *c);
/* Bytes of one heartbeat (in) or of the reply to it (out). */
void coord_metrics_heartbeat_bytes(coord *c, bool in, size_t bytes);
/* A node was asked for a full segment report. */
void coord_metrics_resync(coord *c);
void coord_metrics_admin(coord *c, unsigned op, int status);
void coord_metrics_db(coord *c, const char *conn, bool up);
/* Samples the catalog gauges if COORD_METRICS_SAMPLE_MS passed. */
void coord_metrics_sample(coord *c);

#endif
