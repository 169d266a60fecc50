/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heap.c - the binary heap (common/heap.h): order under pushes,
 * removals from the middle and re-keying, ties, positions kept in the
 * nodes, and reserve; randomised against a sorted model (seeded, printed on
 * failure).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heap.h"

#define N 512

typedef struct entry {
    heap_node node;
    int id;
} entry;

/* Every node sits where its idx says, and no child is below its parent. */
static void assert_shape(const heap *h)
{
    for (uint32_t i = 0; i < h->len; i++) {
        assert_int_equal(h->nodes[i]->idx, i);
        if (i > 0) {
            assert_true(h->nodes[(i - 1) / 2]->key <= h->nodes[i]->key);
        }
    }
}

static void test_order(void **state)
{
    (void)state;
    heap h;
    heap_init(&h);
    entry e[8];
    int64_t keys[8] = {5, 3, 9, 3, -1, 7, 0, 5};
    for (int i = 0; i < 8; i++) {
        heap_node_init(&e[i].node);
        assert_false(heap_node_in(&e[i].node));
        assert_int_equal(heap_push(&h, &e[i].node, keys[i]), 0);
        assert_true(heap_node_in(&e[i].node));
    }
    assert_shape(&h);
    int64_t want[8] = {-1, 0, 3, 3, 5, 5, 7, 9};
    for (int i = 0; i < 8; i++) {
        heap_node *top = heap_top(&h);
        assert_non_null(top);
        assert_int_equal(top->key, want[i]);
        heap_remove(&h, top);
        assert_false(heap_node_in(top));
        assert_shape(&h);
    }
    assert_null(heap_top(&h));
    heap_fini(&h);
}

static void test_update_and_remove_middle(void **state)
{
    (void)state;
    heap h;
    heap_init(&h);
    assert_int_equal(heap_reserve(&h, 4), 0);
    assert_int_equal(h.cap, 4);
    entry e[4];
    for (int i = 0; i < 4; i++) {
        e[i].id = i;
        heap_node_init(&e[i].node);
        assert_int_equal(heap_push(&h, &e[i].node, 10 * (i + 1)), 0);
    }
    assert_int_equal(h.cap, 4);     /* reserved: no growth */
    heap_update(&h, &e[3].node, 1); /* 40 -> 1: to the top */
    assert_ptr_equal(HEAP_ENTRY(heap_top(&h), entry, node), &e[3]);
    heap_update(&h, &e[3].node, 100); /* and down again */
    assert_ptr_equal(HEAP_ENTRY(heap_top(&h), entry, node), &e[0]);
    heap_remove(&h, &e[1].node); /* from the middle */
    assert_shape(&h);
    assert_int_equal(h.len, 3);
    heap_remove(&h, &e[0].node);
    assert_ptr_equal(HEAP_ENTRY(heap_top(&h), entry, node), &e[2]);
    heap_fini(&h);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Random pushes, updates and removals; then the heap drains in the order
 * of a sorted copy of the keys still in it. */
static void test_random(void **state)
{
    (void)state;
    unsigned seed = 12345u;
    srand(seed);
    heap h;
    heap_init(&h);
    static entry e[N];
    for (int i = 0; i < N; i++) {
        heap_node_init(&e[i].node);
    }
    for (int step = 0; step < 20000; step++) {
        entry *x = &e[rand() % N];
        int64_t key = rand() % 1000 - 500;
        if (!heap_node_in(&x->node)) {
            assert_int_equal(heap_push(&h, &x->node, key), 0);
        } else if (rand() % 2) {
            heap_update(&h, &x->node, key);
        } else {
            heap_remove(&h, &x->node);
        }
    }
    assert_shape(&h);
    int64_t model[N];
    size_t n = 0;
    for (int i = 0; i < N; i++) {
        if (heap_node_in(&e[i].node)) {
            model[n++] = e[i].node.key;
        }
    }
    assert_int_equal(n, h.len);
    qsort(model, n, sizeof model[0], cmp_i64);
    for (size_t i = 0; i < n; i++) {
        heap_node *top = heap_top(&h);
        if (top->key != model[i]) {
            fprintf(stderr, "reproduce with seed=%u\n", seed);
        }
        assert_int_equal(top->key, model[i]);
        heap_remove(&h, top);
    }
    heap_fini(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_update_and_remove_middle),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
