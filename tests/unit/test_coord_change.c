/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_change.c - work that grows with change: when the coordinator
 * reads its catalog again (coord_change.c: a full read first, then the rows
 * changed since the previous read's snapshot xmin, rows not applied again,
 * the safety net), how
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
    assert_true(coord_change_full_due(&ch, 0, FULL)); /* nothing known yet */
    coord_change_run r;
    coord_change_begin(&ch, &r, false); /* asked from a mark: still full */
    assert_true(r.full);
    assert_int_equal(r.since, 0);
    coord_change_xmin(&r, 500);
    coord_change_finish(&ch, &r, true);
    assert_true(ch.known);
    assert_int_equal(ch.mark, 500);
    assert_false(coord_change_full_due(&ch, 0, FULL));
}

/* The mark is the snapshot's xmin, not the highest id read: a transaction
 * that took id 480 before a read whose snapshot has xmin 480 (it was still
 * running) and committed after it is fetched by the next read. */
static void test_mark_is_snapshot_xmin(void **state)
{
    (void)state;
    coord_change ch = {.known = true, .mark = 400};
    coord_change_run r;
    coord_change_begin(&ch, &r, false);
    assert_false(r.full);
    assert_int_equal(r.since, 400);
    coord_change_xmin(&r, 480); /* 480 was running; rows of 490 were read */
    coord_change_finish(&ch, &r, true);
    assert_int_equal(ch.mark, 480); /* 480 <= cat_xid: fetched next time */
    coord_change_begin(&ch, &r, false);
    assert_int_equal(r.since, 480);
}

static void test_failed_read_keeps_mark(void **state)
{
    (void)state;
    coord_change ch = {.known = true, .mark = 400};
    coord_change_run r;
    coord_change_begin(&ch, &r, false);
    coord_change_xmin(&r, 900);
    coord_change_finish(&ch, &r, false);
    assert_int_equal(ch.mark, 400);
    coord_change_begin(&ch, &r, false); /* no xmin read: nothing moves either */
    coord_change_finish(&ch, &r, true);
    assert_int_equal(ch.mark, 400);
    coord_change fresh;
    memset(&fresh, 0, sizeof fresh);
    coord_change_begin(&fresh, &r, true);
    coord_change_xmin(&r, 900);
    coord_change_finish(&fresh, &r, false); /* a failed full read: still unknown */
    assert_false(fresh.known);
    assert_true(coord_change_full_due(&fresh, 0, FULL));
}

/* A row not applied (a write in flight on it) is fetched again. */
static void test_rows_not_applied_are_kept(void **state)
{
    (void)state;
    coord_change ch = {.known = true, .mark = 400};
    coord_change_run r;
    coord_change_begin(&ch, &r, false);
    coord_change_xmin(&r, 900);
    coord_change_keep(&r, 700);
    coord_change_keep(&r, 450);
    coord_change_keep(&r, 800);
    coord_change_finish(&ch, &r, true);
    assert_int_equal(ch.mark, 450);
    coord_change_begin(&ch, &r, false);
    coord_change_xmin(&r, 900);
    coord_change_keep(&r, 950); /* above the xmin: the xmin is lower */
    coord_change_finish(&ch, &r, true);
    assert_int_equal(ch.mark, 900);
    coord_change_begin(&ch, &r, false);
    coord_change_xmin(&r, 1200);
    r.incomplete = true; /* a part dropped: from where it began */
    coord_change_finish(&ch, &r, true);
    assert_int_equal(ch.mark, 900);
}

static void test_safety_net(void **state)
{
    (void)state;
    coord_change ch = {.known = true, .mark = 1};
    assert_false(coord_change_full_due(&ch, FULL - 1, FULL));
    assert_true(coord_change_full_due(&ch, FULL, FULL));
    coord_change_run r;
    coord_change_begin(&ch, &r, true);
    assert_true(r.full);
    assert_int_equal(r.since, 0);
}

static void test_parse_xid(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(coord_change_parse_xid("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(coord_change_parse_xid("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(coord_change_parse_xid("18446744073709551616", &v), -1);
    assert_int_equal(coord_change_parse_xid("", &v), -1);
    assert_int_equal(coord_change_parse_xid("-1", &v), -1);
    assert_int_equal(coord_change_parse_xid("12x", &v), -1);
    assert_int_equal(coord_change_parse_xid(NULL, &v), -1);
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
        cmocka_unit_test(test_mark_is_snapshot_xmin),
        cmocka_unit_test(test_failed_read_keeps_mark),
        cmocka_unit_test(test_rows_not_applied_are_kept),
        cmocka_unit_test(test_safety_net),
        cmocka_unit_test(test_parse_xid),
        cmocka_unit_test(test_sweep_slice),
        cmocka_unit_test(test_changes_mark_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
