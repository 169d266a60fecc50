/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_fair.h - fairness between tenants at a segment node: each tenant's
 * request rate (a token bucket per tenant) and its cap of live holds on this
 * node (seg_tenant.live_holds_max, enforced by the segment core).
 *
 * On by default (NODE_FAIR_RATE_DEFAULT, NODE_FAIR_LIVE_HOLDS_DEFAULT; the
 * node's --rate-tenant and --live-holds-tenant change the defaults), and
 * per tenant with `escrowctl tenant limits` (the tenants table's rate_per_s,
 * rate_burst and live_holds_max, NULL = the node's default), re-read every
 * NODE_FAIR_RELOAD_MS on a connection of its own: a change reaches every
 * node within about a second. Over either limit the answer is ESC_EBUSY, a
 * retryable answer: nothing was decided.
 *
 * Tenants without a row of their own share one table of buckets at the
 * default rate (ratelim.h: fixed size, never grows); tenants with their own
 * rate have their own bucket (as many as rows, read from the database).
 */
#ifndef ESC_NODE_FAIR_H
#define ESC_NODE_FAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "esc_limits.h"
#include "pgx.h"
#include "ratelim.h"
#include "seg_core.h"

/* Requests per second per tenant on one node, and its burst: generous for
 * one shop (the demo and the integration tests run under it), below what
 * one node answers (docs/performance.md: about 27,000 durable holds/s and
 * 100,000 "no"/s on 2 cores), so one tenant alone cannot take a node. A
 * benchmark of one tenant's peak sets its own (escrowctl tenant limits). */
#define NODE_FAIR_RATE_DEFAULT 20000u
#define NODE_FAIR_BURST_DEFAULT 40000u
/* Live holds per tenant on one node: a quarter of the node's table
 * (ESC_LIVE_HOLDS_MAX), so one tenant cannot fill it alone. */
#define NODE_FAIR_LIVE_HOLDS_DEFAULT (ESC_LIVE_HOLDS_MAX / 4u)
#define NODE_FAIR_RELOAD_MS 1000u
/* Tenants with limits of their own that one node keeps (rows read). */
#define NODE_FAIR_TENANTS_MAX 65536u

typedef struct node_fair_config {
    const char *dsn;         /* borrowed */
    uint32_t rate, burst;    /* defaults; rate 0 = no rate limit by default */
    uint32_t live_holds_max; /* default; 0 = no cap but the node's */
} node_fair_config;

typedef struct node_fair_tenant {
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    bool own_rate; /* rate_per_s set: its own bucket */
    uint32_t rate, burst;
    int64_t tokens_u, last_us; /* its bucket: millionths of a token, last refill */
    bool own_holds;
    uint32_t live_holds_max;
} node_fair_tenant;

typedef struct node_fair {
    node_fair_config cfg;
    seg_core *core;         /* borrowed: whose tenants' caps are set */
    ratelim shared;         /* owned: the default buckets */
    uint64_t seed;          /* random per process: bucket sets cannot be aimed at */
    node_fair_tenant *rows; /* owned, sorted by tenant_id */
    size_t nrows;
    pgx_conn conn;    /* embedded */
    uv_timer_t timer; /* embedded: periodic reload */
    bool conn_open, timer_open, loading, loaded;
    int closing;
    void (*close_done)(void *arg);
    void *close_arg;
    uint64_t refused_rate, reloads, reload_failures;
} node_fair;

/* Starts f on loop (cfg borrowed during the call, core borrowed for f's
 * life): the default buckets, the caps of core's tenants, the connection
 * and its reload timer. Returns 0, ESC_ENOMEM or ESC_EINTERNAL. */
int node_fair_start(node_fair *f, uv_loop_t *loop, seg_core *core, const node_fair_config *cfg);
/* A tenant request (tenant_id borrowed): true if its bucket had a token;
 * false with a sentence in why (why_len bytes). */
bool node_fair_admit(node_fair *f, const char *tenant_id, int64_t now_us, char *why,
                     size_t why_len);
/* The rate that applies to tenant_id (requests/s; 0 = none). */
uint32_t node_fair_rate(const node_fair *f, const char *tenant_id);
/* Sets every tenant's live-hold cap in the core from the rows read (or the
 * default): after a reload and after segments were loaded. */
void node_fair_apply(node_fair *f);
/* New defaults (a reload): the rate, burst and live-hold cap of every
 * tenant without its own. Returns 0, or ESC_ENOMEM (nothing changed). */
int node_fair_set_defaults(node_fair *f, uint32_t rate, uint32_t burst, uint32_t live_holds_max);
/* Closes the connection and the timer; true if done(arg) will run once they
 * closed, false if nothing was open. */
bool node_fair_close(node_fair *f, void (*done)(void *arg), void *arg);
void node_fair_fini(node_fair *f);

#endif
