/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_assign.c - see node_assign.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"
#include "esc_assert.h"
#include "escrow_errors.h"
#include "log.h"
#include "node_assign.h"
#include "node_commit.h"
#include "node_load.h"
#include "node_metrics.h"
#include "node_reply.h"
#include "node_xfer.h"

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

/* ---- transfer commands ------------------------------------------------------ */

static void apply_commands(node *n, const wire_hb_reply *r)
{
    for (size_t i = 0; i < r->nxfers && !n->stopping; i++) {
        seg_op op;
        if (node_xfer_begin(n, &r->xfers[i], &op) == 0) {
            node_commit_add(n, &op);
        }
    }
}

/* ---- assignment ------------------------------------------------------------ */

static void drop_unassigned(node *n)
{
    for (size_t i = 0; i < n->core.nsegs; i++) {
        seg_segment *s = &n->core.segs[i];
        if (s->fenced) {
            continue;
        }
        const wire_assignment *a = node_load_assignment(n, s->segment_id);
        if (a != NULL && a->epoch == s->epoch) {
            seg_core_set_state(&n->core, s,
                               a->state == WIRE_SEG_DRAINING ? SEG_DRAINING : SEG_ACTIVE);
            s->item->paused = a->paused;
            continue;
        }
        if (a != NULL && a->epoch < s->epoch) {
            n->hb.apply_again = true;
            continue; /* a view older than what we loaded: the next reply is newer */
        }
        if (node_commit_touches(n, s)) {
            n->hb.apply_again = true;
            continue; /* settles first; the next reply drops it */
        }
        ESC_LOG(ESC_LOG_INFO, "SEG-DROP",
                "seg=%" PRIu64 " item=%s/%s epoch=%" PRIu64
                ": no longer assigned here (%s); this node stops serving it",
                s->segment_id, s->item->tenant_id, s->item->item_id, s->epoch,
                a == NULL ? "unassigned" : "assigned at a higher epoch");
        node_commit_drop_mark(n, s, ESC_ENOT_OWNER);
        s->released = a == NULL;
        n->stats.segments_dropped++;
        node_metrics_segment(n, false);
    }
    /* one pass over the holds for every segment dropped (a rebalance moves
     * many at once), before anything may load one of them again */
    node_commit_drop_sweep(n, ESC_ENOT_OWNER);
}

static void assignment_applied(node *n)
{
    n->hb.apply_again = false;
    drop_unassigned(n);
    node_load_assignment_changed(n);
}

/* After a complete assignment: does it sum up as the coordinator's does?
 * If not, ask for the whole of it again. */
static void check_assignment(node *n, const wire_hb_reply *r)
{
    uint32_t count;
    uint64_t digest;
    hb_assign_sum(&n->hb.assign, &count, &digest);
    if (count != r->assign_count || digest != r->assign_digest) {
        ESC_LOG(ESC_LOG_WARN, "SEG-HB",
                "assignment diverged from the coordinator's (%u segments here, %u there): "
                "asking for all of it",
                count, r->assign_count);
        n->hb.assign_version = 0;
    }
}

/* A part of the full assignment: staged until the last part. */
static void take_full_part(node *n, const wire_hb_reply *r)
{
    node_hb *hb = &n->hb;
    if (r->assign_cursor == 0) {
        hb_assign_clear(&hb->staging);
        hb->full_version = r->assign_version;
    } else if (r->assign_version != hb->full_version || r->assign_cursor != hb->full_cursor) {
        return; /* a part of another round: the next heartbeat says where we are */
    }
    if (hb_assign_append(&hb->staging, r->segs, r->nsegs) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "out of memory staging the assignment");
        hb->full_version = hb->full_cursor = 0;
        return;
    }
    hb->full_cursor = r->assign_next;
    if (r->assign_more) {
        return;
    }
    hb_assign_set t = hb->assign;
    hb->assign = hb->staging;
    hb->staging = t;
    hb_assign_clear(&hb->staging);
    hb_assign_sort(&hb->assign);
    hb->assign_version = hb->full_version;
    hb->full_version = hb->full_cursor = 0;
    if (r->assign_cursor == 0) {
        check_assignment(n, r); /* one part: one moment, comparable */
    }
    assignment_applied(n);
}

/* Whether a delta's assignments name a segment this node has: only those
 * can be dropped or change state (drop_unassigned). */
static bool names_served(node *n, const wire_hb_reply *r)
{
    for (size_t i = 0; i < r->nsegs; i++) {
        if (seg_core_find_segment(&n->core, r->segs[i].segment_id) != NULL) {
            return true;
        }
    }
    return false;
}

/* The changes since the version this node has. */
static void take_delta(node *n, const wire_hb_reply *r)
{
    node_hb *hb = &n->hb;
    if (hb->assign_version == 0 || r->assign_base != hb->assign_version) {
        return; /* computed from another version: the next heartbeat asks again */
    }
    if (hb_assign_apply(&hb->assign, r->segs, r->nsegs, r->unassigned, r->nunassigned) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "out of memory applying the assignment");
        hb->assign_version = 0;
        return;
    }
    hb->assign_version = r->assign_version;
    if (!r->assign_more) {
        check_assignment(n, r);
    }
    if (r->nsegs == 0 && r->nunassigned == 0 && !hb->apply_again && !n->load.wanted) {
        return; /* nothing changed: walking every segment would find nothing to do */
    }
    if (!hb->apply_again && r->nunassigned == 0 && !names_served(n, r)) {
        /* only segments new to this node (a placement): none to drop or
         * update, so no walk of every segment; some to load */
        node_load_assignment_changed(n);
        return;
    }
    assignment_applied(n);
}

/* A reply from coordinator process r->coord_incarnation: our figures it
 * acknowledged, and the assignment (its changes or a part of all of it). */
static void apply_assignment(node *n, uint64_t corr, const wire_hb_reply *r)
{
    node_hb *hb = &n->hb;
    if (r->coord_incarnation == 0) { /* an older coordinator: the whole set */
        if (hb_assign_replace(&hb->assign, r->segs, r->nsegs) == 0) {
            assignment_applied(n);
        }
        return;
    }
    if (r->coord_incarnation != hb->coord_inc) {
        if (hb->coord_inc != 0) {
            ESC_LOG(ESC_LOG_INFO, "SEG-HB",
                    "a new coordinator process answers: a full report of our segments and a "
                    "full assignment follow");
            hb_sync_restart(&hb->sync);
        }
        hb->coord_inc = r->coord_incarnation;
        hb->assign_version = hb->full_version = hb->full_cursor = 0;
        hb_assign_clear(&hb->staging);
        if (r->assign_delta || r->assign_cursor != 0) {
            return; /* only the start of a full assignment means anything to us now */
        }
    } else {
        hb_sync_acked(&hb->sync, corr);
        if (r->resync && corr >= hb->sync.resync_corr && !hb->sync.resync) {
            ESC_LOG(ESC_LOG_INFO, "SEG-HB", "the coordinator asks for a full report");
            hb_sync_restart(&hb->sync);
        }
    }
    if (r->assign_delta) {
        take_delta(n, r);
    } else {
        take_full_part(n, r);
    }
}

/* ---- heartbeats -------------------------------------------------------------- */

/* Segment i of the core in heartbeat m (corr): its figures when they changed
 * since the acknowledged report, gone when it is no longer served. Returns
 * true while the heartbeats have more to do with it (hb_sync_settled), or
 * it is dry (named in every heartbeat until units return). */
static bool fill_one(node *n, wire_heartbeat *m, size_t i, int64_t now, size_t *bytes)
{
    hb_sync *t = &n->hb.sync;
    const seg_segment *s = &n->core.segs[i];
    wire_seg_stats st;
    uint64_t h = 0;
    bool dry = false;
    if (!s->fenced) {
        node_reply_seg_figures(s, &st); /* the names only when sent, below */
        h = hb_sync_stats_hash(&st);
        dry = s->dry;
        if (dry && m->ndry < ESC_HB_SEGMENTS_MAX) {
            m->dry[m->ndry++] = s->segment_id;
        }
    }
    int want = hb_sync_want(t, i, h, now);
    if (want == HB_SYNC_SEND) {
        node_reply_seg_stats(s, &st);
        size_t cost = 64 + strlen(st.item_id) + strlen(st.tenant_id);
        if (m->nsegs == ESC_HB_SEGMENTS_MAX || *bytes + cost > ESC_HB_BYTES_BUDGET) {
            m->more = m->more || h != t->slots[i].acked; /* only recent: no divergence */
            return true;
        }
        *bytes += cost;
        m->segs[m->nsegs++] = st;
        hb_sync_sent(t, i, h, n->hb.corr);
    } else if (want == HB_SYNC_GONE) {
        if (m->ngone == ESC_HB_SEGMENTS_MAX) {
            m->more = true;
            return true;
        }
        m->gone[m->ngone++] = s->segment_id;
        hb_sync_sent(t, i, 0, n->hb.corr);
    }
    return dry || !hb_sync_settled(t, i, now);
}

/* The count and digest a walk over every segment computes: what the kept
 * ones (hb_sync) must equal after a heartbeat's visits. */
static void sum_all(const node *n, uint32_t *count, uint64_t *digest)
{
    uint32_t c = 0;
    uint64_t d = 0;
    for (size_t i = 0; i < n->core.nsegs; i++) {
        const seg_segment *s = &n->core.segs[i];
        if (!s->fenced) {
            wire_seg_stats st;
            node_reply_seg_figures(s, &st);
            d += hb_sync_stats_hash(&st);
            c++;
        }
    }
    *count = c;
    *digest = d;
}

/* Sanitizer (test) builds check the kept sums against a full walk at
 * every heartbeat: a change of figures that forgot seg_core_touch fails
 * here, at once. Other builds rely on the coordinator's comparison, which
 * asks for a full report (a walk over every segment, below) on a
 * mismatch. */
static void check_sums(const node *n)
{
#ifdef ESC_CHECK_RUNNING_SUMS
    uint32_t count;
    uint64_t digest;
    sum_all(n, &count, &digest);
    if (count != n->hb.sync.count || digest != n->hb.sync.digest) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB",
                "kept heartbeat sums differ from a full walk: %u segments kept, %u walked",
                n->hb.sync.count, count);
    }
    ESC_ASSERT(count == n->hb.sync.count && digest == n->hb.sync.digest);
#else
    (void)n;
    (void)sum_all;
#endif
}

void node_assign_take_touched(node *n)
{
    seg_core *c = &n->core;
    hb_sync *t = &n->hb.sync;
    bool managed = n->hb.msg != NULL; /* heartbeats opened */
    if (managed && hb_sync_grow(t, c->nsegs) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "out of memory: the next heartbeat reports all");
        t->resync = true; /* a full report looks at every segment */
        managed = false;
    }
    for (size_t k = 0; k < c->ntouched; k++) {
        if (managed) {
            hb_sync_mark(t, c->touched[k]);
        }
        node_metrics_figures(n, c->touched[k]);
    }
    seg_core_touched_clear(c);
}

static void fill_stats(node *n, wire_heartbeat *m)
{
    node_hb *hb = &n->hb;
    hb_sync *t = &hb->sync;
    m->nsegs = m->ndry = m->ngone = 0;
    m->seg_count = 0;
    m->seg_digest = 0;
    m->delta = true;
    m->more = false;
    m->resync = t->resync;
    if (t->resync) {
        t->resync = false;
        t->resync_corr = hb->corr;
    }
    m->assign_version = hb->assign_version;
    m->assign_full_version = hb->full_version;
    m->assign_cursor = hb->full_cursor;
    if (hb_sync_grow(t, n->core.nsegs) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-HB", "out of memory: the heartbeat carries no figures");
        t->resync = true;
        return;
    }
    if (m->resync) {
        hb_sync_mark_all(t); /* a full report looks at every segment, kept sums or not */
    }
    node_assign_take_touched(n);
    int64_t now = esc_mono_us() / 1000;
    size_t bytes = 0;
    for (size_t k = 0; k < t->nwork; k++) {
        if (!fill_one(n, m, t->work[k], now, &bytes)) {
            hb_sync_unqueue(t, k);
        }
    }
    hb_sync_compact(t);
    m->seg_count = t->count;
    m->seg_digest = t->digest;
    check_sums(n);
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
    node_xfer_report(n, m, hb->corr);
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
    hb->more = m->more;
    hb->bytes_sent += len;
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
    node_xfer_acked(n, corr);
    if (hb->stop_sent && corr >= hb->stop_corr && !hb->stop_done) {
        hb->stop_done = true;
        n->up.progress(n);
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
    apply_assignment(n, corr, r);
    apply_commands(n, r);
    if (hb->more || r->assign_more || hb->sync.resync) {
        node_assign_soon(n); /* the rest of a report or an assignment: at once */
    }
}

static bool hb_open(void *arg)
{
    return ((const node *)arg)->hb.sock >= 0;
}

/* One reply from the coordinator. */
static void on_hb_frame(void *arg, const void *msg, size_t len, const nnx_hdr *hdr)
{
    (void)hdr;
    node *n = arg;
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.hb = n->hb.reply;
    int rc = wire_decode_reply(msg, len, &rep);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-HB", "undecodable reply from the coordinator: %s",
                esc_err_name(rc));
        return;
    }
    if (rep.status != 0 || !rep.has_hb) {
        /* no corr: a coordinator refusing every heartbeat (a wrong cluster
         * key) repeats one line, which the log holds back with a count */
        ESC_LOG(ESC_LOG_WARN, "SEG-HB", "coordinator refused a heartbeat: %s %s",
                esc_err_name(rep.status), rep.message);
        return;
    }
    on_reply(n, rep.corr_id, n->hb.reply);
}

static void on_hb_readable(nnx_watch *w, void *arg)
{
    (void)w;
    node *n = arg;
    int rc = daemon_drain(n->hb.sock, NODE_HB_RECV_PER_CB, hb_open, on_hb_frame, n);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-HB", "recv: %s", esc_strerror(rc));
    }
}

static void on_hb_timer(uv_timer_t *t)
{
    hb_send(t->data);
}

void node_assign_soon(node *n)
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
        n->up.progress(n);
    }
}

bool node_assign_stop_done(node *n)
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

int node_assign_open(node *n)
{
    node_hb *hb = &n->hb;
    hb->msg = esc_xcalloc(1, sizeof *hb->msg);
    hb->reply = esc_xcalloc(1, sizeof *hb->reply);
    hb->buf = esc_xmalloc(ESC_FRAME_BYTES_MAX);
    hb_assign_init(&hb->assign);
    hb_assign_init(&hb->staging);
    hb_sync_init(&hb->sync);
    node_load_init(n);
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

void node_assign_close(node *n)
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

void node_assign_fini(node *n)
{
    node_hb *hb = &n->hb;
    if (hb->sock >= 0) {
        nnx_close(hb->sock);
        hb->sock = -1;
    }
    node_load_fini(n);
    free(hb->msg);
    free(hb->reply);
    free(hb->buf);
    hb_assign_fini(&hb->assign);
    hb_assign_fini(&hb->staging);
    hb_sync_fini(&hb->sync);
    memset(hb, 0, sizeof *hb);
    hb->sock = -1;
}
