/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ctl.c - unit tests for the pure parts of escrowctl: argument parsing
 * and validation (ctl_opts: database and coordinator commands), numbers and
 * the segment split (ctl_num), the exit codes (ctl_exit), the synopsis
 * (ctl_usage), the JSON writer (ctl_json), and the one round trip
 * to a daemon (ctl_rpc) against an in-process responder thread on inproc://.
 * The database side is covered by tests/integration/ctl.sh against a real
 * PostgreSQL; the coordinator side by tests/integration/ctl_cluster.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_exit.h"
#include "ctl_json.h"
#include "ctl_num.h"
#include "ctl_opts.h"
#include "ctl_quota.h"
#include "ctl_region.h"
#include "ctl_rpc.h"
#include "ctl_help.h"
#include "ctl_usage.h"
#include "escrow_errors.h"
#include "escrow_feed.h"
#include "nnx.h"
#include "wire.h"

#define DSN "host=127.0.0.1 port=5432 dbname=escrow"

/* ESCROW_COORDINATOR as parse() sees it (NULL = unset). */
static const char *env_coordinator;

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
    const ctl_env e = {.dsn = env, .coordinator = env_coordinator};
    return ctl_opts_parse(argc, argv, &e, out, why);
}

static ctl_args args;
static char why[CTL_WHY_MAX];

static void test_parse_i64(void **state)
{
    (void)state;
    int64_t v = 7;
    assert_int_equal(ctl_num_parse("0", 0, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(ctl_num_parse("1000000000", 0, ESC_TOTAL_MAX, &v), 0);
    assert_int_equal(v, ESC_TOTAL_MAX);
    assert_int_equal(ctl_num_parse("-3", -5, 5, &v), 0);
    assert_int_equal(v, -3);
    v = 7;
    const char *bad[] = {"",     " 1", "1 ",  "+1", "1x",
                         "0x10", "-",  "--1", "11", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ctl_num_parse(bad[i], 0, 10, &v), ESC_EINVAL);
        assert_int_equal(v, 7); /* untouched on failure */
    }
    assert_int_equal(ctl_num_parse("-1", 0, 10, &v), ESC_EINVAL);
    assert_int_equal(ctl_num_parse(NULL, 0, 10, &v), ESC_EINVAL);
}

static void test_split_even_and_remainder(void **state)
{
    (void)state;
    assert_int_equal(ctl_num_split(10000, 4, 0), 2500);
    assert_int_equal(ctl_num_split(10000, 4, 3), 2500);
    /* 10 over 3: the remainder goes to the first segments */
    assert_int_equal(ctl_num_split(10, 3, 0), 4);
    assert_int_equal(ctl_num_split(10, 3, 1), 3);
    assert_int_equal(ctl_num_split(10, 3, 2), 3);
    /* fewer units than segments: some segments start empty */
    assert_int_equal(ctl_num_split(2, 4, 1), 1);
    assert_int_equal(ctl_num_split(2, 4, 2), 0);
    assert_int_equal(ctl_num_split(0, 1, 0), 0);
    /* out of range asks get 0, never a wild number */
    assert_int_equal(ctl_num_split(10, 3, 3), 0);
    assert_int_equal(ctl_num_split(10, 0, 0), 0);
    assert_int_equal(ctl_num_split(-1, 2, 0), 0);
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
                int64_t v = ctl_num_split(totals[t], k, i);
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
    assert_string_equal(args.spec.node, ""); /* unassigned: the coordinator places them */
    assert_string_equal(args.spec.region, "local");
    assert_string_equal(args.coordinator, "");
    assert_int_equal(args.timeout_ms, CTL_TIMEOUT_MS_DEFAULT);
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
    expect_refused("status opt", parse(DSN, &args, why, "status", "--all", NULL));
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

#define FREFUSE(...) expect_refused(#__VA_ARGS__, parse(DSN, &args, why, __VA_ARGS__, NULL))

static void test_events_follow(void **state)
{
    (void)state;
    assert_int_equal(
        parse(DSN, &args, why, "events", "t", "--follow", "--consumer", "orders", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_EVENTS);
    assert_true(args.follow);
    assert_false(args.from_start);
    assert_string_equal(args.consumer, "orders");
    assert_int_equal(args.after, 0);
    assert_int_equal(args.limit, CTL_LIST_ROWS_DEFAULT); /* the batch size */
    assert_int_equal(parse(DSN, &args, why, "--json", "events", "t", "--follow", "--consumer=c",
                           "--item", "i", "--from-start", "--limit", "10", NULL),
                     0);
    assert_true(args.follow && args.from_start && args.json);
    assert_string_equal(args.item, "i");
    assert_int_equal(args.limit, 10);
    assert_int_equal(
        parse(DSN, &args, why, "events", "t", "--follow", "--consumer", "c", "--after", "7", NULL),
        0);
    assert_int_equal(args.after, 7);
    assert_false(args.from_start);
    /* the listing stays as it was */
    assert_int_equal(parse(DSN, &args, why, "events", "t", NULL), 0);
    assert_false(args.follow);
    assert_string_equal(args.consumer, "");
    args.cmd = CTL_CMD_STATUS;
    FREFUSE("events", "t", "--follow");
    FREFUSE("events", "t", "--consumer", "c");
    FREFUSE("events", "t", "--from-start");
    FREFUSE("events", "t", "--follow", "--consumer", "c", "--from-start", "--after", "3");
    FREFUSE("events", "t", "--follow", "--consumer", "c", "--after", "0");
    FREFUSE("events", "t", "--follow", "--consumer", "");
    FREFUSE("events", "t", "--follow", "--consumer", "a b");
    FREFUSE("events", "t", "--follow", "--consumer", "c", "--follow");
    FREFUSE("events", "t", "--follow=yes", "--consumer", "c");
    FREFUSE("events", "--follow", "--consumer", "c");
    FREFUSE("status", "t", "--follow");
    FREFUSE("holds", "t", "--buyer", "b", "--consumer", "c");
    char long_name[CTL_CONSUMER_LEN_MAX + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    FREFUSE("events", "t", "--follow", "--consumer", long_name);
    long_name[CTL_CONSUMER_LEN_MAX] = '\0';
    assert_int_equal(
        parse(DSN, &args, why, "events", "t", "--follow", "--consumer", long_name, NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_EVENTS);
}

static void test_consumers(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, &args, why, "consumers", "t", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_CONSUMERS);
    assert_string_equal(args.tenant, "t");
    assert_false(ctl_opts_is_admin(CTL_CMD_CONSUMERS));
    args.cmd = CTL_CMD_STATUS;
    FREFUSE("consumers");
    FREFUSE("consumers", "t", "u");
    FREFUSE("consumers", "t", "--follow");
    FREFUSE("consumers", "t", "--consumer", "c");
    expect_refused("no dsn", parse(NULL, &args, why, "consumers", "t", NULL));
}

#undef FREFUSE

/* The feed order the cursor moves in: txid first, then event_id. */
static void test_feed_cursor_order(void **state)
{
    (void)state;
    feed_cursor zero = {0, 0}, a = {100, 7}, b = {100, 9}, c = {101, 3};
    assert_int_equal(feed_cursor_cmp(zero, a), -1);
    assert_int_equal(feed_cursor_cmp(a, b), -1);
    assert_int_equal(feed_cursor_cmp(b, c), -1); /* a smaller event_id later in feed order */
    assert_int_equal(feed_cursor_cmp(c, a), 1);
    assert_int_equal(feed_cursor_cmp(b, b), 0);
    feed_cursor big = {UINT64_MAX, INT64_MAX};
    assert_int_equal(feed_cursor_cmp(big, c), 1);
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
    assert_int_equal(ctl_exit_code(CTL_CMD_STATUS, 0, false, false), CTL_EXIT_OK);
    assert_int_equal(ctl_exit_code(CTL_CMD_CHECK, 0, true, false), CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_CHECK, ESC_EDB, false, false), CTL_EXIT_USAGE);
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_CREATE, ESC_ECONFLICT, false, false),
                     CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_CREATE, ESC_EINVAL, false, false), CTL_EXIT_USAGE);
    assert_int_equal(ctl_exit_code(CTL_CMD_MIGRATE, ESC_EUNAVAILABLE, false, false),
                     CTL_EXIT_USAGE);
    assert_int_equal(ctl_exit_code(CTL_CMD_MIGRATE, ESC_EDB, false, false), CTL_EXIT_FAIL);
    /* the coordinator or a node declined: 1, whatever the code (its EINVAL is
     * not a local usage error) */
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_REDUCE, ESC_EINVAL, false, true), CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_RESTOCK, ESC_EUNKNOWN_ITEM, false, true),
                     CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_DRAIN, ESC_ENOT_FOUND, false, true), CTL_EXIT_FAIL);
    assert_int_equal(ctl_exit_code(CTL_CMD_RELEASE, ESC_ENOT_HELD, false, true), CTL_EXIT_FAIL);
    /* no answer, or the node that must act is down: 3 */
    assert_int_equal(ctl_exit_code(CTL_CMD_ITEM_PAUSE, ESC_ETIMEDOUT, false, false),
                     CTL_EXIT_NO_ANSWER);
    assert_int_equal(ctl_exit_code(CTL_CMD_RELEASE, ESC_ECLOSED, false, false), CTL_EXIT_NO_ANSWER);
    assert_int_equal(ctl_exit_code(CTL_CMD_RELEASE, ESC_ENOT_FOUND, false, false), CTL_EXIT_FAIL);
    /* a coordinator URL nanomsg cannot use: 2 */
    assert_int_equal(ctl_exit_code(CTL_CMD_UNDRAIN, ESC_EINVAL, false, false), CTL_EXIT_USAGE);
    /* four distinct codes */
    assert_int_not_equal(CTL_EXIT_NO_ANSWER, CTL_EXIT_USAGE);
    assert_int_not_equal(CTL_EXIT_NO_ANSWER, CTL_EXIT_FAIL);
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
    const char *words[] = {"migrate",     "item create",   "status",         "holds",
                           "events",      "check",         "--dsn",          "--json",
                           "nodes",       "transfers",     "release",        "item restock",
                           "item reduce", "item pause",    "item resume",    "item retire",
                           "item split",  "item collapse", "item rebalance", "drain",
                           "undrain",     "--coordinator", "--timeout-ms",   "ESCROW_COORDINATOR",
                           "3 no answer", "--follow",      "--consumer",     "--from-start",
                           "consumers"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        assert_non_null(strstr(buf, words[i]));
    }
    free(buf);
}

/* ctl_help: the command words of `escrowctl ... --help` (option values
 * skipped), and one command's help is the synopsis's entries for it. */
static void test_help_of_one_command(void **state)
{
    (void)state;
    char *argv[] = {"--dsn", "item", "item", "create", "--total", "5", "--help", "x"};
    const char *w[CTL_HELP_WORDS_MAX];
    int nw = 0;
    assert_true(ctl_help_wanted(8, argv, w, &nw));
    assert_int_equal(nw, 2);
    assert_string_equal(w[0], "item");
    assert_string_equal(w[1], "create");
    char *no[] = {"status", "--", "--help"};
    assert_false(ctl_help_wanted(3, no, w, &nw));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    const char *item_create[] = {"item", "create"};
    assert_int_equal(ctl_help(f, item_create, 2), 0);
    assert_int_equal(fclose(f), 0);
    /* both entries (one database, one over regions) under their headings */
    assert_non_null(strstr(buf, "from the database (--dsn):\n  item create TENANT ITEM --total"));
    assert_non_null(strstr(buf, "over several regions"));
    assert_non_null(strstr(buf, "item create TENANT ITEM --global"));
    assert_null(strstr(buf, "item restock"));
    assert_null(strstr(buf, "  status"));
    free(buf);
    const char *key[] = {"key"};
    f = open_memstream(&buf, &len);
    assert_int_equal(ctl_help(f, key, 1), 0);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(buf, "key create TENANT"));
    assert_non_null(strstr(buf, "key revoke KEY_ID"));
    assert_null(strstr(buf, "admin-key"));
    free(buf);
    const char *nope[] = {"nope"};
    const char *half[] = {"item", "crea"};
    const char *described[] = {"check", "conservation"}; /* the description's first word */
    assert_int_equal(ctl_help(stdout, described, 2), -1);
    assert_int_equal(ctl_help(stdout, nope, 1), -1);
    assert_int_equal(ctl_help(stdout, half, 2), -1);
}

#define COORD "tcp://127.0.0.1:7000"

static void test_admin_item_commands(void **state)
{
    (void)state;
    static const struct {
        const char *word;
        ctl_cmd cmd;
        uint32_t op;
    } simple[] = {
        {"pause", CTL_CMD_ITEM_PAUSE, WIRE_ADMIN_PAUSE},
        {"resume", CTL_CMD_ITEM_RESUME, WIRE_ADMIN_RESUME},
        {"retire", CTL_CMD_ITEM_RETIRE, WIRE_ADMIN_RETIRE},
        {"collapse", CTL_CMD_ITEM_COLLAPSE, WIRE_ADMIN_COLLAPSE},
        {"rebalance", CTL_CMD_ITEM_REBALANCE, WIRE_ADMIN_REBALANCE},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        /* no database needed: the coordinator owns the catalog */
        assert_int_equal(parse(NULL, &args, why, "--coordinator", COORD, "item", simple[i].word,
                               "shop-1", "tee", NULL),
                         0);
        assert_int_equal(args.cmd, simple[i].cmd);
        assert_int_equal(args.admin_op, simple[i].op);
        assert_true(ctl_opts_is_admin(args.cmd));
        assert_string_equal(args.tenant, "shop-1");
        assert_string_equal(args.item, "tee");
        assert_string_equal(args.coordinator, COORD);
        assert_string_equal(args.dsn, "");
    }
    assert_int_equal(parse(NULL, &args, why, "--coordinator", COORD, "item", "restock", "t", "i",
                           "1000000000", NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_RESTOCK);
    assert_int_equal(args.admin_op, WIRE_ADMIN_RESTOCK);
    assert_int_equal(args.qty, ESC_TOTAL_MAX);
    assert_int_equal(parse(NULL, &args, why, "--coordinator", COORD, "--json", "item", "reduce",
                           "t", "i", "1", NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_REDUCE);
    assert_int_equal(args.qty, 1);
    assert_true(args.json);
    assert_int_equal(parse(NULL, &args, why, "--coordinator", COORD, "item", "split", "t", "i",
                           "256", "--timeout-ms", "10", NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_SPLIT);
    assert_int_equal(args.nsegments, ESC_SEGMENTS_PER_ITEM_MAX);
    assert_int_equal(args.timeout_ms, CTL_TIMEOUT_MS_MIN);
}

static void test_admin_node_commands(void **state)
{
    (void)state;
    assert_int_equal(
        parse(NULL, &args, why, "--coordinator=ipc:///tmp/c.sock", "drain", "n2", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_DRAIN);
    assert_int_equal(args.admin_op, WIRE_ADMIN_DRAIN);
    assert_string_equal(args.node, "n2");
    assert_string_equal(args.coordinator, "ipc:///tmp/c.sock");
    assert_int_equal(parse(NULL, &args, why, "--coordinator", COORD, "undrain", "n2", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_UNDRAIN);
    assert_int_equal(args.admin_op, WIRE_ADMIN_UNDRAIN);
}

static void test_coordinator_sources(void **state)
{
    (void)state;
    env_coordinator = "tcp://127.0.0.1:9";
    assert_int_equal(parse(NULL, &args, why, "item", "pause", "t", "i", NULL), 0);
    assert_string_equal(args.coordinator, "tcp://127.0.0.1:9");
    assert_int_equal(
        parse(NULL, &args, why, "--coordinator", COORD, "item", "pause", "t", "i", NULL), 0);
    assert_string_equal(args.coordinator, COORD); /* the flag wins */
    /* item create takes it too (to ask for a reload), and still needs the database */
    assert_int_equal(parse(DSN, &args, why, "item", "create", "t", "i", "--total", "5", NULL), 0);
    assert_string_equal(args.coordinator, "tcp://127.0.0.1:9");
    args.cmd = CTL_CMD_STATUS;
    expect_refused("create without dsn",
                   parse(NULL, &args, why, "item", "create", "t", "i", "--total", "5", NULL));
    env_coordinator = "";
    expect_refused("empty env", parse(NULL, &args, why, "item", "pause", "t", "i", NULL));
    env_coordinator = NULL;
    expect_refused("none", parse(DSN, &args, why, "drain", "n1", NULL));
    assert_non_null(strstr(why, "--coordinator"));
    expect_refused("bad env url", (env_coordinator = "localhost:7000",
                                   parse(NULL, &args, why, "item", "pause", "t", "i", NULL)));
    env_coordinator = NULL;
}

/* A region file as region_cfg_load leaves it (only what escrowctl reads). */
static void fake_region(region_cfg *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "eu.ini");
    snprintf(r->name, sizeof r->name, "eu");
    snprintf(r->dsn, sizeof r->dsn, "dbname=escrow_eu");
    snprintf(r->coordinator, sizeof r->coordinator, "tcp://127.0.0.1:7100");
    snprintf(r->publish, sizeof r->publish, "tcp://127.0.0.1:7101");
}

static void test_config_sources(void **state)
{
    (void)state;
    static region_cfg region;
    fake_region(&region);
    env_coordinator = "tcp://127.0.0.1:9";
    /* the file names the database and the coordinator; the environment is
     * not consulted */
    assert_int_equal(parse("dbname=env", &args, why, "--config", "eu.ini", "check", NULL), 0);
    assert_int_equal(args.nconfig, 1);
    assert_string_equal(args.config[0], "eu.ini");
    assert_string_equal(args.dsn, "");
    assert_string_equal(args.coordinator, "");
    assert_false(args.dsn_given);
    assert_false(args.coordinator_given);
    assert_int_equal(ctl_opts_apply_region(&args, &region, why), 0);
    assert_string_equal(args.dsn, "dbname=escrow_eu");
    assert_string_equal(args.coordinator, "tcp://127.0.0.1:7100");
    /* explicit flags win over the file */
    assert_int_equal(parse(NULL, &args, why, "--config=eu.ini", "--dsn", "dbname=flag",
                           "--coordinator", COORD, "status", NULL),
                     0);
    assert_true(args.dsn_given);
    assert_true(args.coordinator_given);
    assert_int_equal(ctl_opts_apply_region(&args, &region, why), 0);
    assert_string_equal(args.dsn, "dbname=flag");
    assert_string_equal(args.coordinator, COORD);
    /* a coordinator command needs no --coordinator with a file, and no dsn */
    env_coordinator = NULL;
    assert_int_equal(parse(NULL, &args, why, "item", "pause", "t", "i", "--config", "eu.ini", NULL),
                     0);
    assert_int_equal(ctl_opts_apply_region(&args, &region, why), 0);
    assert_string_equal(args.coordinator, "tcp://127.0.0.1:7100");
    assert_string_equal(args.dsn, "");
    /* the file's coordinator must be one escrowctl can reach */
    snprintf(region.coordinator, sizeof region.coordinator, "bogus");
    assert_int_equal(parse(NULL, &args, why, "--config", "eu.ini", "nodes", NULL), 0);
    assert_int_equal(ctl_opts_apply_region(&args, &region, why), ESC_EINVAL);
    assert_non_null(strstr(why, "eu.ini"));
}

static void test_config_repeated(void **state)
{
    (void)state;
    char *argv[2 * CTL_CONFIG_MAX + 4];
    char paths[CTL_CONFIG_MAX + 1][16];
    for (int i = 0; i < CTL_CONFIG_MAX + 1; i++) {
        snprintf(paths[i], sizeof paths[i], "r%d.ini", i);
        argv[2 * i] = "--config";
        argv[2 * i + 1] = paths[i];
    }
    const ctl_env e = {NULL, NULL};
    /* up to CTL_CONFIG_MAX, kept in order: the first is this region */
    argv[2 * CTL_CONFIG_MAX] = "check";
    assert_int_equal(ctl_opts_parse(2 * CTL_CONFIG_MAX + 1, argv, &e, &args, why), 0);
    assert_int_equal(args.nconfig, CTL_CONFIG_MAX);
    for (int i = 0; i < CTL_CONFIG_MAX; i++) {
        assert_string_equal(args.config[i], paths[i]);
    }
    /* one more is refused */
    argv[2 * CTL_CONFIG_MAX] = "--config";
    argv[2 * CTL_CONFIG_MAX + 1] = paths[CTL_CONFIG_MAX];
    argv[2 * CTL_CONFIG_MAX + 2] = "check";
    args.cmd = CTL_CMD_STATUS;
    expect_refused("too many", ctl_opts_parse(2 * CTL_CONFIG_MAX + 3, argv, &e, &args, why));
    assert_non_null(strstr(why, "--config"));
    expect_refused("empty path", parse(NULL, &args, why, "--config=", "check", NULL));
    char long_path[CTL_CONFIG_PATH_LEN_MAX + 2];
    memset(long_path, 'p', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = '\0';
    expect_refused("long path", parse(NULL, &args, why, "--config", long_path, "check", NULL));
    expect_refused("no value", parse(NULL, &args, why, "check", "--config", NULL));
    /* without --config nothing changes: no database is still an error */
    expect_refused("no dsn", parse(NULL, &args, why, "check", NULL));
    assert_non_null(strstr(why, "--config"));
}

static void test_admin_refusals(void **state)
{
    (void)state;
    char long_url[ESC_ENDPOINT_LEN_MAX + 8];
    memcpy(long_url, "tcp://", 6);
    memset(long_url + 6, 'h', sizeof long_url - 7);
    long_url[sizeof long_url - 1] = '\0';
    args.cmd = CTL_CMD_STATUS;
#define REFUSE(...)                                                                                \
    expect_refused(#__VA_ARGS__, parse(NULL, &args, why, "--coordinator", COORD, __VA_ARGS__, NULL))
    REFUSE("item", "restock", "t", "i");               /* no QTY */
    REFUSE("item", "restock", "t", "i", "0");          /* QTY 0 */
    REFUSE("item", "restock", "t", "i", "-5");         /* negative */
    REFUSE("item", "restock", "t", "i", "1000000001"); /* over ESC_TOTAL_MAX */
    REFUSE("item", "reduce", "t", "i", "ten");
    REFUSE("item", "reduce", "t", "i", "1", "2"); /* arity */
    REFUSE("item", "split", "t", "i", "0");
    REFUSE("item", "split", "t", "i", "257");
    REFUSE("item", "split", "t", "i");
    REFUSE("item", "pause", "t");                          /* no ITEM */
    REFUSE("item", "pause", "t", "i", "x");                /* extra */
    REFUSE("item", "pause", "t", "bad id");                /* space */
    REFUSE("item", "collapse", "", "i");                   /* empty tenant */
    REFUSE("item", "rebalance", "t", "i", "--total", "1"); /* foreign option */
    REFUSE("item", "retire", "t", "i", "--all");
    REFUSE("drain"); /* no NODE */
    REFUSE("drain", "a", "b");
    REFUSE("undrain", "n 1");
    REFUSE("item", "pause", "t", "i", "--timeout-ms", "9");
    REFUSE("item", "pause", "t", "i", "--timeout-ms", "60001");
    REFUSE("item", "pause", "t", "i", "--timeout-ms", "3s");
    REFUSE("item", "frobnicate", "t", "i");
#undef REFUSE
    const char *bad_urls[] = {"127.0.0.1:7000", "tcp://", "http://x", "tcp://a b", long_url, ""};
    for (size_t i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        int rc = parse(NULL, &args, why, "--coordinator", bad_urls[i], "drain", "n1", NULL);
        if (bad_urls[i][0] == '\0') {
            /* an empty flag is "no coordinator", and drain needs one */
            assert_non_null(strstr(why, "ESCROW_COORDINATOR"));
        }
        expect_refused(bad_urls[i], rc);
    }
    assert_true(ctl_opts_url_valid("tcp://127.0.0.1:1"));
    assert_true(ctl_opts_url_valid("inproc://x"));
    assert_false(ctl_opts_url_valid(NULL));
    /* a region's coordinators: a list, each one a URL */
    assert_true(ctl_opts_url_valid("tcp://127.0.0.1:1,tcp://127.0.0.1:2"));
    assert_false(ctl_opts_url_valid("tcp://127.0.0.1:1,"));
    assert_false(ctl_opts_url_valid("tcp://127.0.0.1:1,,tcp://127.0.0.1:2"));
    assert_false(ctl_opts_url_valid("tcp://127.0.0.1:1,http://x"));
}

static void test_release_nodes_transfers(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, &args, why, "release", "1099511627777", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_RELEASE);
    assert_int_equal(args.hold_id, 1099511627777LL);
    assert_false(ctl_opts_is_admin(args.cmd));
    assert_int_equal(args.timeout_ms, CTL_TIMEOUT_MS_DEFAULT);
    assert_int_equal(
        parse(DSN, &args, why, "release", "1099511627777", "--timeout-ms", "500", NULL), 0);
    assert_int_equal(args.timeout_ms, 500);
    assert_int_equal(parse(DSN, &args, why, "nodes", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_NODES);
    assert_int_equal(parse(DSN, &args, why, "--json", "transfers", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_TRANSFERS);
    assert_false(args.all);
    assert_int_equal(args.limit, CTL_LIST_ROWS_DEFAULT);
    assert_int_equal(parse(DSN, &args, why, "transfers", "t", "i", "--all", "--limit", "5", NULL),
                     0);
    assert_true(args.all);
    assert_int_equal(args.limit, 5);
    assert_string_equal(args.tenant, "t");
    assert_string_equal(args.item, "i");
    args.cmd = CTL_CMD_STATUS;
    expect_refused("release 0", parse(DSN, &args, why, "release", "0", NULL));
    /* 42 names segment 0: no hold id can */
    expect_refused("release seg 0", parse(DSN, &args, why, "release", "42", NULL));
    expect_refused("release junk", parse(DSN, &args, why, "release", "h1", NULL));
    expect_refused("release none", parse(DSN, &args, why, "release", NULL));
    expect_refused("release two", parse(DSN, &args, why, "release", "1099511627777", "2", NULL));
    expect_refused("release no dsn", parse(NULL, &args, why, "release", "1099511627777", NULL));
    expect_refused("nodes arg", parse(DSN, &args, why, "nodes", "n1", NULL));
    expect_refused("nodes --all", parse(DSN, &args, why, "nodes", "--all", NULL));
    expect_refused("transfers 3", parse(DSN, &args, why, "transfers", "a", "b", "c", NULL));
    expect_refused("transfers --all=1", parse(DSN, &args, why, "transfers", "--all=1", NULL));
    expect_refused("status --all", parse(DSN, &args, why, "status", "--all", NULL));
}

static void test_format_ms(void **state)
{
    (void)state;
    char buf[32];
    ctl_num_format_ms(3000, buf, sizeof buf);
    assert_string_equal(buf, "3 s");
    ctl_num_format_ms(250, buf, sizeof buf);
    assert_string_equal(buf, "250 ms");
    ctl_num_format_ms(1500, buf, sizeof buf);
    assert_string_equal(buf, "1500 ms");
}

/* ---- ctl_rpc against an in-process responder --------------------------- */

typedef enum responder_mode {
    RESPOND_OK,         /* status 0, a message */
    RESPOND_REFUSE,     /* ESC_EUNKNOWN_ITEM */
    RESPOND_WRONG_CORR, /* the right request id, another corr_id */
    RESPOND_GARBAGE,    /* not a reply */
    RESPOND_SILENT,     /* reads, never answers */
} responder_mode;

/* The responder thread does not decode (wire.c's decoding arena is per
 * thread and lives as long as the process): it keeps the frame, answers with
 * the corr_id it was told, and the main thread decodes the frame after the
 * join. */
typedef struct responder {
    int sock;
    responder_mode mode;
    uint64_t corr_id; /* of the request it will see */
    unsigned char frame[512];
    size_t frame_len;
    int seen_count;
    wire_request seen; /* decoded by the main thread */
} responder;

static void *responder_main(void *arg)
{
    responder *r = arg;
    for (int spins = 0; spins < 4000 && r->seen_count == 0; spins++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        if (nnx_recv(r->sock, &msg, &len, &hdr) != 0 || msg == NULL) {
            usleep(1000);
            continue;
        }
        r->frame_len = len < sizeof r->frame ? len : sizeof r->frame;
        memcpy(r->frame, msg, r->frame_len);
        nnx_free(msg);
        r->seen_count++;
        if (r->mode == RESPOND_SILENT) {
            continue;
        }
        wire_reply rep = {0};
        memset(&rep, 0, sizeof rep);
        rep.corr_id = r->mode == RESPOND_WRONG_CORR ? r->corr_id + 1 : r->corr_id;
        rep.status = r->mode == RESPOND_REFUSE ? ESC_EUNKNOWN_ITEM : 0;
        snprintf(rep.message, sizeof rep.message, "%s", "restocked 5 units");
        unsigned char buf[512];
        size_t n = 0;
        if (r->mode == RESPOND_GARBAGE) {
            memset(buf, 0xff, 16);
            n = 16;
        } else {
            assert_int_equal(wire_encode_reply(&rep, buf, sizeof buf, &n), 0);
        }
        assert_int_equal(nnx_send(r->sock, &hdr, buf, n), 0);
    }
    return NULL;
}

static int rpc_with(responder_mode mode, const char *url, int timeout_ms, wire_reply *rep,
                    bool *sent, responder *r)
{
    memset(r, 0, sizeof *r);
    r->mode = mode;
    assert_int_equal(nnx_open_rep(&r->sock), 0);
    assert_int_equal(nnx_bind(r->sock, url), 0);
    unsigned char frame[256];
    size_t len = 0;
    uint64_t corr = ctl_rpc_corr_id();
    r->corr_id = corr;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, responder_main, r), 0);
    assert_int_equal(wire_encode_admin(corr, "shop-1", WIRE_ADMIN_RESTOCK, "tee", "", 5, 0, frame,
                                       sizeof frame, &len),
                     0);
    memset(rep, 0, sizeof *rep);
    int rc = ctl_rpc_call(url, corr, frame, len, timeout_ms, rep, sent);
    assert_int_equal(pthread_join(t, NULL), 0);
    nnx_close(r->sock);
    if (r->seen_count > 0) {
        char w[WIRE_WHY_MAX];
        assert_int_equal(wire_decode_request(r->frame, r->frame_len, &r->seen, w), 0);
        assert_int_equal(r->seen.corr_id, corr);
    }
    return rc;
}

static void test_rpc_round_trip(void **state)
{
    (void)state;
    wire_reply rep = {0};
    bool sent = false;
    responder r;
    assert_int_equal(rpc_with(RESPOND_OK, "inproc://ctl-rpc-ok", 2000, &rep, &sent, &r), 0);
    assert_true(sent);
    assert_int_equal(rep.status, 0);
    assert_string_equal(rep.message, "restocked 5 units");
    /* what the coordinator decoded */
    assert_int_equal(r.seen.op, WIRE_OP_ADMIN);
    assert_int_equal(r.seen.admin_op, WIRE_ADMIN_RESTOCK);
    assert_string_equal(r.seen.tenant_id, "shop-1");
    assert_string_equal(r.seen.item_id, "tee");
    assert_int_equal(r.seen.qty, 5);
    assert_int_equal(rpc_with(RESPOND_REFUSE, "inproc://ctl-rpc-refuse", 2000, &rep, &sent, &r), 0);
    assert_int_equal(rep.status, ESC_EUNKNOWN_ITEM);
    assert_int_equal(rpc_with(RESPOND_WRONG_CORR, "inproc://ctl-rpc-corr", 2000, &rep, &sent, &r),
                     ESC_EPROTO);
    assert_int_equal(rpc_with(RESPOND_GARBAGE, "inproc://ctl-rpc-junk", 2000, &rep, &sent, &r),
                     ESC_EPROTO);
}

static void test_rpc_timeouts(void **state)
{
    (void)state;
    wire_reply rep = {0};
    bool sent = true;
    responder r;
    /* a listener that never answers: sent, then no answer within the timeout */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(rpc_with(RESPOND_SILENT, "inproc://ctl-rpc-silent", 200, &rep, &sent, &r),
                     ESC_ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(sent);
    assert_int_equal(r.seen_count, 1); /* sent once, never resent */
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 190 && ms < 2000);
    /* nobody listens: nothing could be sent */
    sent = true;
    unsigned char frame[64];
    size_t len = 0;
    assert_int_equal(
        wire_encode_admin(7, "", WIRE_ADMIN_RELOAD, "", "", 0, 0, frame, sizeof frame, &len), 0);
    assert_int_equal(
        ctl_rpc_call("ipc:///nonexistent-dir/escrow-ctl.sock", 7, frame, len, 100, &rep, &sent),
        ESC_ETIMEDOUT);
    assert_false(sent);
    /* a URL nanomsg refuses */
    assert_int_equal(ctl_rpc_call("bogus://x", 7, frame, len, 100, &rep, &sent), ESC_EINVAL);
    assert_false(sent);
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

/* ---- regions (ctl_quota.h, the commands over several --config files) ---- */

static void test_quota_split(void **state)
{
    (void)state;
    const char *names[] = {"us", "eu", "ap"};
    const uint32_t even[] = {1, 1, 1};
    int64_t q[3] = {-1, -1, -1};
    /* 1000 over three equal shares: 333 each, the leftover unit to the
     * smallest name (ties of remainder) */
    assert_int_equal(ctl_quota_split(1000, 3, names, even, q), 0);
    assert_int_equal(q[0], 333);
    assert_int_equal(q[1], 333);
    assert_int_equal(q[2], 334); /* "ap" */
    const uint32_t w[] = {3, 1, 0};
    assert_int_equal(ctl_quota_split(1001, 2, names, w, q), 0);
    assert_int_equal(q[0], 751); /* remainder 3 of 4 beats 1 of 4 */
    assert_int_equal(q[1], 250);
    const uint32_t w2[] = {1, 2, 2};
    assert_int_equal(ctl_quota_split(7, 3, names, w2, q), 0);
    assert_int_equal(q[0] + q[1] + q[2], 7);
    assert_int_equal(q[0], 1); /* 1.4 */
    assert_int_equal(q[1], 3); /* 2.8, ties with ap by remainder: "ap" < "eu" */
    assert_int_equal(q[2], 3);
    assert_int_equal(ctl_quota_split(0, 3, names, even, q), 0);
    assert_int_equal(q[0] + q[1] + q[2], 0);
    /* refusals leave out alone */
    q[0] = 42;
    assert_int_equal(ctl_quota_split(10, 0, names, even, q), ESC_EINVAL);
    assert_int_equal(ctl_quota_split(10, 3, names, w, q), ESC_EINVAL); /* share 0 */
    assert_int_equal(ctl_quota_split(-1, 3, names, even, q), ESC_EINVAL);
    assert_int_equal(ctl_quota_split(ESC_TOTAL_MAX + 1, 3, names, even, q), ESC_EINVAL);
    assert_int_equal(q[0], 42);
    /* always adds up, and is proportional within one unit */
    const uint32_t big[] = {1000, 7, 999};
    for (int64_t t = 0; t < 3000; t += 37) {
        assert_int_equal(ctl_quota_split(t, 3, names, big, q), 0);
        assert_int_equal(q[0] + q[1] + q[2], t);
        for (int i = 0; i < 3; i++) {
            int64_t exact_floor = t * big[i] / 2006;
            assert_true(q[i] == exact_floor || q[i] == exact_floor + 1);
        }
    }
}

static void test_quota_parse(void **state)
{
    (void)state;
    ctl_quota_part parts[CTL_REGIONS_MAX];
    size_t n = 99;
    assert_int_equal(ctl_quota_parse("eu=600,us=400", parts, &n, why, sizeof why), 0);
    assert_int_equal(n, 2);
    assert_string_equal(parts[0].region, "eu");
    assert_int_equal(parts[0].units, 600);
    assert_string_equal(parts[1].region, "us");
    assert_int_equal(parts[1].units, 400);
    const char *bad[] = {"",      "eu",        "eu=",   "=5",    "eu=-1",
                         "eu=1x", "eu=5,eu=6", "eu=5,", "e u=5", "eu=1000000001"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = 99;
        assert_int_equal(ctl_quota_parse(bad[i], parts, &n, why, sizeof why), ESC_EINVAL);
        assert_int_equal(n, 99);
        assert_true(strlen(why) > 0);
    }
}

static void test_region_commands(void **state)
{
    (void)state;
    assert_int_equal(parse(NULL, &args, why, "item", "create", "t", "i", "--global", "--total",
                           "10", "--quota", "eu=4,us=6", "--config", "eu.ini", "--config", "us.ini",
                           NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_CREATE);
    assert_true(args.global);
    assert_int_equal(args.nconfig, 2);
    assert_int_equal(args.nquota, 2);
    assert_string_equal(args.quota[1].region, "us");
    assert_int_equal(parse(NULL, &args, why, "quota", "show", "t", "--config", "a.ini", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_QUOTA_SHOW);
    assert_string_equal(args.tenant, "t");
    assert_int_equal(parse(NULL, &args, why, "quota", "move", "t", "i", "25", "--from", "eu",
                           "--to", "us", "--config", "a.ini", NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_QUOTA_MOVE);
    assert_int_equal(args.qty, 25);
    assert_string_equal(args.from_region, "eu");
    assert_string_equal(args.to_region, "us");
    assert_int_equal(parse(NULL, &args, why, "regions", "--config", "a.ini", NULL), 0);
    assert_int_equal(args.cmd, CTL_CMD_REGIONS);
    assert_int_equal(parse(NULL, &args, why, "check", "--global", "--config", "a.ini", NULL), 0);
    assert_true(args.global);
    assert_int_equal(parse(NULL, &args, why, "status", "--global", "--config", "a.ini", NULL), 0);
    assert_true(args.global);
    assert_int_equal(parse(DSN, &args, why, "status", NULL), 0);
    assert_false(args.global);
    args.cmd = CTL_CMD_STATUS;
#define REFUSE(...) expect_refused(#__VA_ARGS__, parse(DSN, &args, why, __VA_ARGS__, NULL))
    REFUSE("regions");                                       /* no --config */
    REFUSE("check", "--global");                             /* no --config */
    REFUSE("quota", "show", "--dsn", "x", "--config", "a");  /* --dsn */
    REFUSE("quota", "move", "t", "i", "5", "--config", "a"); /* no --from/--to */
    REFUSE("quota", "move", "t", "i", "5", "--from", "eu", "--to", "eu", "--config", "a");
    REFUSE("quota", "move", "t", "i", "0", "--from", "eu", "--to", "us", "--config", "a");
    REFUSE("quota", "move", "t", "i", "--from", "eu", "--to", "us", "--config", "a");
    REFUSE("item", "create", "t", "i", "--total", "10", "--quota", "eu=10"); /* no --global */
    REFUSE("item", "create", "t", "i", "--global", "--total", "10", "--quota", "eu=4,us=5",
           "--config", "a"); /* sum */
    REFUSE("item", "create", "t", "i", "--global", "--total", "10", "--node", "n1", "--config",
           "a");
    REFUSE("holds", "t", "--buyer", "b", "--global", "--config", "a"); /* not a --global command */
    REFUSE("quota");
#undef REFUSE
}

static void test_global_restock_and_reduce(void **state)
{
    (void)state;
    assert_int_equal(parse(NULL, &args, why, "item", "restock", "t", "i", "40", "--global",
                           "--region", "us", "--op-id", "delivery-7", "--config", "eu.ini",
                           "--config", "us.ini", NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_RESTOCK);
    assert_int_equal(args.admin_op, WIRE_ADMIN_RESTOCK);
    assert_true(args.global);
    assert_int_equal(args.qty, 40);
    assert_string_equal(args.op_region, "us");
    assert_string_equal(args.op_id, "delivery-7");
    assert_true(ctl_region_cmd(&args));
    assert_string_equal(args.via_region, "");
    assert_int_equal(parse(NULL, &args, why, "item", "reduce", "t", "i", "5", "--global", "--via",
                           "us", "--config", "eu.ini", NULL),
                     0);
    assert_int_equal(args.cmd, CTL_CMD_ITEM_REDUCE);
    assert_string_equal(args.op_region, "");
    assert_string_equal(args.via_region, "us");
    assert_string_equal(args.op_id, "");
    /* without --global: the coordinator's plain restock */
    assert_int_equal(parse(NULL, &args, why, "item", "restock", "t", "i", "40", "--coordinator",
                           "tcp://127.0.0.1:7000", NULL),
                     0);
    assert_false(args.global);
    assert_false(ctl_region_cmd(&args));
    args.cmd = CTL_CMD_STATUS;
#define REFUSE(...) expect_refused(#__VA_ARGS__, parse(NULL, &args, why, __VA_ARGS__, NULL))
    REFUSE("item", "restock", "t", "i", "40", "--global"); /* no --config */
    REFUSE("item", "restock", "t", "i", "40", "--global", "--dsn", "x", "--config", "a");
    REFUSE("item", "restock", "t", "i", "40", "--op-id", "x", "--coordinator", "tcp://h:1");
    REFUSE("item", "reduce", "t", "i", "4", "--region", "us", "--coordinator", "tcp://h:1");
    REFUSE("item", "reduce", "t", "i", "4", "--via", "us", "--coordinator", "tcp://h:1");
    REFUSE("item", "reduce", "t", "i", "4", "--global", "--region", "us", "--config", "a");
    REFUSE("item", "reduce", "t", "i", "4", "--global", "--op-id", "a b", "--config", "a");
    REFUSE("item", "reduce", "t", "i", "0", "--global", "--config", "a");
    REFUSE("item", "pause", "t", "i", "--global", "--config", "a"); /* not a --global command */
    char long_id[ESC_KEY_LEN_MAX + 2];
    memset(long_id, 'k', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    REFUSE("item", "reduce", "t", "i", "4", "--global", "--op-id", long_id, "--config", "a");
#undef REFUSE
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
        cmocka_unit_test(test_events_follow),
        cmocka_unit_test(test_consumers),
        cmocka_unit_test(test_feed_cursor_order),
        cmocka_unit_test(test_ids_after_double_dash),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_usage_mentions_every_command),
        cmocka_unit_test(test_help_of_one_command),
        cmocka_unit_test(test_json_writer),
        cmocka_unit_test(test_admin_item_commands),
        cmocka_unit_test(test_global_restock_and_reduce),
        cmocka_unit_test(test_admin_node_commands),
        cmocka_unit_test(test_coordinator_sources),
        cmocka_unit_test(test_admin_refusals),
        cmocka_unit_test(test_config_sources),
        cmocka_unit_test(test_config_repeated),
        cmocka_unit_test(test_release_nodes_transfers),
        cmocka_unit_test(test_format_ms),
        cmocka_unit_test(test_rpc_round_trip),
        cmocka_unit_test(test_rpc_timeouts),
        cmocka_unit_test(test_quota_split),
        cmocka_unit_test(test_quota_parse),
        cmocka_unit_test(test_region_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
