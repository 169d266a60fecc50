/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ctl_import.c - unit tests for the pure parts of `escrowctl item
 * import` (ctl_import_parse: the format, the CSV header and fields with
 * quotes, JSON lines, item create's bounds and sentences with the line
 * number) and for the command lines of item import and of status's filters
 * and pages (ctl_opts). The database side is tests/integration/ctl_import.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_import_parse.h"
#include "ctl_opts.h"
#include "ctl_top_opts.h"
#include "escrow_errors.h"

static char why[CTL_WHY_MAX];

static void test_format(void **state)
{
    (void)state;
    ctl_import_format f = CTL_IMPORT_JSONL;
    assert_int_equal(ctl_import_format_of(NULL, "a/cat.csv", &f, why), 0);
    assert_int_equal(f, CTL_IMPORT_CSV);
    assert_int_equal(ctl_import_format_of(NULL, "cat.ndjson", &f, why), 0);
    assert_int_equal(f, CTL_IMPORT_JSONL);
    assert_int_equal(ctl_import_format_of("csv", "-", &f, why), 0);
    assert_int_equal(f, CTL_IMPORT_CSV);
    assert_int_equal(ctl_import_format_of(NULL, "-", &f, why), ESC_EINVAL);
    assert_non_null(strstr(why, "--format"));
    assert_int_equal(ctl_import_format_of(NULL, ".csv", &f, why), ESC_EINVAL);
    assert_int_equal(ctl_import_format_of("xml", "a.csv", &f, why), ESC_EINVAL);
    assert_string_equal(why, "--format must be csv or jsonl, not 'xml'");
}

static void test_header(void **state)
{
    (void)state;
    ctl_import_header h;
    assert_int_equal(ctl_import_csv_header("item,total,tenant\r", &h, why), 0);
    assert_int_equal(h.ncols, 3);
    assert_int_equal(ctl_import_csv_header("tenant,item,total,colour", &h, why), ESC_EINVAL);
    assert_non_null(strstr(why, "line 1: unknown column 'colour'"));
    assert_int_equal(ctl_import_csv_header("tenant,item,total,item", &h, why), ESC_EINVAL);
    assert_string_equal(why, "line 1: column 'item' given twice");
    assert_int_equal(ctl_import_csv_header("tenant,item,segments", &h, why), ESC_EINVAL);
    assert_non_null(strstr(why, "no column 'total'"));
}

static void test_csv_rows(void **state)
{
    (void)state;
    ctl_import_header h;
    ctl_import_row r;
    assert_int_equal(ctl_import_csv_header("tenant,item,total,segments,max_per_order,"
                                           "max_per_buyer,hold_ttl_ms",
                                           &h, why),
                     0);
    assert_int_equal(ctl_import_csv_row(&h, "s1,\"a,\"\"b\",10,3,5,,30000\r", 7, &r, why), 0);
    assert_string_equal(r.tenant, "s1");
    assert_string_equal(r.item, "a,\"b");
    assert_int_equal(r.total, 10);
    assert_int_equal(r.segments, 3);
    assert_int_equal(r.max_per_order, 5);
    assert_int_equal(r.max_per_buyer, 0);
    assert_int_equal(r.hold_ttl_ms, 30000);
    assert_int_equal(r.line, 7);
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,10,,,,", 2, &r, why), 0);
    assert_int_equal(r.segments, 1);
    assert_int_equal(r.hold_ttl_ms, ESC_TTL_MS_DEFAULT);
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,x,,,,", 3, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 3: total must be an integer in 0..1000000000");
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,1,0,,,", 4, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 4: segments must be an integer in 1..256");
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,1,,,,10", 5, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 5: hold_ttl_ms must be an integer in 50..86400000");
    assert_int_equal(ctl_import_csv_row(&h, "s 1,a,1,,,,", 6, &r, why), ESC_EINVAL);
    assert_string_equal(why,
                        "line 6: tenant must be 1..64 printable ASCII characters without spaces");
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,,,,,", 8, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 8: total is missing");
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,1", 9, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 9: 3 columns where the header has 7");
    assert_int_equal(ctl_import_csv_row(&h, "s1,a,1,,,,,", 10, &r, why), ESC_EINVAL);
    assert_int_equal(ctl_import_csv_row(&h, "s1,\"a,1,,,,", 11, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 11: a quote is not closed");
    assert_int_equal(ctl_import_csv_row(&h, "s1,\"a\"b,1,,,,", 12, &r, why), ESC_EINVAL);
    char long_id[300];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    char line[400];
    snprintf(line, sizeof line, "s1,%s,1,,,,", long_id);
    assert_int_equal(ctl_import_csv_row(&h, line, 13, &r, why), ESC_EINVAL);
    assert_non_null(strstr(why, "line 13: item must be 1..128"));
    assert_true(ctl_import_blank(" \r"));
    assert_false(ctl_import_blank(" a"));
}

static void test_json_rows(void **state)
{
    (void)state;
    ctl_import_row r;
    assert_int_equal(ctl_import_json_row("{\"tenant\":\"s1\",\"item\":\"a\",\"total\":8,"
                                         "\"segments\":4,\"max_per_buyer\":2,"
                                         "\"hold_ttl_ms\":null}",
                                         1, &r, why),
                     0);
    assert_int_equal(r.total, 8);
    assert_int_equal(r.segments, 4);
    assert_int_equal(r.max_per_buyer, 2);
    assert_int_equal(r.hold_ttl_ms, ESC_TTL_MS_DEFAULT);
    assert_int_equal(
        ctl_import_json_row("{\"tenant\":\"s1\",\"item\":\"a\",\"total\":\"8\"}", 2, &r, why),
        ESC_EINVAL);
    assert_string_equal(why, "line 2: total must be a JSON integer");
    assert_int_equal(
        ctl_import_json_row("{\"tenant\":\"s1\",\"item\":\"a\",\"total\":-1}", 3, &r, why),
        ESC_EINVAL);
    assert_string_equal(why, "line 3: total must be an integer in 0..1000000000");
    assert_int_equal(
        ctl_import_json_row("{\"tenant\":\"s1\",\"item\":\"a\",\"colour\":1}", 4, &r, why),
        ESC_EINVAL);
    assert_string_equal(why, "line 4: unknown key 'colour'");
    assert_int_equal(ctl_import_json_row("[1]", 5, &r, why), ESC_EINVAL);
    assert_string_equal(why, "line 5: not a JSON object");
    assert_int_equal(ctl_import_json_row("{\"tenant\":", 6, &r, why), ESC_EINVAL);
    assert_non_null(strstr(why, "line 6: not a JSON object: "));
    assert_int_equal(ctl_import_json_row("{\"tenant\":\"s1\",\"tenant\":\"s2\",\"item\":\"a\","
                                         "\"total\":1}",
                                         7, &r, why),
                     ESC_EINVAL);
    assert_int_equal(ctl_import_json_row("{\"item\":\"a\",\"total\":1}", 8, &r, why), ESC_EINVAL);
    assert_non_null(strstr(why, "line 8: tenant must be"));
}

static int parse(ctl_args *a, const char *first, ...)
{
    char *argv[24];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *w = first; w != NULL && argc < 24; w = va_arg(ap, const char *)) {
        argv[argc++] = (char *)w;
    }
    va_end(ap);
    const ctl_env env = {.dsn = "dbname=x", .coordinator = NULL};
    return ctl_opts_parse(argc, argv, &env, a, why);
}

static void test_import_opts(void **state)
{
    (void)state;
    static ctl_args a;
    assert_int_equal(parse(&a, "item", "import", "cat.jsonl", NULL), 0);
    assert_int_equal(a.cmd, CTL_CMD_ITEM_IMPORT);
    assert_string_equal(a.import_path, "cat.jsonl");
    assert_int_equal(a.import_format, CTL_IMPORT_JSONL);
    assert_int_equal(a.import_chunk, CTL_IMPORT_CHUNK_DEFAULT);
    assert_string_equal(a.spec.region, "local");
    assert_int_equal(
        parse(&a, "item", "import", "-", "--format", "csv", "--chunk", "5", "--region", "eu", NULL),
        0);
    assert_int_equal(a.import_format, CTL_IMPORT_CSV);
    assert_int_equal(a.import_chunk, 5);
    assert_string_equal(a.spec.region, "eu");
    assert_int_equal(parse(&a, "item", "import", "-", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "item", "import", "a.csv", "--chunk", "0", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "item", "import", "a.csv", "--total", "1", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "item", "import", NULL), ESC_EINVAL);
}

static void test_status_opts(void **state)
{
    (void)state;
    static ctl_args a;
    assert_int_equal(parse(&a, "status", NULL), 0);
    assert_int_equal(a.limit, CTL_STATUS_ITEMS_DEFAULT);
    assert_int_equal(a.offset, 0);
    assert_int_equal(parse(&a, "status", "--tenant", "s1", "--item-prefix", "tee", "--paused",
                           "--sold-out", "--limit", "7", "--offset", "14", NULL),
                     0);
    assert_string_equal(a.tenant, "s1");
    assert_string_equal(a.item_prefix, "tee");
    assert_int_equal(a.item_state, 2);
    assert_true(a.sold_out);
    assert_int_equal(a.limit, 7);
    assert_int_equal(a.offset, 14);
    assert_int_equal(parse(&a, "status", "--state", "retired", NULL), 0);
    assert_int_equal(a.item_state, 3);
    assert_int_equal(parse(&a, "status", "--state", "sold", NULL), ESC_EINVAL);
    assert_string_equal(why, "--state must be active, paused or retired, not 'sold'");
    assert_int_equal(parse(&a, "status", "--state", "active", "--paused", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "status", "s1", "--tenant", "s2", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "status", "s1", "tee", "--item-prefix", "t", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "status", "--limit", "1001", NULL), ESC_EINVAL);
    assert_int_equal(parse(&a, "holds", "s1", "--buyer", "b", "--paused", NULL), ESC_EINVAL);
}

/* top takes status's --tenant and --item-prefix as well as its own words. */
static void test_top_aliases(void **state)
{
    (void)state;
    static ctl_top_args t;
    const ctl_env env = {.dsn = "dbname=x", .coordinator = NULL};
    char *argv1[] = {"top", "--tenant", "s1", "--item-prefix", "tee", "--once"};
    assert_int_equal(ctl_top_args_parse(6, argv1, &env, &t, why), 0);
    assert_string_equal(t.filter.tenant, "s1");
    assert_string_equal(t.filter.prefix, "tee");
    char *argv2[] = {"top", "s1", "--tenant", "s2"};
    assert_int_equal(ctl_top_args_parse(4, argv2, &env, &t, why), ESC_EINVAL);
    char *argv3[] = {"top", "--prefix", "a", "--item-prefix", "b"};
    assert_int_equal(ctl_top_args_parse(5, argv3, &env, &t, why), ESC_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),      cmocka_unit_test(test_header),
        cmocka_unit_test(test_csv_rows),    cmocka_unit_test(test_json_rows),
        cmocka_unit_test(test_import_opts), cmocka_unit_test(test_status_opts),
        cmocka_unit_test(test_top_aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
