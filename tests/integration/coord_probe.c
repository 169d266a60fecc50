/*
 * coord_probe.c - the integration tests' driver for escrow-coordinator: it
 * plays a segment node (heartbeats) or a client/escrowctl (route, admin)
 * over a raw nanomsg REQ socket and prints the answers as one line each.
 *
 *   hb URL NODE INCARNATION NODE_ENDPOINT [k=v ...]
 *       one heartbeat; k=v: stats=ID:EPOCH:AVAIL:HELD:SOLD:RESERVED:EMPTIES,...
 *       results=ID:OUTCOME:QTY,...  dry=ID,...  stopping=1
 *       prints: STATUS lease_ms=L heartbeat_ms=H segs=ID:EPOCH:STATE:PAUSED,...
 *               xfers=ID:KIND:SEG:QTY,...       (segs sorted by id, "-" if none)
 *   hb-loop URL NODE INCARNATION NODE_ENDPOINT EVERY_MS OUT_FILE STOP_FILE
 *       heartbeats every EVERY_MS until STOP_FILE exists; writes the latest
 *       "segs=..." line to OUT_FILE (rewritten when it changes)
 *   route URL TENANT (item=I | segment=S)
 *       prints: STATUS version=V sold_out=0|1 paused=0|1 tail=T segs=ID:EPOCH:STATE:ENDPOINT,...
 *   admin URL TENANT OP [item=I] [node=N] [qty=Q] [segments=S]
 *       OP: restock reduce pause resume split collapse rebalance retire drain
 *       undrain reload; sent once (not idempotent); prints: STATUS message
 *   sub PUB_URL TENANT ITEM SECONDS
 *       prints the first published route of ITEM: ROUTE version=V segs=N sold_out=B
 *
 * Exit 0 when an answer arrived (whatever its status), 1 when none did within
 * 5 s (or SECONDS), 2 on bad usage.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanomsg/nn.h>

#include "clock.h"
#include "escrow_errors.h"
#include "nnx.h"
#include "wire.h"

#define CALL_TIMEOUT_MS 5000

static int g_sock = -1, g_rcvfd = -1;
static uint32_t g_next_id = 1;
static unsigned char g_buf[ESC_FRAME_BYTES_MAX];
static wire_heartbeat g_hb;
static wire_hb_reply g_hbr;
static wire_route g_route;

static void fail(const char *msg)
{
    fprintf(stderr, "coord_probe: %s\n", msg);
    exit(2);
}

static void open_req(const char *url)
{
    if (nnx_open_req(&g_sock) != 0 || nnx_connect(g_sock, url, NULL) != 0) {
        fail("cannot open a REQ socket to the coordinator");
    }
    size_t sz = sizeof g_rcvfd;
    if (nn_getsockopt(g_sock, NN_SOL_SOCKET, NN_RCVFD, &g_rcvfd, &sz) < 0) {
        fail("NN_RCVFD");
    }
    usleep(200 * 1000); /* a raw socket drops what is sent before it connected */
}

/* Sends once (resend: every 500 ms, for idempotent requests) and waits. */
static int call(const void *buf, size_t len, bool resend, wire_reply *rep)
{
    uint32_t id = g_next_id++;
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, id);
    int64_t end = esc_mono_us() + CALL_TIMEOUT_MS * 1000LL, next_send = 0;
    while (esc_mono_us() < end) {
        if (esc_mono_us() >= next_send && (next_send == 0 || resend)) {
            (void)nnx_send(g_sock, &hdr, buf, len);
            next_send = esc_mono_us() + 500 * 1000;
        }
        void *msg = NULL;
        size_t n = 0;
        nnx_hdr rh;
        rh.len = 0;
        if (nnx_recv(g_sock, &msg, &n, &rh) != 0) {
            return 0;
        }
        if (msg != NULL) {
            int rc = wire_decode_reply(msg, n, rep);
            nnx_free(msg);
            if (rc == 0 && nnx_hdr_get_request_id(&rh) == id) {
                return 1;
            }
            continue;
        }
        struct pollfd p = {.fd = g_rcvfd, .events = POLLIN};
        (void)poll(&p, 1, 20);
    }
    return 0;
}

static const char *kv(int argc, char **argv, int from, const char *key)
{
    size_t k = strlen(key);
    for (int i = from; i < argc; i++) {
        if (strncmp(argv[i], key, k) == 0 && argv[i][k] == '=') {
            return argv[i] + k + 1;
        }
    }
    return NULL;
}

static void parse_stats(const char *s)
{
    while (s != NULL && *s != '\0' && g_hb.nsegs < ESC_HB_SEGMENTS_MAX) {
        wire_seg_stats *w = &g_hb.segs[g_hb.nsegs];
        memset(w, 0, sizeof *w);
        if (sscanf(s,
                   "%" SCNu64 ":%" SCNu64 ":%" SCNd64 ":%" SCNd64 ":%" SCNd64 ":%" SCNu64
                   ":%" SCNu64,
                   &w->segment_id, &w->epoch, &w->available, &w->held, &w->sold, &w->reserved,
                   &w->empties) != 7) {
            fail("stats= wants ID:EPOCH:AVAIL:HELD:SOLD:RESERVED:EMPTIES,...");
        }
        g_hb.nsegs++;
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
}

static void parse_results(const char *s)
{
    while (s != NULL && *s != '\0' && g_hb.nxfers < ESC_HB_TRANSFERS_MAX) {
        wire_transfer_result *r = &g_hb.xfers[g_hb.nxfers];
        if (sscanf(s, "%" SCNu64 ":%" SCNu32 ":%" SCNd64, &r->transfer_id, &r->outcome, &r->qty) !=
            3) {
            fail("results= wants ID:OUTCOME:QTY,...");
        }
        g_hb.nxfers++;
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
}

static void parse_dry(const char *s)
{
    while (s != NULL && *s != '\0' && g_hb.ndry < ESC_HB_SEGMENTS_MAX) {
        g_hb.dry[g_hb.ndry++] = strtoull(s, NULL, 10);
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
}

static int cmp_assign(const void *a, const void *b)
{
    uint64_t x = ((const wire_assignment *)a)->segment_id;
    uint64_t y = ((const wire_assignment *)b)->segment_id;
    return x < y ? -1 : x > y;
}

/* "segs=... xfers=..." of a heartbeat reply. */
static void format_hb(const wire_hb_reply *h, char *out, size_t cap)
{
    wire_assignment sorted[ESC_HB_SEGMENTS_MAX];
    memcpy(sorted, h->segs, h->nsegs * sizeof sorted[0]);
    qsort(sorted, h->nsegs, sizeof sorted[0], cmp_assign);
    size_t off = (size_t)snprintf(out, cap, "segs=");
    for (size_t i = 0; i < h->nsegs && off < cap; i++) {
        off += (size_t)snprintf(out + off, cap - off, "%s%" PRIu64 ":%" PRIu64 ":%u:%d",
                                i ? "," : "", sorted[i].segment_id, sorted[i].epoch,
                                sorted[i].state, sorted[i].paused);
    }
    off += (size_t)snprintf(out + off, cap - off, "%s xfers=", h->nsegs ? "" : "-");
    for (size_t i = 0; i < h->nxfers && off < cap; i++) {
        off += (size_t)snprintf(out + off, cap - off, "%s%" PRIu64 ":%u:%" PRIu64 ":%" PRId64,
                                i ? "," : "", h->xfers[i].transfer_id, h->xfers[i].kind,
                                h->xfers[i].segment_id, h->xfers[i].qty);
    }
    if (h->nxfers == 0 && off < cap) {
        snprintf(out + off, cap - off, "-");
    }
}

static void fill_hb(char **argv)
{
    memset(&g_hb, 0, sizeof g_hb);
    snprintf(g_hb.node_id, sizeof g_hb.node_id, "%s", argv[3]);
    g_hb.incarnation = strtoull(argv[4], NULL, 10);
    snprintf(g_hb.endpoint, sizeof g_hb.endpoint, "%s", argv[5]);
}

static int send_hb(uint64_t corr, wire_reply *rep)
{
    size_t len;
    if (wire_encode_heartbeat(corr, &g_hb, g_buf, sizeof g_buf, &len) != 0) {
        fail("cannot encode the heartbeat");
    }
    memset(rep, 0, sizeof *rep);
    rep->hb = &g_hbr;
    return call(g_buf, len, true, rep);
}

static int cmd_hb(int argc, char **argv)
{
    if (argc < 6) {
        fail("hb URL NODE INCARNATION NODE_ENDPOINT [k=v ...]");
    }
    fill_hb(argv);
    parse_stats(kv(argc, argv, 6, "stats"));
    parse_results(kv(argc, argv, 6, "results"));
    parse_dry(kv(argc, argv, 6, "dry"));
    const char *st = kv(argc, argv, 6, "stopping");
    g_hb.stopping = st != NULL && strcmp(st, "1") == 0;
    open_req(argv[2]);
    wire_reply rep;
    if (!send_hb(1, &rep)) {
        printf("NO_REPLY\n");
        return 1;
    }
    static char line[65536];
    line[0] = '\0';
    if (rep.has_hb) {
        format_hb(&g_hbr, line, sizeof line);
    }
    printf("%s lease_ms=%u heartbeat_ms=%u %s msg=%s\n", esc_err_name(rep.status),
           rep.has_hb ? g_hbr.lease_ms : 0, rep.has_hb ? g_hbr.heartbeat_ms : 0, line, rep.message);
    return 0;
}

static int cmd_hb_loop(int argc, char **argv)
{
    if (argc != 9) {
        fail("hb-loop URL NODE INCARNATION NODE_ENDPOINT EVERY_MS OUT_FILE STOP_FILE");
    }
    fill_hb(argv);
    long every = strtol(argv[6], NULL, 10);
    open_req(argv[2]);
    static char line[65536], last[65536];
    last[0] = '\0';
    for (uint64_t corr = 1; access(argv[8], F_OK) != 0; corr++) {
        wire_reply rep;
        if (send_hb(corr, &rep) && rep.has_hb) {
            format_hb(&g_hbr, line, sizeof line);
            if (strcmp(line, last) != 0) {
                snprintf(last, sizeof last, "%s", line);
                char tmp[4096];
                snprintf(tmp, sizeof tmp, "%s.tmp", argv[7]);
                FILE *f = fopen(tmp, "w");
                if (f != NULL) {
                    fprintf(f, "%s\n", line);
                    fclose(f);
                    (void)rename(tmp, argv[7]);
                }
            }
        }
        usleep((useconds_t)every * 1000);
    }
    return 0;
}

static int cmd_route(int argc, char **argv)
{
    if (argc < 5) {
        fail("route URL TENANT (item=I | segment=S)");
    }
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 7;
    q.op = WIRE_OP_ROUTE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", argv[3]);
    const char *item = kv(argc, argv, 4, "item"), *seg = kv(argc, argv, 4, "segment");
    snprintf(q.item_id, sizeof q.item_id, "%s", item ? item : "");
    q.segment_id = seg ? strtoull(seg, NULL, 10) : 0;
    size_t len;
    if (wire_encode_request(&q, g_buf, sizeof g_buf, &len) != 0) {
        fail("cannot encode the route request");
    }
    open_req(argv[2]);
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.route = &g_route;
    if (!call(g_buf, len, true, &rep)) {
        printf("NO_REPLY\n");
        return 1;
    }
    if (!rep.has_route) {
        printf("%s msg=%s\n", esc_err_name(rep.status), rep.message);
        return 0;
    }
    printf("%s version=%" PRIu64 " sold_out=%d paused=%d tail=%" PRIu64 " segs=",
           esc_err_name(rep.status), g_route.version, g_route.sold_out, g_route.paused,
           g_route.tail_segment);
    for (size_t i = 0; i < g_route.nsegs; i++) {
        const wire_route_seg *s = &g_route.segs[i];
        printf("%s%" PRIu64 ":%" PRIu64 ":%u:%s", i ? "," : "", s->segment_id, s->epoch, s->state,
               s->endpoint[0] ? s->endpoint : "-");
    }
    printf("%s\n", g_route.nsegs ? "" : "-");
    return 0;
}

static const char *const admin_names[] = {"",       "restock", "reduce",   "pause",
                                          "resume", "split",   "collapse", "rebalance",
                                          "retire", "drain",   "undrain",  "reload"};

static int cmd_admin(int argc, char **argv)
{
    if (argc < 5) {
        fail("admin URL TENANT OP [item=I] [node=N] [qty=Q] [segments=S]");
    }
    uint32_t op = 0;
    for (uint32_t i = 1; i < sizeof admin_names / sizeof admin_names[0]; i++) {
        if (strcmp(argv[4], admin_names[i]) == 0) {
            op = i;
        }
    }
    if (op == 0) {
        fail("unknown admin operation");
    }
    const char *item = kv(argc, argv, 5, "item"), *node = kv(argc, argv, 5, "node");
    const char *qty = kv(argc, argv, 5, "qty"), *segs = kv(argc, argv, 5, "segments");
    size_t len;
    int rc =
        wire_encode_admin(11, argv[3][0] ? argv[3] : NULL, op, item ? item : "", node ? node : "",
                          qty ? strtoll(qty, NULL, 10) : 0,
                          segs ? (uint32_t)strtoul(segs, NULL, 10) : 0, g_buf, sizeof g_buf, &len);
    if (rc != 0) {
        fail("cannot encode the admin request");
    }
    open_req(argv[2]);
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    if (!call(g_buf, len, false, &rep)) {
        printf("NO_REPLY\n");
        return 1;
    }
    printf("%s %s\n", esc_err_name(rep.status), rep.message);
    return 0;
}

static int cmd_sub(int argc, char **argv)
{
    if (argc != 6) {
        fail("sub PUB_URL TENANT ITEM SECONDS");
    }
    int s;
    if (nnx_open_sub(&s, argv[3], strlen(argv[3])) != 0 || nnx_connect(s, argv[2], NULL) != 0) {
        fail("cannot subscribe");
    }
    int fd;
    size_t sz = sizeof fd;
    if (nn_getsockopt(s, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0) {
        fail("NN_RCVFD");
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fail("usage: coord_probe hb|hb-loop|route|admin|sub ...");
    }
    if (argc < 3) {
        fail("missing endpoint");
    }
    if (strcmp(argv[1], "hb") == 0) {
        return cmd_hb(argc, argv);
    }
    if (strcmp(argv[1], "hb-loop") == 0) {
        return cmd_hb_loop(argc, argv);
    }
    if (strcmp(argv[1], "route") == 0) {
        return cmd_route(argc, argv);
    }
    if (strcmp(argv[1], "admin") == 0) {
        return cmd_admin(argc, argv);
    }
    if (strcmp(argv[1], "sub") == 0) {
        return cmd_sub(argc, argv);
    }
    fail("unknown command");
    return 2;
}
