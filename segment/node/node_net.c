/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_net.c - see node_net.h.
 */
#include "node_net.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "hmap.h"
#include "log.h"
#include "node_admit.h"
#include "node_assign.h"
#include "node_commit.h"
#include "node_lookup.h"
#include "node_metrics.h"
#include "node_reply.h"
#include "node_req.h"

/* ---- credentials and rate limits ----------------------------------------- */

/* Slots of the buyers' bucket table (24 bytes each): buyers are many, and a
 * table full of busy buyers bends (ratelim.h), never grows. */
#define NODE_RL_BUYER_SLOTS 65536

/* The outer frame's check (wire_check_fn), before the operation is decoded:
 * the credential (auth_guard.h), then the tenant's bucket (node_fair.h). */
static int node_check(const wire_head *h, char why[WIRE_WHY_MAX], void *arg)
{
    node *n = arg;
    int rc = auth_guard_check(&n->auth, (int)h->access, h->tenant_id, &h->sig, why, WIRE_WHY_MAX);
    if (rc != 0) {
        return rc;
    }
    if (h->access == WIRE_ACCESS_TENANT &&
        !node_fair_admit(&n->fair, h->tenant_id, esc_mono_us(), why, WIRE_WHY_MAX)) {
        n->rate_limited++;
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

/* The adaptive share's settings from the node's (0: the node's default,
 * fixed places, as node_settings_init sets). */
static void share_config(const node_config *cfg, seg_share_config *share)
{
    seg_share_defaults(share);
    share->slots_min = share->slots_max;
    if (cfg->fair_slots_max > 0) {
        share->slots_min = cfg->fair_slots_min;
        share->slots_max = cfg->fair_slots_max;
    }
    if (cfg->fair_slack_pct >= 100) {
        share->slack_pct = cfg->fair_slack_pct;
    }
}

int node_net_guard_start(node *n)
{
    const node_config *cfg = &n->cfg;
    auth_guard_config ac = {.on = cfg->auth,
                            .dsn = cfg->dsn,
                            .cluster_key = cfg->cluster_key,
                            .cluster_key_prev = cfg->cluster_key_prev,
                            .window_ms = cfg->auth_window_ms,
                            .name = "segment"};
    int rc = auth_guard_start(&n->auth, n->loop, &ac);
    if (rc == 0) {
        node_fair_config fc = {.dsn = cfg->dsn,
                               .rate = cfg->rate_tenant,
                               .burst = cfg->rate_tenant_burst,
                               .live_holds_max = cfg->live_holds_tenant};
        rc = node_fair_start(&n->fair, n->loop, &n->core, &fc);
    }
    if (rc == 0) {
        rc =
            ratelim_init(&n->rl_buyer, NODE_RL_BUYER_SLOTS, cfg->rate_buyer, cfg->rate_buyer_burst);
    }
    n->rl_seed = auth_random_u64();
    seg_share_config share;
    share_config(cfg, &share);
    node_admit_init(&n->admit, auth_random_u64(), &share, esc_mono_us());
    return rc;
}

int node_net_reload(node *n, const node_config *fresh)
{
    int rc = node_fair_set_defaults(&n->fair, fresh->rate_tenant, fresh->rate_tenant_burst,
                                    fresh->live_holds_tenant);
    if (rc == 0) {
        n->cfg.rate_tenant = fresh->rate_tenant;
        n->cfg.rate_tenant_burst = fresh->rate_tenant_burst;
        n->cfg.live_holds_tenant = fresh->live_holds_tenant;
        n->cfg.fair_slots_min = fresh->fair_slots_min;
        n->cfg.fair_slots_max = fresh->fair_slots_max;
        n->cfg.fair_slack_pct = fresh->fair_slack_pct;
        seg_share_config share;
        share_config(fresh, &share);
        seg_share_configure(&n->admit.share, &share);
    }
    int rc2 =
        ratelim_set(&n->rl_buyer, NODE_RL_BUYER_SLOTS, fresh->rate_buyer, fresh->rate_buyer_burst);
    if (rc2 == 0) {
        n->cfg.rate_buyer = fresh->rate_buyer;
        n->cfg.rate_buyer_burst = fresh->rate_buyer_burst;
    }
    int rc3 = auth_guard_set_cluster(&n->auth, fresh->cluster_key, fresh->cluster_key_prev);
    if (rc3 == 0) {
        (void)wire_set_credential(fresh->cluster_key); /* the heartbeats carry it */
    }
    auth_guard_reload_now(&n->auth);
    return rc != 0 ? rc : rc2 != 0 ? rc2 : rc3;
}

static void on_auth_closed(void *arg)
{
    node *n = arg;
    n->handles_open--;
}

static void on_watch_closed(uv_handle_t *h)
{
    node *n = h->data;
    n->handles_open--;
}

/* ---- dispatch ----------------------------------------------------------- */
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
static void dispatch(node *n, const nnx_hdr *hdr, const wire_request *q, node_req *r)
{
    seg_result res;
    if (q->op == WIRE_OP_STATS) {
        node_reply_stats(n, hdr, q);
        if (r != NULL) {
            node_req_free(n, r);
        }
        return;
    }
    decide(n, q, &res);
    if (res.disp == SEG_REPLY) {
        if (res.message != NULL) {
            node_reply_refuse(n, hdr, q, res.status, res.message);
        } else {
            node_reply_decided(n, hdr, q, res.status, res.hold, res.replay);
        }
        if (res.went_dry && n->managed) {
            node_assign_soon(n); /* the coordinator hears of a dry segment at once */
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
        node_reply_answer(n, hdr, q, ESC_EBUSY, NULL);
        return;
    }
    if (r == NULL) {
        r = node_req_new(n, hdr, q);
    }
    switch (res.disp) {
    case SEG_COMMIT:
        node_admit_counted(n, q->tenant_id);
        r->status = res.status;
        res.op.req = r;
        node_commit_add(n, &res.op);
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

void node_net_redecide(node *n, node_req *r)
{
    dispatch(n, &r->hdr, &r->req, r);
}

static bool reading(void *arg)
{
    return ((const node *)arg)->reading;
}

/* One frame from the socket: checked, decoded, decided. */
static void on_frame(void *arg, const void *msg, size_t len, const nnx_hdr *hdr)
{
    node *n = arg;
    wire_request q;
    char why[WIRE_WHY_MAX] = "";
    int rc = wire_decode_request_checked(msg, len, &q, why, node_check, n);
    n->stats.requests++;
    if (rc == 0 && !buyer_allowed(n, &q)) {
        rc = ESC_EBUSY;
        snprintf(why, sizeof why, "rate limited: this buyer is over %u reserves/s; retry later",
                 n->cfg.rate_buyer);
    }
    if (rc != 0) {
        n->stats.rejected_other++;
        node_metrics_answer(n, 0, rc);
        node_reply_send(n, hdr, q.corr_id, rc, NULL, why);
        return;
    }
    if (n->pending_reqs < ESC_PENDING_MAX && node_admit_defer(n, hdr, &q, esc_mono_us())) {
        return; /* its tenant's slots in this batch are taken: it waits its turn */
    }
    dispatch(n, hdr, &q, NULL);
    if (node_commit_full(n)) {
        node_net_pause(n); /* back-pressure until the batch is sent */
    }
}

static void on_readable(nnx_watch *w, void *arg)
{
    (void)w;
    node *n = arg;
    int rc = daemon_drain(n->sock, ESC_RECV_PER_CB_MAX, reading, on_frame, n);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_WARN, "SEG-RECV", "%s", esc_strerror(rc));
    }
}

void node_net_pause(node *n)
{
    if (!n->reading || n->stopping) {
        return;
    }
    n->reading = false;
    nnx_watch_pause(&n->watch);
}

int node_net_resume(node *n)
{
    if (n->reading || n->stopping) {
        return 0;
    }
    n->reading = true;
    if (nnx_watch_resume(&n->watch) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-RECV", "cannot resume reading; stopping");
        return ESC_EIO;
    }
    on_readable(&n->watch, n); /* drain what queued meanwhile */
    return 0;
}

int node_net_open(node *n)
{
    int rc = nnx_open_rep(&n->sock);
    if (rc == 0) {
        rc = nnx_set_rcvmax(n->sock, ESC_REQUEST_BYTES_MAX); /* requests only: esc_limits.h */
    }
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

void node_net_close(node *n)
{
    if (auth_guard_close(&n->auth, on_auth_closed, n)) {
        n->handles_open++;
    }
    if (node_fair_close(&n->fair, on_auth_closed, n)) {
        n->handles_open++;
    }
    n->watch.poll.data = n;
    nnx_watch_close(&n->watch, on_watch_closed);
}

void node_net_fini(node *n)
{
    if (n->sock >= 0) {
        nnx_close(n->sock);
        n->sock = -1;
    }
    auth_guard_fini(&n->auth);
    node_admit_fini(n);
    node_fair_fini(&n->fair);
    ratelim_fini(&n->rl_buyer);
}
