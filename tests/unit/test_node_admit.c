/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_node_admit.c - fair batch admission (segment/node/node_admit.h) on
 * a node struct without sockets: a tenant alone is never held back; while
 * two tenants are active one gets exactly NODE_ADMIT_SLOTS decisions per
 * batch, its further requests wait in order (reads never do) and the other
 * tenant is not held back; a new batch decides the waiting requests up to
 * each tenant's slots, round robin, in arrival order; slow commits shrink
 * the slots while tenants share the node, never a tenant alone; a stop
 * frees them; decisions left in the filling batch keep their slots, and
 * the last idle commit stream is kept for tenants with nothing committing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "node.h"
#include "node_admit.h"
#include "node_req.h"

static node n;
static node_batch batch;
static uint64_t decided[4096]; /* corr ids, in the order decided again */
static size_t ndecided;
static bool answered_at_once; /* redecide: answers, no decision in the batch */

/* The redecide upcall: each waiting request becomes one decision of the
 * filling batch, as a reserve does (or is answered at once). */
static void redecide(node *nd, node_req *r)
{
    decided[ndecided++] = r->req.corr_id;
    if (!answered_at_once) {
        node_admit_counted(nd, r->req.tenant_id);
        nd->filling->n++;
    }
    node_req_free(nd, r);
}

static int setup(void **state)
{
    (void)state;
    memset(&n, 0, sizeof n);
    memset(&batch, 0, sizeof batch);
    n.filling = &batch;
    n.up.redecide = redecide;
    seg_share_config share;
    seg_share_defaults(&share);
    node_admit_init(&n.admit, 42, &share, 0);
    ndecided = 0;
    answered_at_once = false;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    node_admit_fini(&n);
    assert_int_equal(n.pending_reqs, 0);
    return 0;
}

/* One request of tenant t at now_us: true if it waits; if not, it is
 * decided at once as one decision of the filling batch. */
static bool request(const char *t, wire_op op, uint64_t corr, int64_t now_us)
{
    wire_request q;
    nnx_hdr hdr;
    memset(&q, 0, sizeof q);
    memset(&hdr, 0, sizeof hdr);
    q.op = op;
    q.corr_id = corr;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", t);
    if (node_admit_defer(&n, &hdr, &q, now_us)) {
        return true;
    }
    if (op != WIRE_OP_GET) {
        node_admit_counted(&n, t);
        batch.n++;
    }
    return false;
}

static void alone_never_waits(void **state)
{
    (void)state;
    for (uint64_t i = 0; i < 4 * NODE_ADMIT_SLOTS; i++) {
        assert_false(request("loud", WIRE_OP_RESERVE, i, 1000000 + (int64_t)i));
    }
    assert_int_equal(n.admit.waiting, 0);
    assert_int_equal(batch.n, 4 * NODE_ADMIT_SLOTS);
}

static void shared_slots_then_round_robin(void **state)
{
    (void)state;
    int64_t t = 1000000;
    assert_false(request("quiet", WIRE_OP_RESERVE, 9000, t));
    size_t waited = 0;
    for (uint64_t i = 0; i < 3 * NODE_ADMIT_SLOTS; i++) {
        waited += request("loud", i % 2 ? WIRE_OP_RELEASE : WIRE_OP_RESERVE, i, t + 1);
    }
    /* exactly its slots decided, the rest waits */
    assert_int_equal(waited, 2 * NODE_ADMIT_SLOTS);
    assert_int_equal(n.admit.waiting, 2 * NODE_ADMIT_SLOTS);
    assert_int_equal(n.pending_reqs, 2 * NODE_ADMIT_SLOTS);
    /* a read never waits; the quiet tenant is not held back */
    assert_false(request("loud", WIRE_OP_GET, 8000, t + 2));
    for (uint64_t i = 0; i < 10; i++) {
        assert_false(request("quiet", WIRE_OP_CONFIRM, 9001 + i, t + 3));
    }
    /* a new batch: the loud tenant's next NODE_ADMIT_SLOTS, in order */
    batch.n = 0;
    node_admit_batch_opened(&n);
    assert_int_equal(ndecided, NODE_ADMIT_SLOTS);
    for (size_t i = 0; i < ndecided; i++) {
        assert_int_equal(decided[i], NODE_ADMIT_SLOTS + i);
    }
    assert_int_equal(n.admit.waiting, NODE_ADMIT_SLOTS);
    /* its fresh requests queue behind the waiting ones, even with slots */
    batch.n = 0;
    memset(n.admit.in_batch, 0, sizeof n.admit.in_batch);
    assert_true(request("loud", WIRE_OP_RESERVE, 7000, t + 4));
    node_admit_drain(&n);
    assert_int_equal(ndecided, 2 * NODE_ADMIT_SLOTS);
    assert_int_equal(decided[ndecided - 1], 3 * NODE_ADMIT_SLOTS - 1);
    batch.n = 0;
    node_admit_batch_opened(&n);
    assert_int_equal(decided[ndecided - 1], 7000);
    assert_int_equal(n.admit.waiting, 0);
    assert_int_equal(n.admit.waited, 2 * NODE_ADMIT_SLOTS + 1);
}

static void two_waiting_tenants_share_a_batch(void **state)
{
    (void)state;
    int64_t t = 1000000;
    size_t waited = 0;
    for (uint64_t i = 0; i < 2 * NODE_ADMIT_SLOTS; i++) {
        waited += request("a", WIRE_OP_RESERVE, i, t);
        waited += request("b", WIRE_OP_RESERVE, 1000 + i, t);
    }
    assert_int_equal(waited, 2 * NODE_ADMIT_SLOTS);
    batch.n = 0;
    node_admit_batch_opened(&n);
    size_t a = 0, b = 0;
    for (size_t i = 0; i < ndecided; i++) {
        decided[i] < 1000 ? a++ : b++;
    }
    assert_int_equal(a, NODE_ADMIT_SLOTS);
    assert_int_equal(b, NODE_ADMIT_SLOTS);
}

static void the_other_tenant_gone_no_more_waiting(void **state)
{
    (void)state;
    int64_t t = 1000000;
    assert_false(request("quiet", WIRE_OP_RESERVE, 1, t));
    for (uint64_t i = 0; i < NODE_ADMIT_SLOTS; i++) {
        assert_false(request("loud", WIRE_OP_RESERVE, 100 + i, t));
    }
    assert_true(request("loud", WIRE_OP_RESERVE, 500, t));
    batch.n = 0;
    node_admit_batch_opened(&n);
    assert_int_equal(n.admit.waiting, 0);
    /* the quiet tenant silent for longer than NODE_ADMIT_ACTIVE_US */
    int64_t later = t + NODE_ADMIT_ACTIVE_US + 1;
    for (uint64_t i = 0; i < 2 * NODE_ADMIT_SLOTS; i++) {
        assert_false(request("loud", WIRE_OP_RESERVE, 600 + i, later));
    }
}

/* Requests answered at once (sold out, replays) take no slot: all leave
 * the queue, none is left behind with nothing in the batch to commit. */
static void answers_take_no_slot(void **state)
{
    (void)state;
    assert_false(request("quiet", WIRE_OP_RESERVE, 1, 1000000));
    for (uint64_t i = 0; i < 4 * NODE_ADMIT_SLOTS; i++) {
        request("loud", WIRE_OP_RESERVE, 100 + i, 1000000);
    }
    assert_int_equal(n.admit.waiting, 3 * NODE_ADMIT_SLOTS);
    answered_at_once = true;
    batch.n = 0;
    node_admit_batch_opened(&n);
    assert_int_equal(ndecided, 3 * NODE_ADMIT_SLOTS);
    assert_int_equal(n.admit.waiting, 0);
}

/* Slow commits while two tenants write shrink each tenant's slots
 * (seg_share.h); a tenant alone is still never held back. */
static void slow_commits_shrink_the_share(void **state)
{
    (void)state;
    int64_t t = 1000000;
    assert_false(request("quiet", WIRE_OP_RESERVE, 1, t));
    assert_false(request("loud", WIRE_OP_RESERVE, 100, t));
    node_admit_committed(&n, 2000, t);      /* the baseline: 2 ms */
    node_admit_committed(&n, 10000, t + 1); /* 10 ms: slow */
    assert_int_equal(n.admit.share.slots, NODE_ADMIT_SLOTS / 2);
    batch.n = 0;
    node_admit_batch_opened(&n);
    size_t waited = 0;
    for (uint64_t i = 0; i < NODE_ADMIT_SLOTS; i++) {
        waited += request("loud", WIRE_OP_RESERVE, 200 + i, t + 2);
    }
    assert_int_equal(waited, NODE_ADMIT_SLOTS / 2);
    batch.n = 0;
    node_admit_batch_opened(&n);
    assert_int_equal(ndecided, NODE_ADMIT_SLOTS / 2);
    assert_int_equal(n.admit.waiting, 0);
    /* the quiet tenant gone: the loud one alone takes whole batches */
    int64_t later = t + NODE_ADMIT_ACTIVE_US + 1;
    for (uint64_t i = 0; i < 4 * NODE_ADMIT_SLOTS; i++) {
        assert_false(request("loud", WIRE_OP_RESERVE, 1000 + i, later));
    }
    /* and its slow commits alone cut nothing */
    node_admit_committed(&n, 50000, later + 1);
    node_admit_committed(&n, 50000, later + 2);
    assert_int_equal(n.admit.share.slots, NODE_ADMIT_SLOTS / 2);
}

static void a_stop_frees_the_waiting(void **state)
{
    (void)state;
    assert_false(request("quiet", WIRE_OP_RESERVE, 1, 1000000));
    for (uint64_t i = 0; i < 2 * NODE_ADMIT_SLOTS; i++) {
        request("loud", WIRE_OP_RESERVE, 100 + i, 1000000);
    }
    assert_int_equal(n.pending_reqs, NODE_ADMIT_SLOTS);
    /* teardown: node_admit_fini, then no request is left */
}

/* Decisions that stayed in the filling batch (their segment is committing
 * in another stream) keep their slots when a batch is sent; a tenant with
 * ops committing may not take the node's last idle stream, another tenant
 * may, and once its batch settled it may again. */
static void stayed_decisions_and_the_lane(void **state)
{
    (void)state;
    static seg_op ops[NODE_ADMIT_SLOTS];
    static seg_item item;
    static seg_segment seg;
    snprintf(item.tenant_id, sizeof item.tenant_id, "loud");
    seg.item = &item;
    int64_t t = 1000000;
    assert_false(request("quiet", WIRE_OP_RESERVE, 1, t));
    nnx_hdr hdr;
    wire_request q;
    memset(&hdr, 0, sizeof hdr);
    memset(&q, 0, sizeof q);
    q.op = WIRE_OP_RESERVE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "loud");
    batch.ops = ops;
    for (size_t i = 0; i < NODE_ADMIT_SLOTS; i++) {
        ops[i].seg = &seg;
        ops[i].req = node_req_new(&n, &hdr, &q);
    }
    batch.n = NODE_ADMIT_SLOTS;
    node_admit_batch_opened(&n);
    assert_true(request("loud", WIRE_OP_RESERVE, 2, t + 1));
    assert_false(request("quiet", WIRE_OP_RESERVE, 3, t + 1));
    /* one of loud's decisions commits in a stream */
    node_batch sent = {ops, 1, 0};
    assert_true(node_admit_lane_open(&n, "loud"));
    node_admit_sent(&n, &sent);
    assert_false(node_admit_lane_open(&n, "loud"));
    assert_true(node_admit_lane_open(&n, "quiet"));
    node_admit_settled(&n, &sent);
    assert_true(node_admit_lane_open(&n, "loud"));
    for (size_t i = 0; i < NODE_ADMIT_SLOTS; i++) {
        node_req_free(&n, ops[i].req);
    }
    batch.n = 0;
    batch.ops = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(alone_never_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(shared_slots_then_round_robin, setup, teardown),
        cmocka_unit_test_setup_teardown(two_waiting_tenants_share_a_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(the_other_tenant_gone_no_more_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(answers_take_no_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(slow_commits_shrink_the_share, setup, teardown),
        cmocka_unit_test_setup_teardown(a_stop_frees_the_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(stayed_decisions_and_the_lane, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
