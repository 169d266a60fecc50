/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backoff.c - see backoff.h.
 */
#include "backoff.h"

int64_t backoff_wait_ms(const backoff_policy *p, uint32_t attempt, uint64_t elapsed_ms,
                        uint64_t random)
{
    uint64_t d = p->cap_ms;
    if (attempt < 32 && ((uint64_t)p->base_ms << attempt) < p->cap_ms) {
        d = (uint64_t)p->base_ms << attempt;
    }
    uint64_t wait = d / 2 + random % (d - d / 2 + 1);
    if (elapsed_ms + wait > p->give_up_ms) {
        return -1;
    }
    return (int64_t)wait;
}
