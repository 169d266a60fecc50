/*
 * coord.h - escrow-coordinator: placement with leases and epochs, transfers,
 * the tail-stock policy, routing tables and administration, on one libuv
 * loop.
 *
 * Sockets: one raw REP socket (nnx) for heartbeats (WIRE_OP_HEARTBEAT),
 * routing requests (WIRE_OP_ROUTE) and administration (WIRE_OP_ADMIN); one
 * PUB socket for routing updates. Storage: one asynchronous libpq
 * connection (pgx) and a FIFO of statements (coord_db.c); every change of
 * ownership, state or stock is a conditional write, applied to the
 * in-memory catalog (coord_cat.h) only when it committed. Policy:
 * coord_policy.h, pure.
 *
 * Modules: coord.c (lifecycle, sockets, timers, heartbeats, routes),
 * coord_place.c (leases, placement, epochs), coord_xfer.c (transfers and
 * the policy passes), coord_admin.c (AdminReq), coord_db.c (the statement
 * queue and catalog reads).
 */
#ifndef ESC_COORD_H
#define ESC_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <uv.h>

#include "coord_cat.h"
#include "nnx.h"
#include "pgx.h"
#include "wire.h"

#define COORD_LISTEN_MAX 4
/* Statements waiting for the connection; over it, work is refused or
 * postponed (each holds its parameters, up to a few KiB). */
#define COORD_JOBS_MAX 4096
/* Admin requests waiting for their item to be free. */
#define COORD_DEFERRED_MAX 256
/* How long an admin request may wait for its item. */
#define COORD_DEFER_MS_MAX 3000
/* Ownership moves made only to even out the nodes' loads, per tick. */
#define COORD_BALANCE_MOVES_MAX 4
/* Segments one ownership write changes. */
#define COORD_GRANT_MAX 1024

typedef struct coord_config {
    const char *dsn;                      /* borrowed */
    const char *listen[COORD_LISTEN_MAX]; /* borrowed */
    int nlisten;
    const char *publish; /* borrowed */
    uint32_t lease_ms;
    uint32_t heartbeat_ms;
    uint32_t rebalance_ms;
    uint32_t collapse_pct;
    uint32_t low_water_pct;
    uint32_t catalog_poll_ms;
    bool failpoint_exit_after_sent;  /* ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1 */
    const char *metrics;             /* borrowed: --metrics address; NULL = off (coord_metrics.h) */
    uint32_t check_ms;               /* invariant monitor period (coord_mon.h) */
    const struct region_cfg *region; /* borrowed: --config; NULL = no regions (coord_region.h) */
    /* --auth on: every request needs a valid key (coord_auth.h); cluster_key
     * (borrowed) is the cluster key's text, or NULL */
    bool auth;
    const char *cluster_key;
} coord_config;

typedef struct coord_job coord_job;
typedef struct coord coord;
/* res: the statement's result (NULL on error); err->code 0 on success. */
typedef void (*coord_job_cb)(coord *c, PGresult *res, const pgx_err *err, void *arg);

typedef struct coord_admin_req {
    struct coord_admin_req *next;
    nnx_hdr hdr;
    wire_request req;
    int64_t deadline_us;
    bool reloaded;      /* an unknown item/node triggered one catalog reload already */
    uint64_t wait_read; /* answered once this catalog read completed */
} coord_admin_req;

struct coord {
    uv_loop_t *loop; /* borrowed */
    coord_config cfg;
    coord_cat cat;
    int sock; /* raw REP */
    int pub;  /* PUB */
    nnx_watch watch;
    pgx_conn db;
    uv_timer_t tick_timer;      /* leases, placement, deferred admin: every heartbeat_ms / 2 */
    uv_timer_t rebalance_timer; /* policy passes */
    uv_timer_t route_timer;     /* route changes every 100 ms, all routes every second */
    uv_timer_t poll_timer;      /* catalog re-read */
    uv_timer_t reconnect_timer;
    uv_signal_t sig_int, sig_term;
    int handles_open;
    bool stopping;
    bool loaded;         /* the first catalog read completed: READY */
    bool reload_running; /* a catalog read is queued or running */
    bool reload_again;   /* another one was asked for meanwhile */
    bool need_reconcile; /* a write's outcome is unknown: re-read before trusting memory */
    bool grant_busy;     /* an ownership write is in flight */
    bool failpoint_fired;
    bool last_read_ok;
    uint64_t reads_started, reads_done;
    uint64_t xfer_changes;  /* bumped on every transfer change a heartbeat made */
    uint64_t unknown_count; /* writes whose outcome is unknown, ever */
    int64_t started_us;
    int64_t last_pub_all_us;
    uint64_t version_floor; /* route versions never go below this (wall clock, us) */
    uint32_t reconnect_ms;
    /* the statement queue */
    coord_job *job_head, *job_tail;
    size_t njobs;
    bool job_running;
    /* admin requests waiting for a catalog read or a busy item */
    coord_admin_req *deferred;
    size_t ndeferred;
    coord_admin_req *after_reload; /* answered when the running read finishes */
    /* scratch for encoding (large: kept off the stack) */
    wire_hb_reply hb_scratch;
    wire_route route_scratch;
    unsigned char frame[ESC_FRAME_BYTES_MAX];
    /* counters for the STOP line */
    uint64_t n_heartbeats, n_routes, n_admin, n_grants, n_xfers_planned, n_xfers_done;
    struct coord_metrics *metrics; /* owned (coord_metrics.c); NULL when --metrics is off */
    struct coord_mon *mon;         /* owned: the invariant monitor (coord_mon.c) */
    struct coord_region *region;   /* owned: peers and quota (coord_region.c); NULL = none */
    struct auth_guard *auth;       /* owned: credentials (coord_auth.c) */
    int exit_code;
};

/* Starts the coordinator on loop: sockets, timers, the database connection
 * and the first catalog read (COORD-READY is logged when it completes).
 * Returns 0 or an ESC_E* code (then coord_fini and exit). */
int coord_start(coord *c, uv_loop_t *loop, const coord_config *cfg);
/* Begins a clean stop (also on SIGINT/SIGTERM): the loop ends once every
 * handle closed. */
void coord_stop(coord *c);
/* Frees what coord_start allocated; after uv_run returned. */
void coord_fini(coord *c);

/* ---- internal, shared by the coord_*.c modules ---- */

/* Queues a statement (values are copied). Returns 0, or ESC_EBUSY when the
 * queue is full (cb is never called then). */
int coord_db_push(coord *c, const char *sql, int nparams, const char *const *values,
                  coord_job_cb cb, void *arg);
void coord_db_open(coord *c);
void coord_db_close(coord *c);
/* Queues a full catalog read (items, segments, nodes, open transfers);
 * coalesced with one already queued. */
void coord_reload(coord *c);
/* Called by coord_db.c when a catalog read completed (ok = false: failed). */
void coord_reload_done(coord *c, bool ok);
/* A write's outcome is unknown (connection lost): re-read the catalog. */
void coord_db_unknown(coord *c);

/* coord_place.c */
void coord_place_tick(coord *c);
void coord_node_heartbeat(coord *c, const wire_heartbeat *hb, coord_node **out);
void coord_node_write(coord *c, coord_node *n, bool force);

/* coord_xfer.c */
void coord_xfer_results(coord *c, const wire_heartbeat *hb);
void coord_xfer_tick(coord *c);
/* Runs the policy for the item; returns the transfers planned, or -1 when
 * the item is busy (a write in flight) and the pass was postponed. */
int coord_policy_pass(coord *c, coord_item *it, bool force_collapse);
/* WIRE_ADMIN_COLLAPSE: collapses now; r is answered (and freed) there. */
void coord_xfer_collapse_now(coord *c, coord_item *it, coord_admin_req *r);
/* Tells the failpoint a transfer reached 'sent'. */
void coord_xfer_sent(coord *c, const coord_xfer *x);

/* coord_admin.c */
void coord_admin_handle(coord *c, coord_admin_req *r);
void coord_admin_tick(coord *c);

/* coord.c */
void coord_send_reply(coord *c, const nnx_hdr *hdr, const wire_reply *rep);
void coord_reply(coord *c, const nnx_hdr *hdr, uint64_t corr_id, int status, const char *msg);
void coord_route_changed(coord *c, coord_item *it);
void coord_bump_version(coord *c, coord_item *it);

#endif
