/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pg_array.c - PostgreSQL array literals (common/pg_array.h): building
 * bigint and text arrays (empty, escaped quotes and backslashes, appending
 * after a look at the text), reading them back, and the literals the parser
 * must refuse (no brace, unterminated quotes, nested arrays, junk after the
 * closing brace, NULL or text in a bigint array, more elements than room).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "escrow_errors.h"
#include "pg_array.h"

static void test_build_empty(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    assert_string_equal(pg_array_text(&a), "{}");
    assert_string_equal(pg_array_text(&a), "{}");
    pg_array_fini(&a);
    assert_null(a.p);
}

static void test_build_i64(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    pg_array_i64(&a, 1);
    pg_array_i64(&a, -42);
    pg_array_i64(&a, INT64_MAX);
    pg_array_i64(&a, INT64_MIN);
    assert_string_equal(pg_array_text(&a), "{1,-42,9223372036854775807,-9223372036854775808}");
    assert_int_equal(a.n, 4);
    pg_array_fini(&a);
}

static void test_build_str_escapes(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    pg_array_str(&a, "plain");
    pg_array_str(&a, "");
    pg_array_str(&a, "say \"hi\"");
    pg_array_str(&a, "back\\slash");
    pg_array_str(&a, "NULL");
    assert_string_equal(pg_array_text(&a),
                        "{\"plain\",\"\",\"say \\\"hi\\\"\",\"back\\\\slash\",\"NULL\"}");
    pg_array_fini(&a);
}

static void test_append_after_text(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    pg_array_i64(&a, 7);
    assert_string_equal(pg_array_text(&a), "{7}");
    pg_array_i64(&a, 8);
    assert_string_equal(pg_array_text(&a), "{7,8}");
    for (int i = 0; i < 1000; i++) { /* grows past its first allocations */
        pg_array_i64(&a, i);
    }
    assert_int_equal(a.n, 1002);
    const char *t = pg_array_text(&a);
    assert_memory_equal(t, "{7,8,0,1,2,", 11);
    assert_string_equal(t + strlen(t) - 5, ",999}");
    pg_array_fini(&a);
}

/* reset empties the literal and keeps the buffer for the next one. */
static void test_reset_reuses(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    pg_array_str(&a, "x");
    pg_array_i64(&a, 1);
    assert_string_equal(pg_array_text(&a), "{\"x\",1}");
    const char *buf = a.p;
    pg_array_reset(&a);
    assert_int_equal(a.n, 0);
    assert_string_equal(pg_array_text(&a), "{}");
    pg_array_i64(&a, 2);
    assert_string_equal(pg_array_text(&a), "{2}");
    assert_ptr_equal(a.p, buf);
    pg_array_fini(&a);
}

/* Every element of text, as "a|b|<NULL>|". */
static int elements(const char *text, char *out, size_t cap)
{
    pg_array_iter it;
    int rc = pg_array_iter_init(&it, text);
    out[0] = '\0';
    char el[64];
    bool is_null = false;
    while (rc == 0 && (rc = pg_array_iter_next(&it, el, sizeof el, &is_null)) == 1) {
        strncat(out, is_null ? "<NULL>" : el, cap - strlen(out) - 1);
        strncat(out, "|", cap - strlen(out) - 1);
        rc = 0;
    }
    return rc;
}

static void test_read_round_trip(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    const char *in[] = {"a", "", "say \"hi\"", "back\\slash", "NULL", " spaced ", "x,y}"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        pg_array_str(&a, in[i]);
    }
    char out[256];
    assert_int_equal(elements(pg_array_text(&a), out, sizeof out), 0);
    assert_string_equal(out, "a||say \"hi\"|back\\slash|NULL| spaced |x,y}|");
    pg_array_fini(&a);
}

static void test_read_postgres_output(void **state)
{
    (void)state;
    char out[256];
    /* what array_out writes: bare words, quotes only where needed, NULL */
    assert_int_equal(elements("{eu,us,\"a b\",NULL,\"NULL\",null}", out, sizeof out), 0);
    assert_string_equal(out, "eu|us|a b|<NULL>|NULL|<NULL>|");
    assert_int_equal(elements("{}", out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(elements(" { 1 , 2 } ", out, sizeof out), 0);
    assert_string_equal(out, "1|2|");
    assert_int_equal(elements("{\\NULL,a\\,b}", out, sizeof out), 0);
    assert_string_equal(out, "NULL|a,b|");
}

static void test_read_refusals(void **state)
{
    (void)state;
    char out[256];
    const char *bad[] = {NULL,     "",         "1,2",  "{1,2",     "{\"open}", "{{1,2},{3,4}}",
                         "{1,,2}", "{1,}",     "{,1}", "{1} junk", "{1}}",     "{a\"b}",
                         "{1 2,3", "{\"a\" b}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (elements(bad[i], out, sizeof out) != ESC_EINVAL) {
            fail_msg("accepted %s", bad[i] != NULL ? bad[i] : "NULL");
        }
    }
    /* an element longer than the caller's buffer */
    pg_array_iter it;
    char small[4];
    bool is_null;
    assert_int_equal(pg_array_iter_init(&it, "{abcd}"), 0);
    assert_int_equal(pg_array_iter_next(&it, small, sizeof small, &is_null), ESC_EINVAL);
    assert_int_equal(pg_array_iter_init(&it, "{abc}"), 0);
    assert_int_equal(pg_array_iter_next(&it, small, sizeof small, &is_null), 1);
    assert_string_equal(small, "abc");
    assert_int_equal(pg_array_iter_next(&it, small, sizeof small, &is_null), 0);
    assert_int_equal(pg_array_iter_next(&it, small, sizeof small, &is_null), 0);
}

static void test_parse_i64(void **state)
{
    (void)state;
    int64_t v[4] = {0, 0, 0, 0};
    size_t n = 99;
    assert_int_equal(pg_array_parse_i64("{3,-1,9223372036854775807}", v, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0], 3);
    assert_int_equal(v[1], -1);
    assert_int_equal(v[2], INT64_MAX);
    assert_int_equal(pg_array_parse_i64("{}", v, 4, &n), 0);
    assert_int_equal(n, 0);
    /* refusals leave out and *n alone */
    v[0] = 5;
    n = 7;
    const char *bad[] = {"{1,NULL}", "{1,x}", "{1,2,3,4,5}", "{9223372036854775808}",
                         "{+1}",     "{1",    "{\"\"}",      "{-}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (pg_array_parse_i64(bad[i], v, 4, &n) != ESC_EINVAL) {
            fail_msg("accepted %s", bad[i]);
        }
        assert_int_equal(v[0], 5);
        assert_int_equal(n, 7);
    }
}

static void test_build_then_parse(void **state)
{
    (void)state;
    pg_array a;
    pg_array_init(&a);
    int64_t want[64], got[64];
    for (int i = 0; i < 64; i++) {
        want[i] = (int64_t)i * 1000003 - 31999;
        pg_array_i64(&a, want[i]);
    }
    size_t n = 0;
    assert_int_equal(pg_array_parse_i64(pg_array_text(&a), got, 64, &n), 0);
    assert_int_equal(n, 64);
    assert_memory_equal(got, want, sizeof want);
    pg_array_fini(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_empty),       cmocka_unit_test(test_build_i64),
        cmocka_unit_test(test_build_str_escapes), cmocka_unit_test(test_append_after_text),
        cmocka_unit_test(test_read_round_trip),   cmocka_unit_test(test_read_postgres_output),
        cmocka_unit_test(test_read_refusals),     cmocka_unit_test(test_parse_i64),
        cmocka_unit_test(test_build_then_parse),  cmocka_unit_test(test_reset_reuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
