/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_metrics.h - what escrow-segment exports to Prometheus (--metrics),
 * and the hooks the node calls where things happen.
 *
 * The registry and its HTTP server are common/metrics*.h: the server runs
 * on its own thread, the hooks below only bump C11 atomics through handles
 * looked up once (per op x status, per state...), so the hot path costs one
 * relaxed atomic add. Every hook is a no-op when metrics are off
 * (n->metrics == NULL).
 *
 * Gauges that describe state rather than events (live holds, units,
 * segments served, database connections up) are sampled from the loop's
 * own data at most every NODE_METRICS_SAMPLE_MS, from the sweeper's timer.
 *
 * Metrics (all prefixed escrow_; counters end in _total):
 *   requests_total{op,status}       every answer sent, by operation and status name
 *   rejections_total{kind}          answers other than OK, by status name
 *   holds_live                      holds in state held (gauge)
 *   holds_created_total             reserves committed
 *   holds_ended_total{state}        converted / cancelled / expired, committed
 *   units{state}                    available / held / sold over served segments (gauge)
 *   batch_rows                      group commit batch size (histogram, rows)
 *   commit_latency_seconds          group commit round trip (histogram)
 *   batches_failed_total            batches the database refused or lost
 *   segments_fenced_total           segments dropped because a newer owner exists
 *   segments_served                 segments served now (gauge)
 *   segments_loaded_total / segments_dropped_total   managed mode
 *   transfers_total{kind,outcome}   GIVE / RECEIVE executed: sent, received, cancelled, stale
 *   db_up{conn}                     commit / query connection usable (gauge 1/0)
 *   db_disconnects_total{conn}, db_reconnects_total{conn}
 *   heartbeats_total{result}        sent / failed (could not be sent) / replied
 */
#ifndef ESC_NODE_METRICS_H
#define ESC_NODE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct node node;
typedef struct node_metrics node_metrics;

/* Sampled gauges are refreshed at most this often (from the sweep timer). */
#define NODE_METRICS_SAMPLE_MS 100

/* Builds the registry and starts the HTTP server on n->cfg.metrics.
 * No-op (0) when it is NULL. Returns 0 or an ESC_E* code after logging. */
int node_metrics_open(node *n);
/* Stops the server and frees everything; NULL-safe, idempotent. */
void node_metrics_free(node *n);

/* An answer left for a request of operation op (WIRE_OP_*; 0 = not decodable). */
void node_metrics_answer(node *n, int op, int status);
/* A batch came back: rows, round trip in microseconds, failed or not. */
void node_metrics_commit(node *n, size_t rows, int64_t us, bool failed);
/* An op of a committed batch (SEG_OP_*). */
void node_metrics_op_committed(node *n, int kind);
void node_metrics_fenced(node *n);
void node_metrics_segment(node *n, bool loaded);
/* A transfer settled: give (true) or receive, outcome name. */
void node_metrics_transfer(node *n, bool give, const char *outcome);
void node_metrics_db(node *n, const char *conn, bool up);
/* result: "sent", "failed" or "replied". */
void node_metrics_heartbeat(node *n, const char *result);
/* Segment i of the core may have new figures (node_assign_take_touched):
 * the unit gauges follow, without a walk over every segment. */
void node_metrics_figures(node *n, size_t i);
/* Samples the state gauges if NODE_METRICS_SAMPLE_MS passed. */
void node_metrics_sample(node *n);

#endif
