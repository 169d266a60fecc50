/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_clients.h - the gateway's libescrow clients: one asynchronous client
 * (esc_async, routing mode, on the gateway's loop) per tenant key in use,
 * because a client carries one tenant and one credential. Made on a key's
 * first request, kept while it is used; at most clients_max at a time: a
 * new key then closes the least recently used idle client, and when every
 * client has calls in flight the request is answered busy (503). Each
 * client keeps its own sockets to the coordinator and the nodes, so a
 * few hundred keys are fine and a hundred thousand are not: shops have one
 * or two keys each.
 */
#ifndef ESC_GW_CLIENTS_H
#define ESC_GW_CLIENTS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "escrow.h"
#include "gw_auth.h"
#include "hmap.h"

typedef struct gw_client gw_client;
struct gw_client {
    hmap_node by_key;
    gw_client *prev, *next; /* least recently used first */
    char key_id[AUTH_KEY_ID_LEN + 1];
    esc_async *a;      /* owned */
    uint32_t inflight; /* calls whose callback has not run yet */
    struct gw_clients *owner;
};

typedef struct gw_clients {
    uv_loop_t *loop;                            /* borrowed */
    char coordinator[ESC_ENDPOINT_LEN_MAX + 1]; /* copied */
    char routes[ESC_ENDPOINT_LEN_MAX + 1];
    uint32_t deadline_ms;
    uint32_t max;
    uint32_t n;       /* clients open */
    uint32_t closing; /* clients whose esc_async_close has not finished */
    hmap map;         /* gw_client by key id */
    gw_client *head, *tail;
    void (*drained)(void *arg); /* gw_clients_close_all's callback */
    void *drained_arg;
} gw_clients;

/* Returns 0 or ESC_ENOMEM. Strings are copied. */
int gw_clients_init(gw_clients *t, uv_loop_t *loop, const char *coordinator, const char *routes,
                    uint32_t deadline_ms, uint32_t max);

/* The client for p's key (made now if needed), marked used; take a call
 * slot with gw_client_hold before a call and give it back with
 * gw_client_done in its callback. Returns 0 and *out, GW_EOVERLOADED (every
 * slot busy), or libescrow's error (ESC_EINVAL, ESC_ENOMEM, ESC_EIO). */
int gw_clients_get(gw_clients *t, const gw_principal *p, gw_client **out);
void gw_client_hold(gw_client *c);
void gw_client_done(gw_client *c);

/* Closes every client (pending calls are answered ESC_ECLOSED first, from
 * the loop); drained(arg) runs once all are closed (at once, from the
 * loop, when none is open). */
void gw_clients_close_all(gw_clients *t, void (*drained)(void *arg), void *arg);
/* Frees the table (after close_all drained). */
void gw_clients_fini(gw_clients *t);

#endif
