/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_metrics.c - the metrics registry's text rendering (Prometheus text
 * exposition format 0.0.4), its bounds and invalid input, the address
 * parser, concurrent scrapes while the "loop" writes, and the HTTP server
 * end to end on a loopback port.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "escrow_errors.h"
#include "metrics.h"
#include "metrics_http.h"

static char *render(metrics_registry *r)
{
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(metrics_render(r, &out, &len), 0);
    assert_non_null(out);
    assert_int_equal(strlen(out), len);
    return out;
}

static void expect_render(metrics_registry *r, const char *want)
{
    char *got = render(r);
    assert_string_equal(got, want);
    free(got);
}

static void test_empty(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    expect_render(r, "");
    metrics_registry_free(r);
    metrics_registry_free(NULL);
}

static void test_counter_labels_escaping(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    metrics_family *plain =
        metrics_family_add(r, METRICS_COUNTER, "escrow_things_total", "Things.", NULL, NULL, 0);
    static const char *const labels[] = {"op", "status", NULL};
    metrics_family *req = metrics_family_add(r, METRICS_COUNTER, "escrow_requests_total",
                                             "Requests\nby \\op.", labels, NULL, 0);
    assert_non_null(plain);
    assert_non_null(req);
    metrics_series *t = metrics_get0(plain);
    metrics_inc(t);
    metrics_add(t, 41);
    metrics_inc(metrics_get2(req, "reserve", "OK"));
    metrics_inc(metrics_get2(req, "reserve", "SOLD_OUT"));
    metrics_inc(metrics_get2(req, "reserve", "OK")); /* the same series */
    metrics_inc(metrics_get2(req, "a\"b\\c\nd", NULL));
    assert_true(metrics_get2(req, "reserve", "OK") == metrics_get2(req, "reserve", "OK"));
    assert_true(metrics_value(t) == 42);
    expect_render(r, "# HELP escrow_things_total Things.\n"
                     "# TYPE escrow_things_total counter\n"
                     "escrow_things_total 42\n"
                     "# HELP escrow_requests_total Requests\\nby \\\\op.\n"
                     "# TYPE escrow_requests_total counter\n"
                     "escrow_requests_total{op=\"reserve\",status=\"OK\"} 2\n"
                     "escrow_requests_total{op=\"reserve\",status=\"SOLD_OUT\"} 1\n"
                     "escrow_requests_total{op=\"a\\\"b\\\\c\\nd\",status=\"\"} 1\n");
    metrics_registry_free(r);
}

static void test_gauge_values(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    static const char *const labels[] = {"k", NULL};
    metrics_family *g = metrics_family_add(r, METRICS_GAUGE, "g", "", labels, NULL, 0);
    metrics_set(metrics_get1(g, "int"), 3);
    metrics_set(metrics_get1(g, "neg"), -2);
    metrics_set(metrics_get1(g, "frac"), 0.1);
    metrics_set(metrics_get1(g, "half"), 1.5);
    metrics_set(metrics_get1(g, "nan"), NAN);
    metrics_set(metrics_get1(g, "inf"), INFINITY);
    metrics_set(metrics_get1(g, "ninf"), -INFINITY);
    metrics_series *a = metrics_get1(g, "add");
    metrics_gauge_add(a, 2.5);
    metrics_gauge_add(a, -1);
    metrics_get1(g, "zero");
    metrics_set(metrics_get1(g, "ts"), 1764556800.25);
    expect_render(r, "# HELP g \n"
                     "# TYPE g gauge\n"
                     "g{k=\"int\"} 3\n"
                     "g{k=\"neg\"} -2\n"
                     "g{k=\"frac\"} 0.1\n"
                     "g{k=\"half\"} 1.5\n"
                     "g{k=\"nan\"} NaN\n"
                     "g{k=\"inf\"} +Inf\n"
                     "g{k=\"ninf\"} -Inf\n"
                     "g{k=\"add\"} 1.5\n"
                     "g{k=\"zero\"} 0\n"
                     "g{k=\"ts\"} 1764556800.25\n");
    metrics_registry_free(r);
}

static void test_histogram(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    static const double bounds[] = {0.001, 0.01, 1};
    static const char *const labels[] = {"node", NULL};
    metrics_family *h =
        metrics_family_add(r, METRICS_HISTOGRAM, "lat_seconds", "Latency.", labels, bounds, 3);
    assert_non_null(h);
    metrics_series *s = metrics_get1(h, "n1");
    metrics_observe(s, 0.0005); /* bucket 0.001 */
    metrics_observe(s, 0.001);  /* le is inclusive */
    metrics_observe(s, 0.5);
    metrics_observe(s, 7); /* +Inf only */
    assert_true(metrics_value(s) == 4);
    metrics_family *h0 =
        metrics_family_add(r, METRICS_HISTOGRAM, "rows", "Rows.", NULL, (double[]){2}, 1);
    metrics_observe(metrics_get0(h0), 1);
    expect_render(r, "# HELP lat_seconds Latency.\n"
                     "# TYPE lat_seconds histogram\n"
                     "lat_seconds_bucket{node=\"n1\",le=\"0.001\"} 2\n"
                     "lat_seconds_bucket{node=\"n1\",le=\"0.01\"} 2\n"
                     "lat_seconds_bucket{node=\"n1\",le=\"1\"} 3\n"
                     "lat_seconds_bucket{node=\"n1\",le=\"+Inf\"} 4\n"
                     "lat_seconds_sum{node=\"n1\"} 7.5015\n"
                     "lat_seconds_count{node=\"n1\"} 4\n"
                     "# HELP rows Rows.\n"
                     "# TYPE rows histogram\n"
                     "rows_bucket{le=\"2\"} 1\n"
                     "rows_bucket{le=\"+Inf\"} 1\n"
                     "rows_sum 1\n"
                     "rows_count 1\n");
    metrics_registry_free(r);
}

static void test_invalid(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    static const char *const le[] = {"le", NULL};
    static const char *const bad_label[] = {"has-dash", NULL};
    static const char *const colon_label[] = {"a:b", NULL};
    static const char *const five[] = {"a", "b", "c", "d", "e", NULL};
    assert_null(metrics_family_add(r, METRICS_COUNTER, "", "", NULL, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, "1abc", "", NULL, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, "a b", "", NULL, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, NULL, "", NULL, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, "x", "", le, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, "x", "", bad_label, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, "x", "", colon_label, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_COUNTER, "x", "", five, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_HISTOGRAM, "h", "", NULL, (double[]){2, 1}, 2));
    assert_null(metrics_family_add(r, METRICS_HISTOGRAM, "h", "", NULL, (double[]){1, 1}, 2));
    assert_null(metrics_family_add(r, METRICS_HISTOGRAM, "h", "", NULL, (double[]){INFINITY}, 1));
    assert_null(
        metrics_family_add(r, METRICS_HISTOGRAM, "h", "", NULL, NULL, METRICS_BUCKETS_MAX + 1));
    assert_null(metrics_family_add(NULL, METRICS_COUNTER, "x", "", NULL, NULL, 0));
    assert_non_null(metrics_family_add(r, METRICS_COUNTER, "ns:x_total", "", NULL, NULL, 0));
    assert_null(metrics_family_add(r, METRICS_GAUGE, "ns:x_total", "", NULL, NULL, 0)); /* dup */
    /* NULL handles are no-ops */
    assert_null(metrics_get0(NULL));
    metrics_inc(NULL);
    metrics_set(NULL, 1);
    metrics_observe(NULL, 1);
    metrics_gauge_add(NULL, 1);
    assert_true(metrics_value(NULL) == 0);
    expect_render(r, "# HELP ns:x_total \n# TYPE ns:x_total counter\n");
    metrics_registry_free(r);
}

static void test_bounds_and_clear(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    static const char *const labels[] = {"i", NULL};
    metrics_family *f = metrics_family_add(r, METRICS_GAUGE, "g", "", labels, NULL, 0);
    char v[16];
    for (int i = 0; i < METRICS_SERIES_MAX; i++) {
        snprintf(v, sizeof v, "%d", i);
        assert_non_null(metrics_get1(f, v));
    }
    assert_null(metrics_get1(f, "one-too-many"));
    assert_non_null(metrics_get1(f, "7")); /* existing ones are still found */
    /* a long label value is cut, and the cut value finds the same series */
    metrics_family_clear(f);
    char long_v[METRICS_LABEL_VALUE_LEN_MAX + 50];
    memset(long_v, 'x', sizeof long_v - 1);
    long_v[sizeof long_v - 1] = '\0';
    metrics_set(metrics_get1(f, long_v), 5);
    char *out = render(r);
    assert_int_equal(strlen(out), strlen("# HELP g \n# TYPE g gauge\ng{i=\"\"} 5\n") +
                                      METRICS_LABEL_VALUE_LEN_MAX);
    free(out);
    metrics_family_clear(f);
    metrics_set(metrics_get1(f, "t1/tee"), -3);
    expect_render(r, "# HELP g \n# TYPE g gauge\ng{i=\"t1/tee\"} -3\n");
    for (int i = 0; i < METRICS_FAMILIES_MAX; i++) {
        snprintf(v, sizeof v, "f%d", i);
        metrics_family *x = metrics_family_add(r, METRICS_COUNTER, v, "", NULL, NULL, 0);
        if (i < METRICS_FAMILIES_MAX - 1) {
            assert_non_null(x);
        } else {
            assert_null(x); /* "g" took one */
        }
    }
    metrics_registry_free(r);
}

static void test_format_double(void **state)
{
    (void)state;
    char b[40];
    assert_string_equal(metrics_format_double(0, b, sizeof b), "0");
    assert_string_equal(metrics_format_double(-0.0, b, sizeof b), "-0");
    assert_string_equal(metrics_format_double(12345678901234.0, b, sizeof b), "12345678901234");
    assert_string_equal(metrics_format_double(0.0005, b, sizeof b), "0.0005");
    assert_string_equal(metrics_format_double(1e300, b, sizeof b), "1e+300");
    assert_true(strtod(metrics_format_double(1.0 / 3, b, sizeof b), NULL) == 1.0 / 3);
}

static void test_parse_addr(void **state)
{
    (void)state;
    char host[64];
    uint16_t port = 1;
    assert_int_equal(metrics_http_parse("9101", host, sizeof host, &port), 0);
    assert_string_equal(host, "");
    assert_int_equal(port, 9101);
    assert_int_equal(metrics_http_parse("127.0.0.1:9102", host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9102);
    assert_int_equal(metrics_http_parse("http://localhost:0/metrics", host, sizeof host, &port), 0);
    assert_string_equal(host, "localhost");
    assert_int_equal(port, 0);
    assert_int_equal(metrics_http_parse("[::1]:80", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 80);
    const char *bad[] = {"",        ":9101",   "host:",   "host:x", "host:65536",
                         "-1",      "[::1]",   "[::1]80", "h/x:1",  "host:1/other",
                         "9101abc", "http://", "a:b:c:d", "host: 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(metrics_http_parse(bad[i], host, sizeof host, &port), ESC_EINVAL);
    }
    assert_int_equal(metrics_http_parse(NULL, host, sizeof host, &port), ESC_EINVAL);
    assert_int_equal(metrics_http_parse("averylonghostname:1", host, 8, &port), ESC_EINVAL);
}

/* ---- concurrency: scrapes while the "loop" writes ----------------------------- */

typedef struct scrape_ctx {
    metrics_registry *r;
    atomic_bool stop;
    int scrapes;
} scrape_ctx;

static void *scraper(void *arg)
{
    scrape_ctx *c = arg;
    while (!atomic_load(&c->stop)) {
        char *out;
        size_t len;
        if (metrics_render(c->r, &out, &len) == 0) {
            free(out);
            c->scrapes++;
        }
    }
    return NULL;
}

static void test_concurrent_scrapes(void **state)
{
    (void)state;
    scrape_ctx c = {0};
    assert_int_equal(metrics_registry_new(&c.r), 0);
    static const char *const labels[] = {"k", NULL};
    metrics_family *f = metrics_family_add(c.r, METRICS_COUNTER, "n_total", "", labels, NULL, 0);
    metrics_family *d = metrics_family_add(c.r, METRICS_GAUGE, "d", "", labels, NULL, 0);
    metrics_family *h =
        metrics_family_add(c.r, METRICS_HISTOGRAM, "h", "", NULL, (double[]){1, 10}, 2);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, scraper, &c), 0);
    metrics_series *s = metrics_get1(f, "a");
    for (int i = 0; i < 200000; i++) {
        metrics_inc(s);
        metrics_observe(metrics_get0(h), (double)(i % 20));
        if (i % 1000 == 0) {
            char v[16];
            snprintf(v, sizeof v, "%d", i / 1000 % 50);
            metrics_inc(metrics_get1(f, v)); /* creates series during scrapes */
            metrics_family_clear(d);
            metrics_set(metrics_get1(d, v), i);
        }
    }
    atomic_store(&c.stop, true);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(metrics_value(s) == 200000);
    assert_true(metrics_value(metrics_get0(h)) == 200000);
    assert_true(c.scrapes > 0);
    char *out = render(c.r);
    assert_non_null(strstr(out, "n_total{k=\"a\"} 200000\n"));
    assert_non_null(strstr(out, "h_count 200000\n"));
    assert_non_null(strstr(out, "h_bucket{le=\"1\"} 20000\n"));
    free(out);
    metrics_registry_free(c.r);
}

/* ---- HTTP end to end ------------------------------------------------------------ */

/* One HTTP/1.0 request to 127.0.0.1:port; returns the whole answer (malloc'd). */
static char *http(uint16_t port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    size_t n = strlen(request);
    assert_int_equal(write(fd, request, n), (ssize_t)n);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    ssize_t k;
    while ((k = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)k;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

static void test_http(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    metrics_inc(metrics_get0(
        metrics_family_add(r, METRICS_COUNTER, "escrow_x_total", "X.", NULL, NULL, 0)));
    metrics_http *h = NULL;
    char why[256];
    assert_int_equal(metrics_http_start(r, "127.0.0.1:0", &h, why, sizeof why), 0);
    uint16_t port = metrics_http_port(h);
    assert_true(port != 0);
    char *got = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(got, " 200 OK\r\n"));
    assert_non_null(strstr(got, "text/plain; version=0.0.4"));
    assert_non_null(strstr(got, "\r\n\r\n# HELP escrow_x_total X.\n# TYPE escrow_x_total "
                                "counter\nescrow_x_total 1\n"));
    free(got);
    got = http(port, "GET /nope HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(got, " 404 "));
    free(got);
    got = http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
    assert_non_null(strstr(got, " 405 "));
    free(got);
    /* the port is taken now: a second server fails with a reason */
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)port);
    metrics_http *h2 = NULL;
    assert_int_equal(metrics_http_start(r, addr, &h2, why, sizeof why), ESC_EIO);
    assert_null(h2);
    assert_true(why[0] != '\0');
    assert_int_equal(metrics_http_start(r, "not an address", &h2, why, sizeof why), ESC_EINVAL);
    metrics_http_stop(h);
    metrics_http_stop(NULL);
    metrics_registry_free(r);
}

/* Whether port answers on this machine's first IPv4 address that is not
 * loopback (false when there is none: nothing to learn). */
static bool reachable_off_loopback(uint16_t port)
{
    struct ifaddrs *ifs = NULL;
    assert_int_equal(getifaddrs(&ifs), 0);
    bool reached = false;
    for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET) {
            continue;
        }
        struct sockaddr_in a = *(struct sockaddr_in *)i->ifa_addr;
        if ((ntohl(a.sin_addr.s_addr) >> 24) == 127) {
            continue;
        }
        a.sin_port = htons(port);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        reached = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        print_message("off loopback (%s): %s\n", inet_ntoa(a.sin_addr),
                      reached ? "answered" : "refused");
        break;
    }
    freeifaddrs(ifs);
    return reached;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A bare port listens on 127.0.0.1; a scraper that sends half a request
 * is closed after a second of silence (libmicrohttpd counts whole seconds:
 * 1 to 2 s; 3 s is the bound on a loaded machine, 10 s was the old
 * timeout), and the next scrape is answered at once. */
static void test_http_idle_and_loopback(void **state)
{
    (void)state;
    metrics_registry *r;
    assert_int_equal(metrics_registry_new(&r), 0);
    metrics_http *h = NULL;
    char why[256];
    assert_int_equal(metrics_http_start(r, "0", &h, why, sizeof why), 0);
    uint16_t port = metrics_http_port(h);
    assert_false(reachable_off_loopback(port));
    double t0 = mono_s();
    char *got = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
    double took = mono_s() - t0;
    print_message("half a request closed after %.2f s\n", took);
    assert_true(took <= 3.0);
    assert_null(strstr(got, " 200 OK"));
    free(got);
    got = http(port, "GET /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(got, " 200 OK\r\n"));
    free(got);
    metrics_http_stop(h);
    char host[64];
    assert_int_equal(metrics_http_parse("9101", host, sizeof host, &port), 0);
    assert_string_equal(host, "");
    metrics_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_counter_labels_escaping),
        cmocka_unit_test(test_gauge_values),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_bounds_and_clear),
        cmocka_unit_test(test_format_double),
        cmocka_unit_test(test_parse_addr),
        cmocka_unit_test(test_concurrent_scrapes),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_http_idle_and_loopback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
