/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_metrics.c - see gw_metrics.h.
 */
#include "gw_metrics.h"

#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"

static const unsigned statuses[GW_METRICS_STATUSES] = {200, 201, 400, 401, 403, 404, 405, 409, 410,
                                                       413, 422, 429, 500, 502, 503, 504, 431, 408};
static const double latency_bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                        0.1,    0.2,   0.5,   1,     2,    5,    10};

static metrics_family *fam(gw_metrics *m, metrics_type t, const char *name, const char *help,
                           const char *const *labels)
{
    bool h = t == METRICS_HISTOGRAM;
    metrics_family *f =
        metrics_family_add(m->reg, t, name, help, labels, h ? latency_bounds : NULL,
                           h ? sizeof latency_bounds / sizeof latency_bounds[0] : 0);
    ESC_ASSERT(f != NULL); /* literal names: a failure is a programmer error */
    return f;
}

int gw_metrics_open(gw_metrics *m, const char *addr)
{
    memset(m, 0, sizeof *m);
    int rc = metrics_registry_new(&m->reg);
    if (rc != 0) {
        return rc;
    }
    static const char *const route_status[] = {"route", "status", NULL};
    static const char *const route[] = {"route", NULL};
    m->requests = fam(m, METRICS_COUNTER, "escrow_gateway_requests_total",
                      "HTTP requests answered, by endpoint and status.", route_status);
    metrics_family *lat = fam(m, METRICS_HISTOGRAM, "escrow_gateway_request_seconds",
                              "Time from a request's arrival to its answer, by endpoint.", route);
    metrics_family *rep = fam(m, METRICS_COUNTER, "escrow_gateway_replays_total",
                              "Answers that replayed an earlier request's outcome "
                              "(Idempotent-Replayed: true), by endpoint.",
                              route);
    for (int k = 0; k < GW_ROUTE_COUNT_; k++) {
        m->latency[k] = metrics_get1(lat, gw_route_name((gw_route_kind)k));
        m->replays[k] = metrics_get1(rep, gw_route_name((gw_route_kind)k));
    }
    m->rate_limited =
        metrics_get0(fam(m, METRICS_COUNTER, "escrow_gateway_rate_limited_total",
                         "Requests refused by the per-tenant rate limit (429).", NULL));
    m->auth_refused = metrics_get0(fam(m, METRICS_COUNTER, "escrow_gateway_auth_refused_total",
                                       "Requests refused for their credential (401, 403).", NULL));
    m->inflight = metrics_get0(fam(m, METRICS_GAUGE, "escrow_gateway_inflight",
                                   "Requests waiting for the cluster or the database.", NULL));
    m->connections = metrics_get0(
        fam(m, METRICS_GAUGE, "escrow_gateway_connections", "Open HTTP connections.", NULL));
    m->streams = metrics_get0(
        fam(m, METRICS_GAUGE, "escrow_gateway_streams", "Open event streams (SSE).", NULL));
    m->clients = metrics_get0(fam(m, METRICS_GAUGE, "escrow_gateway_clients",
                                  "Cluster clients (one per tenant key in use).", NULL));
    return addr != NULL ? daemon_metrics_start(m->reg, addr, &m->http, "GW-METRICS") : 0;
}

void gw_metrics_close(gw_metrics *m)
{
    metrics_http_stop(m->http);
    m->http = NULL;
    metrics_registry_free(m->reg);
    m->reg = NULL;
}

void gw_metrics_request(gw_metrics *m, gw_route_kind route, unsigned http, double seconds,
                        bool replay)
{
    if (m->reg == NULL || route < 0 || route >= GW_ROUTE_COUNT_) {
        return;
    }
    size_t i = 0;
    while (i < GW_METRICS_STATUSES && statuses[i] != http) {
        i++;
    }
    if (m->req[route][i] == NULL) {
        char code[16];
        snprintf(code, sizeof code, "%u", http);
        m->req[route][i] = metrics_get2(m->requests, gw_route_name(route),
                                        i < GW_METRICS_STATUSES ? code : "other");
    }
    metrics_inc(m->req[route][i]);
    metrics_observe(m->latency[route], seconds);
    if (replay) {
        metrics_inc(m->replays[route]);
    }
}
