/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord.c - see coord.h. Life cycle, the REP socket's dispatch, timers and
 * heartbeat replies.
 *
 * A heartbeat is answered at once from memory (never after a database
 * round trip): the reply carries only ownership that committed, so a node
 * may act on it immediately. Until the first catalog read completed the
 * coordinator answers heartbeats and route requests ESC_EUNAVAILABLE (an
 * empty assignment would make every node drop its segments).
 */
#include "coord.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "conn_guard.h"
#include "clock.h"
#include "coord_admin.h"
#include "coord_asg.h"
#include "coord_auth.h"
#include "coord_counts.h"
#include "coord_db.h"
#include "coord_lease.h"
#include "coord_leader.h"
#include "coord_metrics.h"
#include "coord_mon.h"
#include "coord_ret.h"
#include "coord_pass.h"
#include "coord_place.h"
#include "coord_region.h"
#include "coord_reply.h"
#include "coord_route.h"
#include "coord_xfer.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"

/* Requests the tick reads before it judges leases (the heartbeats that
 * waited in the socket while the loop was busy or stalled). */
#define COORD_TICK_RECV_MAX (4 * ESC_RECV_PER_CB_MAX)

/* ---- heartbeats ------------------------------------------------------------ */

static void handle_heartbeat(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    c->n_heartbeats++;
    coord_metrics_heartbeat(c);
    const wire_heartbeat *hb = q->hb;
    coord_node *n = NULL;
    coord_place_heartbeat(c, hb, &n);
    if (n == NULL) {
        coord_reply(c, hdr, q->corr_id, ESC_EBUSY, "too many nodes");
        return;
    }
    coord_xfer_results(c, hb);
    for (size_t i = 0; i < hb->ndry; i++) {
        coord_seg *s = coord_cat_seg(&c->cat, hb->dry[i]);
        if (s != NULL && s->owner == n) {
            s->dry = true;
            coord_cat_mark(&c->cat, s->item, COORD_WORK_PASS);
        }
    }
    for (size_t i = 0; i < hb->ndry; i++) {
        coord_seg *s = coord_cat_seg(&c->cat, hb->dry[i]);
        if (s != NULL && coord_cat_marked(s->item, COORD_WORK_PASS)) {
            coord_pass_run(c, s->item); /* a dry segment: a pass at once */
        }
    }
    wire_hb_reply *h = &c->hb_scratch;
    memset(h, 0, offsetof(wire_hb_reply, segs));
    if (!hb->delta) {
        coord_cat_assignment(&c->cat, n, h); /* a node that sends whole heartbeats */
        h->coord_incarnation = 0;
        h->nunassigned = 0;
    } else {
        if (coord_asg_full_start(&c->cat, n, hb)) {
            coord_asg_publish(&c->cat); /* a full assignment starts from the view of now */
        }
        coord_asg_reply(&c->cat, n, hb, h);
        coord_cat_commands(&c->cat, n, h);
        h->resync = n->want_resync;
        n->want_resync = false;
    }
    h->lease_ms = c->cfg.lease_ms;
    h->heartbeat_ms = c->cfg.heartbeat_ms;
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    rep.hb = h;
    coord_metrics_heartbeat_bytes(c, false, coord_reply_send(c, hdr, &rep));
}

/* ---- dispatch --------------------------------------------------------------- */

static void dispatch(coord *c, const nnx_hdr *hdr, const wire_request *q)
{
    if (!c->loaded && q->op != WIRE_OP_ADMIN) {
        coord_reply(c, hdr, q->corr_id, ESC_EUNAVAILABLE,
                    "the coordinator has not read its catalog yet");
        return;
    }
    switch (q->op) {
    case WIRE_OP_HEARTBEAT:
        handle_heartbeat(c, hdr, q);
        return;
    case WIRE_OP_ROUTE:
        coord_route_handle(c, hdr, q);
        return;
    case WIRE_OP_ADMIN:
        coord_admin_handle(c, hdr, q);
        return;
    case WIRE_OP_QUOTA:
        coord_region_handle(c, hdr, q);
        return;
    default:
        coord_reply(c, hdr, q->corr_id, ESC_EINVAL,
                    "the coordinator answers heartbeat, route, admin and quota requests only");
        return;
    }
}

/* daemon_drain's callback: one request off the REP socket. */
static void on_frame(void *arg, const void *msg, size_t len, const nnx_hdr *hdr)
{
    coord *c = arg;
    wire_request q;
    char why[WIRE_WHY_MAX] = "";
    int rc = wire_decode_request_checked(msg, len, &q, why, coord_auth_check, c);
    if (rc == 0 && q.op == WIRE_OP_HEARTBEAT) {
        coord_metrics_heartbeat_bytes(c, true, len);
    }
    if (rc != 0) {
        coord_reply(c, hdr, q.corr_id, rc, why);
        return;
    }
    dispatch(c, hdr, &q);
}

/* Read on only while this coordinator leads by its lease (coord_leader.h):
 * what it does not read waits in the socket. */
static bool reading(void *arg)
{
    coord *c = arg;
    return !c->stopping && coord_leader_serving(c);
}

static void read_requests(coord *c, int max)
{
    int rc = daemon_drain(c->sock, max, reading, on_frame, c);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_WARN, "COORD-RECV", "%s", esc_strerror(rc));
    }
}

static void on_readable(nnx_watch *w, void *arg)
{
    (void)w;
    read_requests(arg, ESC_RECV_PER_CB_MAX);
}

/* ---- timers ------------------------------------------------------------------ */

static uint32_t tick_ms(const coord *c)
{
    return c->cfg.heartbeat_ms / 2 > 10 ? c->cfg.heartbeat_ms / 2 : 10;
}

static void on_tick(uv_timer_t *t)
{
    coord *c = t->data;
    /* a lapsed lease is a stall: the next tick after it judges nothing
     * before the heartbeats that waited are read */
    if (!coord_leader_serving(c)) {
        return;
    }
    int64_t now = esc_mono_us();
    int64_t stall_us = coord_lease_stall_us(c->last_tick_us, now, tick_ms(c));
    c->last_tick_us = now;
    coord_metrics_sample(c);
    if (!c->loaded) {
        return;
    }
    if (coord_lease_stalled(stall_us, c->cfg.lease_ms)) {
        coord_place_loop_stalled(c, stall_us);
    }
    /* after a stall the timers run before the socket is polled: read the
     * heartbeats that waited before any lease is judged */
    read_requests(c, COORD_TICK_RECV_MAX);
    coord_place_tick(c);
    /* the changed items' assignment, and a slice of the rest (the sweep) */
    coord_cat_sweep(&c->cat, COORD_WORK_ASSIGN,
                    coord_cat_sweep_slice(c->cat.nitems, tick_ms(c), COORD_SWEEP_MS));
    coord_asg_publish(&c->cat);
    coord_xfer_tick(c);
    coord_pass_tick(c);
    coord_admin_tick(c);
    coord_region_tick(c);
}

static void on_rebalance(uv_timer_t *t)
{
    coord *c = t->data;
    if (!c->loaded || !coord_leader_serving(c)) {
        return;
    }
    coord_pass_rebalance(c);
}

static void on_route_timer(uv_timer_t *t)
{
    if (coord_leader_serving(t->data)) {
        coord_route_tick(t->data);
    }
}

static void on_poll(uv_timer_t *t)
{
    coord *c = t->data;
    if (coord_leader_serving(c)) {
        coord_db_poll(c);
        coord_counts_poll(c);
    }
}

/* coord_db's callback: a catalog read finished. */
static void on_reload_done(coord *c, bool ok)
{
    if (ok && !c->loaded) {
        c->loaded = true;
        size_t nodes_up = 0;
        for (size_t i = 0; i < c->cat.nnodes; i++) {
            nodes_up += c->cat.nodes[i]->alive;
        }
        ESC_LOG(ESC_LOG_INFO, "COORD-READY",
                "listen=%s publish=%s items=%zu segments=%zu nodes=%zu (%zu in grace) "
                "open_transfers=%zu lease_ms=%u heartbeat_ms=%u",
                c->cfg.listen[0], c->cfg.publish, c->cat.nitems, c->cat.nsegs, c->cat.nnodes,
                nodes_up, c->cat.nxfers, c->cfg.lease_ms, c->cfg.heartbeat_ms);
    }
    coord_admin_reload_done(c);
}

/* coord_db's callback: the database's schema is not one to run on. */
static void on_schema_refused(coord *c)
{
    c->exit_code = 1;
    coord_stop(c);
}

/* coord_region's callback: the region cannot run (its database belongs to
 * another region, or cannot be claimed). */
static void on_region_failed(coord *c)
{
    c->exit_code = 1;
    coord_stop(c);
}

/* ---- lifecycle ----------------------------------------------------------------- */

static int open_sockets(coord *c)
{
    int rc = nnx_open_rep(&c->sock);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-LISTEN", "cannot open socket: %s", esc_strerror(rc));
        return rc;
    }
    for (int i = 0; i < c->cfg.nlisten; i++) {
        rc = nnx_bind(c->sock, c->cfg.listen[i]);
        if (rc != 0) {
            ESC_LOG(ESC_LOG_ERROR, "COORD-LISTEN", "cannot listen on %s: %s", c->cfg.listen[i],
                    esc_strerror(rc));
            return rc;
        }
    }
    rc = coord_route_open(c);
    if (rc != 0) {
        return rc;
    }
    rc = nnx_watch_start(c->loop, &c->watch, c->sock, on_readable, c);
    if (rc != 0) {
        return rc;
    }
    c->handles_open++;
    return 0;
}

static int start_timer(coord *c, uv_timer_t *t, uv_timer_cb cb, uint64_t every_ms)
{
    if (uv_timer_init(c->loop, t) != 0) {
        return ESC_EIO;
    }
    c->handles_open++;
    t->data = c;
    if (cb != NULL && uv_timer_start(t, cb, every_ms, every_ms) != 0) {
        return ESC_EIO;
    }
    return 0;
}

static int start_handles(coord *c)
{
    int rc = start_timer(c, &c->tick_timer, on_tick, tick_ms(c));
    rc = rc ? rc : start_timer(c, &c->rebalance_timer, on_rebalance, c->cfg.rebalance_ms);
    rc = rc ? rc : start_timer(c, &c->route_timer, on_route_timer, ROUTE_TICK_MS);
    rc = rc ? rc : start_timer(c, &c->poll_timer, on_poll, c->cfg.catalog_poll_ms);
    return rc;
}

/* coord_leader's callback: the lease is this coordinator's. What a restart
 * did from here on: the sockets, the timers, the region, the monitor and
 * the catalog read from the database. */
static void on_lead(coord *c)
{
    c->leading_started = true;
    int rc = open_sockets(c);
    rc = rc ? rc : start_handles(c);
    rc = rc ? rc : coord_region_start(c, on_region_failed);
    rc = rc ? rc : coord_mon_start(c);
    rc = rc ? rc : coord_ret_start(c);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-START", "cannot start leading: %s", esc_strerror(rc));
        c->exit_code = 1;
        coord_stop(c);
        return;
    }
    coord_db_reload(c);
}

int coord_start(coord *c, uv_loop_t *loop, const coord_config *cfg)
{
    memset(c, 0, sizeof *c);
    c->loop = loop;
    c->cfg = *cfg;
    c->sock = -1;
    coord_route_init(c);
    c->started_us = esc_mono_us();
    int rc = coord_cat_init(&c->cat);
    if (rc != 0 || (rc = coord_auth_start(c)) != 0) {
        return rc;
    }
    /* a random incarnation per process (a node that sees a new one sends a
     * full report), and versions past any an earlier process gave out: its
     * clock, in ms << 20 */
    coord_asg_start(&c->cat, auth_random_u64() | 1, (uint64_t)esc_wall_ms() << 20);
    /* Its clients (escrowctl, routes subscribers, heartbeats): --conn-per-peer
     * and --conn-idle-s (by default none: a routes subscriber never sends). */
    conn_guard_cfg guard = {cfg->conn_per_peer, cfg->conn_idle_s};
    if ((rc = conn_guard_start(&guard, 0, "escrow-coordinator")) != 0 ||
        (rc = coord_metrics_open(c)) != 0 ||
        (rc = coord_db_open(c, on_reload_done, on_schema_refused)) != 0) {
        return rc;
    }
    /* a standby binds nothing: its clients' sockets reach only the leader */
    return coord_leader_start(c, on_lead);
}

static void on_handle_closed(uv_handle_t *h)
{
    coord *c = h->data;
    c->handles_open--;
}

static void close_handle(coord *c, uv_handle_t *h)
{
    if (h->loop != NULL && !uv_is_closing(h)) { /* NULL: never initialised */
        h->data = c;
        uv_close(h, on_handle_closed);
    }
}

void coord_stop(coord *c)
{
    if (c->stopping) {
        return;
    }
    c->stopping = true;
    coord_admin_stop(c);
    coord_leader_close(c);
    if (c->leading_started) {
        close_handle(c, (uv_handle_t *)&c->tick_timer);
        close_handle(c, (uv_handle_t *)&c->rebalance_timer);
        close_handle(c, (uv_handle_t *)&c->route_timer);
        close_handle(c, (uv_handle_t *)&c->poll_timer);
        if (c->watch.poll.loop != NULL) {
            c->watch.poll.data = c;
            nnx_watch_close(&c->watch, on_handle_closed);
        }
    }
    coord_region_close(c);
    coord_auth_close(c);
    coord_db_close(c);
    coord_mon_close(c);
    coord_ret_close(c);
    ESC_LOG(ESC_LOG_INFO, "COORD-STOP",
            "stopped heartbeats=%" PRIu64 " routes=%" PRIu64 " admin=%" PRIu64 " grants=%" PRIu64
            " transfers_planned=%" PRIu64 " transfers_done=%" PRIu64
            " items=%zu segments=%zu nodes=%zu open_transfers=%zu",
            c->n_heartbeats, c->n_routes, c->n_admin, c->n_grants, c->n_xfers_planned,
            c->n_xfers_done, c->cat.nitems, c->cat.nsegs, c->cat.nnodes, c->cat.nxfers);
}

bool coord_ready(const coord *c, char *why, size_t cap)
{
    if (!coord_leader_leads(c)) {
        snprintf(why, cap, "standing by: another coordinator leads");
        return false;
    }
    if (!pgx_connected(&c->db.conn)) {
        snprintf(why, cap, "database not connected");
        return false;
    }
    if (!c->db.schema_ok) {
        snprintf(why, cap, "database schema not checked yet");
        return false;
    }
    if (!c->loaded) {
        snprintf(why, cap, "catalog not read yet");
        return false;
    }
    return true;
}

void coord_fini(coord *c)
{
    nnx_close(c->sock);
    c->sock = -1;
    coord_route_close(c);
    coord_mon_free(c);
    coord_ret_free(c);
    coord_metrics_free(c);
    coord_region_free(c);
    coord_auth_free(c);
    coord_cat_fini(&c->cat);
}
