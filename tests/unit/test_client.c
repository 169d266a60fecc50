/*
 * test_client.c - unit tests for libescrow (client/): input validation, cart
 * planning, and the asynchronous engine's deadlines, resends, backoff,
 * duplicate suppression, cart compensation and close, against a fake segment
 * node (a raw REP socket on its own loop and thread, in this file) that
 * answers by item name: "drop-first" ignores a request's first copy,
 * "busy-first" answers ESC_EBUSY first, "dup" answers twice, "sold-out",
 * "proto0" answers ESC_EPROTO with corr_id 0, "silent" never answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cart.h"
#include "clock.h"
#include "escrow.h"
#include "nnx.h"
#include "req.h"
#include "wire.h"

#define SEEN_MAX 256

/* ---- the fake segment node -------------------------------------------- */

typedef struct fake {
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t stop;
    nnx_watch watch;
    int sock;
    char url[128];
    char path[100];
    uint64_t seen[SEEN_MAX];
    int nseen;
    uint64_t next_hold;
    _Atomic int releases;
    _Atomic int requests;
} fake;

static bool first_time(fake *f, uint64_t corr_id)
{
    for (int i = 0; i < f->nseen; i++) {
        if (f->seen[i] == corr_id) {
            return false;
        }
    }
    if (f->nseen < SEEN_MAX) {
        f->seen[f->nseen++] = corr_id;
    }
    return true;
}

static void fake_hold(fake *f, const wire_request *req, wire_reply *rep, int state)
{
    rep->has_hold = true;
    rep->hold.hold_id = req->op == WIRE_OP_RESERVE ? (1ULL << 40) | ++f->next_hold : req->hold_id;
    rep->hold.segment_id = 1;
    snprintf(rep->hold.item_id, sizeof rep->hold.item_id, "%s", req->item_id);
    snprintf(rep->hold.buyer_id, sizeof rep->hold.buyer_id, "%s", req->buyer_id);
    rep->hold.qty = req->qty;
    rep->hold.state = state;
    rep->hold.expires_at_ms = 1234;
}

/* Fills rep; returns how many copies to send. */
static int fake_answer(fake *f, const wire_request *req, wire_reply *rep)
{
    bool first = first_time(f, req->corr_id);
    if (req->op == WIRE_OP_RELEASE) {
        f->releases++;
        fake_hold(f, req, rep, WIRE_HOLD_CANCELLED);
        return 1;
    }
    if (req->op != WIRE_OP_RESERVE) {
        fake_hold(f, req, rep, req->op == WIRE_OP_CONFIRM ? WIRE_HOLD_CONVERTED : WIRE_HOLD_HELD);
        return 1;
    }
    if (strcmp(req->item_id, "silent") == 0 || (strcmp(req->item_id, "drop-first") == 0 && first)) {
        return 0;
    }
    if (strcmp(req->item_id, "busy-first") == 0 && first) {
        rep->status = ESC_EBUSY;
        return 1;
    }
    if (strcmp(req->item_id, "sold-out") == 0) {
        rep->status = ESC_ESOLD_OUT;
        return 1;
    }
    if (strcmp(req->item_id, "proto0") == 0) {
        rep->corr_id = 0;
        rep->status = ESC_EPROTO;
        return 1;
    }
    fake_hold(f, req, rep, WIRE_HOLD_HELD);
    return strcmp(req->item_id, "dup") == 0 ? 2 : 1;
}

static void fake_ready(nnx_watch *w, void *arg)
{
    (void)w;
    fake *f = arg;
    for (int i = 0; i < 64; i++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        if (nnx_recv(f->sock, &msg, &len, &hdr) < 0 || msg == NULL) {
            return;
        }
        wire_request req;
        char why[WIRE_WHY_MAX];
        wire_reply rep;
        memset(&rep, 0, sizeof rep);
        rep.status = wire_decode_request(msg, len, &req, why);
        rep.corr_id = req.corr_id;
        nnx_free(msg);
        f->requests++;
        int copies = rep.status == 0 ? fake_answer(f, &req, &rep) : 1;
        uint8_t buf[4096];
        size_t n = 0;
        assert_int_equal(wire_encode_reply(&rep, buf, sizeof buf, &n), 0);
        for (int c = 0; c < copies; c++) {
            (void)nnx_send(f->sock, &hdr, buf, n);
        }
    }
}

static void fake_stop_cb(uv_async_t *h)
{
    fake *f = h->data;
    nnx_watch_close(&f->watch, NULL);
    uv_close((uv_handle_t *)&f->stop, NULL);
}

static void fake_main(void *arg)
{
    fake *f = arg;
    (void)uv_run(&f->loop, UV_RUN_DEFAULT);
}

static void fake_start(fake *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "/tmp/escrow-test-client-%ld.sock", (long)getpid());
    snprintf(f->url, sizeof f->url, "ipc://%s", f->path);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(nnx_open_rep(&f->sock), 0);
    assert_int_equal(nnx_bind(f->sock, f->url), 0);
    assert_int_equal(nnx_watch_start(&f->loop, &f->watch, f->sock, fake_ready, f), 0);
    assert_int_equal(uv_async_init(&f->loop, &f->stop, fake_stop_cb), 0);
    f->stop.data = f;
    assert_int_equal(uv_thread_create(&f->thread, fake_main, f), 0);
}

static void fake_finish(fake *f)
{
    assert_int_equal(uv_async_send(&f->stop), 0);
    assert_int_equal(uv_thread_join(&f->thread), 0);
    nnx_close(f->sock);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    unlink(f->path);
}

/* ---- helpers for the async API ---------------------------------------- */

typedef struct result {
    int calls;
    int status;
    esc_hold hold;
    bool has_hold;
    size_t nholds;
    size_t failed_line;
} result;

static void hold_cb(int status, const esc_hold *hold, void *arg)
{
    result *r = arg;
    r->calls++;
    r->status = status;
    r->has_hold = hold != NULL;
    if (hold != NULL) {
        r->hold = *hold;
    }
}

static void cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line, void *arg)
{
    result *r = arg;
    (void)holds;
    r->calls++;
    r->status = status;
    r->nholds = nholds;
    r->failed_line = failed_line;
}

static void closed_cb(void *arg)
{
    (*(int *)arg)++;
}

static void run_until(uv_loop_t *loop, const int *calls, int want)
{
    while (*calls < want) {
        if (uv_run(loop, UV_RUN_ONCE) == 0 && *calls < want) {
            fail_msg("loop ran dry with %d of %d callbacks", *calls, want);
        }
    }
}

static esc_options opts_for(const char *url)
{
    esc_options o = {.endpoint = url, .tenant_id = "t1", .deadline_ms = 2000, .resend_ms = 50};
    return o;
}

static void close_async(uv_loop_t *loop, esc_async *a)
{
    int closed = 0;
    esc_async_close(a, closed_cb, &closed);
    run_until(loop, &closed, 1);
    (void)uv_run(loop, UV_RUN_DEFAULT);
}

static esc_reserve_req reserve_of(const char *item, const char *key)
{
    esc_reserve_req r = {.item_id = item, .buyer_id = "b1", .qty = 1, .idempotency_key = key};
    return r;
}

/* ---- tests -------------------------------------------------------------- */

static void test_options_invalid(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_async *a = NULL;
    esc_options o = {.endpoint = "ipc:///tmp/x", .tenant_id = NULL};
    assert_int_equal(esc_async_new(&loop, &o, &a), ESC_EINVAL);
    o.tenant_id = "bad tenant";
    assert_int_equal(esc_async_new(&loop, &o, &a), ESC_EINVAL);
    o.tenant_id = "t1";
    o.deadline_ms = ESC_DEADLINE_MS_MAX + 1;
    assert_int_equal(esc_async_new(&loop, &o, &a), ESC_EINVAL);
    o.deadline_ms = 0;
    o.endpoint = "nonsense://where";
    assert_int_equal(esc_async_new(&loop, &o, &a), ESC_EINVAL);
    assert_null(a);
    esc_client *c = NULL;
    assert_int_equal(esc_client_new(NULL, &c), ESC_EINVAL);
    assert_null(c);
    (void)uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_calls_invalid(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_options o = opts_for("ipc:///tmp/escrow-test-nobody.sock");
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &o, &a), 0);
    result r = {0};
    char long_key[ESC_ID_MAX + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    esc_reserve_req bad[] = {
        {.item_id = NULL, .buyer_id = "b", .qty = 1, .idempotency_key = "k"},
        {.item_id = "i", .buyer_id = "b", .qty = 0, .idempotency_key = "k"},
        {.item_id = "i", .buyer_id = "b", .qty = ESC_QTY_MAX + 1, .idempotency_key = "k"},
        {.item_id = "i", .buyer_id = "b", .qty = 1, .idempotency_key = ""},
        {.item_id = "i", .buyer_id = "b", .qty = 1, .idempotency_key = long_key},
        {.item_id = "i j", .buyer_id = "b", .qty = 1, .idempotency_key = "k"},
        {.item_id = "i", .buyer_id = "b", .qty = 1, .idempotency_key = "k", .ttl_ms = 10},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(esc_async_reserve(a, &bad[i], 0, hold_cb, &r), ESC_EINVAL);
    }
    esc_reserve_req good = reserve_of("i", "k");
    assert_int_equal(esc_async_reserve(a, &good, 0, NULL, &r), ESC_EINVAL);
    assert_int_equal(esc_async_reserve(a, &good, ESC_DEADLINE_MS_MAX + 1, hold_cb, &r), ESC_EINVAL);
    assert_int_equal(esc_async_confirm(a, 0, 0, 0, hold_cb, &r), ESC_EINVAL);
    assert_int_equal(esc_async_confirm(a, 1ULL << 40 | 1, -1, 0, hold_cb, &r), ESC_EINVAL);
    assert_int_equal(esc_async_release(a, 5, 0, hold_cb, &r), ESC_EINVAL);
    assert_int_equal(esc_async_extend(a, 1ULL << 40 | 1, 1, 0, hold_cb, &r), ESC_EINVAL);
    assert_int_equal(esc_async_get(a, 1ULL << 63, 0, hold_cb, &r), ESC_EINVAL);
    esc_cart_line lines[] = {{"a", 1}, {"b", 0}};
    assert_int_equal(esc_async_reserve_cart(a, "b1", lines, 2, "cart", 0, 0, cart_cb, &r),
                     ESC_EINVAL);
    assert_int_equal(esc_async_reserve_cart(a, "b1", lines, 0, "cart", 0, 0, cart_cb, &r),
                     ESC_EINVAL);
    (void)uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(r.calls, 0);
    close_async(&loop, a);
    assert_int_equal(r.calls, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_cart_plan(void **state)
{
    (void)state;
    esc_cart_line lines[] = {{"a", 1}, {"b", 2}, {"a", 3}, {"c", 1}, {"b", 1}};
    cli_cart_line out[5];
    size_t n = 0, bad = 99;
    assert_int_equal(cli_cart_plan(lines, 5, "cart-7", out, &n, &bad), 0);
    assert_int_equal(n, 3);
    assert_string_equal(out[0].item_id, "a");
    assert_int_equal(out[0].qty, 4);
    assert_string_equal(out[0].key, "cart-7/a");
    assert_int_equal(out[0].first_line, 0);
    assert_string_equal(out[1].key, "cart-7/b");
    assert_int_equal(out[1].qty, 3);
    assert_int_equal(out[1].first_line, 1);
    assert_int_equal(out[2].first_line, 3);

    esc_cart_line over[] = {{"a", ESC_QTY_MAX}, {"a", 1}};
    assert_int_equal(cli_cart_plan(over, 2, "c", out, &n, &bad), ESC_EINVAL);
    assert_int_equal(bad, 1);

    char item[ESC_ID_MAX + 1];
    memset(item, 'x', ESC_ID_MAX - 2);
    item[ESC_ID_MAX - 2] = '\0';
    esc_cart_line longkey[] = {{"ok", 1}, {item, 1}};
    assert_int_equal(cli_cart_plan(longkey, 2, "cart", out, &n, &bad), ESC_EINVAL);
    assert_int_equal(bad, 1);
    assert_int_equal(cli_cart_plan(longkey, 1, "bad key", out, &n, &bad), ESC_EINVAL);
    assert_int_equal(bad, 1);
}

static void test_req_and_reply_mapping(void **state)
{
    (void)state;
    assert_false(wire_hold_id_valid(0));
    assert_false(wire_hold_id_valid(7));
    assert_true(wire_hold_id_valid(1ULL << 40 | 7));
    assert_int_equal(cli_reply_status(0, true), 0);
    assert_int_equal(cli_reply_status(0, false), ESC_EPROTO);
    assert_int_equal(cli_reply_status(5, false), ESC_EPROTO);
    assert_int_equal(cli_reply_status(-1000, false), ESC_EPROTO);
    assert_int_equal(cli_reply_status(ESC_ESOLD_OUT, false), ESC_ESOLD_OUT);
    wire_hold w = {.hold_id = 9, .state = 7, .qty = 2};
    esc_hold h;
    cli_hold_from_wire(&h, &w);
    assert_int_equal(h.state, ESC_HOLD_UNKNOWN);
    wire_hold conv = {.state = WIRE_HOLD_CONVERTED, .qty = 3, .qty_sold = 2};
    assert_true(cli_goal_reached(WIRE_OP_CONFIRM, 0, &conv));
    assert_true(cli_goal_reached(WIRE_OP_CONFIRM, 2, &conv));
    assert_false(cli_goal_reached(WIRE_OP_CONFIRM, 3, &conv));
    assert_false(cli_goal_reached(WIRE_OP_RELEASE, 0, &conv));
    wire_hold canc = {.state = WIRE_HOLD_CANCELLED};
    assert_true(cli_goal_reached(WIRE_OP_RELEASE, 0, &canc));
    assert_false(cli_goal_reached(WIRE_OP_GET, 0, &canc));
    assert_string_equal(esc_hold_state_name(ESC_HOLD_EXPIRED), "expired");
    assert_string_equal(esc_hold_state_name((esc_hold_state)42), "unknown");
}

static void test_deadline_nobody_listening(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_options o = opts_for("ipc:///tmp/escrow-test-nobody-listens.sock");
    o.deadline_ms = 300;
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &o, &a), 0);
    result r = {0};
    esc_reserve_req req = reserve_of("i", "k1");
    int64_t t0 = esc_mono_us();
    assert_int_equal(esc_async_reserve(a, &req, 0, hold_cb, &r), 0);
    assert_int_equal(r.calls, 0); /* never synchronously */
    run_until(&loop, &r.calls, 1);
    int64_t ms = (esc_mono_us() - t0) / 1000;
    assert_int_equal(r.status, ESC_ETIMEDOUT);
    assert_false(r.has_hold);
    assert_true(ms >= 290 && ms < 1000);
    close_async(&loop, a);
    assert_int_equal(uv_loop_close(&loop), 0);

    esc_client *c = NULL;
    assert_int_equal(esc_client_new(&o, &c), 0);
    esc_hold h;
    t0 = esc_mono_us();
    assert_int_equal(esc_reserve(c, &req, 200, &h), ESC_ETIMEDOUT);
    ms = (esc_mono_us() - t0) / 1000;
    assert_true(ms >= 190 && ms < 900);
    esc_client_free(c);
}

static void test_against_fake_node(void **state)
{
    (void)state;
    fake f;
    fake_start(&f);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_options o = opts_for(f.url);
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &o, &a), 0);
    const char *items[] = {"plain", "drop-first", "busy-first", "dup", "sold-out", "proto0"};
    const int want[] = {0, 0, 0, 0, ESC_ESOLD_OUT, ESC_EPROTO};
    result r[6];
    memset(r, 0, sizeof r);
    char keys[6][16];
    for (int i = 0; i < 6; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        esc_reserve_req req = reserve_of(items[i], keys[i]);
        assert_int_equal(esc_async_reserve(a, &req, 0, hold_cb, &r[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        run_until(&loop, &r[i].calls, 1);
    }
    /* let any duplicate reply arrive; it must be dropped */
    int64_t until = esc_mono_us() + 100000;
    while (esc_mono_us() < until) {
        (void)uv_run(&loop, UV_RUN_NOWAIT);
    }
    for (int i = 0; i < 6; i++) {
        assert_int_equal(r[i].calls, 1);
        assert_int_equal(r[i].status, want[i]);
    }
    assert_true(r[0].has_hold);
    assert_int_equal(r[0].hold.state, ESC_HOLD_HELD);
    assert_string_equal(r[0].hold.item_id, "plain");
    assert_int_equal(r[0].hold.expires_at_ms, 1234);

    /* cart: a holds, sold-out fails -> a is released, failed_line names sold-out */
    esc_cart_line lines[] = {{"a", 1}, {"sold-out", 1}, {"a", 2}};
    result cr = {0};
    assert_int_equal(esc_async_reserve_cart(a, "b1", lines, 3, "cart1", 0, 0, cart_cb, &cr), 0);
    run_until(&loop, &cr.calls, 1);
    assert_int_equal(cr.status, ESC_ESOLD_OUT);
    assert_int_equal(cr.failed_line, 1);
    assert_int_equal(f.releases, 1);
    esc_cart_line ok_lines[] = {{"a", 1}, {"b", 1}, {"a", 2}};
    memset(&cr, 0, sizeof cr);
    assert_int_equal(esc_async_reserve_cart(a, "b1", ok_lines, 3, "cart2", 0, 0, cart_cb, &cr), 0);
    run_until(&loop, &cr.calls, 1);
    assert_int_equal(cr.status, 0);
    assert_int_equal(cr.nholds, 2);

    /* close with a call pending: ESC_ECLOSED, then close_cb */
    result pend = {0};
    esc_reserve_req silent = reserve_of("silent", "k9");
    assert_int_equal(esc_async_reserve(a, &silent, 0, hold_cb, &pend), 0);
    int closed = 0;
    esc_async_close(a, closed_cb, &closed);
    assert_int_equal(pend.calls, 0);
    run_until(&loop, &closed, 1);
    assert_int_equal(pend.calls, 1);
    assert_int_equal(pend.status, ESC_ECLOSED);
    (void)uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);

    /* the blocking API on the same node */
    esc_client *c = NULL;
    assert_int_equal(esc_client_new(&o, &c), 0);
    esc_hold h;
    esc_reserve_req req = reserve_of("plain", "kb");
    assert_int_equal(esc_reserve(c, &req, 0, &h), 0);
    assert_int_equal(esc_confirm(c, h.hold_id, 0, 0, &h), 0);
    assert_int_equal(h.state, ESC_HOLD_CONVERTED);
    esc_hold holds[2];
    size_t n = 0, failed = 99;
    assert_int_equal(esc_reserve_cart(c, "b1", lines, 3, "cart3", 0, 0, holds, &n, &failed),
                     ESC_ESOLD_OUT);
    assert_int_equal(failed, 1);
    esc_client_free(c);
    fake_finish(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_invalid),
        cmocka_unit_test(test_calls_invalid),
        cmocka_unit_test(test_cart_plan),
        cmocka_unit_test(test_req_and_reply_mapping),
        cmocka_unit_test(test_deadline_nobody_listening),
        cmocka_unit_test(test_against_fake_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
