/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth_replay.h - the frames a daemon has already accepted inside the time
 * window, so that a copy of one is refused: the replay cache of signed
 * admin and cluster frames (auth_guard.h).
 *
 * Why only those: a tenant request (reserve with its idempotency key,
 * confirm, release, extend of a hold id, get, stats, route) does nothing
 * new when it runs twice; an admin request (restock 100, quota move) or a
 * heartbeat would. Those are few (operators, one heartbeat per node per
 * interval), so remembering each one for the window costs little.
 *
 * Pure: the caller passes the time. A frame is remembered by the first 16
 * bytes of its MAC (unique per frame: the MAC covers the nonce and the
 * clock) until the moment the window alone would refuse it. Entries are a
 * ring in order of arrival, with expiry made non-decreasing along the ring
 * (an entry may outlive its need by up to one window, never the reverse),
 * so expired ones leave from the head; a chained hash map (hmap.h) finds
 * them. Fixed capacity: when full of live entries a new frame is refused
 * as busy (retry), never let through.
 */
#ifndef ESC_AUTH_REPLAY_H
#define ESC_AUTH_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

/* Entries one daemon keeps (~48 bytes each, 3 MiB at most): signed admin
 * and cluster frames within twice the window, e.g. 1,000 per second for a
 * 30 s window. */
#define AUTH_REPLAY_MAX 65536
#define AUTH_REPLAY_TAG_BYTES 16

typedef struct auth_replay_entry {
    hmap_node node;
    uint8_t tag[AUTH_REPLAY_TAG_BYTES];
    int64_t expires_ms;
} auth_replay_entry;

typedef struct auth_replay {
    auth_replay_entry *ring; /* owned, cap entries */
    size_t cap, head, n;
    hmap index;
    uint64_t replays, full; /* frames refused, by reason */
} auth_replay;

/* Returns 0, ESC_EINVAL (cap 0 or over AUTH_REPLAY_MAX) or ESC_ENOMEM. */
int auth_replay_init(auth_replay *r, size_t cap);
void auth_replay_fini(auth_replay *r);

/* Remembers a frame (mac: its MAC, at least AUTH_REPLAY_TAG_BYTES) until
 * expires_ms. Returns 0 the first time, ESC_EAUTH for a frame seen before
 * (a replay), ESC_EBUSY when the cache is full of live entries. */
int auth_replay_add(auth_replay *r, const uint8_t *mac, int64_t expires_ms, int64_t now_ms);

#endif
