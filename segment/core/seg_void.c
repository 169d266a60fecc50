/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_void.c - see seg_void.h. A FIFO of marks (they age in the order they
 * were made) indexed by a hash map; one allocation per mark.
 */
#include "seg_void.h"

#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "esc_limits.h"

struct seg_void {
    hmap_node by_id;
    seg_void *next; /* younger */
    int64_t at_ms;
    uint64_t attempt;
    char *key;   /* in strs */
    char strs[]; /* tenant_id NUL key NUL */
};

typedef struct void_key {
    const char *tenant_id, *key;
    uint64_t attempt;
} void_key;

static uint64_t void_hash(const void_key *k)
{
    uint64_t h = hmap_hash_bytes(k->tenant_id, strlen(k->tenant_id), k->attempt);
    return hmap_hash_bytes(k->key, strlen(k->key), h);
}

static bool void_eq(const hmap_node *n, const void *arg)
{
    const seg_void *m = HMAP_ENTRY(n, seg_void, by_id);
    const void_key *k = arg;
    return m->attempt == k->attempt && strcmp(m->strs, k->tenant_id) == 0 &&
           strcmp(m->key, k->key) == 0;
}

int seg_voids_init(seg_voids *v)
{
    memset(v, 0, sizeof *v);
    return hmap_init(&v->map, 64);
}

void seg_voids_fini(seg_voids *v)
{
    while (v->head != NULL) {
        seg_void *m = v->head;
        v->head = m->next;
        free(m);
    }
    hmap_fini(&v->map);
    memset(v, 0, sizeof *v);
}

static void drop_oldest(seg_voids *v)
{
    seg_void *m = v->head;
    v->head = m->next;
    if (v->head == NULL) {
        v->tail = NULL;
    }
    hmap_remove(&v->map, &m->by_id);
    v->n--;
    free(m);
}

void seg_voids_trim(seg_voids *v, int64_t now_ms)
{
    while (v->head != NULL && v->head->at_ms + ESC_VOID_MS <= now_ms) {
        drop_oldest(v);
    }
}

bool seg_voids_has(const seg_voids *v, const char *tenant_id, const char *key, uint64_t attempt)
{
    if (v->n == 0) {
        return false; /* the common case costs one comparison */
    }
    void_key k = {tenant_id, key, attempt};
    return hmap_find(&v->map, void_hash(&k), void_eq, &k) != NULL;
}

int seg_voids_add(seg_voids *v, const char *tenant_id, const char *key, uint64_t attempt,
                  int64_t now_ms)
{
    if (seg_voids_has(v, tenant_id, key, attempt)) {
        return 0;
    }
    seg_voids_trim(v, now_ms);
    if (v->n >= ESC_VOIDS_MAX) {
        return ESC_EBUSY; /* a young mark is never dropped: a late copy could reserve */
    }
    size_t tlen = strlen(tenant_id), klen = strlen(key);
    seg_void *m = malloc(sizeof *m + tlen + klen + 2);
    if (m == NULL) {
        return ESC_ENOMEM;
    }
    memcpy(m->strs, tenant_id, tlen + 1);
    m->key = m->strs + tlen + 1;
    memcpy(m->key, key, klen + 1);
    m->attempt = attempt;
    m->at_ms = now_ms;
    m->next = NULL;
    void_key k = {tenant_id, key, attempt};
    (void)hmap_insert(&v->map, &m->by_id, void_hash(&k)); /* on ENOMEM still inserted */
    if (v->tail != NULL) {
        v->tail->next = m;
    } else {
        v->head = m;
    }
    v->tail = m;
    v->n++;
    return 0;
}
