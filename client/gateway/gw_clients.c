/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_clients.c - see gw_clients.h.
 */
#include "gw_clients.h"

#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "gw_answer.h"
#include "log.h"

static uint64_t key_hash(const char *key_id)
{
    return hmap_hash_bytes(key_id, strlen(key_id), 0x243f6a8885a308d3ULL);
}

static bool key_eq(const hmap_node *n, const void *k)
{
    return strcmp(HMAP_ENTRY(n, gw_client, by_key)->key_id, k) == 0;
}

int gw_clients_init(gw_clients *t, uv_loop_t *loop, const char *coordinator, const char *routes,
                    uint32_t deadline_ms, uint32_t max)
{
    memset(t, 0, sizeof *t);
    t->loop = loop;
    snprintf(t->coordinator, sizeof t->coordinator, "%s", coordinator);
    snprintf(t->routes, sizeof t->routes, "%s", routes != NULL ? routes : "");
    t->deadline_ms = deadline_ms;
    t->max = max;
    return hmap_init(&t->map, 64);
}

static void unlink_lru(gw_clients *t, gw_client *c)
{
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        t->head = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    } else {
        t->tail = c->prev;
    }
    c->prev = c->next = NULL;
}

static void push_mru(gw_clients *t, gw_client *c)
{
    c->prev = t->tail;
    c->next = NULL;
    if (t->tail != NULL) {
        t->tail->next = c;
    } else {
        t->head = c;
    }
    t->tail = c;
}

/* libescrow's log lines, into ours. */
static void client_log(int level, const char *line, void *arg)
{
    (void)arg;
    ESC_LOG(level, "GW-CLIENT", "%s", line);
}

static void on_client_closed(void *arg)
{
    gw_client *c = arg;
    gw_clients *t = c->owner;
    free(c);
    if (--t->closing == 0 && t->n == 0 && t->drained != NULL) {
        void (*done)(void *) = t->drained;
        t->drained = NULL;
        done(t->drained_arg);
    }
}

static void close_client(gw_clients *t, gw_client *c)
{
    hmap_remove(&t->map, &c->by_key);
    unlink_lru(t, c);
    t->n--;
    t->closing++;
    esc_async_close(c->a, on_client_closed, c);
}

/* Room for one more: the least recently used idle client goes. */
static int make_room(gw_clients *t)
{
    for (gw_client *c = t->head; t->n >= t->max && c != NULL; c = c->next) {
        if (c->inflight == 0) {
            ESC_LOG(ESC_LOG_DEBUG, "GW-CLIENT", "key=%s idle: closed to make room", c->key_id);
            close_client(t, c);
            return 0;
        }
    }
    return t->n < t->max ? 0 : GW_EOVERLOADED;
}

static int client_new(gw_clients *t, const gw_principal *p, gw_client **out)
{
    gw_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return ESC_ENOMEM;
    }
    esc_options o = {.coordinator = t->coordinator,
                     .routes = t->routes[0] != '\0' ? t->routes : NULL,
                     .tenant_id = p->tenant_id,
                     .deadline_ms = t->deadline_ms,
                     .log_fn = client_log,
                     .credential = p->credential};
    int rc = esc_async_new(t->loop, &o, &c->a);
    if (rc != 0) {
        free(c);
        return rc;
    }
    memcpy(c->key_id, p->key_id, sizeof c->key_id);
    c->owner = t;
    hmap_insert(&t->map, &c->by_key, key_hash(c->key_id));
    t->n++;
    *out = c;
    return 0;
}

int gw_clients_get(gw_clients *t, const gw_principal *p, gw_client **out)
{
    hmap_node *n = hmap_find(&t->map, key_hash(p->key_id), key_eq, p->key_id);
    gw_client *c = n != NULL ? HMAP_ENTRY(n, gw_client, by_key) : NULL;
    if (c != NULL) {
        unlink_lru(t, c);
    } else {
        int rc = make_room(t);
        rc = rc != 0 ? rc : client_new(t, p, &c);
        if (rc != 0) {
            return rc;
        }
    }
    push_mru(t, c);
    *out = c;
    return 0;
}

void gw_client_hold(gw_client *c)
{
    c->inflight++;
}

void gw_client_done(gw_client *c)
{
    ESC_ASSERT(c->inflight > 0);
    c->inflight--;
}

void gw_clients_close_all(gw_clients *t, void (*drained)(void *arg), void *arg)
{
    t->drained = drained;
    t->drained_arg = arg;
    while (t->head != NULL) {
        close_client(t, t->head);
    }
    if (t->closing == 0) {
        t->drained = NULL;
        drained(arg);
    }
}

void gw_clients_fini(gw_clients *t)
{
    hmap_fini(&t->map);
}
