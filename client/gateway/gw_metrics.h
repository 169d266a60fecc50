/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_metrics.h - escrow-gateway's Prometheus metrics (--metrics): requests
 * by endpoint and HTTP status, latency histograms by endpoint, replays,
 * rate-limit and credential refusals, and gauges for the calls in flight
 * to the cluster, open connections, event streams and cluster clients.
 * Served by common/metrics_http on its own thread; the loop only bumps
 * atomic values through handles looked up once.
 */
#ifndef ESC_GW_METRICS_H
#define ESC_GW_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "gw_route.h"
#include "metrics.h"
#include "metrics_http.h"

/* HTTP statuses with a series of their own per endpoint; others count as "other". */
#define GW_METRICS_STATUSES 18

typedef struct gw_metrics {
    metrics_registry *reg; /* owned */
    metrics_http *http;    /* owned; NULL without --metrics */
    metrics_family *requests;
    metrics_series *req[GW_ROUTE_COUNT_][GW_METRICS_STATUSES + 1]; /* looked up on first use */
    metrics_series *latency[GW_ROUTE_COUNT_];
    metrics_series *replays[GW_ROUTE_COUNT_];
    metrics_series *rate_limited, *auth_refused;
    metrics_series *inflight, *connections, *streams, *clients;
} gw_metrics;

/* Registers the families; with addr (not NULL) serves them there. Returns
 * 0 or an ESC_E* code (logged). */
int gw_metrics_open(gw_metrics *m, const char *addr);
/* Stops the server and frees the registry. NULL-safe fields. */
void gw_metrics_close(gw_metrics *m);

/* One answered request: its endpoint, HTTP status, seconds since it
 * arrived, and whether it was a replay. */
void gw_metrics_request(gw_metrics *m, gw_route_kind route, unsigned http, double seconds,
                        bool replay);

#endif
