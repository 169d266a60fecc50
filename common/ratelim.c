/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelim.c - see ratelim.h.
 */
#include "ratelim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"

#define UNIT 1000000 /* tokens are counted in millionths */

int ratelim_init(ratelim *r, size_t nslots, uint32_t rate_per_s, uint32_t burst)
{
    memset(r, 0, sizeof *r);
    if (rate_per_s == 0) {
        return 0;
    }
    if (nslots == 0 || nslots > RATELIM_SLOTS_MAX) {
        return ESC_EINVAL;
    }
    size_t n = RATELIM_WAYS;
    while (n < nslots) {
        n *= 2;
    }
    r->slots = calloc(n, sizeof *r->slots);
    if (r->slots == NULL) {
        return ESC_ENOMEM;
    }
    r->mask = n - 1;
    r->rate_per_s = rate_per_s;
    r->burst = burst ? burst : rate_per_s;
    return 0;
}

void ratelim_fini(ratelim *r)
{
    free(r->slots);
    memset(r, 0, sizeof *r);
}

static int64_t refilled(const ratelim *r, const ratelim_slot *s, int64_t now_us)
{
    int64_t cap = (int64_t)r->burst * UNIT;
    int64_t dt = now_us - s->last_us;
    if (dt <= 0) {
        return s->tokens_u;
    }
    /* rate tokens per second = rate millionths per microsecond; compare
     * before multiplying so a long idle time cannot overflow */
    if (dt >= cap / (int64_t)r->rate_per_s) {
        return cap;
    }
    int64_t t = s->tokens_u + dt * (int64_t)r->rate_per_s;
    return t > cap ? cap : t;
}

/* The slot for a key not in its set: a free or idle (full again) one, else
 * the one with the most tokens, the bucket whose loss forgets the least
 * (counted as evicted). A key being limited (few tokens) is evicted last. */
static ratelim_slot *take_slot(ratelim *r, ratelim_slot *set, int64_t now_us)
{
    ratelim_slot *best = NULL;
    int64_t best_tokens = -1;
    for (int i = 0; i < RATELIM_WAYS; i++) {
        int64_t t = set[i].key == 0 ? INT64_MAX : refilled(r, &set[i], now_us);
        if (t >= (int64_t)r->burst * UNIT) {
            return &set[i];
        }
        if (t > best_tokens) {
            best = &set[i];
            best_tokens = t;
        }
    }
    r->evicted++;
    return best;
}

bool ratelim_take(ratelim *r, uint64_t key, int64_t now_us)
{
    if (r->slots == NULL) {
        return true;
    }
    key |= 1; /* 0 marks a free slot */
    ratelim_slot *set = &r->slots[key & r->mask & ~(size_t)(RATELIM_WAYS - 1)];
    ratelim_slot *s = NULL;
    for (int i = 0; i < RATELIM_WAYS && s == NULL; i++) {
        if (set[i].key == key) {
            s = &set[i];
        }
    }
    if (s == NULL) {
        s = take_slot(r, set, now_us);
        s->key = key;
        s->tokens_u = (int64_t)r->burst * UNIT;
    } else {
        s->tokens_u = refilled(r, s, now_us);
    }
    if (now_us > s->last_us) {
        s->last_us = now_us;
    }
    if (s->tokens_u < UNIT) {
        r->refused++;
        return false;
    }
    s->tokens_u -= UNIT;
    return true;
}

static int parse_u32(const char *s, char **end, uint32_t *out)
{
    if (*s < '0' || *s > '9') {
        return ESC_EINVAL;
    }
    unsigned long v = strtoul(s, end, 10);
    if (v > 1000000ul) {
        return ESC_EINVAL;
    }
    *out = (uint32_t)v;
    return 0;
}

int ratelim_set(ratelim *r, size_t nslots, uint32_t rate_per_s, uint32_t burst)
{
    if (rate_per_s == 0 || r->slots == NULL) {
        ratelim next;
        int rc = ratelim_init(&next, nslots, rate_per_s, burst);
        if (rc != 0) {
            return rc;
        }
        ratelim_fini(r);
        *r = next;
        return 0;
    }
    r->rate_per_s = rate_per_s;
    r->burst = burst ? burst : rate_per_s;
    return 0;
}

int ratelim_parse(const char *s, uint32_t *rate_per_s, uint32_t *burst)
{
    char *end = NULL;
    uint32_t r = 0, b = 0;
    if (parse_u32(s, &end, &r) != 0) {
        return ESC_EINVAL;
    }
    if (*end == ':' && parse_u32(end + 1, &end, &b) != 0) {
        return ESC_EINVAL;
    }
    if (*end != '\0') {
        return ESC_EINVAL;
    }
    *rate_per_s = r;
    *burst = b;
    return 0;
}
