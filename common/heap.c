/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.c - see heap.h. The classic array heap: children of i at 2i+1 and
 * 2i+2; every move of a node writes its new position into it.
 */
#include "heap.h"

#include <stdlib.h>

#include "escrow_errors.h"
#include "log.h"

#define HEAP_CAP_INITIAL 1024u

static void place(heap *h, uint32_t i, heap_node *n)
{
    h->nodes[i] = n;
    n->idx = i;
}

static void sift_up(heap *h, uint32_t i)
{
    heap_node *n = h->nodes[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (h->nodes[parent]->key <= n->key) {
            break;
        }
        place(h, i, h->nodes[parent]);
        i = parent;
    }
    place(h, i, n);
}

static void sift_down(heap *h, uint32_t i)
{
    heap_node *n = h->nodes[i];
    for (;;) {
        uint32_t m = 2 * i + 1;
        if (m >= h->len) {
            break;
        }
        if (m + 1 < h->len && h->nodes[m + 1]->key < h->nodes[m]->key) {
            m++;
        }
        if (h->nodes[m]->key >= n->key) {
            break;
        }
        place(h, i, h->nodes[m]);
        i = m;
    }
    place(h, i, n);
}

static void fix(heap *h, heap_node *n)
{
    uint32_t i = n->idx;
    if (i > 0 && h->nodes[(i - 1) / 2]->key > n->key) {
        sift_up(h, i);
    } else {
        sift_down(h, i);
    }
}

void heap_init(heap *h)
{
    h->nodes = NULL;
    h->len = 0;
    h->cap = 0;
}

void heap_fini(heap *h)
{
    free(h->nodes);
    heap_init(h);
}

int heap_reserve(heap *h, uint32_t cap)
{
    if (cap <= h->cap) {
        return 0;
    }
    heap_node **nodes = realloc(h->nodes, (size_t)cap * sizeof *nodes);
    if (nodes == NULL) {
        return ESC_ENOMEM;
    }
    h->nodes = nodes;
    h->cap = cap;
    return 0;
}

int heap_push(heap *h, heap_node *n, int64_t key)
{
    ESC_ASSERT(!heap_node_in(n));
    if (h->len == h->cap) {
        if (h->cap > UINT32_MAX / 2) {
            return ESC_ENOMEM;
        }
        int rc = heap_reserve(h, h->cap ? h->cap * 2 : HEAP_CAP_INITIAL);
        if (rc != 0) {
            return rc;
        }
    }
    n->key = key;
    place(h, h->len++, n);
    sift_up(h, n->idx);
    return 0;
}

void heap_remove(heap *h, heap_node *n)
{
    ESC_ASSERT(n->idx < h->len && h->nodes[n->idx] == n);
    heap_node *last = h->nodes[--h->len];
    if (last != n) {
        place(h, n->idx, last);
        fix(h, last);
    }
    n->idx = HEAP_NONE;
}

void heap_update(heap *h, heap_node *n, int64_t key)
{
    ESC_ASSERT(n->idx < h->len && h->nodes[n->idx] == n);
    n->key = key;
    fix(h, n);
}
