/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hb_sync.c - see hb_sync.h.
 */
#include "hb_sync.h"

#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "hmap.h"

/* Every input bit moves every output bit (hmap_hash_u64 is a 64-bit
 * finaliser); the constant steps keep equal words apart. */
static uint64_t fold(const uint64_t *v, size_t n)
{
    uint64_t h = 0x6a09e667f3bcc908ULL;
    for (size_t i = 0; i < n; i++) {
        h = hmap_hash_u64(h ^ v[i]) + 0x9e3779b97f4a7c15ULL;
    }
    return h == 0 ? 1 : h;
}

uint64_t hb_sync_stats_hash(const wire_seg_stats *s)
{
    uint64_t v[8] = {s->segment_id,     s->epoch,          (uint64_t)s->available,
                     (uint64_t)s->held, (uint64_t)s->sold, s->state,
                     s->reserved,       s->empties};
    return fold(v, 8);
}

uint64_t hb_sync_assign_hash(const wire_assignment *a)
{
    uint64_t v[4] = {a->segment_id, a->epoch, a->state, a->paused};
    return fold(v, 4);
}

/* ---- a node's acknowledged figures ----------------------------------------- */

void hb_sync_init(hb_sync *t)
{
    memset(t, 0, sizeof *t);
    t->resync = true; /* a new process: the coordinator holds nothing of it */
}

void hb_sync_fini(hb_sync *t)
{
    free(t->slots);
    free(t->work);
    memset(t, 0, sizeof *t);
}

int hb_sync_grow(hb_sync *t, size_t n)
{
    if (n <= t->nslots) {
        return 0;
    }
    size_t *w = realloc(t->work, n * sizeof *w);
    if (w == NULL) {
        return ESC_ENOMEM;
    }
    t->work = w;
    hb_sync_slot *p = realloc(t->slots, n * sizeof *p);
    if (p == NULL) {
        return ESC_ENOMEM;
    }
    memset(p + t->nslots, 0, (n - t->nslots) * sizeof *p);
    t->slots = p;
    t->nslots = n;
    return 0;
}

void hb_sync_mark(hb_sync *t, size_t i)
{
    hb_sync_slot *s = &t->slots[i];
    if (!s->queued) {
        s->queued = true;
        t->work[t->nwork++] = i; /* each slot at most once: nwork <= nslots */
    }
}

void hb_sync_mark_all(hb_sync *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        hb_sync_mark(t, i);
    }
}

int hb_sync_want(hb_sync *t, size_t i, uint64_t h, int64_t now_ms)
{
    hb_sync_slot *s = &t->slots[i];
    if (h != s->last) {
        if (s->last == 0) {
            t->count++;
        } else if (h == 0) {
            t->count--;
        }
        t->digest += h - s->last;
        s->last = h;
        s->hot_until_ms = now_ms + HB_SYNC_HOT_MS;
    }
    if (h == 0) {
        return s->acked != 0 ? HB_SYNC_GONE : HB_SYNC_SKIP;
    }
    return h != s->acked || now_ms < s->hot_until_ms ? HB_SYNC_SEND : HB_SYNC_SKIP;
}

void hb_sync_sent(hb_sync *t, size_t i, uint64_t h, uint64_t corr)
{
    t->slots[i].sent = h;
    t->slots[i].sent_corr = corr;
    hb_sync_mark(t, i); /* it waits for the reply: the acknowledgement looks here */
}

bool hb_sync_settled(const hb_sync *t, size_t i, int64_t now_ms)
{
    const hb_sync_slot *s = &t->slots[i];
    return s->last == s->acked && s->sent_corr == 0 && now_ms >= s->hot_until_ms;
}

void hb_sync_unqueue(hb_sync *t, size_t k)
{
    t->slots[t->work[k]].queued = false;
    t->work[k] = SIZE_MAX; /* gone at hb_sync_compact; marked again: a new entry */
}

void hb_sync_compact(hb_sync *t)
{
    size_t w = 0;
    for (size_t k = 0; k < t->nwork; k++) {
        if (t->work[k] != SIZE_MAX) {
            t->work[w++] = t->work[k];
        }
    }
    t->nwork = w;
}

void hb_sync_acked(hb_sync *t, uint64_t corr)
{
    /* a slot waiting for a reply is in the work list (hb_sync_sent) */
    for (size_t k = 0; k < t->nwork; k++) {
        if (t->work[k] == SIZE_MAX) {
            continue;
        }
        hb_sync_slot *s = &t->slots[t->work[k]];
        if (s->sent_corr == corr) {
            s->acked = s->sent;
            s->sent_corr = 0;
        } else if (s->sent_corr != 0 && s->sent_corr < corr) {
            s->sent_corr = 0; /* its reply will never be taken: sent again if it differs */
        }
    }
}

void hb_sync_restart(hb_sync *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        t->slots[i].acked = 0;
        t->slots[i].sent_corr = 0;
    }
    hb_sync_mark_all(t);
    t->resync = true;
}

/* ---- a node's assignment ----------------------------------------------------- */

void hb_assign_init(hb_assign_set *s)
{
    memset(s, 0, sizeof *s);
}

void hb_assign_fini(hb_assign_set *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const wire_assignment *)a)->segment_id;
    uint64_t y = ((const wire_assignment *)b)->segment_id;
    return x < y ? -1 : x > y;
}

static size_t lower_bound(const hb_assign_set *s, uint64_t id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].segment_id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

const wire_assignment *hb_assign_find(const hb_assign_set *s, uint64_t segment_id)
{
    size_t i = lower_bound(s, segment_id);
    return i < s->n && s->v[i].segment_id == segment_id ? &s->v[i] : NULL;
}

int hb_assign_append(hb_assign_set *s, const wire_assignment *a, size_t n)
{
    if (n == 0) {
        return 0;
    }
    if (s->n + n > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n) {
            cap *= 2;
        }
        wire_assignment *p = realloc(s->v, cap * sizeof *p);
        if (p == NULL) {
            return ESC_ENOMEM;
        }
        s->v = p;
        s->cap = cap;
    }
    memcpy(s->v + s->n, a, n * sizeof *a);
    s->n += n;
    for (size_t i = 0; i < n; i++) {
        s->digest += hb_sync_assign_hash(&a[i]);
    }
    return 0;
}

/* Sorts by id, dropping id 0 (removed) and duplicates (the ends send a
 * segment twice only with the same entry). */
void hb_assign_sort(hb_assign_set *s)
{
    wire_assignment *v = s->v;
    if (s->n == 0) {
        return;
    }
    qsort(v, s->n, sizeof *v, by_id);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (v[i].segment_id == 0) {
            continue;
        }
        if (k > 0 && v[k - 1].segment_id == v[i].segment_id) {
            v[k - 1] = v[i];
            continue;
        }
        v[k++] = v[i];
    }
    s->n = k;
    uint64_t d = 0;
    for (size_t i = 0; i < k; i++) {
        d += hb_sync_assign_hash(&v[i]);
    }
    s->digest = d; /* entries dropped here went out of it */
}

void hb_assign_clear(hb_assign_set *s)
{
    s->n = 0;
    s->digest = 0;
}

int hb_assign_replace(hb_assign_set *s, const wire_assignment *a, size_t n)
{
    hb_assign_clear(s);
    int rc = hb_assign_append(s, a, n);
    if (rc == 0) {
        hb_assign_sort(s);
    }
    return rc;
}

int hb_assign_apply(hb_assign_set *s, const wire_assignment *upd, size_t nupd, const uint64_t *del,
                    size_t ndel)
{
    size_t sorted = s->n; /* lookups stay in the sorted prefix */
    bool resort = false;
    for (size_t i = 0; i < nupd; i++) {
        hb_assign_set prefix = {s->v, sorted, sorted, 0};
        wire_assignment *e = (wire_assignment *)hb_assign_find(&prefix, upd[i].segment_id);
        if (e != NULL) {
            s->digest += hb_sync_assign_hash(&upd[i]) - hb_sync_assign_hash(e);
            *e = upd[i];
            continue;
        }
        int rc = hb_assign_append(s, &upd[i], 1);
        if (rc != 0) {
            return rc;
        }
        resort = true;
    }
    for (size_t i = 0; i < ndel; i++) {
        hb_assign_set prefix = {s->v, sorted, sorted, 0};
        size_t j = lower_bound(&prefix, del[i]);
        if (j < sorted && s->v[j].segment_id == del[i]) {
            s->v[j].epoch = 0;
            s->v[j].state = UINT32_MAX; /* marked: cleared below, after the lookups */
            resort = true;
        }
    }
    if (resort) {
        for (size_t i = 0; i < s->n; i++) {
            if (s->v[i].state == UINT32_MAX) {
                s->v[i].segment_id = 0;
            }
        }
        hb_assign_sort(s);
    }
    return 0;
}

void hb_assign_sum_all(const hb_assign_set *s, uint32_t *count, uint64_t *digest)
{
    uint64_t d = 0;
    for (size_t i = 0; i < s->n; i++) {
        d += hb_sync_assign_hash(&s->v[i]);
    }
    *count = (uint32_t)s->n;
    *digest = d;
}

void hb_assign_sum(const hb_assign_set *s, uint32_t *count, uint64_t *digest)
{
    *count = (uint32_t)s->n;
    *digest = s->digest;
}
