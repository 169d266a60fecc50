/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_peer.c - see coord_peer.h.
 */
#include "coord_peer.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"

void coord_peers_send(coord_peers *ps, int i, uint64_t corr, const char *tenant_id,
                      const wire_quota *q, const char *item_id, int64_t qty)
{
    coord_peer *p = &ps->p[i];
    size_t len;
    int rc = wire_encode_quota(corr, tenant_id, q, item_id, qty, ps->frame, sizeof ps->frame, &len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-PEER", "peer=%s cannot encode: %s", p->cfg->name,
                esc_err_name(rc));
        return;
    }
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, (uint32_t)(corr & 0x7fffffffu));
    rc = nnx_send(p->sock, &hdr, ps->frame, len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_DEBUG, "COORD-PEER", "peer=%s send: %s", p->cfg->name, esc_err_name(rc));
    }
}

void coord_peers_offer(coord_peers *ps, int i, uint64_t transfer_id, const char *tenant_id,
                       const char *item_id, int64_t qty)
{
    wire_quota *q = &ps->offer;
    memset(q, 0, sizeof *q);
    q->kind = WIRE_QUOTA_OFFER;
    snprintf(q->from_region, sizeof q->from_region, "%s", ps->self);
    snprintf(q->to_region, sizeof q->to_region, "%s", ps->p[i].cfg->name);
    q->transfer_id = transfer_id;
    coord_peers_send(ps, i, COORD_PEER_CORR_OFFER | transfer_id, tenant_id, q, item_id, qty);
}

int coord_peers_find(const coord_peers *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++) {
        if (strcmp(ps->p[i].cfg->name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

const char *coord_peers_name(const coord_peers *ps, int i)
{
    return ps->p[i].cfg->name;
}

void coord_peers_check(coord_peers *ps, int i)
{
    coord_peer *p = &ps->p[i];
    if (++p->silent_rounds > COORD_PEER_RECONNECT_ROUNDS) {
        p->silent_rounds = 0;
        if (nnx_reconnect(p->sock, &p->eid, p->cfg->coordinator) != 0) {
            ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s cannot reconnect", p->cfg->name);
        }
    }
}

/* ---- replies ------------------------------------------------------------------------ */

static void on_reply(coord_peer *p, const void *buf, size_t len)
{
    coord_peers *ps = p->set;
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.quota = ps->rx;
    rep.quota_cap = ESC_QUOTA_ITEMS_MAX;
    int rc = wire_decode_reply(buf, len, &rep);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-PEER", "peer=%s malformed reply: %s", p->cfg->name,
                esc_err_name(rc));
        return;
    }
    p->last_reply_us = esc_mono_us();
    p->silent_rounds = 0;
    ps->cb(ps->c, (int)(p - ps->p), &rep, ps->arg);
}

/* daemon_drain's callback: one reply from the peer. */
static void on_frame(void *arg, const void *msg, size_t len, const nnx_hdr *hdr)
{
    (void)hdr;
    on_reply(arg, msg, len);
}

static bool reading(void *arg)
{
    return !((const coord_peer *)arg)->set->c->stopping;
}

static void on_readable(nnx_watch *w, void *arg)
{
    /* A receive error only ends this turn: the peer's silence is what
     * coord_region watches (silent_rounds). */
    (void)daemon_drain(w->sock, ESC_RECV_PER_CB_MAX, reading, on_frame, arg);
}

/* ---- life cycle ---------------------------------------------------------------------- */

int coord_peers_open(coord *c, coord_peers *ps, const region_cfg *cfg, coord_peer_reply_cb cb,
                     void *arg)
{
    ps->c = c;
    ps->self = cfg->name;
    ps->cb = cb;
    ps->arg = arg;
    for (size_t i = 0; i < cfg->npeers; i++) {
        coord_peer *p = &ps->p[i];
        p->set = ps;
        p->cfg = &cfg->peers[i];
        p->sock = -1;
        int rc = nnx_open_req(&p->sock);
        if (rc == 0) {
            rc = nnx_connect(p->sock, p->cfg->coordinator, &p->eid);
        }
        if (rc == 0) {
            rc = nnx_watch_start(c->loop, &p->watch, p->sock, on_readable, p);
        }
        if (rc != 0) {
            ESC_LOG(ESC_LOG_ERROR, "COORD-PEER", "peer=%s %s: %s", p->cfg->name,
                    p->cfg->coordinator, esc_strerror(rc));
            return rc;
        }
        p->watch_open = true;
        c->handles_open++;
        ps->n++;
    }
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    coord *c = h->data;
    c->handles_open--;
}

void coord_peers_close(coord_peers *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        coord_peer *p = &ps->p[i];
        if (p->watch_open) {
            p->watch_open = false;
            p->watch.poll.data = ps->c;
            nnx_watch_close(&p->watch, on_closed);
        }
    }
}

void coord_peers_free(coord_peers *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        nnx_close(ps->p[i].sock);
    }
}
