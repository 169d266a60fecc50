/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_admit.c - see node_admit.h.
 */
#include "node_admit.h"

#include <string.h>

#include "hmap.h"
#include "log.h"
#include "node.h"
#include "node_req.h"

void node_admit_init(node_admit *a, uint64_t seed, const seg_share_config *share, int64_t now_us)
{
    memset(a, 0, sizeof *a);
    a->seed = seed;
    seg_share_init(&a->share, share, now_us);
    for (uint32_t b = 0; b < NODE_ADMIT_BUCKETS; b++) {
        a->last_us[b] = INT64_MIN / 2;
    }
}

void node_admit_fini(node *n)
{
    node_admit *a = &n->admit;
    for (uint32_t b = 0; b < NODE_ADMIT_BUCKETS; b++) {
        node_req *r;
        while ((r = node_req_pop(&a->head[b])) != NULL) {
            node_req_free(n, r);
        }
        a->tail[b] = NULL;
    }
    a->waiting = 0;
}

static uint32_t bucket(const node_admit *a, const char *tenant_id)
{
    return (uint32_t)(hmap_hash_bytes(tenant_id, strlen(tenant_id), a->seed) % NODE_ADMIT_BUCKETS);
}

/* More than one tenant wrote within NODE_ADMIT_ACTIVE_US (counted at most
 * every NODE_ADMIT_RECOUNT_US). */
static bool shared(node_admit *a, int64_t now_us)
{
    if (now_us - a->counted_us >= NODE_ADMIT_RECOUNT_US) {
        a->active = 0;
        for (uint32_t b = 0; b < NODE_ADMIT_BUCKETS; b++) {
            a->active += now_us - a->last_us[b] < NODE_ADMIT_ACTIVE_US;
        }
        a->counted_us = now_us;
    }
    return a->active > 1;
}

static bool writes(int op)
{
    return op == WIRE_OP_RESERVE || op == WIRE_OP_CONFIRM || op == WIRE_OP_RELEASE ||
           op == WIRE_OP_EXTEND;
}

bool node_admit_defer(node *n, const nnx_hdr *hdr, const wire_request *q, int64_t now_us)
{
    node_admit *a = &n->admit;
    if (!writes(q->op)) {
        return false;
    }
    uint32_t b = bucket(a, q->tenant_id);
    if (now_us - a->last_us[b] >= NODE_ADMIT_ACTIVE_US) {
        a->counted_us = INT64_MIN / 2; /* a tenant (re)appears: count again */
    }
    a->last_us[b] = now_us;
    if (a->head[b] == NULL && (a->in_batch[b] < a->share.slots || !shared(a, now_us))) {
        return false;
    }
    node_req *r = node_req_new(n, hdr, q);
    if (a->head[b] == NULL) {
        a->head[b] = r;
    } else {
        a->tail[b]->next = r;
    }
    a->tail[b] = r;
    a->waiting++;
    a->waited++;
    return true;
}

void node_admit_counted(node *n, const char *tenant_id)
{
    node_admit *a = &n->admit;
    a->in_batch[bucket(a, tenant_id)]++;
}

void node_admit_committed(node *n, int64_t rtt_us, int64_t now_us)
{
    node_admit *a = &n->admit;
    seg_share_committed(&a->share, rtt_us, shared(a, now_us), now_us);
}

void node_admit_batch_opened(node *n)
{
    node_admit *a = &n->admit;
    memset(a->in_batch, 0, sizeof a->in_batch);
    /* decisions that stayed in the filling batch (their segments are
     * committing in another stream) keep their slots */
    for (size_t k = 0; k < n->filling->n; k++) {
        const node_req *r = n->filling->ops[k].req;
        if (r != NULL) {
            a->in_batch[bucket(a, r->req.tenant_id)]++;
        }
    }
    node_admit_drain(n);
}

/* One bucket's turn: its waiting requests until its slots are taken. A
 * request answered at once (sold out, a replay, ...) takes no slot: were
 * it counted, a queue of such answers could be left with nothing in the
 * batch to commit, and so nothing to open the next batch that drains it. */
static void drain_bucket(node *n, uint32_t b)
{
    node_admit *a = &n->admit;
    while (a->head[b] != NULL && a->in_batch[b] < a->share.slots &&
           n->filling->n < ESC_BATCH_ROWS_MAX) {
        node_req *r = node_req_pop(&a->head[b]);
        if (a->head[b] == NULL) {
            a->tail[b] = NULL;
        }
        a->waiting--;
        n->up.redecide(n, r); /* may count a decision in in_batch[b] */
    }
}

void node_admit_drain(node *n)
{
    node_admit *a = &n->admit;
    if (a->waiting == 0 || a->draining) {
        return;
    }
    a->draining = true;
    uint32_t start = a->cursor;
    for (uint32_t i = 0; i < NODE_ADMIT_BUCKETS && a->waiting > 0; i++) {
        drain_bucket(n, (start + i) % NODE_ADMIT_BUCKETS);
    }
    a->cursor = (start + 1) % NODE_ADMIT_BUCKETS;
    a->draining = false;
}

/* The tenant an op counts for: its item's (a request's is the same). */
static uint32_t op_bucket(const node_admit *a, const seg_op *op)
{
    return bucket(a, op->seg->item->tenant_id);
}

void node_admit_sent(node *n, const node_batch *b)
{
    for (size_t k = 0; k < b->n; k++) {
        n->admit.committing[op_bucket(&n->admit, &b->ops[k])]++;
    }
}

void node_admit_settled(node *n, const node_batch *b)
{
    for (size_t k = 0; k < b->n; k++) {
        uint32_t *c = &n->admit.committing[op_bucket(&n->admit, &b->ops[k])];
        ESC_ASSERT(*c > 0);
        (*c)--;
    }
}

bool node_admit_lane_open(node *n, const char *tenant_id)
{
    node_admit *a = &n->admit;
    return a->committing[bucket(a, tenant_id)] == 0;
}
