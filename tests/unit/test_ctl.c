/*
 * test_ctl.c - unit tests for the pure parts of escrowctl: argument parsing
 * and validation (ctl_opts), the segment split, the exit codes and the JSON
 * writer (ctl_json). The database side is covered by tests/integration/ctl.sh
 * against a real PostgreSQL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_json.h"
#include "ctl_opts.h"
#include "escrow_errors.h"

#define DSN "host=127.0.0.1 port=5432 dbname=escrow"

/* Parses a NULL-terminated word list with ESCROW_DSN = env. */
static int parse(const char *env, ctl_args *out, char why[CTL_WHY_MAX], ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, why);
    for (const char *w = va_arg(ap, const char *); w != NULL; w = va_arg(ap, const char *)) {
        assert_true(argc < 32);
        argv[argc++] = (char *)w;
    }
    va_end(ap);
    return ctl_args_parse(argc, argv, env, out, why);
}

static ctl_args args;
static char why[CTL_WHY_MAX];

static void test_parse_i64(void **state)
{
    (void)state;
    int64_t v = 7;
    assert_int_equal(ctl_parse_i64("0", 0, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(ctl_parse_i64("1000000000", 0, ESC_TOTAL_MAX, &v), 0);
    assert_int_equal(v, ESC_TOTAL_MAX);
    assert_int_equal(ctl_parse_i64("-3", -5, 5, &v), 0);
    assert_int_equal(v, -3);
    v = 7;
    const char *bad[] = {"",     " 1", "1 ",  "+1", "1x",
                         "0x10", "-",  "--1", "11", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ctl_parse_i64(bad[i], 0, 10, &v), ESC_EINVAL);
        assert_int_equal(v, 7); /* untouched on failure */
    }
    assert_int_equal(ctl_parse_i64("-1", 0, 10, &v), ESC_EINVAL);
    assert_int_equal(ctl_parse_i64(NULL, 0, 10, &v), ESC_EINVAL);
}

static void test_split_even_and_remainder(void **state)
{
    (void)state;
    assert_int_equal(ctl_split_available(10000, 4, 0), 2500);
    assert_int_equal(ctl_split_available(10000, 4, 3), 2500);
    /* 10 over 3: the remainder goes to the first segments */
    assert_int_equal(ctl_split_available(10, 3, 0), 4);
    assert_int_equal(ctl_split_available(10, 3, 1), 3);
    assert_int_equal(ctl_split_available(10, 3, 2), 3);
    /* fewer units than segments: some segments start empty */
    assert_int_equal(ctl_split_available(2, 4, 1), 1);
    assert_int_equal(ctl_split_available(2, 4, 2), 0);
    assert_int_equal(ctl_split_available(0, 1, 0), 0);
    /* out of range asks get 0, never a wild number */
    assert_int_equal(ctl_split_available(10, 3, 3), 0);
    assert_int_equal(ctl_split_available(10, 0, 0), 0);
    assert_int_equal(ctl_split_available(-1, 2, 0), 0);
}

static void test_split_adds_up(void **state)
{
    (void)state;
    const int64_t totals[] = {0, 1, 2, 7, 99, 100, 10000, 999999937, ESC_TOTAL_MAX};
    for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++) {
        for (int k = 1; k <= ESC_SEGMENTS_PER_ITEM_MAX; k++) {
            int64_t sum = 0;
            int64_t lo = INT64_MAX;
            int64_t hi = 0;
            for (int i = 0; i < k; i++) {
                int64_t v = ctl_split_available(totals[t], k, i);
                sum += v;
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            assert_int_equal(sum, totals[t]);
            assert_true(hi - lo <= 1); /* as even as it gets */
        }
    }
}

static void test_item_create_defaults(void **state)
{
    (void)state;
    assert_int_equal(
        parse(DSN, &args, why, "item", "create", "shop-1", "flash-tee", "--total", "10000", NULL),
        0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_CREATE);
    assert_string_equal(args.dsn, DSN);
    assert_string_equal(args.spec.tenant, "shop-1");
    assert_string_equal(args.spec.item, "flash-tee");
    assert_string_equal(args.spec.node, "n1");
    assert_string_equal(args.spec.region, "local");
    assert_int_equal(args.spec.total, 10000);
    assert_int_equal(args.spec.segments, 1);
    assert_int_equal(args.spec.max_per_order, 0);
    assert_int_equal(args.spec.max_per_buyer, 0);
    assert_int_equal(args.spec.hold_ttl_ms, ESC_TTL_MS_DEFAULT);
    assert_false(args.json);
}

static void test_item_create_all_options(void **state)
{
    (void)state;
    assert_int_equal(parse(NULL, &args, why, "--dsn", "dbname=x", "--json", "item", "create", "t",
                           "i", "--total=7", "--segments", "4", "--node", "n2", "--region", "eu",
                           "--max-per-order", "5", "--max-per-buyer=6", "--hold-ttl-ms", "30000",
                           NULL),
                     0);
    assert_string_equal(args.dsn, "dbname=x");
    assert_true(args.json);
    assert_int_equal(args.spec.total, 7);
    assert_int_equal(args.spec.segments, 4);
    assert_string_equal(args.spec.node, "n2");
    assert_string_equal(args.spec.region, "eu");
    assert_int_equal(args.spec.max_per_order, 5);
    assert_int_equal(args.spec.max_per_buyer, 6);
    assert_int_equal(args.spec.hold_ttl_ms, 30000);
}

/* Each bad command line is refused with a sentence and leaves args alone. */
static void expect_refused(const char *what, int rc)
{
    assert_int_equal(rc, ESC_EINVAL);
    assert_true(strlen(why) > 0);
    assert_int_equal(args.cmd, CTL_CMD_STATUS); /* the sentinel from the setup */
    (void)what;
}

static void test_item_create_refusals(void **state)
{
    (void)state;
    char long_tenant[ESC_TENANT_LEN_MAX + 2];
    memset(long_tenant, 'a', sizeof long_tenant - 1);
    long_tenant[sizeof long_tenant - 1] = '\0';
    args.cmd = CTL_CMD_STATUS;
#define REFUSE(...) expect_refused(#__VA_ARGS__, parse(DSN, &args, why, __VA_ARGS__, NULL))
    REFUSE("item", "create", "t", "i");                           /* no --total */
    REFUSE("item", "create", "t", "bad id", "--total", "1");      /* space */
    REFUSE("item", "create", "t", "", "--total", "1");            /* empty */
    REFUSE("item", "create", "t", "caf\xc3\xa9", "--total", "1"); /* not ASCII */
    REFUSE("item", "create", long_tenant, "i", "--total", "1");   /* too long */
    REFUSE("item", "create", "t", "i", "--total", "-1");
    REFUSE("item", "create", "t", "i", "--total", "1000000001");
    REFUSE("item", "create", "t", "i", "--total", "ten");
    REFUSE("item", "create", "t", "i", "--total", "1", "--segments", "0");
    REFUSE("item", "create", "t", "i", "--total", "1", "--segments", "257");
    REFUSE("item", "create", "t", "i", "--total", "1", "--hold-ttl-ms", "49");
    REFUSE("item", "create", "t", "i", "--total", "1", "--hold-ttl-ms", "86400001");
    REFUSE("item", "create", "t", "i", "--total", "1", "--max-per-order", "10001");
    REFUSE("item", "create", "t", "i", "--total", "1", "--node", "a b");
    REFUSE("item", "create", "t", "i", "--total", "1", "--total", "2"); /* twice */
    REFUSE("item", "create", "t", "i", "--total");                      /* no value */
    REFUSE("item", "create", "t", "i", "--total", "1", "--buyer", "b"); /* foreign */
    REFUSE("item", "create", "t", "--total", "1");                      /* arity */
    REFUSE("item", "create", "t", "i", "extra", "--total", "1");
    REFUSE("item", "make", "t", "i", "--total", "1");
    REFUSE("item");
#undef REFUSE
}

static void test_dsn_sources(void **state)
{
    (void)state;
    assert_int_equal(parse("dbname=env", &args, why, "check", NULL), 0);
    assert_string_equal(args.dsn, "dbname=env");
    assert_int_equal(parse("dbname=env", &args, why, "check", "--dsn", "dbname=flag", NULL), 0);
    assert_string_equal(args.dsn, "dbname=flag");
    args.cmd = CTL_CMD_STATUS;
    expect_refused("no dsn", parse(NULL, &args, why, "check", NULL));
    expect_refused("empty dsn", parse("", &args, why, "check", NULL));
    char big[CTL_DSN_LEN_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    expect_refused("long dsn", parse(big, &args, why, "check", NULL));
}

static void test_general_refusals(void **state)
{
    (void)state;
    args.cmd = CTL_CMD_STATUS;
    expect_refused("none", parse(DSN, &args, why, NULL));
    expect_refused("unknown", parse(DSN, &args, why, "frobnicate", NULL));
    expect_refused("unknown opt", parse(DSN, &args, why, "check", "--frob", NULL));
    expect_refused("short opt", parse(DSN, &args, why, "check", "-x", NULL));
    expect_refused("flag value", parse(DSN, &args, why, "check", "--json=yes", NULL));
    expect_refused("check args", parse(DSN, &args, why, "check", "extra", NULL));
    expect_refused("migrate args", parse(DSN, &args, why, "migrate", "now", NULL));
    expect_refused("status 3", parse(DSN, &args, why, "status", "a", "b", "c", NULL));
    expect_refused("status opt", parse(DSN, &args, why, "status", "--limit", "3", NULL));
}

static void test_help(void **state)
{
    (void)state;
    /* --help wins even over an otherwise bad command line */
    assert_int_equal(parse(NULL, &args, why, "frobnicate", "--help", NULL), 0);
    assert_true(args.help);
    assert_int_equal(parse(NULL, &args, why, "-h", NULL), 0);
    assert_true(args.help);
}

static void test_status_filters(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, &args, why, "status", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_STATUS);
    assert_string_equal(args.tenant, "");
    assert_string_equal(args.item, "");
    assert_int_equal(parse(DSN, &args, why, "--json", "status", "shop-1", "tee", NULL), 0);
    assert_string_equal(args.tenant, "shop-1");
    assert_string_equal(args.item, "tee");
    assert_true(args.json);
}

static void test_holds(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, &args, why, "holds", "t", "--buyer", "b", "--item", "i", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_HOLDS);
    assert_string_equal(args.buyer, "b");
    assert_string_equal(args.item, "i");
    assert_int_equal(args.hold_id, 0);
    assert_int_equal(args.limit, CTL_LIST_ROWS_DEFAULT);
    assert_int_equal(parse(DSN, &args, why, "holds", "t", "--hold", "1099511627777", NULL), 0);
    assert_int_equal(args.hold_id, 1099511627777LL);
    assert_string_equal(args.buyer, "");
    args.cmd = CTL_CMD_STATUS;
    expect_refused("neither", parse(DSN, &args, why, "holds", "t", NULL));
    expect_refused("both",
                   parse(DSN, &args, why, "holds", "t", "--buyer", "b", "--hold", "1", NULL));
    expect_refused("hold+item",
                   parse(DSN, &args, why, "holds", "t", "--hold", "1", "--item", "i", NULL));
    expect_refused("hold 0", parse(DSN, &args, why, "holds", "t", "--hold", "0", NULL));
    expect_refused("no tenant", parse(DSN, &args, why, "holds", "--buyer", "b", NULL));
}

static void test_events(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, &args, why, "events", "t", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_EVENTS);
    assert_int_equal(args.after, 0);
    assert_int_equal(args.limit, CTL_LIST_ROWS_DEFAULT);
    assert_int_equal(parse(DSN, &args, why, "events", "t", "--item", "i", "--after", "42",
                           "--limit", "10000", NULL),
                     0);
    assert_int_equal(args.after, 42);
    assert_int_equal(args.limit, CTL_LIST_ROWS_MAX);
    assert_string_equal(args.item, "i");
    args.cmd = CTL_CMD_STATUS;
    expect_refused("limit 0", parse(DSN, &args, why, "events", "t", "--limit", "0", NULL));
    expect_refused("limit big", parse(DSN, &args, why, "events", "t", "--limit", "10001", NULL));
    expect_refused("after -1", parse(DSN, &args, why, "events", "t", "--after", "-1", NULL));
    expect_refused("buyer", parse(DSN, &args, why, "events", "t", "--buyer", "b", NULL));
}

static void test_ids_after_double_dash(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, &args, why, "status", "--", "-odd-tenant", NULL), 0);
    assert_string_equal(args.tenant, "-odd-tenant");
}

static void test_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(ctl_exit_code(CTL_CMD_STATUS, 0, false), CTL_EXIT_OK);
    assert_int_equal(ctl_exit_code(CTL_CMD_CHECK, 0, true), CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_CHECK, ESC_EDB, false), CTL_EXIT_USAGE);
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_CREATE, ESC_ECONFLICT, false), CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_CREATE, ESC_EINVAL, false), CTL_EXIT_USAGE);
    assert_int_equal(ctl_exit_code(CTL_CMD_MIGRATE, ESC_EUNAVAILABLE, false), CTL_EXIT_USAGE);
    assert_int_equal(ctl_exit_code(CTL_CMD_MIGRATE, ESC_EDB, false), CTL_EXIT_FAIL);
}

static void test_usage_mentions_every_command(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    ctl_usage(f);
    assert_int_equal(fclose(f), 0);
    const char *words[] = {"migrate", "item create", "status", "holds",
                           "events",  "check",       "--dsn",  "--json"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        assert_non_null(strstr(buf, words[i]));
    }
    free(buf);
}

static void test_json_writer(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    ctl_json j;
    ctl_json_init(&j, f);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_str(&j, "s", "a\"b\\c\n\t\x01\x7f");
    ctl_json_str(&j, "null", NULL);
    ctl_json_num(&j, "n", "-42");
    ctl_json_num(&j, "junk", "12abc");
    ctl_json_num(&j, "lead0", "007");
    ctl_json_num(&j, "nn", NULL);
    ctl_json_i64(&j, "i", INT64_MIN);
    ctl_json_bool(&j, "b", true);
    ctl_json_begin_arr(&j, "a");
    ctl_json_i64(&j, NULL, 1);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_end_obj(&j);
    ctl_json_begin_arr(&j, NULL);
    ctl_json_end_arr(&j);
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
    assert_int_equal(fclose(f), 0);
    assert_string_equal(buf, "{\"s\":\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\",\"null\":null,\"n\":-42,"
                             "\"junk\":\"12abc\",\"lead0\":\"007\",\"nn\":null,"
                             "\"i\":-9223372036854775808,\"b\":true,\"a\":[1,{},[]]}\n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_i64),
        cmocka_unit_test(test_split_even_and_remainder),
        cmocka_unit_test(test_split_adds_up),
        cmocka_unit_test(test_item_create_defaults),
        cmocka_unit_test(test_item_create_all_options),
        cmocka_unit_test(test_item_create_refusals),
        cmocka_unit_test(test_dsn_sources),
        cmocka_unit_test(test_general_refusals),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_status_filters),
        cmocka_unit_test(test_holds),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_ids_after_double_dash),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_usage_mentions_every_command),
        cmocka_unit_test(test_json_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
