/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_reply.c - see node_reply.h.
 */
#include "node_reply.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"
#include "node_metrics.h"
#include "node_req.h"

static void hold_to_wire(const seg_hold *h, wire_hold *w)
{
    memset(w, 0, sizeof *w);
    w->hold_id = h->hold_id;
    w->segment_id = h->seg->segment_id;
    snprintf(w->item_id, sizeof w->item_id, "%s", h->seg->item->item_id);
    snprintf(w->buyer_id, sizeof w->buyer_id, "%s", h->buyer_id);
    w->qty = h->qty;
    w->qty_sold = h->qty_sold;
    w->state = h->state;
    w->expires_at_ms = h->expires_at_ms;
    w->extended = h->extended;
}

static void send_reply(node *n, const nnx_hdr *hdr, uint64_t corr_id, int status,
                       const wire_hold *hold, bool replay, const char *message)
{
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = corr_id;
    rep.status = status;
    snprintf(rep.message, sizeof rep.message, "%s",
             message ? message : (status ? esc_strerror(status) : ""));
    if (hold != NULL) {
        rep.has_hold = true;
        rep.hold = *hold;
        rep.replay = replay;
    }
    unsigned char buf[2048];
    size_t len;
    if (wire_encode_reply(&rep, buf, sizeof buf, &len) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-REPLY", "cannot encode reply corr=%" PRIu64, corr_id);
        return;
    }
    int rc = nnx_send(n->sock, hdr, buf, len);
    if (rc != 0) {
        /* the client resends with the same key; the answer will be the same */
        ESC_LOG(ESC_LOG_DEBUG, "SEG-REPLY", "send failed: %s", esc_err_name(rc));
    }
}

void node_reply_send(node *n, const nnx_hdr *hdr, uint64_t corr_id, int status,
                     const wire_hold *hold, const char *message)
{
    send_reply(n, hdr, corr_id, status, hold, false, message);
}

static void count_status(node *n, int op, int status)
{
    node_metrics_answer(n, op, status);
    switch (status) {
    case 0:
        if (op == WIRE_OP_RESERVE) {
            n->stats.reserves_ok++;
        }
        break;
    case ESC_ESOLD_OUT:
        n->stats.rejected_sold_out++;
        break;
    case ESC_ETRY_LATER:
        n->stats.rejected_try_later++;
        break;
    case ESC_ESEGMENT_EMPTY:
        n->stats.rejected_segment_empty++;
        break;
    default:
        n->stats.rejected_other++;
        break;
    }
}

void node_reply_decided(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                        const seg_hold *h, bool replay)
{
    wire_hold w;
    if (h != NULL) {
        hold_to_wire(h, &w);
    }
    count_status(n, req->op, status);
    send_reply(n, hdr, req->corr_id, status, h ? &w : NULL, replay, NULL);
}

void node_reply_answer(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                       const seg_hold *h)
{
    node_reply_decided(n, hdr, req, status, h, false);
}

void node_reply_refuse(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                       const char *message)
{
    count_status(n, req->op, status);
    node_reply_send(n, hdr, req->corr_id, status, NULL, message);
}

void node_reply_row(node *n, const node_req *r, int status, const wire_hold *w, bool replay)
{
    node_metrics_answer(n, r->req.op, status);
    send_reply(n, &r->hdr, r->req.corr_id, status, w, replay, NULL);
}

void node_reply_all(node *n, node_req *list, int status)
{
    node_req *r;
    while ((r = node_req_pop(&list)) != NULL) {
        node_reply_answer(n, &r->hdr, &r->req, status, NULL);
        node_req_free(n, r);
    }
}

void node_reply_seg_figures(const seg_segment *s, wire_seg_stats *w)
{
    w->segment_id = s->segment_id;
    w->epoch = s->epoch;
    w->available = s->available;
    w->held = s->held + s->returning;
    w->sold = s->sold;
    w->state = s->fenced ? 3u : (uint32_t)s->state;
    w->reserved = s->reserved;
    w->empties = s->empties;
}

void node_reply_seg_stats(const seg_segment *s, wire_seg_stats *w)
{
    memset(w, 0, sizeof *w);
    node_reply_seg_figures(s, w);
    snprintf(w->item_id, sizeof w->item_id, "%s", s->item->item_id);
    snprintf(w->tenant_id, sizeof w->tenant_id, "%s", s->item->tenant_id);
}

void node_reply_stats(node *n, const nnx_hdr *hdr, const wire_request *req)
{
    wire_seg_stats segs[ESC_STATS_SEGMENTS_MAX];
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = req->corr_id;
    rep.segs = segs;
    for (size_t i = 0; i < n->core.nsegs && rep.nsegs < ESC_STATS_SEGMENTS_MAX; i++) {
        const seg_segment *s = &n->core.segs[i];
        if (strcmp(s->item->tenant_id, req->tenant_id) != 0 ||
            (req->item_id[0] != '\0' && strcmp(s->item->item_id, req->item_id) != 0)) {
            continue;
        }
        node_reply_seg_stats(s, &segs[rep.nsegs++]);
    }
    if (rep.nsegs == 0 && !seg_core_knows_tenant(&n->core, req->tenant_id)) {
        rep.status = ESC_EUNKNOWN_TENANT;
        snprintf(rep.message, sizeof rep.message, "%s", esc_strerror(rep.status));
    }
    unsigned char *buf = esc_xmalloc(ESC_FRAME_BYTES_MAX);
    size_t len;
    if (wire_encode_reply(&rep, buf, ESC_FRAME_BYTES_MAX, &len) == 0) {
        (void)nnx_send(n->sock, hdr, buf, len);
    }
    free(buf);
}
