/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_req.c - a raw REQ socket with resends (see probe_req.h).
 */
#include "probe_req.h"

#include <poll.h>
#include <stdbool.h>
#include <string.h>

#include <nanomsg/nn.h>

#include "clock.h"
#include "escrow_errors.h"
#include "nnx.h"

/* How long one poll waits at most: the loop also watches the clock. */
#define PROBE_REQ_POLL_MS 20
/* A send nanomsg refused (ESC_EBUSY) is tried again this soon. */
#define PROBE_REQ_BUSY_MS 10

int probe_req_open(probe_req *c, const char *endpoint)
{
    memset(c, 0, sizeof *c);
    int rc = nnx_open_req(&c->sock);
    if (rc != 0) {
        return rc;
    }
    if ((rc = nnx_connect(c->sock, endpoint, NULL)) != 0) {
        nnx_close(c->sock);
        return rc;
    }
    size_t sz = sizeof c->rcvfd;
    if (nn_getsockopt(c->sock, NN_SOL_SOCKET, NN_RCVFD, &c->rcvfd, &sz) < 0) {
        nnx_close(c->sock);
        return ESC_EIO;
    }
    c->next_id = 1;
    return 0;
}

void probe_req_close(probe_req *c)
{
    nnx_close(c->sock);
    c->sock = -1;
}

/* Takes every queued message; 1 with the reply to id, 0 if not (yet) there. */
static int take_reply(probe_req *c, uint32_t id, void **msg, size_t *msg_len)
{
    for (;;) {
        void *m = NULL;
        size_t n = 0;
        nnx_hdr hdr;
        hdr.len = 0;
        int rc = nnx_recv(c->sock, &m, &n, &hdr);
        if (rc != 0) {
            return rc;
        }
        if (m == NULL) {
            return 0;
        }
        if (nnx_hdr_get_request_id(&hdr) == id) {
            *msg = m;
            *msg_len = n;
            return 1;
        }
        nnx_free(m); /* a late answer to an earlier request */
    }
}

int probe_req_call(probe_req *c, const void *buf, size_t len, int64_t timeout_ms, int64_t resend_ms,
                   void **msg, size_t *msg_len)
{
    uint32_t id = c->next_id++;
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, id);
    int64_t now = esc_mono_us() / 1000, end = now + timeout_ms, next_send = now;
    bool sent = false;
    while (now < end) {
        if (now >= next_send && (!sent || resend_ms > 0)) {
            int rc = nnx_send(c->sock, &hdr, buf, len);
            if (rc != 0 && rc != ESC_EBUSY) {
                return rc;
            }
            sent = rc == 0;
            next_send = now + (rc == ESC_EBUSY ? PROBE_REQ_BUSY_MS : resend_ms);
        }
        int got = take_reply(c, id, msg, msg_len);
        if (got != 0) {
            return got;
        }
        int64_t wait = (sent && resend_ms == 0 ? end : next_send) - now;
        wait = wait < PROBE_REQ_POLL_MS ? wait : PROBE_REQ_POLL_MS;
        struct pollfd p = {.fd = c->rcvfd, .events = POLLIN};
        (void)poll(&p, 1, wait > 0 ? (int)wait : 0);
        now = esc_mono_us() / 1000;
    }
    return 0;
}
