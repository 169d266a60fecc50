/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_lookup.c - see node_lookup.h. A lookup answers like the decision
 * would have, from the row: a final hold's transition is answered as a
 * retry of it. A hold the database still calls held but memory does not
 * know was made by a newer owner of its segment when the segment's epoch
 * moved on: this node is stale, the answer is ESC_EFENCED and the segment
 * is dropped. With the epoch unchanged memory and database disagree: a bug
 * (SEG-BUG, ESC_EINTERNAL).
 */
#include "node_lookup.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "escrow_errors.h"
#include "log.h"
#include "node_commit.h"
#include "node_reply.h"
#include "node_req.h"
#include "pg_result.h"

static void lookup_next(node *n);

void node_lookup_enqueue(node *n, node_req *r)
{
    r->next = NULL;
    if (n->lookups_tail != NULL) {
        n->lookups_tail->next = r;
    } else {
        n->lookups_head = r;
    }
    n->lookups_tail = r;
    node_lookup_kick(n);
}

static int lookup_status(int op, int state, int64_t qty, int64_t qty_sold)
{
    switch (op) {
    case WIRE_OP_CONFIRM:
        return state == SEG_CONVERTED ? ((qty == 0 || qty == qty_sold) ? 0 : ESC_ECONFLICT)
               : state == SEG_EXPIRED ? ESC_EEXPIRED
                                      : ESC_ENOT_HELD;
    case WIRE_OP_RELEASE:
        return state == SEG_CANCELLED ? 0 : state == SEG_EXPIRED ? ESC_EEXPIRED : ESC_ENOT_HELD;
    case WIRE_OP_EXTEND:
        return state == SEG_EXPIRED ? ESC_EEXPIRED : ESC_ENOT_HELD;
    default:
        return 0;
    }
}

/* A hold held in the record that memory does not know, of a segment whose
 * epoch in the record is db_epoch. */
static void answer_unknown_held(node *n, const node_req *r, const wire_hold *w, uint64_t db_epoch)
{
    seg_segment *s = seg_core_find_segment(&n->core, w->segment_id);
    if (s != NULL && !s->fenced && s->epoch == db_epoch) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-BUG",
                "hold=%" PRIu64 " seg=%" PRIu64 " epoch=%" PRIu64
                ": held in the database but unknown to this node, which owns its segment",
                w->hold_id, w->segment_id, db_epoch);
        node_reply_answer(n, &r->hdr, &r->req, ESC_EINTERNAL, NULL);
        return;
    }
    if (s != NULL && !s->fenced && !node_commit_touches(n, s)) {
        node_commit_fence(n, s, "a hold its new owner made was asked for here");
    }
    node_reply_answer(n, &r->hdr, &r->req, ESC_EFENCED, NULL);
}

/* The hold row answers r. */
static void answer_row(node *n, const node_req *r, const PGresult *res)
{
    wire_hold w;
    seg_store_hold_from_row(res, 0, 0, &w);
    if (r->req.op == WIRE_OP_RESERVE) {
        /* a resolve: the key's hold, wherever it is, is the answer */
        int64_t hash = pg_result_i64_or(res, 0, 9, 0);
        bool same = hash == wire_reserve_hash(r->req.item_id, r->req.buyer_id, r->req.qty);
        node_reply_row(n, r, same ? 0 : ESC_EIDEMPOTENCY_MISMATCH, same ? &w : NULL, same);
        return;
    }
    if (w.state == SEG_HELD) {
        answer_unknown_held(n, r, &w, (uint64_t)pg_result_i64_or(res, 0, 9, 0));
        return;
    }
    node_reply_row(n, r, lookup_status(r->req.op, w.state, r->req.qty, w.qty_sold), &w, false);
}

static void on_lookup(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    node_req *r = arg;
    node *n = c->state_arg;
    n->query_busy = false;
    if (err->code != 0) {
        node_reply_answer(n, &r->hdr, &r->req, ESC_EUNAVAILABLE, NULL);
    } else if (PQntuples(res) == 0) {
        node_reply_answer(n, &r->hdr, &r->req, ESC_ENOT_FOUND, NULL);
    } else {
        answer_row(n, r, res);
    }
    node_req_free(n, r);
    node_lookup_kick(n);
    n->up.progress(n);
}

void node_lookup_kick(node *n)
{
    if (n->query_busy || !pgx_ready(&n->query_conn)) {
        return;
    }
    if (n->up.query_first != NULL && n->up.query_first(n)) {
        return; /* a segment load first: requests for it wait until it is served */
    }
    lookup_next(n);
}

static void lookup_next(node *n)
{
    if (n->query_busy || n->lookups_head == NULL || !pgx_ready(&n->query_conn)) {
        return;
    }
    node_req *r = n->lookups_head;
    n->lookups_head = r->next;
    if (n->lookups_head == NULL) {
        n->lookups_tail = NULL;
    }
    char id[24];
    snprintf(id, sizeof id, "%" PRIu64, r->req.hold_id);
    const char *by_id[2] = {id, r->req.tenant_id};
    const char *by_key[2] = {r->req.tenant_id, r->req.key};
    bool resolve = r->req.op == WIRE_OP_RESERVE;
    if (pgx_query(&n->query_conn, NULL, resolve ? SEG_SQL_LOOKUP_KEY : SEG_SQL_LOOKUP, 2,
                  resolve ? by_key : by_id, on_lookup, r) != 0) {
        node_reply_answer(n, &r->hdr, &r->req, ESC_EUNAVAILABLE, NULL);
        node_req_free(n, r);
        return;
    }
    n->query_busy = true;
}
