/*
 * async.c - the asynchronous engine behind every libescrow call.
 *
 * Sockets ("conns"): raw REQ sockets watched on the caller's loop (nnx_watch
 * on NN_RCVFD). conns[0] is the segment node (single-node mode) or the
 * coordinator (routing mode); in routing mode conns[1 + i] is the node at
 * endpoint slot i of the route cache (route.h), opened on first use, at most
 * CLI_NODES_MAX of them. Routing mode also has a SUB socket on the
 * coordinator's route stream when esc_options.routes is given.
 *
 * Each accepted call is a `call` that owns its encoded frame and sits in two
 * structures:
 *   - slots[]: the in-flight table, indexed by the low CLI_SLOT_BITS of the
 *     call's corr_id (corr_id = seq << CLI_SLOT_BITS | slot; seq grows and is
 *     never reused while the client lives), so a reply is matched in O(1) and
 *     a late duplicate of an answered call (other seq) is dropped;
 *   - heap[]: a min-heap on due_us, the next moment the call needs attention
 *     (resend, deadline, or a routing step). One uv_timer is armed for the
 *     top of the heap.
 * The nanomsg request id header carries the low 31 bits of corr_id, so even
 * a reply whose body has no corr_id (a node that could not parse the frame
 * answers ESC_EPROTO with corr_id 0) still finds its call.
 *
 * A call is in one of three phases: SENT (its frame is out on `target` and
 * is resent unchanged every resend_ms), PARKED (routing mode: it waits for a
 * route fetch, the fetch rate limit, or its first routing step) or DONE (its
 * answer is known and is delivered from the timer, because no callback may
 * run inside an esc_async_* function). In routing mode, a definite
 * "nothing done" answer (SEGMENT_EMPTY, NOT_OWNER, FENCED) sends the call
 * through a routing step: a new corr_id (same slot) and a frame re-encoded
 * with the new segment hint and the same idempotency key; replies to the old
 * frame are then late duplicates and dropped. A call whose answer is not
 * known (in flight) never changes segment, because its first segment may
 * have committed; when the route gives its segment a new owner, the same
 * frame goes to the new owner. Route fetches (RouteReq) are calls too (kind
 * FETCH, to conns[0]); the calls waiting for one are linked to it.
 *
 * A reserve's "no" is given only once no copy of its frames can still
 * reserve: segments where a copy may have gone unanswered are resolved
 * first (settle), in both modes.
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
 * times that) so an overloaded node is not fed ever more copies. At the
 * deadline the result is that definite answer if the call was backing off,
 * otherwise ESC_ETIMEDOUT (outcome unknown).
 *
 * The poll handles are unreferenced and the timer runs only while calls are
 * in flight, so an idle client does not keep its host's loop alive.
 */
#include "async.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "esc_limits.h"
#include "nnx.h"
#include "req.h"
#include "route.h"
#include "wire.h"

#define CLI_SLOT_BITS 16
#define CLI_SLOT_MASK ((1u << CLI_SLOT_BITS) - 1u)
#define CLI_REQUEST_ID_MASK 0x7fffffffu
/* Table size of a new client; it doubles up to ESC_CLIENT_INFLIGHT_MAX. */
#define CLI_SLOTS_INITIAL 64u
/* conns[0] plus one per endpoint slot of the route cache. */
#define CLI_CONNS_MAX (1u + CLI_NODES_MAX)
/* Route fetches in flight at once (one per item or segment looked up);
 * calls needing more wait CLI_ROUTE_REFETCH_US and try again. */
#define CLI_FETCHES_MAX 256u

_Static_assert(ESC_CLIENT_INFLIGHT_MAX == (1u << CLI_SLOT_BITS), "one slot per in-flight call");
_Static_assert(ESC_ID_MAX == ESC_ITEM_LEN_MAX && ESC_ID_MAX == ESC_BUYER_LEN_MAX &&
                   ESC_ID_MAX == ESC_KEY_LEN_MAX,
               "escrow.h ids and wire ids have one bound");
_Static_assert(CLI_ENDPOINT_LEN_MAX == ESC_ENDPOINT_LEN_MAX, "one bound for endpoints");

enum { CALL_USER, CALL_FETCH };
enum { PH_SENT, PH_PARKED, PH_DONE };

typedef struct conn {
    esc_async *a; /* borrowed back pointer */
    int sock;
    int eid; /* the connecting endpoint, for nnx_reconnect */
    char url[CLI_ENDPOINT_LEN_MAX + 1];
    nnx_watch watch;      /* embedded; the conn is freed after the last close_cb */
    uint32_t calls;       /* calls whose frame is out on this socket */
    int64_t last_sent_us; /* a frame nanomsg accepted */
    int64_t last_reply_us;
    int64_t last_reconnect_us;
} conn;

/* Stray segments one reserve remembers (it tries at most a few segments). */
#define CLI_STRAYS_MAX 8

typedef struct call call;
struct call {
    uint64_t corr_id;
    int64_t deadline_us; /* monotonic */
    int64_t due_us;      /* next resend, routing step or the deadline */
    uint32_t heap_idx;
    uint32_t backoffs; /* ESC_EBUSY / ESC_EUNAVAILABLE answers so far */
    uint32_t sends;    /* copies of the current frame nanomsg accepted */
    uint8_t kind;      /* CALL_USER / CALL_FETCH */
    uint8_t phase;     /* PH_* */
    wire_op op;
    int64_t qty;     /* confirm: units to sell, 0 = all */
    int last_status; /* definite answer being backed off from (or to give at the deadline), or 0 */
    esc_hold_cb cb;  /* CALL_USER */
    void *arg;       /* borrowed: the caller's */
    conn *target;    /* borrowed; where the frame is out (PH_SENT), else NULL */
    /* routing mode */
    uint64_t target_seg; /* the segment the frame is for */
    uint64_t hash;       /* reserve: cli_route_hash(tenant, item, buyer) */
    uint32_t empties;    /* reserve: SEGMENT_EMPTY answers so far */
    uint32_t answers;    /* replies to the current frame (to any of its copies) */
    /* reserve: a copy of the current frame went to an owner it then left
     * unanswered (in_doubt) */
    bool doubt;
    /* reserve: segments (0: the node, single-node mode) a frame of this call
     * went to in doubt; each is resolved before a "no" (settle) */
    uint64_t strays[CLI_STRAYS_MAX];
    uint8_t nstrays;
    bool strays_lost; /* more than CLI_STRAYS_MAX: a "no" becomes unknown */
    bool resolving;   /* the frame out is a resolve; verdict is the "no" to give */
    int verdict;
    call *fetch;         /* borrowed: the route fetch it waits for */
    call *wprev, *wnext; /* in fetch->waiters */
    call *waiters;       /* CALL_FETCH: calls waiting for it (borrowed) */
    call *fprev, *fnext; /* CALL_FETCH: in esc_async.fetches */
    wire_request *req;   /* owned; routing mode: re-encoded when the call moves */
    nnx_hdr hdr;         /* request id header, the same on every resend */
    size_t len;
    uint8_t *frame; /* owned: the encoded Request, resent unchanged */
};

struct esc_async {
    uv_loop_t *loop; /* borrowed; outlives us */
    cli_opts opts;
    conn *conns[CLI_CONNS_MAX]; /* owned */
    int sub;                    /* routes SUB socket, -1 without */
    nnx_watch sub_watch;        /* embedded */
    bool leaked;                /* sub_watch half-started: never freed */
    uv_timer_t timer;           /* embedded */
    int handles_open;           /* we are freed from the last close_cb */
    bool closing;
    bool in_api; /* inside an esc_async_* function: answers wait for the timer */
    bool timer_armed;
    /* Work due now (a call answered inside an esc_async_* function, e.g. a
     * cached SOLD_OUT) runs from this idle handle on the next loop turn, not
     * from a 0 ms timer: libuv 1.44 runs a 0 ms timer started inside a timer
     * callback again in the same pass, so a caller that reserves again from
     * its callback would spin there forever and starve every socket. */
    uv_idle_t idle;
    bool idle_inited;
    bool idle_on;
    int64_t timer_due_us;
    esc_close_cb close_cb;
    void *close_arg; /* borrowed */
    uint64_t seq;
    uint64_t attempt_seed; /* random: attempt numbers differ between clients */
    uint32_t cap;          /* entries in slots, free_slots and heap */
    call **slots;          /* owned; each non-NULL entry owned */
    uint32_t *free_slots;  /* owned; a stack of free slot indices */
    uint32_t nfree;
    call **heap; /* owned array of borrowed pointers (the calls live in slots) */
    uint32_t nheap;
    cli_route_cache *routes; /* owned; routing mode */
    wire_route *scratch;     /* owned; routing mode: decoding room for one route */
    call *fetches;           /* borrowed list of CALL_FETCH calls */
    uint32_t nfetches;
    esc_stats stats;
};

static void timer_cb(uv_timer_t *t);
static void idle_cb(uv_idle_t *h);
static void route_step(esc_async *a, call *c, int64_t now);
static void fetch_done(esc_async *a, call *f, int status);

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

/* Reschedules c at due, never past its deadline. */
static void set_due(esc_async *a, call *c, int64_t due)
{
    c->due_us = due < c->deadline_us ? due : c->deadline_us;
    heap_fix(a, c);
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
        if (a->idle_on) {
            (void)uv_idle_stop(&a->idle); /* always 0 */
            a->idle_on = false;
        }
        return;
    }
    int64_t due = a->heap[0]->due_us;
    if (a->timer_armed && a->timer_due_us <= due) {
        return; /* fires earlier; timer_cb re-arms */
    }
    int64_t now = esc_mono_us();
    if (due <= now) {
        if (!a->idle_on) {
            int rc = uv_idle_start(&a->idle, idle_cb);
            if (rc != 0) {
                cli_log(&a->opts, 0, "ESC-CLIENT-TIMER uv_idle_start: %s", uv_strerror(rc));
                return;
            }
            a->idle_on = true;
        }
        return;
    }
    uint64_t delay_ms = (uint64_t)((due - now + 999) / 1000);
    int rc = uv_timer_start(&a->timer, timer_cb, delay_ms, 0);
    if (rc != 0) {
        cli_log(&a->opts, 0, "ESC-CLIENT-TIMER uv_timer_start: %s", uv_strerror(rc));
        return;
    }
    a->timer_armed = true;
    a->timer_due_us = due;
}

/* nanomsg 1.1.5 can wedge a connecting endpoint after the node was killed
 * and restarted on the same port: sends are refused forever (or accepted
 * and never answered) while a fresh connection works at once. When nothing
 * could be sent, or nothing came back, for a while, connect afresh (at most
 * once per CLI_RECONNECT_US). Resent frames are idempotent, so replies lost
 * with the old connection cost nothing but a retry. */
static void maybe_reconnect(esc_async *a, conn *k, const call *c, int64_t now)
{
    bool unsendable = now - k->last_sent_us > CLI_RECONNECT_US;
    bool unanswered = c->sends > 1 && now - k->last_reply_us > 3 * CLI_RECONNECT_US;
    if ((!unsendable && !unanswered) || now - k->last_reconnect_us < CLI_RECONNECT_US) {
        return;
    }
    k->last_reconnect_us = now;
    int rc = nnx_reconnect(k->sock, &k->eid, k->url);
    cli_log(&a->opts, 1, "ESC-CLIENT-RECONNECT endpoint=%s (%s) %s", k->url,
            unsendable ? "nothing could be sent" : "nothing came back",
            rc == 0 ? "reconnecting" : esc_err_name(rc));
}

/* Sends (or resends) c's frame to c->target and schedules its next
 * attention. A frame nanomsg would not queue never left, so it is retried
 * soon, and the definite answer we may be backing off from still stands. */
static void send_frame(esc_async *a, call *c, int64_t now)
{
    conn *k = c->target;
    uint32_t wait_ms = a->opts.resend_ms;
    maybe_reconnect(a, k, c, now);
    int rc = nnx_send(k->sock, &c->hdr, c->frame, c->len);
    if (rc == 0) {
        k->last_sent_us = now;
        a->stats.frames_sent++;
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
    set_due(a, c, now + (int64_t)wait_ms * 1000);
}

static void unwait(call *c)
{
    call *f = c->fetch;
    if (f == NULL) {
        return;
    }
    *(c->wprev != NULL ? &c->wprev->wnext : &f->waiters) = c->wnext;
    if (c->wnext != NULL) {
        c->wnext->wprev = c->wprev;
    }
    c->fetch = c->wprev = c->wnext = NULL;
}

static void untarget(call *c)
{
    if (c->target != NULL) {
        c->target->calls--;
        c->target = NULL;
    }
}

/* Takes c out of the tables and frees it (no callback). */
static void call_free(esc_async *a, call *c)
{
    heap_remove(a, c);
    slot_put(a, (uint32_t)(c->corr_id & CLI_SLOT_MASK));
    unwait(c);
    untarget(c);
    if (a->nheap == 0) {
        arm_timer(a); /* stops it: an idle client must not keep the loop alive */
    }
    free(c->req);
    free(c->frame);
    free(c);
}

static void resolve_next(esc_async *a, call *c, int64_t now);

/* Takes c out of the tables, frees it and runs its callback (last: the
 * callback may submit new calls or close the client). */
static void deliver(esc_async *a, call *c, int status, const esc_hold *hold)
{
    esc_hold_cb cb = c->cb;
    void *arg = c->arg;
    call_free(a, c);
    cb(status, hold, arg);
}

/* True if a copy of c's current frame may be unanswered: more copies went
 * out than replies came back, or the frame left an owner that never
 * answered it (move_to_owner). */
static bool in_doubt(const call *c)
{
    return c->doubt || c->sends > c->answers;
}

/* Remembers the segment of c's current frame if it is in doubt. */
static void note_stray(call *c)
{
    if (c->op != WIRE_OP_RESERVE || !in_doubt(c)) {
        return;
    }
    for (uint8_t i = 0; i < c->nstrays; i++) {
        if (c->strays[i] == c->target_seg) {
            return;
        }
    }
    if (c->nstrays < CLI_STRAYS_MAX) {
        c->strays[c->nstrays++] = c->target_seg;
    } else {
        c->strays_lost = true; /* one we cannot ask: the answer can only be "unknown" */
    }
}

/* A reserve about to answer "no" while a copy of one of its frames may
 * still be unanswered: that copy may have reserved already, or may yet
 * reach its node and reserve after the "no" (found by chaos/, seeds 350359
 * and 683027: a slow link; a node killed after COMMIT). So before the "no"
 * the call resolves each such segment (resolve_next): the segment's owner
 * voids the call's attempt (seg_void.h), so no copy reserves afterwards,
 * and answers the hold the key has, from memory or the database. A hold is
 * then the answer; NOT_FOUND everywhere makes the "no" true. Without time
 * to ask, the outcome is unknown: ESC_ETIMEDOUT (retry with the same key).
 * Returns true if the call goes on; else *status is the answer to give. */
static bool settle(esc_async *a, call *c, int *status, const esc_hold *hold)
{
    if (c->kind != CALL_USER || c->op != WIRE_OP_RESERVE || hold != NULL) {
        return false;
    }
    if (c->resolving) {
        /* the deadline, or an answer that settles nothing: unknown */
        if (*status != ESC_EIDEMPOTENCY_MISMATCH && *status != ESC_ECLOSED) {
            *status = ESC_ETIMEDOUT;
        }
        return false;
    }
    if (*status >= 0 || *status == ESC_ETIMEDOUT || *status == ESC_ECLOSED) {
        return false; /* not a "no": the outcome is unknown anyway */
    }
    note_stray(c);
    if (c->nstrays == 0 && !c->strays_lost) {
        return false;
    }
    if (c->strays_lost) {
        *status = ESC_ETIMEDOUT;
        return false;
    }
    c->resolving = true;
    c->verdict = *status;
    c->req->resolve = true;
    unwait(c);
    untarget(c);
    c->phase = PH_PARKED;
    resolve_next(a, c, esc_mono_us());
    return true;
}

/* Delivers c's answer, unless a "no" must wait for its strays (settle). */
static void finish(esc_async *a, call *c, int status, const esc_hold *hold)
{
    if (settle(a, c, &status, hold)) {
        return;
    }
    deliver(a, c, status, hold);
}

/* The answer of user call c is known: deliver it now, or from the timer
 * when we are inside an esc_async_* function. */
static void complete(esc_async *a, call *c, int status)
{
    if (!a->in_api) {
        finish(a, c, status, NULL);
        return;
    }
    unwait(c);
    untarget(c);
    c->phase = PH_DONE;
    c->last_status = status;
    c->due_us = esc_mono_us();
    heap_fix(a, c);
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

/* Encodes req (borrowed) as c's frame under c's corr_id. Returns 0,
 * ESC_EINVAL (unencodable) or ESC_ENOMEM; c keeps its old frame on error. */
static int call_encode(const esc_async *a, call *c, wire_request *req)
{
    uint8_t buf[CLI_FRAME_BYTES_MAX];
    size_t len = 0;
    req->corr_id = c->corr_id;
    req->credential = a->opts.credential; /* "" = none, never the process's */
    if (wire_encode_request(req, buf, sizeof buf, &len) < 0) {
        return ESC_EINVAL;
    }
    uint8_t *frame = realloc(c->frame, len);
    if (frame == NULL) {
        return ESC_ENOMEM;
    }
    memcpy(frame, buf, len);
    c->frame = frame;
    c->len = len;
    nnx_hdr_request_id(&c->hdr, (uint32_t)(c->corr_id & CLI_REQUEST_ID_MASK));
    return 0;
}

/* The attempt number of a new reserve (ReserveReq.attempt): a bijection of
 * the client's random seed and its sequence, so unique per call and, across
 * clients, unique but by chance (2^-64 per pair); never 0. */
static uint64_t next_attempt(const esc_async *a)
{
    uint64_t x = a->attempt_seed + a->seq * 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x != 0 ? x : 1;
}

/* A new call for req (copied in routing mode and for reserves), due now,
 * PARKED, in both tables. Returns 0 and *out, or ESC_EBUSY / ESC_ENOMEM. */
static int call_new(esc_async *a, int kind, const wire_request *req, uint32_t dl_ms, int64_t now,
                    call **out)
{
    uint32_t slot;
    int rc = slot_take(a, &slot);
    if (rc < 0) {
        return rc;
    }
    call *c = calloc(1, sizeof *c);
    /* Routing mode re-encodes every call as it moves; a reserve may be
     * re-encoded as a resolve (settle) in either mode. */
    bool keep = a->opts.routing || req->op == WIRE_OP_RESERVE;
    wire_request *copy = keep ? malloc(sizeof *copy) : NULL;
    if (c == NULL || (keep && copy == NULL)) {
        free(c);
        free(copy);
        slot_put(a, slot);
        return ESC_ENOMEM;
    }
    if (copy != NULL) {
        *copy = *req;
        if (req->op == WIRE_OP_RESERVE) {
            copy->attempt = next_attempt(a);
        }
    }
    c->req = copy;
    c->corr_id = (a->seq++ << CLI_SLOT_BITS) | slot;
    c->kind = (uint8_t)kind;
    c->phase = PH_PARKED;
    c->op = req->op;
    c->qty = req->qty;
    c->deadline_us = now + (int64_t)dl_ms * 1000;
    c->due_us = now;
    a->slots[slot] = c;
    heap_push(a, c);
    *out = c;
    return 0;
}

/* ---- sockets ------------------------------------------------------------ */

static void conn_ready_cb(nnx_watch *w, void *arg);

static void handle_closed(esc_async *a);

static void conn_watch_closed(uv_handle_t *h)
{
    nnx_watch *w = h->data;
    conn *k = w->arg;
    handle_closed(k->a);
}

/* Opens conns[idx] on url: socket, connection, unreferenced watcher.
 * Returns 0, or ESC_EINVAL (bad URL) / ESC_EIO / ESC_ENOMEM. */
static int conn_open(esc_async *a, uint32_t idx, const char *url)
{
    conn *k = calloc(1, sizeof *k);
    if (k == NULL) {
        return ESC_ENOMEM;
    }
    k->a = a;
    k->sock = -1;
    memcpy(k->url, url, strlen(url) + 1);
    int rc = nnx_open_req(&k->sock);
    if (rc == 0) {
        rc = nnx_connect(k->sock, url, &k->eid);
    }
    if (rc == 0) {
        rc = nnx_watch_start(a->loop, &k->watch, k->sock, conn_ready_cb, k);
    }
    if (rc < 0) {
        nnx_close(k->sock);
        /* A poll handle nnx_watch_start closed is libuv's until the next
         * loop turn: keep (leak) its memory rather than free it under libuv. */
        if (k->sock < 0 || !uv_is_closing((uv_handle_t *)&k->watch.poll)) {
            free(k);
        }
        return rc;
    }
    uv_unref((uv_handle_t *)&k->watch.poll);
    k->last_sent_us = k->last_reply_us = k->last_reconnect_us = esc_mono_us();
    a->conns[idx] = k;
    a->handles_open++;
    return 0;
}

/* The socket for node slot idx of the route cache, opened on first use and
 * re-pointed when the slot now names another endpoint (route.c reuses a
 * slot only when this socket has no call in flight). NULL with *err. */
static conn *node_conn(esc_async *a, uint32_t node, int *err)
{
    const char *url = cli_route_node_url(a->routes, node);
    uint32_t idx = 1 + node;
    conn *k = a->conns[idx];
    if (k == NULL) {
        *err = conn_open(a, idx, url);
        return *err == 0 ? a->conns[idx] : NULL;
    }
    if (strcmp(k->url, url) != 0) {
        int rc = nnx_reconnect(k->sock, &k->eid, url);
        if (rc < 0) {
            *err = rc;
            return NULL;
        }
        memcpy(k->url, url, strlen(url) + 1);
        k->last_sent_us = k->last_reply_us = esc_mono_us();
    }
    return k;
}

static bool node_idle(uint32_t idx, void *arg)
{
    const esc_async *a = arg;
    const conn *k = a->conns[1 + idx];
    return k == NULL || k->calls == 0;
}

/* ---- routes --------------------------------------------------------------- */

static uint64_t hold_segment(const call *c)
{
    return c->req->hold_id >> ESC_HOLD_SEQ_BITS;
}

/* The cached route of user call c: its item's, or its hold's segment's. */
static cli_route *call_route(const esc_async *a, const call *c)
{
    if (c->op == WIRE_OP_RESERVE) {
        return cli_route_find(a->routes, c->req->item_id);
    }
    const cli_rseg *s = cli_route_find_seg(a->routes, hold_segment(c));
    return s != NULL ? s->route : NULL;
}

/* The fetch in flight for item (non-NULL) or for segment seg, or NULL. */
static call *fetch_find(const esc_async *a, const char *item, uint64_t seg)
{
    for (call *f = a->fetches; f != NULL; f = f->fnext) {
        if (item != NULL ? strcmp(f->req->item_id, item) == 0
                         : f->req->item_id[0] == '\0' && f->req->segment_id == seg) {
            return f;
        }
    }
    return NULL;
}

/* Sends a RouteReq for item (non-NULL) or segment seg to the coordinator.
 * Returns 0 and *out, or ESC_EBUSY (too many fetches) / ESC_ENOMEM. */
static int fetch_start(esc_async *a, const char *item, uint64_t seg, int64_t now, call **out)
{
    if (a->nfetches >= CLI_FETCHES_MAX) {
        return ESC_EBUSY;
    }
    wire_request req;
    memset(&req, 0, sizeof req);
    req.op = WIRE_OP_ROUTE;
    memcpy(req.tenant_id, a->opts.tenant_id, sizeof req.tenant_id);
    if (item != NULL) {
        memcpy(req.item_id, item, strlen(item) + 1);
    } else {
        req.segment_id = seg;
    }
    call *f = NULL;
    int rc = call_new(a, CALL_FETCH, &req, a->opts.deadline_ms, now, &f);
    if (rc == 0) {
        rc = call_encode(a, f, f->req);
        if (rc < 0) {
            call_free(a, f);
        }
    }
    if (rc < 0) {
        return rc;
    }
    f->fnext = a->fetches;
    if (a->fetches != NULL) {
        a->fetches->fprev = f;
    }
    a->fetches = f;
    a->nfetches++;
    a->stats.route_fetches++;
    cli_route *r = item != NULL ? cli_route_find(a->routes, item) : NULL;
    if (r != NULL) {
        r->next_fetch_us = now + CLI_ROUTE_REFETCH_US;
    }
    f->target = a->conns[0];
    f->target->calls++;
    f->phase = PH_SENT;
    send_frame(a, f, now);
    *out = f;
    return 0;
}

/* Parks c until the route it needs arrives: it joins the fetch in flight,
 * starts one, or (rate limit, too many fetches) waits on the timer. */
static void park_for_route(esc_async *a, call *c, int64_t now)
{
    untarget(c);
    c->phase = PH_PARKED;
    cli_route *r = call_route(a, c);
    const char *item = c->op == WIRE_OP_RESERVE ? c->req->item_id : NULL;
    if (item == NULL && r != NULL) {
        item = r->item_id;
    }
    uint64_t seg = c->op == WIRE_OP_RESERVE ? 0 : hold_segment(c);
    call *f = fetch_find(a, item, seg);
    if (f == NULL && r != NULL && now < r->next_fetch_us) {
        set_due(a, c, r->next_fetch_us);
        return;
    }
    if (f == NULL && fetch_start(a, item, seg, now, &f) < 0) {
        set_due(a, c, now + CLI_ROUTE_REFETCH_US);
        return;
    }
    c->fetch = f;
    c->wprev = NULL;
    c->wnext = f->waiters;
    if (f->waiters != NULL) {
        f->waiters->wprev = c;
    }
    f->waiters = c;
    set_due(a, c, c->deadline_us);
}

/* Fetches r again in the background when nothing keeps it fresh: no pushes
 * and older than CLI_ROUTE_MAX_AGE_US, or forced (a silent node). */
static void refresh_bg(esc_async *a, cli_route *r, int64_t now, bool force)
{
    if (r == NULL || now < r->next_fetch_us || fetch_find(a, r->item_id, 0) != NULL) {
        return;
    }
    bool pushed = r->pushed_us != 0 && now - r->pushed_us <= CLI_ROUTE_PUSH_ALIVE_US;
    if (!force && (pushed || now - r->fetched_us <= CLI_ROUTE_MAX_AGE_US)) {
        return;
    }
    call *f = NULL;
    (void)fetch_start(a, r->item_id, 0, now, &f); /* best effort: the cached route still serves */
}

/* Points c at segment seg (0: none, single-node mode) behind k: the same
 * frame when it is already out there, otherwise a new corr_id and a
 * re-encoded frame (segment hint, same key and attempt). */
static void aim(esc_async *a, call *c, conn *k, uint64_t seg, int64_t now)
{
    if (c->phase == PH_SENT && c->target == k && c->target_seg == seg) {
        send_frame(a, c, now);
        return;
    }
    if (c->frame != NULL) {
        a->stats.retargets++;
    }
    uint32_t slot = (uint32_t)(c->corr_id & CLI_SLOT_MASK);
    c->corr_id = (a->seq++ << CLI_SLOT_BITS) | slot;
    c->req->segment_id = c->op == WIRE_OP_RESERVE ? seg : 0;
    int rc = call_encode(a, c, c->req);
    if (rc < 0) {
        complete(a, c, rc);
        return;
    }
    untarget(c);
    c->target = k;
    k->calls++;
    c->target_seg = seg;
    c->phase = PH_SENT;
    c->sends = 0;
    c->answers = 0;
    c->doubt = false;
    send_frame(a, c, now);
}

/* Points c at segment s of the route cache (aim), through its node's socket. */
static void send_to(esc_async *a, call *c, const cli_rseg *s, int64_t now)
{
    int rc = 0;
    conn *k = node_conn(a, s->node, &rc);
    if (k == NULL) {
        cli_log(&a->opts, 1, "ESC-CLIENT-NODE endpoint=%s err=%s",
                cli_route_node_url(a->routes, s->node), esc_err_name(rc));
        untarget(c);
        c->phase = PH_PARKED;
        set_due(a, c, now + CLI_ROUTE_REFETCH_US);
        return;
    }
    aim(a, c, k, s->segment_id, now);
}

static void step_reserve(esc_async *a, call *c, int64_t now)
{
    cli_route *r = cli_route_find(a->routes, c->req->item_id);
    if (r == NULL || r->stale) {
        park_for_route(a, c, now);
        return;
    }
    refresh_bg(a, r, now, false);
    const cli_rseg *s = NULL;
    switch (cli_route_pick_reserve(r, c->hash, c->empties, &s)) {
    case CLI_PICK_SEND:
        send_to(a, c, s, now);
        return;
    case CLI_PICK_SOLD_OUT:
        a->stats.sold_out_cached++;
        complete(a, c, ESC_ESOLD_OUT);
        return;
    case CLI_PICK_PAUSED:
        complete(a, c, ESC_EPAUSED);
        return;
    case CLI_PICK_REFRESH:
        r->stale = true;
        park_for_route(a, c, now);
        return;
    case CLI_PICK_EXHAUSTED:
        break;
    }
    int verdict = cli_route_verdict(r, now);
    if (verdict < 0) {
        complete(a, c, verdict);
        return;
    }
    c->last_status = ESC_ETRY_LATER; /* the answer if the deadline comes first */
    park_for_route(a, c, now);
}

/* Sends c to segment seg's owner now, or waits for a route that names one
 * (a hold's segment; a resolving reserve's newest stray segment). */
static void step_segment(esc_async *a, call *c, uint64_t seg, int64_t now)
{
    cli_rseg *s = cli_route_find_seg(a->routes, seg);
    if (s == NULL || s->route->stale || s->node == CLI_NODE_NONE) {
        if (s != NULL) {
            s->route->stale = true;
        }
        park_for_route(a, c, now);
        return;
    }
    refresh_bg(a, s->route, now, false);
    send_to(a, c, s, now);
}

/* Routing mode: decides where user call c goes next (or answers it). Always
 * moves c's due_us past now, or completes it. */
static void route_step(esc_async *a, call *c, int64_t now)
{
    if (c->resolving) {
        step_segment(a, c, c->strays[c->nstrays - 1], now);
    } else if (c->op == WIRE_OP_RESERVE) {
        step_reserve(a, c, now);
    } else {
        step_segment(a, c, hold_segment(c), now);
    }
}

/* The socket that now owns the segment sent call c's frame names, if the
 * route knows one and it is not where the frame went; else NULL. */
static conn *new_owner(esc_async *a, const call *c)
{
    const cli_rseg *s = cli_route_find_seg(a->routes, c->target_seg);
    if (s == NULL || s->node == CLI_NODE_NONE) {
        return NULL;
    }
    int rc = 0;
    conn *k = node_conn(a, s->node, &rc);
    return k != c->target ? k : NULL;
}

/* Moves sent call c, frame and corr_id unchanged, to k: the segment it
 * names has a new owner. A reserve in flight is never moved to another
 * SEGMENT: its first segment may have committed the hold, so only a
 * definite "nothing done" answer (SEGMENT_EMPTY, NOT_OWNER, FENCED) lets it
 * go elsewhere. The same segment under a new owner is safe: the new owner
 * loads that segment's holds (and keys) from PostgreSQL. */
static void move_to_owner(esc_async *a, call *c, conn *k, int64_t now)
{
    cli_log(&a->opts, 3, "ESC-CLIENT-MOVE corr=%llu seg=%llu endpoint=%s",
            (unsigned long long)c->corr_id, (unsigned long long)c->target_seg, k->url);
    untarget(c);
    c->target = k;
    k->calls++;
    c->doubt = in_doubt(c); /* the old owner may have taken a copy it never answered */
    c->sends = 0;
    c->answers = 0;
    a->stats.retargets++;
    set_due(a, c, now);
}

/* A new version of r arrived: calls whose segment changed owner are resent
 * to the new owner now instead of at their next resend. */
static void wake_moved(esc_async *a, const cli_route *r, int64_t now)
{
    for (uint32_t i = 0; i < a->cap; i++) {
        call *c = a->slots[i];
        if (c == NULL || c->kind != CALL_USER || c->phase != PH_SENT || call_route(a, c) != r) {
            continue;
        }
        conn *k = new_owner(a, c);
        if (k != NULL) {
            move_to_owner(a, c, k, now);
        }
    }
    arm_timer(a);
}

/* Applies a route (fetched or pushed) to the cache. */
static void apply_route(esc_async *a, const wire_route *w, bool pushed, int64_t now)
{
    cli_route *r = NULL;
    int rc = cli_route_apply(a->routes, w, pushed, now, node_idle, a, &r);
    if (rc < 0) {
        cli_log(&a->opts, 1, "ESC-CLIENT-ROUTE item=%s err=%s (route ignored)", w->item_id,
                esc_err_name(rc));
        return;
    }
    if (rc == CLI_ROUTE_OLDER) {
        return;
    }
    if (!pushed) {
        r->next_fetch_us = now + CLI_ROUTE_REFETCH_US;
    }
    if (rc == CLI_ROUTE_NEW) {
        cli_log(&a->opts, 3,
                "ESC-CLIENT-ROUTE item=%s version=%llu segments=%u active=%u tail=%llu sold_out=%d "
                "paused=%d (%s)",
                r->item_id, (unsigned long long)r->version, r->nsegs, r->nactive,
                (unsigned long long)r->tail_segment, r->sold_out, r->paused,
                pushed ? "pushed" : "fetched");
        wake_moved(a, r, now);
    }
}

/* Answers that end a waiting call: the coordinator knows neither the item
 * nor the segment, or refuses us. */
static bool fetch_final(int status)
{
    return status == ESC_EUNKNOWN_ITEM || status == ESC_EUNKNOWN_TENANT ||
           status == ESC_ENOT_FOUND || status == ESC_EINVAL || status == ESC_EAUTH ||
           status == ESC_EPROTO;
}

/* Fetch f ended with status: wakes (or answers) its waiters, frees f. */
static void fetch_done(esc_async *a, call *f, int status)
{
    *(f->fprev != NULL ? &f->fprev->fnext : &a->fetches) = f->fnext;
    if (f->fnext != NULL) {
        f->fnext->fprev = f->fprev;
    }
    a->nfetches--;
    bool by_seg = f->req->item_id[0] == '\0';
    uint64_t seg = f->req->segment_id;
    call *w = f->waiters;
    f->waiters = NULL;
    for (call *x = w; x != NULL; x = x->wnext) {
        x->fetch = NULL;
    }
    call_free(a, f);
    int64_t now = esc_mono_us();
    while (w != NULL) {
        call *next = w->wnext;
        w->wprev = w->wnext = NULL;
        if (status == 0 && by_seg && cli_route_find_seg(a->routes, seg) == NULL) {
            finish(a, w, ESC_ENOT_FOUND, NULL); /* the coordinator's route lacks it */
        } else if (fetch_final(status)) {
            finish(a, w, status, NULL);
        } else {
            set_due(a, w, status == 0 ? now : now + CLI_ROUTE_REFETCH_US);
        }
        w = next;
    }
    arm_timer(a);
}

static void on_fetch_reply(esc_async *a, call *f, const wire_reply *rep)
{
    int status = rep->status;
    if (status == 0 && !rep->has_route) {
        status = ESC_EPROTO;
    } else if (status > 0 || status <= ESC_E_LAST_) {
        status = ESC_EPROTO;
    }
    if ((status == ESC_EBUSY || status == ESC_EUNAVAILABLE) && backoff(a, f, status)) {
        return;
    }
    if (status == 0 && strcmp(rep->route->tenant_id, a->opts.tenant_id) != 0) {
        status = ESC_EPROTO;
    }
    if (status == 0) {
        apply_route(a, rep->route, false, esc_mono_us());
    } else {
        cli_log(&a->opts, 1, "ESC-CLIENT-ROUTE-FETCH item=%s seg=%llu err=%s", f->req->item_id,
                (unsigned long long)f->req->segment_id, esc_err_name(status));
    }
    fetch_done(a, f, status);
}

static void sub_ready_cb(nnx_watch *w, void *arg)
{
    (void)w;
    esc_async *a = arg;
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && !a->closing; i++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        hdr.len = 0;
        int rc = nnx_recv(a->sub, &msg, &len, &hdr);
        if (rc < 0) {
            cli_log(&a->opts, 1, "ESC-CLIENT-ROUTES-RECV err=%s", esc_err_name(rc));
            return;
        }
        if (msg == NULL) {
            return;
        }
        rc = wire_decode_route_pub(msg, len, a->scratch);
        nnx_free(msg);
        if (rc < 0) {
            cli_log(&a->opts, 1, "ESC-CLIENT-ROUTES-BAD bytes=%zu err=%s", len, esc_err_name(rc));
            continue;
        }
        /* Only routes we use: a tenant with many items is not mirrored. */
        if (strcmp(a->scratch->tenant_id, a->opts.tenant_id) != 0 ||
            cli_route_find(a->routes, a->scratch->item_id) == NULL) {
            continue;
        }
        a->stats.route_pushes++;
        apply_route(a, a->scratch, true, esc_mono_us());
    }
}

/* ---- timer and replies -------------------------------------------------- */

/* c is due and SENT: its frame went unanswered for a resend period. In
 * routing mode the owner may be gone: the route is fetched again in the
 * background while the frame is resent (a new route moves the call). */
static void resend_due(esc_async *a, call *c, int64_t now)
{
    if (a->opts.routing && c->kind == CALL_USER) {
        conn *k = new_owner(a, c);
        if (k != NULL) {
            move_to_owner(a, c, k, now);
        } else if (c->sends > 0) {
            refresh_bg(a, call_route(a, c), now, true);
        }
    }
    send_frame(a, c, now);
}

/* Runs every call whose due time has come (the timer and the idle handle). */
static void run_due(esc_async *a)
{
    int64_t now = esc_mono_us();
    /* Ends: each pass finishes a call or moves its due_us past now. */
    while (!a->closing && a->nheap > 0 && a->heap[0]->due_us <= now) {
        call *c = a->heap[0];
        if (c->phase == PH_DONE) {
            finish(a, c, c->last_status, NULL);
        } else if (now >= c->deadline_us) {
            if (c->kind == CALL_FETCH) {
                fetch_done(a, c, ESC_ETIMEDOUT);
            } else {
                finish(a, c, c->last_status != 0 ? c->last_status : ESC_ETIMEDOUT, NULL);
            }
        } else if (c->phase == PH_PARKED) {
            route_step(a, c, now);
        } else {
            resend_due(a, c, now);
        }
    }
    arm_timer(a);
}

static void timer_cb(uv_timer_t *t)
{
    esc_async *a = t->data;
    a->timer_armed = false;
    run_due(a);
}

static void idle_cb(uv_idle_t *h)
{
    esc_async *a = h->data;
    (void)uv_idle_stop(&a->idle); /* always 0; run_due restarts it if work is due */
    a->idle_on = false;
    run_due(a);
}

/* Routing mode: a node's answer that moves the call instead of ending it.
 * Returns true if c was moved (or answered) here. */
static bool reroute(esc_async *a, call *c, int status)
{
    if (!a->opts.routing) {
        return false;
    }
    int64_t now = esc_mono_us();
    note_stray(c);
    if (status == ESC_ENOT_OWNER || status == ESC_EFENCED) {
        cli_route *r = call_route(a, c);
        if (r != NULL) {
            r->stale = true;
        }
    } else if (status == ESC_ESEGMENT_EMPTY && c->op == WIRE_OP_RESERVE) {
        c->empties++;
    } else {
        return false;
    }
    untarget(c);
    c->phase = PH_PARKED;
    route_step(a, c, now);
    arm_timer(a);
    return true;
}

/* Resolves the newest stray segment of c (settle), or gives the verdict
 * when none is left. */
static void resolve_next(esc_async *a, call *c, int64_t now)
{
    if (c->nstrays == 0) {
        deliver(a, c, c->verdict, NULL);
        return;
    }
    if (now >= c->deadline_us || a->closing) {
        /* a copy may have reserved: unknown */
        deliver(a, c, a->closing ? ESC_ECLOSED : ESC_ETIMEDOUT, NULL);
        return;
    }
    a->stats.resolves++;
    if (a->opts.routing) {
        route_step(a, c, now);
    } else {
        aim(a, c, a->conns[0], 0, now);
    }
    arm_timer(a);
}

/* The answer to c's resolve: the key's hold (the call's answer after all),
 * NOT_FOUND (that segment is settled: next one), or a stale route. Anything
 * else settles nothing: the outcome is unknown. */
static void on_resolve_reply(esc_async *a, call *c, int status, const wire_reply *rep)
{
    if (status == 0 || status == ESC_EIDEMPOTENCY_MISMATCH) {
        esc_hold hold;
        if (rep->has_hold) {
            cli_hold_from_wire(&hold, &rep->hold);
        }
        deliver(a, c, status, rep->has_hold ? &hold : NULL);
        return;
    }
    int64_t now = esc_mono_us();
    untarget(c);
    c->phase = PH_PARKED;
    if (status == ESC_ENOT_FOUND) {
        c->nstrays--;
        resolve_next(a, c, now);
    } else if (a->opts.routing && (status == ESC_ENOT_OWNER || status == ESC_EFENCED)) {
        cli_route *r = call_route(a, c);
        if (r != NULL) {
            r->stale = true;
        }
        route_step(a, c, now);
        arm_timer(a);
    } else {
        deliver(a, c, ESC_ETIMEDOUT, NULL);
    }
}

/* Decodes one reply that arrived on k (msg is transferred: freed here) and
 * completes, moves or backs off its call. */
static void on_reply(esc_async *a, conn *k, void *msg, size_t len, const nnx_hdr *hdr)
{
    wire_reply rep;
    rep.segs = NULL;
    rep.segs_cap = 0;
    rep.route = a->scratch; /* NULL in single-node mode: ignored */
    rep.hb = NULL;
    int rc = wire_decode_reply(msg, len, &rep);
    nnx_free(msg);
    if (rc < 0) {
        cli_log(&a->opts, 1, "ESC-CLIENT-BADREPLY bytes=%zu err=%s", len, esc_err_name(rc));
        return;
    }
    call *c = find_call(a, rep.corr_id, hdr);
    if (c == NULL || c->phase != PH_SENT || c->target != k) {
        cli_log(&a->opts, 3, "ESC-CLIENT-LATE corr=%llu status=%s (dropped)",
                (unsigned long long)rep.corr_id, esc_err_name(rep.status));
        return;
    }
    if (c->kind == CALL_FETCH) {
        on_fetch_reply(a, c, &rep);
        return;
    }
    if (c->answers < UINT32_MAX) {
        c->answers++;
    }
    int status = cli_reply_status(rep.status, rep.has_hold);
    if (status == ESC_ENOT_HELD && c->sends > 1 && rep.has_hold &&
        cli_goal_reached(c->op, c->qty, &rep.hold)) {
        status = 0; /* an earlier copy of this very call did it */
    }
    if ((status == ESC_EBUSY || status == ESC_EUNAVAILABLE) && backoff(a, c, status)) {
        return;
    }
    if (c->resolving) {
        on_resolve_reply(a, c, status, &rep);
        return;
    }
    if (reroute(a, c, status)) {
        return;
    }
    esc_hold hold;
    if (rep.has_hold) {
        cli_hold_from_wire(&hold, &rep.hold);
    }
    finish(a, c, status, rep.has_hold ? &hold : NULL);
}

static void conn_ready_cb(nnx_watch *w, void *arg)
{
    (void)w;
    conn *k = arg;
    esc_async *a = k->a;
    /* Bounded: NN_RCVFD stays readable while more replies are queued. */
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && !a->closing; i++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        hdr.len = 0;
        int rc = nnx_recv(k->sock, &msg, &len, &hdr);
        if (rc < 0) {
            cli_log(&a->opts, 1, "ESC-CLIENT-RECV endpoint=%s err=%s", k->url, esc_err_name(rc));
            return;
        }
        if (msg == NULL) {
            return;
        }
        k->last_reply_us = esc_mono_us();
        on_reply(a, k, msg, len, &hdr);
    }
}

/* ---- life cycle -------------------------------------------------------- */

static void free_all(esc_async *a)
{
    for (uint32_t i = 0; i < CLI_CONNS_MAX; i++) {
        conn *k = a->conns[i];
        if (k != NULL) {
            nnx_close(k->sock);
            free(k);
        }
    }
    nnx_close(a->sub);
    if (a->routes != NULL) {
        cli_route_cache_fini(a->routes);
        free(a->routes);
    }
    free(a->scratch);
    free(a->slots);
    free(a->free_slots);
    free(a->heap);
    if (!a->leaked) {
        free(a);
    }
}

/* Runs from the last close callback: fails what is pending, frees, reports. */
static void close_done(esc_async *a)
{
    while (a->nheap > 0) {
        call *c = a->heap[a->nheap - 1];
        if (c->kind == CALL_FETCH) {
            fetch_done(a, c, ESC_ECLOSED);
        } else {
            finish(a, c, ESC_ECLOSED, NULL);
        }
    }
    esc_close_cb cb = a->close_cb;
    void *arg = a->close_arg;
    free_all(a);
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

static void sub_watch_closed(uv_handle_t *h)
{
    nnx_watch *w = h->data;
    handle_closed(w->arg);
}

/* Closes every started handle; close_done frees a from the last one. */
static void close_handles(esc_async *a)
{
    a->closing = true;
    (void)uv_timer_stop(&a->timer);
    uv_close((uv_handle_t *)&a->timer, timer_closed);
    if (a->idle_inited) {
        (void)uv_idle_stop(&a->idle);
        a->idle_on = false;
        uv_close((uv_handle_t *)&a->idle, timer_closed);
    }
    for (uint32_t i = 0; i < CLI_CONNS_MAX; i++) {
        if (a->conns[i] != NULL) {
            nnx_watch_close(&a->conns[i]->watch, conn_watch_closed);
        }
    }
    if (a->sub >= 0 && a->sub_watch.arg == a) {
        nnx_watch_close(&a->sub_watch, sub_watch_closed);
    }
}

/* The routes socket: SUB on the coordinator's PUB, topic "<tenant>\0". */
static int start_sub(esc_async *a)
{
    int rc = nnx_open_sub(&a->sub, a->opts.tenant_id, strlen(a->opts.tenant_id) + 1);
    if (rc < 0) {
        return rc;
    }
    rc = nnx_connect(a->sub, a->opts.routes, NULL);
    if (rc == 0) {
        rc = nnx_watch_start(a->loop, &a->sub_watch, a->sub, sub_ready_cb, a);
        if (rc < 0 && uv_is_closing((uv_handle_t *)&a->sub_watch.poll)) {
            a->leaked = true; /* libuv still owns the half-started handle's memory */
        }
    }
    if (rc < 0) {
        a->sub_watch.arg = NULL;
        return rc;
    }
    uv_unref((uv_handle_t *)&a->sub_watch.poll);
    a->handles_open++;
    return 0;
}

/* Timer, the first socket (node or coordinator), the routes socket. */
static int start_io(esc_async *a)
{
    if (uv_timer_init(a->loop, &a->timer) != 0) {
        return ESC_EIO;
    }
    a->timer.data = a;
    a->handles_open = 1;
    if (uv_idle_init(a->loop, &a->idle) != 0) {
        return ESC_EIO; /* the caller closes the timer (handles_open) */
    }
    a->idle.data = a;
    a->idle_inited = true;
    a->handles_open++;
    int rc = conn_open(a, 0, a->opts.endpoint);
    if (rc == 0 && a->opts.routes[0] != '\0') {
        rc = start_sub(a);
    }
    return rc;
}

static int routing_init(esc_async *a)
{
    a->routes = malloc(sizeof *a->routes);
    a->scratch = malloc(sizeof *a->scratch);
    if (a->routes == NULL || a->scratch == NULL) {
        free(a->routes);
        a->routes = NULL;
        return ESC_ENOMEM;
    }
    if (cli_route_cache_init(a->routes) < 0) {
        free(a->routes);
        a->routes = NULL;
        return ESC_ENOMEM;
    }
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
    a->sub = -1;
    a->seq = 1;
    if (uv_random(NULL, NULL, &a->attempt_seed, sizeof a->attempt_seed, 0, NULL) != 0) {
        /* no entropy source: still distinct per process and moment */
        a->attempt_seed = (uint64_t)esc_mono_us() ^ ((uint64_t)(uintptr_t)a << 16) ^
                          ((uint64_t)uv_os_getpid() << 40);
    }
    rc = slots_grow(a);
    if (rc == 0 && o.routing) {
        rc = routing_init(a);
    }
    if (rc == 0) {
        rc = start_io(a);
    }
    if (rc == 0) {
        *out = a;
        return 0;
    }
    if (a->handles_open > 0) {
        close_handles(a); /* frees a from the loop */
    } else {
        free_all(a);
    }
    return rc;
}

void esc_async_close(esc_async *a, esc_close_cb close_cb, void *arg)
{
    if (a == NULL || a->closing) {
        return;
    }
    a->close_cb = close_cb;
    a->close_arg = arg;
    close_handles(a);
}

void esc_async_stats(const esc_async *a, esc_stats *out)
{
    if (a == NULL || out == NULL) {
        return;
    }
    *out = a->stats;
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
    int64_t now = esc_mono_us();
    call *c = NULL;
    int rc = call_new(a, CALL_USER, req, dl_ms, now, &c);
    if (rc < 0) {
        return rc;
    }
    c->cb = cb;
    c->arg = arg;
    a->in_api = true;
    if (a->opts.routing) {
        if (req->op == WIRE_OP_RESERVE) {
            c->hash = cli_route_hash(req->tenant_id, req->item_id, req->buyer_id);
        }
        route_step(a, c, now);
    } else {
        rc = call_encode(a, c, c->req != NULL ? c->req : req);
        if (rc < 0) {
            call_free(a, c);
            a->in_api = false;
            return rc;
        }
        c->target = a->conns[0];
        c->target->calls++;
        c->phase = PH_SENT;
        send_frame(a, c, now);
    }
    a->in_api = false;
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
