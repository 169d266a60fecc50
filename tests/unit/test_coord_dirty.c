/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_dirty.c - the coordinator's work lists (coord_dirty.h) and
 * the assignment publication that rests on them (coord_asg.h): a marked
 * item is taken once, an item marked while its list is worked on is on the
 * next list, an unmarked one is skipped; the sweep marks every item within
 * one round; a change to a segment or a node is published at the next
 * publication when it was marked (coord_cat_touch, coord_cat_changed,
 * coord_cat_check_nodes) and within one sweep when nobody marked it; an
 * idle catalog publishes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "coord_asg.h"
#include "coord_cat.h"
#include "coord_dirty.h"

#define NITEMS 40

typedef struct fixture {
    coord_cat cat;
    coord_node *n1, *n2;
    coord_item *it[NITEMS];
} fixture;

static void node_up(coord_node *n)
{
    n->alive = n->seen = true;
    n->db_state = COORD_NODE_UP;
    n->incarnation = n->db_incarnation = 7;
}

/* NITEMS items of 2 segments each, all on n1, published once. */
static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(coord_cat_init(&f->cat), 0);
    coord_asg_start(&f->cat, 1, 100);
    f->n1 = coord_cat_add_node(&f->cat, "n1");
    f->n2 = coord_cat_add_node(&f->cat, "n2");
    node_up(f->n1);
    node_up(f->n2);
    uint64_t id = 1;
    for (int i = 0; i < NITEMS; i++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", i);
        f->it[i] = coord_cat_add_item(&f->cat, "t", name);
        for (int j = 0; j < 2; j++) {
            coord_seg *s = coord_cat_add_seg(&f->cat, f->it[i], id++, j);
            coord_cat_set_owner(s, f->n1);
            s->epoch = 1;
            s->state = WIRE_SEG_ACTIVE;
        }
    }
    (void)coord_cat_check_nodes(&f->cat);
    coord_asg_publish(&f->cat);
    assert_int_equal(f->n1->asg_count, 2 * NITEMS);
}

static void teardown(fixture *f)
{
    coord_cat_fini(&f->cat);
}

/* Publishes the marked items; returns how many versions that took. */
static uint64_t publish(fixture *f)
{
    uint64_t before = f->cat.asg_seq;
    coord_asg_publish(&f->cat);
    return f->cat.asg_seq - before;
}

static void test_take_once_and_remark(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    size_t n = 0;
    (void)coord_cat_take(&f.cat, COORD_WORK_ROUTE, &n); /* empty the list */
    coord_item *a = f.it[0], *b = f.it[1], *c = f.it[2];
    coord_cat_mark(&f.cat, a, COORD_WORK_ROUTE);
    coord_cat_mark(&f.cat, b, COORD_WORK_ROUTE);
    coord_cat_mark(&f.cat, a, COORD_WORK_ROUTE); /* once */
    coord_cat_mark(&f.cat, c, COORD_WORK_ROUTE);
    coord_cat_unmark(c, COORD_WORK_ROUTE); /* its work was done another way */
    coord_item **v = coord_cat_take(&f.cat, COORD_WORK_ROUTE, &n);
    assert_int_equal(n, 2);
    assert_ptr_equal(v[0], a);
    assert_ptr_equal(v[1], b);
    assert_false(coord_cat_marked(a, COORD_WORK_ROUTE));
    /* marked again while the list is worked on: on the next one */
    coord_cat_mark(&f.cat, a, COORD_WORK_ROUTE);
    assert_ptr_equal(v[0], a);
    assert_ptr_equal(v[1], b);
    v = coord_cat_take(&f.cat, COORD_WORK_ROUTE, &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(v[0], a);
    (void)coord_cat_take(&f.cat, COORD_WORK_ROUTE, &n);
    assert_int_equal(n, 0);
    /* unmarked then marked again: taken once */
    coord_cat_mark(&f.cat, c, COORD_WORK_ROUTE);
    coord_cat_unmark(c, COORD_WORK_ROUTE);
    coord_cat_mark(&f.cat, c, COORD_WORK_ROUTE);
    v = coord_cat_take(&f.cat, COORD_WORK_ROUTE, &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(v[0], c);
    teardown(&f);
}

static void test_sweep_covers_every_item(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    size_t n = 0;
    (void)coord_cat_take(&f.cat, COORD_WORK_PLACE, &n);
    bool seen[NITEMS] = {false};
    size_t k = coord_cat_sweep_slice(NITEMS, 100, 700); /* 6 a run: 7 runs */
    assert_int_equal(k, 6);
    for (int run = 0; run < 7; run++) {
        coord_cat_sweep(&f.cat, COORD_WORK_PLACE, k);
        coord_item **v = coord_cat_take(&f.cat, COORD_WORK_PLACE, &n);
        assert_true(n <= k);
        for (size_t i = 0; i < n; i++) {
            for (int j = 0; j < NITEMS; j++) {
                seen[j] |= v[i] == f.it[j];
            }
        }
    }
    for (int j = 0; j < NITEMS; j++) {
        assert_true(seen[j]);
    }
    teardown(&f);
}

static void test_idle_publishes_nothing(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    assert_int_equal(publish(&f), 0);
    assert_int_equal(f.n1->nlog, 2 * NITEMS);
    size_t k = coord_cat_sweep_slice(NITEMS, 100, 1000);
    for (int run = 0; run < 20; run++) {
        coord_cat_sweep(&f.cat, COORD_WORK_ASSIGN, k);
        assert_int_equal(publish(&f), 0);
        assert_int_equal(coord_cat_check_nodes(&f.cat), 0);
    }
    teardown(&f);
}

static void test_marked_change_published_at_once(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    coord_seg *s = f.it[17]->segs[1];
    coord_cat_set_owner(s, f.n2); /* an ownership write committed */
    s->epoch = 2;
    coord_cat_touch(&f.cat, s->item);
    assert_int_equal(publish(&f), 1);
    assert_ptr_equal(s->pub_node, f.n2);
    assert_int_equal(s->pub.epoch, 2);
    assert_int_equal(f.n1->asg_count, 2 * NITEMS - 1);
    assert_int_equal(f.n2->asg_count, 1);
    assert_ptr_equal(f.n2->log[f.n2->nlog - 1].seg, s);
    assert_ptr_equal(f.n1->log[f.n1->nlog - 1].seg, s); /* n1 learns it is gone */

    coord_item *p = f.it[3]; /* paused: coord_cat_changed */
    p->state = COORD_ITEM_PAUSED;
    coord_cat_changed(&f.cat, p);
    assert_int_equal(publish(&f), 2);
    assert_true(p->segs[0]->pub.paused && p->segs[1]->pub.paused);

    coord_seg *r = f.it[5]->segs[0]; /* revoked: in no assignment */
    r->revoked = true;
    coord_cat_touch(&f.cat, r->item);
    assert_int_equal(publish(&f), 1);
    assert_null(r->pub_node);
    teardown(&f);
}

static void test_node_change_published_at_once(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    f.n1->alive = false; /* its lease ran out: nobody touched its items */
    assert_int_equal(coord_cat_check_nodes(&f.cat), 1);
    assert_int_equal(publish(&f), 2 * NITEMS);
    assert_int_equal(f.n1->asg_count, 0);
    f.n1->alive = true;
    f.n1->incarnation = 8; /* a new process, not written yet: not assignable */
    assert_int_equal(coord_cat_check_nodes(&f.cat), 1);
    assert_int_equal(publish(&f), 0);
    f.n1->db_incarnation = 8; /* written */
    assert_int_equal(coord_cat_check_nodes(&f.cat), 1);
    assert_int_equal(publish(&f), 2 * NITEMS);
    assert_int_equal(f.n1->asg_count, 2 * NITEMS);
    teardown(&f);
}

static void test_unmarked_change_found_by_sweep(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    coord_seg *s = f.it[29]->segs[0];
    s->epoch = 5; /* changed behind the lists' back */
    assert_int_equal(publish(&f), 0); /* not marked: not seen yet */
    size_t k = coord_cat_sweep_slice(NITEMS, 100, 1000); /* 4 a run: 10 runs */
    uint64_t published = 0;
    for (int run = 0; run < 10; run++) {
        coord_cat_sweep(&f.cat, COORD_WORK_ASSIGN, k);
        published += publish(&f);
    }
    assert_int_equal(published, 1);
    assert_int_equal(s->pub.epoch, 5);
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_once_and_remark),
        cmocka_unit_test(test_sweep_covers_every_item),
        cmocka_unit_test(test_idle_publishes_nothing),
        cmocka_unit_test(test_marked_change_published_at_once),
        cmocka_unit_test(test_node_change_published_at_once),
        cmocka_unit_test(test_unmarked_change_found_by_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
