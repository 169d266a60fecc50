/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_answer.c - see async_answer.h.
 *
 * A reserve's "no" is given only once no copy of its frames can still
 * reserve: segments where a copy may have gone unanswered are resolved
 * first (settle), in both modes. ESC_EBUSY and ESC_EUNAVAILABLE mean
 * "nothing was done": the call backs off and resends inside its deadline;
 * at the deadline the result is that definite answer if the call was
 * backing off, otherwise ESC_ETIMEDOUT (outcome unknown). In routing mode a
 * definite "nothing done" answer (SEGMENT_EMPTY, NOT_OWNER, FENCED) sends
 * the call through a routing step instead (reroute).
 *
 * Asserted here: callbacks run only for user calls, never inside an
 * esc_async_* function.
 */
#include "async_answer.h"

#include "async_conn.h"
#include "async_routing.h"
#include "async_slot.h"
#include "async_timer.h"
#include "clock.h"
#include "esc_assert.h"
#include "req.h"

static void resolve_next(esc_async *a, call *c, int64_t now);

/* Takes c out of the tables, frees it and runs its callback (last: the
 * callback may submit new calls or close the client). */
static void deliver(esc_async *a, call *c, int status, const esc_hold *hold)
{
    ESC_ASSERT(c->kind == CALL_USER && c->cb != NULL);
    ESC_ASSERT(!a->in_api); /* no callback runs inside an esc_async_* function */
    esc_hold_cb cb = c->cb;
    void *arg = c->arg;
    cli_slot_free(a, c);
    cb(status, hold, arg);
}

bool cli_answer_in_doubt(const call *c)
{
    return c->doubt || c->sends > c->answers;
}

/* Remembers the segment of c's current frame if it is in doubt. */
static void note_stray(call *c)
{
    if (c->op != WIRE_OP_RESERVE || !cli_answer_in_doubt(c)) {
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
    ESC_ASSERT(c->req != NULL); /* cli_slot_new keeps every reserve's request */
    c->resolving = true;
    c->verdict = *status;
    c->req->resolve = true;
    cli_routing_unwait(c);
    cli_conn_untarget(c);
    c->phase = PH_PARKED;
    resolve_next(a, c, esc_mono_us());
    return true;
}

void cli_answer_finish(esc_async *a, call *c, int status, const esc_hold *hold)
{
    if (settle(a, c, &status, hold)) {
        return;
    }
    deliver(a, c, status, hold);
}

void cli_answer_complete(esc_async *a, call *c, int status)
{
    ESC_ASSERT(c->kind == CALL_USER);
    if (!a->in_api) {
        cli_answer_finish(a, c, status, NULL);
        return;
    }
    cli_routing_unwait(c);
    cli_conn_untarget(c);
    c->phase = PH_DONE;
    c->last_status = status;
    cli_timer_move(a, c, esc_mono_us());
}

bool cli_answer_backoff(esc_async *a, call *c, int status)
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
    cli_timer_move(a, c, due);
    cli_timer_arm(a);
    return true;
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
        cli_routing_distrust(a, c);
    } else if (status == ESC_ESEGMENT_EMPTY && c->op == WIRE_OP_RESERVE) {
        c->empties++;
    } else {
        return false;
    }
    cli_conn_untarget(c);
    c->phase = PH_PARKED;
    cli_routing_step(a, c, now);
    cli_timer_arm(a);
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
        cli_routing_step(a, c, now);
    } else {
        cli_slot_aim(a, c, a->conns[0], 0, now);
    }
    cli_timer_arm(a);
}

/* The reply's hold as the public struct, in buf; NULL when it has none. */
static const esc_hold *hold_of(const wire_reply *rep, esc_hold *buf)
{
    if (!rep->has_hold) {
        return NULL;
    }
    cli_hold_from_wire(buf, &rep->hold);
    buf->replayed = rep->replay;
    return buf;
}

/* The answer to c's resolve: the key's hold (the call's answer after all),
 * NOT_FOUND (that segment is settled: next one), or a stale route. Anything
 * else settles nothing: the outcome is unknown. */
static void on_resolve_reply(esc_async *a, call *c, int status, const wire_reply *rep)
{
    if (status == 0 || status == ESC_EIDEMPOTENCY_MISMATCH) {
        esc_hold hold;
        deliver(a, c, status, hold_of(rep, &hold));
        return;
    }
    int64_t now = esc_mono_us();
    cli_conn_untarget(c);
    c->phase = PH_PARKED;
    if (status == ESC_ENOT_FOUND) {
        ESC_ASSERT(c->nstrays > 0); /* the resolve out was for strays[nstrays - 1] */
        c->nstrays--;
        resolve_next(a, c, now);
    } else if (a->opts.routing && (status == ESC_ENOT_OWNER || status == ESC_EFENCED)) {
        cli_routing_distrust(a, c);
        cli_routing_step(a, c, now);
        cli_timer_arm(a);
    } else {
        deliver(a, c, ESC_ETIMEDOUT, NULL);
    }
}

void cli_answer_reply(esc_async *a, conn *k, void *msg, size_t len, const nnx_hdr *hdr)
{
    wire_reply rep = {0};
    rep.route = a->scratch; /* NULL in single-node mode: ignored */
    int rc = wire_decode_reply(msg, len, &rep);
    nnx_free(msg);
    if (rc < 0) {
        cli_log(&a->opts, 1, "ESC-CLIENT-BADREPLY bytes=%zu err=%s", len, esc_err_name(rc));
        return;
    }
    call *c = cli_slot_find(a, rep.corr_id, hdr);
    if (c == NULL || c->phase != PH_SENT || c->target != k) {
        cli_log(&a->opts, 3, "ESC-CLIENT-LATE corr=%llu status=%s (dropped)",
                (unsigned long long)rep.corr_id, esc_err_name(rep.status));
        return;
    }
    if (c->kind == CALL_FETCH) {
        cli_routing_fetch_reply(a, c, &rep);
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
    if ((status == ESC_EBUSY || status == ESC_EUNAVAILABLE) && cli_answer_backoff(a, c, status)) {
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
    cli_answer_finish(a, c, status, hold_of(&rep, &hold));
}
