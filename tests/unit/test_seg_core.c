/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_seg_core.c - the segment node's decisions, without I/O: counters,
 * the four rejections, idempotency, transitions, expiry at the point of use,
 * undo of failed batches, fencing, and the invariant checker itself; and
 * managed mode: transfers (GIVE takes min(qty, available) at once and gives
 * it back on undo; RECEIVE adds only on commit), one transfer op per
 * segment, the strict segment hint, draining, paused, SEGMENT_EMPTY instead
 * of SOLD_OUT/TRY_LATER, the dry flag and the demand counters, and a
 * dropped segment loaded again; resolves and the attempts they void.
 * seg_core_check runs after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "escrow_errors.h"
#include "seg_core.h"
#include "seg_delta.h"

#define T0 1000000000000LL /* a fixed "now", unix ms */

typedef struct fixture {
    seg_core core;
    seg_item *item;
    seg_segment *s1, *s2;
} fixture;

static int setup_item(fixture *f, int64_t a1, int64_t a2, int32_t max_order, int32_t max_buyer)
{
    if (seg_core_init(&f->core, 16) != 0) {
        return -1;
    }
    seg_item proto;
    memset(&proto, 0, sizeof proto);
    strcpy(proto.tenant_id, "shop");
    strcpy(proto.item_id, "tee");
    proto.hold_ttl_ms = 1000;
    proto.max_per_order = max_order;
    proto.max_per_buyer = max_buyer;
    if (seg_core_add_item(&f->core, &proto, &f->item) != 0) {
        return -1;
    }
    seg_segment s;
    memset(&s, 0, sizeof s);
    s.segment_id = 1;
    s.epoch = 1;
    s.available = a1;
    s.next_seq = 1;
    s.seq_limit = 1 + ESC_HOLD_SEQ_RANGE;
    if (seg_core_add_segment(&f->core, f->item, &s, &f->s1) != 0) {
        return -1;
    }
    s.segment_id = 2;
    s.available = a2;
    return seg_core_add_segment(&f->core, f->item, &s, &f->s2);
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    *state = &f;
    return setup_item(&f, 2, 1, 5, 0);
}

static int setup_limited(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    *state = &f;
    return setup_item(&f, 10, 0, 0, 2);
}

static int teardown(void **state)
{
    fixture *f = *state;
    seg_core_fini(&f->core);
    return 0;
}

static void reserve(fixture *f, const char *buyer, const char *key, int64_t qty, int64_t now,
                    seg_result *res)
{
    seg_reserve_in in = {"shop", "tee", buyer, key, qty, 0, 0, qty * 1000 + (int64_t)strlen(buyer),
                         0,      false};
    seg_core_reserve(&f->core, &in, now, res);
}

/* A reserve (resolve false) or resolve carrying the client's attempt. */
static void reserve_attempt(fixture *f, const char *key, uint64_t seg, uint64_t attempt,
                            bool resolve, int64_t now, seg_result *res)
{
    seg_reserve_in in = {"shop", "tee", "b", key, 1, 0, seg, 1001, attempt, resolve};
    seg_core_reserve(&f->core, &in, now, res);
}

static void assert_ok(const fixture *f)
{
    assert_int_equal(seg_core_check(&f->core, NULL), 0);
}

/* reserve -> commit; returns the hold */
static seg_hold *hold_committed(fixture *f, const char *buyer, const char *key, int64_t qty)
{
    seg_result res;
    reserve(f, buyer, key, qty, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_int_equal(res.status, 0);
    seg_core_commit_op(&f->core, &res.op, T0);
    return res.hold;
}

static void test_reserve_until_sold_out(void **state)
{
    fixture *f = *state;
    seg_result res;
    for (int i = 0; i < 3; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        reserve(f, "b", key, 1, T0, &res);
        assert_int_equal(res.disp, SEG_COMMIT);
        assert_int_equal(seg_core_hold_segment(res.hold->hold_id), res.hold->seg->segment_id);
        seg_core_commit_op(&f->core, &res.op, T0);
    }
    assert_int_equal(f->s1->available + f->s2->available, 0);
    assert_int_equal(f->s1->held + f->s2->held, 3);
    /* units are held by others and may come back: TRY_LATER, not SOLD_OUT */
    reserve(f, "b", "k9", 1, T0, &res);
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_ETRY_LATER);
    assert_ok(f);
}

static void test_sold_out_when_nothing_can_return(void **state)
{
    fixture *f = *state;
    seg_result res;
    for (int i = 0; i < 3; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        seg_hold *h = hold_committed(f, "b", key, 1);
        seg_core_confirm(&f->core, "shop", h->hold_id, 0, T0, &res);
        assert_int_equal(res.disp, SEG_COMMIT);
        seg_core_commit_op(&f->core, &res.op, T0);
    }
    reserve(f, "b", "late", 1, T0, &res);
    assert_int_equal(res.status, ESC_ESOLD_OUT);
    assert_int_equal(f->s1->sold + f->s2->sold, 3);
    assert_ok(f);
}

static void test_segment_empty_when_stock_elsewhere(void **state)
{
    fixture *f = *state;
    seg_result res;
    f->item->remote_segments = 3;
    reserve(f, "b", "big", 3, T0, &res); /* 2 + 1 locally: split, no single segment */
    assert_int_equal(res.status, ESC_ETRY_LATER);
    reserve(f, "b", "k1", 2, T0, &res);
    seg_core_commit_op(&f->core, &res.op, T0);
    reserve(f, "b", "k2", 1, T0, &res);
    seg_core_commit_op(&f->core, &res.op, T0);
    reserve(f, "b", "k3", 1, T0, &res);
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
}

static void test_limits_and_unknowns(void **state)
{
    fixture *f = *state;
    seg_result res;
    reserve(f, "b", "k", 6, T0, &res);
    assert_int_equal(res.status, ESC_EORDER_LIMIT);
    seg_reserve_in in = {"shop", "nope", "b", "k", 1, 0, 0, 1, 0, false};
    seg_core_reserve(&f->core, &in, T0, &res);
    assert_int_equal(res.status, ESC_EUNKNOWN_ITEM);
    in.tenant_id = "other";
    in.item_id = "tee";
    seg_core_reserve(&f->core, &in, T0, &res);
    assert_int_equal(res.status, ESC_EUNKNOWN_TENANT);
    f->item->paused = true;
    reserve(f, "b", "k", 1, T0, &res);
    assert_int_equal(res.status, ESC_EPAUSED);
    assert_int_equal(f->s1->available + f->s2->available, 3); /* nothing changed */
}

static void test_idempotency(void **state)
{
    fixture *f = *state;
    seg_result a, b;
    reserve(f, "b", "key", 1, T0, &a);
    assert_int_equal(a.disp, SEG_COMMIT);
    /* same key while the first is not committed yet: park, don't take a unit */
    reserve(f, "b", "key", 1, T0, &b);
    assert_int_equal(b.disp, SEG_PARK);
    assert_ptr_equal(b.hold, a.hold);
    seg_core_commit_op(&f->core, &a.op, T0);
    reserve(f, "b", "key", 1, T0, &b);
    assert_int_equal(b.disp, SEG_REPLY);
    assert_int_equal(b.status, 0);
    assert_int_equal(b.hold->hold_id, a.hold->hold_id);
    reserve(f, "b", "key", 2, T0, &b);
    assert_int_equal(b.status, ESC_EIDEMPOTENCY_MISMATCH);
    assert_int_equal(f->s1->held + f->s2->held, 1);
    assert_ok(f);
}

static void test_confirm_partial_and_twice(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *h = hold_committed(f, "b", "k", 2);
    seg_core_confirm(&f->core, "shop", h->hold_id, 3, T0, &res);
    assert_int_equal(res.status, ESC_EINVAL);
    seg_core_confirm(&f->core, "shop", h->hold_id, 1, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    /* the returned unit is not available until the batch commits */
    int64_t avail = f->s1->available + f->s2->available;
    assert_int_equal(avail, 1);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_int_equal(f->s1->available + f->s2->available, 2);
    assert_int_equal(f->s1->sold + f->s2->sold, 1);
    seg_core_confirm(&f->core, "shop", h->hold_id, 0, T0, &res);
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, 0);
    assert_int_equal(res.hold->qty_sold, 1);
    seg_core_release(&f->core, "shop", h->hold_id, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_HELD);
    assert_ok(f);
}

static void test_release_twice_returns_once(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    seg_core_release(&f->core, "shop", h->hold_id, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_result again;
    seg_core_release(&f->core, "shop", h->hold_id, T0, &again);
    assert_int_equal(again.disp, SEG_PARK); /* waits for the first outcome */
    seg_core_commit_op(&f->core, &res.op, T0);
    seg_core_release(&f->core, "shop", h->hold_id, T0, &again);
    assert_int_equal(again.disp, SEG_REPLY);
    assert_int_equal(again.status, 0);
    assert_int_equal(again.hold->state, SEG_CANCELLED);
    assert_int_equal(f->s1->available + f->s2->available, 3);
    seg_core_confirm(&f->core, "shop", h->hold_id, 0, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_HELD);
    assert_ok(f);
}

static void test_expiry_at_point_of_use(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    /* no sweeper ran; the confirm itself sees the deadline */
    seg_core_confirm(&f->core, "shop", h->hold_id, 0, h->expires_at_ms, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_int_equal(res.status, ESC_EEXPIRED);
    assert_int_equal(res.op.kind, SEG_OP_EXPIRE);
    seg_core_commit_op(&f->core, &res.op, T0);
    /* a release of a lapsed hold says so: EXPIRED, the hold attached */
    seg_core_release(&f->core, "shop", h->hold_id, T0 + 5000, &res);
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_EEXPIRED);
    assert_int_equal(res.hold->state, SEG_EXPIRED);
    /* and so does one that finds it lapsed at its point of use */
    seg_hold *g = hold_committed(f, "b", "k2", 1);
    seg_core_release(&f->core, "shop", g->hold_id, g->expires_at_ms, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_int_equal(res.status, ESC_EEXPIRED);
    assert_int_equal(res.op.kind, SEG_OP_EXPIRE);
    seg_core_commit_op(&f->core, &res.op, T0);
    seg_core_confirm(&f->core, "shop", h->hold_id, 0, T0 + 5000, &res);
    assert_int_equal(res.status, ESC_EEXPIRED);
    assert_int_equal(f->s1->available + f->s2->available, 3);
    assert_ok(f);
}

static void test_sweeper_and_extend(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *a = hold_committed(f, "b", "a", 1);
    seg_hold *b = hold_committed(f, "b", "b", 1);
    seg_core_extend(&f->core, "shop", b->hold_id, 5000, T0 + 10, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_core_commit_op(&f->core, &res.op, T0 + 10);
    seg_core_extend(&f->core, "shop", b->hold_id, 5000, T0 + 20, &res);
    assert_int_equal(res.status, ESC_EALREADY_EXTENDED);
    seg_op ops[8];
    size_t n = seg_core_sweep(&f->core, T0 + 1000, ops, 8);
    assert_int_equal(n, 1);
    assert_ptr_equal(ops[0].hold, a);
    seg_core_commit_op(&f->core, &ops[0], T0 + 1000);
    assert_int_equal(a->state, SEG_EXPIRED);
    assert_int_equal(seg_core_sweep(&f->core, T0 + 1000, ops, 8), 0);
    assert_int_equal(seg_core_sweep(&f->core, T0 + 5010, ops, 8), 1);
    seg_core_commit_op(&f->core, &ops[0], T0 + 5010);
    assert_int_equal(f->s1->available + f->s2->available, 3);
    assert_ok(f);
}

static void test_lapse_during_commit_is_swept(void **state)
{
    fixture *f = *state;
    seg_result res;
    reserve(f, "b", "slow", 1, T0, &res);
    seg_op ops[4];
    /* the sweeper passes while the reserve is still committing */
    assert_int_equal(seg_core_sweep(&f->core, T0 + 2000, ops, 4), 0);
    seg_core_commit_op(&f->core, &res.op, T0 + 2000);
    assert_int_equal(seg_core_sweep(&f->core, T0 + 2001, ops, 4), 1);
    seg_core_commit_op(&f->core, &ops[0], T0 + 2001);
    assert_int_equal(res.hold->state, SEG_EXPIRED);
    assert_int_equal(f->s1->available + f->s2->available, 3);
    assert_ok(f);
}

static void test_undo_restores_everything(void **state)
{
    fixture *f = *state;
    seg_result r1, r2, r3;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    seg_hold *g = hold_committed(f, "b", "g", 1);
    reserve(f, "b", "new", 1, T0, &r1);
    seg_core_confirm(&f->core, "shop", h->hold_id, 0, T0, &r2);
    seg_core_release(&f->core, "shop", g->hold_id, T0, &r3);
    /* the batch failed: undo in reverse order */
    seg_core_undo_op(&f->core, &r3.op);
    seg_core_undo_op(&f->core, &r2.op);
    seg_core_undo_op(&f->core, &r1.op);
    assert_int_equal(h->state, SEG_HELD);
    assert_int_equal(g->state, SEG_HELD);
    assert_int_equal(f->s1->available + f->s2->available, 1);
    assert_int_equal(f->s1->held + f->s2->held, 2);
    assert_int_equal(f->s1->sold + f->s2->sold, 0);
    /* the undone key is free again */
    reserve(f, "b", "new", 1, T0, &r1);
    assert_int_equal(r1.disp, SEG_COMMIT);
    assert_ok(f);
}

/* A tenant's cap of live holds (seg_tenant): over it BUSY with a sentence;
 * an ended hold, an undone reserve and a fenced segment give room back. */
static void test_tenant_live_hold_cap(void **state)
{
    fixture *f = *state;
    seg_tenant *t = seg_core_find_tenant(&f->core, "shop");
    assert_non_null(t);
    assert_ptr_equal(f->item->tenant, t);
    assert_null(seg_core_find_tenant(&f->core, "other"));
    t->live_holds_max = 2;
    seg_result r1, r2, r3;
    seg_hold *h = hold_committed(f, "b", "k1", 1);
    reserve(f, "b", "k2", 1, T0, &r1);
    assert_int_equal(r1.disp, SEG_COMMIT);
    assert_int_equal(t->live_holds, 2);
    reserve(f, "b", "k3", 1, T0, &r2);
    assert_int_equal(r2.disp, SEG_REPLY);
    assert_int_equal(r2.status, ESC_EBUSY);
    assert_non_null(r2.message);
    assert_int_equal(f->s1->available + f->s2->available, 1); /* nothing was taken */
    seg_core_undo_op(&f->core, &r1.op);                       /* the batch failed */
    assert_int_equal(t->live_holds, 1);
    reserve(f, "b", "k3", 1, T0, &r2);
    assert_int_equal(r2.disp, SEG_COMMIT);
    seg_core_commit_op(&f->core, &r2.op, T0);
    seg_core_release(&f->core, "shop", h->hold_id, T0, &r3);
    seg_core_commit_op(&f->core, &r3.op, T0);
    assert_int_equal(t->live_holds, 1);
    assert_int_equal(f->core.live_holds, 1);
    t->live_holds_max = 0; /* no cap but the node's */
    reserve(f, "b", "k4", 1, T0, &r1);
    assert_int_equal(r1.disp, SEG_COMMIT);
    seg_core_commit_op(&f->core, &r1.op, T0);
    assert_int_equal(t->live_holds, 2);
    seg_core_fence(&f->core, f->s1, NULL, NULL);
    seg_core_fence(&f->core, f->s2, NULL, NULL);
    assert_int_equal(t->live_holds, 0);
    assert_int_equal(f->core.live_holds, 0);
}

static void test_per_buyer_one_pending(void **state)
{
    fixture *f = *state;
    seg_result a, b;
    reserve(f, "bob", "k1", 3, T0, &a);
    assert_int_equal(a.status, ESC_EBUYER_LIMIT); /* over the maximum of 2 alone */
    reserve(f, "bob", "k1", 1, T0, &a);
    assert_int_equal(a.disp, SEG_COMMIT);
    reserve(f, "bob", "k2", 1, T0, &b);
    assert_int_equal(b.disp, SEG_PARK); /* one pending reserve per buyer and item */
    reserve(f, "ann", "k3", 1, T0, &b);
    assert_int_equal(b.disp, SEG_COMMIT);
    seg_core_commit_op(&f->core, &a.op, T0);
    seg_core_commit_op(&f->core, &b.op, T0);
    reserve(f, "bob", "k2", 1, T0, &b);
    assert_int_equal(b.disp, SEG_COMMIT);
    seg_core_undo_op(&f->core, &b.op); /* e.g. the database said BUYER_LIMIT */
    assert_ok(f);
}

static void test_tenant_isolation_and_lookup(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    /* another tenant's hold, held or not, answers as a segment not here */
    seg_core_get(&f->core, "other", h->hold_id, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    seg_core_confirm(&f->core, "other", h->hold_id, 0, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    seg_core_get(&f->core, "other", (1ULL << ESC_HOLD_SEQ_BITS) | 999, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    assert_int_equal(res.disp, SEG_REPLY); /* no lookup for another tenant */
    seg_core_get(&f->core, "shop", (1ULL << ESC_HOLD_SEQ_BITS) | 999, &res);
    assert_int_equal(res.disp, SEG_LOOKUP); /* ours, not in memory: ask the database */
    seg_core_get(&f->core, "shop", (77ULL << ESC_HOLD_SEQ_BITS) | 1, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    seg_core_get(&f->core, "other", (77ULL << ESC_HOLD_SEQ_BITS) | 1, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
}

static void test_fence_drops_segment(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    seg_segment *s = h->seg;
    uint64_t id = h->hold_id;
    seg_core_fence(&f->core, s, NULL, NULL);
    seg_core_confirm(&f->core, "shop", id, 0, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    seg_core_fence(&f->core, s == f->s1 ? f->s2 : f->s1, NULL, NULL);
    reserve(f, "b", "k2", 1, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    assert_int_equal(f->core.live_holds, 0);
}

/* Dropping several segments at once: each is marked (it serves nothing at
 * once, its holds stay until the sweep), then one pass over the holds
 * drops all of theirs, final holds kept for retries included. */
static void test_fence_many_one_pass(void **state)
{
    fixture *f = *state;
    seg_result res;
    seg_hold *h[3]; /* the fixture's 3 units: 2 in s1, 1 in s2 */
    for (int i = 0; i < 3; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        h[i] = hold_committed(f, "b", key, 1);
    }
    assert_ptr_not_equal(h[0]->seg, h[1]->seg); /* reserves go round robin */
    seg_core_release(&f->core, "shop", h[2]->hold_id, T0, &res);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_int_equal(f->core.nretained, 1);
    uint64_t id = h[0]->hold_id;
    seg_core_fence_mark(&f->core, f->s1);
    seg_core_fence_mark(&f->core, f->s2);
    assert_int_equal(f->core.live_holds, 2); /* still here, not served */
    seg_core_confirm(&f->core, "shop", id, 0, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    assert_int_equal(f->core.fence_sweeps, 0);
    assert_int_equal(seg_core_fence_sweep(&f->core, NULL, NULL), 3);
    assert_int_equal(f->core.fence_sweeps, 1);
    assert_int_equal(f->core.live_holds, 0);
    assert_int_equal(f->core.nretained, 0);
    assert_null(f->core.retain_head);
    assert_int_equal(seg_core_fence_sweep(&f->core, NULL, NULL), 0); /* nothing marked */
    assert_int_equal(f->core.fence_sweeps, 1);
    reserve(f, "b", "k9", 1, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
}

static void test_check_catches_drift(void **state)
{
    fixture *f = *state;
    hold_committed(f, "b", "k", 1);
    assert_ok(f);
    f->s1->available += 1; /* a unit out of nowhere */
    uint64_t bad = 0;
    assert_int_equal(seg_core_check(&f->core, &bad), ESC_EINTERNAL);
    assert_int_equal(bad, 1);
    f->s1->available -= 1;
}

/* held moved without a hold changing state: the pair (held, holds_qty)
 * disagrees even though the counters still add up. */
static void test_check_catches_held_without_holds(void **state)
{
    fixture *f = *state;
    hold_committed(f, "b", "k", 1);
    f->s1->available -= 1;
    f->s1->held += 1;
    uint64_t bad = 0;
    assert_int_equal(seg_core_check(&f->core, &bad), ESC_EINTERNAL);
    assert_int_equal(bad, 1);
    f->s1->available += 1;
    f->s1->held -= 1;
    assert_ok(f);
}

/* Extends and undone extends re-key the hold in the expiry order instead
 * of leaving stale entries: one entry per held hold, at its expiry. */
static void test_expiry_order_has_one_entry_per_hold(void **state)
{
    fixture *f = *state;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    seg_result res;
    seg_core_extend(&f->core, "shop", h->hold_id, 5000, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_core_undo_op(&f->core, &res.op);
    seg_core_extend(&f->core, "shop", h->hold_id, 5000, T0, &res);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_int_equal(f->core.expiry.len, 1);
    assert_int_equal(heap_top(&f->core.expiry)->key, T0 + 5000);
    seg_core_release(&f->core, "shop", h->hold_id, T0, &res);
    assert_int_equal(f->core.expiry.len, 0); /* final: out of the order */
    seg_core_undo_op(&f->core, &res.op);
    assert_int_equal(f->core.expiry.len, 1); /* held again: back in */
    assert_ok(f);
}

/* seg_delta: one entry per touched segment in segment id order, deltas
 * that conserve units, a transfer touching its segment with zeros. */
static void test_batch_deltas(void **state)
{
    fixture *f = *state;
    seg_op ops[3];
    seg_result res;
    seg_reserve_in in = {"shop", "tee", "b2", "k2", 1, 0, 2, 1002, 0, false};
    seg_core_reserve(&f->core, &in, T0, &res); /* segment 2 first in op order */
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_ptr_equal(res.op.seg, f->s2);
    ops[0] = res.op;
    seg_hold *h = hold_committed(f, "b", "k1", 2);
    assert_ptr_equal(h->seg, f->s1);
    seg_core_confirm(&f->core, "shop", h->hold_id, 1, T0, &res);
    ops[1] = res.op;
    assert_int_equal(seg_core_give(&f->core, f->s2, 77, 1, &ops[2]), 0);
    assert_int_equal(ops[2].qty, 0); /* the reserve took the last unit */
    seg_delta d[3];
    assert_int_equal(seg_delta_build(&f->core, ops, 3, d, 3), 2);
    /* every row asks for the segment's next range of hold ids */
    assert_true(d[0].seq_limit == f->s1->next_seq + ESC_HOLD_SEQ_RANGE);
    assert_true(d[1].seq_limit == f->s2->next_seq + ESC_HOLD_SEQ_RANGE);
    assert_ptr_equal(d[0].seg, f->s1);
    assert_int_equal(d[0].available, 1); /* the unit not sold comes back */
    assert_int_equal(d[0].held, -2);
    assert_int_equal(d[0].sold, 1);
    assert_ptr_equal(d[1].seg, f->s2);
    assert_int_equal(d[1].available, -1);
    assert_int_equal(d[1].held, 1);
    assert_int_equal(d[1].sold, 0);
    seg_core_commit_op(&f->core, &ops[0], T0);
    seg_core_commit_op(&f->core, &ops[1], T0);
    seg_core_undo_op(&f->core, &ops[2]);
    assert_ok(f);
}

/* ---- managed mode: transfers ---------------------------------------------- */

static void reserve_at(fixture *f, const char *key, int64_t qty, uint64_t seg, seg_result *res)
{
    seg_reserve_in in = {"shop", "tee", key, key, qty, 0, seg, qty * 1000 + (int64_t)strlen(key),
                         0,      false};
    seg_core_reserve(&f->core, &in, T0, res);
}

static void assert_counts(const seg_segment *s, int64_t avail, int64_t held, int64_t sold,
                          int64_t allocated)
{
    assert_int_equal(s->available, avail);
    assert_int_equal(s->held, held);
    assert_int_equal(s->sold, sold);
    assert_int_equal(s->allocated, allocated);
}

static void test_give_takes_what_is_there_and_undo_returns_it(void **state)
{
    fixture *f = *state; /* s1: 2 available, s2: 1 */
    seg_op op;
    assert_int_equal(seg_core_give(&f->core, f->s1, 7, 5, &op), 0);
    assert_int_equal(op.kind, SEG_OP_GIVE);
    assert_ptr_equal(op.seg, f->s1);
    assert_null(op.hold);
    assert_int_equal(op.transfer_id, 7);
    assert_int_equal(op.qty, 2); /* min(5, available) */
    assert_counts(f->s1, 0, 0, 0, 0);
    assert_true(f->s1->xfer_pending);
    assert_ok(f);
    /* nothing given away is sold meanwhile */
    seg_result res;
    f->core.managed = true;
    reserve_at(f, "k", 1, 1, &res);
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    f->core.managed = false;
    /* stale or failed batch: everything back */
    seg_core_undo_op(&f->core, &op);
    assert_counts(f->s1, 2, 0, 0, 2);
    assert_false(f->s1->xfer_pending);
    assert_ok(f);
    /* again, committed as sent */
    assert_int_equal(seg_core_give(&f->core, f->s1, 7, 1, &op), 0);
    assert_int_equal(op.qty, 1);
    seg_core_commit_op(&f->core, &op, T0);
    assert_counts(f->s1, 1, 0, 0, 1);
    assert_false(f->s1->xfer_pending);
    assert_ok(f);
}

static void test_give_from_an_empty_segment_gives_zero(void **state)
{
    fixture *f = *state;
    hold_committed(f, "b", "k1", 1); /* s2 or s1: take everything */
    hold_committed(f, "b", "k2", 1);
    hold_committed(f, "b", "k3", 1);
    assert_int_equal(f->s1->available + f->s2->available, 0);
    seg_op op;
    assert_int_equal(seg_core_give(&f->core, f->s1, 9, 3, &op), 0);
    assert_int_equal(op.qty, 0); /* the database cancels the transfer */
    seg_core_commit_op(&f->core, &op, T0);
    assert_counts(f->s1, 0, 2, 0, 2);
    assert_ok(f);
}

static void test_give_next_to_a_tentative_reserve(void **state)
{
    fixture *f = *state;
    seg_result res;
    reserve_at(f, "k", 1, 1, &res); /* pending in the same batch */
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_ptr_equal(res.hold->seg, f->s1);
    seg_op op;
    assert_int_equal(seg_core_give(&f->core, f->s1, 3, 5, &op), 0);
    assert_int_equal(op.qty, 1); /* the reserved unit is not given */
    assert_counts(f->s1, 0, 1, 0, 1);
    assert_ok(f);
    /* the batch failed: both undone, in reverse order as settle() does */
    seg_core_undo_op(&f->core, &op);
    seg_core_undo_op(&f->core, &res.op);
    assert_counts(f->s1, 2, 0, 0, 2);
    assert_ok(f);
    /* committed: the reserve keeps its unit, the give took the other */
    reserve_at(f, "k", 1, 1, &res);
    assert_int_equal(seg_core_give(&f->core, f->s1, 3, 5, &op), 0);
    seg_core_commit_op(&f->core, &res.op, T0);
    seg_core_commit_op(&f->core, &op, T0);
    assert_counts(f->s1, 0, 1, 0, 1);
    assert_ok(f);
    /* the hold is released: its unit comes back to the donor */
    seg_core_release(&f->core, "shop", res.hold->hold_id, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_counts(f->s1, 1, 0, 0, 1);
    assert_ok(f);
}

static void test_receive_adds_only_when_committed(void **state)
{
    fixture *f = *state;
    seg_op op;
    assert_int_equal(seg_core_receive(&f->core, f->s2, 11, 3, &op), 0);
    assert_int_equal(op.kind, SEG_OP_RECEIVE);
    assert_counts(f->s2, 1, 0, 0, 1); /* nothing yet */
    assert_ok(f);
    seg_result res;
    f->core.managed = true;
    reserve_at(f, "k", 2, 2, &res); /* the pending receive adds nothing yet */
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    f->core.managed = false;
    /* stale (the transfer had moved on): nothing */
    seg_core_undo_op(&f->core, &op);
    assert_counts(f->s2, 1, 0, 0, 1);
    assert_false(f->s2->xfer_pending);
    assert_ok(f);
    /* received: the database's qty counts, not the command's */
    assert_int_equal(seg_core_receive(&f->core, f->s2, 11, 3, &op), 0);
    op.qty = 4;
    seg_core_commit_op(&f->core, &op, T0);
    assert_counts(f->s2, 5, 0, 0, 5);
    assert_ok(f);
}

static void test_one_transfer_op_per_segment(void **state)
{
    fixture *f = *state;
    seg_op a, b;
    assert_int_equal(seg_core_give(&f->core, f->s1, 1, 1, &a), 0);
    assert_int_equal(seg_core_give(&f->core, f->s1, 2, 1, &b), ESC_EBUSY);
    assert_int_equal(seg_core_receive(&f->core, f->s1, 2, 1, &b), ESC_EBUSY);
    assert_int_equal(seg_core_receive(&f->core, f->s2, 2, 0, &b), ESC_EINVAL);
    assert_int_equal(seg_core_give(&f->core, f->s2, 2, -1, &b), ESC_EINVAL);
    assert_int_equal(seg_core_receive(&f->core, f->s2, 2, 1, &b), 0);
    seg_core_commit_op(&f->core, &a, T0);
    seg_core_commit_op(&f->core, &b, T0);
    assert_counts(f->s1, 1, 0, 0, 1);
    assert_counts(f->s2, 2, 0, 0, 2);
    assert_ok(f);
    /* a dropped segment neither gives nor receives */
    seg_core_fence(&f->core, f->s1, NULL, NULL);
    assert_int_equal(seg_core_give(&f->core, f->s1, 5, 1, &a), ESC_ENOT_OWNER);
    assert_int_equal(seg_core_receive(&f->core, f->s1, 5, 1, &a), ESC_ENOT_OWNER);
    assert_ok(f);
}

/* ---- managed mode: reserves ------------------------------------------------ */

static void test_managed_reserve_answers(void **state)
{
    fixture *f = *state;
    f->core.managed = true;
    seg_result res;
    /* the hint is strict: s2 has 1, a reserve of 2 there is SEGMENT_EMPTY
     * even though s1 has 2 */
    reserve_at(f, "k1", 2, 2, &res);
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    assert_true(res.went_dry); /* the node reports it at once */
    assert_true(f->s2->dry);
    assert_int_equal(f->s2->empties, 1);
    reserve_at(f, "k1", 2, 2, &res);
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    assert_false(res.went_dry); /* still dry: nothing new to report early */
    assert_int_equal(f->s2->empties, 2);
    assert_int_equal(f->s1->empties, 0);
    /* a segment not served here */
    reserve_at(f, "k2", 1, 99, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    /* an item this node serves nothing of */
    seg_reserve_in other = {"shop", "hat", "b", "k3", 1, 0, 0, 1, 0, false};
    seg_core_reserve(&f->core, &other, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    /* reserved counts committed units */
    reserve_at(f, "k4", 2, 1, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_ptr_equal(res.hold->seg, f->s1);
    assert_int_equal(f->s1->reserved, 0);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_int_equal(f->s1->reserved, 2);
    assert_ok(f);
    /* s1 is empty with units held: never TRY_LATER or SOLD_OUT from a node */
    reserve_at(f, "k5", 1, 1, &res);
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    assert_true(res.went_dry);
    reserve_at(f, "k6", 5, 0, &res); /* no hint: every live segment is dry for 5 */
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    assert_false(res.went_dry);
    assert_int_equal(f->s1->empties, 2);
    assert_int_equal(f->s2->empties, 3);
    /* draining: no new reserves, with a sentence saying why */
    f->s2->state = SEG_DRAINING;
    reserve_at(f, "k7", 1, 2, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    assert_non_null(res.message);
    reserve_at(f, "k8", 1, 0, &res); /* no hint: the draining one is not picked */
    assert_int_equal(res.status, ESC_ESEGMENT_EMPTY);
    assert_int_equal(f->s2->empties, 3);
    /* ... but its holds are served (a release on a draining segment) */
    f->s2->state = SEG_ACTIVE;
    reserve_at(f, "k9", 1, 2, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_core_commit_op(&f->core, &res.op, T0);
    f->s2->state = SEG_DRAINING;
    uint64_t id = res.hold->hold_id;
    seg_core_release(&f->core, "shop", id, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_true(f->s2->dry);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_counts(f->s2, 1, 0, 0, 1);
    assert_false(f->s2->dry); /* units came back: no longer reported dry */
    /* paused */
    f->s2->state = SEG_ACTIVE;
    f->item->paused = true;
    reserve_at(f, "k10", 1, 2, &res);
    assert_int_equal(res.status, ESC_EPAUSED);
    assert_ok(f);
}

static void test_dropped_segment_loads_again(void **state)
{
    fixture *f = *state;
    f->core.managed = true;
    seg_hold *h = hold_committed(f, "b", "k", 1);
    seg_segment *s = h->seg;
    uint64_t id = s->segment_id;
    seg_core_fence(&f->core, s, NULL, NULL);
    assert_int_equal(f->core.live_holds, 0);
    seg_segment proto, *again;
    memset(&proto, 0, sizeof proto);
    proto.segment_id = id;
    proto.epoch = 5;
    proto.available = 7;
    proto.held = 0;
    proto.sold = 3;
    proto.next_seq = 40;
    proto.seq_limit = 39; /* a reversed range is refused */
    size_t nsegs = f->core.nsegs;
    assert_int_equal(seg_core_add_segment(&f->core, f->item, &proto, &again), ESC_EINVAL);
    proto.seq_limit = 40 + ESC_HOLD_SEQ_RANGE;
    assert_int_equal(seg_core_add_segment(&f->core, f->item, &proto, &again), 0);
    assert_ptr_equal(again, s); /* the same slot, no second copy */
    assert_int_equal(f->core.nsegs, nsegs);
    assert_int_equal(f->item->nsegs, 2);
    assert_false(again->fenced);
    assert_int_equal(again->epoch, 5);
    assert_counts(again, 7, 0, 3, 10);
    assert_int_equal(again->reserved, 0);
    assert_ptr_equal(seg_core_find_segment(&f->core, id), again);
    /* served already: a second load is refused */
    assert_int_equal(seg_core_add_segment(&f->core, f->item, &proto, &again), ESC_ECONFLICT);
    seg_result res;
    reserve_at(f, "k2", 1, id, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_int_equal(res.hold->hold_id, (id << ESC_HOLD_SEQ_BITS) | 40);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_ok(f);
}

/* A resolve never reserves: a key with a hold answers it (PARK while it is
 * being created), a key without one is SEG_LOOKUP (the database decides),
 * and the attempt is void from then on: its late copies reserve nothing,
 * another call with the same key does, and the mark ages out. */
/* Hold ids come only from the range the owner reserved: at its end a
 * reserve is ESC_EBUSY and the segment asks for more in the next batch
 * (a row with zero deltas when no op touches it); a committed grant lets
 * reserves go on, with ids past the old range. */
static void test_hold_ids_only_from_the_reserved_range(void **state)
{
    fixture *f = *state;
    f->s1->seq_limit = f->s1->next_seq + 1;
    seg_result res;
    reserve_at(f, "k1", 1, 1, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    uint64_t first = res.hold->hold_id;
    seg_core_commit_op(&f->core, &res.op, T0);
    reserve_at(f, "k2", 1, 1, &res); /* segment 1's range is used up */
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_EBUSY);
    assert_non_null(res.message);
    assert_true(f->s1->seq_wanted);
    assert_int_equal(f->core.seq_wanted, 1);
    reserve_at(f, "k3", 1, 1, &res); /* asked once, counted once */
    assert_int_equal(res.status, ESC_EBUSY);
    assert_int_equal(f->core.seq_wanted, 1);
    seg_delta d[2];
    assert_int_equal(seg_delta_build(&f->core, NULL, 0, d, 2), 1);
    assert_ptr_equal(d[0].seg, f->s1);
    assert_int_equal(d[0].available + d[0].held + d[0].sold, 0);
    assert_true(d[0].seq_limit == f->s1->next_seq + ESC_HOLD_SEQ_RANGE);
    seg_core_seq_granted(&f->core, f->s1, d[0].seq_limit);
    assert_false(f->s1->seq_wanted);
    assert_int_equal(f->core.seq_wanted, 0);
    seg_core_seq_granted(&f->core, f->s1, 1); /* a limit never goes down */
    assert_true(f->s1->seq_limit == d[0].seq_limit);
    reserve_at(f, "k2", 1, 1, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_true(res.hold->hold_id == first + 1);
    seg_core_commit_op(&f->core, &res.op, T0);
    assert_int_equal(seg_delta_build(&f->core, NULL, 0, d, 2), 0); /* nothing wanted */
    /* a fence forgets the wish: a fenced segment asks for nothing */
    f->s2->seq_limit = f->s2->next_seq;
    reserve_at(f, "k4", 1, 2, &res);
    assert_int_equal(res.status, ESC_EBUSY);
    assert_int_equal(f->core.seq_wanted, 1);
    seg_core_fence(&f->core, f->s2, NULL, NULL);
    assert_int_equal(f->core.seq_wanted, 0);
    assert_ok(f);
}

static void test_resolve_voids_late_copies(void **state)
{
    fixture *f = *state;
    seg_result res;
    reserve_attempt(f, "k1", 0, 7, true, T0, &res);
    assert_int_equal(res.disp, SEG_LOOKUP);
    assert_int_equal(f->s1->available + f->s2->available, 3);
    reserve_attempt(f, "k1", 0, 7, false, T0, &res); /* a late copy */
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, ESC_ECONFLICT);
    assert_int_equal(f->s1->available + f->s2->available, 3);
    reserve_attempt(f, "k1", 0, 8, false, T0, &res); /* the buyer's new call */
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_op op = res.op;
    reserve_attempt(f, "k1", 0, 7, true, T0, &res);
    assert_int_equal(res.disp, SEG_PARK);
    seg_core_commit_op(&f->core, &op, T0);
    reserve_attempt(f, "k1", 0, 7, true, T0, &res);
    assert_int_equal(res.disp, SEG_REPLY);
    assert_int_equal(res.status, 0);
    assert_ptr_equal(res.hold, op.hold);
    /* attempt 0 (an old client) voids nothing */
    reserve_attempt(f, "k2", 0, 0, true, T0, &res);
    assert_int_equal(res.disp, SEG_LOOKUP);
    reserve_attempt(f, "k2", 0, 0, false, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_core_undo_op(&f->core, &res.op);
    /* marks age out after ESC_VOID_MS */
    reserve_attempt(f, "k3", 0, 9, true, T0, &res);
    seg_core_trim(&f->core, T0 + ESC_VOID_MS - 1);
    reserve_attempt(f, "k3", 0, 9, false, T0, &res);
    assert_int_equal(res.status, ESC_ECONFLICT);
    seg_core_trim(&f->core, T0 + ESC_VOID_MS);
    reserve_attempt(f, "k3", 0, 9, false, T0 + ESC_VOID_MS, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    seg_core_undo_op(&f->core, &res.op);
    assert_ok(f);
}

/* replay: a reserve answered with the key's existing hold says whether
 * this call made it (its attempt) or another one did. */
static void test_replay_names_the_call(void **state)
{
    fixture *f = *state;
    seg_result res;
    reserve_attempt(f, "k1", 0, 7, false, T0, &res);
    assert_int_equal(res.disp, SEG_COMMIT);
    assert_false(res.replay);
    seg_op op = res.op;
    seg_core_commit_op(&f->core, &op, T0);
    reserve_attempt(f, "k1", 0, 7, false, T0, &res); /* a resend of the same call */
    assert_int_equal(res.status, 0);
    assert_ptr_equal(res.hold, op.hold);
    assert_false(res.replay);
    reserve_attempt(f, "k1", 0, 7, true, T0, &res); /* that call resolving */
    assert_int_equal(res.status, 0);
    assert_false(res.replay);
    reserve_attempt(f, "k1", 0, 8, false, T0, &res); /* a later call with the key */
    assert_int_equal(res.status, 0);
    assert_ptr_equal(res.hold, op.hold);
    assert_true(res.replay);
    /* a hold loaded from the database names no call: a replay for everyone */
    seg_hold proto;
    memset(&proto, 0, sizeof proto);
    proto.hold_id = (1ULL << ESC_HOLD_SEQ_BITS) | 77;
    proto.qty = 1;
    proto.state = SEG_CONVERTED;
    proto.qty_sold = 1;
    proto.request_hash = 1001;
    seg_hold *loaded;
    assert_int_equal(seg_core_add_hold(&f->core, f->s1, &proto, "b", "k-old", &loaded), 0);
    reserve_attempt(f, "k-old", 0, 9, false, T0, &res);
    assert_int_equal(res.status, 0);
    assert_ptr_equal(res.hold, loaded);
    assert_true(res.replay);
    /* a mismatch is no replay */
    reserve(f, "other-buyer", "k1", 1, T0, &res);
    assert_int_equal(res.status, ESC_EIDEMPOTENCY_MISMATCH);
    assert_false(res.replay);
}

/* A resolve is answered by the owner of the segment it names (draining
 * included), else NOT_OWNER: the client asks the owner. */
static void test_resolve_needs_the_owner(void **state)
{
    fixture *f = *state;
    f->core.managed = true;
    seg_result res;
    reserve_attempt(f, "k1", 99, 5, true, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    reserve_attempt(f, "k1", 99, 5, false, T0, &res); /* nothing was voided */
    assert_int_not_equal(res.status, ESC_ECONFLICT);
    f->s2->state = SEG_DRAINING;
    reserve_attempt(f, "k1", 2, 5, true, T0, &res);
    assert_int_equal(res.disp, SEG_LOOKUP);
    seg_core_fence(&f->core, f->s1, NULL, NULL);
    reserve_attempt(f, "k4", 1, 6, true, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    seg_reserve_in other = {"shop", "hat", "b", "k5", 1, 0, 0, 1, 6, true};
    seg_core_reserve(&f->core, &other, T0, &res);
    assert_int_equal(res.status, ESC_ENOT_OWNER);
    assert_ok(f);
}

/* The void table is bounded and never drops a young mark to make room. */
static void test_voids_bounded(void **state)
{
    (void)state;
    seg_voids v;
    assert_int_equal(seg_voids_init(&v), 0);
    for (uint32_t i = 0; i < ESC_VOIDS_MAX; i++) {
        assert_int_equal(seg_voids_add(&v, "shop", "k", i + 1, T0 + i / 1000), 0);
    }
    assert_int_equal(seg_voids_add(&v, "shop", "k", 1, T0), 0); /* already there */
    assert_int_equal(seg_voids_add(&v, "shop", "k", ESC_VOIDS_MAX + 1, T0 + 70), ESC_EBUSY);
    assert_true(seg_voids_has(&v, "shop", "k", 1));
    assert_false(seg_voids_has(&v, "shop2", "k", 1));
    assert_false(seg_voids_has(&v, "shop", "k2", 1));
    assert_int_equal(seg_voids_add(&v, "shop", "k", ESC_VOIDS_MAX + 1, T0 + ESC_VOID_MS), 0);
    assert_false(seg_voids_has(&v, "shop", "k", 1)); /* aged out to make room */
    assert_true(seg_voids_has(&v, "shop", "k", ESC_VOIDS_MAX));
    seg_voids_fini(&v);
}

/* ---- touched: every change of a segment's reported figures is noted ------- */

typedef struct figures {
    uint64_t epoch, reserved, empties;
    int64_t available, held, returning, sold;
    int state;
    bool fenced, dry;
} figures;

static figures figures_of(const seg_segment *s)
{
    figures x;
    memset(&x, 0, sizeof x);
    x.epoch = s->epoch;
    x.reserved = s->reserved;
    x.empties = s->empties;
    x.available = s->available;
    x.held = s->held;
    x.returning = s->returning;
    x.sold = s->sold;
    x.state = s->state;
    x.fenced = s->fenced;
    x.dry = s->dry;
    return x;
}

static uint64_t rnd_state = 88172645463325252ULL;

static size_t rnd(size_t n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (size_t)(rnd_state % n);
}

static int setup_touch(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    *state = &f;
    if (setup_item(&f, 20, 10, 0, 0) != 0) {
        return -1;
    }
    seg_segment s;
    memset(&s, 0, sizeof s);
    s.segment_id = 3;
    s.epoch = 1;
    s.available = 5;
    s.next_seq = 1;
    s.seq_limit = 1 + ESC_HOLD_SEQ_RANGE;
    seg_segment *s3;
    f.core.managed = true;
    return seg_core_add_segment(&f.core, f.item, &s, &s3);
}

#define TOUCH_OPS 64

/* Random decisions, transfers, commits, undos, expiries, fences and loads
 * again: a segment not in core.touched has the figures it had when the
 * list was last emptied. Every place that changes a figure and forgets
 * seg_core_touch fails here (the heartbeat would not look at it). */
static void test_touched_names_every_change(void **state)
{
    fixture *f = *state;
    seg_core *c = &f->core;
    seg_op ops[TOUCH_OPS];
    size_t nops = 0;
    uint64_t holds[256];
    size_t nholds = 0;
    figures snap[16];
    int64_t now = T0;
    for (size_t i = 0; i < c->nsegs; i++) {
        assert_true(c->segs[i].touched); /* loaded: new figures */
    }
    seg_core_touched_clear(c);
    for (size_t i = 0; i < c->nsegs; i++) {
        snap[i] = figures_of(&c->segs[i]);
    }
    for (int step = 0; step < 20000; step++) {
        seg_result res;
        memset(&res, 0, sizeof res);
        size_t k = rnd(10);
        seg_segment *s = &c->segs[rnd(c->nsegs)];
        bool busy = false;
        for (size_t j = 0; j < nops; j++) {
            busy = busy || ops[j].seg == s;
        }
        if (k <= 2 && nops < TOUCH_OPS) { /* reserve: any segment, or a named one */
            char key[32];
            snprintf(key, sizeof key, "k%d", step);
            seg_reserve_in in = {
                "shop", "tee", "b",  key, (int64_t)(1 + rnd(3)), 0, k == 0 ? s->segment_id : 0,
                7,      0,     false};
            seg_core_reserve(c, &in, now, &res);
        } else if (k == 3 && nholds > 0 && nops < TOUCH_OPS) {
            uint64_t id = holds[rnd(nholds)];
            switch (rnd(3)) {
            case 0:
                seg_core_confirm(c, "shop", id, (int64_t)rnd(2), now, &res);
                break;
            case 1:
                seg_core_release(c, "shop", id, now, &res);
                break;
            default:
                seg_core_extend(c, "shop", id, 500, now, &res);
                break;
            }
        } else if (k == 4 && nops < TOUCH_OPS && !s->fenced && !s->xfer_pending) {
            int rc =
                rnd(2) ? seg_core_give(c, s, (uint64_t)step, (int64_t)(1 + rnd(4)), &ops[nops])
                       : seg_core_receive(c, s, (uint64_t)step, (int64_t)(1 + rnd(4)), &ops[nops]);
            assert_int_equal(rc, 0);
            nops++;
        } else if ((k == 5 || k == 6) && nops > 0) { /* a batch's outcome */
            size_t j = rnd(nops);
            seg_op op = ops[j];
            ops[j] = ops[--nops];
            if (op.kind == SEG_OP_RECEIVE) {
                op.qty = (int64_t)rnd((size_t)op.qty + 1);
            }
            if (k == 5) {
                seg_core_commit_op(c, &op, now);
            } else {
                seg_core_undo_op(c, &op);
            }
        } else if (k == 7 && nops < TOUCH_OPS - 8) {
            now += (int64_t)rnd(800);
            nops += seg_core_sweep(c, now, ops + nops, 8);
        } else if (k == 8 && !busy && rnd(8) == 0) {
            if (!s->fenced) {
                seg_core_fence(c, s, NULL, NULL);
            } else { /* loaded again, at a newer epoch */
                seg_segment p;
                memset(&p, 0, sizeof p);
                p.segment_id = s->segment_id;
                p.epoch = s->epoch + 1;
                p.available = (int64_t)rnd(20);
                p.sold = s->sold;
                p.next_seq = s->next_seq;
                p.seq_limit = s->next_seq + ESC_HOLD_SEQ_RANGE;
                seg_segment *out;
                assert_int_equal(seg_core_add_segment(c, f->item, &p, &out), 0);
            }
        } else if (k == 9 && rnd(4) == 0) { /* the coordinator drains it, or not */
            seg_core_set_state(c, s, rnd(2) ? SEG_DRAINING : SEG_ACTIVE);
        } else if (k == 9) {
            seg_core_touched_clear(c);
            for (size_t i = 0; i < c->nsegs; i++) {
                snap[i] = figures_of(&c->segs[i]);
            }
        }
        if (res.disp == SEG_COMMIT) {
            ops[nops++] = res.op;
            if (res.op.kind == SEG_OP_RESERVE && nholds < 256) {
                holds[nholds++] = res.hold->hold_id;
            }
        }
        size_t marked = 0;
        for (size_t i = 0; i < c->nsegs; i++) {
            figures now_f = figures_of(&c->segs[i]);
            if (c->segs[i].touched) {
                marked++;
                continue;
            }
            assert_memory_equal(&snap[i], &now_f, sizeof now_f);
        }
        assert_int_equal(marked, c->ntouched);
        for (size_t j = 0; j < c->ntouched; j++) {
            assert_true(c->segs[c->touched[j]].touched);
        }
    }
    while (nops > 0) { /* settle, so teardown frees a quiet core */
        seg_core_undo_op(c, &ops[--nops]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reserve_until_sold_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sold_out_when_nothing_can_return, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_empty_when_stock_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_and_unknowns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idempotency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confirm_partial_and_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_twice_returns_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry_at_point_of_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweeper_and_extend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lapse_during_commit_is_swept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undo_restores_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_buyer_one_pending, setup_limited, teardown),
        cmocka_unit_test_setup_teardown(test_tenant_live_hold_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tenant_isolation_and_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_drops_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_many_one_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_catches_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_catches_held_without_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry_order_has_one_entry_per_hold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_deltas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_give_takes_what_is_there_and_undo_returns_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_give_from_an_empty_segment_gives_zero, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_give_next_to_a_tentative_reserve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_receive_adds_only_when_committed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_transfer_op_per_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_managed_reserve_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_segment_loads_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_touched_names_every_change, setup_touch, teardown),
        cmocka_unit_test_setup_teardown(test_hold_ids_only_from_the_reserved_range, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resolve_voids_late_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_needs_the_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_names_the_call, setup, teardown),
        cmocka_unit_test(test_voids_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
