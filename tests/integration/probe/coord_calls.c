/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_calls.c - coord_probe's client calls (see coord_calls.h).
 */
#include "coord_calls.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanomsg/nn.h>

#include "clock.h"
#include "coord_io.h"
#include "escrow_errors.h"
#include "nnx.h"
#include "wire.h"

/* Large: static, not on the stack. One call per process. */
static unsigned char g_buf[ESC_FRAME_BYTES_MAX];
static wire_route g_route;

static void print_route(int status, const wire_route *r)
{
    printf("%s version=%" PRIu64 " sold_out=%d paused=%d tail=%" PRIu64 " segs=",
           esc_err_name(status), r->version, r->sold_out, r->paused, r->tail_segment);
    for (size_t i = 0; i < r->nsegs; i++) {
        const wire_route_seg *s = &r->segs[i];
        printf("%s%" PRIu64 ":%" PRIu64 ":%u:%s", i ? "," : "", s->segment_id, s->epoch, s->state,
               s->endpoint[0] ? s->endpoint : "-");
    }
    printf("%s\n", r->nsegs ? "" : "-");
}

int coord_calls_route(int argc, char **argv)
{
    if (argc < 5) {
        coord_fail("route URL TENANT (item=I | segment=S)");
    }
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 7;
    q.op = WIRE_OP_ROUTE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", argv[3]);
    const char *item = coord_kv(argc, argv, 4, "item"), *seg = coord_kv(argc, argv, 4, "segment");
    snprintf(q.item_id, sizeof q.item_id, "%s", item ? item : "");
    q.segment_id = seg ? strtoull(seg, NULL, 10) : 0;
    size_t len;
    if (wire_encode_request(&q, g_buf, sizeof g_buf, &len) != 0) {
        coord_fail("cannot encode the route request");
    }
    probe_req c;
    coord_open(&c, argv[2]);
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.route = &g_route;
    if (!coord_call(&c, g_buf, len, true, &rep)) {
        printf("NO_REPLY\n");
        return 1;
    }
    if (!rep.has_route) {
        printf("%s msg=%s\n", esc_err_name(rep.status), rep.message);
        return 0;
    }
    print_route(rep.status, &g_route);
    return 0;
}

static const char *const admin_names[] = {"",       "restock", "reduce",   "pause",
                                          "resume", "split",   "collapse", "rebalance",
                                          "retire", "drain",   "undrain",  "reload"};

int coord_calls_admin(int argc, char **argv)
{
    if (argc < 5) {
        coord_fail("admin URL TENANT OP [item=I] [node=N] [qty=Q] [segments=S]");
    }
    uint32_t op = 0;
    for (uint32_t i = 1; i < sizeof admin_names / sizeof admin_names[0]; i++) {
        if (strcmp(argv[4], admin_names[i]) == 0) {
            op = i;
        }
    }
    if (op == 0) {
        coord_fail("unknown admin operation");
    }
    const char *item = coord_kv(argc, argv, 5, "item"), *node = coord_kv(argc, argv, 5, "node");
    const char *qty = coord_kv(argc, argv, 5, "qty"), *segs = coord_kv(argc, argv, 5, "segments");
    size_t len;
    int rc =
        wire_encode_admin(11, argv[3][0] ? argv[3] : NULL, op, item ? item : "", node ? node : "",
                          qty ? strtoll(qty, NULL, 10) : 0,
                          segs ? (uint32_t)strtoul(segs, NULL, 10) : 0, g_buf, sizeof g_buf, &len);
    if (rc != 0) {
        coord_fail("cannot encode the admin request");
    }
    probe_req c;
    coord_open(&c, argv[2]);
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    if (!coord_call(&c, g_buf, len, false, &rep)) {
        printf("NO_REPLY\n");
        return 1;
    }
    printf("%s %s\n", esc_err_name(rep.status), rep.message);
    return 0;
}

int coord_calls_sub(int argc, char **argv)
{
    if (argc != 6) {
        coord_fail("sub PUB_URL TENANT ITEM SECONDS");
    }
    int s;
    if (nnx_open_sub(&s, argv[3], strlen(argv[3])) != 0 || nnx_connect(s, argv[2], NULL) != 0) {
        coord_fail("cannot subscribe");
    }
    int fd;
    size_t sz = sizeof fd;
    if (nn_getsockopt(s, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0) {
        coord_fail("NN_RCVFD");
    }
    int64_t end = esc_mono_us() + strtoll(argv[5], NULL, 10) * 1000000LL;
    while (esc_mono_us() < end) {
        void *msg = NULL;
        size_t n;
        nnx_hdr h;
        if (nnx_recv(s, &msg, &n, &h) != 0) {
            break;
        }
        if (msg == NULL) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            (void)poll(&p, 1, 50);
            continue;
        }
        int rc = wire_decode_route_pub(msg, n, &g_route);
        nnx_free(msg);
        if (rc == 0 && strcmp(g_route.item_id, argv[4]) == 0) {
            printf("ROUTE version=%" PRIu64 " segs=%zu sold_out=%d tail=%" PRIu64 "\n",
                   g_route.version, g_route.nsegs, g_route.sold_out, g_route.tail_segment);
            return 0;
        }
    }
    printf("NO_ROUTE\n");
    return 1;
}
