/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_client.c - unit tests for libescrow (client/libescrow/): input validation, cart
 * planning, and the asynchronous engine's deadlines, resends, backoff,
 * duplicate suppression, cart compensation and close, against a fake segment
 * node (a raw REP socket on its own loop and thread, in this file) that
 * answers by item name: "drop-first" ignores a request's first copy,
 * "busy-first" answers ESC_EBUSY first, "dup" answers twice, "sold-out",
 * "proto0" answers ESC_EPROTO with corr_id 0, "silent" never answers.
 * The same fake plays the coordinator for routing mode: a RouteReq gets a
 * route of 3 active segments (ids 3, 1, 2) all served by the fake itself,
 * sold out for "rt-sold", paused for "rt-paused", UNKNOWN_ITEM for
 * "rt-unknown"; by segment id only segment 1 is known (item "rt-ok"). As a
 * node it answers "rt-empty" SEGMENT_EMPTY and the first "rt-notowner"
 * NOT_OWNER. The route module (route.c) is tested without sockets.
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
#include "opts.h"
#include "req.h"
#include "route.h"
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
    _Atomic int routes_asked;
    _Atomic int reserves;
    _Atomic int notowner_left;
    uint64_t empty_hints[SEEN_MAX];
    _Atomic int nempty;
    uint64_t ok_hints[SEEN_MAX];
    _Atomic int nok;
    uint64_t late_seg; /* rt-late: the segment where a dropped copy "reserved" */
    char late_key[ESC_KEY_LEN_MAX + 1];
    _Atomic int resolves;
    _Atomic int moved_left; /* rt-moved: resolves answered NOT_OWNER first */
    _Atomic int no_attempt; /* reserves that came without an attempt number */
    wire_route route;
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

/* The coordinator's side: a RouteReq. */
static int fake_route(fake *f, const wire_request *req, wire_reply *rep)
{
    f->routes_asked++;
    const char *item = req->item_id[0] != '\0' ? req->item_id : "rt-ok";
    if ((req->item_id[0] == '\0' && req->segment_id != 1) || strcmp(item, "rt-unknown") == 0) {
        rep->status = req->item_id[0] == '\0' ? ESC_ENOT_FOUND : ESC_EUNKNOWN_ITEM;
        return 1;
    }
    wire_route *r = &f->route;
    memset(r, 0, sizeof *r);
    snprintf(r->tenant_id, sizeof r->tenant_id, "%s", req->tenant_id);
    snprintf(r->item_id, sizeof r->item_id, "%s", item);
    r->version = 100 + (uint64_t)f->routes_asked;
    r->sold_out = strcmp(item, "rt-sold") == 0;
    r->paused = strcmp(item, "rt-paused") == 0;
    const uint64_t ids[] = {3, 1, 2};
    r->nsegs = 3;
    for (int i = 0; i < 3; i++) {
        r->segs[i].segment_id = ids[i];
        r->segs[i].epoch = 1;
        r->segs[i].state = WIRE_SEG_ACTIVE;
        snprintf(r->segs[i].endpoint, sizeof r->segs[i].endpoint, "%s", f->url);
    }
    rep->route = r;
    return 1;
}

/* A node's answers to routed reserves ("rt-*"); -1 when not one of those. */
static int fake_routed_reserve(fake *f, const wire_request *req, wire_reply *rep, bool first)
{
    if (strncmp(req->item_id, "rt-", 3) != 0) {
        return -1;
    }
    if (strcmp(req->item_id, "rt-empty") == 0) {
        if (f->nempty < SEEN_MAX) {
            f->empty_hints[f->nempty] = req->segment_id;
            f->nempty++;
        }
        rep->status = ESC_ESEGMENT_EMPTY;
        return 1;
    }
    /* rt-stray, rt-gone, rt-moved: the first copy of every frame is lost on
     * a slow link, the second is answered SEGMENT_EMPTY. rt-late: the same
     * on the first segment tried, but the lost copy arrives later and
     * reserves there; elsewhere SEGMENT_EMPTY at once. */
    bool stray = strcmp(req->item_id, "rt-stray") == 0 || strcmp(req->item_id, "rt-gone") == 0 ||
                 strcmp(req->item_id, "rt-moved") == 0;
    bool late = strcmp(req->item_id, "rt-late") == 0;
    if (late && f->late_seg != 0 && strcmp(req->key, f->late_key) == 0) {
        rep->status = ESC_ESEGMENT_EMPTY;
        return 1;
    }
    if (stray || late) {
        if (first) {
            return 0;
        }
        if (late) {
            f->late_seg = req->segment_id;
            snprintf(f->late_key, sizeof f->late_key, "%s", req->key);
        }
        rep->status = ESC_ESEGMENT_EMPTY;
        return 1;
    }
    if (strcmp(req->item_id, "rt-notowner") == 0 && f->notowner_left > 0) {
        f->notowner_left--;
        rep->status = ESC_ENOT_OWNER;
        return 1;
    }
    if (strcmp(req->item_id, "rt-ok") == 0 && f->nok < SEEN_MAX) {
        f->ok_hints[f->nok] = req->segment_id;
        f->nok++;
    }
    return -1;
}

/* A resolve (the library settling a "no" after an unanswered copy): the
 * hold a lost copy made (rt-late, late-single), nothing (NOT_FOUND), no
 * answer ever (rt-stray), or NOT_OWNER once first (rt-moved). first: the
 * frame's first copy (not a resend). */
static int fake_resolve(fake *f, const wire_request *req, wire_reply *rep, bool first)
{
    /* frames, not resends: on a loaded machine a reply can come after
     * resend_ms and the library resends the same frame */
    if (first) {
        f->resolves++;
    }
    if (strcmp(req->item_id, "rt-stray") == 0) {
        return 0;
    }
    if (strcmp(req->item_id, "rt-moved") == 0 && f->moved_left > 0) {
        f->moved_left--;
        rep->status = ESC_ENOT_OWNER;
        return 1;
    }
    if ((strcmp(req->item_id, "rt-late") == 0 && strcmp(req->key, f->late_key) == 0) ||
        strcmp(req->item_id, "late-single") == 0) {
        fake_hold(f, req, rep, WIRE_HOLD_HELD);
        return 1;
    }
    rep->status = ESC_ENOT_FOUND;
    return 1;
}

/* Fills rep; returns how many copies to send. */
static int fake_answer(fake *f, const wire_request *req, wire_reply *rep)
{
    if (req->op == WIRE_OP_ROUTE) {
        return fake_route(f, req, rep);
    }
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
    if (req->resolve) {
        return fake_resolve(f, req, rep, first);
    }
    f->reserves++;
    if (req->attempt == 0) {
        f->no_attempt++;
    }
    int routed = fake_routed_reserve(f, req, rep, first);
    if (routed >= 0) {
        return routed;
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
    if (strcmp(req->item_id, "late-single") == 0) {
        if (first) {
            return 0; /* lost; it "reserves" later (fake_resolve) */
        }
        rep->status = ESC_ETRY_LATER;
        return 1;
    }
    if (strcmp(req->item_id, "proto0") == 0) {
        rep->corr_id = 0;
        rep->status = ESC_EPROTO;
        return 1;
    }
    fake_hold(f, req, rep, WIRE_HOLD_HELD);
    rep->replay = strcmp(req->item_id, "replayed") == 0; /* the key had this hold already */
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
        wire_reply rep = {0};
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
    assert_false(r[0].hold.replayed);

    /* Reply.replay reaches the caller as esc_hold.replayed, a field that
     * took padding: the struct did not grow (bindings that map it keep
     * their layout). */
    result rp = {0};
    esc_reserve_req rreq = reserve_of("replayed", "k-replayed");
    assert_int_equal(esc_async_reserve(a, &rreq, 0, hold_cb, &rp), 0);
    run_until(&loop, &rp.calls, 1);
    assert_int_equal(rp.status, 0);
    assert_true(rp.hold.replayed);
    assert_int_equal(offsetof(esc_hold, replayed), offsetof(esc_hold, extended) + 1);
    assert_int_equal(sizeof(esc_hold), (offsetof(esc_hold, extended) + 1 + _Alignof(esc_hold) - 1) /
                                           _Alignof(esc_hold) * _Alignof(esc_hold));

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

/* ---- routing mode: options ------------------------------------------- */

static void test_routing_options(void **state)
{
    (void)state;
    esc_options both = {
        .endpoint = "ipc:///tmp/a", .coordinator = "ipc:///tmp/c", .tenant_id = "t1"};
    esc_options neither = {.tenant_id = "t1"};
    esc_options routes_only = {
        .endpoint = "ipc:///tmp/a", .routes = "ipc:///tmp/r", .tenant_id = "t1"};
    esc_options empty = {.coordinator = "", .tenant_id = "t1"};
    esc_options empty_routes = {.coordinator = "ipc:///tmp/c", .routes = "", .tenant_id = "t1"};
    char long_url[CLI_ENDPOINT_LEN_MAX + 2];
    memset(long_url, 'u', sizeof long_url - 1);
    long_url[sizeof long_url - 1] = '\0';
    esc_options too_long = {.coordinator = long_url, .tenant_id = "t1"};
    cli_opts o;
    assert_int_equal(cli_opts_init(&o, &both), ESC_EINVAL);
    assert_int_equal(cli_opts_init(&o, &neither), ESC_EINVAL);
    assert_int_equal(cli_opts_init(&o, &routes_only), ESC_EINVAL);
    assert_int_equal(cli_opts_init(&o, &empty), ESC_EINVAL);
    assert_int_equal(cli_opts_init(&o, &empty_routes), ESC_EINVAL);
    assert_int_equal(cli_opts_init(&o, &too_long), ESC_EINVAL);
    esc_options good = {.coordinator = "ipc:///tmp/c", .routes = "ipc:///tmp/r", .tenant_id = "t1"};
    assert_int_equal(cli_opts_init(&o, &good), 0);
    assert_true(o.routing);
    assert_string_equal(o.endpoint, "ipc:///tmp/c");
    assert_string_equal(o.routes, "ipc:///tmp/r");
    esc_options single = {.endpoint = "ipc:///tmp/a", .tenant_id = "t1"};
    assert_int_equal(cli_opts_init(&o, &single), 0);
    assert_false(o.routing);
    assert_string_equal(o.routes, "");

    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &both, &a), ESC_EINVAL);
    assert_null(a);
    esc_options bad_routes = {
        .coordinator = "ipc:///tmp/c", .routes = "nonsense://x", .tenant_id = "t1"};
    assert_int_equal(esc_async_new(&loop, &bad_routes, &a), ESC_EINVAL);
    assert_null(a);
    assert_int_equal(esc_async_new(&loop, &good, &a), 0);
    esc_stats st;
    memset(&st, 0xff, sizeof st);
    esc_async_stats(a, &st);
    assert_int_equal(st.frames_sent, 0);
    assert_int_equal(st.route_fetches, 0);
    assert_int_equal(st.sold_out_cached, 0);
    close_async(&loop, a);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- routing mode: the pure route module ------------------------------ */

static void test_route_hash(void **state)
{
    (void)state;
    /* Stable: these values are part of the contract (load generators skew
     * demand with them); a change here breaks every deployed skew. */
    uint64_t h = cli_route_hash("t1", "flash", "buyer-1");
    assert_true(h == cli_route_hash("t1", "flash", "buyer-1"));
    assert_int_equal(esc_route_slot("t1", "flash", "buyer-1", 16), (uint32_t)(h % 16));
    /* The NUL separators: moving a byte across a boundary changes the hash. */
    assert_true(cli_route_hash("ab", "c", "d") != cli_route_hash("a", "bc", "d"));
    assert_true(cli_route_hash("t1", "flash", "b") != cli_route_hash("t1", "flashb", ""));
    assert_int_equal(esc_route_slot("t1", "flash", "b", 0), 0);
    assert_int_equal(esc_route_slot("t1", "flash", "b", 1), 0);
    /* Spread: 16,000 buyers over 16 slots, each within 1000 +- 15%. */
    uint32_t count[16] = {0};
    char buyer[32];
    for (int i = 0; i < 16000; i++) {
        snprintf(buyer, sizeof buyer, "buyer-%d", i);
        uint32_t slot = esc_route_slot("t1", "flash", buyer, 16);
        assert_true(slot < 16);
        count[slot]++;
    }
    for (int i = 0; i < 16; i++) {
        assert_in_range(count[i], 850, 1150);
    }
    /* Another item spreads the same buyers differently. */
    int same = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(buyer, sizeof buyer, "buyer-%d", i);
        same += esc_route_slot("t1", "flash", buyer, 16) == esc_route_slot("t1", "tee", buyer, 16);
    }
    assert_in_range(same, 20, 120); /* ~1000/16 by chance */
}

static void route_of(wire_route *w, const char *item, uint64_t version)
{
    memset(w, 0, sizeof *w);
    snprintf(w->tenant_id, sizeof w->tenant_id, "t1");
    snprintf(w->item_id, sizeof w->item_id, "%s", item);
    w->version = version;
}

static void seg_of(wire_route *w, uint64_t id, uint32_t state, const char *ep)
{
    wire_route_seg *s = &w->segs[w->nsegs++];
    s->segment_id = id;
    s->epoch = 7;
    s->state = state;
    snprintf(s->endpoint, sizeof s->endpoint, "%s", ep);
}

static uint64_t picked(const cli_route *r, uint64_t hash, uint32_t empties)
{
    const cli_rseg *s = NULL;
    if (cli_route_pick_reserve(r, hash, empties, &s) != CLI_PICK_SEND) {
        return 0;
    }
    return s->segment_id;
}

static void test_route_pick(void **state)
{
    (void)state;
    static wire_route w;
    static cli_route_cache rc;
    assert_int_equal(cli_route_cache_init(&rc), 0);
    route_of(&w, "i", 5);
    seg_of(&w, 50, WIRE_SEG_ACTIVE, "tcp://a:1");
    seg_of(&w, 30, WIRE_SEG_ACTIVE, "tcp://b:1");
    seg_of(&w, 90, WIRE_SEG_DRAINING, "tcp://a:1");
    seg_of(&w, 70, WIRE_SEG_ACTIVE, "");
    seg_of(&w, 10, WIRE_SEG_ACTIVE, "tcp://b:1");
    cli_route *r = NULL;
    assert_int_equal(cli_route_apply(&rc, &w, false, 1000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(r->nsegs, 5);
    assert_int_equal(r->nactive, 4);
    assert_int_equal(r->segs[0].segment_id, 10); /* sorted */
    assert_int_equal(r->segs[4].segment_id, 90);
    assert_int_equal(cli_route_tries(r), 4);
    /* active in id order: 10 30 50 70; hash % 4 picks the start, then ring order */
    assert_int_equal(picked(r, 0, 0), 10);
    assert_int_equal(picked(r, 0, 1), 30);
    assert_int_equal(picked(r, 0, 2), 50);
    assert_int_equal(picked(r, 5, 0), 30);
    assert_int_equal(picked(r, 6, 2), 10); /* 50, 70, then 10 */
    const cli_rseg *s = NULL;
    assert_int_equal(cli_route_pick_reserve(r, 3, 0, &s), CLI_PICK_REFRESH); /* 70: no owner */
    assert_int_equal(cli_route_pick_reserve(r, 0, 4, &s), CLI_PICK_EXHAUSTED);
    assert_int_equal(cli_route_pick_reserve(r, 1, 4, &s), CLI_PICK_EXHAUSTED);
    assert_string_equal(cli_route_node_url(&rc, r->segs[0].node), "tcp://b:1");
    assert_int_equal(r->segs[3].node, CLI_NODE_NONE);
    assert_true(r->segs[1].node == r->segs[0].node); /* one slot per endpoint */

    /* collapsed: the tail only, even though it is draining; one try */
    route_of(&w, "i", 6);
    w.tail_segment = 90;
    seg_of(&w, 90, WIRE_SEG_DRAINING, "tcp://a:1");
    seg_of(&w, 30, WIRE_SEG_DRAINING, "tcp://b:1");
    assert_int_equal(cli_route_apply(&rc, &w, false, 2000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_tries(r), 1);
    for (uint64_t h = 0; h < 8; h++) {
        assert_int_equal(picked(r, h, 0), 90);
    }
    assert_int_equal(cli_route_pick_reserve(r, 0, 1, &s), CLI_PICK_EXHAUSTED);
    /* a tail the route does not list, or no active segment: refresh */
    w.tail_segment = 91;
    w.version = 7;
    assert_int_equal(cli_route_apply(&rc, &w, false, 3000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_pick_reserve(r, 0, 0, &s), CLI_PICK_REFRESH);
    w.tail_segment = 0;
    w.version = 8;
    assert_int_equal(cli_route_apply(&rc, &w, false, 3000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_pick_reserve(r, 0, 0, &s), CLI_PICK_REFRESH);
    /* sold out beats paused beats everything: no round trip */
    w.version = 9;
    w.paused = true;
    assert_int_equal(cli_route_apply(&rc, &w, false, 3000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_pick_reserve(r, 0, 0, &s), CLI_PICK_PAUSED);
    w.version = 10;
    w.sold_out = true;
    assert_int_equal(cli_route_apply(&rc, &w, false, 3000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_pick_reserve(r, 0, 0, &s), CLI_PICK_SOLD_OUT);
    assert_int_equal(cli_route_pick_reserve(r, 0, 9, &s), CLI_PICK_SOLD_OUT);
    cli_route_cache_fini(&rc);
}

static void test_route_versions(void **state)
{
    (void)state;
    static wire_route w;
    static cli_route_cache rc;
    assert_int_equal(cli_route_cache_init(&rc), 0);
    route_of(&w, "i", 5);
    seg_of(&w, 2, WIRE_SEG_ACTIVE, "tcp://a:1");
    seg_of(&w, 1, WIRE_SEG_ACTIVE, "tcp://b:1");
    cli_route *r = NULL;
    assert_int_equal(cli_route_apply(&rc, &w, false, 1000, NULL, NULL, &r), CLI_ROUTE_NEW);
    r->stale = true;
    assert_ptr_equal(cli_route_find(&rc, "i"), r);
    assert_null(cli_route_find(&rc, "j"));
    assert_ptr_equal(cli_route_find_seg(&rc, 2)->route, r);
    assert_null(cli_route_find_seg(&rc, 3));
    /* older: ignored, nothing changes */
    w.version = 4;
    w.sold_out = true;
    cli_route *r2 = NULL;
    assert_int_equal(cli_route_apply(&rc, &w, false, 1500, NULL, NULL, &r2), CLI_ROUTE_OLDER);
    assert_false(cli_route_find(&rc, "i")->sold_out);
    /* same version: a push refreshes pushed_us only, a fetch clears stale */
    w.version = 5;
    assert_int_equal(cli_route_apply(&rc, &w, true, 1600, NULL, NULL, &r2), CLI_ROUTE_SAME);
    assert_ptr_equal(r2, r);
    assert_true(r->stale);
    assert_int_equal(r->pushed_us, 1600);
    assert_false(r->sold_out); /* same version: the content is not re-read */
    assert_int_equal(cli_route_apply(&rc, &w, false, 1700, NULL, NULL, &r2), CLI_ROUTE_SAME);
    assert_false(r->stale);
    assert_int_equal(r->fetched_us, 1700);
    /* newer (pushed): replaces; segment 1 moved to a new node, segment 2 left */
    route_of(&w, "i", 6);
    seg_of(&w, 1, WIRE_SEG_ACTIVE, "tcp://c:1");
    seg_of(&w, 4, WIRE_SEG_ACTIVE, "tcp://a:1");
    r->next_fetch_us = 4242;
    assert_int_equal(cli_route_apply(&rc, &w, true, 2000, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(r->version, 6);
    assert_int_equal(r->pushed_us, 2000);
    assert_int_equal(r->fetched_us, 0);
    assert_int_equal(r->next_fetch_us, 4242); /* the rate limit survives */
    assert_false(r->stale);
    assert_null(cli_route_find_seg(&rc, 2));
    assert_string_equal(cli_route_node_url(&rc, cli_route_find_seg(&rc, 1)->node), "tcp://c:1");
    assert_int_equal(rc.count, 1);
    /* "tcp://b:1" is referenced no more; "tcp://a:1" kept its slot */
    uint32_t a_slot = cli_route_find_seg(&rc, 4)->node;
    assert_int_equal(rc.node_refs[a_slot], 1);
    for (uint32_t i = 0; i < CLI_NODES_MAX; i++) {
        if (strcmp(rc.nodes[i], "tcp://b:1") == 0) {
            assert_int_equal(rc.node_refs[i], 0);
        }
    }
    /* a segment listed twice: refused, the cache unchanged */
    route_of(&w, "i", 7);
    seg_of(&w, 1, WIRE_SEG_ACTIVE, "tcp://a:1");
    seg_of(&w, 1, WIRE_SEG_ACTIVE, "tcp://a:1");
    assert_int_equal(cli_route_apply(&rc, &w, false, 3000, NULL, NULL, &r2), ESC_EPROTO);
    assert_int_equal(cli_route_find(&rc, "i")->version, 6);
    assert_int_equal(rc.node_refs[a_slot], 1);
    cli_route_cache_fini(&rc);
}

static void test_route_verdict(void **state)
{
    (void)state;
    static wire_route w;
    static cli_route_cache rc;
    assert_int_equal(cli_route_cache_init(&rc), 0);
    route_of(&w, "i", 1);
    seg_of(&w, 1, WIRE_SEG_ACTIVE, "tcp://a:1");
    cli_route *r = NULL;
    int64_t t = 10000000;
    assert_int_equal(cli_route_apply(&rc, &w, false, t, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_verdict(r, t + CLI_ROUTE_FRESH_US), ESC_ETRY_LATER);
    assert_int_equal(cli_route_verdict(r, t + CLI_ROUTE_FRESH_US + 1), 1); /* fetch first */
    w.version = 2;
    w.sold_out = true;
    assert_int_equal(cli_route_apply(&rc, &w, false, t, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_verdict(r, t + 50000), ESC_ESOLD_OUT);
    assert_int_equal(cli_route_verdict(r, t + 200000), 1);
    /* kept by pushes: fresh while the stream is alive */
    w.version = 3;
    assert_int_equal(cli_route_apply(&rc, &w, true, t, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_verdict(r, t + CLI_ROUTE_PUSH_ALIVE_US), ESC_ESOLD_OUT);
    assert_int_equal(cli_route_verdict(r, t + CLI_ROUTE_PUSH_ALIVE_US + 1), 1);
    cli_route_cache_fini(&rc);
}

static bool never_idle(uint32_t idx, void *arg)
{
    (void)idx;
    (*(int *)arg)++;
    return false;
}

static void test_route_bounds(void **state)
{
    (void)state;
    static wire_route w;
    static cli_route_cache rc;
    assert_int_equal(cli_route_cache_init(&rc), 0);
    char item[32];
    cli_route *r = NULL;
    /* CLI_ROUTES_MAX + 1 items: the least recently updated is dropped */
    for (uint32_t i = 0; i <= CLI_ROUTES_MAX; i++) {
        snprintf(item, sizeof item, "item-%u", i);
        route_of(&w, item, 1);
        seg_of(&w, 1000 + i, WIRE_SEG_ACTIVE, "tcp://a:1");
        assert_int_equal(cli_route_apply(&rc, &w, false, 1, NULL, NULL, &r), CLI_ROUTE_NEW);
    }
    assert_int_equal(rc.count, CLI_ROUTES_MAX);
    assert_null(cli_route_find(&rc, "item-0"));
    assert_null(cli_route_find_seg(&rc, 1000));
    assert_non_null(cli_route_find(&rc, "item-1"));
    assert_int_equal(rc.node_refs[cli_route_find_seg(&rc, 1001)->node], CLI_ROUTES_MAX);
    cli_route_cache_fini(&rc);

    /* CLI_NODES_MAX endpoints: one more is ownerless (slots in use) */
    assert_int_equal(cli_route_cache_init(&rc), 0);
    route_of(&w, "wide", 1);
    for (uint32_t i = 0; i <= CLI_NODES_MAX; i++) {
        char ep[32];
        snprintf(ep, sizeof ep, "tcp://n%u:1", i);
        seg_of(&w, i + 1, WIRE_SEG_ACTIVE, ep);
    }
    assert_int_equal(cli_route_apply(&rc, &w, false, 1, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_find_seg(&rc, CLI_NODES_MAX + 1)->node, CLI_NODE_NONE);
    assert_int_equal(cli_route_find_seg(&rc, CLI_NODES_MAX)->node, CLI_NODES_MAX - 1);
    /* while the old route holds every slot, a new endpoint has none */
    route_of(&w, "wide", 2);
    seg_of(&w, 1, WIRE_SEG_ACTIVE, "tcp://other:1");
    int asked = 0;
    assert_int_equal(cli_route_apply(&rc, &w, false, 2, never_idle, &asked, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_find_seg(&rc, 1)->node, CLI_NODE_NONE);
    assert_int_equal(asked, 0);
    /* unreferenced slots are reused only when the engine says their socket is idle */
    w.version = 3;
    assert_int_equal(cli_route_apply(&rc, &w, false, 3, never_idle, &asked, &r), CLI_ROUTE_NEW);
    assert_int_equal(cli_route_find_seg(&rc, 1)->node, CLI_NODE_NONE);
    assert_int_equal(asked, CLI_NODES_MAX);
    w.version = 4;
    assert_int_equal(cli_route_apply(&rc, &w, false, 4, NULL, NULL, &r), CLI_ROUTE_NEW);
    assert_string_equal(cli_route_node_url(&rc, cli_route_find_seg(&rc, 1)->node), "tcp://other:1");
    cli_route_cache_fini(&rc);
}

/* ---- routing mode against the fake (coordinator and node in one) ------ */

static void run_for_ms(uv_loop_t *loop, int ms)
{
    int64_t until = esc_mono_us() + (int64_t)ms * 1000;
    while (esc_mono_us() < until) {
        (void)uv_run(loop, UV_RUN_NOWAIT);
    }
}

/* A caller that reserves again from its callback, as a retry loop would,
 * until a 1 ms timer fires (or CHAIN_CAP answers: the timer was starved). */
#define CHAIN_CAP 200000
typedef struct chain {
    esc_async *a;
    int answers;  /* callbacks so far */
    int sold_out; /* of them SOLD_OUT */
    int done;     /* 1 once the chain stopped */
    bool ticked;
} chain;

static void chain_cb(int status, const esc_hold *hold, void *arg)
{
    (void)hold;
    chain *ch = arg;
    ch->answers++;
    ch->sold_out += status == ESC_ESOLD_OUT;
    if (ch->ticked || ch->answers >= CHAIN_CAP) {
        ch->done = 1;
        return;
    }
    esc_reserve_req q = {.item_id = "rt-sold", .buyer_id = "bc", .qty = 1, .idempotency_key = "kc"};
    assert_int_equal(esc_async_reserve(ch->a, &q, 0, chain_cb, ch), 0);
}

static void chain_tick(uv_timer_t *t)
{
    chain *ch = t->data;
    ch->ticked = true;
}

static int reserve_routed(uv_loop_t *loop, esc_async *a, const char *item, const char *buyer,
                          const char *key, result *r)
{
    memset(r, 0, sizeof *r);
    esc_reserve_req req = {.item_id = item, .buyer_id = buyer, .qty = 1, .idempotency_key = key};
    assert_int_equal(esc_async_reserve(a, &req, 0, hold_cb, r), 0);
    assert_int_equal(r->calls, 0); /* never from inside the call */
    run_until(loop, &r->calls, 1);
    return r->status;
}

/* A reserve's "no" is never given while a copy of one of its frames may
 * still reserve (chaos seeds 350359, 683027): the library resolves each
 * segment a copy went unanswered to before it says "no". */
static void test_routing_stray_copies(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    f.moved_left = 1;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_options o = {.coordinator = f.url, .tenant_id = "t1", .deadline_ms = 1500, .resend_ms = 30};
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &o, &a), 0);
    result r;
    esc_stats st;
    /* the late copy reserved on the first segment: the hold is the answer,
     * not TRY_LATER */
    assert_int_equal(reserve_routed(&loop, a, "rt-late", "b1", "late-1", &r), 0);
    assert_int_equal(r.hold.state, ESC_HOLD_HELD);
    esc_async_stats(a, &st);
    assert_int_equal(st.resolves, 1);
    /* no resolve is ever answered: the outcome is unknown, not "no" */
    assert_int_equal(reserve_routed(&loop, a, "rt-stray", "b2", "stray-1", &r), ESC_ETIMEDOUT);
    esc_async_stats(a, &st);
    assert_true(st.resolves > 1);
    /* every segment answers NOT_FOUND: the "no" is true, and every stray
     * segment was asked (the 3 of the route) */
    uint64_t before = st.resolves;
    assert_int_equal(reserve_routed(&loop, a, "rt-gone", "b4", "gone-1", &r), ESC_ETRY_LATER);
    esc_async_stats(a, &st);
    assert_int_equal(st.resolves - before, 3);
    /* a resolve that meets a stale route asks the coordinator, then the
     * owner again */
    int routes = f.routes_asked;
    int frames = f.resolves;
    before = st.resolves;
    assert_int_equal(reserve_routed(&loop, a, "rt-moved", "b5", "moved-1", &r), ESC_ETRY_LATER);
    esc_async_stats(a, &st);
    assert_int_equal(st.resolves - before, 3);
    assert_int_equal(f.resolves - frames, 4); /* the first one twice */
    assert_true(f.routes_asked > routes);
    /* one copy, one answer: a plain "no", nothing resolved */
    before = st.resolves;
    assert_int_equal(reserve_routed(&loop, a, "rt-empty", "b3", "empty-1", &r), ESC_ETRY_LATER);
    esc_async_stats(a, &st);
    assert_int_equal(st.resolves, before);
    assert_int_equal(f.no_attempt, 0); /* every reserve frame carried its attempt */
    close_async(&loop, a);
    run_for_ms(&loop, 10);
    assert_int_equal(uv_loop_close(&loop), 0);
    fake_finish(&f);
}

/* The same with one node (no routing): a "no" that answers one of several
 * copies is resolved first; the copy that was lost had reserved. */
static void test_single_stray_copies(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_options o = {.endpoint = f.url, .tenant_id = "t1", .deadline_ms = 1500, .resend_ms = 30};
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &o, &a), 0);
    result r;
    esc_stats st;
    assert_int_equal(reserve_routed(&loop, a, "late-single", "b1", "ls-1", &r), 0);
    assert_int_equal(r.hold.state, ESC_HOLD_HELD);
    esc_async_stats(a, &st);
    assert_int_equal(st.resolves, 1);
    assert_int_equal(reserve_routed(&loop, a, "sold-out", "b2", "so-1", &r), ESC_ESOLD_OUT);
    esc_async_stats(a, &st);
    assert_int_equal(st.resolves, 1);
    close_async(&loop, a);
    run_for_ms(&loop, 10);
    assert_int_equal(uv_loop_close(&loop), 0);
    fake_finish(&f);
}

static void test_routing_against_fake(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    f.notowner_left = 1;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    esc_options o = {
        .coordinator = f.url, .tenant_id = "t1", .deadline_ms = 2000, .resend_ms = 250};
    esc_async *a = NULL;
    assert_int_equal(esc_async_new(&loop, &o, &a), 0);
    result r;
    /* active segments in id order: 1 2 3; the buyer's slot picks one */
    assert_int_equal(reserve_routed(&loop, a, "rt-ok", "b1", "k1", &r), 0);
    assert_int_equal(r.hold.state, ESC_HOLD_HELD);
    uint64_t hold_id = r.hold.hold_id;
    assert_int_equal(f.routes_asked, 1);
    assert_int_equal(f.nok, 1);
    assert_int_equal(f.ok_hints[0], 1 + esc_route_slot("t1", "rt-ok", "b1", 3));
    assert_int_equal(reserve_routed(&loop, a, "rt-ok", "b2", "k2", &r), 0);
    assert_int_equal(f.routes_asked, 1); /* cached */
    assert_int_equal(f.ok_hints[1], 1 + esc_route_slot("t1", "rt-ok", "b2", 3));

    /* sold out: the first asks the coordinator, the second not even that */
    int reserves = f.reserves;
    assert_int_equal(reserve_routed(&loop, a, "rt-sold", "b1", "k3", &r), ESC_ESOLD_OUT);
    assert_int_equal(reserve_routed(&loop, a, "rt-sold", "b2", "k4", &r), ESC_ESOLD_OUT);
    assert_int_equal(f.routes_asked, 2);
    assert_int_equal(f.reserves, reserves);
    esc_stats st;
    esc_async_stats(a, &st);
    assert_int_equal(st.sold_out_cached, 2);
    assert_int_equal(st.route_fetches, 2);
    /* Answers from the cache chained from the callback: each comes on a later
     * loop turn, so the loop keeps running timers and sockets in between
     * (a 0 ms timer here once spun inside libuv forever). */
    chain ch = {.a = a};
    uv_timer_t tick;
    assert_int_equal(uv_timer_init(&loop, &tick), 0);
    tick.data = &ch;
    assert_int_equal(uv_timer_start(&tick, chain_tick, 1, 0), 0);
    esc_reserve_req cq = {
        .item_id = "rt-sold", .buyer_id = "bc", .qty = 1, .idempotency_key = "kc"};
    assert_int_equal(esc_async_reserve(a, &cq, 0, chain_cb, &ch), 0);
    run_until(&loop, &ch.done, 1);
    assert_int_equal(ch.sold_out, ch.answers);
    assert_true(ch.ticked);
    assert_true(ch.answers < CHAIN_CAP); /* the timer ran while the chain went on */
    uv_close((uv_handle_t *)&tick, NULL);
    assert_int_equal(f.reserves, reserves);
    assert_int_equal(reserve_routed(&loop, a, "rt-paused", "b1", "k5", &r), ESC_EPAUSED);
    assert_int_equal(reserve_routed(&loop, a, "rt-unknown", "b1", "k6", &r), ESC_EUNKNOWN_ITEM);
    assert_int_equal(f.reserves, reserves);

    /* SEGMENT_EMPTY everywhere: 3 segments in ring order, then TRY_LATER
     * (the route is fresh and not sold out) */
    assert_int_equal(reserve_routed(&loop, a, "rt-empty", "b7", "k7", &r), ESC_ETRY_LATER);
    assert_int_equal(f.nempty, 3);
    uint32_t start = esc_route_slot("t1", "rt-empty", "b7", 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(f.empty_hints[i], 1 + (start + i) % 3);
    }

    /* NOT_OWNER: the route is fetched again (after the 50 ms rate limit),
     * the same key retried */
    int asked = f.routes_asked;
    assert_int_equal(reserve_routed(&loop, a, "rt-notowner", "b1", "k8", &r), 0);
    assert_int_equal(f.routes_asked, asked + 2);
    assert_int_equal(f.notowner_left, 0);

    /* confirm goes to the owner of the hold's segment, known from the cache */
    asked = f.routes_asked;
    memset(&r, 0, sizeof r);
    assert_int_equal(esc_async_confirm(a, hold_id, 0, 0, hold_cb, &r), 0);
    run_until(&loop, &r.calls, 1);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.hold.state, ESC_HOLD_CONVERTED);
    assert_int_equal(f.routes_asked, asked);

    /* a cart routes each line; a sold-out line releases the other's hold */
    int releases = f.releases;
    esc_cart_line lines[] = {{"rt-ok", 1}, {"rt-sold", 1}};
    result cr = {0};
    assert_int_equal(esc_async_reserve_cart(a, "b9", lines, 2, "cart-r", 0, 0, cart_cb, &cr), 0);
    run_until(&loop, &cr.calls, 1);
    assert_int_equal(cr.status, ESC_ESOLD_OUT);
    assert_int_equal(cr.failed_line, 1);
    assert_int_equal(f.releases, releases + 1);
    esc_async_stats(a, &st);
    assert_true(st.frames_sent >= 12);
    assert_true(st.retargets >= 3);
    close_async(&loop, a);
    run_for_ms(&loop, 10);
    assert_int_equal(uv_loop_close(&loop), 0);

    /* a new (blocking) client: the hold's segment is looked up by id */
    esc_client *c = NULL;
    assert_int_equal(esc_client_new(&o, &c), 0);
    asked = f.routes_asked;
    esc_hold h;
    assert_int_equal(esc_get(c, 1ULL << 40 | 5, 0, &h), 0);
    assert_int_equal(h.hold_id, 1ULL << 40 | 5);
    assert_int_equal(f.routes_asked, asked + 1);
    assert_int_equal(esc_get(c, 9ULL << 40 | 5, 0, &h), ESC_ENOT_FOUND);
    assert_int_equal(f.routes_asked, asked + 2);
    assert_int_equal(esc_client_stats(c, &st), 0);
    assert_int_equal(st.route_fetches, 2);
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
        cmocka_unit_test(test_routing_options),
        cmocka_unit_test(test_route_hash),
        cmocka_unit_test(test_route_pick),
        cmocka_unit_test(test_route_versions),
        cmocka_unit_test(test_route_verdict),
        cmocka_unit_test(test_route_bounds),
        cmocka_unit_test(test_routing_against_fake),
        cmocka_unit_test(test_routing_stray_copies),
        cmocka_unit_test(test_single_stray_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
