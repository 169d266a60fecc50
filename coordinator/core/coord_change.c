/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_change.c - see coord_change.h.
 */
#include "coord_change.h"

bool coord_change_observe(coord_change *s, uint64_t value, int64_t since_full_us, int64_t full_us)
{
    bool moved = !s->known || value != s->seen;
    s->known = true;
    s->seen = value;
    s->quiet = moved ? 0 : s->quiet < 2 ? s->quiet + 1 : 2;
    bool read = s->quiet < 2 || since_full_us >= full_us;
    if (read) {
        s->reads++;
    } else {
        s->skips++;
    }
    return read;
}
