/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health.h - what /healthz and /readyz answer (metrics_http.h), shared
 * between a daemon's loop, which writes it, and the HTTP server's thread,
 * which reads it.
 *
 *   live   the loop is turning: the skeleton's timer (daemon.h) beats every
 *          HEALTH_BEAT_MS; a beat older than HEALTH_STALL_MS means the loop
 *          is stuck (a blocking call, a busy loop), and the process should
 *          be restarted.
 *   ready  the daemon can do its work: the daemon says so at every beat,
 *          with the reason when it cannot ("database not connected",
 *          "coordinator not reached", ...). A stuck loop is never ready.
 *
 * The beat is one atomic word; readiness and its reason are under a mutex
 * (written at most once per beat, read once per request).
 */
#ifndef ESC_HEALTH_H
#define ESC_HEALTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEALTH_BEAT_MS 250
/* A loop that has not turned for this long is reported stalled: long
 * enough for a slow machine's worst honest turn, short enough for a
 * liveness probe to act within seconds. */
#define HEALTH_STALL_MS 5000
#define HEALTH_WHY_LEN 256

typedef struct health {
    atomic_int_least64_t beat_ms; /* monotonic ms of the last beat */
    pthread_mutex_t mu;
    bool ready;
    char why[HEALTH_WHY_LEN]; /* why not ready */
} health;

/* Starts h as beaten now, not ready ("starting"). */
void health_init(health *h, int64_t now_ms);
void health_fini(health *h);
/* The loop turned (its timer fired) at now_ms. */
void health_beat(health *h, int64_t now_ms);
/* ready, or not with why (copied; NULL: "not ready"). */
void health_set_ready(health *h, bool ready, const char *why);

/* For the HTTP thread: the status to answer (200 or 503) and its body, a
 * line of text ("ok: the loop turned 12 ms ago", "not ready: database not
 * connected"), into body (cap bytes). */
unsigned health_live(health *h, int64_t now_ms, char *body, size_t cap);
unsigned health_ready(health *h, int64_t now_ms, char *body, size_t cap);

#endif
