/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_http.h - serves a metrics registry (metrics.h) over HTTP with
 * libmicrohttpd, for Prometheus to scrape: GET /metrics answers the text
 * exposition format (Content-Type text/plain; version=0.0.4); HEAD works
 * too; other paths are 404, other methods 405.
 *
 * Served with a health (health.h, metrics_http_start_health), the same
 * port answers the probes of a process supervisor or a load balancer:
 * GET /healthz 200 while the daemon's loop turns, 503 once it stalled;
 * GET /readyz 200 when the daemon can do its work, else 503; each with one
 * line of text saying why.
 *
 * The server runs on libmicrohttpd's own internal thread
 * (MHD_USE_INTERNAL_POLLING_THREAD), never on the daemon's libuv loop: a
 * slow or stuck scraper cannot delay a request or a commit. That thread
 * only calls metrics_render(), which is safe against the loop's writes
 * (see metrics.h). At most METRICS_HTTP_CONNECTIONS_MAX connections at a
 * time, each closed after METRICS_HTTP_TIMEOUT_S idle second (libmicrohttpd
 * counts whole seconds), so a scraper that connects and sends nothing, or
 * half a request, holds a slot for about a second.
 *
 * The address: "PORT" (127.0.0.1 only: metrics name items and nodes, so
 * another interface is a choice, e.g. "0.0.0.0:PORT"), "HOST:PORT",
 * "[IPV6]:PORT", with an optional "http://" in front and an optional
 * "/metrics" path after. HOST is a numeric address or a name resolved once
 * at start. PORT 0 picks a free port (metrics_http_port tells which).
 */
#ifndef ESC_METRICS_HTTP_H
#define ESC_METRICS_HTTP_H

#include <stdint.h>

#include "health.h"
#include "metrics.h"

#define METRICS_HTTP_CONNECTIONS_MAX 16
#define METRICS_HTTP_TIMEOUT_S 1
#define METRICS_HTTP_ADDR_LEN_MAX 256

typedef struct metrics_http metrics_http;

/* Parses addr (borrowed) into host ("" = 127.0.0.1) and port.
 * Returns 0 or ESC_EINVAL. For argv checking before anything starts. */
int metrics_http_parse(const char *addr, char *host, size_t host_cap, uint16_t *port);

/* Starts serving reg (borrowed: it must outlive the server) on addr.
 * Returns 0 and *out (owned: metrics_http_stop), or ESC_EINVAL (bad
 * address), ESC_EIO (cannot bind / start: the port is taken) or
 * ESC_ENOMEM, with a sentence in why. */
int metrics_http_start(metrics_registry *reg, const char *addr, metrics_http **out, char *why,
                       size_t why_len);
/* The same, also answering /healthz and /readyz from hl (borrowed: it
 * must outlive the server); hl NULL = metrics_http_start. */
int metrics_http_start_health(metrics_registry *reg, health *hl, const char *addr,
                              metrics_http **out, char *why, size_t why_len);
/* The port it listens on (useful with port 0). */
uint16_t metrics_http_port(const metrics_http *h);
/* Stops the server and joins its thread; a scrape in progress finishes
 * first. NULL-safe. */
void metrics_http_stop(metrics_http *h);

#endif
