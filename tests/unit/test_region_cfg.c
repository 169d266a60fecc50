/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_region_cfg.c - unit tests for region_cfg (one region's INI file):
 * a full valid file, the defaults, and one test per kind of error with its
 * exact message (file, line, section and key). The files are written into a
 * temporary directory that the group teardown removes. The example files
 * examples/regions/{eu,us}.ini are loaded too, so they cannot rot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <cmocka.h>

#include "region_cfg.h"

#ifndef ESC_SOURCE_DIR
#error "ESC_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

static char dir[64];
static char path[128];
static region_cfg *cfg; /* large: on the heap */
static char err[REGION_ERR_LEN];

/* The smallest valid [region] section, lines 1..5. */
#define REGION_OK                                                                                  \
    "[region]\n"                                                                                   \
    "name = eu\n"                                                                                  \
    "dsn = host=127.0.0.1 port=55432 dbname=escrow_eu user=escrow\n"                               \
    "coordinator = tcp://127.0.0.1:7100\n"                                                         \
    "publish = tcp://127.0.0.1:7101\n"

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/escrow-region-cfg.XXXXXX");
    cfg = malloc(sizeof *cfg);
    return mkdtemp(dir) != NULL && cfg != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "%s/eu.ini", dir);
    unlink(path);
    free(cfg);
    return rmdir(dir);
}

/* Writes text to DIR/eu.ini (path) and loads it. */
static int load_text(const char *text)
{
    snprintf(path, sizeof path, "%s/eu.ini", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    err[0] = '\0';
    return region_cfg_load(path, cfg, err, sizeof err);
}

/* The file fails with exactly "PATH:" followed by want. */
static void expect_error(const char *text, const char *want)
{
    assert_int_equal(load_text(text), -1);
    char full[REGION_ERR_LEN + 128];
    snprintf(full, sizeof full, "%s:%s", path, want);
    assert_string_equal(err, full);
}

static void test_full_file(void **state)
{
    (void)state;
    const char *text = "; eu.ini, every key\n"
                       "[region]\n"
                       "name        = eu          ; the region\n"
                       "dsn         = host=127.0.0.1 port=55432 dbname=escrow_eu user=escrow\n"
                       "coordinator = tcp://127.0.0.1:7100\n"
                       "publish     = tcp://127.0.0.1:7101\n"
                       "metrics     = 127.0.0.1:9100\n"
                       "\n"
                       "[coordinator]\n"
                       "lease_ms = 1500\n"
                       "heartbeat_ms = 100\n"
                       "rebalance_ms = 250\n"
                       "collapse_pct = 0\n"
                       "low_water_pct = 30\n"
                       "catalog_poll_ms = 500\n"
                       "check_ms = 2000\n"
                       "check_sweep_ms = 60000\n"
                       "[quota]\n"
                       "share = 3\n"
                       "floor = 10\n"
                       "interval_ms = 500\n"
                       "horizon_ms = 10000\n"
                       "auto = OFF\n"
                       "[floors]\n"
                       "shop-1/tee = 25\n"
                       "shop-1/a/b = 0\n"
                       "[nodes]\n"
                       "  eu-n1 = tcp://127.0.0.1:7110\n" /* indented keys are keys */
                       "  eu-n2 = tcp://127.0.0.1:7111\n"
                       "  eu-n3 = ipc:///tmp/eu-n3.sock\n"
                       "[peers]\n"
                       "us = tcp://127.0.0.1:7200\n"
                       "ap = tcp://127.0.0.1:7300\n";
    assert_int_equal(load_text(text), 0);
    assert_string_equal(cfg->path, path);
    assert_string_equal(cfg->name, "eu");
    assert_string_equal(cfg->dsn, "host=127.0.0.1 port=55432 dbname=escrow_eu user=escrow");
    assert_string_equal(cfg->coordinator, "tcp://127.0.0.1:7100");
    assert_string_equal(cfg->publish, "tcp://127.0.0.1:7101");
    assert_string_equal(cfg->metrics, "127.0.0.1:9100");
    assert_int_equal(cfg->lease_ms, 1500);
    assert_int_equal(cfg->heartbeat_ms, 100);
    assert_int_equal(cfg->rebalance_ms, 250);
    assert_int_equal(cfg->collapse_pct, 0);
    assert_int_equal(cfg->low_water_pct, 30);
    assert_int_equal(cfg->catalog_poll_ms, 500);
    assert_int_equal(cfg->check_ms, 2000);
    assert_int_equal(cfg->check_sweep_ms, 60000);
    assert_int_equal(cfg->share, 3);
    assert_int_equal(cfg->floor, 10);
    assert_int_equal(cfg->interval_ms, 500);
    assert_int_equal(cfg->horizon_ms, 10000);
    assert_false(cfg->quota_auto);
    assert_int_equal(cfg->nfloors, 2);
    assert_int_equal(region_cfg_floor(cfg, "shop-1", "tee"), 25);
    assert_int_equal(region_cfg_floor(cfg, "shop-1", "a/b"), 0);
    assert_int_equal(region_cfg_floor(cfg, "shop-1", "other"), 10);
    assert_int_equal(cfg->floors[0].line, 25);
    assert_int_equal(cfg->nnodes, 3);
    assert_string_equal(region_cfg_node(cfg, "eu-n2")->endpoint, "tcp://127.0.0.1:7111");
    assert_int_equal(region_cfg_node(cfg, "eu-n2")->line, 29);
    assert_string_equal(region_cfg_node(cfg, "eu-n3")->endpoint, "ipc:///tmp/eu-n3.sock");
    assert_null(region_cfg_node(cfg, "eu-n4"));
    assert_int_equal(cfg->npeers, 2);
    assert_string_equal(region_cfg_peer(cfg, "us")->coordinator, "tcp://127.0.0.1:7200");
    assert_int_equal(region_cfg_peer(cfg, "ap")->line, 33);
    assert_null(region_cfg_peer(cfg, "eu"));
}

static void test_defaults(void **state)
{
    (void)state;
    assert_int_equal(load_text(REGION_OK), 0);
    assert_string_equal(cfg->metrics, "");
    assert_int_equal(cfg->lease_ms, 0);
    assert_int_equal(cfg->heartbeat_ms, 0);
    assert_int_equal(cfg->rebalance_ms, 0);
    assert_int_equal(cfg->catalog_poll_ms, 0);
    assert_int_equal(cfg->check_ms, 0);
    assert_int_equal(cfg->check_sweep_ms, 0);
    assert_int_equal(cfg->collapse_pct, -1);
    assert_int_equal(cfg->low_water_pct, -1);
    assert_int_equal(cfg->share, 1);
    assert_int_equal(cfg->floor, 0);
    assert_int_equal(cfg->interval_ms, 1000);
    assert_int_equal(cfg->horizon_ms, 5000);
    assert_true(cfg->quota_auto);
    assert_int_equal(cfg->nnodes + cfg->npeers + cfg->nfloors, 0);
    assert_int_equal(region_cfg_floor(cfg, "t", "i"), 0);
}

static void test_bool_spellings(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        bool want;
    } cases[] = {{"on", true},  {"off", false}, {"true", true}, {"false", false}, {"yes", true},
                 {"no", false}, {"1", true},    {"0", false},   {"Yes", true},    {"OFF", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, REGION_OK "[quota]\nauto = %s\n", cases[i].v);
        assert_int_equal(load_text(text), 0);
        assert_int_equal(cfg->quota_auto, cases[i].want);
    }
    expect_error(REGION_OK "[quota]\nauto = maybe\n",
                 "7: [quota] auto: must be on, off, true, false, yes, no, 1 or 0, not 'maybe'");
}

static void test_missing_key(void **state)
{
    (void)state;
    expect_error("; no dsn\n[region]\nname = eu\ncoordinator = tcp://127.0.0.1:7100\n"
                 "publish = tcp://127.0.0.1:7101\n",
                 "2: [region] missing key 'dsn'");
    expect_error("[region]\nname = eu\ndsn = dbname=x\ncoordinator = tcp://127.0.0.1:7100\n",
                 "1: [region] missing key 'publish'");
}

static void test_missing_section(void **state)
{
    (void)state;
    expect_error("[nodes]\nn1 = tcp://127.0.0.1:7110\n", "0: [region] missing key 'name'");
    expect_error("", "0: [region] missing key 'name'");
}

static void test_unknown_key(void **state)
{
    (void)state;
    expect_error(REGION_OK "lisen = tcp://127.0.0.1:7102\n", "6: [region] unknown key 'lisen'");
    expect_error(REGION_OK "[coordinator]\nlease = 100\n", "7: [coordinator] unknown key 'lease'");
    expect_error(REGION_OK "[quota]\nFloor = 1\n", "7: [quota] unknown key 'Floor'");
}

static void test_unknown_section(void **state)
{
    (void)state;
    expect_error(REGION_OK "[node]\nn1 = tcp://127.0.0.1:7110\n", "6: unknown section [node]");
    expect_error(REGION_OK "\n[Quota]\n", "7: unknown section [Quota]"); /* even empty */
    expect_error("name = eu\n" REGION_OK, "1: key 'name' is outside of any section");
}

static void test_duplicate_key(void **state)
{
    (void)state;
    expect_error(REGION_OK "dsn = dbname=other\n",
                 "6: [region] duplicate key 'dsn' (first on line 3)");
    expect_error(REGION_OK "[nodes]\nn1 = tcp://127.0.0.1:7110\nn1 = tcp://127.0.0.1:7111\n",
                 "8: [nodes] duplicate key 'n1' (first on line 7)");
    expect_error(REGION_OK "[peers]\nus = tcp://127.0.0.1:7200\nus = tcp://127.0.0.1:7201\n",
                 "8: [peers] duplicate key 'us' (first on line 7)");
    expect_error(REGION_OK "[floors]\nt/i = 1\nt/i = 2\n",
                 "8: [floors] duplicate key 't/i' (first on line 7)");
    expect_error(REGION_OK "[quota]\nshare = 1\n[nodes]\n[quota]\n",
                 "9: section [quota] given twice (first on line 6)");
}

static void test_bad_dsn(void **state)
{
    (void)state;
    expect_error("[region]\nname = eu\ndsn = host\n",
                 "3: [region] dsn: missing \"=\" after \"host\" in connection info string");
    expect_error("[region]\nname = eu\ndsn = host=a bogus=1\n",
                 "3: [region] dsn: invalid connection option \"bogus\"");
    expect_error("[region]\nname = eu\ndsn =\n", "3: [region] dsn: must be 1..1024 bytes");
    /* long lines are fine up to REGION_LINE_LEN_MAX (libinih's default is 200) */
    char text[2048], want[256];
    int n = snprintf(text, sizeof text, "[region]\nname = eu\ndsn = dbname=");
    memset(text + n, 'x', REGION_DSN_LEN_MAX - 7);
    snprintf(text + n + REGION_DSN_LEN_MAX - 7, sizeof text - (size_t)n - REGION_DSN_LEN_MAX + 7,
             "\ncoordinator = tcp://127.0.0.1:7100\npublish = tcp://127.0.0.1:7101\n");
    assert_int_equal(load_text(text), 0);
    assert_int_equal(strlen(cfg->dsn), REGION_DSN_LEN_MAX);
    snprintf(text + n, sizeof text - (size_t)n, "%01025d\n", 0);
    snprintf(want, sizeof want, "3: [region] dsn: must be 1..%d bytes", REGION_DSN_LEN_MAX);
    expect_error(text, want);
    /* a URI is a DSN too */
    assert_int_equal(
        load_text("[region]\nname = eu\ndsn = postgresql://escrow@127.0.0.1:5432/escrow_eu\n"
                  "coordinator = tcp://127.0.0.1:7100\npublish = tcp://127.0.0.1:7101\n"),
        0);
}

static void test_bad_name(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "[region]\nname = %065d\n", 0);
    char want[256];
    snprintf(want, sizeof want,
             "2: [region] name: must be 1..64 printable ASCII characters without spaces, "
             "not '%065d'",
             0);
    expect_error(text, want);
    expect_error("[region]\nname = e u\n",
                 "2: [region] name: must be 1..64 printable ASCII characters without spaces, "
                 "not 'e u'");
    expect_error(REGION_OK "[nodes]\nn 1 = tcp://127.0.0.1:7110\n",
                 "7: [nodes] 'n 1': the key must be 1..64 printable ASCII characters without "
                 "spaces");
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_error(REGION_OK "[coordinator]\nlease_ms = 50\n",
                 "7: [coordinator] lease_ms: must be an integer in 100..600000, not '50'");
    expect_error(REGION_OK "[coordinator]\ncollapse_pct = 101\n",
                 "7: [coordinator] collapse_pct: must be an integer in 0..100, not '101'");
    expect_error(REGION_OK "[coordinator]\ncheck_ms = 3600001\n",
                 "7: [coordinator] check_ms: must be an integer in 50..3600000, not '3600001'");
    expect_error(REGION_OK "[coordinator]\ncheck_sweep_ms = 49\n",
                 "7: [coordinator] check_sweep_ms: must be an integer in 50..86400000, not '49'");
    expect_error(REGION_OK "[coordinator]\nheartbeat_ms = -5\n",
                 "7: [coordinator] heartbeat_ms: must be an integer in 10..60000, not '-5'");
    expect_error(REGION_OK "[coordinator]\nrebalance_ms = 12x\n",
                 "7: [coordinator] rebalance_ms: must be an integer in 10..60000, not '12x'");
    expect_error(REGION_OK "[quota]\nshare = 0\n",
                 "7: [quota] share: must be an integer in 1..1000, not '0'");
    expect_error(REGION_OK "[quota]\nfloor = 1099511627777\n",
                 "7: [quota] floor: must be an integer in 0..1099511627776, not '1099511627777'");
    expect_error(REGION_OK "[floors]\nt/i = 99999999999999999999\n",
                 "7: [floors] t/i: must be an integer in 0..1099511627776, not "
                 "'99999999999999999999'");
    expect_error(REGION_OK "[coordinator]\nlease_ms = 1000\nheartbeat_ms = 1000\n",
                 "8: [coordinator] heartbeat_ms: 1000 must be below lease_ms (1000)");
}

static void test_bad_endpoint(void **state)
{
    (void)state;
    static const char *const bad[] = {"tcp://127.0.0.1",       "tcp://127.0.0.1:0",
                                      "tcp://127.0.0.1:65536", "tcp://:7100",
                                      "http://127.0.0.1:7100", "ipc://",
                                      "tcp://a:b:7100",        "tcp://[::1]7100",
                                      "127.0.0.1:7100",        "tcp://h:+7100"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512], want[512];
        snprintf(text, sizeof text, REGION_OK "[nodes]\nn1 = %s\n", bad[i]);
        snprintf(want, sizeof want, "7: [nodes] n1: '%s' is not tcp://HOST:PORT or ipc://PATH",
                 bad[i]);
        expect_error(text, want);
    }
    expect_error("[region]\nname = eu\ndsn = dbname=x\ncoordinator = 127.0.0.1:7100\n",
                 "4: [region] coordinator: '127.0.0.1:7100' is not tcp://HOST:PORT or "
                 "ipc://PATH");
    expect_error(REGION_OK "metrics = 127.0.0.1:\n",
                 "6: [region] metrics: '127.0.0.1:' is not PORT, HOST:PORT or [IPV6]:PORT");
    expect_error(REGION_OK "[peers]\nus = tcp://127.0.0.1:99999\n",
                 "7: [peers] us: 'tcp://127.0.0.1:99999' is not tcp://HOST:PORT or ipc://PATH");
    /* what is fine */
    assert_int_equal(load_text(REGION_OK "metrics = 9100\n[nodes]\nn1 = tcp://[::1]:7110\n"
                                         "n2 = tcp://localhost:7111\nn3 = tcp://*:7112\n"),
                     0);
    assert_int_equal(load_text(REGION_OK "metrics = [::1]:9100\n"), 0);
}

static void test_overlapping_endpoints(void **state)
{
    (void)state;
    /* two nodes */
    expect_error(REGION_OK "[nodes]\nn1 = tcp://127.0.0.1:7110\nn2 = tcp://127.0.0.1:7110\n",
                 "8: [nodes] n2: endpoint tcp://127.0.0.1:7110 is already used by [nodes] n1 "
                 "(line 7)");
    /* a node on the coordinator's address */
    expect_error(REGION_OK "[nodes]\nn1 = tcp://127.0.0.1:7110\nn2 = tcp://127.0.0.1:7100\n",
                 "8: [nodes] n2: endpoint tcp://127.0.0.1:7100 is already used by coordinator "
                 "(line 4)");
    /* a peer on this region's publish address */
    expect_error(REGION_OK "[peers]\nus = tcp://127.0.0.1:7101\n",
                 "7: [peers] us: endpoint tcp://127.0.0.1:7101 is already used by publish "
                 "(line 5)");
    /* the metrics port on the coordinator's */
    expect_error(REGION_OK "metrics = 127.0.0.1:7100\n",
                 "6: [region] metrics: endpoint 127.0.0.1:7100 is already used by coordinator "
                 "(line 4)");
    /* coordinator = publish */
    expect_error("[region]\nname = eu\ndsn = dbname=x\ncoordinator = tcp://127.0.0.1:7100\n"
                 "publish = tcp://127.0.0.1:7100\n",
                 "5: [region] publish: endpoint tcp://127.0.0.1:7100 is already used by "
                 "coordinator (line 4)");
    /* the [nodes] section before [region]: still reported at the later line */
    expect_error("[nodes]\nn1 = tcp://127.0.0.1:7101\n" REGION_OK,
                 "7: [region] publish: endpoint tcp://127.0.0.1:7101 is already used by [nodes] "
                 "n1 (line 2)");
    /* a wildcard host, localhost, IPC paths */
    expect_error(REGION_OK "[nodes]\nn1 = tcp://*:7100\n",
                 "7: [nodes] n1: endpoint tcp://*:7100 is already used by coordinator (line 4)");
    expect_error(REGION_OK "metrics = 7101\n",
                 "6: [region] metrics: endpoint 7101 is already used by publish (line 5)");
    expect_error(REGION_OK "[nodes]\nn1 = tcp://localhost:7100\n",
                 "7: [nodes] n1: endpoint tcp://localhost:7100 is already used by coordinator "
                 "(line 4)");
    expect_error(REGION_OK "[nodes]\nn1 = ipc:///tmp/x.sock\n[peers]\nus = ipc:///tmp/x.sock\n",
                 "9: [peers] us: endpoint ipc:///tmp/x.sock is already used by [nodes] n1 "
                 "(line 7)");
    /* the same port on other hosts is fine */
    assert_int_equal(load_text(REGION_OK "[nodes]\nn1 = tcp://127.0.0.2:7100\n"), 0);
}

static void test_bad_floor_key(void **state)
{
    (void)state;
    static const char *const bad[] = {"tee", "/tee", "shop-1/", "shop 1/tee"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512], want[512];
        snprintf(text, sizeof text, REGION_OK "[floors]\n%s = 5\n", bad[i]);
        snprintf(want, sizeof want,
                 "7: [floors] '%s': the key must be TENANT/ITEM (a tenant of 1..64 and an item "
                 "of 1..128 printable ASCII characters without spaces)",
                 bad[i]);
        expect_error(text, want);
    }
}

static void test_peer_own_name(void **state)
{
    (void)state;
    expect_error("[peers]\nus = tcp://127.0.0.1:7200\neu = tcp://127.0.0.1:7300\n" REGION_OK,
                 "3: [peers] eu: a peer cannot have this region's name");
}

static void test_syntax_error(void **state)
{
    (void)state;
    expect_error(REGION_OK "this line has no equals sign\n", "6: syntax error");
    expect_error("[region\nname = eu\n", "1: syntax error");
    /* the first error by line wins, whether syntax or not */
    expect_error(REGION_OK "junk\nlisen = x\n", "6: syntax error");
    expect_error(REGION_OK "lisen = x\njunk\n", "6: [region] unknown key 'lisen'");
    /* a line over REGION_LINE_LEN_MAX */
    char text[4096];
    int n = snprintf(text, sizeof text, "%s; ", REGION_OK);
    memset(text + n, 'x', REGION_LINE_LEN_MAX);
    snprintf(text + n + REGION_LINE_LEN_MAX, sizeof text - (size_t)n - REGION_LINE_LEN_MAX, "\n");
    expect_error(text, "6: line longer than 1200 bytes");
}

static void test_missing_file(void **state)
{
    (void)state;
    char missing[256];
    snprintf(missing, sizeof missing, "%s/nope.ini", dir);
    assert_int_equal(region_cfg_load(missing, cfg, err, sizeof err), -1);
    char want[512];
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", missing);
    assert_string_equal(err, want);
    /* a directory opens but does not read */
    assert_int_equal(region_cfg_load(dir, cfg, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:1: cannot read: Is a directory", dir);
    assert_string_equal(err, want);
}

static void test_out_untouched_on_error(void **state)
{
    (void)state;
    assert_int_equal(load_text(REGION_OK), 0);
    assert_string_equal(cfg->name, "eu");
    assert_int_equal(load_text("[region]\nname = other\nbogus = 1\n"), -1);
    assert_string_equal(cfg->name, "eu");
}

static void test_examples_load(void **state)
{
    (void)state;
    static const char *const files[] = {ESC_SOURCE_DIR "/examples/regions/eu.ini",
                                        ESC_SOURCE_DIR "/examples/regions/us.ini"};
    for (size_t i = 0; i < 2; i++) {
        int rc = region_cfg_load(files[i], cfg, err, sizeof err);
        if (rc != 0) {
            fail_msg("%s", err);
        }
        assert_int_equal(cfg->nnodes, 2);
        assert_int_equal(cfg->npeers, 1);
    }
    assert_string_equal(cfg->name, "us");
    assert_string_equal(cfg->peers[0].name, "eu");
    assert_string_equal(cfg->peers[0].coordinator, "tcp://127.0.0.1:7100");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bool_spellings),
        cmocka_unit_test(test_missing_key),
        cmocka_unit_test(test_missing_section),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_unknown_section),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_bad_dsn),
        cmocka_unit_test(test_bad_name),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_bad_endpoint),
        cmocka_unit_test(test_overlapping_endpoints),
        cmocka_unit_test(test_bad_floor_key),
        cmocka_unit_test(test_peer_own_name),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_out_untouched_on_error),
        cmocka_unit_test(test_examples_load),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
