/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_seeds.c - writes the seed corpora of the fuzz targets: one valid frame
 * per request operation (heartbeat, admin, global restock and reduce, quota
 * included), signed frames and a frame with the retired cleartext credential
 * for fuzz_request, replies with a hold, stats, a route and a heartbeat
 * reply, and a routes update, for fuzz_reply. Run by hand when the protocol
 * changes:
 *   fuzz_seeds tests/fuzz/corpus
 * (the output is committed; run.sh copies it into a work corpus).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wire.h"

static unsigned char buf[ESC_FRAME_BYTES_MAX];

static void put(const char *dir, const char *name, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static void mkdir_p(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_seeds: mkdir %s: %s\n", dir, strerror(errno));
        exit(1);
    }
}

static void check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "fuzz_seeds: encoding %s failed (%d)\n", what, rc);
        exit(1);
    }
}

/* A key for the seeds only (never a deployment's): the signed frames are
 * what every client sends, so the fuzzer starts from their shape. */
static const char seed_key[] = "esk_0123456789abcdef_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";

static void signed_seeds(const char *dir)
{
    size_t n;
    wire_request q;
    memset(&q, 0, sizeof q);
    q.op = WIRE_OP_RESERVE;
    q.corr_id = 7;
    strcpy(q.tenant_id, "shop-1");
    strcpy(q.item_id, "tee");
    strcpy(q.buyer_id, "buyer-17");
    strcpy(q.key, "order-1");
    q.qty = 1;
    check(wire_set_credential(seed_key), "the seed key");
    check(wire_encode_request(&q, buf, sizeof buf, &n), "signed reserve");
    put(dir, "signed-reserve", n);
    check(wire_encode_admin(9, "shop-1", WIRE_ADMIN_PAUSE, "tee", NULL, 0, 0, buf, sizeof buf, &n),
          "signed admin pause");
    put(dir, "signed-admin-pause", n);
    check(wire_set_credential(NULL), "no key");
    /* the retired cleartext credential, as an old client sent it */
    wire_raw_request r = {.version = WIRE_VERSION,
                          .corr_id = 7,
                          .tenant_id = "shop-1",
                          .credential = seed_key,
                          .credential_len = sizeof seed_key - 1,
                          .op = WIRE_OP_GET,
                          .hold_id = (3ULL << 40) | 9};
    check(wire_encode_raw(&r, buf, sizeof buf, &n), "cleartext get");
    put(dir, "cleartext-get", n);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    char req_dir[400], rep_dir[400];
    snprintf(req_dir, sizeof req_dir, "%s/fuzz_request", argv[1]);
    snprintf(rep_dir, sizeof rep_dir, "%s/fuzz_reply", argv[1]);
    mkdir_p(argv[1]);
    mkdir_p(req_dir);
    mkdir_p(rep_dir);

    static const char *names[] = {"",       "reserve", "confirm", "release",
                                  "extend", "get",     "stats",   "route"};
    size_t n;
    for (int op = WIRE_OP_RESERVE; op <= WIRE_OP_ROUTE; op++) {
        wire_request q;
        memset(&q, 0, sizeof q);
        q.op = (wire_op)op;
        q.corr_id = 7;
        strcpy(q.tenant_id, "shop-1");
        strcpy(q.item_id, "tee");
        strcpy(q.buyer_id, "buyer-17");
        strcpy(q.key, "order-1");
        q.qty = op == WIRE_OP_CONFIRM ? 0 : 2;
        q.ttl_ms = op == WIRE_OP_RESERVE || op == WIRE_OP_EXTEND ? 60000 : 0;
        q.hold_id = op >= WIRE_OP_CONFIRM && op <= WIRE_OP_GET ? (3ULL << 40) | 9 : 0;
        q.by_operator = op == WIRE_OP_RELEASE;
        q.segment_id = op == WIRE_OP_RESERVE ? 3 : 0;
        check(wire_encode_request(&q, buf, sizeof buf, &n), names[op]);
        put(req_dir, names[op], n);
        if (op == WIRE_OP_RESERVE) {
            /* libescrow's resolve before a "no": the same frame with an
             * attempt number and the resolve flag */
            q.attempt = 0x9e3779b97f4a7c15ULL;
            q.resolve = true;
            check(wire_encode_request(&q, buf, sizeof buf, &n), "resolve");
            put(req_dir, "resolve", n);
        }
    }
    static wire_heartbeat hb;
    strcpy(hb.node_id, "n1");
    strcpy(hb.endpoint, "tcp://127.0.0.1:7101");
    hb.incarnation = 42;
    hb.nsegs = 2;
    hb.segs[0] = (wire_seg_stats){.segment_id = 3,
                                  .epoch = 2,
                                  .available = 40,
                                  .held = 2,
                                  .sold = 8,
                                  .reserved = 10,
                                  .empties = 1};
    hb.segs[1] = (wire_seg_stats){.segment_id = 4, .epoch = 2, .state = WIRE_SEG_DRAINING};
    hb.nxfers = 1;
    hb.xfers[0] = (wire_transfer_result){5, WIRE_XFER_SENT, 10};
    hb.ndry = 1;
    hb.dry[0] = 4;
    check(wire_encode_heartbeat(8, &hb, buf, sizeof buf, &n), "heartbeat");
    put(req_dir, "heartbeat", n);
    check(wire_encode_admin(9, "shop-1", WIRE_ADMIN_RESTOCK, "tee", NULL, 100, 0, buf, sizeof buf,
                            &n),
          "admin restock");
    put(req_dir, "admin-restock", n);
    check(wire_encode_admin(9, "shop-1", WIRE_ADMIN_SPLIT, "tee", NULL, 0, 16, buf, sizeof buf, &n),
          "admin split");
    put(req_dir, "admin-split", n);
    check(wire_encode_admin(9, NULL, WIRE_ADMIN_DRAIN, NULL, "n1", 0, 0, buf, sizeof buf, &n),
          "admin drain");
    put(req_dir, "admin-drain", n);
    check(wire_encode_admin_global(9, "shop-1", WIRE_ADMIN_RESTOCK, "tee", 100, "delivery-4711",
                                   "eu", buf, sizeof buf, &n),
          "admin global restock");
    put(req_dir, "admin-global-restock", n);
    check(wire_encode_admin_global(9, "shop-1", WIRE_ADMIN_REDUCE, "tee", 30, "short-4711", NULL,
                                   buf, sizeof buf, &n),
          "admin global reduce");
    put(req_dir, "admin-global-reduce", n);

    signed_seeds(req_dir);

    static wire_quota quota;
    quota.kind = WIRE_QUOTA_STATUS;
    strcpy(quota.from_region, "eu");
    quota.nitems = 1;
    strcpy(quota.items[0].tenant_id, "shop-1");
    strcpy(quota.items[0].item_id, "tee");
    quota.items[0] = (wire_quota_item){.quota = 500,
                                       .unused = 120,
                                       .demand_milli = 80000,
                                       .floor = 10,
                                       .in_flight = 5,
                                       .known = true,
                                       .held = 30,
                                       .sold = 350,
                                       .reduce_pending = 20,
                                       .reduce_ask = 15,
                                       .changes = 3,
                                       .change_sum = -40,
                                       .share = 2};
    strcpy(quota.items[0].tenant_id, "shop-1");
    strcpy(quota.items[0].item_id, "tee");
    check(wire_encode_quota(10, NULL, &quota, NULL, 0, buf, sizeof buf, &n), "quota status");
    put(req_dir, "quota-status", n);
    quota.kind = WIRE_QUOTA_OFFER;
    quota.nitems = 0;
    strcpy(quota.to_region, "us");
    quota.transfer_id = 12;
    check(wire_encode_quota(11, "shop-1", &quota, "tee", 40, buf, sizeof buf, &n), "quota offer");
    put(req_dir, "quota-offer", n);
    quota.kind = WIRE_QUOTA_MOVE;
    check(wire_encode_quota(12, "shop-1", &quota, "tee", 40, buf, sizeof buf, &n), "quota move");
    put(req_dir, "quota-move", n);

    static wire_route route;
    strcpy(route.tenant_id, "shop-1");
    strcpy(route.item_id, "tee");
    route.version = 1700000000000001ULL;
    route.tail_segment = 4;
    route.nsegs = 2;
    route.segs[0] = (wire_route_seg){.segment_id = 3, .epoch = 2, .state = WIRE_SEG_DRAINING};
    strcpy(route.segs[0].endpoint, "tcp://127.0.0.1:7101");
    route.segs[1] = (wire_route_seg){.segment_id = 4, .epoch = 2};
    strcpy(route.segs[1].endpoint, "tcp://127.0.0.1:7102");
    check(wire_encode_route_pub(&route, buf, sizeof buf, &n), "route pub");
    put(rep_dir, "route-pub", n);

    static wire_hb_reply hbr;
    hbr.lease_ms = 2000;
    hbr.heartbeat_ms = 200;
    hbr.nsegs = 1;
    hbr.segs[0] = (wire_assignment){3, 2, WIRE_SEG_ACTIVE, false};
    hbr.nxfers = 1;
    hbr.xfers[0] = (wire_xfer_cmd){5, WIRE_XFER_RECEIVE, 3, 10};
    wire_seg_stats st[1] = {{.segment_id = 3, .epoch = 2, .available = 40, .held = 2, .sold = 8}};
    strcpy(st[0].item_id, "tee");
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = 7;
    rep.has_hold = true;
    rep.hold = (wire_hold){.hold_id = (3ULL << 40) | 9,
                           .segment_id = 3,
                           .qty = 2,
                           .state = WIRE_HOLD_HELD,
                           .expires_at_ms = 1700000000000};
    strcpy(rep.hold.item_id, "tee");
    strcpy(rep.hold.buyer_id, "buyer-17");
    check(wire_encode_reply(&rep, buf, sizeof buf, &n), "reply hold");
    put(rep_dir, "reply-hold", n);
    memset(&rep, 0, sizeof rep);
    rep.corr_id = 8;
    rep.status = -1;
    strcpy(rep.message, "sold out");
    rep.segs = st;
    rep.nsegs = 1;
    check(wire_encode_reply(&rep, buf, sizeof buf, &n), "reply stats");
    put(rep_dir, "reply-stats", n);
    memset(&rep, 0, sizeof rep);
    rep.route = &route;
    check(wire_encode_reply(&rep, buf, sizeof buf, &n), "reply route");
    put(rep_dir, "reply-route", n);
    memset(&rep, 0, sizeof rep);
    rep.hb = &hbr;
    check(wire_encode_reply(&rep, buf, sizeof buf, &n), "reply heartbeat");
    put(rep_dir, "reply-heartbeat", n);
    memset(&rep, 0, sizeof rep);
    strcpy(rep.region, "us");
    rep.quota = quota.items;
    rep.nquota = 1;
    check(wire_encode_reply(&rep, buf, sizeof buf, &n), "reply quota");
    put(rep_dir, "reply-quota", n);
    return 0;
}
