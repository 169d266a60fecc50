/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health.c - see health.h.
 */
#include "health.h"

#include <stdio.h>

void health_init(health *h, int64_t now_ms)
{
    atomic_store(&h->beat_ms, now_ms);
    pthread_mutex_init(&h->mu, NULL);
    h->ready = false;
    snprintf(h->why, sizeof h->why, "starting");
}

void health_fini(health *h)
{
    pthread_mutex_destroy(&h->mu);
}

void health_beat(health *h, int64_t now_ms)
{
    atomic_store_explicit(&h->beat_ms, now_ms, memory_order_relaxed);
}

void health_set_ready(health *h, bool ready, const char *why)
{
    pthread_mutex_lock(&h->mu);
    h->ready = ready;
    snprintf(h->why, sizeof h->why, "%s", ready ? "" : why != NULL ? why : "not ready");
    pthread_mutex_unlock(&h->mu);
}

unsigned health_live(health *h, int64_t now_ms, char *body, size_t cap)
{
    int64_t age = now_ms - atomic_load_explicit(&h->beat_ms, memory_order_relaxed);
    if (age > HEALTH_STALL_MS) {
        snprintf(body, cap, "stalled: the loop has not turned for %lld ms\n", (long long)age);
        return 503;
    }
    snprintf(body, cap, "ok: the loop turned %lld ms ago\n", (long long)(age > 0 ? age : 0));
    return 200;
}

unsigned health_ready(health *h, int64_t now_ms, char *body, size_t cap)
{
    if (health_live(h, now_ms, body, cap) != 200) {
        return 503;
    }
    pthread_mutex_lock(&h->mu);
    unsigned code = h->ready ? 200 : 503;
    if (h->ready) {
        snprintf(body, cap, "ready\n");
    } else {
        snprintf(body, cap, "not ready: %s\n", h->why);
    }
    pthread_mutex_unlock(&h->mu);
    return code;
}
