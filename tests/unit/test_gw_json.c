/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gw_json.c - escrow-gateway's request bodies and answers: every
 * field at and past its bounds, wrong types, unknown and duplicate
 * fields, documents that are not objects or not JSON, a cart's lines
 * (named by index when bad); and the answers' shape (ids as strings,
 * the optional error fields, events with and without a hold).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "escrow_errors.h"
#include "gw_json.h"

static int reserve(const char *body, gw_reserve_body *b, gw_bad *bad)
{
    memset(bad, 0, sizeof *bad);
    return gw_json_reserve(body, strlen(body), b, bad);
}

static void test_reserve_body(void **state)
{
    (void)state;
    gw_reserve_body b;
    gw_bad bad;
    assert_int_equal(
        reserve("{\"item\":\"tee\",\"buyer\":\"b-1\",\"qty\":2,\"ttl_ms\":60000}", &b, &bad), 0);
    assert_string_equal(b.item, "tee");
    assert_string_equal(b.buyer, "b-1");
    assert_int_equal(b.qty, 2);
    assert_int_equal(b.ttl_ms, 60000);
    assert_int_equal(reserve(" {\"item\":\"t\",\"buyer\":\"b\",\"qty\":10000} ", &b, &bad), 0);
    assert_int_equal(b.ttl_ms, 0);
    const struct {
        const char *body, *field;
    } refused[] = {
        {"", "body"},
        {"[1]", "body"},
        {"{\"item\":", "body"},
        {"{\"buyer\":\"b\",\"qty\":1}", "item"},
        {"{\"item\":\"t\",\"qty\":1}", "buyer"},
        {"{\"item\":\"t\",\"buyer\":\"b\"}", "qty"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":0}", "qty"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":10001}", "qty"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":1.5}", "qty"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":\"1\"}", "qty"},
        {"{\"item\":\"a b\",\"buyer\":\"b\",\"qty\":1}", "item"},
        {"{\"item\":\"\",\"buyer\":\"b\",\"qty\":1}", "item"},
        {"{\"item\":7,\"buyer\":\"b\",\"qty\":1}", "item"},
        {"{\"item\":\"t\",\"buyer\":\"b\\u0000x\",\"qty\":1}", "body"}, /* NUL: jansson refuses */
        {"{\"item\":\"t\",\"buyer\":\"\\u00e9\",\"qty\":1}", "buyer"},  /* not ASCII */
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":1,\"ttl_ms\":49}", "ttl_ms"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":1,\"ttl_ms\":86400001}", "ttl_ms"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":1,\"ttl_ms\":-1}", "ttl_ms"},
        {"{\"item\":\"t\",\"buyer\":\"b\",\"qty\":1,\"qtty\":1}", "qtty"},
        {"{\"item\":\"t\",\"item\":\"u\",\"buyer\":\"b\",\"qty\":1}", "body"}, /* duplicate */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (reserve(refused[i].body, &b, &bad) != ESC_EINVAL ||
            strcmp(bad.field, refused[i].field) != 0) {
            fail_msg("%s: field '%s', want '%s'", refused[i].body, bad.field, refused[i].field);
        }
        assert_true(strlen(bad.why) > 0);
    }
    char big[400];
    snprintf(big, sizeof big, "{\"item\":\"%0129d\",\"buyer\":\"b\",\"qty\":1}", 0);
    assert_int_equal(reserve(big, &b, &bad), ESC_EINVAL);
    assert_string_equal(bad.field, "item");
    snprintf(big, sizeof big, "{\"item\":\"%0128d\",\"buyer\":\"b\",\"qty\":1}", 0);
    assert_int_equal(reserve(big, &b, &bad), 0); /* 128 bytes: at the bound */
}

static void test_cart_body(void **state)
{
    (void)state;
    static gw_cart_body b;
    gw_bad bad;
    const char *ok =
        "{\"buyer\":\"b\",\"lines\":[{\"item\":\"tee\",\"qty\":1},{\"item\":\"hat\",\"qty\":2}],"
        "\"ttl_ms\":1000}";
    assert_int_equal(gw_json_cart(ok, strlen(ok), &b, &bad), 0);
    assert_int_equal(b.nlines, 2);
    assert_string_equal(b.lines[1].item, "hat");
    assert_int_equal(b.lines[1].qty, 2);
    assert_int_equal(b.ttl_ms, 1000);
    const struct {
        const char *body, *field;
    } refused[] = {
        {"{\"buyer\":\"b\"}", "lines"},
        {"{\"buyer\":\"b\",\"lines\":[]}", "lines"},
        {"{\"buyer\":\"b\",\"lines\":{}}", "lines"},
        {"{\"lines\":[{\"item\":\"t\",\"qty\":1}]}", "buyer"},
        {"{\"buyer\":\"b\",\"lines\":[{\"item\":\"t\",\"qty\":1},7]}", "lines[1]"},
        {"{\"buyer\":\"b\",\"lines\":[{\"item\":\"t\",\"qty\":1},{\"item\":\"u\"}]}",
         "lines[1].qty"},
        {"{\"buyer\":\"b\",\"lines\":[{\"item\":\"t\",\"qty\":1,\"x\":1}]}", "lines[0].x"},
        {"{\"buyer\":\"b\",\"lines\":[{\"item\":\"t\",\"qty\":1}],\"cart\":1}", "cart"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        memset(&bad, 0, sizeof bad);
        if (gw_json_cart(refused[i].body, strlen(refused[i].body), &b, &bad) != ESC_EINVAL ||
            strcmp(bad.field, refused[i].field) != 0) {
            fail_msg("%s: field '%s', want '%s'", refused[i].body, bad.field, refused[i].field);
        }
    }
    /* 64 lines at most */
    char *many = malloc(65 * 32 + 64);
    size_t n = (size_t)sprintf(many, "{\"buyer\":\"b\",\"lines\":[");
    for (int i = 0; i < 65; i++) {
        n += (size_t)sprintf(many + n, "%s{\"item\":\"i%d\",\"qty\":1}", i ? "," : "", i);
    }
    strcpy(many + n, "]}");
    assert_int_equal(gw_json_cart(many, strlen(many), &b, &bad), ESC_EINVAL);
    assert_string_equal(bad.field, "lines");
    free(many);
}

static void test_optional_bodies(void **state)
{
    (void)state;
    gw_bad bad;
    int64_t qty = -1;
    assert_int_equal(gw_json_confirm("", 0, &qty, &bad), 0);
    assert_int_equal(qty, 0);
    assert_int_equal(gw_json_confirm("{\"qty\":3}", 9, &qty, &bad), 0);
    assert_int_equal(qty, 3);
    assert_int_equal(gw_json_confirm("{\"qty\":-1}", 10, &qty, &bad), ESC_EINVAL);
    uint32_t ttl = 9;
    assert_int_equal(gw_json_extend(" {} ", 4, &ttl, &bad), 0);
    assert_int_equal(ttl, 0);
    assert_int_equal(gw_json_extend("{\"ttl_ms\":50}", 13, &ttl, &bad), 0);
    assert_int_equal(ttl, 50);
    assert_int_equal(gw_json_release("", 0, &bad), 0);
    assert_int_equal(gw_json_release("{}", 2, &bad), 0);
    assert_int_equal(gw_json_release("{\"qty\":1}", 9, &bad), ESC_EINVAL);
    assert_string_equal(bad.field, "qty");
    int64_t ev = 0;
    assert_int_equal(gw_json_cursor("{\"event_id\":\"42\"}", 17, &ev, &bad), 0);
    assert_int_equal(ev, 42);
    assert_int_equal(gw_json_cursor("{\"event_id\":43}", 15, &ev, &bad), 0);
    assert_int_equal(ev, 43);
    const char *bad_cursors[] = {"{}",
                                 "{\"event_id\":\"0\"}",
                                 "{\"event_id\":0}",
                                 "{\"event_id\":\"x\"}",
                                 "{\"event_id\":\"99999999999999999999\"}",
                                 "{\"event_id\":true}",
                                 ""};
    for (size_t i = 0; i < sizeof bad_cursors / sizeof bad_cursors[0]; i++) {
        assert_int_equal(gw_json_cursor(bad_cursors[i], strlen(bad_cursors[i]), &ev, &bad),
                         ESC_EINVAL);
    }
}

static json_t *parse(char *s)
{
    assert_non_null(s);
    json_t *doc = json_loads(s, 0, NULL);
    free(s);
    assert_non_null(doc);
    return doc;
}

static void test_answers(void **state)
{
    (void)state;
    esc_hold h;
    memset(&h, 0, sizeof h);
    h.hold_id = 18446744073709551615ULL; /* past 2^53: a string keeps every digit */
    strcpy(h.item_id, "tee");
    strcpy(h.buyer_id, "b");
    h.qty = 2;
    h.qty_sold = 1;
    h.state = ESC_HOLD_CONVERTED;
    h.expires_at_ms = 1796158858186;
    json_t *doc = parse(gw_json_hold(&h));
    assert_string_equal(json_string_value(json_object_get(doc, "id")), "18446744073709551615");
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "converted");
    assert_int_equal(json_integer_value(json_object_get(doc, "qty_sold")), 1);
    assert_int_equal(json_object_size(doc), 8);
    json_decref(doc);
    doc = parse(gw_json_holds(&h, 1));
    assert_int_equal(json_array_size(json_object_get(doc, "holds")), 1);
    json_decref(doc);

    const gw_answer *a = gw_answer_of(ESC_ESOLD_OUT);
    doc = parse(gw_json_error(a, "sold out", NULL, -1, NULL));
    assert_string_equal(json_string_value(json_object_get(doc, "code")), "sold_out");
    assert_true(json_is_false(json_object_get(doc, "retryable")));
    assert_int_equal(json_object_size(doc), 3);
    json_decref(doc);
    doc = parse(gw_json_error(gw_answer_of(ESC_EINVAL), "bad", "lines[1].qty", 1, &h));
    assert_string_equal(json_string_value(json_object_get(doc, "field")), "lines[1].qty");
    assert_int_equal(json_integer_value(json_object_get(doc, "line")), 1);
    assert_true(json_is_object(json_object_get(doc, "hold")));
    json_decref(doc);

    feed_event e;
    memset(&e, 0, sizeof e);
    e.event_id = 9;
    strcpy(e.item, "tee");
    strcpy(e.kind, "collapsed");
    e.segment_id = 3;
    strcpy(e.actor, "coordinator");
    strcpy(e.at, "2026-12-01T00:00:00.000Z");
    doc = parse(gw_json_event(&e));
    assert_true(json_is_null(json_object_get(doc, "hold_id")));
    assert_string_equal(json_string_value(json_object_get(doc, "segment_id")), "3");
    assert_string_equal(json_string_value(json_object_get(doc, "event_id")), "9");
    json_decref(doc);
    doc = parse(gw_json_cursor_answer("orders", 12, true));
    assert_string_equal(json_string_value(json_object_get(doc, "event_id")), "12");
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_body),
        cmocka_unit_test(test_cart_body),
        cmocka_unit_test(test_optional_bodies),
        cmocka_unit_test(test_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
