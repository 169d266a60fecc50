/*
 * node.c - see node.h. Sockets, dispatch and replies; the batch machinery
 * is in node_batch.c.
 */
#include "node.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "hmap.h"
#include "log.h"
#include "node_internal.h"
#include "node_metrics.h"
#include "seg_store.h"

/* ---- replies ------------------------------------------------------------ */

void node_hold_to_wire(const seg_hold *h, wire_hold *w)
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

void node_send(node *n, const nnx_hdr *hdr, uint64_t corr_id, int status, const wire_hold *hold,
               const char *message)
{
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.corr_id = corr_id;
    rep.status = status;
    snprintf(rep.message, sizeof rep.message, "%s",
             message ? message : (status ? esc_strerror(status) : ""));
    if (hold != NULL) {
        rep.has_hold = true;
        rep.hold = *hold;
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

void node_answer(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                 const seg_hold *h)
{
    wire_hold w;
    if (h != NULL) {
        node_hold_to_wire(h, &w);
    }
    count_status(n, req->op, status);
    node_send(n, hdr, req->corr_id, status, h ? &w : NULL, NULL);
}

node_req *node_req_new(node *n, const nnx_hdr *hdr, const wire_request *req)
{
    node_req *r = esc_xmalloc(sizeof *r);
    r->next = NULL;
    r->hdr = *hdr;
    r->req = *req;
    r->status = 0;
    r->attempts = 0;
    n->pending_reqs++;
    return r;
}

void node_req_free(node *n, node_req *r)
{
    n->pending_reqs--;
    free(r);
}

/* ---- stats -------------------------------------------------------------- */

static void answer_stats(node *n, const nnx_hdr *hdr, const wire_request *req)
{
    wire_seg_stats segs[ESC_STATS_SEGMENTS_MAX];
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.corr_id = req->corr_id;
    rep.segs = segs;
    for (size_t i = 0; i < n->core.nsegs && rep.nsegs < ESC_STATS_SEGMENTS_MAX; i++) {
        const seg_segment *s = &n->core.segs[i];
        if (strcmp(s->item->tenant_id, req->tenant_id) != 0 ||
            (req->item_id[0] != '\0' && strcmp(s->item->item_id, req->item_id) != 0)) {
            continue;
        }
        wire_seg_stats *w = &segs[rep.nsegs++];
        w->segment_id = s->segment_id;
        snprintf(w->item_id, sizeof w->item_id, "%s", s->item->item_id);
        w->epoch = s->epoch;
        w->available = s->available;
        w->held = s->held + s->returning;
        w->sold = s->sold;
        w->state = s->fenced ? 3u : (uint32_t)s->state;
        snprintf(w->tenant_id, sizeof w->tenant_id, "%s", s->item->tenant_id);
        w->reserved = s->reserved;
        w->empties = s->empties;
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

/* ---- credentials and rate limits ----------------------------------------- */

/* Slots of the bucket tables (24 bytes each): tenants are few; buyers are
 * many, and a table full of busy buyers bends (ratelim.h), never grows. */
#define NODE_RL_TENANT_SLOTS 4096
#define NODE_RL_BUYER_SLOTS 65536

/* The outer frame's check (wire_check_fn), before the operation is decoded:
 * the credential (auth_guard.h), then the tenant's bucket. */
static int node_check(const wire_head *h, char why[WIRE_WHY_MAX], void *arg)
{
    node *n = arg;
    int rc = auth_guard_check(&n->auth, (int)h->access, h->tenant_id, h->credential,
                              h->credential_len, why, WIRE_WHY_MAX);
    if (rc != 0) {
        return rc;
    }
    if (n->rl_tenant.slots != NULL && h->access == WIRE_ACCESS_TENANT &&
        !ratelim_take(&n->rl_tenant,
                      hmap_hash_bytes(h->tenant_id, strlen(h->tenant_id), n->rl_seed),
                      esc_mono_us())) {
        n->rate_limited++;
        snprintf(why, WIRE_WHY_MAX,
                 "rate limited: this tenant is over %u requests/s on this node; retry later",
                 n->cfg.rate_tenant);
        return ESC_EBUSY;
    }
    return 0;
}

/* The buyer's bucket, for a decoded reserve. True: go on. */
static bool buyer_allowed(node *n, const wire_request *q)
{
    if (n->rl_buyer.slots == NULL || q->op != WIRE_OP_RESERVE) {
        return true;
    }
    uint64_t h = hmap_hash_bytes(q->tenant_id, strlen(q->tenant_id), n->rl_seed);
    h = hmap_hash_bytes(q->buyer_id, strlen(q->buyer_id), h);
    if (ratelim_take(&n->rl_buyer, h, esc_mono_us())) {
        return true;
    }
    n->rate_limited++;
    return false;
}

static int guard_start(node *n, uv_loop_t *loop, const node_config *cfg)
{
    auth_guard_config ac = {
        .on = cfg->auth, .dsn = cfg->dsn, .cluster_key = cfg->cluster_key, .name = "segment"};
    int rc = auth_guard_start(&n->auth, loop, &ac);
    if (rc == 0) {
        rc = ratelim_init(&n->rl_tenant, NODE_RL_TENANT_SLOTS, cfg->rate_tenant,
                          cfg->rate_tenant_burst);
    }
    if (rc == 0) {
        rc =
            ratelim_init(&n->rl_buyer, NODE_RL_BUYER_SLOTS, cfg->rate_buyer, cfg->rate_buyer_burst);
    }
    n->rl_seed = auth_random_u64();
    return rc;
}

static void on_auth_closed(void *arg)
{
    node *n = arg;
    n->handles_open--;
}

/* ---- dispatch ----------------------------------------------------------- */

static void decide(node *n, const wire_request *q, seg_result *res)
{
    int64_t now = esc_wall_ms();
    switch (q->op) {
    case WIRE_OP_RESERVE: {
        seg_reserve_in in = {q->tenant_id,  q->item_id,
                             q->buyer_id,   q->key,
                             q->qty,        q->ttl_ms,
                             q->segment_id, wire_reserve_hash(q->item_id, q->buyer_id, q->qty),
                             q->attempt,    q->resolve};
        seg_core_reserve(&n->core, &in, now, res);
        return;
    }
    case WIRE_OP_CONFIRM:
        seg_core_confirm(&n->core, q->tenant_id, q->hold_id, q->qty, now, res);
        return;
    case WIRE_OP_RELEASE:
        seg_core_release(&n->core, q->tenant_id, q->hold_id, now, res);
        if (res->disp == SEG_COMMIT && q->by_operator) {
            res->op.by_operator = true; /* outbox actor 'operator' */
        }
        return;
    case WIRE_OP_EXTEND:
        seg_core_extend(&n->core, q->tenant_id, q->hold_id, q->ttl_ms, now, res);
        return;
    case WIRE_OP_GET:
        seg_core_get(&n->core, q->tenant_id, q->hold_id, res);
        return;
    default:
        memset(res, 0, sizeof *res);
        res->disp = SEG_REPLY;
        res->status = ESC_EPROTO;
        return;
    }
}

/* Decides one request. r is NULL for a fresh request (hdr/q on the stack)
 * or an allocated request being decided again. */
void node_dispatch(node *n, const nnx_hdr *hdr, const wire_request *q, node_req *r)
{
    seg_result res;
    if (q->op == WIRE_OP_STATS) {
        answer_stats(n, hdr, q);
        if (r != NULL) {
            node_req_free(n, r);
        }
        return;
    }
    decide(n, q, &res);
    if (res.disp == SEG_REPLY) {
        if (res.message != NULL) {
            count_status(n, q->op, res.status);
            node_send(n, hdr, q->corr_id, res.status, NULL, res.message);
        } else {
            node_answer(n, hdr, q, res.status, res.hold);
        }
        if (res.went_dry && n->managed) {
            node_hb_soon(n); /* the coordinator hears of a dry segment at once */
        }
        if (r != NULL) {
            node_req_free(n, r);
        }
        return;
    }
    if (r == NULL && n->pending_reqs >= ESC_PENDING_MAX) {
        /* the waiting room is full: nothing was promised, say so */
        if (res.disp == SEG_COMMIT) {
            seg_core_undo_op(&n->core, &res.op);
        }
        node_answer(n, hdr, q, ESC_EBUSY, NULL);
        return;
    }
    if (r == NULL) {
        r = node_req_new(n, hdr, q);
    }
    switch (res.disp) {
    case SEG_COMMIT:
        r->status = res.status;
        res.op.req = r;
        node_batch_add(n, &res.op);
        return;
    case SEG_PARK:
        r->next = res.hold->waiters;
        res.hold->waiters = r;
        return;
    default: /* SEG_LOOKUP */
        node_lookup_enqueue(n, r);
        return;
    }
}

/* Re-decides requests parked on a hold that just settled. */
void node_wake(node *n, void *waiters)
{
    node_req *r = waiters;
    while (r != NULL) {
        node_req *next = r->next;
        r->next = NULL;
        node_dispatch(n, &r->hdr, &r->req, r);
        r = next;
    }
}

static void on_readable(nnx_watch *w, void *arg)
{
    (void)w;
    node *n = arg;
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && n->reading; i++) {
        void *msg;
        size_t len;
        nnx_hdr hdr;
        int rc = nnx_recv(n->sock, &msg, &len, &hdr);
        if (rc != 0 || msg == NULL) {
            if (rc != 0) {
                ESC_LOG(ESC_LOG_WARN, "SEG-RECV", "%s", esc_strerror(rc));
            }
            return;
        }
        wire_request q;
        char why[WIRE_WHY_MAX] = "";
        rc = wire_decode_request_checked(msg, len, &q, why, node_check, n);
        nnx_free(msg);
        n->stats.requests++;
        if (rc == 0 && !buyer_allowed(n, &q)) {
            rc = ESC_EBUSY;
            snprintf(why, sizeof why, "rate limited: this buyer is over %u reserves/s; retry later",
                     n->cfg.rate_buyer);
        }
        if (rc != 0) {
            n->stats.rejected_other++;
            node_metrics_answer(n, 0, rc);
            node_send(n, &hdr, q.corr_id, rc, NULL, why);
            continue;
        }
        node_dispatch(n, &hdr, &q, NULL);
        if (node_batch_full(n)) {
            node_reading(n, false); /* back-pressure until the batch is sent */
        }
    }
}

void node_reading(node *n, bool on)
{
    if (n->reading == on || n->stopping) {
        return;
    }
    n->reading = on;
    if (on) {
        if (nnx_watch_resume(&n->watch) != 0) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-RECV", "cannot resume reading; stopping");
            node_stop(n);
            return;
        }
        on_readable(&n->watch, n); /* drain what queued meanwhile */
    } else {
        nnx_watch_pause(&n->watch);
    }
}

/* ---- timers, signals, lifecycle ----------------------------------------- */

static void on_sweep(uv_timer_t *t)
{
    node *n = t->data;
    int64_t now = esc_wall_ms();
    node_batch_sweep(n, now);
    seg_core_trim(&n->core, now);
    node_metrics_sample(n);
}

static void on_signal(uv_signal_t *s, int signum)
{
    node *n = s->data;
    if (n->stopping) {
        ESC_LOG(ESC_LOG_WARN, "SEG-STOP",
                "signal=%d again: stopping now; unanswered requests "
                "were never acknowledged",
                signum);
        n->exit_code = 1;
        uv_stop(n->loop);
        return;
    }
    ESC_LOG(ESC_LOG_INFO, "SEG-STOP", "signal=%d: finishing batches, then stopping", signum);
    node_stop(n);
}

static int open_sockets(node *n)
{
    int rc = nnx_open_rep(&n->sock);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-LISTEN", "cannot open socket: %s", esc_strerror(rc));
        return rc;
    }
    for (int i = 0; i < n->cfg.nlisten; i++) {
        rc = nnx_bind(n->sock, n->cfg.listen[i]);
        if (rc != 0) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-LISTEN", "cannot listen on %s: %s", n->cfg.listen[i],
                    esc_strerror(rc));
            return rc;
        }
    }
    rc = nnx_watch_start(n->loop, &n->watch, n->sock, on_readable, n);
    if (rc != 0) {
        return rc;
    }
    n->handles_open++;
    n->reading = true;
    return 0;
}

static int start_handles(node *n)
{
    if (uv_timer_init(n->loop, &n->sweep_timer) != 0 ||
        uv_timer_init(n->loop, &n->reconnect_timer) != 0 ||
        uv_signal_init(n->loop, &n->sig_term) != 0 || uv_signal_init(n->loop, &n->sig_int) != 0) {
        return ESC_EIO;
    }
    n->handles_open += 4;
    n->sweep_timer.data = n;
    n->reconnect_timer.data = n;
    n->sig_term.data = n;
    n->sig_int.data = n;
    if (uv_timer_start(&n->sweep_timer, on_sweep, n->cfg.sweep_ms, n->cfg.sweep_ms) != 0 ||
        uv_signal_start(&n->sig_term, on_signal, SIGTERM) != 0 ||
        uv_signal_start(&n->sig_int, on_signal, SIGINT) != 0) {
        return ESC_EIO;
    }
    return 0;
}

/* Static mode: claim the segments whose row names this node, synchronously
 * (the loop is not running yet). */
static int take_ownership(node *n)
{
    PGconn *conn = PQconnectdb(n->cfg.dsn);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-START", "cannot connect to PostgreSQL: %s",
                conn ? PQerrorMessage(conn) : "out of memory");
        PQfinish(conn);
        return ESC_EUNAVAILABLE;
    }
    char why[512] = "";
    int rc =
        seg_store_take_ownership(conn, n->cfg.node_id, n->cfg.advertise, &n->core, why, sizeof why);
    PQfinish(conn);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-START", "node=%s cannot take ownership: %s", n->cfg.node_id,
                why);
    }
    return rc;
}

int node_start(node *n, uv_loop_t *loop, const node_config *cfg)
{
    memset(n, 0, sizeof *n);
    n->loop = loop;
    n->cfg = *cfg;
    n->sock = -1;
    n->hb.sock = -1;
    if (n->cfg.sweep_ms == 0) {
        n->cfg.sweep_ms = 50;
    }
    int rc = seg_core_init(&n->core, ESC_NODE_SEGMENTS_MAX);
    if (rc != 0 || (rc = guard_start(n, loop, cfg)) != 0) {
        return rc;
    }
    n->managed = cfg->coordinator != NULL;
    n->core.managed = n->managed;
    if (n->cfg.advertise == NULL) {
        n->cfg.advertise = cfg->nlisten ? cfg->listen[0] : "";
    }
    if (!n->managed && (rc = take_ownership(n)) != 0) {
        return rc;
    }
    node_batch_init(n);
    if ((rc = node_metrics_open(n)) != 0 || (rc = open_sockets(n)) != 0 ||
        (rc = start_handles(n)) != 0 || (rc = node_db_open(n)) != 0 ||
        (n->managed && (rc = node_hb_open(n)) != 0)) {
        return rc;
    }
    ESC_LOG(ESC_LOG_INFO, "SEG-READY",
            "node=%s segments=%zu items=%zu live_holds=%zu listen=%s mode=%s%s", cfg->node_id,
            n->core.nsegs, n->core.nitems, n->core.live_holds, cfg->nlisten ? cfg->listen[0] : "-",
            n->managed ? "managed coordinator=" : "static", n->managed ? cfg->coordinator : "");
    return 0;
}

static void on_handle_closed(uv_handle_t *h)
{
    node *n = h->data;
    n->handles_open--;
}

void node_maybe_finish_stop(node *n)
{
    if (!n->stopping || n->inflight != NULL || n->filling->n > 0 || n->lookup_busy ||
        n->handles_open < 0) {
        return;
    }
    if (uv_is_closing((uv_handle_t *)&n->sweep_timer)) {
        return;
    }
    if (n->managed && !node_hb_stop_done(n)) {
        return; /* the coordinator hears "stopping" first: it hands our segments over at once */
    }
    node_hb_close(n);
    if (auth_guard_close(&n->auth, on_auth_closed, n)) {
        n->handles_open++;
    }
    uv_close((uv_handle_t *)&n->sweep_timer, on_handle_closed);
    uv_close((uv_handle_t *)&n->reconnect_timer, on_handle_closed);
    uv_close((uv_handle_t *)&n->sig_term, on_handle_closed);
    uv_close((uv_handle_t *)&n->sig_int, on_handle_closed);
    n->watch.poll.data = n;
    nnx_watch_close(&n->watch, on_handle_closed);
    node_db_close(n);
    const node_stats *st = &n->stats;
    ESC_LOG(ESC_LOG_INFO, "SEG-STOP",
            "node=%s stopped requests=%" PRIu64 " holds=%" PRIu64 " confirms=%" PRIu64
            " releases=%" PRIu64 " expiries=%" PRIu64 " sold_out=%" PRIu64 " try_later=%" PRIu64
            " segment_empty=%" PRIu64 " batches=%" PRIu64 " rows=%" PRIu64
            " rows_avg=%.1f rows_max=%" PRIu64 " failed_batches=%" PRIu64 " heartbeats=%" PRIu64
            " loaded=%" PRIu64 " dropped=%" PRIu64 " fenced=%" PRIu64 " transfers=%" PRIu64
            " commit_avg_ms=%.2f commit_max_ms=%.2f auth_refused=%" PRIu64 " rate_limited=%" PRIu64,
            n->cfg.node_id, st->requests, st->reserves_ok, st->confirms, st->releases, st->expiries,
            st->rejected_sold_out, st->rejected_try_later, st->rejected_segment_empty, st->batches,
            st->batch_rows, st->batches ? (double)st->batch_rows / (double)st->batches : 0.0,
            st->batch_rows_max, st->batch_failures, st->heartbeats, st->segments_loaded,
            st->segments_dropped, st->fenced_segments, st->transfers_done,
            st->batches ? (double)st->commit_us_total / (double)st->batches / 1000.0 : 0.0,
            (double)st->commit_us_max / 1000.0, n->auth.refused, n->rate_limited);
}

void node_stop(node *n)
{
    if (n->stopping) {
        return;
    }
    node_reading(n, false);
    n->stopping = true;
    node_batch_kick(n);
    node_maybe_finish_stop(n);
}

void node_fini(node *n)
{
    if (n->sock >= 0) {
        nnx_close(n->sock);
        n->sock = -1;
    }
    node_hb_fini(n);
    node_metrics_free(n);
    node_batch_fini(n);
    seg_core_fini(&n->core);
    auth_guard_fini(&n->auth);
    ratelim_fini(&n->rl_tenant);
    ratelim_fini(&n->rl_buyer);
}
