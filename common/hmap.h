/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmap.h - an intrusive chained hash map.
 *
 * Entries embed an hmap_node; the map never allocates entries, only its
 * bucket array (which doubles when the load passes 1). Lookup compares the
 * stored 64-bit hash first, then calls the caller's equality function.
 * Used for live holds (by id and by key) and items in the segment core.
 */
#ifndef ESC_HMAP_H
#define ESC_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hmap_node hmap_node;
struct hmap_node {
    hmap_node *next;
    uint64_t hash;
};

typedef struct hmap {
    hmap_node **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
} hmap;

/* Returns 0 or ESC_ENOMEM. */
int hmap_init(hmap *m, size_t nbuckets_hint);
void hmap_fini(hmap *m);
/* Inserts n (borrowed; must stay valid until removed). Returns 0 or ESC_ENOMEM
 * (when growing fails the entry is still inserted, the map is just fuller). */
int hmap_insert(hmap *m, hmap_node *n, uint64_t hash);
void hmap_remove(hmap *m, hmap_node *n);
/* First node with this hash for which eq(node, key) is true, or NULL. */
hmap_node *hmap_find(const hmap *m, uint64_t hash, bool (*eq)(const hmap_node *, const void *),
                     const void *key);

uint64_t hmap_hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hmap_hash_u64(uint64_t x);

#define HMAP_ENTRY(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
