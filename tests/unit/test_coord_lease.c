/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_lease.c - the coordinator's lease rules (coord_lease.c): a
 * node misses its lease only after lease_ms of silence; the loop's stall is
 * the time between two timer runs beyond their period; a stall over a
 * quarter of the lease grants every live node grace from now, and leaves
 * dead nodes dead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coord_lease.h"

#define LEASE_MS 2000
#define MS 1000 /* microseconds */

static void test_stall(void **state)
{
    (void)state;
    assert_int_equal(coord_lease_stall_us(0, 5000 * MS, 100), 0); /* first run */
    assert_int_equal(coord_lease_stall_us(1000 * MS, 1100 * MS, 100), 0);
    assert_int_equal(coord_lease_stall_us(1000 * MS, 1050 * MS, 100), 0); /* early */
    assert_int_equal(coord_lease_stall_us(1000 * MS, 900 * MS, 100), 0);  /* backwards */
    assert_int_equal(coord_lease_stall_us(1000 * MS, 4100 * MS, 100), 3000 * MS);
}

static void test_stalled_threshold(void **state)
{
    (void)state;
    assert_false(coord_lease_stalled(0, LEASE_MS));
    assert_false(coord_lease_stalled(LEASE_MS * MS / COORD_STALL_LEASE_DIV, LEASE_MS));
    assert_true(coord_lease_stalled(LEASE_MS * MS / COORD_STALL_LEASE_DIV + 1, LEASE_MS));
    assert_true(coord_lease_stalled(36000 * MS, LEASE_MS));
}

static void test_missed(void **state)
{
    (void)state;
    coord_node n;
    memset(&n, 0, sizeof n);
    n.alive = true;
    n.last_hb_us = 10000 * MS;
    assert_false(coord_lease_missed(&n, 10000 * MS + LEASE_MS * MS, LEASE_MS));
    assert_true(coord_lease_missed(&n, 10000 * MS + LEASE_MS * MS + 1, LEASE_MS));
    n.alive = false; /* already dead: nothing more to miss */
    assert_false(coord_lease_missed(&n, 99000 * MS, LEASE_MS));
}

/* A 36 s stall: every live node would have missed its lease; after grace
 * none has, until a full lease after the wake-up. */
static void test_grace(void **state)
{
    (void)state;
    coord_cat cat;
    assert_int_equal(coord_cat_init(&cat), 0);
    coord_node *a = coord_cat_add_node(&cat, "a");
    coord_node *b = coord_cat_add_node(&cat, "b");
    coord_node *dead = coord_cat_add_node(&cat, "dead");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(dead);
    a->alive = b->alive = true;
    a->last_hb_us = 1000 * MS;
    b->last_hb_us = 1050 * MS;
    dead->alive = false;
    dead->last_hb_us = 10 * MS;
    int64_t woke = 1100 * MS + 36000 * MS;
    assert_true(coord_lease_missed(a, woke, LEASE_MS));
    assert_int_equal(coord_lease_grace(&cat, woke), 2);
    assert_int_equal(a->last_hb_us, woke);
    assert_int_equal(b->last_hb_us, woke);
    assert_int_equal(dead->last_hb_us, 10 * MS);
    assert_false(dead->alive);
    assert_false(coord_lease_missed(a, woke + LEASE_MS * MS, LEASE_MS));
    assert_false(coord_lease_missed(b, woke + LEASE_MS * MS, LEASE_MS));
    /* a node that really died during the stall loses its lease one lease later */
    assert_true(coord_lease_missed(a, woke + LEASE_MS * MS + 1, LEASE_MS));
    /* grace never moves a fresher heartbeat back */
    b->last_hb_us = woke + 500 * MS;
    assert_int_equal(coord_lease_grace(&cat, woke + 100 * MS), 1);
    assert_int_equal(b->last_hb_us, woke + 500 * MS);
    coord_cat_fini(&cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall),
        cmocka_unit_test(test_stalled_threshold),
        cmocka_unit_test(test_missed),
        cmocka_unit_test(test_grace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
