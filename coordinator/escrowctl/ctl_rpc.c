/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_rpc.c - see ctl_rpc.h.
 *
 * One call owns one loop, one socket, one poll watcher and one timer; the
 * call ends by closing both handles, after which uv_run returns and the loop
 * and the socket are closed in reverse order of opening.
 */
#include "ctl_rpc.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "ctl_json.h"
#include "ctl_num.h"
#include "escrow_errors.h"
#include "log.h"
#include "nnx.h"

typedef struct rpc_call {
    uv_loop_t loop;
    uv_timer_t timer; /* embedded: retries the send, then the deadline */
    nnx_watch watch;  /* embedded */
    int sock;
    bool have_sock;
    nnx_hdr hdr;
    uint32_t req_id;
    uint64_t corr_id;
    const void *frame; /* borrowed */
    size_t len;
    uint64_t deadline_ms; /* uv_now() based */
    bool sent;
    bool done;
    int rc;
    wire_reply *rep; /* borrowed */
    int open_handles;
} rpc_call;

uint64_t ctl_rpc_corr_id(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
    }
    return v != 0 ? v : 1;
}

static void timer_closed(uv_handle_t *h)
{
    rpc_call *c = h->data;
    c->open_handles--;
}

static void watch_closed(uv_handle_t *h)
{
    nnx_watch *w = h->data; /* nnx_watch_start points the poll handle at its watch */
    rpc_call *c = w->arg;
    c->open_handles--;
}

static void finish(rpc_call *c, int rc)
{
    if (c->done) {
        return;
    }
    c->done = true;
    c->rc = rc;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, timer_closed);
    nnx_watch_close(&c->watch, watch_closed);
}

/* Offers the frame while no connection takes it; ESC_EBUSY is "not yet". */
static void try_send(rpc_call *c)
{
    int rc = nnx_send(c->sock, &c->hdr, c->frame, c->len);
    if (rc == 0) {
        c->sent = true;
    } else if (rc != ESC_EBUSY) {
        finish(c, rc);
    }
}

static void timer_cb(uv_timer_t *t)
{
    rpc_call *c = t->data;
    if (uv_now(&c->loop) >= c->deadline_ms) {
        finish(c, ESC_ETIMEDOUT);
        return;
    }
    if (!c->sent) {
        try_send(c);
    }
}

/* Drains the socket: the reply to this call ends it, anything else (a late
 * reply to nobody, garbage) is dropped. */
static void ready_cb(nnx_watch *w, void *arg)
{
    rpc_call *c = arg;
    (void)w;
    for (int i = 0; i < ESC_RECV_PER_CB_MAX && !c->done; i++) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        int rc = nnx_recv(c->sock, &msg, &len, &hdr);
        if (rc != 0) {
            finish(c, rc);
            return;
        }
        if (msg == NULL) {
            return;
        }
        if (nnx_hdr_get_request_id(&hdr) == c->req_id) {
            rc = wire_decode_reply(msg, len, c->rep);
            if (rc == 0 && c->rep->corr_id != c->corr_id) {
                rc = ESC_EPROTO;
            }
            finish(c, rc == 0 ? 0 : ESC_EPROTO);
        }
        nnx_free(msg);
    }
}

/* Opens the socket and both handles. On failure nothing is left open but
 * possibly handles being closed (uv_run finishes them) and the socket
 * (have_sock; closed by the caller). */
static int start(rpc_call *c, const char *url)
{
    int rc = nnx_open_req(&c->sock);
    if (rc != 0) {
        return rc;
    }
    c->have_sock = true;
    rc = nnx_connect(c->sock, url, NULL);
    rc = rc != 0 ? rc : nnx_watch_start(&c->loop, &c->watch, c->sock, ready_cb, c);
    if (rc != 0) {
        return rc;
    }
    c->open_handles = 1;
    if (uv_timer_init(&c->loop, &c->timer) != 0) {
        c->done = true;
        nnx_watch_close(&c->watch, watch_closed);
        return ESC_EIO;
    }
    c->open_handles = 2;
    c->timer.data = c;
    if (uv_timer_start(&c->timer, timer_cb, CTL_RPC_SEND_RETRY_MS, CTL_RPC_SEND_RETRY_MS) != 0) {
        finish(c, ESC_EIO);
        return ESC_EIO;
    }
    return 0;
}

int ctl_rpc_call(const char *url, uint64_t corr_id, const void *frame, size_t len, int timeout_ms,
                 wire_reply *rep, bool *sent)
{
    rpc_call call;
    rpc_call *c = &call;
    memset(c, 0, sizeof *c);
    *sent = false;
    if (uv_loop_init(&c->loop) != 0) {
        return ESC_EIO;
    }
    c->frame = frame;
    c->len = len;
    c->rep = rep;
    c->corr_id = corr_id;
    c->req_id = (uint32_t)(corr_id & 0x7fffffffu);
    nnx_hdr_request_id(&c->hdr, c->req_id);
    c->deadline_ms = uv_now(&c->loop) + (uint64_t)timeout_ms;
    int rc = start(c, url);
    if (rc == 0) {
        try_send(c);
    }
    /* Runs until both handles are closed (also after a failed start). */
    int run_rc = uv_run(&c->loop, UV_RUN_DEFAULT);
    ESC_ASSERT(c->open_handles == 0);
    if (run_rc != 0 || uv_loop_close(&c->loop) != 0) {
        rc = rc != 0 ? rc : ESC_EIO;
    }
    if (c->have_sock) {
        nnx_close(c->sock);
    }
    *sent = c->sent;
    return rc != 0 ? rc : c->rc;
}

const char *ctl_rpc_message(const wire_reply *rep)
{
    return rep->message[0] != '\0' ? rep->message : esc_strerror(rep->status);
}

void ctl_rpc_json_begin(ctl_json *j, FILE *out, const wire_reply *rep)
{
    ctl_json_init(j, out);
    ctl_json_begin_obj(j, NULL);
    ctl_json_str(j, "status", esc_err_name(rep->status));
    ctl_json_i64(j, "code", rep->status);
    ctl_json_str(j, "message", ctl_rpc_message(rep));
}

void ctl_rpc_no_answer(const char *who, const char *url, int timeout_ms, bool sent,
                       bool outcome_matters)
{
    char t[32];
    ctl_num_format_ms(timeout_ms, t, sizeof t);
    if (!sent) {
        fprintf(stderr,
                "escrowctl: %s at %s did not answer within %s: nothing could be sent "
                "(is it running?); nothing was done\n",
                who, url, t);
    } else if (outcome_matters) {
        fprintf(stderr,
                "escrowctl: %s at %s did not answer within %s: the request was sent, its "
                "outcome is unknown (look with 'escrowctl status' before retrying)\n",
                who, url, t);
    } else {
        fprintf(stderr, "escrowctl: %s at %s did not answer within %s\n", who, url, t);
    }
}

int ctl_rpc_quota(const char *url, const char *tenant, const wire_quota *q, const char *item_id,
                  int64_t qty, int timeout_ms, wire_reply *rep, wire_quota_item *item, bool *sent)
{
    unsigned char frame[1024];
    size_t len = 0;
    uint64_t corr = ctl_rpc_corr_id();
    int rc = wire_encode_quota(corr, tenant, q, item_id, qty, frame, sizeof frame, &len);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot encode the request: %s\n", esc_strerror(rc));
        return rc;
    }
    memset(rep, 0, sizeof *rep);
    rep->quota = item;
    rep->quota_cap = 1;
    return ctl_rpc_call(url, corr, frame, len, timeout_ms, rep, sent);
}
