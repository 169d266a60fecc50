/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node.h - the segment node: one libuv loop that reads requests from a raw
 * REP socket, lets seg_core decide, group-commits decisions to PostgreSQL
 * through escrow_commit_batch(), and answers only after COMMIT.
 *
 * Batches: one "filling" batch collects ops; each commit stream (its own
 * connection) commits one batch at a time, made of the filling batch's ops
 * on segments no other stream is committing (node_commit.h); when a batch
 * completes, what waited for its segments is sent.
 * A failed batch is undone in memory and its requests are decided again
 * (bounded); a batch whose COMMIT outcome is unknown (connection lost) is
 * reconciled before anyone is answered: the old backend is terminated, then
 * segments.last_batch tells whether it committed. A batch refused by the
 * epoch fence drops the fenced segments: the node answers FENCED for them
 * from then on and acknowledges nothing more.
 *
 * A resolve (a reserve frame with resolve set, sent by a client that must
 * answer "no" after a copy of its reserve went unanswered) is decided by
 * seg_core like a retry, voiding the client's attempt; when the key has no
 * hold in memory the query connection looks it up by key in the database.
 *
 * Two modes. Static (no coordinator): at start the node claims the segments
 * whose segments.node_id names it, raising their epochs. Managed
 * (cfg.coordinator set): the node claims nothing; it heartbeats the
 * coordinator and serves exactly the segments the newest reply assigns it,
 * loading each one asynchronously at the assigned epoch and dropping the
 * ones no longer assigned; it executes the coordinator's transfer commands
 * (GIVE, RECEIVE) inside its group commit and reports their results in the
 * following heartbeats until a reply acknowledges them.
 *
 * The node's files, one job each; each calls only files below it here:
 *   node.c          life cycle: start, stop, the sweep timer, the end of a stop
 *   node_net.c      the REP socket: reading with back-pressure, credentials,
 *                   rate limits, deciding each request and routing the decision
 *   node_assign.c   managed mode: heartbeats and the assignment they bring
 *   node_db.c       the PostgreSQL connections (commit streams, query) and
 *                   their reconnects
 *   node_load.c     segments into memory: claimed at start, or assigned
 *   node_lookup.c   the query connection's queue: holds not in memory
 *   node_commit.c   group commit: batches, streams, outcomes, reconciliation,
 *                   fencing
 *   node_admit.c    fair batch admission: each tenant's slots in the filling
 *                   batch while tenants share the node, its waiting requests
 *   node_xfer.c     managed mode: the transfers in batches and being reported
 *   node_reply.c    every answer: holds, statuses, stats
 *   node_req.c      requests that wait
 *   node_metrics.c  Prometheus; seg_store.c the SQL (array literals: pg_array.h)
 * What a lower file must tell a higher one goes through the four upcalls
 * of struct node (set once by node_start), never through a call upwards.
 */
#ifndef ESC_NODE_H
#define ESC_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "auth_guard.h"
#include "node_admit.h"
#include "node_fair.h"
#include "nnx.h"
#include "pgx.h"
#include "ratelim.h"
#include "pg_array.h"
#include "seg_core.h"
#include "seg_delta.h"
#include "seg_store.h"
#include "hb_sync.h"
#include "wire.h"

#define NODE_LISTEN_MAX 8

typedef struct node_batch {
    seg_op *ops; /* owned, cap ESC_BATCH_ROWS_MAX + ESC_SWEEP_ROWS_MAX */
    size_t n;
    uint64_t batch_id;
} node_batch;

/* At most this many commit streams per node; by default NODE_STREAMS_DEFAULT. */
#define NODE_STREAMS_MAX 8
#define NODE_STREAMS_DEFAULT 2

/* A commit stream (node_commit.c): a PostgreSQL connection of its own and
 * the batch committing on it. Streams commit at the same time, never on the
 * same segment: a batch takes the filling batch's ops of the segments no
 * other stream is committing (seg_segment.committing), so each segment's
 * ops still commit one batch after the other, in order. */
typedef struct node_stream {
    struct node *n; /* borrowed: the node it belongs to */
    pgx_conn conn;
    node_batch batch; /* committing while busy */
    bool busy;        /* batch was sent and is not settled yet */
    bool unknown;     /* connection lost during the commit: reconcile first */
    bool reconciling;
    bool fence_suspect; /* batch failed as a stale owner's does */
    bool schema_ok;     /* this connection found a schema the node runs on */
    int backend_pid;    /* of the connection batch was sent on */
    int64_t start_us;
    pg_array params[SEG_COMMIT_NPARAMS]; /* text parameters of the commit call */
    seg_delta *deltas;                   /* owned: the segments batch writes (committing) */
    size_t ndeltas;
    bool *rejected;   /* owned scratch: reserves the database refused */
    int64_t *present; /* owned scratch: hold ids found by a reconcile */
} node_stream;

typedef struct node_config {
    const char *node_id;                 /* borrowed */
    const char *coordinator;             /* borrowed; NULL = static mode */
    const char *advertise;               /* borrowed; endpoint clients use (default listen[0]) */
    uint64_t incarnation;                /* managed: random per process */
    const char *dsn;                     /* borrowed */
    const char *listen[NODE_LISTEN_MAX]; /* borrowed */
    int nlisten;
    uint32_t sweep_ms;   /* expiry sweeper period */
    const char *metrics; /* borrowed: --metrics address (node_metrics.h); NULL = off */
    /* Credentials (auth_guard.h): auth on = every request needs a valid
     * signature, made within auth_window_ms (0 = the default) of this
     * node's clock; cluster_key (borrowed, the key's text or NULL) is what
     * internal requests must be signed with. */
    bool auth;
    const char *cluster_key;
    const char *cluster_key_prev; /* borrowed: a previous cluster key, accepted too; NULL = none */
    uint32_t auth_window_ms;
    /* Token buckets (ratelim.h), 0 = off: requests per second per tenant,
     * reserves per second per (tenant, buyer); bursts 0 = one second's worth.
     * The tenant's, and its cap of live holds, are defaults (node_fair.h). */
    uint32_t rate_tenant, rate_tenant_burst;
    uint32_t rate_buyer, rate_buyer_burst;
    uint32_t live_holds_tenant;
    /* Fair batch admission (node_admit.h, seg_share.h): each tenant's
     * decisions per batch while several write, between fair_slots_min and
     * fair_slots_max, halved by a commit slower than fair_slack_pct % of the
     * node's recent fastest. */
    uint32_t fair_slots_min, fair_slots_max, fair_slack_pct;
    /* Client connections (conn_guard.h): per peer address, and the seconds
     * one may stay without sending a byte; 0 = no cap / no timeout. */
    uint32_t conn_per_peer, conn_idle_s;
    /* Commit streams (node_commit.h), 1..NODE_STREAMS_MAX; 0 = the default. */
    uint32_t commit_streams;
} node_config;

/* A transfer this node executes: in a batch, or done and reported in every
 * heartbeat until a reply to one of those heartbeats acknowledges it. */
typedef struct node_xfer {
    uint64_t transfer_id;
    bool done;
    uint32_t outcome;       /* WIRE_XFER_* once done (0 while in the batch) */
    int64_t qty;            /* units moved */
    uint64_t included_corr; /* first heartbeat that carried the result; 0 = none yet */
} node_xfer;

/* A segment being loaded (managed mode), read from its segment row. */
typedef struct node_load_row {
    seg_item item;
    seg_segment seg;
} node_load_row;

/* Loading assigned segments (managed mode, node_load.c). */
typedef struct node_loading {
    node_load_row *rows; /* owned: the segment rows of the load in progress */
    size_t nrows;
    bool wanted;  /* an assigned segment is not served yet */
    bool busy;    /* a load's queries are running on query_conn */
    size_t from;  /* where the searches for wanted segments start (node_load.c) */
    size_t asked; /* segments the load in progress asked for */
    pg_array ids, epochs;
} node_loading;

/* Heartbeat client state and the newest assignment (managed mode). */
typedef struct node_hb {
    int sock; /* raw REQ to the coordinator, -1 when closed */
    nnx_eids eid;
    nnx_watch watch;
    uv_timer_t timer;      /* every heartbeat_ms */
    uv_timer_t soon_timer; /* an early heartbeat, at most one per NODE_HB_MIN_GAP_MS */
    uv_timer_t stop_timer; /* the last (stopping) heartbeat waits this long for its reply */
    uint32_t heartbeat_ms;
    uint64_t corr;         /* of the last heartbeat sent */
    uint64_t applied_corr; /* of the newest reply applied */
    int64_t last_sent_ms, last_reply_ms, last_reconnect_ms;
    wire_heartbeat *msg;     /* owned scratch */
    wire_hb_reply *reply;    /* owned scratch */
    unsigned char *buf;      /* owned, ESC_FRAME_BYTES_MAX */
    hb_assign_set assign;    /* the newest complete assignment, sorted */
    hb_assign_set staging;   /* a full assignment being received in parts */
    uint64_t assign_version; /* of assign (0 = none: ask for it all) */
    uint64_t full_version;   /* of staging (0 = none in progress) */
    uint64_t full_cursor;    /* where the next part of staging starts */
    uint64_t coord_inc;      /* the coordinator process these versions come from */
    hb_sync sync;            /* what the coordinator acknowledged of our figures */
    uint64_t bytes_sent;     /* heartbeat bytes, for the figures */
    bool more;               /* the last heartbeat left changes for the next one */
    /* the next reply applies the assignment even if it changes nothing: a
     * drop was put off, or a load finished since (node_assign.c) */
    bool apply_again;
    bool stop_sent, stop_done;
    uint64_t stop_corr;
} node_hb;

typedef struct node_stats {
    uint64_t requests, reserves_ok, confirms, releases, expiries, extends;
    uint64_t rejected_sold_out, rejected_try_later, rejected_segment_empty, rejected_other;
    uint64_t batches, batch_rows, batch_failures, fenced_segments;
    uint64_t heartbeats, hb_replies, segments_loaded, segments_dropped, transfers_done;
    int64_t commit_us_total, commit_us_max;
    uint64_t batch_rows_max; /* largest batch committed */
} node_stats;

/* The way back up: what a lower file tells a higher one (see the list in
 * this file's header). Set once by node_start; the managed-mode ones are
 * NULL in static mode. */
typedef struct node_upcalls {
    /* node_net.c: decide r again (parked on a hold that settled, or its
     * batch failed); r is transferred. */
    void (*redecide)(node *n, node_req *r);
    /* node.c: something finished (a batch was sent or settled, a query or
     * a load ended, the coordinator heard "stopping"): reading resumes if
     * the filling batch has room; a stop completes once nothing is left. */
    void (*progress)(node *n);
    /* node_assign.c: a transfer result is ready: heartbeat soon. */
    void (*report_soon)(node *n);
    /* node_load.c: the query connection is free: start a wanted segment
     * load before any lookup; true if one started. */
    bool (*query_first)(node *n);
} node_upcalls;

struct node {
    uv_loop_t *loop; /* borrowed */
    node_config cfg;
    node_upcalls up;
    seg_core core;
    int sock;
    nnx_watch watch;
    bool reading;
    node_stream streams[NODE_STREAMS_MAX]; /* the first cfg.commit_streams are used */
    int nstreams;
    pgx_conn query_conn;
    node_batch filling_batch; /* storage of filling */
    node_batch *filling;      /* decided ops waiting for a stream */
    uint64_t next_batch_id;
    bool seq_due; /* sweep tick: send hold id ranges, ops or not */
    bool fencing; /* a fenced batch's segments are being dropped: no batch is sent */
    node_req *lookups_head, *lookups_tail; /* waiting for query_conn */
    bool query_busy;                       /* a lookup or a load runs on query_conn */
    uv_timer_t sweep_timer;
    uv_timer_t reconnect_timer;
    bool stopping;
    int handles_open;
    size_t pending_reqs;
    node_stats stats;
    struct node_metrics *metrics; /* owned (node_metrics.c); NULL when --metrics is off */
    bool managed;
    node_hb hb;
    node_loading load;
    node_xfer xfers[ESC_HB_TRANSFERS_MAX];
    size_t nxfers;
    auth_guard auth;       /* checks every request before it is decoded */
    node_fair fair;        /* per tenant: rate, live holds (after auth) */
    node_admit admit;      /* per tenant: slots in the filling batch, waiting requests */
    ratelim rl_buyer;      /* per (tenant, buyer), reserves */
    uint64_t rl_seed;      /* random per process: bucket sets cannot be aimed at */
    uint64_t rate_limited; /* requests refused by a bucket */
    bool schema_ok;        /* every commit connection found a schema this node runs on */
    bool schema_noted;     /* a schema one version ahead was logged */
    int exit_code;         /* 1 after a refused schema, else 0 */
};

/* Loads ownership synchronously, then opens sockets and connections on
 * loop. Returns 0, or an ESC_E* code after logging why. */
int node_start(node *n, uv_loop_t *loop, const node_config *cfg);
/* True when the node can serve: both database connections up, the schema
 * checked, and in managed mode the coordinator answering and every
 * assigned segment loaded; else false with the reason in why (cap bytes).
 * For /readyz (daemon.h). */
bool node_ready(const node *n, char *why, size_t cap);
/* Begins a clean shutdown: stop reading, finish batches, close handles. */
void node_stop(node *n);
/* Frees what node_start allocated, after uv_run returned. */
void node_fini(node *n);

#endif
