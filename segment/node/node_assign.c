/*
 * node_hb.c - the segment node under a coordinator (managed mode): the
 * heartbeat client, the assignment it receives, the asynchronous loading of
 * newly assigned segments, and the transfer commands it executes.
 *
 * Heartbeats go out on a raw REQ socket every heartbeat_ms (the coordinator
 * sets it), and early (at most one per NODE_HB_MIN_GAP_MS) when a segment
 * went dry or a transfer result is ready. corr_id rises with every
 * heartbeat; a reply is applied only if its corr_id is newer than every
 * reply applied before (replies can arrive late and out of order: the
 * newest view of the coordinator wins). Any reply acknowledges the transfer
 * results its heartbeat carried: they are reported until then.
 *
 * Assignment: the reply names every segment this node should serve, with
 * its epoch. A served segment missing from it, or assigned at a higher
 * epoch, is dropped like a fenced one (waiters answered NOT_OWNER); an
 * assigned segment not served is loaded on query_conn (segment and item
 * rows at exactly the assigned epoch and node, then live and recently ended
 * holds) and served once loaded, if it is still assigned at that epoch. A
 * dropped segment is only taken again at a higher epoch. Nothing here
 * blocks the loop.
 *
 * Transfers: a GIVE takes min(qty, available) out of the segment at once
 * (tentatively) and goes into the group commit; a RECEIVE adds units only
 * after the commit said received. The database decides exactly-once from
 * the transfer row's state; a step that is no longer allowed is STALE and
 * undone in memory. One op per transfer id at a time: a command whose id is
 * in a batch or still being reported is ignored.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "log.h"
#include "node_internal.h"
#include "node_metrics.h"
#include "seg_store.h"

/* An early heartbeat waits at least this long after the previous one. */
#define NODE_HB_MIN_GAP_MS 20
/* Until the coordinator says otherwise. */
#define NODE_HB_DEFAULT_MS 200
/* Bounds accepted from the coordinator. */
#define NODE_HB_MS_MIN 10
#define NODE_HB_MS_MAX 60000
/* The stopping heartbeat waits this long for its reply before the node exits. */
#define NODE_HB_STOP_WAIT_MS 1000
/* No reply for this long: drop the connecting endpoint and connect afresh
 * (nanomsg 1.1.5's endpoint can wedge after the peer restarted, nnx.h). */
#define NODE_HB_RECONNECT_MS 2000
/* Replies read per poll callback. */
#define NODE_HB_RECV_PER_CB 16

static void hb_send(node *n);

/* ---- transfers ------------------------------------------------------------ */

node_xfer *node_xfer_find(node *n, uint64_t transfer_id)
{
    for (size_t i = 0; i < n->hb.nxfers; i++) {
        if (n->hb.xfers[i].transfer_id == transfer_id) {
            return &n->hb.xfers[i];
        }
    }
    return NULL;
}

void node_xfer_forget(node *n, uint64_t transfer_id)
{
    node_hb *hb = &n->hb;
    for (size_t i = 0; i < hb->nxfers; i++) {
        if (hb->xfers[i].transfer_id == transfer_id) {
            memmove(&hb->xfers[i], &hb->xfers[i + 1], (hb->nxfers - i - 1) * sizeof hb->xfers[0]);
            hb->nxfers--;
            return;
        }
    }
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

void node_xfer_settle(node *n, const seg_op *op, bool committed)
{
    node_xfer *x = node_xfer_find(n, op->transfer_id);
    if (!committed || x == NULL) {
        /* nothing happened in the database: the coordinator resends it */
        seg_core_undo_op(&n->core, op);
        node_xfer_forget(n, op->transfer_id);
        return;
    }
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
    x->done = true;
    x->included_corr = 0;
    n->stats.transfers_done++;
    node_metrics_transfer(n, op->kind == SEG_OP_GIVE, outcome_name(x->outcome));
    ESC_LOG(ESC_LOG_INFO, "SEG-XFER",
            "transfer=%" PRIu64 " %s seg=%" PRIu64 " outcome=%s qty=%" PRId64 " available=%" PRId64,
            op->transfer_id, op->kind == SEG_OP_GIVE ? "give" : "receive", op->seg->segment_id,
            outcome_name(x->outcome), x->qty, op->seg->available);
    node_hb_soon(n);
}

static void apply_commands(node *n, const wire_hb_reply *r)
{
    node_hb *hb = &n->hb;
    for (size_t i = 0; i < r->nxfers && !n->stopping; i++) {
        const wire_xfer_cmd *c = &r->xfers[i];
        if (node_xfer_find(n, c->transfer_id) != NULL) {
            continue; /* in a batch, or its result is being reported */
        }
        seg_segment *s = seg_core_find_segment(&n->core, c->segment_id);
        if (s == NULL || s->fenced || hb->nxfers == ESC_HB_TRANSFERS_MAX ||
            (c->kind != WIRE_XFER_GIVE && c->kind != WIRE_XFER_RECEIVE)) {
            continue;
        }
        seg_op op;
        int rc = c->kind == WIRE_XFER_GIVE
                     ? seg_core_give(&n->core, s, c->transfer_id, c->qty, &op)
                     : seg_core_receive(&n->core, s, c->transfer_id, c->qty, &op);
        if (rc != 0) {
            continue; /* busy with another transfer, or a bad qty: not now */
        }
        node_xfer *x = &hb->xfers[hb->nxfers++];
        memset(x, 0, sizeof *x);
        x->transfer_id = c->transfer_id;
        ESC_LOG(ESC_LOG_DEBUG, "SEG-XFER", "transfer=%" PRIu64 " %s seg=%" PRIu64 " qty=%" PRId64,
                c->transfer_id, c->kind == WIRE_XFER_GIVE ? "give" : "receive", c->segment_id,
                op.qty);
        node_batch_add(n, &op);
    }
}

/* ---- assignment ------------------------------------------------------------ */

static const wire_assignment *find_assign(const node_hb *hb, uint64_t segment_id)
{
    for (size_t i = 0; i < hb->nassign; i++) {
        if (hb->assign[i].segment_id == segment_id) {
            return &hb->assign[i];
        }
    }
    return NULL;
}

/* An assigned segment that is not served and may be loaded now. */
static bool loadable(node *n, const wire_assignment *a)
{
    const seg_segment *s = seg_core_find_segment(&n->core, a->segment_id);
    return s == NULL || (s->fenced && s->epoch < a->epoch);
}

static void drop_unassigned(node *n)
{
    node_hb *hb = &n->hb;
    for (size_t i = 0; i < n->core.nsegs; i++) {
        seg_segment *s = &n->core.segs[i];
        if (s->fenced) {
            continue;
        }
        const wire_assignment *a = find_assign(hb, s->segment_id);
        if (a != NULL && a->epoch == s->epoch) {
            s->state = a->state == WIRE_SEG_DRAINING ? SEG_DRAINING : SEG_ACTIVE;
            s->item->paused = a->paused;
            continue;
        }
        if (a != NULL && a->epoch < s->epoch) {
            continue; /* a view older than what we loaded: the next reply is newer */
        }
        if (node_batch_touches(n, s)) {
            continue; /* settles first; the next reply drops it */
        }
        ESC_LOG(ESC_LOG_INFO, "SEG-DROP",
                "seg=%" PRIu64 " item=%s/%s epoch=%" PRIu64
                ": no longer assigned here (%s); this node stops serving it",
                s->segment_id, s->item->tenant_id, s->item->item_id, s->epoch,
                a == NULL ? "unassigned" : "assigned at a higher epoch");
        node_batch_drop_segment(n, s, ESC_ENOT_OWNER);
        n->stats.segments_dropped++;
        node_metrics_segment(n, false);
    }
}

static void apply_assignment(node *n, const wire_hb_reply *r)
{
    node_hb *hb = &n->hb;
    hb->nassign = r->nsegs < ESC_HB_SEGMENTS_MAX ? r->nsegs : ESC_HB_SEGMENTS_MAX;
    memcpy(hb->assign, r->segs, hb->nassign * sizeof hb->assign[0]);
    drop_unassigned(n);
    hb->load_wanted = false;
    for (size_t i = 0; i < hb->nassign && !hb->load_wanted; i++) {
        hb->load_wanted = loadable(n, &hb->assign[i]);
    }
    if (hb->load_wanted) {
        node_query_next(n);
    }
}

/* ---- loading assigned segments --------------------------------------------- */

static void load_finish(node *n)
{
    node_hb *hb = &n->hb;
    hb->load_busy = false;
    hb->nloads = 0;
    n->lookup_busy = false;
    node_query_next(n);
    node_maybe_finish_stop(n);
}

/* Adds the loaded rows still assigned at their epoch; returns how many. */
static size_t add_loaded(node *n)
{
    node_hb *hb = &n->hb;
    size_t added = 0;
    for (size_t i = 0; i < hb->nloads; i++) {
        node_load *l = &hb->loads[i];
        const wire_assignment *a = find_assign(hb, l->seg.segment_id);
        if (a == NULL || a->epoch != l->seg.epoch || !loadable(n, a)) {
            continue; /* the assignment moved on while we read */
        }
        seg_item *it;
        seg_segment *s;
        if (seg_core_add_item(&n->core, &l->item, &it) != 0) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "out of memory adding an item");
            continue;
        }
        /* the item row is fresher than what an earlier load left */
        it->max_per_order = l->item.max_per_order;
        it->max_per_buyer = l->item.max_per_buyer;
        it->hold_ttl_ms = l->item.hold_ttl_ms;
        it->paused = l->item.paused || a->paused;
        l->seg.state = a->state == WIRE_SEG_DRAINING ? SEG_DRAINING : SEG_ACTIVE;
        int rc = seg_core_add_segment(&n->core, it, &l->seg, &s);
        if (rc != 0) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "seg=%" PRIu64 " cannot be added: %s",
                    l->seg.segment_id, esc_err_name(rc));
            continue;
        }
        added++;
    }
    return added;
}

static void log_loaded(node *n)
{
    node_hb *hb = &n->hb;
    for (size_t i = 0; i < hb->nloads; i++) {
        const seg_segment *s = seg_core_find_segment(&n->core, hb->loads[i].seg.segment_id);
        if (s == NULL || s->fenced || s->epoch != hb->loads[i].seg.epoch) {
            continue;
        }
        n->stats.segments_loaded++;
        node_metrics_segment(n, true);
        ESC_LOG(ESC_LOG_INFO, "SEG-LOADED",
                "seg=%" PRIu64 " item=%s/%s epoch=%" PRIu64 " state=%s available=%" PRId64
                " held=%" PRId64 " sold=%" PRId64,
                s->segment_id, s->item->tenant_id, s->item->item_id, s->epoch,
                s->state == SEG_DRAINING ? "draining" : "active", s->available, s->held, s->sold);
    }
}

static void on_load_holds(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node *n = arg;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-LOAD", "holds: %s", err->message);
        load_finish(n);
        return;
    }
    if (add_loaded(n) > 0) {
        char why[256] = "";
        uint64_t bad = 0;
        if (seg_store_add_holds(res, &n->core, true, why, sizeof why) != 0 ||
            seg_core_check(&n->core, &bad) != 0) {
            /* should never happen: refuse to serve what does not add up */
            ESC_LOG(ESC_LOG_ERROR, "SEG-LOAD", "loaded state inconsistent (%s seg=%" PRIu64 ")",
                    why, bad);
            seg_segment *s = seg_core_find_segment(&n->core, bad);
            if (s != NULL && !s->fenced && !node_batch_touches(n, s)) {
                node_batch_drop_segment(n, s, ESC_ENOT_OWNER);
            }
        }
        log_loaded(n);
    }
    load_finish(n);
}

static void on_load_segments(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    node *n = arg;
    node_hb *hb = &n->hb;
    if (err->code != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-LOAD", "segments: %s", err->message);
        load_finish(n);
        return;
    }
    hb->nloads = 0;
    sbuf_open(&hb->load_ids);
    for (int i = 0; i < PQntuples(res) && hb->nloads < ESC_HB_SEGMENTS_MAX; i++) {
        node_load *l = &hb->loads[hb->nloads++];
        memset(l, 0, sizeof *l);
        l->seg.segment_id = strtoull(PQgetvalue(res, i, 0), NULL, 10);
        snprintf(l->item.tenant_id, sizeof l->item.tenant_id, "%s", PQgetvalue(res, i, 1));
        snprintf(l->item.item_id, sizeof l->item.item_id, "%s", PQgetvalue(res, i, 2));
        l->seg.epoch = strtoull(PQgetvalue(res, i, 3), NULL, 10);
        l->seg.available = strtoll(PQgetvalue(res, i, 4), NULL, 10);
        l->seg.held = strtoll(PQgetvalue(res, i, 5), NULL, 10);
        l->seg.sold = strtoll(PQgetvalue(res, i, 6), NULL, 10);
        l->seg.next_seq = strtoull(PQgetvalue(res, i, 7), NULL, 10);
        l->seg.state = seg_store_segment_state(PQgetvalue(res, i, 8));
        l->item.max_per_order = (int32_t)strtol(PQgetvalue(res, i, 9), NULL, 10);
        l->item.max_per_buyer = (int32_t)strtol(PQgetvalue(res, i, 10), NULL, 10);
        l->item.hold_ttl_ms = (uint32_t)strtoul(PQgetvalue(res, i, 11), NULL, 10);
        l->item.paused = strcmp(PQgetvalue(res, i, 12), "active") != 0;
        sbuf_i64(&hb->load_ids, (int64_t)l->seg.segment_id);
    }
    sbuf_close(&hb->load_ids);
    if (hb->nloads == 0) {
        load_finish(n); /* not ours at that epoch (any more): the next reply says more */
        return;
    }
    const char *v[1] = {sbuf_cstr(&hb->load_ids)};
    if (pgx_query(c, NULL, SEG_SQL_LOAD_HOLDS, 1, v, on_load_holds, n) != 0) {
        load_finish(n);
    }
}

bool node_hb_load_next(node *n)
{
    node_hb *hb = &n->hb;
    if (!hb->load_wanted || hb->load_busy || n->stopping) {
        return false;
    }
    hb->load_wanted = false;
    size_t k = 0;
    sbuf_open(&hb->load_ids);
    sbuf_open(&hb->load_epochs);
    for (size_t i = 0; i < hb->nassign; i++) {
        if (loadable(n, &hb->assign[i])) {
            sbuf_i64(&hb->load_ids, (int64_t)hb->assign[i].segment_id);
            sbuf_i64(&hb->load_epochs, (int64_t)hb->assign[i].epoch);
            k++;
        }
    }
    sbuf_close(&hb->load_ids);
    sbuf_close(&hb->load_epochs);
    if (k == 0) {
        return false;
    }
    const char *v[3] = {n->cfg.node_id, sbuf_cstr(&hb->load_ids), sbuf_cstr(&hb->load_epochs)};
    if (pgx_query(&n->query_conn, NULL, SEG_SQL_LOAD_SEGMENTS, 3, v, on_load_segments, n) != 0) {
        return false; /* the next reply asks again */
    }
    hb->load_busy = true;
    n->lookup_busy = true;
    return true;
}

/* ---- heartbeats -------------------------------------------------------------- */

static void fill_stats(node *n, wire_heartbeat *m)
{
    m->nsegs = 0;
    m->ndry = 0;
    for (size_t i = 0; i < n->core.nsegs && m->nsegs < ESC_HB_SEGMENTS_MAX; i++) {
        seg_segment *s = &n->core.segs[i];
        if (s->fenced) {
            continue;
        }
        wire_seg_stats *w = &m->segs[m->nsegs++];
        memset(w, 0, sizeof *w);
        w->segment_id = s->segment_id;
        snprintf(w->tenant_id, sizeof w->tenant_id, "%s", s->item->tenant_id);
        snprintf(w->item_id, sizeof w->item_id, "%s", s->item->item_id);
        w->epoch = s->epoch;
        w->available = s->available;
        w->held = s->held + s->returning;
        w->sold = s->sold;
        w->state = (uint32_t)s->state;
        w->reserved = s->reserved;
        w->empties = s->empties;
        if (s->dry) {
            m->dry[m->ndry++] = s->segment_id; /* in every heartbeat until units return */
        }
    }
}

static void hb_send(node *n)
{
    node_hb *hb = &n->hb;
    wire_heartbeat *m = hb->msg;
    int64_t now = esc_mono_us() / 1000;
    if (hb->sock < 0) {
        return;
    }
    if (hb->last_reply_ms != 0 && now - hb->last_reply_ms > NODE_HB_RECONNECT_MS &&
        now - hb->last_reconnect_ms > NODE_HB_RECONNECT_MS) {
        hb->last_reconnect_ms = now;
        if (nnx_reconnect(hb->sock, &hb->eid, n->cfg.coordinator) != 0) {
            ESC_LOG(ESC_LOG_WARN, "SEG-HB", "cannot reconnect to %s", n->cfg.coordinator);
        }
    }
    hb->corr++;
    snprintf(m->node_id, sizeof m->node_id, "%s", n->cfg.node_id);
    m->incarnation = n->cfg.incarnation;
    snprintf(m->endpoint, sizeof m->endpoint, "%s", n->cfg.advertise);
    m->stopping = hb->stop_sent;
    fill_stats(n, m);
    m->nxfers = 0;
    for (size_t i = 0; i < hb->nxfers && m->nxfers < ESC_HB_TRANSFERS_MAX; i++) {
        node_xfer *x = &hb->xfers[i];
        if (!x->done) {
            continue;
        }
        if (x->included_corr == 0) {
            x->included_corr = hb->corr;
        }
        wire_transfer_result *w = &m->xfers[m->nxfers++];
        w->transfer_id = x->transfer_id;
        w->outcome = x->outcome;
        w->qty = x->qty;
    }
    size_t len;
    int rc = wire_encode_heartbeat(hb->corr, m, hb->buf, ESC_FRAME_BYTES_MAX, &len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "cannot encode a heartbeat: %s", esc_err_name(rc));
        return;
    }
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, (uint32_t)(hb->corr & 0x7fffffffu));
    rc = nnx_send(hb->sock, &hdr, hb->buf, len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_DEBUG, "SEG-HB", "send failed: %s", esc_err_name(rc));
    }
    hb->last_sent_ms = now;
    n->stats.heartbeats++;
    node_metrics_heartbeat(n, rc == 0 ? "sent" : "failed");
}

static void on_reply(node *n, uint64_t corr, const wire_hb_reply *r)
{
    node_hb *hb = &n->hb;
    if (corr == 0 || corr > hb->corr) {
        return; /* not an answer to any heartbeat of ours */
    }
    n->stats.hb_replies++;
    node_metrics_heartbeat(n, "replied");
    hb->last_reply_ms = esc_mono_us() / 1000;
    /* the coordinator read heartbeat corr: the results it carried arrived */
    size_t keep = 0;
    for (size_t i = 0; i < hb->nxfers; i++) {
        const node_xfer *x = &hb->xfers[i];
        if (!(x->done && x->included_corr != 0 && x->included_corr <= corr)) {
            hb->xfers[keep++] = *x;
        }
    }
    hb->nxfers = keep;
    if (hb->stop_sent && corr >= hb->stop_corr && !hb->stop_done) {
        hb->stop_done = true;
        node_maybe_finish_stop(n);
        return;
    }
    if (corr <= hb->applied_corr) {
        return; /* an older view than one already applied */
    }
    hb->applied_corr = corr;
    if (r->heartbeat_ms >= NODE_HB_MS_MIN && r->heartbeat_ms <= NODE_HB_MS_MAX &&
        r->heartbeat_ms != hb->heartbeat_ms) {
        hb->heartbeat_ms = r->heartbeat_ms;
        uv_timer_set_repeat(&hb->timer, hb->heartbeat_ms);
    }
    apply_assignment(n, r);
    apply_commands(n, r);
}

static void on_hb_readable(nnx_watch *w, void *arg)
{
    (void)w;
    node *n = arg;
    node_hb *hb = &n->hb;
    for (int i = 0; i < NODE_HB_RECV_PER_CB && hb->sock >= 0; i++) {
        void *msg;
        size_t len;
        nnx_hdr hdr;
        int rc = nnx_recv(hb->sock, &msg, &len, &hdr);
        if (rc != 0 || msg == NULL) {
            if (rc != 0) {
                ESC_LOG(ESC_LOG_WARN, "SEG-HB", "recv: %s", esc_strerror(rc));
            }
            return;
        }
        wire_reply rep;
        memset(&rep, 0, sizeof rep);
        rep.hb = hb->reply;
        rc = wire_decode_reply(msg, len, &rep);
        nnx_free(msg);
        if (rc != 0) {
            ESC_LOG(ESC_LOG_WARN, "SEG-HB", "undecodable reply from the coordinator: %s",
                    esc_err_name(rc));
            continue;
        }
        if (rep.status != 0 || !rep.has_hb) {
            ESC_LOG(ESC_LOG_WARN, "SEG-HB", "coordinator refused heartbeat corr=%" PRIu64 ": %s %s",
                    rep.corr_id, esc_err_name(rep.status), rep.message);
            continue;
        }
        on_reply(n, rep.corr_id, hb->reply);
    }
}

static void on_hb_timer(uv_timer_t *t)
{
    hb_send(t->data);
}

void node_hb_soon(node *n)
{
    node_hb *hb = &n->hb;
    if (hb->sock < 0 || uv_is_active((uv_handle_t *)&hb->soon_timer) ||
        uv_is_closing((uv_handle_t *)&hb->soon_timer)) {
        return;
    }
    int64_t gap = esc_mono_us() / 1000 - hb->last_sent_ms;
    uint64_t wait = gap >= NODE_HB_MIN_GAP_MS ? 0 : (uint64_t)(NODE_HB_MIN_GAP_MS - gap);
    /* from the loop, never in the middle of settling a batch */
    if (uv_timer_start(&hb->soon_timer, on_hb_timer, wait, 0) != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-HB", "cannot arm the early heartbeat");
    }
}

static void on_stop_timer(uv_timer_t *t)
{
    node *n = t->data;
    if (!n->hb.stop_done) {
        ESC_LOG(ESC_LOG_WARN, "SEG-STOP", "the coordinator did not answer the stopping heartbeat");
        n->hb.stop_done = true;
        node_maybe_finish_stop(n);
    }
}

bool node_hb_stop_done(node *n)
{
    node_hb *hb = &n->hb;
    if (hb->sock < 0 || hb->stop_done) {
        return true;
    }
    if (!hb->stop_sent) {
        /* batches are finished: now the coordinator may hand our segments
         * over at once, nothing of ours is in flight to be fenced */
        hb->stop_sent = true;
        hb_send(n);
        hb->stop_corr = hb->corr;
        if (uv_timer_start(&hb->stop_timer, on_stop_timer, NODE_HB_STOP_WAIT_MS, 0) != 0) {
            hb->stop_done = true;
            return true;
        }
    }
    return false;
}

/* ---- lifecycle ---------------------------------------------------------------- */

int node_hb_open(node *n)
{
    node_hb *hb = &n->hb;
    hb->msg = esc_xcalloc(1, sizeof *hb->msg);
    hb->reply = esc_xcalloc(1, sizeof *hb->reply);
    hb->buf = esc_xmalloc(ESC_FRAME_BYTES_MAX);
    hb->assign = esc_xcalloc(ESC_HB_SEGMENTS_MAX, sizeof *hb->assign);
    hb->loads = esc_xcalloc(ESC_HB_SEGMENTS_MAX, sizeof *hb->loads);
    sbuf_init(&hb->load_ids);
    sbuf_init(&hb->load_epochs);
    hb->heartbeat_ms = NODE_HB_DEFAULT_MS;
    int rc = nnx_open_req(&hb->sock);
    if (rc != 0) {
        hb->sock = -1;
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "cannot open a socket: %s", esc_strerror(rc));
        return rc;
    }
    if ((rc = nnx_connect(hb->sock, n->cfg.coordinator, &hb->eid)) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "cannot connect to %s: %s", n->cfg.coordinator,
                esc_strerror(rc));
        return rc;
    }
    if ((rc = nnx_watch_start(n->loop, &hb->watch, hb->sock, on_hb_readable, n)) != 0) {
        return rc;
    }
    n->handles_open++;
    uv_timer_t *timers[3] = {&hb->timer, &hb->soon_timer, &hb->stop_timer};
    for (int i = 0; i < 3; i++) {
        if (uv_timer_init(n->loop, timers[i]) != 0) {
            return ESC_EIO;
        }
        timers[i]->data = n;
        n->handles_open++;
    }
    if (uv_timer_start(&hb->timer, on_hb_timer, 0, hb->heartbeat_ms) != 0) {
        return ESC_EIO;
    }
    return 0;
}

static void on_hb_handle_closed(uv_handle_t *h)
{
    node *n = h->data;
    n->handles_open--;
}

void node_hb_close(node *n)
{
    node_hb *hb = &n->hb;
    if (hb->msg == NULL || uv_is_closing((uv_handle_t *)&hb->timer)) {
        return;
    }
    uv_close((uv_handle_t *)&hb->timer, on_hb_handle_closed);
    uv_close((uv_handle_t *)&hb->soon_timer, on_hb_handle_closed);
    uv_close((uv_handle_t *)&hb->stop_timer, on_hb_handle_closed);
    hb->watch.poll.data = n;
    nnx_watch_close(&hb->watch, on_hb_handle_closed);
}

void node_hb_fini(node *n)
{
    node_hb *hb = &n->hb;
    if (hb->sock >= 0) {
        nnx_close(hb->sock);
        hb->sock = -1;
    }
    if (hb->msg != NULL) {
        sbuf_fini(&hb->load_ids);
        sbuf_fini(&hb->load_epochs);
    }
    free(hb->msg);
    free(hb->reply);
    free(hb->buf);
    free(hb->assign);
    free(hb->loads);
    memset(hb, 0, sizeof *hb);
    hb->sock = -1;
}
