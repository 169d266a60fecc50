/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_cat.c - the policy's snapshot of an item (coord_cat_snapshot):
 * a segment's demand decays over the time since its last report, since a
 * node's delta heartbeat carries a segment only when its figures changed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_demand_decays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
