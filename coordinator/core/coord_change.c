/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_change.c - see coord_change.h.
 */
#include "coord_change.h"

#include <errno.h>
#include <stdlib.h>

bool coord_change_full_due(const coord_change *s, int64_t since_full_us, int64_t full_us)
{
    return !s->known || since_full_us >= full_us;
}

void coord_change_begin(const coord_change *s, coord_change_run *r, bool full)
{
    *r = (coord_change_run){.full = full || !s->known, .since = 0};
    if (!r->full) {
        r->since = s->mark;
    }
}

void coord_change_xmin(coord_change_run *r, uint64_t xmin)
{
    r->have_xmin = true;
    r->xmin = xmin;
}

void coord_change_keep(coord_change_run *r, uint64_t cat_xid)
{
    if (!r->kept || cat_xid < r->keep) {
        r->keep = cat_xid;
    }
    r->kept = true;
}

void coord_change_finish(coord_change *s, const coord_change_run *r, bool ok)
{
    if (!ok || !r->have_xmin) {
        return; /* the mark stays: the next read covers this one's rows */
    }
    uint64_t next = r->xmin;
    if (r->kept && r->keep < next) {
        next = r->keep;
    }
    if (r->incomplete && r->since < next) {
        next = r->since;
    }
    if (r->full) {
        s->known = true;
    } else if (!s->known) {
        return; /* not read from a mark: nothing to move */
    }
    s->mark = next;
}

int coord_change_parse_xid(const char *text, uint64_t *out)
{
    if (text == NULL || text[0] < '0' || text[0] > '9') {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}
