/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_raw.c - esc_probe raw (see probe_raw.h): hand-built frames over a
 * raw REQ socket (probe_req.h, frames from wire_encode_raw or bytes), and
 * plain TCP sockets at the node's port.
 */
#include "probe_raw.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "clock.h"
#include "esc_limits.h"
#include "nnx.h"
#include "probe.h"
#include "probe_req.h"
#include "wire.h"

#define RAW_BUF_BYTES (256 * 1024)
#define RAW_REPLY_MS 3000
#define RAW_RESEND_MS 250

/* A Request with every field settable, packed into buf. */
typedef struct raw_req {
    uint32_t version;
    const char *tenant;
    int op; /* WIRE_OP_* */
    const char *item, *buyer, *key;
    int64_t qty;
    uint32_t ttl_ms;
    uint64_t segment_id, hold_id;
    size_t credential_len;
} raw_req;

typedef struct raw_ctx {
    probe_req c;
    const probe_args *args; /* borrowed */
    int failures;
    int cases;
    uint8_t *buf; /* owned, RAW_BUF_BYTES */
} raw_ctx;

/* Sends a frame and waits for its reply: 1 = reply in *rep, 0 = none
 * within timeout_ms. Dies if the socket fails or the reply is garbage. */
static int raw_call(raw_ctx *x, size_t len, int64_t timeout_ms, wire_reply *rep)
{
    void *msg = NULL;
    size_t mlen = 0;
    int rc = probe_req_call(&x->c, x->buf, len, timeout_ms, RAW_RESEND_MS, &msg, &mlen);
    if (rc < 0) {
        probe_die("raw call of %zu bytes: %s", len, esc_err_name(rc));
    }
    if (rc == 0) {
        return 0;
    }
    memset(rep, 0, sizeof *rep);
    rc = wire_decode_reply(msg, mlen, rep);
    nnx_free(msg);
    if (rc != 0) {
        probe_die("the node sent a reply we cannot decode: %s", esc_err_name(rc));
    }
    return 1;
}

static size_t raw_pack(const raw_req *q, uint8_t *buf, size_t cap)
{
    uint8_t *cred = NULL;
    if (q->credential_len > 0) {
        cred = probe_xcalloc(q->credential_len, 1);
        memset(cred, 'c', q->credential_len);
    }
    wire_raw_request r = {
        .version = q->version,
        .corr_id = 42,
        .tenant_id = q->tenant,
        .credential = cred,
        .credential_len = q->credential_len,
        .op = q->op,
        .item_id = q->op == WIRE_OP_STATS ? "" : q->item,
        .buyer_id = q->buyer,
        .key = q->key,
        .qty = q->qty,
        .ttl_ms = q->ttl_ms,
        .segment_id = q->segment_id,
        .hold_id = q->hold_id,
    };
    size_t n = 0;
    int rc = wire_encode_raw(&r, buf, cap, &n);
    free(cred);
    if (rc != 0) {
        probe_die("raw request does not fit %zu bytes", cap);
    }
    return n;
}

/* A reserve for the probe's tenant and item with sane fields. */
static raw_req raw_base(const probe_args *args)
{
    raw_req q;
    memset(&q, 0, sizeof q);
    q.version = WIRE_VERSION;
    q.tenant = args->tenant;
    q.op = WIRE_OP_RESERVE;
    q.item = args->item;
    q.buyer = "raw-buyer";
    q.key = "raw-key-never-stored";
    q.qty = 1;
    return q;
}

/* Sends len bytes of x->buf; expects a reply with status want. */
static void raw_expect(raw_ctx *x, const char *name, size_t len, int want)
{
    wire_reply rep = {0};
    x->cases++;
    if (raw_call(x, len, RAW_REPLY_MS, &rep) == 0) {
        printf("CASE %-28s bytes=%-7zu -> no reply (expected %s)\n", name, len, esc_err_name(want));
        x->failures++;
        return;
    }
    bool ok = rep.status == want;
    printf("CASE %-28s bytes=%-7zu -> %s%s%s (%s)\n", name, len, esc_err_name(rep.status),
           ok ? "" : ", expected ", ok ? "" : esc_err_name(want), rep.message);
    if (!ok) {
        x->failures++;
    }
}

static void raw_expect_req(raw_ctx *x, const char *name, const raw_req *q, int want)
{
    raw_expect(x, name, raw_pack(q, x->buf, RAW_BUF_BYTES), want);
}

static char *repeat_char(char ch, size_t n)
{
    char *s = probe_xcalloc(n + 1, 1);
    memset(s, ch, n);
    return s;
}

/* Not protobuf at all, or protobuf that is not an escrow request. */
static void raw_cases_malformed(raw_ctx *x)
{
    static const uint8_t wire7[] = {0x0f, 0xff, 0xff, 0xff}; /* field 1, wire type 7 */
    static const uint8_t trunc[] = {0x10, 0xff, 0xff};       /* varint cut short */
    static const uint8_t badlen[] = {0x1a, 0x7f, 'a', 'b'};  /* string longer than frame */
    memcpy(x->buf, wire7, sizeof wire7);
    raw_expect(x, "malformed_wire_type", sizeof wire7, ESC_EPROTO);
    memcpy(x->buf, trunc, sizeof trunc);
    raw_expect(x, "malformed_truncated_varint", sizeof trunc, ESC_EPROTO);
    memcpy(x->buf, badlen, sizeof badlen);
    raw_expect(x, "malformed_length_overrun", sizeof badlen, ESC_EPROTO);
    raw_expect(x, "empty_frame", 0, ESC_EPROTO);
    raw_req q = raw_base(x->args);
    size_t n = raw_pack(&q, x->buf, RAW_BUF_BYTES);
    x->buf[n] = 0xff; /* a valid reserve with one byte of garbage after it */
    raw_expect(x, "trailing_garbage", n + 1, ESC_EPROTO);
    q.version = 7;
    raw_expect_req(x, "wrong_version", &q, ESC_EPROTO);
    q.version = 0;
    raw_expect_req(x, "version_missing", &q, ESC_EPROTO);
    q = raw_base(x->args);
    q.op = WIRE_OP_NONE;
    raw_expect_req(x, "no_operation", &q, ESC_EPROTO);
}

static void raw_cases_qty(raw_ctx *x)
{
    raw_req q = raw_base(x->args);
    q.qty = 0;
    raw_expect_req(x, "qty_zero", &q, ESC_EINVAL);
    q.qty = -1;
    raw_expect_req(x, "qty_negative", &q, ESC_EINVAL);
    q.qty = INT64_MIN;
    raw_expect_req(x, "qty_int64_min", &q, ESC_EINVAL);
    q.qty = ESC_QTY_MAX + 1;
    raw_expect_req(x, "qty_above_max", &q, ESC_EINVAL);
    q.qty = INT64_MAX;
    raw_expect_req(x, "qty_int64_max", &q, ESC_EINVAL);
    q.qty = 1;
    q.ttl_ms = ESC_TTL_MS_MIN - 1;
    raw_expect_req(x, "ttl_below_min", &q, ESC_EINVAL);
    q.ttl_ms = ESC_TTL_MS_MAX + 1;
    raw_expect_req(x, "ttl_above_max", &q, ESC_EINVAL);
    q.ttl_ms = 0;
    q.segment_id = ESC_SEGMENT_ID_MAX + 1;
    raw_expect_req(x, "segment_hint_out_of_range", &q, ESC_EINVAL);
}

static void raw_cases_ids(raw_ctx *x)
{
    char *k129 = repeat_char('k', ESC_KEY_LEN_MAX + 1);
    char *t65 = repeat_char('t', ESC_TENANT_LEN_MAX + 1);
    raw_req q = raw_base(x->args);
    q.key = k129;
    raw_expect_req(x, "key_129_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.item = k129;
    raw_expect_req(x, "item_129_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.buyer = k129;
    raw_expect_req(x, "buyer_129_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.tenant = t65;
    raw_expect_req(x, "tenant_65_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.key = "has space";
    raw_expect_req(x, "key_with_space", &q, ESC_EINVAL);
    q.key = "del\x7f";
    raw_expect_req(x, "key_with_del", &q, ESC_EINVAL);
    q.key = "";
    raw_expect_req(x, "key_empty", &q, ESC_EINVAL);
    q = raw_base(x->args);
    q.tenant = "";
    raw_expect_req(x, "tenant_empty", &q, ESC_EINVAL);
    q = raw_base(x->args);
    q.credential_len = ESC_CREDENTIAL_LEN_MAX + 1;
    raw_expect_req(x, "credential_257_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.tenant = "no-such-tenant";
    raw_expect_req(x, "unknown_tenant", &q, ESC_EUNKNOWN_TENANT);
    q = raw_base(x->args);
    q.item = "no-such-item";
    raw_expect_req(x, "unknown_item", &q, ESC_EUNKNOWN_ITEM);
    free(k129);
    free(t65);
}

/* Transitions on hold ids that are malformed, foreign, absent or misused. */
static void raw_cases_holds(raw_ctx *x)
{
    const probe_args *a = x->args;
    raw_req q = raw_base(a);
    q.op = WIRE_OP_CONFIRM;
    q.qty = 0;
    q.hold_id = 0;
    raw_expect_req(x, "confirm_hold_id_zero", &q, ESC_EINVAL);
    q.hold_id = 5; /* segment 0 */
    raw_expect_req(x, "confirm_hold_segment_zero", &q, ESC_EINVAL);
    q.hold_id = a->hold_id;
    q.qty = -1;
    raw_expect_req(x, "confirm_qty_negative", &q, ESC_EINVAL);
    q.qty = ESC_QTY_MAX + 1;
    raw_expect_req(x, "confirm_qty_above_max", &q, ESC_EINVAL);
    q.qty = a->qty + 1; /* more than the hold has: refused, hold untouched */
    raw_expect_req(x, "confirm_more_than_held", &q, ESC_EINVAL);
    q.op = WIRE_OP_RELEASE;
    q.hold_id = ((uint64_t)ESC_SEGMENT_ID_MAX << ESC_HOLD_SEQ_BITS) | 1u;
    raw_expect_req(x, "release_unowned_segment", &q, ESC_ENOT_OWNER);
    q.op = WIRE_OP_GET;
    q.hold_id = (a->segment_id << ESC_HOLD_SEQ_BITS) | 0xfffffffu;
    raw_expect_req(x, "get_absent_hold", &q, ESC_ENOT_FOUND);
    q.op = WIRE_OP_CONFIRM;
    q.qty = 0;
    q.hold_id = a->hold_id;
    q.tenant = "other-tenant";
    /* another tenant's segment answers as a segment not here: no oracle */
    raw_expect_req(x, "confirm_other_tenants_hold", &q, ESC_ENOT_OWNER);
    q = raw_base(a);
    q.op = WIRE_OP_EXTEND;
    q.hold_id = a->hold_id;
    q.ttl_ms = 10;
    raw_expect_req(x, "extend_ttl_below_min", &q, ESC_EINVAL);
    q = raw_base(a);
    q.key = a->key; /* the existing hold's key with another qty */
    q.buyer = a->key;
    q.qty = a->qty + 1;
    raw_expect_req(x, "reserve_key_mismatch", &q, ESC_EIDEMPOTENCY_MISMATCH);
}

/* Frames near and over the node's size limit (ESC_REQUEST_BYTES_MAX). */
static void raw_cases_size(raw_ctx *x)
{
    /* A 3 KiB field in a frame under the limit: refused by the field's own
     * bound (TOOBIG), not by the decoder running out of room (PROTO). */
    char *big = repeat_char('b', 3 * 1024);
    raw_req q = raw_base(x->args);
    q.tenant = big;
    raw_expect(x, "tenant_3_kib", raw_pack(&q, x->buf, RAW_BUF_BYTES), ESC_ETOOBIG);
    q = raw_base(x->args);
    q.credential_len = 3 * 1024;
    raw_expect(x, "credential_3_kib", raw_pack(&q, x->buf, RAW_BUF_BYTES), ESC_ETOOBIG);
    free(big);
    /* Over NN_RCVMAXSIZE: nanomsg drops the connection; no reply is fine. */
    size_t len = ESC_REQUEST_BYTES_MAX + 4096;
    memset(x->buf, 0x0a, len);
    wire_reply rep = {0};
    x->cases++;
    int got = raw_call(x, len, 1500, &rep);
    printf("CASE %-28s bytes=%-7zu -> %s\n", "oversized_frame", len,
           got ? esc_err_name(rep.status) : "no reply (connection dropped)");
    if (got && rep.status != ESC_ETOOBIG && rep.status != ESC_EPROTO) {
        x->failures++;
    }
}

/* The node still answers on this socket (stats touches no database). */
static void raw_alive(raw_ctx *x, const char *name)
{
    raw_req q = raw_base(x->args);
    q.op = WIRE_OP_STATS;
    raw_expect_req(x, name, &q, 0);
}

/* ---- plain TCP at the node's port --------------------------------------- */

static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        probe_die("socket: %s", strerror(errno));
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        probe_die("connect to 127.0.0.1:%d: %s", port, strerror(errno));
    }
    return fd;
}

/* True if the peer closes (EOF or reset) within wait_ms; reads what it sends. */
static bool tcp_closed_by_peer(int fd, int wait_ms)
{
    int64_t end = esc_mono_us() + (int64_t)wait_ms * 1000;
    for (;;) {
        int64_t left = (end - esc_mono_us()) / 1000;
        if (left <= 0) {
            return false;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)left) <= 0) {
            continue;
        }
        char b[256];
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
            return true;
        }
    }
}

static void tcp_send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return; /* the node may close while we write: that is its answer */
        }
        p += n;
        len -= (size_t)n;
    }
}

/* The SP protocol header nanomsg speaks on TCP: \0 S P \0, protocol, 0 0. */
static void sp_header(uint8_t h[8], int protocol)
{
    h[0] = 0;
    h[1] = 'S';
    h[2] = 'P';
    h[3] = 0;
    h[4] = (uint8_t)(protocol >> 8);
    h[5] = (uint8_t)protocol;
    h[6] = 0;
    h[7] = 0;
}

static void tcp_case(raw_ctx *x, const char *name, int fd, bool must_close)
{
    x->cases++;
    bool closed = tcp_closed_by_peer(fd, 2000);
    printf("CASE %-28s -> %s\n", name, closed ? "connection closed by the node" : "still open");
    if (must_close && !closed) {
        x->failures++;
    }
    close(fd);
}

/* Connections the node must close: not SP, the wrong SP peer, a frame
 * length no node accepts. */
static void raw_cases_tcp_closed(raw_ctx *x, int port)
{
    static const char http[] = "GET / HTTP/1.1\r\nHost: escrow\r\n\r\n";
    int fd = tcp_connect(port);
    tcp_send_all(fd, http, sizeof http - 1);
    tcp_case(x, "tcp_http_garbage", fd, true);

    uint8_t h[8];
    fd = tcp_connect(port);
    sp_header(h, NN_PROTO_REQREP * 16 + 1); /* REP talking to REP: wrong peer protocol */
    tcp_send_all(fd, h, sizeof h);
    tcp_case(x, "tcp_wrong_sp_protocol", fd, true);

    fd = tcp_connect(port);
    sp_header(h, NN_REQ);
    uint8_t huge[8] = {0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff}; /* a 140 TB frame */
    tcp_send_all(fd, h, sizeof h);
    tcp_send_all(fd, huge, sizeof huge);
    tcp_case(x, "tcp_frame_length_140TB", fd, true);
}

/* Connections that hang up half-way or send noise. */
static void raw_cases_tcp_noise(int port)
{
    int fd = tcp_connect(port);
    uint8_t half[8 + 8 + 10] = {0};
    sp_header(half, NN_REQ);
    half[15] = 100; /* announces 100 bytes, sends 10, hangs up */
    tcp_send_all(fd, half, sizeof half);
    close(fd);
    printf("CASE %-28s -> sent and hung up\n", "tcp_half_frame");

    uint8_t noise[4096];
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < sizeof noise; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        noise[i] = (uint8_t)s;
    }
    for (int i = 0; i < 20; i++) {
        fd = tcp_connect(port);
        tcp_send_all(fd, noise + i * 100, 1000);
        close(fd);
    }
    printf("CASE %-28s -> 20 connections sent 1000 random bytes each\n", "tcp_noise");
}

/* Idle TCP connections must not stall the node for everyone else. */
static void raw_idle_connections(raw_ctx *x, int port)
{
    int fds[16];
    for (int i = 0; i < 16; i++) {
        fds[i] = tcp_connect(port);
    }
    raw_alive(x, "alive_with_idle_tcp_peers");
    for (int i = 0; i < 16; i++) {
        close(fds[i]);
    }
}

static int endpoint_port(const char *endpoint)
{
    const char *colon = strrchr(endpoint, ':');
    int port = colon ? atoi(colon + 1) : 0;
    if (strncmp(endpoint, "tcp://", 6) != 0 || port <= 0 || port > 65535) {
        probe_die("raw needs a tcp://HOST:PORT endpoint, got %s", endpoint);
    }
    return port;
}

static void raw_open(raw_ctx *x, const probe_args *args)
{
    if (args->endpoint == NULL) {
        probe_die("this command talks to one node: it needs --endpoint");
    }
    memset(x, 0, sizeof *x);
    x->args = args;
    int rc = probe_req_open(&x->c, args->endpoint);
    if (rc != 0) {
        probe_die("raw socket to %s: %s", args->endpoint, esc_err_name(rc));
    }
    x->buf = probe_xcalloc(RAW_BUF_BYTES, 1);
}

int probe_raw(const probe_args *args)
{
    if (args->hold_id == 0 || args->segment_id == 0 || args->key == NULL) {
        probe_die("raw needs --hold ID --segment ID --key KEY (an existing hold and its key)");
    }
    raw_ctx x;
    raw_open(&x, args);
    raw_alive(&x, "alive_at_start");
    raw_cases_malformed(&x);
    raw_cases_qty(&x);
    raw_cases_ids(&x);
    raw_cases_holds(&x);
    raw_cases_size(&x);
    raw_alive(&x, "alive_after_oversized");
    int port = endpoint_port(args->endpoint);
    raw_cases_tcp_closed(&x, port);
    raw_cases_tcp_noise(port);
    raw_idle_connections(&x, port);
    raw_alive(&x, "alive_at_end");
    probe_req_close(&x.c);
    free(x.buf);
    printf("RAW cases=%d failures=%d\n", x.cases, x.failures);
    if (x.failures != 0) {
        probe_die("raw: %d of %d cases got an unexpected answer", x.failures, x.cases);
    }
    return 0;
}
