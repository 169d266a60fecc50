/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_threaded.c - unit tests for the threaded client (esc_threaded_*,
 * client/libescrow/threaded.c): blocking calls from many threads at once,
 * queued calls collected through the descriptor (readable exactly while
 * completions wait), tags, carts into the caller's array, errors found on
 * the client's thread, the backlog above the engine's in-flight maximum,
 * and shutdown with calls pending. Against a small fake segment node (a raw
 * REP socket on its own loop and thread): "sold-out" answers ESC_ESOLD_OUT,
 * "silent" never answers, any other item gets a held hold; confirm converts,
 * release cancels, get shows a held hold; "later" is answered only once
 * the test lets the fake go (fake_release), so calls pile up in flight.
 *
 * A raw REP socket drops a reply silently when the peer's pipe is still
 * busy with the previous one (nanomsg's xrep), and how often that happens
 * depends on the machine's speed. So the backlog test lets the client
 * resend, as a real client does, and the fake holds back one reply per
 * key ("l<N>": slot N), not one per request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <poll.h>

#include <cmocka.h>

#include "esc_limits.h"
#include "escrow.h"
#include "nnx.h"
#include "wire.h"

/* ---- the fake segment node ---------------------------------------------- */

/* A reply held back: the raw REP socket answers in any order. */
typedef struct deferred {
    nnx_hdr hdr;
    uint8_t buf[512];
    size_t len;
    bool held; /* a request with this slot's key arrived */
} deferred;

#define DEFERRED_MAX (ESC_CLIENT_INFLIGHT_MAX + 500)

typedef struct fake {
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t stop;
    uv_async_t go; /* fake_release: send what was held back, hold nothing more */
    nnx_watch watch;
    int sock;
    char url[128];
    char path[100];
    uint64_t next_hold;
    _Atomic int requests;
    _Atomic bool saw_blocked; /* a reserve with key "blocked" arrived */
    bool released;            /* fake's thread only */
    deferred *later;          /* DEFERRED_MAX, by key number; fake's thread only */
    _Atomic int nlater;       /* distinct keys held back */
} fake;

static int fake_answer(fake *f, const wire_request *req, wire_reply *rep)
{
    if (req->op == WIRE_OP_RESERVE && req->resolve) {
        rep->status = ESC_ENOT_FOUND;
        return 1;
    }
    if (req->op == WIRE_OP_RESERVE && strcmp(req->item_id, "silent") == 0) {
        if (strcmp(req->key, "blocked") == 0) {
            f->saw_blocked = true;
        }
        return 0;
    }
    if (req->op == WIRE_OP_RESERVE && strcmp(req->item_id, "sold-out") == 0) {
        rep->status = ESC_ESOLD_OUT;
        return 1;
    }
    rep->has_hold = true;
    rep->hold.hold_id = req->op == WIRE_OP_RESERVE ? (1ULL << 40) | ++f->next_hold : req->hold_id;
    rep->hold.segment_id = 1;
    snprintf(rep->hold.item_id, sizeof rep->hold.item_id, "%s", req->item_id);
    snprintf(rep->hold.buyer_id, sizeof rep->hold.buyer_id, "%s", req->buyer_id);
    rep->hold.qty = req->op == WIRE_OP_RESERVE ? req->qty : 1;
    rep->hold.state = req->op == WIRE_OP_CONFIRM   ? WIRE_HOLD_CONVERTED
                      : req->op == WIRE_OP_RELEASE ? WIRE_HOLD_CANCELLED
                                                   : WIRE_HOLD_HELD;
    return 1;
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
        if (rep.status == 0 && fake_answer(f, &req, &rep) == 0) {
            continue;
        }
        bool hold_back = rep.status == 0 && !f->released && strcmp(req.item_id, "later") == 0;
        if (hold_back) {
            unsigned long slot = strtoul(req.key + 1, NULL, 10); /* "l<N>" */
            assert_true(req.key[0] == 'l' && slot < DEFERRED_MAX);
            deferred *d = &f->later[slot];
            d->hdr = hdr; /* a resend: answer its latest copy */
            assert_int_equal(wire_encode_reply(&rep, d->buf, sizeof d->buf, &d->len), 0);
            if (!d->held) {
                d->held = true;
                f->nlater++;
            }
            continue;
        }
        uint8_t buf[4096];
        size_t n = 0;
        assert_int_equal(wire_encode_reply(&rep, buf, sizeof buf, &n), 0);
        (void)nnx_send(f->sock, &hdr, buf, n);
    }
}

static void fake_go_cb(uv_async_t *h)
{
    fake *f = h->data;
    f->released = true;
    for (int i = 0; i < DEFERRED_MAX; i++) {
        if (f->later[i].held) {
            /* dropped or refused when the pipe is busy: the resend gets it */
            (void)nnx_send(f->sock, &f->later[i].hdr, f->later[i].buf, f->later[i].len);
        }
    }
}

static void fake_release(fake *f)
{
    assert_int_equal(uv_async_send(&f->go), 0);
}

static void fake_stop_cb(uv_async_t *h)
{
    fake *f = h->data;
    nnx_watch_close(&f->watch, NULL);
    uv_close((uv_handle_t *)&f->go, NULL);
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
    snprintf(f->path, sizeof f->path, "/tmp/escrow-test-threaded-%ld.sock", (long)getpid());
    snprintf(f->url, sizeof f->url, "ipc://%s", f->path);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(nnx_open_rep(&f->sock), 0);
    assert_int_equal(nnx_bind(f->sock, f->url), 0);
    assert_int_equal(nnx_watch_start(&f->loop, &f->watch, f->sock, fake_ready, f), 0);
    assert_int_equal(uv_async_init(&f->loop, &f->stop, fake_stop_cb), 0);
    f->stop.data = f;
    assert_int_equal(uv_async_init(&f->loop, &f->go, fake_go_cb), 0);
    f->go.data = f;
    f->later = calloc(DEFERRED_MAX, sizeof *f->later);
    assert_non_null(f->later);
    assert_int_equal(uv_thread_create(&f->thread, fake_main, f), 0);
}

static void fake_finish(fake *f)
{
    assert_int_equal(uv_async_send(&f->stop), 0);
    assert_int_equal(uv_thread_join(&f->thread), 0);
    nnx_close(f->sock);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f->later);
    unlink(f->path);
}

/* ---- helpers ------------------------------------------------------------ */

static esc_threaded *client_for(const fake *f, uint32_t deadline_ms)
{
    esc_options o = {
        .endpoint = f->url, .tenant_id = "t1", .deadline_ms = deadline_ms, .resend_ms = 50};
    esc_threaded *t = NULL;
    assert_int_equal(esc_threaded_new(&o, &t), 0);
    assert_non_null(t);
    return t;
}

static esc_reserve_req reserve_of(const char *item, const char *key)
{
    esc_reserve_req r = {.item_id = item, .buyer_id = "b1", .qty = 1, .idempotency_key = key};
    return r;
}

/* True when fd is readable within wait_ms. */
static bool readable(int fd, int wait_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, wait_ms);
    assert_true(n >= 0);
    return n == 1 && (p.revents & POLLIN) != 0;
}

/* Polls completions (waiting on the descriptor) until n arrived; out[tag]
 * receives the completion with that tag, each tag exactly once. */
static void collect(esc_threaded *t, esc_completion *out, size_t n)
{
    bool *seen = calloc(n, sizeof *seen);
    assert_non_null(seen);
    size_t got = 0;
    esc_completion batch[64];
    while (got < n) {
        assert_true(readable(esc_threaded_fd(t), 30000));
        size_t k = esc_threaded_poll(t, batch, 64);
        assert_true(k > 0); /* readable means something waits */
        for (size_t i = 0; i < k; i++) {
            assert_true(batch[i].tag < n);
            assert_false(seen[batch[i].tag]);
            seen[batch[i].tag] = true;
            out[batch[i].tag] = batch[i];
        }
        got += k;
    }
    free(seen);
}

/* ---- tests -------------------------------------------------------------- */

static void test_new_invalid(void **state)
{
    (void)state;
    esc_threaded *t = NULL;
    esc_options o = {.endpoint = "ipc:///tmp/x", .tenant_id = "bad tenant"};
    assert_int_equal(esc_threaded_new(&o, &t), ESC_EINVAL);
    assert_int_equal(esc_threaded_new(NULL, &t), ESC_EINVAL);
    assert_int_equal(esc_threaded_new(&o, NULL), ESC_EINVAL);
    assert_null(t);
    esc_threaded_free(NULL);
    assert_int_equal(esc_threaded_fd(NULL), -1);
    assert_int_equal(esc_threaded_poll(NULL, NULL, 1), 0);
    esc_reserve_req r = reserve_of("i", "k");
    assert_int_equal(esc_threaded_submit_reserve(NULL, &r, 0, 1), ESC_EINVAL);
    assert_int_equal(esc_threaded_reserve(NULL, &r, 0, NULL), ESC_EINVAL);
}

typedef struct worker {
    esc_threaded *t;
    int id;
    int ok;
    uint64_t first_hold;
} worker;

#define WORKERS 8
#define CALLS_PER_WORKER 40

static void worker_main(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < CALLS_PER_WORKER; i++) {
        char key[32];
        snprintf(key, sizeof key, "w%d-%d", w->id, i);
        esc_reserve_req r = reserve_of("plain", key);
        esc_hold h;
        memset(&h, 0, sizeof h);
        if (esc_threaded_reserve(w->t, &r, 0, &h) != 0 || h.state != ESC_HOLD_HELD) {
            continue;
        }
        esc_hold c;
        if (esc_threaded_confirm(w->t, h.hold_id, 0, 0, &c) == 0 && c.state == ESC_HOLD_CONVERTED &&
            c.hold_id == h.hold_id) {
            w->ok++;
        }
    }
}

static void test_blocking_from_many_threads(void **state)
{
    (void)state;
    fake f;
    fake_start(&f);
    esc_threaded *t = client_for(&f, 10000);
    worker w[WORKERS];
    uv_thread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (worker){.t = t, .id = i};
        assert_int_equal(uv_thread_create(&th[i], worker_main, &w[i]), 0);
    }
    for (int i = 0; i < WORKERS; i++) {
        assert_int_equal(uv_thread_join(&th[i]), 0);
        assert_int_equal(w[i].ok, CALLS_PER_WORKER);
    }
    /* the answers of the other families, and *out untouched by a sold-out */
    esc_reserve_req r = reserve_of("sold-out", "so");
    esc_hold h = {.qty = -7};
    assert_int_equal(esc_threaded_reserve(t, &r, 0, &h), ESC_ESOLD_OUT);
    assert_int_equal(h.qty, -7);
    r = reserve_of("plain", "bad key");
    assert_int_equal(esc_threaded_reserve(t, &r, 0, &h), ESC_EINVAL);
    assert_int_equal(esc_threaded_release(t, (1ULL << 40) | 5, 0, &h), 0);
    assert_int_equal(h.state, ESC_HOLD_CANCELLED);
    assert_int_equal(esc_threaded_get(t, (1ULL << 40) | 5, 0, &h), 0);
    assert_int_equal(esc_threaded_extend(t, (1ULL << 40) | 5, 0, 0, &h), 0);
    esc_stats st;
    assert_int_equal(esc_threaded_stats(t, &st), 0);
    assert_true(st.frames_sent >= 2 * WORKERS * CALLS_PER_WORKER + 4);
    esc_cart_line lines[] = {{"a", 1}, {"sold-out", 1}};
    esc_hold holds[2];
    size_t n = 0, failed = 99;
    assert_int_equal(esc_threaded_reserve_cart(t, "b1", lines, 2, "c1", 0, 0, holds, &n, &failed),
                     ESC_ESOLD_OUT);
    assert_int_equal(failed, 1);
    lines[1].item_id = "b";
    assert_int_equal(esc_threaded_reserve_cart(t, "b1", lines, 2, "c2", 0, 0, holds, &n, &failed),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(holds[1].item_id, "b");
    esc_threaded_free(t);
    fake_finish(&f);
}

#define QUEUED 2000

static void test_queued_through_the_fd(void **state)
{
    (void)state;
    fake f;
    fake_start(&f);
    esc_threaded *t = client_for(&f, 10000);
    int fd = esc_threaded_fd(t);
    assert_true(fd >= 0);
    assert_false(readable(fd, 0)); /* nothing waits */
    esc_completion *done = calloc(QUEUED, sizeof *done);
    assert_non_null(done);
    for (uint64_t i = 0; i < QUEUED; i++) {
        char key[32]; /* copied by the submit: reused at once */
        snprintf(key, sizeof key, "q%llu", (unsigned long long)i);
        esc_reserve_req r = reserve_of(i % 10 == 3 ? "sold-out" : "plain", key);
        if (i == 7) {
            r.item_id = "not valid"; /* refused on the client's thread */
        }
        assert_int_equal(esc_threaded_submit_reserve(t, &r, 0, i), 0);
    }
    collect(t, done, QUEUED);
    assert_false(readable(fd, 0)); /* drained: no longer readable */
    assert_int_equal(esc_threaded_poll(t, done, 1), 0);
    for (uint64_t i = 0; i < QUEUED; i++) {
        int want = i == 7 ? ESC_EINVAL : i % 10 == 3 ? ESC_ESOLD_OUT : 0;
        assert_int_equal(done[i].status, want);
        assert_int_equal(done[i].has_hold, want == 0);
        if (want == 0) {
            assert_string_equal(done[i].hold.item_id, "plain");
            assert_int_equal(done[i].hold.state, ESC_HOLD_HELD);
        }
    }
    /* the other calls, and a cart into the caller's array */
    uint64_t id = done[0].hold.hold_id;
    assert_int_equal(esc_threaded_submit_confirm(t, id, 0, 0, 0), 0);
    assert_int_equal(esc_threaded_submit_release(t, id, 0, 1), 0);
    assert_int_equal(esc_threaded_submit_extend(t, id, 0, 0, 2), 0);
    assert_int_equal(esc_threaded_submit_get(t, id, 0, 3), 0);
    esc_hold holds[3];
    esc_cart_line lines[] = {{"x", 1}, {"y", 2}, {"x", 1}};
    assert_int_equal(esc_threaded_submit_reserve_cart(t, "b1", lines, 3, "cart", 0, 0, holds, 4),
                     0);
    assert_int_equal(esc_threaded_submit_reserve_cart(t, "b1", lines, 3, "cart", 0, 0, NULL, 5),
                     ESC_EINVAL);
    collect(t, done, 5);
    assert_int_equal(done[0].hold.state, ESC_HOLD_CONVERTED);
    assert_int_equal(done[1].hold.state, ESC_HOLD_CANCELLED);
    assert_int_equal(done[3].hold.hold_id, id);
    assert_int_equal(done[4].status, 0);
    assert_int_equal(done[4].nholds, 2);
    assert_string_equal(holds[0].item_id, "x");
    assert_int_equal(holds[0].qty, 2);
    assert_string_equal(holds[1].item_id, "y");
    free(done);
    esc_threaded_free(t);
    fake_finish(&f);
}

/* More calls than the engine takes in flight (ESC_CLIENT_INFLIGHT_MAX): the
 * rest wait in the client and start as room comes back; every one gets its
 * answer exactly once. The node holds its answers back until the engine is
 * full; resends (every 5 s) stand in for replies the raw socket dropped. */
#define OVER DEFERRED_MAX

static void test_backlog_above_the_maximum(void **state)
{
    (void)state;
    fake f;
    fake_start(&f);
    esc_options o = {.endpoint = f.url,
                     .tenant_id = "t1",
                     .deadline_ms = ESC_DEADLINE_MS_MAX,
                     .resend_ms = 5000};
    esc_threaded *t = NULL;
    assert_int_equal(esc_threaded_new(&o, &t), 0);
    esc_completion *done = calloc(OVER, sizeof *done);
    assert_non_null(done);
    for (uint64_t i = 0; i < OVER; i++) {
        char key[32];
        snprintf(key, sizeof key, "l%llu", (unsigned long long)i);
        esc_reserve_req r = reserve_of("later", key);
        assert_int_equal(esc_threaded_submit_reserve(t, &r, 0, i), 0);
    }
    while (f.nlater < ESC_CLIENT_INFLIGHT_MAX) {
        usleep(1000);
    }
    usleep(100000);
    assert_int_equal(f.nlater, ESC_CLIENT_INFLIGHT_MAX); /* no more got out */
    assert_false(readable(esc_threaded_fd(t), 0));       /* and none failed */
    fake_release(&f);
    collect(t, done, OVER);
    for (uint64_t i = 0; i < OVER; i++) {
        assert_int_equal(done[i].status, 0);
    }
    free(done);
    esc_threaded_free(t);
    fake_finish(&f);
}

typedef struct blocked {
    esc_threaded *t;
    int status;
} blocked;

static void blocked_main(void *arg)
{
    blocked *b = arg;
    esc_reserve_req r = reserve_of("silent", "blocked");
    b->status = esc_threaded_reserve(b->t, &r, 0, NULL);
}

/* Free with calls pending: a blocked caller gets ESC_ECLOSED at once, not
 * at its deadline; queued calls are dropped; nothing leaks (ASan). */
static void test_free_with_calls_pending(void **state)
{
    (void)state;
    fake f;
    fake_start(&f);
    esc_threaded *t = client_for(&f, 60000);
    for (uint64_t i = 0; i < 10; i++) {
        esc_reserve_req r = reserve_of("silent", "queued");
        assert_int_equal(esc_threaded_submit_reserve(t, &r, 0, i), 0);
    }
    blocked b = {.t = t, .status = 1};
    uv_thread_t th;
    assert_int_equal(uv_thread_create(&th, blocked_main, &b), 0);
    while (!f.saw_blocked) {
        usleep(1000); /* the blocking call is in flight */
    }
    esc_threaded_free(t);
    assert_int_equal(uv_thread_join(&th), 0);
    assert_int_equal(b.status, ESC_ECLOSED);
    fake_finish(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_invalid),
        cmocka_unit_test(test_blocking_from_many_threads),
        cmocka_unit_test(test_queued_through_the_fd),
        cmocka_unit_test(test_backlog_above_the_maximum),
        cmocka_unit_test(test_free_with_calls_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
