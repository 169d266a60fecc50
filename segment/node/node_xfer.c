/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_xfer.c - see node_xfer.h. The records live in n->xfers, at most
 * ESC_HB_TRANSFERS_MAX of them (a heartbeat carries that many results).
 */
#include "node_xfer.h"

#include <inttypes.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "node_metrics.h"

node_xfer *node_xfer_find(node *n, uint64_t transfer_id)
{
    for (size_t i = 0; i < n->nxfers; i++) {
        if (n->xfers[i].transfer_id == transfer_id) {
            return &n->xfers[i];
        }
    }
    return NULL;
}

void node_xfer_forget(node *n, uint64_t transfer_id)
{
    node_xfer *x = node_xfer_find(n, transfer_id);
    if (x != NULL) {
        size_t i = (size_t)(x - n->xfers);
        memmove(x, x + 1, (n->nxfers - i - 1) * sizeof *x);
        n->nxfers--;
    }
}

int node_xfer_begin(node *n, const wire_xfer_cmd *c, seg_op *op)
{
    if (node_xfer_find(n, c->transfer_id) != NULL) {
        return -1; /* in a batch, or its result is being reported */
    }
    seg_segment *s = seg_core_find_segment(&n->core, c->segment_id);
    if (s == NULL || s->fenced || n->nxfers == ESC_HB_TRANSFERS_MAX ||
        (c->kind != WIRE_XFER_GIVE && c->kind != WIRE_XFER_RECEIVE)) {
        return -1;
    }
    int rc = c->kind == WIRE_XFER_GIVE ? seg_core_give(&n->core, s, c->transfer_id, c->qty, op)
                                       : seg_core_receive(&n->core, s, c->transfer_id, c->qty, op);
    if (rc != 0) {
        return rc; /* busy with another transfer, or a bad qty: not now */
    }
    node_xfer *x = &n->xfers[n->nxfers++];
    memset(x, 0, sizeof *x);
    x->transfer_id = c->transfer_id;
    ESC_LOG(ESC_LOG_DEBUG, "SEG-XFER", "transfer=%" PRIu64 " %s seg=%" PRIu64 " qty=%" PRId64,
            c->transfer_id, c->kind == WIRE_XFER_GIVE ? "give" : "receive", c->segment_id, op->qty);
    return 0;
}

void node_xfer_verdict(node *n, uint64_t transfer_id, const char *state, int64_t qty)
{
    node_xfer *x = node_xfer_find(n, transfer_id);
    if (x == NULL || x->done) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-COMMIT", "verdict for an unknown transfer %" PRIu64,
                transfer_id);
        return;
    }
    x->outcome = strcmp(state, "sent") == 0        ? WIRE_XFER_SENT
                 : strcmp(state, "received") == 0  ? WIRE_XFER_RECEIVED
                 : strcmp(state, "cancelled") == 0 ? WIRE_XFER_CANCELLED
                                                   : WIRE_XFER_STALE;
    x->qty = x->outcome == WIRE_XFER_STALE ? 0 : qty;
}

static const char *outcome_name(uint32_t outcome)
{
    switch (outcome) {
    case WIRE_XFER_SENT:
        return "sent";
    case WIRE_XFER_RECEIVED:
        return "received";
    case WIRE_XFER_CANCELLED:
        return "cancelled";
    default:
        return "stale";
    }
}

/* Finishes op in the core as the database's verdict says. */
static void apply_outcome(node *n, node_xfer *x, const seg_op *op)
{
    seg_op done = *op;
    switch (x->outcome) {
    case WIRE_XFER_SENT:
    case WIRE_XFER_CANCELLED:
        if (x->qty != op->qty) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-XFER",
                    "transfer=%" PRIu64 " gave %" PRId64 " but the database says %" PRId64,
                    op->transfer_id, op->qty, x->qty);
        }
        seg_core_commit_op(&n->core, &done, esc_wall_ms());
        break;
    case WIRE_XFER_RECEIVED:
        done.qty = x->qty; /* the row's qty, never the command's */
        seg_core_commit_op(&n->core, &done, esc_wall_ms());
        break;
    default:
        x->outcome = WIRE_XFER_STALE;
        x->qty = 0;
        seg_core_undo_op(&n->core, op);
        break;
    }
}

void node_xfer_settle(node *n, const seg_op *op, bool committed)
{
    node_xfer *x = node_xfer_find(n, op->transfer_id);
    if (!committed || x == NULL) {
        /* nothing happened in the database: the coordinator resends it */
        seg_core_undo_op(&n->core, op);
        node_xfer_forget(n, op->transfer_id);
        return;
    }
    apply_outcome(n, x, op);
    x->done = true;
    x->included_corr = 0;
    n->stats.transfers_done++;
    node_metrics_transfer(n, op->kind == SEG_OP_GIVE, outcome_name(x->outcome));
    ESC_LOG(ESC_LOG_INFO, "SEG-XFER",
            "transfer=%" PRIu64 " %s seg=%" PRIu64 " outcome=%s qty=%" PRId64 " available=%" PRId64,
            op->transfer_id, op->kind == SEG_OP_GIVE ? "give" : "receive", op->seg->segment_id,
            outcome_name(x->outcome), x->qty, op->seg->available);
    if (n->up.report_soon != NULL) {
        n->up.report_soon(n);
    }
}

void node_xfer_report(node *n, wire_heartbeat *m, uint64_t corr)
{
    m->nxfers = 0;
    for (size_t i = 0; i < n->nxfers && m->nxfers < ESC_HB_TRANSFERS_MAX; i++) {
        node_xfer *x = &n->xfers[i];
        if (!x->done) {
            continue;
        }
        if (x->included_corr == 0) {
            x->included_corr = corr;
        }
        wire_transfer_result *w = &m->xfers[m->nxfers++];
        w->transfer_id = x->transfer_id;
        w->outcome = x->outcome;
        w->qty = x->qty;
    }
}

void node_xfer_acked(node *n, uint64_t corr)
{
    size_t keep = 0;
    for (size_t i = 0; i < n->nxfers; i++) {
        const node_xfer *x = &n->xfers[i];
        if (!(x->done && x->included_corr != 0 && x->included_corr <= corr)) {
            n->xfers[keep++] = *x;
        }
    }
    n->nxfers = keep;
}
