/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backoff.h - when to ask again after "try later": capped exponential
 * backoff with jitter, and a time after which to give up. Pure (no clock,
 * no randomness of its own: the caller passes both), so escrow-load and
 * any other tool retry ESC_ETRY_LATER the same way, and test_driver checks
 * every bound.
 *
 * The k-th wait (k = 0, 1, ...) is d/2 plus a random part of d/2 (jitter,
 * so buyers told "try later" together do not come back together), where
 * d = min(cap_ms, base_ms * 2^k). A retry that would start after
 * give_up_ms (counted from the first "try later") is not made.
 */
#ifndef ESC_BACKOFF_H
#define ESC_BACKOFF_H

#include <stdint.h>

typedef struct backoff_policy {
    uint32_t base_ms;    /* the first wait's ceiling (>= 1) */
    uint32_t cap_ms;     /* no wait is longer (>= base_ms) */
    uint32_t give_up_ms; /* no retry starts later than this after the first "try later" */
} backoff_policy;

/* The wait before retry number attempt (0 for the first), given the
 * milliseconds elapsed since the first "try later" and a random number;
 * -1 once the retry would start after give_up_ms: give up. */
int64_t backoff_wait_ms(const backoff_policy *p, uint32_t attempt, uint64_t elapsed_ms,
                        uint64_t random);

#endif
