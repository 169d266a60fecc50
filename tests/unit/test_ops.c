/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ops.c - unit tests for what operators rely on in common/: the log's
 * repeat limit (an outage writes one line per window with the count of
 * what was left out) and its JSON form (stable keys, free text only in
 * msg), a daemon's config file (every error names the file, the line and
 * the key, and a bad file sets nothing), the schema version rule (one
 * version of compatibility, refusals name both versions and escrowctl
 * migrate) and /healthz, /readyz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <getopt.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "health.h"
#include "log.h"
#include "log_line.h"
#include "schema_version.h"

/* ---- log: repeats and JSON ---- */

static int64_t fake_now;
static int64_t fake_clock(void)
{
    return fake_now;
}

/* Everything the log wrote since the sink was set, in buf. */
static void read_sink(FILE *f, char *buf, size_t cap)
{
    fflush(f);
    long n = ftell(f);
    assert_true(n >= 0 && (size_t)n < cap);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fseek(f, 0, SEEK_END);
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

static void test_log_repeats_are_counted(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    esc_log_set_format(ESC_LOG_TEXT);
    esc_log_set_sink(f);
    esc_log_set_clock(fake_clock);
    fake_now = 1000;
    /* a reconnect failing every 100 ms for 10 s: one line, then the count */
    for (int i = 0; i < 100; i++) {
        esc_log_write(ESC_LOG_WARN, "SEG-DB", "conn=1: cannot connect");
        fake_now += 100;
    }
    esc_log_write(ESC_LOG_WARN, "SEG-DB", "conn=2: cannot connect"); /* differs: written */
    char buf[8192];
    read_sink(f, buf, sizeof buf);
    assert_int_equal(count_lines(buf, "conn=1: cannot connect"), 1);
    assert_int_equal(count_lines(buf, "conn=2: cannot connect"), 1);
    fake_now += ESC_LOG_REPEAT_MS;
    esc_log_flush_repeats();
    read_sink(f, buf, sizeof buf);
    assert_int_equal(count_lines(buf, "conn=1: cannot connect"), 2);
    assert_non_null(strstr(buf, "conn=1: cannot connect suppressed=99\n"));
    esc_log_set_sink(NULL);
    esc_log_set_clock(NULL);
    fclose(f);
}

static void test_log_json_keys(void **state)
{
    (void)state;
    log_event e = {"2026-12-01T02:19:10.123Z", "warn", "SEG-FENCED",
                   "seg=4 item=t1/tee: a newer owner \"exists\"", 3};
    char out[LOG_LINE_LEN_MAX];
    log_line_json(&e, out, sizeof out);
    assert_string_equal(out, "{\"ts\":\"2026-12-01T02:19:10.123Z\",\"level\":\"warn\","
                             "\"id\":\"SEG-FENCED\",\"msg\":\"a newer owner \\\"exists\\\"\","
                             "\"seg\":\"4\",\"item\":\"t1/tee\",\"suppressed\":3}\n");
}

/* ---- config ---- */

static const struct option opts[] = {
    {"node-id", required_argument, NULL, 'n'},  {"listen", required_argument, NULL, 'l'},
    {"sweep-ms", required_argument, NULL, 's'}, {"config", required_argument, NULL, 'F'},
    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
static const char *const not_keys[] = {"config", NULL};
static const char *const repeatable[] = {"listen", NULL};
static const config_spec spec = {"segment", opts, not_keys, repeatable};

typedef struct got {
    int n;
    char seen[8][64];
} got;

static int set_one(void *arg, int opt, const char *value, char *why, size_t why_len)
{
    got *g = arg;
    if (opt == 's' && atoi(value) <= 0) {
        snprintf(why, why_len, "must be 1..10000, not '%s'", value);
        return -1;
    }
    snprintf(g->seen[g->n++ % 8], 64, "%c=%s", opt, value);
    return 0;
}

static char cfg_path[64];

static int load(const char *text, const bool *given, got *g, char *err)
{
    FILE *f = fopen(cfg_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    memset(g, 0, sizeof *g);
    return config_load(&spec, cfg_path, given, set_one, g, err, CONFIG_ERR_LEN);
}

static void expect_error(const char *text, const char *want_after_path)
{
    got g;
    char err[CONFIG_ERR_LEN], want[CONFIG_ERR_LEN];
    assert_int_equal(load(text, NULL, &g, err), -1);
    snprintf(want, sizeof want, "%s:%s", cfg_path, want_after_path);
    assert_string_equal(err, want);
}

static void test_config_keys_and_precedence(void **state)
{
    (void)state;
    got g;
    char err[CONFIG_ERR_LEN];
    bool given[CONFIG_OPTS_MAX] = {0};
    given['s'] = true; /* the command line gave --sweep-ms: the file's is not read */
    assert_int_equal(load("; a comment\n[segment]\nnode_id = n1\nlisten = tcp://a:1\n"
                          "listen = tcp://b:2\nsweep_ms = 0\n",
                          given, &g, err),
                     0);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.seen[0], "n=n1");
    assert_string_equal(g.seen[1], "l=tcp://a:1");
    assert_string_equal(g.seen[2], "l=tcp://b:2");
}

static void test_config_errors_name_file_line_key(void **state)
{
    (void)state;
    expect_error("[segment]\nnode_id = n1\nlisen = x\n", "3: [segment] unknown key 'lisen'");
    expect_error("[segment]\nsweep_ms = 0\n", "2: [segment] sweep_ms: must be 1..10000, not '0'");
    expect_error("[segment]\nnode_id = a\nnode_id = b\n",
                 "3: [segment] node_id: given twice (first on line 2)");
    expect_error("[segment]\nconfig = other.ini\n", "2: [segment] unknown key 'config'");
    expect_error("[segmnt]\nnode_id = a\n",
                 "1: unknown section [segmnt]; this file has one section, [segment]");
    /* a bad line anywhere sets nothing, not even the keys before it */
    got g;
    char err[CONFIG_ERR_LEN];
    assert_int_equal(load("[segment]\nnode_id = n1\nbogus = 1\n", NULL, &g, err), -1);
    assert_int_equal(g.n, 0);
}

/* ---- schema version ---- */

static void test_schema_rule(void **state)
{
    (void)state;
    assert_int_equal(schema_version_compat(7, 7), SCHEMA_SAME);
    assert_int_equal(schema_version_compat(8, 7), SCHEMA_NEXT);
    assert_int_equal(schema_version_compat(6, 7), SCHEMA_OLDER);
    assert_int_equal(schema_version_compat(0, 7), SCHEMA_OLDER);
    assert_int_equal(schema_version_compat(9, 7), SCHEMA_TOO_NEW);
    assert_true(schema_version_runs(SCHEMA_NEXT));
    assert_false(schema_version_runs(SCHEMA_OLDER));
    assert_false(schema_version_runs(SCHEMA_TOO_NEW));
    char msg[512];
    schema_version_message(SCHEMA_OLDER, 6, 7, "escrow-segment", msg, sizeof msg);
    assert_non_null(strstr(msg, "version 6"));
    assert_non_null(strstr(msg, "version 7"));
    assert_non_null(strstr(msg, "escrowctl migrate"));
    schema_version_message(SCHEMA_TOO_NEW, 9, 7, "escrow-segment", msg, sizeof msg);
    assert_non_null(strstr(msg, "version 9"));
    assert_non_null(strstr(msg, "version 7"));
    assert_non_null(strstr(msg, "escrowctl migrate"));
    assert_true(schema_version_binary() > 0);
}

/* ---- health ---- */

static void test_health(void **state)
{
    (void)state;
    health h;
    char body[HEALTH_WHY_LEN + 64];
    health_init(&h, 1000);
    assert_int_equal(health_live(&h, 1100, body, sizeof body), 200);
    assert_int_equal(health_ready(&h, 1100, body, sizeof body), 503);
    assert_non_null(strstr(body, "starting"));
    health_set_ready(&h, false, "database not connected");
    assert_int_equal(health_ready(&h, 1100, body, sizeof body), 503);
    assert_non_null(strstr(body, "database not connected"));
    health_beat(&h, 2000);
    health_set_ready(&h, true, NULL);
    assert_int_equal(health_ready(&h, 2100, body, sizeof body), 200);
    /* a loop stuck for longer than HEALTH_STALL_MS: neither live nor ready */
    assert_int_equal(health_live(&h, 2000 + HEALTH_STALL_MS + 1, body, sizeof body), 503);
    assert_int_equal(health_ready(&h, 2000 + HEALTH_STALL_MS + 1, body, sizeof body), 503);
    health_fini(&h);
}

int main(void)
{
    snprintf(cfg_path, sizeof cfg_path, "/tmp/escrow-test-ops-%d.ini", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_repeats_are_counted),
        cmocka_unit_test(test_log_json_keys),
        cmocka_unit_test(test_config_keys_and_precedence),
        cmocka_unit_test(test_config_errors_name_file_line_key),
        cmocka_unit_test(test_schema_rule),
        cmocka_unit_test(test_health),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(cfg_path);
    return rc;
}
