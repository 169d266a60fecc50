/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_conn.c - see async_conn.h: opening, re-pointing and reconnecting
 * the sockets, sending frames, and reading what comes back.
 *
 * Raw REQ sockets drop frames silently (no connection yet, back-pressure),
 * so an unanswered frame is resent unchanged every resend_ms until its
 * deadline. That is safe because a reserve carries its idempotency key and
 * confirm, release and extend are transitions the node applies once.
 * Resends space out (resend_ms, then twice, then four times that) so an
 * overloaded node is not fed ever more copies.
 */
#include "async_conn.h"

#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "async_answer.h"
#include "async_routing.h"
#include "async_slot.h"
#include "async_timer.h"
#include "clock.h"
#include "esc_assert.h"

static void conn_ready_cb(nnx_watch *w, void *arg);

static void conn_watch_closed(uv_handle_t *h)
{
    nnx_watch *w = h->data;
    conn *k = w->arg;
    cli_async_handle_closed(k->a);
}

int cli_conn_open(esc_async *a, uint32_t idx, const char *url)
{
    conn *k = calloc(1, sizeof *k);
    if (k == NULL) {
        return ESC_ENOMEM;
    }
    k->a = a;
    k->sock = -1;
    memcpy(k->url, url, strlen(url) + 1);
    int rc = nnx_open_req(&k->sock);
    if (rc == 0) {
        rc = nnx_connect(k->sock, url, &k->eid);
    }
    if (rc == 0) {
        rc = nnx_watch_start(a->loop, &k->watch, k->sock, conn_ready_cb, k);
    }
    if (rc < 0) {
        nnx_close(k->sock);
        /* A poll handle nnx_watch_start closed is libuv's until the next
         * loop turn: keep (leak) its memory rather than free it under libuv. */
        if (k->sock < 0 || !uv_is_closing((uv_handle_t *)&k->watch.poll)) {
            free(k);
        }
        return rc;
    }
    uv_unref((uv_handle_t *)&k->watch.poll);
    k->last_sent_us = k->last_reply_us = k->last_reconnect_us = esc_mono_us();
    a->conns[idx] = k;
    a->handles_open++;
    return 0;
}

/* route.c reuses an endpoint slot only when its socket has no call in
 * flight (cli_conn_node_idle), so re-pointing it strands no frame. */
conn *cli_conn_node(esc_async *a, uint32_t node, int *err)
{
    const char *url = cli_route_node_url(a->routes, node);
    uint32_t idx = 1 + node;
    conn *k = a->conns[idx];
    if (k == NULL) {
        *err = cli_conn_open(a, idx, url);
        return *err == 0 ? a->conns[idx] : NULL;
    }
    if (strcmp(k->url, url) != 0) {
        int rc = nnx_reconnect(k->sock, &k->eid, url);
        if (rc < 0) {
            *err = rc;
            return NULL;
        }
        memcpy(k->url, url, strlen(url) + 1);
        k->last_sent_us = k->last_reply_us = esc_mono_us();
    }
    return k;
}

bool cli_conn_node_idle(uint32_t idx, void *arg)
{
    const esc_async *a = arg;
    const conn *k = a->conns[1 + idx];
    return k == NULL || k->calls == 0;
}

/* nanomsg 1.1.5 can wedge a connecting endpoint after the node was killed
 * and restarted on the same port: sends are refused forever (or accepted
 * and never answered) while a fresh connection works at once. When nothing
 * could be sent, or nothing came back, for a while, connect afresh (at most
 * once per CLI_RECONNECT_US). Resent frames are idempotent, so replies lost
 * with the old connection cost nothing but a retry. */
static void maybe_reconnect(esc_async *a, conn *k, const call *c, int64_t now)
{
    bool unsendable = now - k->last_sent_us > CLI_RECONNECT_US;
    bool unanswered = c->sends > 1 && now - k->last_reply_us > 3 * CLI_RECONNECT_US;
    if ((!unsendable && !unanswered) || now - k->last_reconnect_us < CLI_RECONNECT_US) {
        return;
    }
    k->last_reconnect_us = now;
    int rc = nnx_reconnect(k->sock, &k->eid, k->url);
    cli_log(&a->opts, 1, "ESC-CLIENT-RECONNECT endpoint=%s (%s) %s", k->url,
            unsendable ? "nothing could be sent" : "nothing came back",
            rc == 0 ? "reconnecting" : esc_err_name(rc));
}

/* A frame nanomsg would not queue never left, so it is retried soon, and
 * the definite answer we may be backing off from still stands. */
void cli_conn_send(esc_async *a, call *c, int64_t now)
{
    conn *k = c->target;
    ESC_ASSERT(k != NULL && c->phase == PH_SENT);
    uint32_t wait_ms = a->opts.resend_ms;
    maybe_reconnect(a, k, c, now);
    if (c->sends > 0 && a->opts.has_signer) {
        /* signed afresh: a copy sent later than the daemons' time window
         * after the first would be refused (an old frame is kept if this
         * fails: the copy may still be in time) */
        (void)cli_slot_encode(a, c, c->req);
    }
    int rc = nnx_send(k->sock, &c->hdr, c->frame, c->len);
    if (rc == 0) {
        k->last_sent_us = now;
        a->stats.frames_sent++;
        c->last_status = 0;
        /* Each resend waits twice as long, up to CLI_RESEND_FACTOR_MAX times
         * resend_ms: a node slowed by load is not fed ever more copies. */
        uint32_t factor = c->sends < 2 ? 1u << c->sends : CLI_RESEND_FACTOR_MAX;
        wait_ms *= factor;
        if (c->sends < UINT32_MAX) {
            c->sends++;
        }
    } else {
        if (rc != ESC_EBUSY) {
            cli_log(&a->opts, 1, "ESC-CLIENT-SEND corr=%llu err=%s", (unsigned long long)c->corr_id,
                    esc_err_name(rc));
        }
        if (wait_ms > CLI_UNSENT_RETRY_MS) {
            wait_ms = CLI_UNSENT_RETRY_MS;
        }
    }
    cli_timer_set_due(a, c, now + (int64_t)wait_ms * 1000);
}

void cli_conn_target(call *c, conn *k)
{
    cli_conn_untarget(c);
    c->target = k;
    k->calls++;
}

void cli_conn_untarget(call *c)
{
    if (c->target != NULL) {
        ESC_ASSERT(c->target->calls > 0);
        c->target->calls--;
        c->target = NULL;
    }
}

/* Reads what sock has queued, at most ESC_RECV_PER_CB_MAX messages
 * (NN_RCVFD stays readable while more are queued): replies on node or
 * coordinator socket k, or route pushes when k is NULL (the SUB socket). */
static void drain(esc_async *a, int sock, conn *k)
{
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && !a->closing; i++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        hdr.len = 0;
        int rc = nnx_recv(sock, &msg, &len, &hdr);
        if (rc < 0 && k != NULL) {
            cli_log(&a->opts, 1, "ESC-CLIENT-RECV endpoint=%s err=%s", k->url, esc_err_name(rc));
        } else if (rc < 0) {
            cli_log(&a->opts, 1, "ESC-CLIENT-ROUTES-RECV err=%s", esc_err_name(rc));
        }
        if (rc < 0 || msg == NULL) {
            return;
        }
        if (k == NULL) {
            cli_routing_push(a, msg, len);
            continue;
        }
        k->last_reply_us = esc_mono_us();
        cli_answer_reply(a, k, msg, len, &hdr);
    }
}

static void conn_ready_cb(nnx_watch *w, void *arg)
{
    (void)w;
    conn *k = arg;
    drain(k->a, k->sock, k);
}

static void sub_ready_cb(nnx_watch *w, void *arg)
{
    (void)w;
    esc_async *a = arg;
    drain(a, a->sub, NULL);
}

static void sub_watch_closed(uv_handle_t *h)
{
    nnx_watch *w = h->data;
    cli_async_handle_closed(w->arg);
}

/* Two topics: the tenant's routes in clear (daemons with --auth off) and,
 * with a key, the updates sealed for it (auth_route.h). */
int cli_conn_open_sub(esc_async *a)
{
    int rc = nnx_open_sub(&a->sub, a->opts.tenant_id, strlen(a->opts.tenant_id) + 1);
    if (rc < 0) {
        return rc;
    }
    if (a->opts.has_signer) {
        rc = nnx_subscribe(a->sub, a->opts.route_key.topic, sizeof a->opts.route_key.topic);
    }
    rc = rc != 0 ? rc : nnx_connect(a->sub, a->opts.routes, NULL);
    if (rc == 0) {
        rc = nnx_watch_start(a->loop, &a->sub_watch, a->sub, sub_ready_cb, a);
        if (rc < 0 && uv_is_closing((uv_handle_t *)&a->sub_watch.poll)) {
            a->leaked = true; /* libuv still owns the half-started handle's memory */
        }
    }
    if (rc < 0) {
        a->sub_watch.arg = NULL;
        return rc;
    }
    uv_unref((uv_handle_t *)&a->sub_watch.poll);
    a->handles_open++;
    return 0;
}

void cli_conn_close_all(esc_async *a)
{
    for (uint32_t i = 0; i < CLI_CONNS_MAX; i++) {
        if (a->conns[i] != NULL) {
            nnx_watch_close(&a->conns[i]->watch, conn_watch_closed);
        }
    }
    if (a->sub >= 0 && a->sub_watch.arg == a) {
        nnx_watch_close(&a->sub_watch, sub_watch_closed);
    }
}

void cli_conn_free_all(esc_async *a)
{
    for (uint32_t i = 0; i < CLI_CONNS_MAX; i++) {
        conn *k = a->conns[i];
        if (k != NULL) {
            nnx_close(k->sock);
            free(k);
            a->conns[i] = NULL;
        }
    }
    nnx_close(a->sub);
    a->sub = -1;
}
