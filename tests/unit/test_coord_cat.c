/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_cat.c - the policy's snapshot of an item (coord_cat_snapshot):
 * a segment's demand decays over the time since its last report, since a
 * node's delta heartbeat carries a segment only when its figures changed.
 * A node's index of its segments (coord_cat_set_owner) follows every change
 * of owner, and coord_cat_touch_node marks exactly the items of the node's
 * segments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "coord_cat.h"
#include "coord_policy.h"

static void test_snapshot_demand_decays(void **state)
{
    (void)state;
    coord_cat cat;
    assert_int_equal(coord_cat_init(&cat), 0);
    coord_item *it = coord_cat_add_item(&cat, "t", "a");
    assert_non_null(it);
    coord_seg *rep = coord_cat_add_seg(&cat, it, 11, 0);
    coord_seg *unrep = coord_cat_add_seg(&cat, it, 12, 1);
    assert_non_null(rep);
    assert_non_null(unrep);
    const int64_t t0 = 1000000000;
    rep->reported = true; /* reported at t0 at its epoch, 100 units/s then */
    rep->rep_epoch = rep->epoch;
    rep->last_rep_us = t0;
    rep->demand = 100.0;
    unrep->demand = 7.0; /* never reported: its figure is taken as it is */

    coord_pseg segs[2];
    coord_pitem in;
    coord_cat_snapshot(&cat, it, 80, 20, t0, segs, &in);
    assert_true(segs[0].demand == 100.0); /* just reported */
    assert_true(segs[1].demand == 7.0);
    coord_cat_snapshot(&cat, it, 80, 20, t0 + 500000, segs, &in);
    assert_true(segs[0].demand > 0.0 && segs[0].demand < 100.0); /* decaying */
    coord_cat_snapshot(&cat, it, 80, 20, t0 + 60000000, segs, &in);
    assert_true(segs[0].demand == 0.0); /* a minute without a report: nobody asks */
    assert_true(segs[1].demand == 7.0);
    assert_true(rep->demand == 100.0); /* the snapshot changes nothing */
    coord_cat_fini(&cat);
}

/* n->owned holds exactly the segments whose owner is n, each once, and
 * every segment's owned_idx names its place. */
static void assert_index(const coord_cat *c)
{
    size_t total = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        const coord_node *n = c->nodes[i];
        for (size_t j = 0; j < n->nowned; j++) {
            assert_ptr_equal(n->owned[j]->owner, n);
            assert_int_equal(n->owned[j]->owned_idx, j);
        }
        total += n->nowned;
    }
    size_t owned = 0;
    for (size_t i = 0; i < c->nsegs; i++) {
        owned += c->segs[i]->owner != NULL;
    }
    assert_int_equal(total, owned); /* none missing, none twice */
}

static void test_node_index(void **state)
{
    (void)state;
    enum { NITEMS = 300, NSEGS = 4 };
    coord_cat cat;
    assert_int_equal(coord_cat_init(&cat), 0);
    coord_node *nodes[3];
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        nodes[i] = coord_cat_add_node(&cat, name);
        assert_non_null(nodes[i]);
    }
    uint64_t id = 1;
    for (int i = 0; i < NITEMS; i++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", i);
        coord_item *it = coord_cat_add_item(&cat, "t", name);
        assert_non_null(it);
        for (int k = 0; k < NSEGS; k++) {
            coord_seg *s = coord_cat_add_seg(&cat, it, id++, k);
            assert_non_null(s);
            if (k < 3) { /* the 4th stays without an owner */
                coord_cat_set_owner(s, nodes[(i + k) % 3]);
            }
        }
    }
    assert_index(&cat);
    assert_int_equal(nodes[0]->nowned + nodes[1]->nowned + nodes[2]->nowned, NITEMS * 3);
    /* moves in a pseudo-random order: to another node, to none, back */
    uint64_t x = 12345;
    for (int r = 0; r < 5000; r++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        coord_seg *s = cat.segs[(x >> 33) % cat.nsegs];
        int to = (int)((x >> 20) % 4);
        coord_cat_set_owner(s, to == 3 ? NULL : nodes[to]);
        coord_cat_set_owner(s, s->owner); /* the same owner again: no change */
    }
    assert_index(&cat);

    /* touching a node marks exactly the items with a segment it owns */
    size_t n = 0;
    (void)coord_cat_take(&cat, COORD_WORK_ROUTE, &n); /* clear the marks */
    assert_int_equal(n, NITEMS);
    coord_cat_touch_node(&cat, nodes[1]);
    coord_item **v = coord_cat_take(&cat, COORD_WORK_ROUTE, &n);
    size_t want = 0;
    for (size_t i = 0; i < cat.nitems; i++) {
        bool has = false;
        for (size_t k = 0; k < cat.items[i]->nsegs; k++) {
            has = has || cat.items[i]->segs[k]->owner == nodes[1];
        }
        want += has;
    }
    assert_true(want > 0);
    assert_int_equal(n, want);
    for (size_t i = 0; i < n; i++) {
        bool has = false;
        for (size_t k = 0; k < v[i]->nsegs; k++) {
            has = has || v[i]->segs[k]->owner == nodes[1];
        }
        assert_true(has);
    }
    /* a node with no segment marks nothing */
    for (size_t i = cat.nsegs; i-- > 0;) {
        if (cat.segs[i]->owner == nodes[2]) {
            coord_cat_set_owner(cat.segs[i], NULL);
        }
    }
    assert_int_equal(nodes[2]->nowned, 0);
    assert_index(&cat);
    coord_cat_touch_node(&cat, nodes[2]);
    (void)coord_cat_take(&cat, COORD_WORK_ROUTE, &n);
    assert_int_equal(n, 0);
    coord_cat_fini(&cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_demand_decays),
        cmocka_unit_test(test_node_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
