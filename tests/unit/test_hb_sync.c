/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hb_sync.c - delta heartbeats' pure logic: the node's memory of what
 * the coordinator acknowledged (hb_sync.h: a heartbeat carries what changed,
 * resends what was not acknowledged, names what is gone, starts over after
 * a restart), the node's sorted assignment with changes applied, and the
 * coordinator's published assignment (coord_asg.h): a full assignment in
 * parts of at most ESC_HB_SEGMENTS_MAX, then only the changes, each end's
 * count and digest equal after every step; the mirror's digest equals the
 * node's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord_asg.h"
#include "hb_sync.h"

static wire_seg_stats stats(uint64_t id, int64_t available)
{
    wire_seg_stats s;
    memset(&s, 0, sizeof s);
    s.segment_id = id;
    s.epoch = 3;
    s.available = available;
    return s;
}

/* What heartbeat corr at now_ms carries of n segments with figures h[]. */
static int heartbeat(hb_sync *t, const uint64_t *h, size_t n, uint64_t corr, int64_t now_ms,
                     int *gone)
{
    int sent = 0;
    *gone = 0;
    assert_int_equal(hb_sync_grow(t, n), 0);
    for (size_t i = 0; i < n; i++) {
        int w = hb_sync_want(t, i, h[i], now_ms);
        if (w != HB_SYNC_SKIP) {
            hb_sync_sent(t, i, w == HB_SYNC_SEND ? h[i] : 0, corr);
            sent += w == HB_SYNC_SEND;
            *gone += w == HB_SYNC_GONE;
        }
    }
    return sent;
}

static void test_node_sends_changes_only(void **state)
{
    (void)state;
    hb_sync t;
    hb_sync_init(&t);
    assert_true(t.resync); /* a new process begins with a full report */
    uint64_t h[5];
    for (int i = 0; i < 5; i++) {
        wire_seg_stats s = stats(10 + (uint64_t)i, 100);
        h[i] = hb_sync_stats_hash(&s);
        assert_int_not_equal(h[i], 0);
    }
    int gone;
    assert_int_equal(heartbeat(&t, h, 5, 1, 0, &gone), 5);
    /* no reply yet: heartbeat 2 carries them all again */
    assert_int_equal(heartbeat(&t, h, 5, 2, 10, &gone), 5);
    hb_sync_acked(&t, 1); /* the reply to 1 comes late: 2 is what counts */
    assert_int_equal(t.slots[0].acked, 0);
    hb_sync_acked(&t, 2);
    assert_int_equal(t.slots[0].acked, h[0]);
    /* acknowledged and quiet for HB_SYNC_HOT_MS: nothing */
    assert_int_equal(heartbeat(&t, h, 5, 3, HB_SYNC_HOT_MS + 20, &gone), 0);
    /* one changes: that one, and it stays in heartbeats while recent */
    wire_seg_stats s = stats(12, 99);
    h[2] = hb_sync_stats_hash(&s);
    assert_int_equal(heartbeat(&t, h, 5, 4, HB_SYNC_HOT_MS + 30, &gone), 1);
    hb_sync_acked(&t, 4);
    assert_int_equal(heartbeat(&t, h, 5, 5, HB_SYNC_HOT_MS + 40, &gone), 1);
    hb_sync_acked(&t, 5);
    assert_int_equal(heartbeat(&t, h, 5, 6, 3 * HB_SYNC_HOT_MS, &gone), 0);
    /* one is no longer served: named gone until acknowledged, then never */
    h[4] = 0;
    assert_int_equal(heartbeat(&t, h, 5, 7, 3 * HB_SYNC_HOT_MS, &gone), 0);
    assert_int_equal(gone, 1);
    assert_int_equal(heartbeat(&t, h, 5, 8, 3 * HB_SYNC_HOT_MS, &gone), 0);
    assert_int_equal(gone, 1);
    hb_sync_acked(&t, 8);
    heartbeat(&t, h, 5, 9, 3 * HB_SYNC_HOT_MS, &gone);
    assert_int_equal(gone, 0);
    /* the coordinator restarted: everything served again, nothing gone */
    t.resync = false;
    hb_sync_restart(&t);
    assert_true(t.resync);
    assert_int_equal(heartbeat(&t, h, 5, 10, 3 * HB_SYNC_HOT_MS, &gone), 4);
    assert_int_equal(gone, 0);
    hb_sync_fini(&t);
}

static void test_assign_set(void **state)
{
    (void)state;
    hb_assign_set s;
    hb_assign_init(&s);
    wire_assignment a[4] = {
        {30, 1, 0, false}, {10, 1, 0, false}, {20, 1, 0, false}, {40, 2, 1, true}};
    assert_int_equal(hb_assign_replace(&s, a, 4), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.v[0].segment_id, 10);
    assert_int_equal(s.v[3].segment_id, 40);
    assert_non_null(hb_assign_find(&s, 20));
    assert_null(hb_assign_find(&s, 25));
    wire_assignment upd[2] = {{20, 5, 1, false}, {25, 1, 0, false}};
    uint64_t del[2] = {40, 99};
    assert_int_equal(hb_assign_apply(&s, upd, 2, del, 2), 0);
    assert_int_equal(s.n, 4); /* 10 20 25 30 */
    assert_int_equal(hb_assign_find(&s, 20)->epoch, 5);
    assert_non_null(hb_assign_find(&s, 25));
    assert_null(hb_assign_find(&s, 40));
    for (size_t i = 1; i < s.n; i++) {
        assert_true(s.v[i - 1].segment_id < s.v[i].segment_id);
    }
    uint32_t count;
    uint64_t d1, d2;
    hb_assign_sum(&s, &count, &d1);
    assert_int_equal(count, 4);
    /* order does not matter to the digest; content does */
    wire_assignment same[4] = {
        {30, 1, 0, false}, {25, 1, 0, false}, {20, 5, 1, false}, {10, 1, 0, false}};
    hb_assign_set t;
    hb_assign_init(&t);
    assert_int_equal(hb_assign_replace(&t, same, 4), 0);
    hb_assign_sum(&t, &count, &d2);
    assert_true(d1 == d2);
    t.v[0].paused = true; /* behind the set's back: only a walk sees it */
    hb_assign_sum_all(&t, &count, &d2);
    assert_true(d1 != d2);
    hb_assign_fini(&s);
    hb_assign_fini(&t);
}

/* ---- the coordinator's side, with a node applying its replies ------------------ */

#define NSEGS 2500

typedef struct rig {
    coord_cat cat;
    coord_node *a, *b;
    wire_hb_reply rep;
    wire_heartbeat hb;
    /* node a's view */
    hb_assign_set have, staging;
    uint64_t version, full_version, cursor;
} rig;

static void rig_init(rig *r)
{
    memset(r, 0, sizeof *r);
    assert_int_equal(coord_cat_init(&r->cat), 0);
    coord_asg_start(&r->cat, 77, 1000);
    r->a = coord_cat_add_node(&r->cat, "a");
    r->b = coord_cat_add_node(&r->cat, "b");
    coord_node *nodes[2] = {r->a, r->b};
    for (int i = 0; i < 2; i++) {
        nodes[i]->alive = nodes[i]->seen = true;
        nodes[i]->incarnation = nodes[i]->db_incarnation = 5;
        nodes[i]->db_state = 0;
    }
    char id[32];
    for (int i = 0; i < NSEGS / 4; i++) {
        snprintf(id, sizeof id, "item-%d", i);
        coord_item *it = coord_cat_add_item(&r->cat, "t", id);
        for (int k = 0; k < 4; k++) {
            coord_seg *s = coord_cat_add_seg(&r->cat, it, (uint64_t)(i * 4 + k + 1), k);
            coord_cat_set_owner(s, k == 3 ? r->b : r->a); /* a: 3 of 4 */
            s->epoch = 1;
        }
    }
    hb_assign_init(&r->have);
    hb_assign_init(&r->staging);
}

static void rig_fini(rig *r)
{
    hb_assign_fini(&r->have);
    hb_assign_fini(&r->staging);
    coord_cat_fini(&r->cat);
}

/* Node a heartbeats and applies the reply as the node does; returns the
 * number of segment entries the reply carried. */
static size_t round_trip(rig *r)
{
    memset(&r->hb, 0, sizeof r->hb);
    r->hb.delta = true;
    r->hb.assign_version = r->version;
    r->hb.assign_full_version = r->full_version;
    r->hb.assign_cursor = r->cursor;
    coord_asg_reply(&r->cat, r->a, &r->hb, &r->rep);
    assert_true(r->rep.nsegs <= ESC_HB_SEGMENTS_MAX);
    if (r->rep.assign_delta) {
        assert_int_equal(r->rep.assign_base, r->version);
        assert_int_equal(hb_assign_apply(&r->have, r->rep.segs, r->rep.nsegs, r->rep.unassigned,
                                         r->rep.nunassigned),
                         0);
        r->version = r->rep.assign_version;
        return r->rep.nsegs + r->rep.nunassigned;
    }
    if (r->rep.assign_cursor == 0) {
        r->staging.n = 0;
        r->full_version = r->rep.assign_version;
    }
    assert_int_equal(r->rep.assign_cursor, r->cursor);
    assert_int_equal(hb_assign_append(&r->staging, r->rep.segs, r->rep.nsegs), 0);
    r->cursor = r->rep.assign_next;
    if (!r->rep.assign_more) {
        assert_int_equal(hb_assign_replace(&r->have, r->staging.v, r->staging.n), 0);
        r->version = r->full_version;
        r->full_version = r->cursor = 0;
    }
    return r->rep.nsegs;
}

/* Publishes as if every change here were marked (test_coord_dirty checks
 * the marking): every item touched, the nodes checked. */
static void publish_all(rig *r)
{
    for (size_t i = 0; i < r->cat.nitems; i++) {
        coord_cat_touch(&r->cat, r->cat.items[i]);
    }
    (void)coord_cat_check_nodes(&r->cat);
    coord_asg_publish(&r->cat);
}

static void assert_in_step(rig *r)
{
    uint32_t count, walked;
    uint64_t digest, walked_digest;
    hb_assign_sum(&r->have, &count, &digest);
    hb_assign_sum_all(&r->have, &walked, &walked_digest);
    assert_int_equal(count, walked);
    assert_true(digest == walked_digest);
    assert_int_equal(count, r->a->asg_count);
    assert_true(digest == r->a->asg_digest);
    for (size_t i = 0; i < r->cat.nsegs; i++) {
        const coord_seg *s = r->cat.segs[i];
        const wire_assignment *w = hb_assign_find(&r->have, s->segment_id);
        if (s->owner == r->a && coord_cat_seg_served(s)) {
            assert_non_null(w);
            assert_int_equal(w->epoch, s->epoch);
        } else {
            assert_null(w);
        }
    }
}

static void test_full_then_deltas(void **state)
{
    (void)state;
    rig *r = calloc(1, sizeof *r);
    rig_init(r);
    publish_all(r);
    assert_int_equal(r->a->asg_count, NSEGS / 4 * 3);
    /* no version: the full assignment, in parts */
    int parts = 0;
    do {
        round_trip(r);
        parts++;
    } while (r->version == 0);
    assert_int_equal(parts, 2); /* 1875 entries: 1024 + 851 */
    assert_in_step(r);
    /* nothing changed: an empty delta */
    assert_int_equal(round_trip(r), 0);
    /* three changes: exactly three entries */
    r->cat.segs[0]->epoch = 2;                 /* new epoch */
    coord_cat_set_owner(r->cat.segs[1], r->b); /* moved away */
    coord_cat_set_owner(r->cat.segs[3], r->a); /* moved here */
    publish_all(r);
    assert_int_equal(round_trip(r), 3);
    assert_in_step(r);
    /* revoked: out of the assignment; paused item: the flag */
    r->cat.segs[4]->revoked = true;
    r->cat.segs[8]->item->state = COORD_ITEM_PAUSED;
    publish_all(r);
    assert_int_equal(round_trip(r), 1 + 3);
    assert_in_step(r);
    assert_true(hb_assign_find(&r->have, r->cat.segs[8]->segment_id)->paused);
    /* the node's incarnation not committed: nothing assigned */
    r->a->incarnation = 6;
    publish_all(r);
    while (round_trip(r) > 0 && r->rep.assign_more) {
    }
    assert_in_step(r);
    assert_int_equal(r->have.n, 0);
    r->a->incarnation = 5;
    publish_all(r);
    do {
        round_trip(r);
    } while (r->rep.assign_more);
    assert_in_step(r);
    rig_fini(r);
    free(r);
}

static void test_unusable_version_gets_full(void **state)
{
    (void)state;
    rig *r = calloc(1, sizeof *r);
    rig_init(r);
    publish_all(r);
    do {
        round_trip(r);
    } while (r->version == 0 || r->rep.assign_more);
    /* a version from another process (older than this one's first) */
    r->version = 999;
    round_trip(r);
    assert_false(r->rep.assign_delta);
    assert_int_equal(r->rep.assign_cursor, 0);
    /* a change between two parts of a full assignment arrives as a delta */
    coord_cat_set_owner(r->cat.segs[2000], r->b);
    publish_all(r);
    do {
        round_trip(r);
    } while (r->full_version != 0 || r->rep.assign_more);
    round_trip(r);
    assert_in_step(r);
    rig_fini(r);
    free(r);
}

static void test_mirror_digest(void **state)
{
    (void)state;
    coord_cat c;
    assert_int_equal(coord_cat_init(&c), 0);
    coord_node *n = coord_cat_add_node(&c, "a");
    uint64_t node_digest = 0;
    for (uint64_t id = 1; id <= 100; id++) {
        wire_seg_stats s = stats(id, (int64_t)id);
        uint64_t h = hb_sync_stats_hash(&s);
        coord_mirror_put(n, id, h);
        node_digest += id == 50 ? 0 : h;
    }
    wire_seg_stats s = stats(7, 1);
    coord_mirror_put(n, 7, hb_sync_stats_hash(&s)); /* a change */
    node_digest += hb_sync_stats_hash(&s);
    s = stats(7, 7);
    node_digest -= hb_sync_stats_hash(&s);
    coord_mirror_del(n, 50); /* gone */
    assert_int_equal(n->mirror_count, 99);
    assert_true(n->mirror_digest == node_digest);
    coord_mirror_clear(n);
    assert_int_equal(n->mirror_count, 0);
    assert_true(n->mirror_digest == 0);
    coord_cat_fini(&c);
}

/* ---- the work list: a heartbeat visits what changed, and decides as a walk ---- */

#define WSLOTS 400

static uint64_t wrnd_state = 0x2545f4914f6cdd1dULL;

static size_t wrnd(size_t n)
{
    wrnd_state ^= wrnd_state << 13;
    wrnd_state ^= wrnd_state >> 7;
    wrnd_state ^= wrnd_state << 17;
    return (size_t)(wrnd_state % n);
}

/* One heartbeat's decisions, by slot: 0 skip, 1 send, 2 gone. */
typedef struct decisions {
    unsigned char d[WSLOTS];
} decisions;

/* The former heartbeat: every slot, every time. */
static void walk_all(hb_sync *t, const uint64_t *h, uint64_t corr, int64_t now, decisions *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < WSLOTS; i++) {
        int w = hb_sync_want(t, i, h[i], now);
        if (w != HB_SYNC_SKIP) {
            hb_sync_sent(t, i, w == HB_SYNC_SEND ? h[i] : 0, corr);
            out->d[i] = (unsigned char)w;
        }
    }
}

/* The node's heartbeat: only the work list; settled slots leave it. */
static size_t walk_work(hb_sync *t, const uint64_t *h, uint64_t corr, int64_t now, decisions *out)
{
    memset(out, 0, sizeof *out);
    size_t visited = t->nwork;
    for (size_t k = 0; k < t->nwork; k++) {
        size_t i = t->work[k];
        int w = hb_sync_want(t, i, h[i], now);
        if (w != HB_SYNC_SKIP) {
            hb_sync_sent(t, i, w == HB_SYNC_SEND ? h[i] : 0, corr);
            out->d[i] = (unsigned char)w;
        }
        if (hb_sync_settled(t, i, now)) {
            hb_sync_unqueue(t, k);
        }
    }
    hb_sync_compact(t);
    for (size_t k = 0; k < t->nwork; k++) {
        assert_true(t->slots[t->work[k]].queued);
    }
    return visited;
}

/* Random changes (marked, as the core marks what it changes), serving
 * stops and starts, replies that come, come late or never, a coordinator
 * that restarts: at every heartbeat the work list decides exactly what a
 * walk over every slot decides, and its kept count and digest equal the
 * sums over every slot's figures. Quiet slots leave the list once
 * acknowledged and HB_SYNC_HOT_MS old. */
static void test_work_list_decides_as_a_walk(void **state)
{
    (void)state;
    hb_sync all, work;
    hb_sync_init(&all);
    hb_sync_init(&work);
    assert_int_equal(hb_sync_grow(&all, WSLOTS), 0);
    assert_int_equal(hb_sync_grow(&work, WSLOTS), 0);
    uint64_t h[WSLOTS];
    for (size_t i = 0; i < WSLOTS; i++) {
        wire_seg_stats s = stats(i + 1, (int64_t)i);
        h[i] = i % 7 == 0 ? 0 : hb_sync_stats_hash(&s);
    }
    hb_sync_mark_all(&work); /* a new process: its first report looks at all */
    int64_t now = 1000;
    uint64_t applied = 0, late = 0;
    size_t quiet_visits = 0;
    for (uint64_t corr = 1; corr <= 3000; corr++) {
        bool quiet = corr % 500 > 400; /* stretches without changes */
        size_t changes = quiet ? 0 : wrnd(6);
        for (size_t c = 0; c < changes; c++) {
            size_t i = wrnd(WSLOTS);
            wire_seg_stats s = stats(i + 1, (int64_t)wrnd(50));
            h[i] = wrnd(10) == 0 ? 0 : hb_sync_stats_hash(&s);
            hb_sync_mark(&work, i);
        }
        decisions da, dw;
        walk_all(&all, h, corr, now, &da);
        size_t visited = walk_work(&work, h, corr, now, &dw);
        assert_memory_equal(&da, &dw, sizeof da);
        uint32_t count = 0;
        uint64_t digest = 0;
        for (size_t i = 0; i < WSLOTS; i++) {
            count += h[i] != 0;
            digest += h[i];
        }
        assert_int_equal(work.count, count);
        assert_true(work.digest == digest);
        assert_int_equal(all.count, count);
        if (quiet && corr % 500 > 400 + HB_SYNC_HOT_MS / 150 + 5) {
            quiet_visits += visited; /* acknowledged and cooled down: nothing */
        }
        /* the reply: now, one heartbeat late (a later one overtakes it), or lost */
        size_t fate = wrnd(10);
        if (late != 0 && late > applied) {
            hb_sync_acked(&all, late);
            hb_sync_acked(&work, late);
            applied = late;
        }
        late = 0;
        if (fate < 7) {
            hb_sync_acked(&all, corr);
            hb_sync_acked(&work, corr);
            applied = corr;
        } else if (fate < 9) {
            late = corr;
        }
        if (!quiet && wrnd(700) == 0) { /* the coordinator restarted */
            hb_sync_restart(&all);
            hb_sync_restart(&work);
            late = 0;
        }
        now += 150;
    }
    assert_int_equal(quiet_visits, 0);
    hb_sync_fini(&all);
    hb_sync_fini(&work);
}

/* The assignment's kept digest after replacements, changes, removals and
 * additions equals the sum over its entries. */
static void test_assign_kept_digest(void **state)
{
    (void)state;
    hb_assign_set s;
    hb_assign_init(&s);
    wire_assignment a[64];
    for (size_t i = 0; i < 64; i++) {
        a[i] = (wire_assignment){(uint64_t)(i * 3 + 1), 1, 0, false};
    }
    assert_int_equal(hb_assign_replace(&s, a, 64), 0);
    for (int round = 0; round < 500; round++) {
        wire_assignment upd[4];
        uint64_t del[2];
        size_t nupd = wrnd(5), ndel = wrnd(3);
        for (size_t i = 0; i < nupd; i++) {
            upd[i] = (wire_assignment){(uint64_t)(1 + wrnd(250)), 1 + wrnd(9), (uint32_t)wrnd(2),
                                       wrnd(2) == 0};
        }
        for (size_t i = 0; i < ndel; i++) {
            del[i] = 1 + wrnd(250);
        }
        assert_int_equal(hb_assign_apply(&s, upd, nupd, del, ndel), 0);
        uint32_t c1, c2;
        uint64_t d1, d2;
        hb_assign_sum(&s, &c1, &d1);
        hb_assign_sum_all(&s, &c2, &d2);
        assert_int_equal(c1, c2);
        assert_true(d1 == d2);
    }
    hb_assign_clear(&s);
    uint32_t c;
    uint64_t d;
    hb_assign_sum(&s, &c, &d);
    assert_int_equal(c, 0);
    assert_true(d == 0);
    hb_assign_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_sends_changes_only),
        cmocka_unit_test(test_assign_set),
        cmocka_unit_test(test_full_then_deltas),
        cmocka_unit_test(test_unusable_version_gets_full),
        cmocka_unit_test(test_mirror_digest),
        cmocka_unit_test(test_work_list_decides_as_a_walk),
        cmocka_unit_test(test_assign_kept_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
