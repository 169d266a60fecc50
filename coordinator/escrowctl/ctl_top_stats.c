/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_stats.c - see ctl_top_stats.h.
 *
 * Each answer's time is taken when it arrives (esc_mono_us): a rate is the
 * difference of two answers of the same owner over the time between them,
 * however long the other round trips of the sample took.
 */
#include "ctl_top_stats.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ctl_rpc.h"
#include "escrow_errors.h"
#include "wire.h"

/* A StatsReq: two ids and the credential, well under a kilobyte. */
#define STATS_FRAME_MAX 1024

/* Why a node stopped being asked, for the note. */
static void note_node(ctl_top_snap *s, const ctl_top_node *nd, const char *why)
{
    size_t n = strlen(s->note);
    if (n + 1 >= sizeof s->note) {
        return;
    }
    /* a long note is cut: the first nodes named are enough */
    int w =
        snprintf(s->note + n, sizeof s->note - n, "%snode %s %s", n > 0 ? "; " : "", nd->node, why);
    if (w < 0) {
        s->note[n] = '\0';
    }
}

/* Copies the answer's counters into the item's segments owned by node. */
static void take(ctl_top_snap *s, const ctl_top_item *it, const char *node, const wire_reply *rep,
                 int64_t now_us)
{
    for (size_t k = 0; k < rep->nsegs; k++) {
        const wire_seg_stats *st = &rep->segs[k];
        for (size_t j = it->seg_first; j < it->seg_first + it->nsegs; j++) {
            ctl_top_seg *g = &s->segs[j];
            if ((uint64_t)g->segment_id == st->segment_id && strcmp(g->node, node) == 0) {
                g->has_stats = true;
                g->stats_epoch = st->epoch;
                g->reserved = st->reserved;
                g->empties = st->empties;
                g->stats_us = now_us;
            }
        }
    }
}

/* One round trip: the counters of item it on node nd. Returns false when
 * the node should not be asked again in this sample. */
static bool ask(ctl_top_snap *s, const ctl_top_item *it, const ctl_top_node *nd, int timeout_ms)
{
    static wire_seg_stats segs[ESC_STATS_SEGMENTS_MAX]; /* large: not on the stack */
    wire_request req;
    memset(&req, 0, sizeof req);
    req.corr_id = ctl_rpc_corr_id();
    req.op = WIRE_OP_STATS;
    snprintf(req.tenant_id, sizeof req.tenant_id, "%s", it->tenant);
    snprintf(req.item_id, sizeof req.item_id, "%s", it->item);
    unsigned char frame[STATS_FRAME_MAX];
    size_t len = 0;
    if (wire_encode_request(&req, frame, sizeof frame, &len) != 0) {
        note_node(s, nd, "cannot be asked (the request does not encode)");
        return false;
    }
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.segs = segs;
    rep.segs_cap = ESC_STATS_SEGMENTS_MAX;
    bool sent = false;
    int rc = ctl_rpc_call(nd->endpoint, req.corr_id, frame, len, timeout_ms, &rep, &sent);
    if (rc != 0) {
        note_node(s, nd,
                  rc == ESC_ETIMEDOUT ? "did not answer: no rates for its segments"
                                      : "cannot be reached: no rates for its segments");
        return false;
    }
    if (rep.status != 0 && rep.status != ESC_EUNKNOWN_TENANT) {
        char why[WIRE_WHY_MAX + 32];
        snprintf(why, sizeof why, "refused its counters (%s)", ctl_rpc_message(&rep));
        note_node(s, nd, why);
        return false;
    }
    take(s, it, nd->node, &rep, esc_mono_us());
    return true;
}

/* True if an earlier segment of the item has the same owner (asked once). */
static bool owner_seen(const ctl_top_snap *s, const ctl_top_item *it, size_t j)
{
    for (size_t k = it->seg_first; k < j; k++) {
        if (strcmp(s->segs[k].node, s->segs[j].node) == 0) {
            return true;
        }
    }
    return false;
}

void ctl_top_stats_collect(ctl_top_snap *s, int timeout_ms)
{
    bool given_up[CTL_TOP_NODES_MAX];
    memset(given_up, 0, sizeof given_up);
    for (size_t i = 0; i < s->nitems; i++) {
        const ctl_top_item *it = &s->items[i];
        for (size_t j = it->seg_first; j < it->seg_first + it->nsegs; j++) {
            const ctl_top_seg *g = &s->segs[j];
            const ctl_top_node *nd = g->node[0] != '\0' ? ctl_top_snap_node(s, g->node) : NULL;
            if (nd == NULL || nd->down || nd->endpoint[0] == '\0' || owner_seen(s, it, j)) {
                continue;
            }
            size_t idx = (size_t)(nd - s->nodes);
            if (idx >= CTL_TOP_NODES_MAX || given_up[idx]) {
                continue;
            }
            if (!ask(s, it, nd, timeout_ms)) {
                given_up[idx] = true;
            }
        }
    }
}
