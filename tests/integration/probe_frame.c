/*
 * probe_frame.c - esc_probe frame: one request of any kind, with any tenant
 * and the process's credential (esc_probe --credential), to a node or a
 * coordinator; prints the answer as one line:
 *   <STATUS> hold=<id> nsegs=<n> route=<0|1> msg=<message, spaces as _>
 * TIMEDOUT when nothing answered within the deadline. For the tenant
 * matrix (tenants.sh): every operation, every way of being the wrong
 * sender, one process each.
 */
#include "probe_frame.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanomsg/nn.h>

#include "clock.h"
#include "escrow_errors.h"
#include "nnx.h"
#include "wire.h"

static const struct {
    const char *name;
    uint32_t op;
} k_admin[] = {
    {"admin-restock", WIRE_ADMIN_RESTOCK},     {"admin-reduce", WIRE_ADMIN_REDUCE},
    {"admin-pause", WIRE_ADMIN_PAUSE},         {"admin-resume", WIRE_ADMIN_RESUME},
    {"admin-split", WIRE_ADMIN_SPLIT},         {"admin-collapse", WIRE_ADMIN_COLLAPSE},
    {"admin-rebalance", WIRE_ADMIN_REBALANCE}, {"admin-retire", WIRE_ADMIN_RETIRE},
    {"admin-drain", WIRE_ADMIN_DRAIN},         {"admin-undrain", WIRE_ADMIN_UNDRAIN},
    {"admin-reload", WIRE_ADMIN_RELOAD},
};

static const struct {
    const char *name;
    wire_op op;
} k_tenant[] = {
    {"reserve", WIRE_OP_RESERVE}, {"confirm", WIRE_OP_CONFIRM},
    {"release", WIRE_OP_RELEASE}, {"extend", WIRE_OP_EXTEND},
    {"get", WIRE_OP_GET},         {"stats", WIRE_OP_STATS},
    {"route", WIRE_OP_ROUTE},     {"op-release", WIRE_OP_RELEASE},
    {"resolve", WIRE_OP_RESERVE},
};

static int encode_tenant_op(const probe_frame_args *a, wire_op op, uint8_t *buf, size_t cap,
                            size_t *len)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 9;
    q.op = op;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", a->tenant);
    snprintf(q.item_id, sizeof q.item_id, "%s", a->item ? a->item : "");
    snprintf(q.buyer_id, sizeof q.buyer_id, "%s", a->key ? a->key : "");
    snprintf(q.key, sizeof q.key, "%s", a->key ? a->key : "");
    q.qty = op == WIRE_OP_CONFIRM ? 0 : a->qty;
    q.hold_id = a->hold_id;
    q.segment_id = a->segment_id;
    q.by_operator = strcmp(a->op, "op-release") == 0;
    q.resolve = strcmp(a->op, "resolve") == 0; /* libescrow's question before a "no" */
    q.attempt = q.resolve ? 77 : 0;
    return wire_encode_request(&q, buf, cap, len);
}

static int encode(const probe_frame_args *a, uint8_t *buf, size_t cap, size_t *len)
{
    for (size_t i = 0; i < sizeof k_tenant / sizeof k_tenant[0]; i++) {
        if (strcmp(a->op, k_tenant[i].name) == 0) {
            return encode_tenant_op(a, k_tenant[i].op, buf, cap, len);
        }
    }
    for (size_t i = 0; i < sizeof k_admin / sizeof k_admin[0]; i++) {
        if (strcmp(a->op, k_admin[i].name) == 0) {
            uint32_t op = k_admin[i].op;
            return wire_encode_admin(9, a->tenant, op, a->item ? a->item : "",
                                     a->node ? a->node : "", a->qty,
                                     op == WIRE_ADMIN_SPLIT ? (uint32_t)a->qty : 0, buf, cap, len);
        }
    }
    if (strcmp(a->op, "quota-move") == 0 || strcmp(a->op, "quota-status") == 0) {
        static wire_quota q;
        memset(&q, 0, sizeof q);
        bool move = strcmp(a->op, "quota-move") == 0;
        q.kind = move ? WIRE_QUOTA_MOVE : WIRE_QUOTA_STATUS;
        snprintf(move ? q.to_region : q.from_region, sizeof q.to_region, "%s",
                 a->node ? a->node : "elsewhere");
        return wire_encode_quota(9, move ? a->tenant : NULL, &q, move ? a->item : NULL,
                                 move ? a->qty : 0, buf, cap, len);
    }
    if (strcmp(a->op, "heartbeat") == 0) {
        static wire_heartbeat hb;
        memset(&hb, 0, sizeof hb);
        snprintf(hb.node_id, sizeof hb.node_id, "%s", a->node ? a->node : "intruder");
        snprintf(hb.endpoint, sizeof hb.endpoint, "tcp://127.0.0.1:1");
        hb.incarnation = 1;
        return wire_encode_heartbeat(9, &hb, buf, cap, len);
    }
    return ESC_EINVAL;
}

static void print_reply(wire_reply *rep)
{
    for (char *c = rep->message; *c != '\0'; c++) {
        *c = *c == ' ' ? '_' : *c; /* one word: the scripts split on spaces */
    }
    printf("%s hold=%" PRIu64 " nsegs=%zu route=%d msg=%s\n", esc_err_name(rep->status),
           rep->has_hold ? rep->hold.hold_id : 0, rep->nsegs, rep->has_route ? 1 : 0,
           rep->message[0] ? rep->message : "-");
}

/* Sends buf as request id and waits for its reply (resent every 25 ms: a
 * raw socket drops frames until it is connected). 1 = reply in *rep. */
static int call(int sock, int fd, uint32_t id, const uint8_t *buf, size_t len, uint32_t deadline_ms,
                wire_reply *rep)
{
    static wire_seg_stats segs[ESC_STATS_SEGMENTS_MAX];
    static wire_route route;
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, id);
    int64_t end = esc_mono_us() / 1000 + deadline_ms, next_send = 0;
    while (esc_mono_us() / 1000 < end) {
        int64_t now = esc_mono_us() / 1000;
        if (now >= next_send) {
            (void)nnx_send(sock, &hdr, buf, len);
            next_send = now + 25;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        (void)poll(&p, 1, 5);
        void *msg;
        size_t rlen;
        nnx_hdr rh;
        if (nnx_recv(sock, &msg, &rlen, &rh) != 0 || msg == NULL) {
            continue;
        }
        if (nnx_hdr_get_request_id(&rh) != id) {
            nnx_free(msg);
            continue; /* the answer to an earlier copy */
        }
        memset(rep, 0, sizeof *rep);
        rep->segs = segs;
        rep->segs_cap = ESC_STATS_SEGMENTS_MAX;
        rep->route = &route;
        int rc = wire_decode_reply(msg, rlen, rep);
        nnx_free(msg);
        if (rc != 0) {
            rep->status = ESC_EPROTO;
            snprintf(rep->message, sizeof rep->message, "undecodable reply");
        }
        return 1;
    }
    return 0;
}

int probe_frame(const probe_frame_args *a)
{
    static uint8_t buf[ESC_FRAME_BYTES_MAX];
    size_t len = 0;
    int rc = encode(a, buf, sizeof buf, &len);
    if (rc != 0) {
        fprintf(stderr, "esc_probe: frame: cannot encode '%s': %s\n", a->op, esc_err_name(rc));
        return 2;
    }
    int sock, fd;
    size_t sz = sizeof fd;
    if (nnx_open_req(&sock) != 0 || nnx_connect(sock, a->endpoint, NULL) != 0 ||
        nn_getsockopt(sock, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0) {
        fprintf(stderr, "esc_probe: frame: cannot reach %s\n", a->endpoint);
        return 2;
    }
    wire_reply rep;
    if (a->n <= 1) {
        if (call(sock, fd, 1, buf, len, a->deadline_ms, &rep)) {
            print_reply(&rep);
        } else {
            printf("TIMEDOUT hold=0 nsegs=0 route=0 msg=-\n");
        }
        nnx_close(sock);
        return 0;
    }
    /* n copies one after the other: how many of each answer (rate limits) */
    uint32_t ok = 0, busy = 0, other = 0, none = 0;
    char busy_msg[WIRE_WHY_MAX] = "-";
    for (uint32_t i = 0; i < a->n; i++) {
        if (!call(sock, fd, i + 1, buf, len, a->deadline_ms, &rep)) {
            none++;
        } else if (rep.status == 0) {
            ok++;
        } else if (rep.status == ESC_EBUSY) {
            if (busy++ == 0) {
                for (char *c = rep.message; *c != '\0'; c++) {
                    *c = *c == ' ' ? '_' : *c;
                }
                snprintf(busy_msg, sizeof busy_msg, "%s", rep.message);
            }
        } else {
            other++;
        }
    }
    printf("COUNTS n=%u ok=%u busy=%u other=%u none=%u busy_msg=%s\n", a->n, ok, busy, other, none,
           busy_msg);
    nnx_close(sock);
    return 0;
}
