/*
 * probe_coord.c - esc_probe sub-commands for testing a segment node in
 * managed mode without the real coordinator.
 *
 *   fake-coord --endpoint URL --in SPEC --out LOG [--stop-file F | --seconds S]
 *       A coordinator that only answers heartbeats. SPEC is read again for
 *       every heartbeat, so a test script steers it by rewriting the file:
 *           hb_ms MS                               heartbeat period to hand out
 *           assign NODE SEGMENT EPOCH STATE PAUSED   (STATE 0 active, 1 draining)
 *           xfer NODE TRANSFER_ID give|receive SEGMENT QTY
 *           silent NODE                            do not answer NODE's heartbeats
 *       Ownership in PostgreSQL is the script's job (it raises the epochs
 *       itself, as the coordinator would, before it writes an assignment).
 *       Every heartbeat is logged as one line in LOG:
 *           HB node=N corr=C inc=I stopping=0|1
 * segs=ID:EPOCH:AVAIL:HELD:SOLD:STATE:RESERVED:EMPTIES,... xfers=ID:OUTCOME:QTY,... dry=ID,...
 *   hint-reserve --endpoint URL --item I --key K [--qty Q] [--segment S]
 *       one reserve with a segment hint (a raw frame: libescrow's single-node
 *       mode sends none); prints "STATUS hold=.. seg=.. qty=.. msg=..."
 *   op-release --endpoint URL --hold H
 *       ReleaseReq with by_operator set, as escrowctl release sends it.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanomsg/nn.h>

#include "clock.h"
#include "esc_limits.h"
#include "escrow_errors.h"
#include "nnx.h"
#include "probe_coord.h"
#include "wire.h"

#define FC_LINE_MAX 512
#define FC_POLL_MS 20

static int fc_fail(const char *what, int rc)
{
    fprintf(stderr, "esc_probe: FAIL: %s: %s\n", what, esc_err_name(rc));
    return 1;
}

/* Builds the reply for node from the spec file; false if it must stay silent. */
static bool fc_spec(const char *path, const char *node, wire_hb_reply *r)
{
    memset(r, 0, sizeof *r);
    r->lease_ms = 2000;
    r->heartbeat_ms = 200;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return true; /* no spec yet: nothing assigned */
    }
    char line[FC_LINE_MAX], who[ESC_NODE_ID_LEN_MAX + 1], kind[16];
    bool answer = true;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long long a, b, c;
        unsigned st, paused, ms;
        long long qty;
        if (sscanf(line, "hb_ms %u", &ms) == 1) {
            r->heartbeat_ms = ms;
        } else if (sscanf(line, "silent %64s", who) == 1 && strcmp(who, node) == 0) {
            answer = false;
        } else if (sscanf(line, "assign %64s %llu %llu %u %u", who, &a, &b, &st, &paused) == 5 &&
                   strcmp(who, node) == 0 && r->nsegs < ESC_HB_SEGMENTS_MAX) {
            r->segs[r->nsegs++] = (wire_assignment){a, b, st, paused != 0};
        } else if (sscanf(line, "xfer %64s %llu %15s %llu %lld", who, &a, kind, &c, &qty) == 5 &&
                   strcmp(who, node) == 0 && r->nxfers < ESC_HB_TRANSFERS_MAX) {
            uint32_t k = strcmp(kind, "give") == 0 ? WIRE_XFER_GIVE : WIRE_XFER_RECEIVE;
            r->xfers[r->nxfers++] = (wire_xfer_cmd){a, k, c, qty};
        }
    }
    fclose(f);
    return answer;
}

static void fc_log(FILE *out, uint64_t corr, const wire_heartbeat *hb)
{
    fprintf(out, "HB node=%s corr=%" PRIu64 " inc=%" PRIu64 " stopping=%d endpoint=%s segs=",
            hb->node_id, corr, hb->incarnation, hb->stopping ? 1 : 0, hb->endpoint);
    for (size_t i = 0; i < hb->nsegs; i++) {
        const wire_seg_stats *s = &hb->segs[i];
        fprintf(out,
                "%s%" PRIu64 ":%" PRIu64 ":%" PRId64 ":%" PRId64 ":%" PRId64 ":%u:%" PRIu64
                ":%" PRIu64,
                i ? "," : "", s->segment_id, s->epoch, s->available, s->held, s->sold, s->state,
                s->reserved, s->empties);
    }
    fprintf(out, " xfers=");
    for (size_t i = 0; i < hb->nxfers; i++) {
        fprintf(out, "%s%" PRIu64 ":%u:%" PRId64, i ? "," : "", hb->xfers[i].transfer_id,
                hb->xfers[i].outcome, hb->xfers[i].qty);
    }
    fprintf(out, " dry=");
    for (size_t i = 0; i < hb->ndry; i++) {
        fprintf(out, "%s%" PRIu64, i ? "," : "", hb->dry[i]);
    }
    fprintf(out, "\n");
    fflush(out);
}

static void fc_answer(int sock, const nnx_hdr *hdr, const wire_request *q, const char *spec,
                      FILE *out, wire_hb_reply *hr, unsigned char *buf)
{
    wire_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    if (q->op != WIRE_OP_HEARTBEAT || q->hb == NULL) {
        rep.status = ESC_EINVAL;
        snprintf(rep.message, sizeof rep.message, "the fake coordinator answers heartbeats only");
    } else {
        fc_log(out, q->corr_id, q->hb);
        if (!fc_spec(spec, q->hb->node_id, hr)) {
            return;
        }
        rep.hb = hr;
    }
    size_t len;
    int rc = wire_encode_reply(&rep, buf, ESC_FRAME_BYTES_MAX, &len);
    if (rc == 0) {
        rc = nnx_send(sock, hdr, buf, len);
    }
    if (rc != 0) {
        fprintf(stderr, "esc_probe: fake-coord: reply: %s\n", esc_err_name(rc));
    }
}

int probe_fake_coord(const char *endpoint, const char *spec, const char *log_path,
                     const char *stop_file, uint32_t seconds)
{
    if (spec == NULL || log_path == NULL || (stop_file == NULL && seconds == 0)) {
        fprintf(stderr,
                "esc_probe fake-coord: --in SPEC, --out LOG and --stop-file or --seconds\n");
        return 2;
    }
    FILE *out = fopen(log_path, "a");
    if (out == NULL) {
        perror(log_path);
        return 1;
    }
    int sock, fd, rc = nnx_open_rep(&sock);
    size_t sz = sizeof fd;
    if (rc != 0 || (rc = nnx_bind(sock, endpoint)) != 0) {
        fclose(out);
        return fc_fail("fake-coord: listen", rc);
    }
    if (nn_getsockopt(sock, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0) {
        fclose(out);
        return fc_fail("fake-coord: NN_RCVFD", ESC_EIO);
    }
    wire_hb_reply *hr = calloc(1, sizeof *hr);
    unsigned char *buf = malloc(ESC_FRAME_BYTES_MAX);
    int64_t end_ms = esc_mono_us() / 1000 + (int64_t)seconds * 1000;
    while ((seconds == 0 || esc_mono_us() / 1000 < end_ms) &&
           (stop_file == NULL || access(stop_file, F_OK) != 0)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        (void)poll(&p, 1, FC_POLL_MS);
        for (;;) {
            void *msg;
            size_t len;
            nnx_hdr hdr;
            if (nnx_recv(sock, &msg, &len, &hdr) != 0 || msg == NULL) {
                break;
            }
            wire_request q;
            char why[WIRE_WHY_MAX] = "";
            rc = wire_decode_request(msg, len, &q, why);
            nnx_free(msg);
            if (rc != 0) {
                fprintf(out, "BAD %s %s\n", esc_err_name(rc), why);
                fflush(out);
                continue;
            }
            fc_answer(sock, &hdr, &q, spec, out, hr, buf);
        }
    }
    free(hr);
    free(buf);
    nnx_close(sock);
    fclose(out);
    return 0;
}

/* One raw request; prints the outcome line. */
static int fc_call(const char *endpoint, const wire_request *q, uint32_t deadline_ms)
{
    int sock, fd, rc = nnx_open_req(&sock);
    size_t sz = sizeof fd;
    if (rc != 0 || (rc = nnx_connect(sock, endpoint, NULL)) != 0) {
        return fc_fail("connect", rc);
    }
    if (nn_getsockopt(sock, NN_SOL_SOCKET, NN_RCVFD, &fd, &sz) < 0) {
        nnx_close(sock);
        return fc_fail("NN_RCVFD", ESC_EIO);
    }
    unsigned char buf[4096];
    size_t len;
    if ((rc = wire_encode_request(q, buf, sizeof buf, &len)) != 0) {
        nnx_close(sock);
        return fc_fail("encode", rc);
    }
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, 1);
    int64_t end = esc_mono_us() / 1000 + deadline_ms, next_send = 0;
    while (esc_mono_us() / 1000 < end) {
        int64_t now = esc_mono_us() / 1000;
        if (now >= next_send) {
            (void)nnx_send(sock, &hdr, buf, len); /* resent: a raw socket drops early frames */
            next_send = now + 250;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        (void)poll(&p, 1, FC_POLL_MS);
        void *msg;
        size_t rlen;
        nnx_hdr rh;
        if (nnx_recv(sock, &msg, &rlen, &rh) != 0 || msg == NULL) {
            continue;
        }
        wire_reply rep;
        memset(&rep, 0, sizeof rep);
        rc = wire_decode_reply(msg, rlen, &rep);
        nnx_free(msg);
        if (rc != 0) {
            nnx_close(sock);
            return fc_fail("decode reply", rc);
        }
        const char *states[] = {"none", "held", "converted", "cancelled", "expired"};
        int st = rep.has_hold && rep.hold.state >= 1 && rep.hold.state <= 4 ? rep.hold.state : 0;
        for (char *c = rep.message; *c != '\0'; c++) {
            *c = *c == ' ' ? '_' : *c; /* one word: the scripts split on spaces */
        }
        printf("%s hold=%" PRIu64 " seg=%" PRIu64 " state=%s qty=%" PRId64 " msg=%s\n",
               esc_err_name(rep.status), rep.has_hold ? rep.hold.hold_id : 0,
               rep.has_hold ? rep.hold.segment_id : 0, states[st], rep.has_hold ? rep.hold.qty : 0,
               rep.message[0] ? rep.message : "-");
        nnx_close(sock);
        return 0;
    }
    printf("TIMEDOUT hold=0 seg=0 state=none qty=0 msg=-\n");
    nnx_close(sock);
    return 0;
}

int probe_hint_reserve(const char *endpoint, const char *tenant, const char *item,
                       const char *buyer, const char *key, int64_t qty, uint64_t segment_id,
                       uint64_t attempt, bool resolve, uint32_t deadline_ms)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 7;
    q.op = WIRE_OP_RESERVE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", tenant);
    snprintf(q.item_id, sizeof q.item_id, "%s", item);
    snprintf(q.buyer_id, sizeof q.buyer_id, "%s", buyer != NULL ? buyer : key);
    snprintf(q.key, sizeof q.key, "%s", key);
    q.qty = qty;
    q.segment_id = segment_id;
    q.attempt = attempt;
    q.resolve = resolve;
    return fc_call(endpoint, &q, deadline_ms);
}

int probe_op_release(const char *endpoint, const char *tenant, uint64_t hold_id,
                     uint32_t deadline_ms)
{
    wire_request q;
    memset(&q, 0, sizeof q);
    q.corr_id = 8;
    q.op = WIRE_OP_RELEASE;
    snprintf(q.tenant_id, sizeof q.tenant_id, "%s", tenant);
    q.hold_id = hold_id;
    q.by_operator = true;
    return fc_call(endpoint, &q, deadline_ms);
}
