/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_coordinator.c - esc_probe fake-coord (see fake_coordinator.h): a
 * raw REP socket answering heartbeats from a spec file.
 */
#include "fake_coordinator.h"

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
#include "probe.h"
#include "wire.h"

#define FC_LINE_MAX 512
#define FC_POLL_MS 20

typedef struct fake_coordinator {
    int sock;           /* owned: raw REP, bound */
    int rcvfd;          /* NN_RCVFD of sock */
    const char *spec;   /* borrowed */
    FILE *log;          /* owned */
    wire_hb_reply *hr;  /* owned: the answer being built */
    unsigned char *buf; /* owned: ESC_FRAME_BYTES_MAX */
} fake_coordinator;

static int fc_fail(const char *what, int rc)
{
    fprintf(stderr, "esc_probe: FAIL: %s: %s\n", what, esc_err_name(rc));
    return PROBE_EXIT_FAIL;
}

/* Applies one spec line for node to r; false if it says "silent node". */
static bool fc_spec_line(const char *line, const char *node, wire_hb_reply *r)
{
    char who[ESC_NODE_ID_LEN_MAX + 1], kind[16];
    unsigned long long a, b, c;
    unsigned st, paused, ms;
    long long qty;
    if (sscanf(line, "hb_ms %u", &ms) == 1) {
        r->heartbeat_ms = ms;
    } else if (sscanf(line, "silent %64s", who) == 1 && strcmp(who, node) == 0) {
        return false;
    } else if (sscanf(line, "assign %64s %llu %llu %u %u", who, &a, &b, &st, &paused) == 5 &&
               strcmp(who, node) == 0 && r->nsegs < ESC_HB_SEGMENTS_MAX) {
        r->segs[r->nsegs++] = (wire_assignment){a, b, st, paused != 0};
    } else if (sscanf(line, "xfer %64s %llu %15s %llu %lld", who, &a, kind, &c, &qty) == 5 &&
               strcmp(who, node) == 0 && r->nxfers < ESC_HB_TRANSFERS_MAX) {
        uint32_t k = strcmp(kind, "give") == 0 ? WIRE_XFER_GIVE : WIRE_XFER_RECEIVE;
        r->xfers[r->nxfers++] = (wire_xfer_cmd){a, k, c, qty};
    }
    return true;
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
    char line[FC_LINE_MAX];
    bool answer = true;
    while (fgets(line, sizeof line, f) != NULL) {
        answer = fc_spec_line(line, node, r) && answer;
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

static void fc_answer(fake_coordinator *fc, const nnx_hdr *hdr, const wire_request *q)
{
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = q->corr_id;
    if (q->op != WIRE_OP_HEARTBEAT || q->hb == NULL) {
        rep.status = ESC_EINVAL;
        snprintf(rep.message, sizeof rep.message, "the fake coordinator answers heartbeats only");
    } else {
        fc_log(fc->log, q->corr_id, q->hb);
        if (!fc_spec(fc->spec, q->hb->node_id, fc->hr)) {
            return;
        }
        rep.hb = fc->hr;
    }
    size_t len;
    int rc = wire_encode_reply(&rep, fc->buf, ESC_FRAME_BYTES_MAX, &len);
    if (rc == 0) {
        rc = nnx_send(fc->sock, hdr, fc->buf, len);
    }
    if (rc != 0) {
        fprintf(stderr, "esc_probe: fake-coord: reply: %s\n", esc_err_name(rc));
    }
}

/* Answers every request queued on the socket. */
static void fc_drain(fake_coordinator *fc)
{
    for (;;) {
        void *msg;
        size_t len;
        nnx_hdr hdr;
        if (nnx_recv(fc->sock, &msg, &len, &hdr) != 0 || msg == NULL) {
            return;
        }
        wire_request q;
        char why[WIRE_WHY_MAX] = "";
        int rc = wire_decode_request(msg, len, &q, why);
        nnx_free(msg);
        if (rc != 0) {
            fprintf(fc->log, "BAD %s %s\n", esc_err_name(rc), why);
            fflush(fc->log);
            continue;
        }
        fc_answer(fc, &hdr, &q);
    }
}

/* Binds the socket; esc_probe's exit code (0: listening). */
static int fc_listen(fake_coordinator *fc, const char *endpoint)
{
    int rc = nnx_open_rep(&fc->sock);
    if (rc != 0 || (rc = nnx_bind(fc->sock, endpoint)) != 0) {
        return fc_fail("fake-coord: listen", rc);
    }
    size_t sz = sizeof fc->rcvfd;
    if (nn_getsockopt(fc->sock, NN_SOL_SOCKET, NN_RCVFD, &fc->rcvfd, &sz) < 0) {
        return fc_fail("fake-coord: NN_RCVFD", ESC_EIO);
    }
    return 0;
}

int fake_coordinator_run(const probe_args *args)
{
    if (args->in_path == NULL || args->out_path == NULL ||
        (args->stop_file == NULL && args->seconds == 0)) {
        fprintf(stderr,
                "esc_probe fake-coord: --in SPEC, --out LOG and --stop-file or --seconds\n");
        return PROBE_EXIT_USAGE;
    }
    fake_coordinator fc = {.spec = args->in_path};
    fc.log = fopen(args->out_path, "a");
    if (fc.log == NULL) {
        perror(args->out_path);
        return PROBE_EXIT_FAIL;
    }
    int rc = fc_listen(&fc, args->endpoint);
    if (rc != 0) {
        fclose(fc.log);
        return rc;
    }
    fc.hr = calloc(1, sizeof *fc.hr);
    fc.buf = malloc(ESC_FRAME_BYTES_MAX);
    int64_t end_ms = esc_mono_us() / 1000 + (int64_t)args->seconds * 1000;
    while ((args->seconds == 0 || esc_mono_us() / 1000 < end_ms) &&
           (args->stop_file == NULL || access(args->stop_file, F_OK) != 0)) {
        struct pollfd p = {.fd = fc.rcvfd, .events = POLLIN};
        (void)poll(&p, 1, FC_POLL_MS);
        fc_drain(&fc);
    }
    free(fc.hr);
    free(fc.buf);
    nnx_close(fc.sock);
    fclose(fc.log);
    return 0;
}
