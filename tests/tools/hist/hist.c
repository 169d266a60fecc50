/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hist.c - see hist.h.
 */
#include "hist.h"

#include <math.h>
#include <string.h>

void hist_init(hist *h)
{
    memset(h, 0, sizeof *h);
}

static unsigned bucket_of(uint64_t v)
{
    if (v < HIST_SUB) {
        return (unsigned)v;
    }
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - HIST_SUB_BITS;
    return (shift + 1u) * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

static uint64_t bucket_mid(unsigned idx)
{
    if (idx < HIST_SUB) {
        return idx;
    }
    unsigned shift = idx / HIST_SUB - 1u;
    uint64_t low = (uint64_t)(idx % HIST_SUB + HIST_SUB) << shift;
    return low + (((uint64_t)1 << shift) >> 1);
}

void hist_add(hist *h, uint64_t value)
{
    h->counts[bucket_of(value)]++;
    h->n++;
}

uint64_t hist_quantile(const hist *h, double q)
{
    if (h->n == 0) {
        return 0;
    }
    uint64_t rank = (uint64_t)ceil(q * (double)h->n);
    if (rank == 0) {
        rank = 1;
    }
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            return bucket_mid(i);
        }
    }
    return bucket_mid(HIST_BUCKETS - 1);
}
