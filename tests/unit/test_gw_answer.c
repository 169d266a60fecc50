/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gw_answer.c - escrow-gateway's answer table: every ESC_E* code of
 * escrow_errors.h has a row of its own (a code added to the table without
 * an HTTP row fails here), the statuses a client library handles by
 * default for the answers a shop must handle, Retry-After exactly on the
 * "not now" rows, the fallback for a code the table does not know, and
 * client/gateway/openapi.json's list of codes matching the table's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "escrow_errors.h"
#include "gw_answer.h"

static void test_every_code_has_a_row(void **state)
{
    (void)state;
    for (int e = -1; e > ESC_E_LAST_; e--) {
        if (strcmp(esc_err_name(e), "UNKNOWN") == 0) {
            continue; /* a gap in the numbering */
        }
        if (!gw_answer_known(e)) {
            fail_msg("ESC_E%s (%d) has no row in client/gateway/gw_answer.c", esc_err_name(e), e);
        }
        const gw_answer *a = gw_answer_of(e);
        assert_int_equal(a->err, e);
        assert_true(a->http >= 400 && a->http <= 599);
        assert_non_null(a->code);
    }
}

static void test_the_statuses_a_shop_handles(void **state)
{
    (void)state;
    const struct {
        int err;
        unsigned http;
        const char *code;
        bool retryable;
    } want[] = {
        {ESC_ESOLD_OUT, 409, "sold_out", false},
        {ESC_ETRY_LATER, 503, "try_later", true},
        {ESC_ETIMEDOUT, 504, "timed_out", true},
        {ESC_EEXPIRED, 410, "expired", false},
        {ESC_ENOT_FOUND, 404, "not_found", false},
        {ESC_EAUTH, 401, "unauthorized", false},
        {GW_EFORBIDDEN, 403, "forbidden", false},
        {GW_ERATE, 429, "rate_limited", true},
        {ESC_EINVAL, 400, "invalid", false},
        {ESC_EIDEMPOTENCY_MISMATCH, 422, "idempotency_mismatch", false},
        {ESC_ENOT_HELD, 409, "not_held", false},
        {ESC_EPAUSED, 409, "paused", false},
        {ESC_ECART_ENDED, 409, "cart_ended", false},
        {ESC_EBUSY, 503, "busy", true},
        {ESC_EUNAVAILABLE, 503, "unavailable", true},
        {GW_ETOO_LARGE, 413, "payload_too_large", false},
        {GW_EMETHOD, 405, "method_not_allowed", false},
        {GW_ENO_ROUTE, 404, "no_route", false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const gw_answer *a = gw_answer_of(want[i].err);
        assert_int_equal(a->http, want[i].http);
        assert_string_equal(a->code, want[i].code);
        assert_int_equal(a->retryable, want[i].retryable);
    }
}

/* Retry-After on the 503s and the 429, never elsewhere; 504 has none (retry at once). */
static void test_retry_after(void **state)
{
    (void)state;
    size_t n;
    const gw_answer *t = gw_answer_table(&n);
    assert_true(n > 30);
    for (size_t i = 0; i < n; i++) {
        bool later = t[i].http == 503 || t[i].http == 429;
        assert_int_equal(t[i].retry_after_s > 0, later);
        if (later) {
            assert_true(t[i].retryable);
        }
    }
}

static void test_unknown_code(void **state)
{
    (void)state;
    const gw_answer *a = gw_answer_of(-999);
    assert_false(gw_answer_known(-999));
    assert_int_equal(a->http, 502);
    assert_string_equal(a->code, "unknown_answer");
    assert_true(a->retryable);
}

static bool in_table(const char *code)
{
    size_t n;
    const gw_answer *t = gw_answer_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].code, code) == 0) {
            return true;
        }
    }
    return strcmp(code, gw_answer_of(-999)->code) == 0; /* the fallback's */
}

/* The OpenAPI document lists exactly the codes the table can give: a row
 * added without its code there (or a code left there without a row) fails. */
static void test_openapi_lists_every_code(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *doc = json_load_file(ESC_SOURCE_DIR "/client/gateway/openapi.json", 0, &jerr);
    if (doc == NULL) {
        fail_msg("openapi.json: %s (line %d)", jerr.text, jerr.line);
    }
    json_t *codes = doc;
    const char *path[] = {"components", "schemas", "Error", "properties", "code", "enum"};
    for (size_t k = 0; k < sizeof path / sizeof path[0]; k++) {
        codes = json_object_get(codes, path[k]);
    }
    assert_true(json_is_array(codes));
    size_t i;
    json_t *v;
    json_array_foreach(codes, i, v)
    {
        assert_true(json_is_string(v));
        if (!in_table(json_string_value(v))) {
            fail_msg("openapi.json lists \"%s\", which gw_answer.c never gives",
                     json_string_value(v));
        }
    }
    size_t n;
    const gw_answer *t = gw_answer_table(&n);
    for (size_t r = 0; r < n; r++) {
        bool listed = false;
        json_array_foreach(codes, i, v)
        {
            listed = listed || strcmp(json_string_value(v), t[r].code) == 0;
        }
        if (!listed) {
            fail_msg("\"%s\" (gw_answer.c) is not in openapi.json's Error.code enum", t[r].code);
        }
    }
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_a_row),
        cmocka_unit_test(test_the_statuses_a_shop_handles),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_unknown_code),
        cmocka_unit_test(test_openapi_lists_every_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
