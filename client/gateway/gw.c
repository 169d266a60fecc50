/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw.c - see gw.h.
 */
#include "gw.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "gw_api.h"
#include "gw_record.h"
#include "log.h"

static void finish(gw *g);

static void part_closed(void *arg)
{
    gw *g = arg;
    g->closing--;
}

static void streams_ended(void *arg)
{
    (void)arg; /* the tick watches events.open */
}

/* ---- readiness and the stop's progress ---------------------------------------- */

static void on_tick(uv_timer_t *t)
{
    gw *g = t->data;
    if (!g->ready && g->auth.loaded) {
        g->ready = true;
        ESC_LOG(ESC_LOG_INFO, "GW-READY", "listen=%s:%u tls=%s coordinator=%s", g->http.host,
                (unsigned)g->http.port, g->http.tls ? "on" : "off", g->cfg->coordinator);
    }
    if (!g->stopping || g->finishing) {
        return;
    }
    if (!g->clients_closed && esc_mono_us() >= g->drain_deadline_us) {
        ESC_LOG(ESC_LOG_WARN, "GW-STOP",
                "%u requests still wait: closing the cluster clients (they are answered 503 "
                "closed)",
                g->http.waiting);
        g->clients_closed = true;
        g->closing++;
        gw_clients_close_all(&g->clients, part_closed, g);
    }
    /* An answer queued is not an answer sent: libmicrohttpd completes the
     * request once the last byte went out, and stopping it before would cut
     * the connection under an answer (found by gateway_restart.sh). */
    if (g->http.waiting == 0 && g->http.requests == 0 && g->events.open == 0) {
        finish(g);
    } else if (g->clients_closed && g->http.waiting == 0 && g->events.open == 0 &&
               esc_mono_us() >= g->drain_deadline_us + GW_DRAIN_EXTRA_MS * 1000) {
        ESC_LOG(ESC_LOG_WARN, "GW-STOP",
                "%u requests not completed %d ms after the clients closed (a client that "
                "reads its answer slowly or never sends its body): closing their connections",
                g->http.requests, GW_DRAIN_EXTRA_MS);
        finish(g);
    }
}

/* Every request was answered and every stream ended: close everything;
 * the loop ends when the last handle closed. */
static void finish(gw *g)
{
    g->finishing = true;
    ESC_LOG(ESC_LOG_INFO, "GW-STOP", "every request answered; closing");
    g->closing++;
    gw_http_close(&g->http, part_closed, g);
    if (!g->clients_closed) {
        g->clients_closed = true;
        g->closing++;
        gw_clients_close_all(&g->clients, part_closed, g);
    }
    g->closing++;
    if (!auth_guard_close(&g->auth, part_closed, g)) {
        g->closing--;
    }
    if (g->tick_open) {
        g->tick_open = false;
        uv_close((uv_handle_t *)&g->tick, NULL);
    }
}

/* ---- daemon_ops --------------------------------------------------------------------- */

/* The parts that open nothing on the network yet. */
static int start_parts(gw *g, const gw_config *cfg)
{
    int rc = auth_init();
    rc = rc != 0 ? rc : gw_metrics_open(&g->metrics, cfg->metrics[0] ? cfg->metrics : NULL);
    uint32_t rate = 0, burst = 0;
    if (rc == 0 && ratelim_parse(cfg->rate_tenant, &rate, &burst) != 0) {
        rc = ESC_ECONFIG; /* escrow-gateway.c checked it already */
    }
    rc = rc != 0 ? rc : ratelim_init(&g->rate, GW_RATELIM_SLOTS, rate, burst);
    g->rate_seed = auth_random_u64();
    rc = rc != 0 ? rc
                 : gw_clients_init(&g->clients, g->loop, cfg->coordinator, cfg->routes,
                                   cfg->deadline_ms, cfg->clients_max);
    auth_guard_init(&g->auth);
    auth_guard_config ac = {.on = true, .dsn = cfg->dsn, .name = "gateway"};
    rc = rc != 0 ? rc : auth_guard_start(&g->auth, g->loop, &ac);
    gw_events_init(&g->events, g->loop, cfg->dsn, &g->http, &g->metrics, cfg->streams_max);
    return rc;
}

int gw_start(void *d, uv_loop_t *loop, const void *cfgp)
{
    gw *g = d;
    const gw_config *cfg = cfgp;
    memset(g, 0, sizeof *g);
    g->loop = loop;
    g->cfg = cfg;
    (void)signal(SIGPIPE, SIG_IGN); /* a client that hangs up is a write error, not a death */
    const char *record = getenv("ESCROW_GATEWAY_RECORD");
    if (record != NULL && record[0] != '\0' && gw_record_open(record) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "GW-START", "ESCROW_GATEWAY_RECORD=%s: cannot open", record);
        return ESC_EIO;
    }
    int rc = start_parts(g, cfg);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "GW-START", "cannot start: %s", esc_strerror(rc));
        return rc;
    }
    char why[256];
    rc = gw_http_start(&g->http, loop, cfg, &g->metrics, gw_api_dispatch, gw_api_done, g, why,
                       sizeof why);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "GW-START", "%s", why);
        return rc;
    }
    if (uv_timer_init(loop, &g->tick) != 0) {
        return ESC_EIO;
    }
    g->tick.data = g;
    g->tick_open = true;
    (void)uv_timer_start(&g->tick, on_tick, 0, GW_TICK_MS);
    ESC_LOG(ESC_LOG_INFO, "GW-START", "listen=%s:%u tls=%s (ready once the keys are read)",
            g->http.host, (unsigned)g->http.port, g->http.tls ? "on" : "off");
    return 0;
}

void gw_stop(void *d)
{
    gw *g = d;
    if (g->stopping) {
        return;
    }
    g->stopping = true;
    g->drain_deadline_us =
        esc_mono_us() + ((int64_t)g->cfg->deadline_ms + GW_DRAIN_EXTRA_MS) * 1000;
    gw_http_quiesce(&g->http);
    gw_events_stop_all(&g->events, streams_ended, g);
}

bool gw_stopping(const void *d)
{
    return ((const gw *)d)->stopping;
}

bool gw_ready(const void *d, char *why, size_t cap)
{
    if (!((const gw *)d)->ready) {
        snprintf(why, cap, "the key table is not read yet");
        return false;
    }
    return true;
}

void gw_fini(void *d)
{
    gw *g = d;
    gw_http_fini(&g->http);
    gw_clients_fini(&g->clients);
    auth_guard_fini(&g->auth);
    ratelim_fini(&g->rate);
    gw_metrics_close(&g->metrics);
    gw_record_close();
}

int gw_exit_code(const void *d)
{
    return ((const gw *)d)->exit_code;
}
