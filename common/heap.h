/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.h - a binary min-heap of intrusive nodes, ordered by a 64-bit key.
 *
 * The caller embeds a heap_node in each entry (like hmap_node); the heap
 * keeps an array of pointers to them and writes each node's position into
 * it, so an entry can be removed or re-keyed in O(log n) without a search.
 * The heap never allocates entries, only its pointer array, which grows by
 * doubling (heap_push) or up front (heap_reserve, for callers that must not
 * fail later). Pure: no I/O, no clock.
 *
 * Users: the segment core's expiry order (a hold in state held, keyed by
 * its expiry) and libescrow's calls in flight (keyed by the next moment a
 * call needs attention). Ties between equal keys come out in no particular
 * order.
 *
 * Invariants: a node is in at most one heap; node->idx is its position
 * there, HEAP_NONE when it is in none; the key of nodes[i] is never below
 * its parent's. Change a key only through heap_update while the node is in.
 */
#ifndef ESC_HEAP_H
#define ESC_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEAP_NONE UINT32_MAX

typedef struct heap_node {
    int64_t key;  /* smallest first */
    uint32_t idx; /* position in the heap; HEAP_NONE when in none */
} heap_node;

typedef struct heap {
    heap_node **nodes; /* owned array of borrowed nodes; nodes[0] is the minimum */
    uint32_t len, cap;
} heap;

/* An empty heap; nothing is allocated until the first push or reserve. */
void heap_init(heap *h);
/* Frees the array; the nodes still in it are the caller's (their idx is
 * left as it was). */
void heap_fini(heap *h);
/* Makes room for cap nodes, so that the next pushes up to cap cannot fail.
 * Returns 0 or ESC_ENOMEM (the heap is unchanged then). */
int heap_reserve(heap *h, uint32_t cap);

/* Marks n as in no heap: call once before its first push. */
static inline void heap_node_init(heap_node *n)
{
    n->idx = HEAP_NONE;
}
static inline bool heap_node_in(const heap_node *n)
{
    return n->idx != HEAP_NONE;
}

/* Adds n (borrowed; must stay valid until it leaves) with key. Returns 0,
 * or ESC_ENOMEM when the array cannot grow (n stays out then). n must not
 * be in a heap. */
int heap_push(heap *h, heap_node *n, int64_t key);
/* Takes n out (n must be in h). */
void heap_remove(heap *h, heap_node *n);
/* Gives n (in h) a new key and restores the order. */
void heap_update(heap *h, heap_node *n, int64_t key);
/* The node with the smallest key, or NULL when empty. */
static inline heap_node *heap_top(const heap *h)
{
    return h->len > 0 ? h->nodes[0] : NULL;
}

#define HEAP_ENTRY(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
