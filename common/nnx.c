/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nnx.c - see nnx.h.
 */
#include "nnx.h"

#include <errno.h>
#include <string.h>

#include <nanomsg/nn.h>
#include <nanomsg/pubsub.h>
#include <nanomsg/reqrep.h>
#include <nanomsg/tcp.h>

#include "escrow_errors.h"
#include "esc_limits.h"

static int translate(int e)
{
    switch (e) {
    case EAGAIN:
        return ESC_EBUSY;
    case EINVAL:
    case EPROTONOSUPPORT:
    case ENODEV:
    case EADDRNOTAVAIL:
        return ESC_EINVAL;
    case EMSGSIZE:
        return ESC_ETOOBIG;
    case ENOMEM:
        return ESC_ENOMEM;
    case ETERM:
    case EBADF:
        return ESC_ECLOSED;
    default:
        return ESC_EIO;
    }
}

static int open_raw(int protocol, int *sock_out)
{
    int s = nn_socket(AF_SP_RAW, protocol);
    if (s < 0) {
        return translate(nn_errno());
    }
    int maxsz = ESC_FRAME_BYTES_MAX;
    if (nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVMAXSIZE, &maxsz, sizeof maxsz) < 0) {
        int rc = translate(nn_errno());
        nn_close(s);
        return rc;
    }
    /* Large buffers: a burst of a few thousand requests must queue, not drop. */
    int buf = 4 * 1024 * 1024;
    if (nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVBUF, &buf, sizeof buf) < 0 ||
        nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDBUF, &buf, sizeof buf) < 0) {
        int rc = translate(nn_errno());
        nn_close(s);
        return rc;
    }
    *sock_out = s;
    return 0;
}

int nnx_open_rep(int *sock_out)
{
    return open_raw(NN_REP, sock_out);
}

int nnx_open_req(int *sock_out)
{
    return open_raw(NN_REQ, sock_out);
}

int nnx_set_rcvmax(int sock, int bytes)
{
    if (nn_setsockopt(sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &bytes, sizeof bytes) < 0) {
        return translate(nn_errno());
    }
    return 0;
}

static int set_nodelay(int sock)
{
    int one = 1;
    if (nn_setsockopt(sock, NN_TCP, NN_TCP_NODELAY, &one, sizeof one) < 0) {
        return translate(nn_errno());
    }
    return 0;
}

int nnx_bind(int sock, const char *url)
{
    int rc = set_nodelay(sock);
    if (rc < 0) {
        return rc;
    }
    if (nn_bind(sock, url) < 0) {
        return translate(nn_errno());
    }
    return 0;
}

int nnx_connect(int sock, const char *url, nnx_eids *eids)
{
    int rc = set_nodelay(sock);
    if (rc < 0) {
        return rc;
    }
    nnx_eids got = {0};
    const char *p = url;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        char one[NN_SOCKADDR_MAX];
        if (got.n == NNX_CONNECT_MAX || len == 0 || len >= sizeof one) {
            return ESC_EINVAL;
        }
        memcpy(one, p, len);
        one[len] = '\0';
        int id = nn_connect(sock, one);
        if (id < 0) {
            return translate(nn_errno());
        }
        got.id[got.n++] = id;
        if (comma == NULL) {
            break;
        }
        p = comma + 1;
    }
    if (eids != NULL) {
        *eids = got;
    }
    return 0;
}

int nnx_reconnect(int sock, nnx_eids *eids, const char *url)
{
    for (int i = 0; i < eids->n; i++) {
        (void)nn_shutdown(sock, eids->id[i]); /* fails only if it is already gone */
    }
    eids->n = 0;
    return nnx_connect(sock, url, eids);
}

void nnx_close(int sock)
{
    if (sock >= 0) {
        nn_close(sock);
    }
}

static int open_cooked(int protocol, int *sock_out)
{
    int s = nn_socket(AF_SP, protocol);
    if (s < 0) {
        return translate(nn_errno());
    }
    int maxsz = ESC_FRAME_BYTES_MAX;
    int buf = 4 * 1024 * 1024;
    if (nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVMAXSIZE, &maxsz, sizeof maxsz) < 0 ||
        nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDBUF, &buf, sizeof buf) < 0 ||
        nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVBUF, &buf, sizeof buf) < 0) {
        int rc = translate(nn_errno());
        nn_close(s);
        return rc;
    }
    *sock_out = s;
    return 0;
}

int nnx_open_pub(int *sock_out)
{
    return open_cooked(NN_PUB, sock_out);
}

int nnx_open_sub(int *sock_out, const void *prefix, size_t len)
{
    int s;
    int rc = open_cooked(NN_SUB, &s);
    if (rc != 0) {
        return rc;
    }
    if (nn_setsockopt(s, NN_SUB, NN_SUB_SUBSCRIBE, len ? prefix : "", len) < 0) {
        rc = translate(nn_errno());
        nn_close(s);
        return rc;
    }
    *sock_out = s;
    return 0;
}

int nnx_subscribe(int sock, const void *prefix, size_t len)
{
    if (nn_setsockopt(sock, NN_SUB, NN_SUB_SUBSCRIBE, len ? prefix : "", len) < 0) {
        return translate(nn_errno());
    }
    return 0;
}

int nnx_publish(int sock, const void *buf, size_t len)
{
    if (nn_send(sock, buf, len, NN_DONTWAIT) < 0) {
        return translate(nn_errno());
    }
    return 0;
}

/* Control data carries SP_HDR as a size_t length followed by the header. */
static void hdr_from_cmsg(struct nn_msghdr *m, nnx_hdr *hdr)
{
    hdr->len = 0;
    for (struct nn_cmsghdr *c = NN_CMSG_FIRSTHDR(m); c != NULL; c = NN_CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level != PROTO_SP || c->cmsg_type != SP_HDR) {
            continue;
        }
        size_t datalen = c->cmsg_len - NN_CMSG_LEN(0);
        size_t n;
        if (datalen < sizeof n) {
            return;
        }
        memcpy(&n, NN_CMSG_DATA(c), sizeof n);
        if (n > NNX_HDR_MAX || n > datalen - sizeof n) {
            return;
        }
        memcpy(hdr->bytes, NN_CMSG_DATA(c) + sizeof n, n);
        hdr->len = (uint8_t)n;
        return;
    }
}

int nnx_recv(int sock, void **msg, size_t *len, nnx_hdr *hdr)
{
    void *body = NULL;
    struct nn_iovec iov = {.iov_base = &body, .iov_len = NN_MSG};
    _Alignas(max_align_t) unsigned char ctrl[NN_CMSG_SPACE(sizeof(size_t) + NNX_HDR_MAX) + 64];
    struct nn_msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    int n = nn_recvmsg(sock, &m, NN_DONTWAIT);
    if (n < 0) {
        int e = nn_errno();
        *msg = NULL;
        *len = 0;
        return e == EAGAIN ? 0 : translate(e);
    }
    hdr_from_cmsg(&m, hdr);
    *msg = body;
    *len = (size_t)n;
    return 0;
}

void nnx_free(void *msg)
{
    if (msg != NULL) {
        nn_freemsg(msg);
    }
}

int nnx_send(int sock, const nnx_hdr *hdr, const void *buf, size_t len)
{
    struct nn_iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    _Alignas(max_align_t) unsigned char ctrl[NN_CMSG_SPACE(sizeof(size_t) + NNX_HDR_MAX)];
    struct nn_msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    struct nn_cmsghdr *c = (struct nn_cmsghdr *)ctrl;
    size_t n = hdr->len;
    c->cmsg_len = NN_CMSG_LEN(sizeof n + n);
    c->cmsg_level = PROTO_SP;
    c->cmsg_type = SP_HDR;
    memcpy(NN_CMSG_DATA(c), &n, sizeof n);
    memcpy(NN_CMSG_DATA(c) + sizeof n, hdr->bytes, n);
    m.msg_control = ctrl;
    m.msg_controllen = NN_CMSG_SPACE(sizeof n + n);
    if (nn_sendmsg(sock, &m, NN_DONTWAIT) < 0) {
        return translate(nn_errno());
    }
    return 0;
}

void nnx_hdr_request_id(nnx_hdr *hdr, uint32_t id)
{
    id |= 0x80000000u;
    hdr->bytes[0] = (uint8_t)(id >> 24);
    hdr->bytes[1] = (uint8_t)(id >> 16);
    hdr->bytes[2] = (uint8_t)(id >> 8);
    hdr->bytes[3] = (uint8_t)id;
    hdr->len = 4;
}

uint32_t nnx_hdr_get_request_id(const nnx_hdr *hdr)
{
    if (hdr->len != 4 || (hdr->bytes[0] & 0x80) == 0) {
        return 0;
    }
    return ((uint32_t)hdr->bytes[0] << 24 | (uint32_t)hdr->bytes[1] << 16 |
            (uint32_t)hdr->bytes[2] << 8 | hdr->bytes[3]) &
           0x7fffffffu;
}

static void watch_cb(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    nnx_watch *w = p->data;
    w->cb(w, w->arg);
}

int nnx_watch_start(uv_loop_t *loop, nnx_watch *w, int sock, nnx_ready_cb cb, void *arg)
{
    int fd;
    size_t sz = sizeof fd;
    if (nn_getsockopt(sock, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0) {
        return translate(nn_errno());
    }
    w->sock = sock;
    w->cb = cb;
    w->arg = arg;
    if (uv_poll_init(loop, &w->poll, fd) != 0) {
        return ESC_EIO;
    }
    w->poll.data = w;
    if (uv_poll_start(&w->poll, UV_READABLE, watch_cb) != 0) {
        uv_close((uv_handle_t *)&w->poll, NULL);
        return ESC_EIO;
    }
    return 0;
}

void nnx_watch_pause(nnx_watch *w)
{
    uv_poll_stop(&w->poll);
}

int nnx_watch_resume(nnx_watch *w)
{
    return uv_poll_start(&w->poll, UV_READABLE, watch_cb) == 0 ? 0 : ESC_EIO;
}

void nnx_watch_close(nnx_watch *w, uv_close_cb close_cb)
{
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, close_cb);
}
