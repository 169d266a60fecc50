/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw.h - the escrow-gateway daemon: its parts and their life cycle, as
 * daemon.h's skeleton runs it (start on the loop, a clean stop at the
 * first SIGTERM, fini after the loop ended).
 *
 *   gw_http     libmicrohttpd on the loop: connections, requests, answers
 *   gw_api      what each endpoint does (credentials, rate limit, libescrow)
 *   gw_events   the event feed as Server-Sent Events, cursor commits
 *   gw_clients  one libescrow client per tenant key in use
 *   auth_guard  the key table (common/auth_guard.h)
 *   gw_metrics  --metrics
 *
 * A clean stop: no new connections (the listening socket is closed), open
 * connections get Connection: close, event streams end, every request
 * already in flight is answered (libescrow's deadline bounds that); then
 * libmicrohttpd stops, the clients and the key table close, and the loop
 * ends. An answer counts once libmicrohttpd wrote its last byte. If
 * in-flight requests are still waiting GW_DRAIN_EXTRA_MS after the call
 * deadline, the clients are closed and those requests answered 503 closed
 * (retry with the same key); requests still not completed
 * GW_DRAIN_EXTRA_MS later (a client that does not read) are cut.
 */
#ifndef ESC_GW_H
#define ESC_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "auth_guard.h"
#include "gw_clients.h"
#include "gw_config.h"
#include "gw_events.h"
#include "gw_http.h"
#include "gw_metrics.h"
#include "ratelim.h"

#define GW_DRAIN_EXTRA_MS 2000
/* Tenants the rate limiter tracks at once (ratelim.h: 24 bytes each). */
#define GW_RATELIM_SLOTS 4096
/* How often the tick checks readiness and a stop's progress. */
#define GW_TICK_MS 20

typedef struct gw {
    uv_loop_t *loop;      /* borrowed */
    const gw_config *cfg; /* borrowed; outlives the daemon */
    gw_metrics metrics;
    gw_http http;
    gw_clients clients;
    auth_guard auth;
    ratelim rate;
    uint64_t rate_seed;
    gw_events events;
    uv_timer_t tick; /* embedded */
    bool tick_open;
    bool ready;    /* the key table was read: GW-READY logged, /readyz 200 */
    bool stopping; /* a stop began */
    bool finishing;
    bool clients_closed;
    int64_t drain_deadline_us;
    int closing; /* parts whose close has not finished */
    int exit_code;
} gw;

/* daemon_ops for daemon_run (cfg is a gw_config). */
int gw_start(void *d, uv_loop_t *loop, const void *cfg);
void gw_stop(void *d);
bool gw_stopping(const void *d);
/* Ready once the key table was read (the /readyz of --metrics, as the
 * API's own); false and the reason in why before. */
bool gw_ready(const void *d, char *why, size_t cap);
void gw_fini(void *d);
int gw_exit_code(const void *d);

#endif
