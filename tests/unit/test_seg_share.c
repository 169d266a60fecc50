/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_seg_share.c - the adaptive share of a batch (segment/core/seg_share.h):
 * it starts at slots_max; a slow shared commit halves it down to slots_min
 * and the next commit is not judged; a commit within the slack gives one
 * slot back; commits while one tenant writes alone change nothing but the
 * baseline; the baseline is the fastest commit of the last one to two
 * windows; the margin keeps sub-millisecond jitter from cutting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "seg_share.h"

static seg_share s;

static int setup(void **state)
{
    (void)state;
    seg_share_config cfg;
    seg_share_defaults(&cfg);
    seg_share_init(&s, &cfg, 0);
    return 0;
}

static void starts_at_max_without_baseline(void **state)
{
    (void)state;
    assert_int_equal(s.slots, SEG_SHARE_SLOTS_MAX);
    assert_int_equal(seg_share_baseline(&s), -1);
    /* the first commit only sets the baseline, however slow */
    assert_int_equal(seg_share_committed(&s, 50000, true, 1000), SEG_SHARE_SLOTS_MAX);
    assert_int_equal(seg_share_baseline(&s), 50000);
}

static void slow_shared_commit_halves_then_skips_one(void **state)
{
    (void)state;
    seg_share_committed(&s, 4000, true, 1000); /* baseline 4 ms */
    /* 6 ms: exactly 150 %, not slow */
    assert_int_equal(seg_share_committed(&s, 6000, true, 2000), SEG_SHARE_SLOTS_MAX);
    /* 6.001 ms: slow, halved */
    assert_int_equal(seg_share_committed(&s, 6001, true, 3000), SEG_SHARE_SLOTS_MAX / 2);
    assert_int_equal(s.cuts, 1);
    /* the batch filled under the old share: not judged */
    assert_int_equal(seg_share_committed(&s, 20000, true, 4000), SEG_SHARE_SLOTS_MAX / 2);
    /* judged again */
    assert_int_equal(seg_share_committed(&s, 20000, true, 5000), SEG_SHARE_SLOTS_MAX / 4);
    assert_int_equal(s.cuts, 2);
}

static void never_below_min_and_grows_back_by_one(void **state)
{
    (void)state;
    seg_share_committed(&s, 2000, true, 0);
    int64_t t = 1;
    for (int i = 0; i < 40; i++) {
        seg_share_committed(&s, 100000, true, t++);
    }
    assert_int_equal(s.slots, SEG_SHARE_SLOTS_MIN);
    /* fast commits: one slot back each */
    for (uint32_t i = 1; i <= 5; i++) {
        assert_int_equal(seg_share_committed(&s, 2500, true, t++), SEG_SHARE_SLOTS_MIN + i);
    }
    for (int i = 0; i < 200; i++) {
        seg_share_committed(&s, 2500, true, t++);
    }
    assert_int_equal(s.slots, SEG_SHARE_SLOTS_MAX);
}

static void alone_changes_nothing_but_the_baseline(void **state)
{
    (void)state;
    seg_share_committed(&s, 3000, true, 0);
    for (int i = 1; i <= 10; i++) {
        assert_int_equal(seg_share_committed(&s, 90000, false, i), SEG_SHARE_SLOTS_MAX);
    }
    seg_share_committed(&s, 1500, false, 20);
    assert_int_equal(seg_share_baseline(&s), 1500);
    assert_int_equal(s.cuts, 0);
}

static void margin_keeps_jitter_from_cutting(void **state)
{
    (void)state;
    seg_share_committed(&s, 400, true, 0); /* 0.4 ms */
    /* 3.5x the baseline but only 1 ms over it: not slow */
    assert_int_equal(seg_share_committed(&s, 1400, true, 1), SEG_SHARE_SLOTS_MAX);
    assert_int_equal(seg_share_committed(&s, 1401, true, 2), SEG_SHARE_SLOTS_MAX / 2);
}

static void baseline_forgets_after_two_windows(void **state)
{
    (void)state;
    const int64_t w = SEG_SHARE_WINDOW_US;
    seg_share_committed(&s, 1000, false, 10);
    seg_share_committed(&s, 8000, false, w + 10); /* second window */
    assert_int_equal(seg_share_baseline(&s), 1000);
    seg_share_committed(&s, 9000, false, 2 * w + 10); /* third: the first is gone */
    assert_int_equal(seg_share_baseline(&s), 8000);
    seg_share_committed(&s, 9500, false, 5 * w); /* two windows idle: both gone */
    assert_int_equal(seg_share_baseline(&s), 9500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(starts_at_max_without_baseline, setup),
        cmocka_unit_test_setup(slow_shared_commit_halves_then_skips_one, setup),
        cmocka_unit_test_setup(never_below_min_and_grows_back_by_one, setup),
        cmocka_unit_test_setup(alone_changes_nothing_but_the_baseline, setup),
        cmocka_unit_test_setup(margin_keeps_jitter_from_cutting, setup),
        cmocka_unit_test_setup(baseline_forgets_after_two_windows, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
