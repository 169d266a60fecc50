/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_check.c - the simulator's inline invariants, checked after every step
 * (and on every commit and every reply a client receives):
 *
 *   P1 no oversell: per segment sold + held <= units ever given to it
 *      (initial + received - sent); counters never negative.
 *   P2 conservation: per segment available + held + sold == its allocation;
 *      Σ allocations + units in flight (sent, not received) == total; the
 *      node's memory passes seg_core_check and, when its batches have
 *      settled, equals the store for every segment it still owns.
 *   P3 durable before acknowledged: a reply a client received with status
 *      OK matches the store at that moment (and still does at the end).
 *   P4 one hold per (tenant, key); every OK reply for a key names that hold.
 *   P5 units return exactly once: the store's held/sold equal the sums over
 *      its hold rows (a unit returned twice, or never, breaks the equality).
 *   P6 no confirm after expiry: a conversion was decided (node's clock,
 *      when the op was decided) before the hold's expiry.
 *   P7 nothing written under a fenced epoch: every row the store applied
 *      carried the segment's current epoch.
 */
#include <inttypes.h>
#include <string.h>

#include "escrow_errors.h"
#include "sim.h"

static void check_store(sim_world *w)
{
    const sim_store *s = &w->store;
    int64_t alloc = 0, inflight = 0;
    for (int i = 1; i <= SIM_NSEG && !w->violated; i++) {
        const st_segment *g = &s->segs[i];
        alloc += g->alloc;
        if (g->available < 0 || g->held < 0 || g->sold < 0) {
            sim_violation(w,
                          "P1 negative counter seg=%d available=%" PRId64 " held=%" PRId64
                          " sold=%" PRId64,
                          i, g->available, g->held, g->sold);
        } else if (g->held + g->sold > g->alloc) {
            sim_violation(w,
                          "P1 oversell seg=%d held=%" PRId64 " sold=%" PRId64 " > given=%" PRId64,
                          i, g->held, g->sold, g->alloc);
        } else if (g->available + g->held + g->sold != g->alloc) {
            sim_violation(w,
                          "P2 conservation seg=%d available=%" PRId64 " held=%" PRId64
                          " sold=%" PRId64 " != allocated=%" PRId64,
                          i, g->available, g->held, g->sold, g->alloc);
        } else if (g->held != g->sum_held || g->sold != g->sum_sold) {
            sim_violation(w,
                          "P5 seg=%d counters held=%" PRId64 " sold=%" PRId64
                          " but its holds say held=%" PRId64 " sold=%" PRId64,
                          i, g->held, g->sold, g->sum_held, g->sum_sold);
        }
    }
    for (size_t i = 0; i < s->nxfers; i++) {
        if (s->xfers[i].state == XS_SENT) {
            inflight += s->xfers[i].qty;
        }
        if (s->xfers[i].receives > 1 && !w->violated) {
            sim_violation(w, "P2 transfer %" PRIu64 " received %d times", s->xfers[i].id,
                          s->xfers[i].receives);
        }
    }
    if (!w->violated && alloc + inflight != s->total) {
        sim_violation(
            w, "P2 conservation: segments %" PRId64 " + in flight %" PRId64 " != total %" PRId64,
            alloc, inflight, s->total);
    }
}

static void check_node(sim_world *w, sim_node *n, bool current)
{
    uint64_t bad = 0;
    if (seg_core_check(&n->core, &bad) != 0) {
        sim_violation(w, "P2 node %d memory: seg=%" PRIu64 " counters disagree with its holds",
                      n->id, bad);
        return;
    }
    if (!current || !node_quiescent(n)) {
        return;
    }
    for (int i = 1; i <= SIM_NSEG; i++) {
        const seg_segment *s = seg_core_find_segment(&n->core, (uint64_t)i);
        const st_segment *g = &w->store.segs[i];
        if (s == NULL || s->fenced || s->epoch != g->epoch) {
            continue;
        }
        if (s->available != g->available || s->held != g->held || s->sold != g->sold) {
            sim_violation(w,
                          "P2 node %d memory disagrees with the store once settled: seg=%d "
                          "memory available=%" PRId64 " held=%" PRId64 " sold=%" PRId64
                          ", store %" PRId64 "/%" PRId64 "/%" PRId64,
                          n->id, i, s->available, s->held, s->sold, g->available, g->held, g->sold);
            return;
        }
    }
}

void check_step(sim_world *w)
{
    check_store(w);
    if (!w->violated && w->cur != NULL) {
        check_node(w, w->cur, true);
    }
    if (!w->violated && w->zombie != NULL) {
        check_node(w, w->zombie, false);
    }
}

void check_commit_row(sim_world *w, const sb_row *r, const st_hold *h, uint64_t store_epoch)
{
    if (r->epoch != store_epoch) {
        sim_violation(
            w, "P7 hold %" PRIu64 " changed under fenced epoch %" PRIu64 " (current %" PRIu64 ")",
            r->hold_id, r->epoch, store_epoch);
    } else if (r->kind == SEG_OP_CONFIRM && r->decided_at_ms >= h->expires_at_ms) {
        sim_violation(w,
                      "P6 confirm after expiry: hold %" PRIu64 " decided at %" PRId64
                      " expired at %" PRId64,
                      r->hold_id, r->decided_at_ms, h->expires_at_ms);
    }
}

static void check_reserve_ack(sim_world *w, const sim_req *op, const sim_reply *rep,
                              const st_hold *h)
{
    if (h->key_no != op->key_no || h->qty != op->qty || h->buyer != op->buyer) {
        sim_violation(w,
                      "P3 reserve k%u acknowledged hold %" PRIu64 " but the store has it for "
                      "key k%u qty %" PRId64,
                      op->key_no, rep->hold_id, h->key_no, h->qty);
        return;
    }
    if (op->key_no >= w->key_ack_cap) {
        return;
    }
    uint64_t *a = &w->key_ack[op->key_no];
    if (*a != 0 && *a != rep->hold_id) {
        sim_violation(w, "P4 key k%u answered with hold %" PRIu64 " and earlier with %" PRIu64,
                      op->key_no, rep->hold_id, *a);
        return;
    }
    *a = rep->hold_id;
    const st_hold *k = store_hold_by_key(&w->store, op->key_no);
    if (k != h) {
        sim_violation(w, "P4 key k%u has hold %" PRIu64 " in the store, acknowledged %" PRIu64,
                      op->key_no, k ? k->hold_id : 0, rep->hold_id);
    }
}

void check_reply(sim_world *w, const sim_req *op, const sim_reply *rep)
{
    if (rep->status != 0 || op->f == F_NF) {
        return;
    }
    const st_hold *h = rep->has_hold ? store_hold(&w->store, rep->hold_id) : NULL;
    if (h == NULL) {
        sim_violation(w, "P3 acknowledged %s of hold %" PRIu64 " (key k%u) is not in the store",
                      op->f == F_RESERVE ? "reserve" : "transition", rep->hold_id, op->key_no);
        return;
    }
    switch (op->f) {
    case F_RESERVE:
        check_reserve_ack(w, op, rep, h);
        return;
    case F_CONFIRM:
        if (h->state != SEG_CONVERTED || (op->qty != 0 && h->qty_sold != op->qty)) {
            sim_violation(w,
                          "P3 acknowledged confirm of hold %" PRIu64 " (qty %" PRId64
                          ") but the store has state %d qty_sold %" PRId64,
                          h->hold_id, op->qty, h->state, h->qty_sold);
        }
        return;
    case F_RELEASE:
        if (h->state != SEG_CANCELLED && h->state != SEG_EXPIRED) {
            sim_violation(w,
                          "P3 acknowledged release of hold %" PRIu64 " but the store has "
                          "state %d",
                          h->hold_id, h->state);
        }
        return;
    case F_EXTEND:
        if (!h->extended || h->expires_at_ms != rep->expires_at_ms) {
            sim_violation(w,
                          "P3 acknowledged extend of hold %" PRIu64 " to %" PRId64
                          " but the store has extended=%d expires=%" PRId64,
                          h->hold_id, rep->expires_at_ms, h->extended, h->expires_at_ms);
        }
        return;
    default:
        return;
    }
}

void check_final(sim_world *w)
{
    for (uint32_t k = 0; k < w->key_ack_cap && !w->violated; k++) {
        if (w->key_ack[k] == 0) {
            continue;
        }
        const st_hold *h = store_hold(&w->store, w->key_ack[k]);
        if (h == NULL || h->key_no != k) {
            sim_violation(w, "P3 acknowledged hold %" PRIu64 " of key k%u lost at the end",
                          w->key_ack[k], k);
        }
    }
    if (!w->violated) {
        check_step(w);
    }
}
