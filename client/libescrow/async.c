/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async.c - the asynchronous engine behind every libescrow call: the
 * esc_async_* API and the client's life cycle. async_state.h lists the
 * files the engine is cut into, one job each.
 *
 * Sockets ("conns", async_conn.c): conns[0] is the segment node
 * (single-node mode) or the coordinator (routing mode); in routing mode
 * conns[1 + i] is the node at endpoint slot i of the route cache, and a SUB
 * socket follows the coordinator's route stream when esc_options.routes is
 * given.
 *
 * Each accepted call is a `call` that owns its encoded frame and sits in two
 * structures:
 *   - slots[] (async_slot.c): the in-flight table, indexed by the low
 *     CLI_SLOT_BITS of the call's corr_id, so a reply is matched in O(1) and
 *     a late duplicate of an answered call is dropped;
 *   - heap (async_timer.c, heap.h): a min-heap keyed by the next moment the
 *     call needs attention (resend, deadline, or a routing step). One uv_timer is
 *     armed for the top of the heap.
 * The nanomsg request id header carries the low 31 bits of corr_id, so even
 * a reply whose body has no corr_id (a node that could not parse the frame
 * answers ESC_EPROTO with corr_id 0) still finds its call.
 *
 * A call is in one of three phases: SENT (its frame is out on `target` and
 * is resent unchanged every resend_ms), PARKED (routing mode: it waits for a
 * route fetch, the fetch rate limit, or its first routing step) or DONE (its
 * answer is known and is delivered from the timer, because no callback may
 * run inside an esc_async_* function). Answers (async_answer.c) end a call,
 * back it off, move it (async_routing.c), or, for a reserve's "no", first
 * resolve every segment a copy of its frame may still reach.
 *
 * Invariants: every call is in both structures or in neither; a call's
 * callback runs exactly once, after the call left both; no callback ever
 * runs from inside an esc_async_* function. They are asserted (ESC_ASSERT,
 * every build) where they can break: async_slot.c, async_timer.c,
 * async_answer.c.
 *
 * The poll handles are unreferenced and the timer runs only while calls are
 * in flight, so an idle client does not keep its host's loop alive. The
 * client is freed from the last close callback, after every pending call
 * was failed with ESC_ECLOSED.
 */
#include "async.h"

#include <stdlib.h>
#include <string.h>

#include "async_answer.h"
#include "async_conn.h"
#include "async_routing.h"
#include "async_slot.h"
#include "async_state.h"
#include "async_timer.h"
#include "clock.h"
#include "esc_assert.h"
#include "esc_limits.h"
#include "req.h"
#include "route.h"
#include "wire.h"

_Static_assert(ESC_CLIENT_INFLIGHT_MAX == (1u << CLI_SLOT_BITS), "one slot per in-flight call");
_Static_assert(ESC_ID_MAX == ESC_ITEM_LEN_MAX && ESC_ID_MAX == ESC_BUYER_LEN_MAX &&
                   ESC_ID_MAX == ESC_KEY_LEN_MAX,
               "escrow.h ids and wire ids have one bound");
_Static_assert(CLI_ENDPOINT_LEN_MAX == ESC_ENDPOINT_LEN_MAX, "one bound for endpoints");

/* ---- life cycle -------------------------------------------------------- */

static void free_all(esc_async *a)
{
    cli_conn_free_all(a);
    cli_routing_fini(a);
    cli_slot_fini(a);
    cli_timer_fini(a);
    cli_opts_fini(&a->opts);
    if (!a->leaked) {
        free(a);
    }
}

/* Runs from the last close callback: fails what is pending, frees, reports. */
static void close_done(esc_async *a)
{
    call *c;
    while ((c = cli_timer_last(a)) != NULL) {
        if (c->kind == CALL_FETCH) {
            cli_routing_fetch_done(a, c, ESC_ECLOSED);
        } else {
            cli_answer_finish(a, c, ESC_ECLOSED, NULL);
        }
    }
    ESC_ASSERT(a->nfree == a->cap); /* every call left the table */
    esc_close_cb cb = a->close_cb;
    void *arg = a->close_arg;
    free_all(a);
    if (cb != NULL) {
        cb(arg);
    }
}

void cli_async_handle_closed(esc_async *a)
{
    ESC_ASSERT(a->handles_open > 0);
    if (--a->handles_open == 0) {
        close_done(a);
    }
}

/* Closes every started handle; close_done frees a from the last one. */
static void close_handles(esc_async *a)
{
    a->closing = true;
    cli_timer_close(a);
    cli_conn_close_all(a);
}

/* Timer, the first socket (node or coordinator), the routes socket. */
static int start_io(esc_async *a)
{
    int rc = cli_timer_open(a);
    if (rc < 0) {
        return rc; /* the caller closes what was opened (handles_open) */
    }
    rc = cli_conn_open(a, 0, a->opts.endpoint);
    if (rc == 0 && a->opts.routes[0] != '\0') {
        rc = cli_conn_open_sub(a);
    }
    return rc;
}

/* ---- the API ----------------------------------------------------------- */

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
        cli_opts_fini(&o);
        return ESC_ENOMEM;
    }
    a->loop = loop;
    a->opts = o;
    cli_opts_fini(&o); /* the copy in a is the one kept */
    heap_init(&a->heap);
    a->sub = -1;
    a->seq = 1;
    if (uv_random(NULL, NULL, &a->attempt_seed, sizeof a->attempt_seed, 0, NULL) != 0) {
        /* no entropy source: still distinct per process and moment */
        a->attempt_seed = (uint64_t)esc_mono_us() ^ ((uint64_t)(uintptr_t)a << 16) ^
                          ((uint64_t)uv_os_getpid() << 40);
    }
    rc = cli_slot_init(a);
    if (rc == 0 && o.routing) {
        rc = cli_routing_init(a);
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
    return a->closing ? 0 : ESC_CLIENT_INFLIGHT_MAX - cli_timer_calls(a);
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
    int rc = cli_slot_new(a, CALL_USER, req, dl_ms, now, &c);
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
        cli_routing_step(a, c, now);
    } else {
        rc = cli_slot_encode(a, c, c->req != NULL ? c->req : req);
        if (rc < 0) {
            cli_slot_free(a, c);
            a->in_api = false;
            return rc;
        }
        cli_conn_target(c, a->conns[0]);
        c->phase = PH_SENT;
        cli_conn_send(a, c, now);
    }
    a->in_api = false;
    cli_timer_arm(a);
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
