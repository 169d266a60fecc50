/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelim.h - token buckets for many keys (tenants, buyers) in a fixed
 * table: no allocation after ratelim_init, O(1) per request.
 *
 * Pure: the caller passes the key's 64-bit hash and the time. Each bucket
 * holds up to `burst` tokens and refills at `rate_per_s`; a request takes
 * one token or is refused. The table is 4-way set associative: a key uses
 * the slots of its set; a new key takes a slot whose bucket is full again
 * (idle: nothing is forgotten by reusing it), else the least recently used
 * one, which then starts full. So with more busy keys than slots a key may
 * get a fresh burst now and then: the limit bends, memory never grows.
 * Seed the hash per process (the daemons use a random seed) so that a
 * client cannot pick keys that share a set on purpose.
 */
#ifndef ESC_RATELIM_H
#define ESC_RATELIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Slots per table, rounded up to a power of two; 24 bytes each. */
#define RATELIM_SLOTS_MAX (1u << 22)
#define RATELIM_WAYS 4

typedef struct ratelim_slot {
    uint64_t key;     /* hash of the key; 0 = free */
    int64_t tokens_u; /* millionths of a token */
    int64_t last_us;  /* last refill */
} ratelim_slot;

typedef struct ratelim {
    ratelim_slot *slots; /* owned; NULL when off */
    size_t mask;         /* nslots - 1 */
    uint32_t rate_per_s; /* 0 = off: every request passes */
    uint32_t burst;
    uint64_t refused, evicted; /* counters */
} ratelim;

/* rate_per_s 0 turns it off (nothing is allocated). burst 0 means
 * rate_per_s (one second's worth). Returns 0, ESC_EINVAL (nslots 0 or over
 * RATELIM_SLOTS_MAX) or ESC_ENOMEM. */
int ratelim_init(ratelim *r, size_t nslots, uint32_t rate_per_s, uint32_t burst);
void ratelim_fini(ratelim *r);
/* Changes the limit of a table in use (a reload): off -> on allocates as
 * ratelim_init, on -> off frees, on -> on keeps every bucket (a bucket
 * above the new burst is cut to it at its next refill). Returns 0 or
 * ESC_EINVAL / ESC_ENOMEM (r unchanged then). */
int ratelim_set(ratelim *r, size_t nslots, uint32_t rate_per_s, uint32_t burst);
/* Parses "RATE" or "RATE:BURST" (0..1000000 each; RATE 0 = off) for the
 * daemons' --rate-* options. Returns 0 or ESC_EINVAL. */
int ratelim_parse(const char *s, uint32_t *rate_per_s, uint32_t *burst);
/* Takes one token from key's bucket. True: allowed; false: over the limit. */
bool ratelim_take(ratelim *r, uint64_t key, int64_t now_us);

#endif
