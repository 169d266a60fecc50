/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gw_config.c - escrow-gateway's settings: defaults, each key's
 * bounds, the INI file (errors name the file and the line: unknown
 * sections and keys, a key twice, a bad value, a line too long), flags
 * that the file must not override, the checks across settings (TLS or
 * plain HTTP, dsn and coordinator), --listen's forms, and
 * examples/gateway/gateway.ini (so the example cannot rot).
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

#include "escrow_errors.h"
#include "gw_config.h"

static char path[64];

static void write_file(const char *text)
{
    strcpy(path, "/tmp/test_gw_config.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int load(const char *text, gw_config *c, char *err)
{
    write_file(text);
    int rc = gw_config_load(path, c, NULL, err, GW_ERR_LEN);
    unlink(path);
    return rc;
}

static void test_set_and_bounds(void **state)
{
    (void)state;
    gw_config c;
    gw_config_defaults(&c);
    assert_int_equal(c.deadline_ms, 5000);
    assert_int_equal(c.streams_max, 64);
    char err[GW_ERR_LEN];
    assert_int_equal(gw_config_set(&c, "deadline_ms", "100", err, sizeof err), 0);
    assert_int_equal(c.deadline_ms, 100);
    assert_int_equal(gw_config_set(&c, "deadline_ms", "99", err, sizeof err), ESC_EINVAL);
    assert_non_null(strstr(err, "deadline_ms"));
    assert_int_equal(gw_config_set(&c, "deadline_ms", "600001", err, sizeof err), ESC_EINVAL);
    assert_int_equal(gw_config_set(&c, "body_bytes_max", "1k", err, sizeof err), ESC_EINVAL);
    assert_int_equal(gw_config_set(&c, "connections_max", "-1", err, sizeof err), ESC_EINVAL);
    assert_int_equal(gw_config_set(&c, "plain_http", "yes", err, sizeof err), ESC_EINVAL);
    assert_int_equal(gw_config_set(&c, "plain_http", "on", err, sizeof err), 0);
    assert_true(c.plain_http);
    assert_int_equal(gw_config_set(&c, "log_level", "loud", err, sizeof err), ESC_EINVAL);
    assert_int_equal(gw_config_set(&c, "lisen", "1", err, sizeof err), ESC_EINVAL);
    assert_non_null(strstr(err, "unknown key 'lisen'"));
    char big[GW_DSN_LEN_MAX + 10];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(gw_config_set(&c, "dsn", big, err, sizeof err), ESC_EINVAL);
}

static void test_file(void **state)
{
    (void)state;
    gw_config c;
    gw_config_defaults(&c);
    char err[GW_ERR_LEN];
    assert_int_equal(load("; a comment\n[gateway]\ndsn = host=x dbname=escrow\n"
                          "coordinator = tcp://127.0.0.1:7000 ; inline comment\n"
                          "streams_max = 0\nrate_tenant = 100:200\n",
                          &c, err),
                     0);
    assert_string_equal(c.dsn, "host=x dbname=escrow");
    assert_string_equal(c.coordinator, "tcp://127.0.0.1:7000");
    assert_int_equal(c.streams_max, 0);
    assert_string_equal(c.rate_tenant, "100:200");
    const struct {
        const char *text, *want;
    } bad[] = {
        {"[gateway]\nlisen = 1\n", ":2: [gateway] unknown key 'lisen'"},
        {"[gw]\nlisten = 1\n", ":1: unknown section [gw]"},
        {"listen = 1\n", ":1: key 'listen' is outside [gateway]"},
        {"[gateway]\nlisten = 1\nlisten = 2\n",
         ":3: [gateway] listen: given twice (first on line 2)"},
        {"[gateway]\n\ndeadline_ms = 5\n", ":3: [gateway] deadline_ms: must be a number"},
        {"[gateway]\nthis is not ini\n", ":2: syntax error"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gw_config_defaults(&c);
        assert_int_equal(load(bad[i].text, &c, err), -1);
        if (strstr(err, bad[i].want) == NULL || strstr(err, "/tmp/test_gw_config.") == NULL) {
            fail_msg("%s: got '%s', want '%s'", bad[i].text, err, bad[i].want);
        }
    }
    char *longline = malloc(GW_LINE_LEN_MAX + 100);
    strcpy(longline, "[gateway]\ndsn = ");
    memset(longline + 16, 'x', GW_LINE_LEN_MAX + 10);
    strcpy(longline + 16 + GW_LINE_LEN_MAX + 10, "\n");
    assert_int_equal(load(longline, &c, err), -1);
    assert_non_null(strstr(err, ":2: line longer than"));
    free(longline);
    assert_int_equal(gw_config_load("/nonexistent/gw.ini", &c, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
}

/* given[] of a command line that set --listen. */
static void given_listen(bool given[CONFIG_OPTS_MAX])
{
    memset(given, 0, CONFIG_OPTS_MAX * sizeof given[0]);
    for (const struct option *o = gw_config_spec()->opts; o->name != NULL; o++) {
        if (strcmp(o->name, "listen") == 0) {
            given[o->val] = true;
            return;
        }
    }
    fail_msg("no --listen in the gateway's flags");
}

static void test_flags_win(void **state)
{
    (void)state;
    gw_config c;
    gw_config_defaults(&c);
    char err[GW_ERR_LEN];
    strcpy(c.listen, "127.0.0.1:9000");
    write_file("[gateway]\nlisten = 127.0.0.1:1\n");
    bool given[CONFIG_OPTS_MAX];
    given_listen(given);
    assert_int_equal(gw_config_load(path, &c, given, err, sizeof err), 0);
    unlink(path);
    assert_string_equal(c.listen, "127.0.0.1:9000");
}

static void test_check_and_listen(void **state)
{
    (void)state;
    gw_config c;
    gw_config_defaults(&c);
    char err[GW_ERR_LEN];
    assert_int_equal(gw_config_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "DSN"));
    strcpy(c.dsn, "dbname=x");
    assert_int_equal(gw_config_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "coordinator"));
    strcpy(c.coordinator, "tcp://127.0.0.1:7000");
    assert_int_equal(gw_config_check(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "--tls-cert"));
    strcpy(c.tls_cert, "c.pem");
    strcpy(c.tls_key, "k.pem");
    assert_int_equal(gw_config_check(&c, err, sizeof err), 0);
    char host[64];
    uint16_t port;
    assert_int_equal(gw_config_listen(&c, host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8443);
    c.plain_http = true;
    assert_int_equal(gw_config_check(&c, err, sizeof err), -1); /* plain excludes the TLS files */
    c.tls_cert[0] = c.tls_key[0] = '\0';
    assert_int_equal(gw_config_check(&c, err, sizeof err), 0);
    assert_int_equal(gw_config_listen(&c, host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1"); /* plain HTTP: loopback unless asked */
    assert_int_equal(port, 8080);
    const struct {
        const char *listen, *host;
        uint16_t port;
    } forms[] = {{"9000", "127.0.0.1", 9000},
                 {"0.0.0.0:443", "0.0.0.0", 443},
                 {"[::1]:8443", "::1", 8443},
                 {"localhost:80", "localhost", 80}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        strcpy(c.listen, forms[i].listen);
        assert_int_equal(gw_config_listen(&c, host, sizeof host, &port), 0);
        assert_string_equal(host, forms[i].host);
        assert_int_equal(port, forms[i].port);
    }
    const char *bad[] = {":80", "host:", "host:99999", "[::1]80", "h:x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strcpy(c.listen, bad[i]);
        assert_int_equal(gw_config_listen(&c, host, sizeof host, &port), ESC_EINVAL);
    }
    assert_int_equal(gw_config_check(&c, err, sizeof err), -1);
}

/* The example a newcomer copies loads and passes the checks. */
static void test_example_file(void **state)
{
    (void)state;
    gw_config c;
    gw_config_defaults(&c);
    char err[GW_ERR_LEN];
    if (gw_config_load(ESC_SOURCE_DIR "/examples/gateway/gateway.ini", &c, NULL, err, sizeof err) !=
        0) {
        fail_msg("%s", err);
    }
    assert_string_equal(c.coordinator, "tcp://127.0.0.1:7000");
    assert_string_equal(c.tls_cert, "/etc/escrow/gateway.crt");
    assert_int_equal(gw_config_check(&c, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_and_bounds), cmocka_unit_test(test_file),
        cmocka_unit_test(test_flags_win),      cmocka_unit_test(test_check_and_listen),
        cmocka_unit_test(test_example_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
