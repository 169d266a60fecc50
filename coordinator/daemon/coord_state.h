/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_state.h - escrow-coordinator's state: the configuration and struct
 * coord, which every module of the daemon receives. Data only: each module's
 * functions are in its own header (coord.h lists them), and the fields below
 * are grouped by the module that writes them. Types only, so every module can
 * include it without depending on any other module.
 */
#ifndef ESC_COORD_STATE_H
#define ESC_COORD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "auth_route.h"
#include "coord_cat.h"
#include "coord_change.h"
#include "esc_limits.h"
#include "nnx.h"
#include "pgx.h"
#include "wire.h"

typedef struct coord coord;

/* Statements waiting for the connection; over it, work is refused or
 * postponed (each holds its parameters, up to a few KiB). */
#define COORD_JOBS_MAX 4096

/* A catalog read finished: ok false when one of its statements failed. */
typedef void (*coord_db_reload_cb)(coord *c, bool ok);

/* The queue and the catalog read's state (c->db). The flags below the queue
 * are read by the other modules; only coord_db.c writes them, but for
 * xfer_changes, which coord_xfer.c bumps. */
typedef struct coord_db {
    pgx_conn conn;
    uv_timer_t reconnect_timer;
    uint32_t reconnect_ms;
    struct coord_job *head, *tail; /* owned: the FIFO */
    size_t njobs;
    bool running; /* the head statement is on the connection */
    coord_db_reload_cb reload_cb;
    void (*refused_cb)(coord *c); /* the schema is not one to run on */
    bool reload_running;          /* a catalog read is queued or running */
    bool reload_again;            /* another one was asked for meanwhile */
    bool last_read_ok;            /* the last full catalog read succeeded */
    bool need_reconcile;          /* a write's outcome is unknown: re-read before trusting memory */
    uint64_t reads_started;       /* full catalog reads queued, ever */
    uint64_t reads_done;          /* full catalog reads finished, ever */
    uint64_t xfer_changes;        /* bumped on every transfer change a heartbeat made */
    uint64_t unknown_count;       /* writes whose outcome is unknown, ever */
    bool schema_ok;               /* this connection found a schema the coordinator runs on */
    bool schema_noted;            /* a schema one version ahead was logged */
    bool refresh_again;           /* a read from the mark was asked for meanwhile */
    coord_change change;          /* the mark of the reads (coord_change.h) */
    int64_t last_full_us;         /* monotonic: when the last full catalog read was queued */
    bool counts_running;          /* a read of segment counters is queued (coord_counts.c) */
} coord_db;

/* Bytes of a coordinator's name in the leader lease (host name and first
 * --listen endpoint). */
#define COORD_LEADER_ID_MAX 320

/* The leader lease's state (c->lead); only coord_leader.c writes it. */
typedef struct coord_lead {
    uv_timer_t timer;             /* acquire (standby) or renew (leader) */
    char id[COORD_LEADER_ID_MAX]; /* this coordinator's name in coord_leader.holder */
    uint64_t epoch;               /* 0 = not leading */
    int64_t valid_until_us;       /* monotonic: the lease holds by this clock until then */
    int64_t sent_us;              /* monotonic: when the statement in flight was queued */
    int64_t standby_since_us;     /* monotonic: when this coordinator started waiting */
    bool busy;                    /* an acquire or renewal is queued or running */
    bool lapsed;                  /* serving paused: the lease ran out by this clock */
    bool deposed;                 /* another coordinator leads: stopping, exit status 3 */
    bool standby_noted;           /* COORD-STANDBY was logged */
    void (*lead_cb)(coord *c);    /* the lease was taken: start leading */
} coord_lead;

/* The routing's state (c->route). */
typedef struct coord_route {
    int pub;                /* PUB socket; -1 = not open */
    uint64_t version_floor; /* route versions never go below this (wall clock, us) */
    size_t cursor;          /* the route tick's round robin over the items */
    wire_route scratch;     /* large: kept off the stack */
    /* --auth on: one update sealed for one key (auth_route.h) */
    unsigned char sealed[ESC_FRAME_BYTES_MAX + AUTH_ROUTE_OVERHEAD];
    uint64_t sealed_n; /* updates sealed and published (one per key) */
} coord_route;

/* The waiting requests (c->admin). */
typedef struct coord_admin {
    struct coord_admin_req *deferred; /* owned: retried every tick */
    size_t ndeferred;
    struct coord_admin_req *after_reload; /* owned: decided when the catalog read finishes */
} coord_admin;

#define COORD_LISTEN_MAX 4
/* Ownership moves made only to even out the nodes' loads, per tick. */
#define COORD_BALANCE_MOVES_MAX 4
/* The tick's safety sweep: every item's placement and published
 * assignment are looked at at least this often even when no change marked
 * them (coord_dirty.h); the marked ones at the next tick. */
#define COORD_SWEEP_MS 10000
/* The nodes' loads are compared (O(segments)) this often while nothing
 * changes, at once when a node changed, and at every tick while segments
 * move to even them out. */
#define COORD_BALANCE_CHECK_MS 10000
/* Segments one ownership write changes (a large catalog is placed in few
 * writes; after each one the coordinator reads the rows it changed). */
#define COORD_GRANT_MAX 8192

typedef struct coord_config {
    const char *dsn;                      /* borrowed */
    const char *listen[COORD_LISTEN_MAX]; /* borrowed */
    int nlisten;
    const char *publish; /* borrowed */
    uint32_t lease_ms;
    uint32_t leader_lease_ms; /* the region's leader lease (coord_leader.h) */
    uint32_t heartbeat_ms;
    uint32_t rebalance_ms;
    uint32_t collapse_pct;
    uint32_t low_water_pct;
    uint32_t catalog_poll_ms;
    const char *metrics;             /* borrowed: --metrics address; NULL = off (coord_metrics.h) */
    bool metrics_labels;             /* --metrics-labels on: series may name tenants and items */
    uint32_t check_ms;               /* invariant monitor period (coord_mon.h) */
    uint32_t check_sweep_ms;         /* every item checked at least this often */
    uint32_t retention_s;            /* retention run period, 0 = off (coord_ret.h) */
    const struct region_cfg *region; /* borrowed: --config; NULL = no regions (coord_region.h) */
    /* --auth on: every request needs a valid signature (coord_auth.h),
     * within auth_window_ms (0 = the default); routes are published sealed
     * per key (coord_route.c); cluster_key (borrowed) is the cluster key's
     * text, or NULL */
    bool auth;
    const char *cluster_key;
    const char *cluster_key_prev; /* borrowed: a previous cluster key, accepted too; NULL = none */
    uint32_t auth_window_ms;
    /* the connection guard's caps (conn_guard.h): per peer address (0 = no
     * cap) and seconds without a byte (0 = never) */
    uint32_t conn_per_peer, conn_idle_s;
} coord_config;

struct coord {
    uv_loop_t *loop; /* borrowed */
    coord_config cfg;
    coord_cat cat;
    int sock; /* raw REP */
    nnx_watch watch;
    uv_timer_t tick_timer;      /* leases, placement, deferred admin: every heartbeat_ms / 2 */
    uv_timer_t rebalance_timer; /* policy passes */
    uv_timer_t route_timer;     /* route changes every 100 ms, all routes every second */
    uv_timer_t poll_timer;      /* catalog re-read */
    int handles_open;           /* every module counts its handles here until they closed */
    bool stopping;
    bool loaded;        /* the first catalog read completed: READY */
    bool grant_busy;    /* an ownership write is in flight (coord_place.c) */
    int64_t place_balance_us; /* monotonic: the loads' last check (coord_place.c); 0 = due */
    int64_t started_us;
    /* monotonic: the tick's last run; a late one is a stall of the loop (coord_lease.h) */
    int64_t last_tick_us;
    coord_db db;          /* the statement queue and the catalog read (coord_db.c) */
    coord_route route;    /* routing tables (coord_route.c) */
    coord_admin admin;    /* admin requests waiting (coord_admin.c) */
    coord_lead lead;      /* the leader lease (coord_leader.c) */
    bool leading_started; /* sockets and timers opened: this coordinator led */
    /* scratch for encoding replies and routes (large: kept off the stack) */
    wire_hb_reply hb_scratch;
    unsigned char frame[ESC_FRAME_BYTES_MAX];
    /* counters for the STOP line */
    uint64_t n_heartbeats, n_routes, n_admin, n_grants, n_xfers_planned, n_xfers_done;
    struct coord_metrics *metrics; /* owned (coord_metrics.c); NULL when --metrics is off */
    struct coord_mon *mon;         /* owned: the invariant monitor (coord_mon.c) */
    struct coord_ret *ret;         /* owned: the retention schedule (coord_ret.c) */
    struct coord_region *region;   /* owned: peers and quota (coord_region.c); NULL = none */
    struct auth_guard *auth;       /* owned: credentials (coord_auth.c) */
    int exit_code;
};

#endif
