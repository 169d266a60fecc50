/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gw_route.c - escrow-gateway's endpoints: each path and method, the
 * wrong method (405), unknown paths (404), hold ids that cannot name a
 * hold (400 on the id), consumer names; and the Authorization header's
 * Bearer token (gw_bearer.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "escrow_errors.h"
#include "gw_answer.h"
#include "gw_bearer.h"
#include "gw_route.h"

static gw_route match(const char *method, const char *path)
{
    gw_route r;
    gw_route_match(method, path, &r);
    return r;
}

static void test_endpoints(void **state)
{
    (void)state;
    const uint64_t id = (1ULL << ESC_HOLD_SEQ_BITS) | 7; /* segment 1, hold 7 */
    const struct {
        const char *method, *path;
        gw_route_kind kind;
    } ok[] = {
        {"POST", "/v1/holds", GW_ROUTE_RESERVE},
        {"GET", "/v1/holds/1099511627783", GW_ROUTE_GET},
        {"HEAD", "/v1/holds/1099511627783", GW_ROUTE_GET},
        {"POST", "/v1/holds/1099511627783/confirm", GW_ROUTE_CONFIRM},
        {"POST", "/v1/holds/1099511627783/release", GW_ROUTE_RELEASE},
        {"POST", "/v1/holds/1099511627783/extend", GW_ROUTE_EXTEND},
        {"POST", "/v1/carts", GW_ROUTE_CART},
        {"GET", "/v1/events", GW_ROUTE_EVENTS},
        {"POST", "/v1/consumers/orders/cursor", GW_ROUTE_CURSOR},
        {"GET", "/v1/openapi.json", GW_ROUTE_OPENAPI},
        {"GET", "/healthz", GW_ROUTE_HEALTHZ},
        {"GET", "/readyz", GW_ROUTE_READYZ},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        gw_route r = match(ok[i].method, ok[i].path);
        assert_int_equal(r.kind, ok[i].kind);
        assert_int_equal(r.err, 0);
        if (strstr(ok[i].path, "/v1/holds/") != NULL) {
            assert_int_equal(r.hold_id, id);
        }
    }
    assert_string_equal(match("POST", "/v1/consumers/orders/cursor").consumer, "orders");
    assert_string_equal(match("GET", "/v1/holds").allow, "POST");
    assert_string_equal(match("POST", "/v1/events").allow, "GET, HEAD");
    assert_string_equal(gw_route_name(GW_ROUTE_CONFIRM), "POST /v1/holds/{id}/confirm");
    assert_string_equal(gw_route_name(GW_ROUTE_NONE), "other");
}

static void test_refusals(void **state)
{
    (void)state;
    const struct {
        const char *method, *path;
        int err;
    } bad[] = {
        {"GET", "/v1/holds", GW_EMETHOD},
        {"DELETE", "/v1/holds/1099511627783", GW_EMETHOD},
        {"GET", "/v1/holds/1099511627783/confirm", GW_EMETHOD},
        {"POST", "/v1/events", GW_EMETHOD},
        {"GET", "/v1/consumers/orders/cursor", GW_EMETHOD},
        {"GET", "/", GW_ENO_ROUTE},
        {"GET", "/v2/holds", GW_ENO_ROUTE},
        {"POST", "/v1/holds/1099511627783/sell", GW_ENO_ROUTE},
        {"POST", "/v1/holds/", ESC_EINVAL},
        {"GET", "/v1/holds/abc", ESC_EINVAL},
        {"GET", "/v1/holds/007", ESC_EINVAL},                  /* leading zero */
        {"GET", "/v1/holds/5", ESC_EINVAL},                    /* segment 0 */
        {"GET", "/v1/holds/99999999999999999999", ESC_EINVAL}, /* over 64 bits */
        {"GET", "/v1/holds/-1", ESC_EINVAL},
        {"POST", "/v1/consumers//cursor", ESC_EINVAL},
        {"POST", "/v1/consumers/a b/cursor", ESC_EINVAL},
        {"POST", "/v1/consumers/orders", GW_ENO_ROUTE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gw_route r = match(bad[i].method, bad[i].path);
        assert_int_equal(r.kind, GW_ROUTE_NONE);
        int want = bad[i].err;
        if (r.err != want) {
            fail_msg("%s %s: err %d, want %d", bad[i].method, bad[i].path, r.err, want);
        }
        if (want == GW_EMETHOD) {
            assert_non_null(r.allow);
        }
    }
    char consumer[80];
    memset(consumer, 'c', 65);
    strcpy(consumer + 65, "/cursor");
    char path[100];
    snprintf(path, sizeof path, "/v1/consumers/%s", consumer);
    assert_int_equal(match("POST", path).err, ESC_EINVAL); /* a 65-byte name */
}

static void test_hold_id(void **state)
{
    (void)state;
    uint64_t id = 0;
    assert_int_equal(gw_route_hold_id("1099511627776", &id), 0);
    assert_int_equal(id, 1ULL << ESC_HOLD_SEQ_BITS);
    assert_int_equal(gw_route_hold_id("", &id), ESC_EINVAL);
    assert_int_equal(gw_route_hold_id("1099511627775", &id), ESC_EINVAL); /* segment 0 */
    assert_int_equal(gw_route_hold_id("18446744073709551615", &id),
                     ESC_EINVAL); /* too big a segment */
    assert_int_equal(gw_route_hold_id("18446744073709551616", &id), ESC_EINVAL); /* overflow */
}

static void test_bearer(void **state)
{
    (void)state;
    const char *tok;
    size_t len;
    char why[128];
    assert_int_equal(gw_bearer_token("Bearer esk_x_y", &tok, &len, why, sizeof why), 0);
    assert_int_equal(len, 7);
    assert_memory_equal(tok, "esk_x_y", 7);
    assert_int_equal(gw_bearer_token("bearer   esk_x_y  ", &tok, &len, why, sizeof why), 0);
    assert_int_equal(len, 7);
    assert_int_equal(gw_bearer_token(NULL, &tok, &len, why, sizeof why), ESC_EAUTH);
    assert_non_null(strstr(why, "Authorization"));
    assert_int_equal(gw_bearer_token("Basic dXNlcjpwYXNz", &tok, &len, why, sizeof why), ESC_EAUTH);
    assert_int_equal(gw_bearer_token("Bearer ", &tok, &len, why, sizeof why), ESC_EAUTH);
    char big[400] = "Bearer ";
    memset(big + 7, 'k', 300);
    big[307] = '\0';
    assert_int_equal(gw_bearer_token(big, &tok, &len, why, sizeof why), ESC_EAUTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_hold_id),
        cmocka_unit_test(test_bearer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
