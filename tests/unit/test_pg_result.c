/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pg_result.c - the checked getters of common/pg_result.h on results
 * built in memory (PQmakeEmptyPGresult, PQsetvalue: no server): integers at
 * and past their ranges, junk, SQL NULL for every getter, booleans, text and
 * its copy into a buffer that is too small.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "escrow_errors.h"
#include "pg_result.h"

/* One text column, one row per value; NULL entries are SQL NULL. */
static PGresult *column(const char *const *values, int n)
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    assert_non_null(res);
    PGresAttDesc att;
    memset(&att, 0, sizeof att);
    att.name = (char *)"v";
    att.typlen = -1;
    assert_true(PQsetResultAttrs(res, 1, &att));
    for (int i = 0; i < n; i++) {
        int len = values[i] != NULL ? (int)strlen(values[i]) : -1;
        assert_true(PQsetvalue(res, i, 0, (char *)values[i], len));
    }
    return res;
}

static void test_i64(void **state)
{
    (void)state;
    const char *v[] = {"0",
                       "-17",
                       "9223372036854775807",
                       "-9223372036854775808",
                       "9223372036854775808",
                       "12x",
                       "",
                       " 1",
                       "+1",
                       "-",
                       NULL};
    PGresult *res = column(v, 11);
    int64_t x = 0;
    assert_int_equal(pg_result_i64(res, 0, 0, &x), 0);
    assert_int_equal(x, 0);
    assert_int_equal(pg_result_i64(res, 1, 0, &x), 0);
    assert_int_equal(x, -17);
    assert_int_equal(pg_result_i64(res, 2, 0, &x), 0);
    assert_int_equal(x, INT64_MAX);
    assert_int_equal(pg_result_i64(res, 3, 0, &x), 0);
    assert_int_equal(x, INT64_MIN);
    for (int row = 4; row < 11; row++) {
        x = 5;
        assert_int_equal(pg_result_i64(res, row, 0, &x), ESC_EDB);
        assert_int_equal(x, 5); /* untouched */
        assert_int_equal(pg_result_i64_or(res, row, 0, -3), -3);
    }
    assert_int_equal(pg_result_i64_or(res, 1, 0, -3), -17);
    PQclear(res);
}

static void test_i32_u64(void **state)
{
    (void)state;
    const char *v[] = {"2147483647",           "-2147483648", "2147483648", "18446744073709551615",
                       "18446744073709551616", "-1",          NULL};
    PGresult *res = column(v, 7);
    int32_t i = 0;
    assert_int_equal(pg_result_i32(res, 0, 0, &i), 0);
    assert_int_equal(i, INT32_MAX);
    assert_int_equal(pg_result_i32(res, 1, 0, &i), 0);
    assert_int_equal(i, INT32_MIN);
    assert_int_equal(pg_result_i32(res, 2, 0, &i), ESC_EDB);
    assert_int_equal(i, INT32_MIN);
    assert_int_equal(pg_result_i32_or(res, 2, 0, 9), 9);
    assert_int_equal(pg_result_i32_or(res, 6, 0, 9), 9);
    uint64_t u = 1;
    assert_int_equal(pg_result_u64(res, 3, 0, &u), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(pg_result_u64(res, 4, 0, &u), ESC_EDB);
    assert_int_equal(pg_result_u64(res, 5, 0, &u), ESC_EDB);
    assert_int_equal(pg_result_u64(res, 6, 0, &u), ESC_EDB);
    assert_true(u == UINT64_MAX);
    PQclear(res);
}

static void test_bool(void **state)
{
    (void)state;
    const char *v[] = {"t", "f", "true", NULL};
    PGresult *res = column(v, 4);
    bool b = false;
    assert_int_equal(pg_result_bool(res, 0, 0, &b), 0);
    assert_true(b);
    assert_int_equal(pg_result_bool(res, 1, 0, &b), 0);
    assert_false(b);
    b = true;
    assert_int_equal(pg_result_bool(res, 2, 0, &b), ESC_EDB);
    assert_int_equal(pg_result_bool(res, 3, 0, &b), ESC_EDB);
    assert_true(b);
    assert_true(pg_result_true(res, 0, 0));
    assert_false(pg_result_true(res, 1, 0));
    assert_false(pg_result_true(res, 2, 0));
    assert_false(pg_result_true(res, 3, 0));
    PQclear(res);
}

static void test_text(void **state)
{
    (void)state;
    const char *v[] = {"abc", "", NULL};
    PGresult *res = column(v, 3);
    assert_false(pg_result_null(res, 1, 0));
    assert_true(pg_result_null(res, 2, 0));
    assert_string_equal(pg_result_text(res, 0, 0), "abc");
    assert_string_equal(pg_result_text(res, 1, 0), "");
    assert_null(pg_result_text(res, 2, 0));
    assert_string_equal(pg_result_text_or(res, 2, 0, "-"), "-");
    assert_string_equal(pg_result_text_or(res, 0, 0, "-"), "abc");
    char buf[4] = "zzz";
    assert_int_equal(pg_result_text_copy(res, 0, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "abc");
    assert_int_equal(pg_result_text_copy(res, 2, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    char tiny[3] = "zz";
    assert_int_equal(pg_result_text_copy(res, 0, 0, tiny, sizeof tiny), ESC_EDB);
    assert_string_equal(tiny, "zz");
    PQclear(res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i64),
        cmocka_unit_test(test_i32_u64),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
