/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_change.c - work that grows with change: when the coordinator
 * reads its catalog again (coord_change.c: the first poll, a counter that
 * moved, one poll after it stopped, the safety net; never otherwise), how
 * many items a timer looks at per run (coord_cat_sweep_slice), and which
 * items a change marks (coord_cat_touch, coord_cat_changed, transfers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coord_cat.h"
#include "coord_change.h"

#define S 1000000 /* microseconds */
#define FULL (30 * S)

static void test_first_poll_reads(void **state)
{
    (void)state;
    coord_change ch;
    memset(&ch, 0, sizeof ch);
    assert_true(coord_change_observe(&ch, 0, 0, FULL)); /* nothing known yet */
}

static void test_quiet_catalog_is_not_read(void **state)
{
    (void)state;
    coord_change ch;
    memset(&ch, 0, sizeof ch);
    assert_true(coord_change_observe(&ch, 7, 0, FULL));
    assert_true(coord_change_observe(&ch, 7, 1 * S, FULL)); /* one more: a late commit */
    for (int i = 2; i < 29; i++) {
        assert_false(coord_change_observe(&ch, 7, i * S, FULL));
    }
    assert_int_equal(ch.reads, 2);
    assert_int_equal(ch.skips, 27);
}

static void test_moved_counter_reads_twice(void **state)
{
    (void)state;
    coord_change ch;
    memset(&ch, 0, sizeof ch);
    (void)coord_change_observe(&ch, 7, 0, FULL);
    (void)coord_change_observe(&ch, 7, 0, FULL);
    assert_false(coord_change_observe(&ch, 7, 0, FULL));
    assert_true(coord_change_observe(&ch, 9, 0, FULL));  /* moved */
    assert_true(coord_change_observe(&ch, 9, 0, FULL));  /* after it stopped */
    assert_false(coord_change_observe(&ch, 9, 0, FULL)); /* quiet */
    assert_true(coord_change_observe(&ch, 3, 0, FULL));  /* any difference, even lower */
}

static void test_safety_net(void **state)
{
    (void)state;
    coord_change ch;
    memset(&ch, 0, sizeof ch);
    (void)coord_change_observe(&ch, 1, 0, FULL);
    (void)coord_change_observe(&ch, 1, 0, FULL);
    assert_false(coord_change_observe(&ch, 1, FULL - 1, FULL));
    assert_true(coord_change_observe(&ch, 1, FULL, FULL));
}

static void test_sweep_slice(void **state)
{
    (void)state;
    assert_int_equal(coord_cat_sweep_slice(0, 200, 5000), 0);
    assert_int_equal(coord_cat_sweep_slice(1, 200, 5000), 1);
    assert_int_equal(coord_cat_sweep_slice(25, 200, 5000), 1);
    assert_int_equal(coord_cat_sweep_slice(26, 200, 5000), 2); /* rounds up: never slower */
    assert_int_equal(coord_cat_sweep_slice(3000, 200, 5000), 120);
    assert_int_equal(coord_cat_sweep_slice(100000, 100, 50000), 200);
    assert_int_equal(coord_cat_sweep_slice(10, 5000, 5000), 10); /* period >= sweep: all */
    assert_int_equal(coord_cat_sweep_slice(10, 6000, 5000), 10);
}

static bool policy(const coord_item *it)
{
    return coord_cat_marked(it, COORD_WORK_POLICY);
}

/* Marked for everything a touch marks. */
static bool touched(const coord_item *it)
{
    return policy(it) && coord_cat_marked(it, COORD_WORK_ROUTE) &&
           coord_cat_marked(it, COORD_WORK_PLACE) && coord_cat_marked(it, COORD_WORK_ASSIGN);
}

static bool any(const coord_item *it)
{
    for (int w = 0; w < COORD_WORK_KINDS; w++) {
        if (coord_cat_marked(it, (coord_work)w)) {
            return true;
        }
    }
    return false;
}

static void clear(coord_item *it)
{
    for (int w = 0; w < COORD_WORK_KINDS; w++) {
        coord_cat_unmark(it, (coord_work)w);
    }
}

static void test_changes_mark_items(void **state)
{
    (void)state;
    coord_cat cat;
    assert_int_equal(coord_cat_init(&cat), 0);
    coord_item *a = coord_cat_add_item(&cat, "t", "a");
    coord_item *b = coord_cat_add_item(&cat, "t", "b");
    assert_non_null(a);
    assert_non_null(b);
    assert_true(touched(a)); /* new: looked at once */
    clear(a);
    clear(b);

    coord_seg *s = coord_cat_add_seg(&cat, a, 11, 0);
    assert_non_null(s);
    assert_true(touched(a));
    assert_false(any(b));
    clear(a);

    coord_cat_changed(&cat, b); /* and the watcher checks its route at once */
    assert_true(policy(b) && coord_cat_marked(b, COORD_WORK_PLACE) &&
                coord_cat_marked(b, COORD_WORK_ASSIGN));
    clear(b);

    coord_node *n = coord_cat_add_node(&cat, "n1");
    assert_non_null(n);
    coord_cat_set_owner(s, n);
    coord_cat_touch_node(&cat, n);
    assert_true(touched(a));
    assert_false(any(b)); /* no segment on n */
    clear(a);

    coord_xfer *x = coord_cat_add_xfer(&cat, a, 5, 11, 0, 3, COORD_XF_PLANNED);
    assert_non_null(x);
    assert_true(policy(a));
    clear(a);
    coord_cat_drop_xfer(&cat, x);
    assert_true(policy(a));
    assert_false(any(b));
    coord_cat_fini(&cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_poll_reads),
        cmocka_unit_test(test_quiet_catalog_is_not_read),
        cmocka_unit_test(test_moved_counter_reads_twice),
        cmocka_unit_test(test_safety_net),
        cmocka_unit_test(test_sweep_slice),
        cmocka_unit_test(test_changes_mark_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
