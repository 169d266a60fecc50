/*
 * async.c - the asynchronous engine behind every libescrow call.
 *
 * One raw REQ socket per client, watched on the caller's loop (nnx_watch on
 * NN_RCVFD). Each accepted call is a `call` that owns its encoded frame and
 * sits in two structures:
 *   - slots[]: the in-flight table, indexed by the low CLI_SLOT_BITS of the
 *     call's corr_id (corr_id = seq << CLI_SLOT_BITS | slot; seq grows per
 *     call and is never reused while the client lives), so a reply is matched
 *     in O(1) and a late duplicate of an answered call (other seq) is dropped;
 *   - heap[]: a min-heap on due_us, the next moment the call needs attention
 *     (resend or deadline). One uv_timer is armed for the top of the heap.
 * The nanomsg request id header carries the low 31 bits of corr_id, so even
 * a reply whose body has no corr_id (a node that could not parse the frame
 * answers ESC_EPROTO with corr_id 0) still finds its call.
 *
 * Invariants: every call is in both structures or in neither; a call's
 * callback runs exactly once, after the call left both; no callback ever
 * runs from inside an esc_async_* function.
 *
 * Raw REQ sockets drop frames silently (no connection yet, back-pressure), so
 * an unanswered frame is resent unchanged every resend_ms until its deadline.
 * That is safe because a reserve carries its idempotency key and confirm,
 * release and extend are transitions the node applies once. ESC_EBUSY and
 * ESC_EUNAVAILABLE mean "nothing was done": the call backs off and resends
 * inside its deadline. Resends space out (resend_ms, then twice, then four
 * times that) so an overloaded node is not fed ever more copies. At the deadline the result is that
 * definite answer if the call was backing off, otherwise ESC_ETIMEDOUT (outcome unknown).
 *
 * The poll handle is unreferenced and the timer runs only while calls are in
 * flight, so an idle client does not keep its host's loop alive.
 */
#include "async.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "esc_limits.h"
#include "nnx.h"
#include "req.h"
#include "wire.h"

#define CLI_SLOT_BITS 16
#define CLI_SLOT_MASK ((1u << CLI_SLOT_BITS) - 1u)
#define CLI_REQUEST_ID_MASK 0x7fffffffu
/* Table size of a new client; it doubles up to ESC_CLIENT_INFLIGHT_MAX. */
#define CLI_SLOTS_INITIAL 64u

_Static_assert(ESC_CLIENT_INFLIGHT_MAX == (1u << CLI_SLOT_BITS), "one slot per in-flight call");
_Static_assert(ESC_ID_MAX == ESC_ITEM_LEN_MAX && ESC_ID_MAX == ESC_BUYER_LEN_MAX &&
                   ESC_ID_MAX == ESC_KEY_LEN_MAX,
               "escrow.h ids and wire ids have one bound");

typedef struct call {
    uint64_t corr_id;
    int64_t deadline_us; /* monotonic */
    int64_t due_us;      /* next resend or the deadline, whichever is first */
    uint32_t heap_idx;
    uint32_t backoffs; /* ESC_EBUSY / ESC_EUNAVAILABLE answers so far */
    uint32_t sends;    /* copies nanomsg accepted */
    wire_op op;
    int64_t qty;     /* confirm: units to sell, 0 = all */
    int last_status; /* definite answer being backed off from, or 0 */
    esc_hold_cb cb;
    void *arg;   /* borrowed: the caller's */
    nnx_hdr hdr; /* request id header, the same on every resend */
    size_t len;
    uint8_t frame[]; /* the encoded Request, resent unchanged */
} call;

struct esc_async {
    uv_loop_t *loop; /* borrowed; outlives us */
    cli_opts opts;
    int sock;
    int eid;              /* the connecting endpoint, for nnx_reconnect */
    int64_t last_sent_us; /* a frame nanomsg accepted */
    int64_t last_reply_us;
    int64_t last_reconnect_us;
    nnx_watch watch;  /* embedded; we are freed from the last close_cb */
    uv_timer_t timer; /* embedded */
    int handles_open;
    bool closing;
    bool timer_armed;
    int64_t timer_due_us;
    esc_close_cb close_cb;
    void *close_arg; /* borrowed */
    uint64_t seq;
    uint32_t cap;         /* entries in slots, free_slots and heap */
    call **slots;         /* owned; each non-NULL entry owned */
    uint32_t *free_slots; /* owned; a stack of free slot indices */
    uint32_t nfree;
    call **heap; /* owned array of borrowed pointers (the calls live in slots) */
    uint32_t nheap;
};

static void timer_cb(uv_timer_t *t);

/* ---- the min-heap on due_us -------------------------------------------- */

static void heap_set(esc_async *a, uint32_t i, call *c)
{
    a->heap[i] = c;
    c->heap_idx = i;
}

static void heap_up(esc_async *a, uint32_t i)
{
    call *c = a->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (a->heap[parent]->due_us <= c->due_us) {
            break;
        }
        heap_set(a, i, a->heap[parent]);
        i = parent;
    }
    heap_set(a, i, c);
}

static void heap_down(esc_async *a, uint32_t i)
{
    call *c = a->heap[i];
    for (;;) {
        uint32_t m = 2 * i + 1;
        if (m >= a->nheap) {
            break;
        }
        if (m + 1 < a->nheap && a->heap[m + 1]->due_us < a->heap[m]->due_us) {
            m++;
        }
        if (a->heap[m]->due_us >= c->due_us) {
            break;
        }
        heap_set(a, i, a->heap[m]);
        i = m;
    }
    heap_set(a, i, c);
}

static void heap_fix(esc_async *a, call *c)
{
    uint32_t i = c->heap_idx;
    if (i > 0 && a->heap[(i - 1) / 2]->due_us > c->due_us) {
        heap_up(a, i);
    } else {
        heap_down(a, i);
    }
}

static void heap_push(esc_async *a, call *c)
{
    heap_set(a, a->nheap++, c);
    heap_up(a, c->heap_idx);
}

static void heap_remove(esc_async *a, call *c)
{
    call *last = a->heap[--a->nheap];
    if (last != c) {
        heap_set(a, c->heap_idx, last);
        heap_fix(a, last);
    }
}

/* ---- the in-flight table ----------------------------------------------- */

/* Grows every table together. A failed realloc leaves the old, still
 * consistent capacity (a larger array than cap is harmless). */
static int slots_grow(esc_async *a)
{
    if (a->cap >= ESC_CLIENT_INFLIGHT_MAX) {
        return ESC_EBUSY;
    }
    uint32_t ncap = a->cap == 0 ? CLI_SLOTS_INITIAL : a->cap * 2;
    if (ncap > ESC_CLIENT_INFLIGHT_MAX) {
        ncap = ESC_CLIENT_INFLIGHT_MAX;
    }
    call **slots = realloc(a->slots, ncap * sizeof *slots);
    if (slots == NULL) {
        return ESC_ENOMEM;
    }
    a->slots = slots;
    uint32_t *free_slots = realloc(a->free_slots, ncap * sizeof *free_slots);
    if (free_slots == NULL) {
        return ESC_ENOMEM;
    }
    a->free_slots = free_slots;
    call **heap = realloc(a->heap, ncap * sizeof *heap);
    if (heap == NULL) {
        return ESC_ENOMEM;
    }
    a->heap = heap;
    /* Push high indices first so the lowest free slot is taken next. */
    for (uint32_t i = ncap; i > a->cap; i--) {
        a->slots[i - 1] = NULL;
        a->free_slots[a->nfree++] = i - 1;
    }
    a->cap = ncap;
    return 0;
}

static int slot_take(esc_async *a, uint32_t *slot)
{
    if (a->nfree == 0) {
        int rc = slots_grow(a);
        if (rc < 0) {
            return rc;
        }
    }
    *slot = a->free_slots[--a->nfree];
    return 0;
}

static void slot_put(esc_async *a, uint32_t slot)
{
    a->slots[slot] = NULL;
    a->free_slots[a->nfree++] = slot;
}

static call *find_call(esc_async *a, uint64_t corr_id, const nnx_hdr *hdr)
{
    if (corr_id != 0) {
        uint32_t slot = (uint32_t)(corr_id & CLI_SLOT_MASK);
        call *c = slot < a->cap ? a->slots[slot] : NULL;
        return c != NULL && c->corr_id == corr_id ? c : NULL;
    }
    /* No corr_id in the body: the node could not parse our frame. The
     * transport's request id still names the call. */
    uint32_t id = nnx_hdr_get_request_id(hdr);
    uint32_t slot = id & CLI_SLOT_MASK;
    call *c = id != 0 && slot < a->cap ? a->slots[slot] : NULL;
    return c != NULL && (c->corr_id & CLI_REQUEST_ID_MASK) == id ? c : NULL;
}

/* ---- sending, timing, completing --------------------------------------- */

static void arm_timer(esc_async *a)
{
    if (a->closing) {
        return;
    }
    if (a->nheap == 0) {
        if (a->timer_armed) {
            (void)uv_timer_stop(&a->timer); /* always 0 for an initialised timer */
            a->timer_armed = false;
        }
        return;
    }
    int64_t due = a->heap[0]->due_us;
    if (a->timer_armed && a->timer_due_us <= due) {
        return; /* fires earlier; timer_cb re-arms */
    }
    int64_t now = esc_mono_us();
    uint64_t delay_ms = due > now ? (uint64_t)((due - now + 999) / 1000) : 0;
    int rc = uv_timer_start(&a->timer, timer_cb, delay_ms, 0);
    if (rc != 0) {
        cli_log(&a->opts, 0, "ESC-CLIENT-TIMER uv_timer_start: %s", uv_strerror(rc));
        return;
    }
    a->timer_armed = true;
    a->timer_due_us = due;
}

/* Sends (or resends) c's frame and schedules its next attention. A frame
 * nanomsg would not queue never left, so it is retried soon, and the
 * definite answer we may be backing off from still stands. */
/* nanomsg 1.1.5 can wedge a connecting endpoint after the node was killed
 * and restarted on the same port: sends are refused forever (or accepted
 * and never answered) while a fresh connection works at once. When nothing
 * could be sent, or nothing came back, for a while, connect afresh (at most
 * once per CLI_RECONNECT_US). Resent frames are idempotent, so replies lost
 * with the old connection cost nothing but a retry. */
static void maybe_reconnect(esc_async *a, call *c, int64_t now)
{
    bool unsendable = now - a->last_sent_us > CLI_RECONNECT_US;
    bool unanswered = c->sends > 1 && now - a->last_reply_us > 3 * CLI_RECONNECT_US;
    if ((!unsendable && !unanswered) || now - a->last_reconnect_us < CLI_RECONNECT_US) {
        return;
    }
    a->last_reconnect_us = now;
    int rc = nnx_reconnect(a->sock, &a->eid, a->opts.endpoint);
    cli_log(&a->opts, 1, "ESC-CLIENT-RECONNECT endpoint=%s (%s) %s", a->opts.endpoint,
            unsendable ? "nothing could be sent" : "nothing came back",
            rc == 0 ? "reconnecting" : esc_err_name(rc));
}

static void send_frame(esc_async *a, call *c, int64_t now)
{
    uint32_t wait_ms = a->opts.resend_ms;
    maybe_reconnect(a, c, now);
    int rc = nnx_send(a->sock, &c->hdr, c->frame, c->len);
    if (rc == 0) {
        a->last_sent_us = now;
        c->last_status = 0;
        /* Each resend waits twice as long, up to CLI_RESEND_FACTOR_MAX times
         * resend_ms: a node slowed by load is not fed ever more copies. */
        uint32_t factor = c->sends < 2 ? 1u << c->sends : CLI_RESEND_FACTOR_MAX;
        wait_ms *= factor;
        if (c->sends < UINT32_MAX) {
            c->sends++;
        }
    } else {
        if (rc != ESC_EBUSY) {
            cli_log(&a->opts, 1, "ESC-CLIENT-SEND corr=%llu err=%s", (unsigned long long)c->corr_id,
                    esc_err_name(rc));
        }
        if (wait_ms > CLI_UNSENT_RETRY_MS) {
            wait_ms = CLI_UNSENT_RETRY_MS;
        }
    }
    int64_t due = now + (int64_t)wait_ms * 1000;
    c->due_us = due < c->deadline_us ? due : c->deadline_us;
    heap_fix(a, c);
}

/* Takes c out of the tables, frees it and runs its callback (last: the
 * callback may submit new calls or close the client). */
static void finish(esc_async *a, call *c, int status, const esc_hold *hold)
{
    heap_remove(a, c);
    slot_put(a, (uint32_t)(c->corr_id & CLI_SLOT_MASK));
    if (a->nheap == 0) {
        arm_timer(a); /* stops it: an idle client must not keep the loop alive */
    }
    esc_hold_cb cb = c->cb;
    void *arg = c->arg;
    free(c);
    cb(status, hold, arg);
}

/* Schedules a resend after the node said "nothing done, try again". Returns
 * false when the backoff would pass the deadline: the answer is final. */
static bool backoff(esc_async *a, call *c, int status)
{
    uint32_t shift = c->backoffs < 6 ? c->backoffs : 6;
    uint32_t ms = CLI_BACKOFF_MS_MIN << shift;
    if (ms > CLI_BACKOFF_MS_MAX) {
        ms = CLI_BACKOFF_MS_MAX;
    }
    /* Jitter from the call's own bits: callers backing off together spread. */
    uint64_t h = (c->corr_id + c->backoffs) * 0x9e3779b97f4a7c15ULL;
    ms += (uint32_t)((h >> 33) % (ms / 2 + 1));
    int64_t due = esc_mono_us() + (int64_t)ms * 1000;
    if (due >= c->deadline_us) {
        return false;
    }
    if (c->backoffs < UINT32_MAX) {
        c->backoffs++;
    }
    c->last_status = status;
    c->due_us = due;
    heap_fix(a, c);
    arm_timer(a);
    return true;
}

static void timer_cb(uv_timer_t *t)
{
    esc_async *a = t->data;
    a->timer_armed = false;
    int64_t now = esc_mono_us();
    /* Ends: each pass finishes a call or moves its due_us past now. */
    while (!a->closing && a->nheap > 0 && a->heap[0]->due_us <= now) {
        call *c = a->heap[0];
        if (now >= c->deadline_us) {
            finish(a, c, c->last_status != 0 ? c->last_status : ESC_ETIMEDOUT, NULL);
        } else {
            send_frame(a, c, now);
        }
    }
    arm_timer(a);
}

/* Decodes one reply (msg is transferred: freed here) and completes its call. */
static void on_reply(esc_async *a, void *msg, size_t len, const nnx_hdr *hdr)
{
    wire_reply rep;
    rep.segs = NULL;
    rep.segs_cap = 0;
    rep.route = NULL;
    rep.hb = NULL;
    int rc = wire_decode_reply(msg, len, &rep);
    nnx_free(msg);
    if (rc < 0) {
        cli_log(&a->opts, 1, "ESC-CLIENT-BADREPLY bytes=%zu err=%s", len, esc_err_name(rc));
        return;
    }
    call *c = find_call(a, rep.corr_id, hdr);
    if (c == NULL) {
        cli_log(&a->opts, 3, "ESC-CLIENT-LATE corr=%llu status=%s (dropped)",
                (unsigned long long)rep.corr_id, esc_err_name(rep.status));
        return;
    }
    int status = cli_reply_status(rep.status, rep.has_hold);
    if (status == ESC_ENOT_HELD && c->sends > 1 && rep.has_hold &&
        cli_goal_reached(c->op, c->qty, &rep.hold)) {
        status = 0; /* an earlier copy of this very call did it */
    }
    if ((status == ESC_EBUSY || status == ESC_EUNAVAILABLE) && backoff(a, c, status)) {
        return;
    }
    esc_hold hold;
    if (rep.has_hold) {
        cli_hold_from_wire(&hold, &rep.hold);
    }
    finish(a, c, status, rep.has_hold ? &hold : NULL);
}

static void ready_cb(nnx_watch *w, void *arg)
{
    (void)w;
    esc_async *a = arg;
    /* Bounded: NN_RCVFD stays readable while more replies are queued. */
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && !a->closing; i++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        hdr.len = 0;
        int rc = nnx_recv(a->sock, &msg, &len, &hdr);
        if (rc < 0) {
            cli_log(&a->opts, 1, "ESC-CLIENT-RECV err=%s", esc_err_name(rc));
            return;
        }
        if (msg == NULL) {
            return;
        }
        a->last_reply_us = esc_mono_us();
        on_reply(a, msg, len, &hdr);
    }
}

/* ---- life cycle -------------------------------------------------------- */

/* Runs from the last close callback: fails what is pending, frees, reports. */
static void close_done(esc_async *a)
{
    while (a->nheap > 0) {
        finish(a, a->heap[a->nheap - 1], ESC_ECLOSED, NULL);
    }
    nnx_close(a->sock);
    esc_close_cb cb = a->close_cb;
    void *arg = a->close_arg;
    free(a->slots);
    free(a->free_slots);
    free(a->heap);
    free(a);
    if (cb != NULL) {
        cb(arg);
    }
}

static void handle_closed(esc_async *a)
{
    if (--a->handles_open == 0) {
        close_done(a);
    }
}

static void timer_closed(uv_handle_t *h)
{
    handle_closed(h->data);
}

static void watch_closed(uv_handle_t *h)
{
    nnx_watch *w = h->data;
    handle_closed(w->arg);
}

static void free_unstarted(esc_async *a)
{
    nnx_close(a->sock);
    free(a->slots);
    free(a->free_slots);
    free(a->heap);
    free(a);
}

/* Socket, connection, watcher, timer. On failure after the watcher started,
 * the client is freed from the loop (a closing handle must outlive close). */
static int start_io(esc_async *a)
{
    int rc = nnx_open_req(&a->sock);
    if (rc < 0) {
        return rc;
    }
    rc = nnx_connect(a->sock, a->opts.endpoint, &a->eid);
    a->last_sent_us = a->last_reply_us = a->last_reconnect_us = esc_mono_us();
    if (rc < 0) {
        return rc;
    }
    rc = nnx_watch_start(a->loop, &a->watch, a->sock, ready_cb, a);
    if (rc < 0) {
        return rc;
    }
    uv_unref((uv_handle_t *)&a->watch.poll);
    a->handles_open = 1;
    if (uv_timer_init(a->loop, &a->timer) != 0) {
        return ESC_EIO;
    }
    a->timer.data = a;
    a->handles_open = 2;
    return 0;
}

int esc_async_new(uv_loop_t *loop, const esc_options *opts, esc_async **out)
{
    if (loop == NULL || out == NULL) {
        return ESC_EINVAL;
    }
    cli_opts o;
    int rc = cli_opts_init(&o, opts);
    if (rc < 0) {
        return rc;
    }
    esc_async *a = calloc(1, sizeof *a);
    if (a == NULL) {
        return ESC_ENOMEM;
    }
    a->loop = loop;
    a->opts = o;
    a->sock = -1;
    a->seq = 1;
    rc = slots_grow(a);
    if (rc == 0) {
        rc = start_io(a);
    }
    if (rc == 0) {
        *out = a;
        return 0;
    }
    if (a->handles_open == 1) {
        a->closing = true;
        nnx_watch_close(&a->watch, watch_closed); /* frees a from the loop */
    } else if (a->sock >= 0 && uv_is_closing((uv_handle_t *)&a->watch.poll)) {
        /* nnx_watch_start closed a half-started poll handle; libuv still
         * owns its memory until the next loop turn, so we keep (leak) the
         * struct rather than free memory the loop will touch. */
        nnx_close(a->sock);
    } else {
        free_unstarted(a);
    }
    return rc;
}

void esc_async_close(esc_async *a, esc_close_cb close_cb, void *arg)
{
    if (a == NULL || a->closing) {
        return;
    }
    a->closing = true;
    a->close_cb = close_cb;
    a->close_arg = arg;
    (void)uv_timer_stop(&a->timer);
    uv_close((uv_handle_t *)&a->timer, timer_closed);
    nnx_watch_close(&a->watch, watch_closed);
}

size_t cli_async_room(const esc_async *a)
{
    return a->closing ? 0 : ESC_CLIENT_INFLIGHT_MAX - a->nheap;
}

bool cli_async_closing(const esc_async *a)
{
    return a->closing;
}

const cli_opts *cli_async_opts(const esc_async *a)
{
    return &a->opts;
}

/* ---- calls ------------------------------------------------------------- */

static int submit(esc_async *a, wire_request *req, uint32_t deadline_ms, esc_hold_cb cb, void *arg)
{
    uint32_t dl_ms;
    if (cb == NULL || cli_opts_deadline(&a->opts, deadline_ms, &dl_ms) < 0) {
        return ESC_EINVAL;
    }
    if (a->closing) {
        return ESC_ECLOSED;
    }
    uint32_t slot;
    int rc = slot_take(a, &slot);
    if (rc < 0) {
        return rc;
    }
    req->corr_id = (a->seq++ << CLI_SLOT_BITS) | slot;
    uint8_t buf[CLI_FRAME_BYTES_MAX];
    size_t len = 0;
    rc = wire_encode_request(req, buf, sizeof buf, &len);
    call *c = rc == 0 ? malloc(sizeof *c + len) : NULL;
    if (c == NULL) {
        slot_put(a, slot);
        return rc == 0 ? ESC_ENOMEM : ESC_EINVAL;
    }
    memset(c, 0, sizeof *c);
    c->corr_id = req->corr_id;
    c->op = req->op;
    c->qty = req->qty;
    c->cb = cb;
    c->arg = arg;
    nnx_hdr_request_id(&c->hdr, (uint32_t)(c->corr_id & CLI_REQUEST_ID_MASK));
    c->len = len;
    memcpy(c->frame, buf, len);
    int64_t now = esc_mono_us();
    c->deadline_us = now + (int64_t)dl_ms * 1000;
    c->due_us = now;
    a->slots[slot] = c;
    heap_push(a, c);
    send_frame(a, c, now);
    arm_timer(a);
    return 0;
}

int esc_async_reserve(esc_async *a, const esc_reserve_req *req, uint32_t deadline_ms,
                      esc_hold_cb cb, void *arg)
{
    if (a == NULL) {
        return ESC_EINVAL;
    }
    wire_request w;
    int rc = cli_req_reserve(&w, a->opts.tenant_id, req);
    if (rc < 0) {
        return rc;
    }
    return submit(a, &w, deadline_ms, cb, arg);
}

static int submit_hold_op(esc_async *a, wire_op op, uint64_t hold_id, int64_t qty, uint32_t ttl_ms,
                          uint32_t deadline_ms, esc_hold_cb cb, void *arg)
{
    if (a == NULL) {
        return ESC_EINVAL;
    }
    wire_request w;
    int rc = cli_req_hold(&w, a->opts.tenant_id, op, hold_id, qty, ttl_ms);
    if (rc < 0) {
        return rc;
    }
    return submit(a, &w, deadline_ms, cb, arg);
}

int esc_async_confirm(esc_async *a, uint64_t hold_id, int64_t qty, uint32_t deadline_ms,
                      esc_hold_cb cb, void *arg)
{
    return submit_hold_op(a, WIRE_OP_CONFIRM, hold_id, qty, 0, deadline_ms, cb, arg);
}

int esc_async_release(esc_async *a, uint64_t hold_id, uint32_t deadline_ms, esc_hold_cb cb,
                      void *arg)
{
    return submit_hold_op(a, WIRE_OP_RELEASE, hold_id, 0, 0, deadline_ms, cb, arg);
}

int esc_async_extend(esc_async *a, uint64_t hold_id, uint32_t ttl_ms, uint32_t deadline_ms,
                     esc_hold_cb cb, void *arg)
{
    return submit_hold_op(a, WIRE_OP_EXTEND, hold_id, 0, ttl_ms, deadline_ms, cb, arg);
}

int esc_async_get(esc_async *a, uint64_t hold_id, uint32_t deadline_ms, esc_hold_cb cb, void *arg)
{
    return submit_hold_op(a, WIRE_OP_GET, hold_id, 0, 0, deadline_ms, cb, arg);
}
