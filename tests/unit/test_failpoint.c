/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_failpoint.c - the failpoint table (common/failpoint.h): values read
 * from the environment once, malformed ones refused with the variable's
 * name (and left off), percentages clamped, and unset failpoints that
 * never fire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "escrow_errors.h"
#include "failpoint.h"

static void test_unset_never_fires(void **state)
{
    (void)state;
    unsetenv("ESC_FAILPOINT_COMMIT_LOST_PCT");
    unsetenv("ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT");
    for (int i = 0; i < 100; i++) {
        assert_false(failpoint_commit_lost());
    }
    assert_false(failpoint_quota_exit_after_sent());
    assert_int_equal(failpoint_load(FAILPOINT_COMMIT_LOST_PCT, NULL, 0), 0);
}

static void test_node_exit(void **state)
{
    (void)state;
    setenv("ESC_FAILPOINT_NODE_EXIT", "after-give:250", 1);
    char why[256] = "";
    assert_int_equal(failpoint_load(FAILPOINT_NODE_EXIT, why, sizeof why), 0);
    assert_false(failpoint_node_exit(FAILPOINT_BEFORE_COMMIT));
    assert_false(failpoint_node_exit(FAILPOINT_AFTER_COMMIT));
    assert_true(failpoint_node_exit(FAILPOINT_AFTER_GIVE)); /* 250 % is 100 % */
    /* read once: a later change of the environment is not seen */
    setenv("ESC_FAILPOINT_NODE_EXIT", "before-commit", 1);
    assert_false(failpoint_node_exit(FAILPOINT_BEFORE_COMMIT));
    assert_string_equal(failpoint_where_name(FAILPOINT_AFTER_GIVE), "after-give");
}

static void test_malformed(void **state)
{
    (void)state;
    setenv("ESC_FAILPOINT_FOLLOW_CRASH_BATCH", "3x", 1);
    char why[256] = "";
    assert_int_equal(failpoint_load(FAILPOINT_FOLLOW_CRASH_BATCH, why, sizeof why), ESC_EINVAL);
    assert_non_null(strstr(why, "ESC_FAILPOINT_FOLLOW_CRASH_BATCH=3x"));
    assert_int_equal(failpoint_follow_crash_batch(), 0); /* off */
    setenv("ESC_FAILPOINT_COORD_EXIT_AFTER_SENT", "1", 1);
    assert_true(failpoint_coord_exit_after_sent());
    setenv("ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY", "yes", 1); /* only "1" is on */
    assert_false(failpoint_quota_exit_after_apply());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_never_fires),
        cmocka_unit_test(test_node_exit),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
