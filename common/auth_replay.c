/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth_replay.c - see auth_replay.h.
 */
#include "auth_replay.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "esc_assert.h"
#include "escrow_errors.h"

int auth_replay_init(auth_replay *r, size_t cap)
{
    memset(r, 0, sizeof *r);
    if (cap == 0 || cap > AUTH_REPLAY_MAX) {
        return ESC_EINVAL;
    }
    r->ring = calloc(cap, sizeof *r->ring);
    if (r->ring == NULL || hmap_init(&r->index, cap) != 0) {
        free(r->ring);
        r->ring = NULL;
        return ESC_ENOMEM;
    }
    r->cap = cap;
    return 0;
}

void auth_replay_fini(auth_replay *r)
{
    if (r->ring != NULL) {
        hmap_fini(&r->index);
        free(r->ring);
    }
    memset(r, 0, sizeof *r);
}

/* The tag's first 8 bytes are already uniform: MAC output. */
static uint64_t tag_hash(const uint8_t *tag)
{
    uint64_t h;
    memcpy(&h, tag, sizeof h);
    return h;
}

static bool tag_eq(const hmap_node *n, const void *key)
{
    const auth_replay_entry *e = HMAP_ENTRY(n, auth_replay_entry, node);
    return memcmp(e->tag, key, AUTH_REPLAY_TAG_BYTES) == 0;
}

static void expire(auth_replay *r, int64_t now_ms)
{
    while (r->n > 0 && r->ring[r->head].expires_ms < now_ms) {
        hmap_remove(&r->index, &r->ring[r->head].node);
        r->head = (r->head + 1) % r->cap;
        r->n--;
    }
}

int auth_replay_add(auth_replay *r, const uint8_t *mac, int64_t expires_ms, int64_t now_ms)
{
    ESC_ASSERT(r->ring != NULL);
    expire(r, now_ms);
    uint64_t h = tag_hash(mac);
    if (hmap_find(&r->index, h, tag_eq, mac) != NULL) {
        r->replays++;
        return ESC_EAUTH;
    }
    if (r->n == r->cap) {
        r->full++;
        return ESC_EBUSY;
    }
    if (r->n > 0) { /* non-decreasing along the ring: the head leaves first */
        const auth_replay_entry *last = &r->ring[(r->head + r->n - 1) % r->cap];
        expires_ms = expires_ms > last->expires_ms ? expires_ms : last->expires_ms;
    }
    auth_replay_entry *e = &r->ring[(r->head + r->n) % r->cap];
    memcpy(e->tag, mac, AUTH_REPLAY_TAG_BYTES);
    e->expires_ms = expires_ms;
    (void)hmap_insert(&r->index, &e->node, h); /* buckets sized for cap: it does not grow */
    r->n++;
    return 0;
}
