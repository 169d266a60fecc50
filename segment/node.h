/*
 * node.h - the segment node: one libuv loop that reads requests from a raw
 * REP socket, lets seg_core decide, group-commits decisions to PostgreSQL
 * through escrow_commit_batch(), and answers only after COMMIT.
 *
 * Batches: one "filling" batch collects ops while at most one "inflight"
 * batch commits; when the inflight one completes, the filling one is sent.
 * A failed batch is undone in memory and its requests are decided again
 * (bounded); a batch whose COMMIT outcome is unknown (connection lost) is
 * reconciled before anyone is answered: the old backend is terminated, then
 * segments.last_batch tells whether it committed. A batch refused by the
 * epoch fence drops the fenced segments: the node answers FENCED for them
 * from then on and acknowledges nothing more.
 */
#ifndef ESC_NODE_H
#define ESC_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "nnx.h"
#include "pgx.h"
#include "sbuf.h"
#include "seg_core.h"
#include "wire.h"

#define NODE_LISTEN_MAX 8

typedef struct node_req node_req;
typedef struct node_touched node_touched;

typedef struct node_batch {
    seg_op *ops; /* owned, cap ESC_BATCH_ROWS_MAX + ESC_SWEEP_ROWS_MAX */
    size_t n;
    uint64_t batch_id;
} node_batch;

typedef struct node_config {
    const char *node_id;                 /* borrowed */
    const char *dsn;                     /* borrowed */
    const char *listen[NODE_LISTEN_MAX]; /* borrowed */
    int nlisten;
    uint32_t sweep_ms; /* expiry sweeper period */
    /* Failpoint for tests: percent of committed batches whose result is
     * thrown away with the connection, as if the network lost the reply
     * after COMMIT ($ESC_FAILPOINT_COMMIT_LOST_PCT). 0 in production. */
    uint32_t failpoint_commit_lost_pct;
} node_config;

typedef struct node_stats {
    uint64_t requests, reserves_ok, confirms, releases, expiries, extends;
    uint64_t rejected_sold_out, rejected_try_later, rejected_segment_empty, rejected_other;
    uint64_t batches, batch_rows, batch_failures, fenced_segments;
    int64_t commit_us_total, commit_us_max;
} node_stats;

typedef struct node {
    uv_loop_t *loop; /* borrowed */
    node_config cfg;
    seg_core core;
    int sock;
    nnx_watch watch;
    bool reading;
    pgx_conn commit_conn;
    pgx_conn query_conn;
    int commit_backend_pid; /* of the connection an inflight batch was sent on */
    node_batch batches[2];
    node_batch *filling;
    node_batch *inflight;
    bool inflight_unknown; /* connection lost during the commit: reconcile first */
    bool reconciling;
    int64_t inflight_start_us;
    uint64_t next_batch_id;
    sbuf params[22];                       /* text parameters of the commit call */
    node_touched *touched;                 /* owned scratch: segments of the batch being built */
    bool *rejected;                        /* owned scratch: reserves the database refused */
    uint64_t *present;                     /* owned scratch: hold ids found by a reconcile */
    node_req *lookups_head, *lookups_tail; /* waiting for query_conn */
    bool lookup_busy;
    uv_timer_t sweep_timer;
    uv_timer_t reconnect_timer;
    uv_signal_t sig_term, sig_int;
    bool stopping;
    int handles_open;
    size_t pending_reqs;
    node_stats stats;
    int exit_code;
} node;

/* Loads ownership synchronously, then opens sockets and connections on
 * loop. Returns 0, or an ESC_E* code after logging why. */
int node_start(node *n, uv_loop_t *loop, const node_config *cfg);
/* Begins a clean shutdown: stop reading, finish batches, close handles. */
void node_stop(node *n);
/* Frees what node_start allocated, after uv_run returned. */
void node_fini(node *n);

#endif
