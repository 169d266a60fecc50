/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_lease.c - see coord_lease.h.
 */
#include "coord_lease.h"

int64_t coord_lease_stall_us(int64_t prev_us, int64_t now_us, uint32_t every_ms)
{
    if (prev_us == 0 || now_us <= prev_us) {
        return 0;
    }
    int64_t late = now_us - prev_us - (int64_t)every_ms * 1000;
    return late > 0 ? late : 0;
}

bool coord_lease_stalled(int64_t stall_us, uint32_t lease_ms)
{
    return stall_us > (int64_t)lease_ms * 1000 / COORD_STALL_LEASE_DIV;
}

bool coord_lease_missed(const coord_node *n, int64_t now_us, uint32_t lease_ms)
{
    return n->alive && now_us - n->last_hb_us > (int64_t)lease_ms * 1000;
}

size_t coord_lease_grace(coord_cat *cat, int64_t now_us)
{
    size_t graced = 0;
    for (size_t i = 0; i < cat->nnodes; i++) {
        coord_node *n = cat->nodes[i];
        if (n->alive && n->last_hb_us < now_us) {
            n->last_hb_us = now_us;
            graced++;
        }
    }
    return graced;
}
