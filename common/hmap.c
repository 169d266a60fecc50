/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmap.c - see hmap.h.
 */
#include "hmap.h"

#include <stdlib.h>

#include "escrow_errors.h"

int hmap_init(hmap *m, size_t nbuckets_hint)
{
    size_t n = 16;
    while (n < nbuckets_hint) {
        n <<= 1;
    }
    m->buckets = calloc(n, sizeof *m->buckets);
    if (m->buckets == NULL) {
        return ESC_ENOMEM;
    }
    m->nbuckets = n;
    m->count = 0;
    return 0;
}

void hmap_fini(hmap *m)
{
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = 0;
    m->count = 0;
}

static int grow(hmap *m)
{
    size_t n = m->nbuckets * 2;
    hmap_node **b = calloc(n, sizeof *b);
    if (b == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < m->nbuckets; i++) {
        hmap_node *e = m->buckets[i];
        while (e != NULL) {
            hmap_node *next = e->next;
            size_t j = e->hash & (n - 1);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return 0;
}

int hmap_insert(hmap *m, hmap_node *n, uint64_t hash)
{
    int rc = 0;
    if (m->count >= m->nbuckets) {
        rc = grow(m);
    }
    size_t i = hash & (m->nbuckets - 1);
    n->hash = hash;
    n->next = m->buckets[i];
    m->buckets[i] = n;
    m->count++;
    return rc;
}

void hmap_remove(hmap *m, hmap_node *n)
{
    hmap_node **pp = &m->buckets[n->hash & (m->nbuckets - 1)];
    while (*pp != NULL) {
        if (*pp == n) {
            *pp = n->next;
            n->next = NULL;
            m->count--;
            return;
        }
        pp = &(*pp)->next;
    }
}

hmap_node *hmap_find(const hmap *m, uint64_t hash, bool (*eq)(const hmap_node *, const void *),
                     const void *key)
{
    for (hmap_node *e = m->buckets[hash & (m->nbuckets - 1)]; e != NULL; e = e->next) {
        if (e->hash == hash && eq(e, key)) {
            return e;
        }
    }
    return NULL;
}

uint64_t hmap_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ s[i]) * 1099511628211ULL;
    }
    return hmap_hash_u64(h);
}

uint64_t hmap_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
