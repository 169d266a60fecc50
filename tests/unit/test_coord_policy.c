/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_coord_policy.c - the coordinator's pure policy (coord_policy.c):
 * demand skew, the dry trigger, collapse, forwarding to the tail, restock
 * and reduce, the one-open-transfer-per-segment rule, donors never asked
 * for more than they have, and the sold-out flag.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coord_policy.h"
#include "wire.h"

static coord_pseg g_segs[16];
static coord_plan g_plan;

/* n active segments 1..n, live, reported, available each, no demand. */
static coord_pitem item(size_t n, int64_t available)
{
    memset(g_segs, 0, sizeof g_segs);
    coord_pitem in;
    memset(&in, 0, sizeof in);
    in.total = (int64_t)n * available;
    in.collapse_pct = 5;
    in.low_water_pct = 25;
    in.nsegs = n;
    in.segs = g_segs;
    for (size_t i = 0; i < n; i++) {
        g_segs[i].segment_id = i + 1;
        g_segs[i].state = WIRE_SEG_ACTIVE;
        g_segs[i].available = available;
        g_segs[i].reported = true;
        g_segs[i].owner_live = true;
    }
    return in;
}

/* Every plan: a segment at most once, qty >= 1, never more than the donor has. */
static void check_plan(const coord_pitem *in, const coord_plan *p)
{
    int uses[17] = {0};
    for (size_t i = 0; i < p->nxfers; i++) {
        const coord_pxfer *x = &p->xfers[i];
        assert_true(x->qty >= 1);
        assert_true(x->from != 0 || x->to != 0);
        if (x->from != 0) {
            assert_true(x->qty <= in->segs[x->from - 1].available);
            assert_false(in->segs[x->from - 1].busy);
            uses[x->from]++;
        }
        if (x->to != 0) {
            assert_false(in->segs[x->to - 1].busy);
            uses[x->to]++;
        }
    }
    for (int i = 0; i < 17; i++) {
        assert_true(uses[i] <= 1);
    }
}

static void test_no_demand_no_transfer(void **state)
{
    (void)state;
    coord_pitem in = item(4, 100);
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 0);
    assert_false(g_plan.collapse);
    assert_false(g_plan.sold_out);
}

static void test_demand_skew_moves_stock_to_busy_segment(void **state)
{
    (void)state;
    coord_pitem in = item(4, 100);
    g_segs[0].demand = 90; /* segment 1 sells fast and is low */
    g_segs[0].available = 10;
    in.total = 310;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    /* sum 310; target(1) = 310 (only demand there); the others' target 0:
     * one donor (the largest surplus: 100, the first of equals), to segment 1 */
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].to, 1);
    assert_int_equal(g_plan.xfers[0].from, 2);
    assert_int_equal(g_plan.xfers[0].qty, 100);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_REBALANCE);
}

static void test_proportional_demand(void **state)
{
    (void)state;
    coord_pitem in = item(2, 50);
    g_segs[0].demand = 3;
    g_segs[0].available = 5;
    g_segs[1].demand = 1;
    g_segs[1].available = 95;
    /* sum 100: targets 75 / 25; segment 1 below 25% of 75 -> receives
     * min(surplus 70, deficit 70) = 70 */
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 2);
    assert_int_equal(g_plan.xfers[0].to, 1);
    assert_int_equal(g_plan.xfers[0].qty, 70);
}

static void test_above_low_water_nothing(void **state)
{
    (void)state;
    coord_pitem in = item(2, 50);
    g_segs[0].demand = 3;
    g_segs[0].available = 30; /* target 75, low water 18.75: fine */
    g_segs[1].demand = 1;
    g_segs[1].available = 70;
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 0);
}

static void test_dry_trigger_refills(void **state)
{
    (void)state;
    coord_pitem in = item(3, 100);
    g_segs[2].available = 0;
    g_segs[2].dry = true; /* no measured demand yet: the dry report alone */
    in.total = 200;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].to, 3);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_REFILL);
    /* targets: 200/3 each; the donor's surplus floor(100 - 66.7) = 33 */
    assert_int_equal(g_plan.xfers[0].qty, 33);
}

static void test_busy_segments_are_left_alone(void **state)
{
    (void)state;
    coord_pitem in = item(4, 100);
    g_segs[0].available = 0;
    g_segs[0].dry = true;
    g_segs[1].available = 0;
    g_segs[1].dry = true;
    g_segs[2].busy = true; /* already giving or receiving */
    in.total = 200;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    /* only segment 4 can give, and only to one of the two */
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 4);
}

static void test_dead_owner_neither_gives_nor_receives(void **state)
{
    (void)state;
    coord_pitem in = item(2, 100);
    g_segs[0].available = 0;
    g_segs[0].dry = true;
    g_segs[1].owner_live = false;
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 0);
}

static void test_collapse_threshold(void **state)
{
    (void)state;
    coord_pitem in = item(4, 100);
    in.total = 1000; /* 5% = 50 */
    g_segs[0].available = 20;
    g_segs[1].available = 10;
    g_segs[2].available = 10;
    g_segs[3].available = 11; /* remaining 51: not yet */
    coord_policy_plan(&in, false, &g_plan);
    assert_false(g_plan.collapse);
    g_segs[3].available = 10; /* 50: collapse into the one with most */
    coord_policy_plan(&in, false, &g_plan);
    assert_true(g_plan.collapse);
    assert_int_equal(g_plan.tail, 1);
    assert_int_equal(g_plan.nxfers, 0);
    /* in flight and unallocated count as remaining */
    in.in_flight = 5;
    coord_policy_plan(&in, false, &g_plan);
    assert_false(g_plan.collapse);
}

static void test_collapse_needs_two_active_and_a_live_tail(void **state)
{
    (void)state;
    coord_pitem in = item(2, 0);
    in.total = 1000;
    g_segs[1].state = WIRE_SEG_DRAINING;
    coord_policy_plan(&in, false, &g_plan);
    assert_false(g_plan.collapse);
    g_segs[1].state = WIRE_SEG_ACTIVE;
    g_segs[0].owner_live = false;
    g_segs[1].owner_live = false;
    coord_policy_plan(&in, false, &g_plan);
    assert_false(g_plan.collapse);
    g_segs[1].owner_live = true;
    coord_policy_plan(&in, false, &g_plan);
    assert_true(g_plan.collapse);
    assert_int_equal(g_plan.tail, 2);
}

static void test_forced_collapse_and_pct_zero(void **state)
{
    (void)state;
    coord_pitem in = item(3, 100);
    in.collapse_pct = 0; /* never automatically */
    g_segs[0].available = 0;
    g_segs[1].available = 0;
    g_segs[2].available = 0;
    coord_policy_plan(&in, false, &g_plan);
    assert_false(g_plan.collapse);
    g_segs[1].available = 7;
    coord_policy_plan(&in, true, &g_plan);
    assert_true(g_plan.collapse);
    assert_int_equal(g_plan.tail, 2);
}

static void test_collapsed_forwards_one_at_a_time(void **state)
{
    (void)state;
    coord_pitem in = item(4, 0);
    in.total = 1000;
    in.tail_segment = 2;
    g_segs[0].state = WIRE_SEG_DRAINING;
    g_segs[0].available = 3;
    g_segs[2].state = WIRE_SEG_DRAINING;
    g_segs[2].available = 5;
    g_segs[2].forwarded = true; /* returned units after an earlier forward */
    g_segs[3].state = WIRE_SEG_DRAINING;
    g_segs[1].available = 1;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 3);
    assert_int_equal(g_plan.xfers[0].to, 2);
    assert_int_equal(g_plan.xfers[0].qty, 5);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_FORWARD);
    /* the tail busy: nothing */
    g_segs[1].busy = true;
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 0);
    /* once the tail is free and segment 3 is empty: segment 1, reason collapse */
    g_segs[1].busy = false;
    g_segs[2].available = 0;
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 1);
    assert_int_equal(g_plan.xfers[0].qty, 3);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_COLLAPSE);
    assert_false(g_plan.collapse);
}

static void test_collapsed_restock_goes_to_tail(void **state)
{
    (void)state;
    coord_pitem in = item(3, 0);
    in.total = 1000;
    in.tail_segment = 3;
    in.unallocated = 40;
    g_segs[0].state = WIRE_SEG_DRAINING;
    g_segs[0].available = 9;
    g_segs[1].state = WIRE_SEG_DRAINING;
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 0);
    assert_int_equal(g_plan.xfers[0].to, 3);
    assert_int_equal(g_plan.xfers[0].qty, 40);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_RESTOCK);
}

static void test_restock_spread_busiest_first(void **state)
{
    (void)state;
    coord_pitem in = item(3, 10);
    in.unallocated = 10;
    in.total = 40;
    g_segs[1].demand = 5;
    g_segs[2].busy = true;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    /* two usable segments: 5 each, segment 2 (demand) first */
    assert_true(g_plan.nxfers >= 2);
    assert_int_equal(g_plan.xfers[0].from, 0);
    assert_int_equal(g_plan.xfers[0].to, 2);
    assert_int_equal(g_plan.xfers[0].qty, 5);
    assert_int_equal(g_plan.xfers[1].to, 1);
    assert_int_equal(g_plan.xfers[1].qty, 5);
    int64_t sum = 0;
    for (size_t i = 0; i < g_plan.nxfers; i++) {
        sum += g_plan.xfers[i].from == 0 ? g_plan.xfers[i].qty : 0;
    }
    assert_int_equal(sum, 10);
}

static void test_reduce_reclaims_without_overdrawing(void **state)
{
    (void)state;
    coord_pitem in = item(3, 10);
    in.reduce_pending = 25;
    in.reclaiming = 3; /* already on its way back */
    g_segs[0].available = 4;
    g_segs[1].available = 30;
    g_segs[2].available = 0;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 2);
    assert_int_equal(g_plan.xfers[0].to, 0);
    assert_int_equal(g_plan.xfers[0].qty, 22);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_REDUCE);
    /* more than one segment has: take all of the biggest, then the next */
    g_segs[1].available = 15;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    assert_int_equal(g_plan.nxfers, 2);
    assert_int_equal(g_plan.xfers[0].qty, 15);
    assert_int_equal(g_plan.xfers[1].from, 1);
    assert_int_equal(g_plan.xfers[1].qty, 4);
}

static void test_split_surplus_gives_to_active(void **state)
{
    (void)state;
    coord_pitem in = item(3, 10);
    g_segs[2].state = WIRE_SEG_DRAINING;
    g_segs[2].available = 8;
    g_segs[0].available = 12;
    coord_policy_plan(&in, false, &g_plan);
    check_plan(&in, &g_plan);
    assert_int_equal(g_plan.nxfers, 1);
    assert_int_equal(g_plan.xfers[0].from, 3);
    assert_int_equal(g_plan.xfers[0].to, 2);
    assert_int_equal(g_plan.xfers[0].qty, 8);
    assert_int_equal(g_plan.xfers[0].reason, COORD_R_SPLIT);
}

static void test_paused_does_not_rebalance_retired_plans_nothing(void **state)
{
    (void)state;
    coord_pitem in = item(2, 100);
    g_segs[0].available = 0;
    g_segs[0].dry = true;
    in.paused = true;
    coord_policy_plan(&in, false, &g_plan);
    assert_int_equal(g_plan.nxfers, 0);
    in.paused = false;
    in.retired = true;
    in.unallocated = 5;
    coord_policy_plan(&in, true, &g_plan);
    assert_int_equal(g_plan.nxfers, 0);
    assert_false(g_plan.collapse);
}

static void test_sold_out_rules(void **state)
{
    (void)state;
    coord_pitem in = item(3, 0);
    in.total = 100;
    assert_true(coord_policy_sold_out(&in));
    g_segs[1].held = 1; /* a hold may come back */
    assert_false(coord_policy_sold_out(&in));
    g_segs[1].held = 0;
    g_segs[2].reported = false; /* not reported at its epoch: unknown */
    assert_false(coord_policy_sold_out(&in));
    g_segs[2].reported = true;
    g_segs[2].busy = true; /* a transfer is open */
    assert_false(coord_policy_sold_out(&in));
    g_segs[2].busy = false;
    in.unallocated = 1;
    assert_false(coord_policy_sold_out(&in));
    in.unallocated = 0;
    in.in_flight = 2;
    assert_false(coord_policy_sold_out(&in));
    in.in_flight = 0;
    g_segs[0].state = WIRE_SEG_RETIRED; /* retired segments do not count */
    g_segs[0].available = 5;
    assert_true(coord_policy_sold_out(&in));
    coord_policy_plan(&in, false, &g_plan);
    assert_true(g_plan.sold_out);
    in.retired = true;
    assert_false(coord_policy_sold_out(&in));
    in.retired = false;
    in.nsegs = 0;
    assert_false(coord_policy_sold_out(&in));
}

static void test_demand_ewma(void **state)
{
    (void)state;
    /* 100 units over 1 s, from 0: the full step (alpha = 1) */
    double d = coord_policy_demand(0, 100, 0, 1000000);
    assert_true(d > 99.9 && d < 100.1);
    /* 10 units + 10 empties over 0.5 s = rate 40; alpha 0.5 -> 70 */
    d = coord_policy_demand(100, 10, 10, 500000);
    assert_true(d > 69.9 && d < 70.1);
    assert_true(coord_policy_demand(5, 1, 0, 0) == 5);
}

static void test_reason_names(void **state)
{
    (void)state;
    assert_string_equal(coord_policy_reason_name(COORD_R_FORWARD), "forward");
    assert_string_equal(coord_policy_reason_name(COORD_R_REFILL), "refill");
    assert_string_equal(coord_policy_reason_name(99), "rebalance");
}

/* ---- regions: coord_policy_quota ---- */

static void test_quota_plan_sends_spare_to_needy_peer(void **state)
{
    (void)state;
    /* here: 500 unused, 1 unit/s demand; horizon 5 s keeps 5; peer: 10 unused,
     * 80 units/s wanted -> needs 400 - 10 = 390 */
    coord_qpeer peers[2] = {{.fresh = true, .unused = 10, .demand_milli = 80000},
                            {.fresh = true, .unused = 100, .demand_milli = 0}};
    coord_qin in = {.unused = 500,
                    .demand_milli = 1000,
                    .floor = 0,
                    .horizon_ms = 5000,
                    .npeers = 2,
                    .peers = peers};
    int64_t qty = 0;
    assert_int_equal(coord_policy_quota(&in, &qty), 0);
    assert_int_equal(qty, 390);
    /* what is already on its way counts */
    peers[0].in_flight_to = 300;
    assert_int_equal(coord_policy_quota(&in, &qty), 0);
    assert_int_equal(qty, 90);
    /* the floor is kept: 500 - 450 = 50 spare */
    in.floor = 450;
    assert_int_equal(coord_policy_quota(&in, &qty), 0);
    assert_int_equal(qty, 50);
}

static void test_quota_plan_keeps_own_demand_and_ignores_stale(void **state)
{
    (void)state;
    coord_qpeer peer = {.fresh = true, .unused = 0, .demand_milli = 50000};
    /* here: 100 unused, 20 units/s over 5 s = 100 kept: nothing spare */
    coord_qin in = {
        .unused = 100, .demand_milli = 20000, .horizon_ms = 5000, .npeers = 1, .peers = &peer};
    int64_t qty = -7;
    assert_int_equal(coord_policy_quota(&in, &qty), -1);
    assert_int_equal(qty, -7);
    /* no demand here: everything above the floor may go, but a peer not heard
     * from recently gets nothing (it may be partitioned) */
    in.demand_milli = 0;
    peer.fresh = false;
    assert_int_equal(coord_policy_quota(&in, &qty), -1);
    peer.fresh = true;
    assert_int_equal(coord_policy_quota(&in, &qty), 0);
    assert_int_equal(qty, 100);
    /* a peer with enough for its horizon needs nothing */
    peer.unused = 250;
    assert_int_equal(coord_policy_quota(&in, &qty), -1);
}

/* ---- regions: coord_policy_restock_place, coord_policy_reduce_sources ---- */

static void test_restock_goes_where_demand_is_not_covered(void **state)
{
    (void)state;
    /* here (0): 100 unused, no demand; peer 1: 10 unused, 40 units/s over 5 s
     * wants 200 -> needs 190; peer 2: 20 units/s, 50 unused -> needs 50 */
    coord_qregion r[3] = {{.usable = true, .quota = 500, .unused = 100},
                          {.usable = true, .quota = 300, .unused = 10, .demand_milli = 40000},
                          {.usable = true, .quota = 200, .unused = 50, .demand_milli = 20000}};
    assert_int_equal(coord_policy_restock_place(r, 3, 5000, 1100), 1);
    /* what is on its way to it counts as had */
    r[1].in_flight_to = 170;
    assert_int_equal(coord_policy_restock_place(r, 3, 5000, 1100), 2);
    /* a peer not heard from recently is never chosen */
    r[1].in_flight_to = 0;
    r[1].usable = false;
    assert_int_equal(coord_policy_restock_place(r, 3, 5000, 1100), 2);
    r[2].usable = false;
    assert_int_equal(coord_policy_restock_place(r, 3, 5000, 1100), 0);
    r[0].usable = false;
    assert_int_equal(coord_policy_restock_place(r, 3, 5000, 1100), -1);
}

static void test_restock_without_demand_follows_shares(void **state)
{
    (void)state;
    /* shares 2:1, quotas 600 and 400; with 300 more (1300) the shares say
     * 867 and 433: region 0 is 267 short, region 1 33: region 0 */
    coord_qregion r[2] = {{.usable = true, .quota = 600, .unused = 600, .share = 2},
                          {.usable = true, .quota = 400, .unused = 400, .share = 1}};
    assert_int_equal(coord_policy_restock_place(r, 2, 5000, 1300), 0);
    /* equal shares: the one with less quota (and what is on its way) */
    r[0].share = r[1].share = 0; /* not said: 1 each */
    assert_int_equal(coord_policy_restock_place(r, 2, 5000, 1300), 1);
    r[1].in_flight_to = 250;
    assert_int_equal(coord_policy_restock_place(r, 2, 5000, 1300), 0);
    /* a tie goes to the lower index */
    r[1].in_flight_to = 200;
    assert_int_equal(coord_policy_restock_place(r, 2, 5000, 1300), 0);
}

static void test_reduce_takes_least_demand_first(void **state)
{
    (void)state;
    int64_t take[3];
    /* here (0) sells 10/s, peer 1 sells nothing, peer 2 30/s */
    coord_qregion r[3] = {{.usable = true, .unused = 100, .demand_milli = 10000},
                          {.usable = true, .unused = 40, .demand_milli = 0},
                          {.usable = true, .unused = 500, .demand_milli = 30000}};
    assert_int_equal(coord_policy_reduce_sources(r, 3, 120, take), 120);
    assert_int_equal(take[1], 40);
    assert_int_equal(take[0], 80);
    assert_int_equal(take[2], 0);
    /* more than everything unused: all of it, the rest waits */
    assert_int_equal(coord_policy_reduce_sources(r, 3, 1000, take), 640);
    assert_int_equal(take[0] + take[1] + take[2], 640);
    /* a peer out of reach gives nothing */
    r[1].usable = false;
    assert_int_equal(coord_policy_reduce_sources(r, 3, 120, take), 120);
    assert_int_equal(take[1], 0);
    assert_int_equal(take[0], 100);
    assert_int_equal(take[2], 20);
    /* same demand: the one with more unused first */
    r[1].usable = true;
    r[1].demand_milli = 10000;
    assert_int_equal(coord_policy_reduce_sources(r, 3, 50, take), 50);
    assert_int_equal(take[0], 50);
    assert_int_equal(take[1], 0);
    /* nothing pending: nothing taken */
    assert_int_equal(coord_policy_reduce_sources(r, 3, 0, take), 0);
    assert_int_equal(take[0] + take[1] + take[2], 0);
}

static void test_quota_plan_never_both_ways(void **state)
{
    (void)state;
    /* two regions evaluated with each other's figures: at most one sends */
    for (int64_t ua = 0; ua <= 200; ua += 20) {
        for (int64_t da = 0; da <= 40000; da += 5000) {
            for (int64_t ub = 0; ub <= 200; ub += 25) {
                for (int64_t db = 0; db <= 40000; db += 7000) {
                    coord_qpeer pb = {.fresh = true, .unused = ub, .demand_milli = db};
                    coord_qpeer pa = {.fresh = true, .unused = ua, .demand_milli = da};
                    coord_qin a = {.unused = ua,
                                   .demand_milli = da,
                                   .horizon_ms = 5000,
                                   .npeers = 1,
                                   .peers = &pb};
                    coord_qin b = {.unused = ub,
                                   .demand_milli = db,
                                   .horizon_ms = 5000,
                                   .npeers = 1,
                                   .peers = &pa};
                    int64_t qa = 0, qb = 0;
                    int sa = coord_policy_quota(&a, &qa), sb = coord_policy_quota(&b, &qb);
                    assert_false(sa == 0 && sb == 0);
                    if (sa == 0) {
                        assert_true(qa >= 1 && qa <= ua);
                    }
                }
            }
        }
    }
}

static void test_export_want_reclaims_and_holds_unallocated(void **state)
{
    (void)state;
    coord_pseg segs[2] = {
        {.segment_id = 1,
         .state = WIRE_SEG_ACTIVE,
         .available = 30,
         .reported = true,
         .owner_live = true},
        {.segment_id = 2,
         .state = WIRE_SEG_ACTIVE,
         .available = 50,
         .reported = true,
         .owner_live = true},
    };
    coord_pitem in = {.total = 90,
                      .unallocated = 10,
                      .export_want = 40,
                      .nsegs = 2,
                      .segs = segs,
                      .low_water_pct = 0};
    static coord_plan plan;
    coord_policy_plan(&in, false, &plan);
    /* 40 wanted, 10 already unallocated: 30 reclaimed from the fullest
     * segment, and the unallocated 10 are not handed out again */
    int64_t reclaimed = 0;
    for (size_t i = 0; i < plan.nxfers; i++) {
        assert_int_not_equal(plan.xfers[i].from, 0);
        if (plan.xfers[i].to == 0) {
            assert_int_equal(plan.xfers[i].reason, COORD_R_REDUCE);
            reclaimed += plan.xfers[i].qty;
        }
    }
    assert_int_equal(reclaimed, 30);
    assert_false(coord_policy_sold_out(&in));
}

/* The plan is reused pass after pass: whatever an earlier pass (or garbage)
 * left in it never leaks into the next one. */
static void test_plan_reused_starts_clean(void **state)
{
    (void)state;
    static coord_plan fresh, reused;
    coord_pitem in = item(4, 100);
    g_segs[0].demand = 90;
    g_segs[0].available = 10;
    in.total = 310;
    memset(&fresh, 0, sizeof fresh);
    coord_policy_plan(&in, false, &fresh);
    assert_int_equal(fresh.nxfers, 1);
    memset(&reused, 0xa5, sizeof reused);
    coord_policy_plan(&in, false, &reused);
    assert_false(reused.collapse);
    assert_int_equal(reused.tail, 0);
    assert_int_equal(reused.sold_out, fresh.sold_out);
    assert_int_equal(reused.nxfers, fresh.nxfers);
    for (size_t i = 0; i < fresh.nxfers; i++) {
        assert_int_equal(reused.xfers[i].from, fresh.xfers[i].from);
        assert_int_equal(reused.xfers[i].to, fresh.xfers[i].to);
        assert_int_equal(reused.xfers[i].qty, fresh.xfers[i].qty);
        assert_int_equal(reused.xfers[i].reason, fresh.xfers[i].reason);
    }
    /* a collapse pass, then a pass with nothing to do: no collapse left over */
    coord_pitem low = item(4, 10);
    low.total = 1000;
    coord_policy_plan(&low, false, &reused);
    assert_true(reused.collapse);
    coord_pitem calm = item(4, 100);
    coord_policy_plan(&calm, false, &reused);
    assert_false(reused.collapse);
    assert_int_equal(reused.tail, 0);
    assert_int_equal(reused.nxfers, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_demand_no_transfer),
        cmocka_unit_test(test_demand_skew_moves_stock_to_busy_segment),
        cmocka_unit_test(test_proportional_demand),
        cmocka_unit_test(test_above_low_water_nothing),
        cmocka_unit_test(test_dry_trigger_refills),
        cmocka_unit_test(test_busy_segments_are_left_alone),
        cmocka_unit_test(test_dead_owner_neither_gives_nor_receives),
        cmocka_unit_test(test_collapse_threshold),
        cmocka_unit_test(test_collapse_needs_two_active_and_a_live_tail),
        cmocka_unit_test(test_forced_collapse_and_pct_zero),
        cmocka_unit_test(test_collapsed_forwards_one_at_a_time),
        cmocka_unit_test(test_collapsed_restock_goes_to_tail),
        cmocka_unit_test(test_restock_spread_busiest_first),
        cmocka_unit_test(test_reduce_reclaims_without_overdrawing),
        cmocka_unit_test(test_split_surplus_gives_to_active),
        cmocka_unit_test(test_paused_does_not_rebalance_retired_plans_nothing),
        cmocka_unit_test(test_sold_out_rules),
        cmocka_unit_test(test_demand_ewma),
        cmocka_unit_test(test_reason_names),
        cmocka_unit_test(test_quota_plan_sends_spare_to_needy_peer),
        cmocka_unit_test(test_quota_plan_keeps_own_demand_and_ignores_stale),
        cmocka_unit_test(test_quota_plan_never_both_ways),
        cmocka_unit_test(test_restock_goes_where_demand_is_not_covered),
        cmocka_unit_test(test_restock_without_demand_follows_shares),
        cmocka_unit_test(test_reduce_takes_least_demand_first),
        cmocka_unit_test(test_export_want_reclaims_and_holds_unallocated),
        cmocka_unit_test(test_plan_reused_starts_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
