/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gw_sse.c - the event stream's frames: id, event name and one data
 * line (a newline in a field cannot split it), a frame that does not fit,
 * and the Last-Event-ID a client sends back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "escrow_errors.h"
#include "gw_sse.h"

static void test_frame(void **state)
{
    (void)state;
    feed_event e;
    memset(&e, 0, sizeof e);
    e.event_id = 77;
    strcpy(e.item, "tee");
    strcpy(e.kind, "held");
    e.qty = 1;
    e.hold_id = 1099511627777;
    e.segment_id = 1;
    strcpy(e.buyer, "b\nx"); /* not a valid id, but the frame must survive it */
    strcpy(e.at, "2026-12-01T00:00:00.000Z");
    char buf[GW_SSE_FRAME_MAX];
    size_t n = gw_sse_frame(&e, buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal(strlen(buf), n);
    assert_memory_equal(buf, "id: 77\nevent: held\ndata: {", 26);
    assert_string_equal(buf + n - 3, "}\n\n");
    /* exactly three lines and the blank one */
    int newlines = 0;
    for (size_t i = 0; i < n; i++) {
        newlines += buf[i] == '\n';
    }
    assert_int_equal(newlines, 4);
    assert_non_null(strstr(buf, "\"hold_id\":\"1099511627777\""));
    assert_int_equal(gw_sse_frame(&e, buf, 40), 0);
    /* the largest event (every string at its bound) fits a frame */
    memset(e.item, 'i', ESC_ITEM_LEN_MAX);
    memset(e.buyer, 'b', ESC_BUYER_LEN_MAX);
    memset(e.kind, 'k', FEED_KIND_LEN_MAX);
    memset(e.actor, 'a', FEED_ACTOR_LEN_MAX);
    e.event_id = INT64_MAX;
    assert_true(gw_sse_frame(&e, buf, sizeof buf) > 0);
}

static void test_last_event_id(void **state)
{
    (void)state;
    int64_t id = 0;
    assert_int_equal(gw_sse_last_event_id("42", &id), 0);
    assert_int_equal(id, 42);
    assert_int_equal(gw_sse_last_event_id(" 43\t", &id), 0);
    assert_int_equal(id, 43);
    assert_int_equal(gw_sse_last_event_id("9223372036854775807", &id), 0);
    const char *bad[] = {"", "0", "-1", "x", "1x", "042", "9223372036854775808", " "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gw_sse_last_event_id(bad[i], &id), ESC_EINVAL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame),
        cmocka_unit_test(test_last_event_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
