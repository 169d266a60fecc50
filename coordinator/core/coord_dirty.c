/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_dirty.c - see coord_dirty.h.
 */
#include "coord_dirty.h"

#include <stdlib.h>

#include "log.h"

void coord_dirty_fini(coord_dirty *d)
{
    free(d->v);
    free(d->taken);
    d->v = d->taken = NULL;
    d->n = d->cap = d->ntaken = d->taken_cap = 0;
}

void coord_dirty_mark(coord_dirty *d, bool *flag, struct coord_item *it)
{
    if (*flag) {
        return;
    }
    *flag = true;
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->v = esc_xrealloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = it;
    d->marks++;
}

struct coord_item **coord_dirty_take(coord_dirty *d, coord_dirty_flag_fn flag_of,
                                     size_t *n)
{
    /* the list becomes the taken one (kept in place, flags cleared, the
     * unmarked and repeated entries dropped); the old taken array is the
     * next list */
    struct coord_item **v = d->v;
    size_t cap = d->cap, k = 0;
    for (size_t i = 0; i < d->n; i++) {
        bool *f = flag_of(v[i], d->kind);
        if (*f) {
            *f = false;
            v[k++] = v[i];
        }
    }
    d->v = d->taken;
    d->cap = d->taken_cap;
    d->n = 0;
    d->taken = v;
    d->taken_cap = cap;
    d->ntaken = k;
    *n = k;
    return v;
}

void coord_dirty_sweep(coord_dirty *d, struct coord_item *const *all, size_t n, size_t k,
                       coord_dirty_flag_fn flag_of)
{
    if (n == 0) {
        d->cursor = 0;
        return;
    }
    if (k > n) {
        k = n;
    }
    for (size_t j = 0; j < k; j++) {
        struct coord_item *it = all[(d->cursor + j) % n];
        coord_dirty_mark(d, flag_of(it, d->kind), it);
    }
    size_t next = (d->cursor % n) + k;
    d->sweeps += next >= n;
    d->cursor = next % n;
}
