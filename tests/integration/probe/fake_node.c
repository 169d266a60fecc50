/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_node.c - coord_probe's fake node (see fake_node.h).
 */
#include "fake_node.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_io.h"
#include "escrow_errors.h"
#include "wire.h"

#define FAKE_NODE_LINE_MAX 65536

/* Large: static, not on the stack. One heartbeat at a time. */
static unsigned char g_buf[ESC_FRAME_BYTES_MAX];
static wire_heartbeat g_hb;
static wire_hb_reply g_hbr;

/* Calls one(s, i) for each comma-separated entry of s (NULL: none), up to max. */
static void for_each_entry(const char *s, size_t max, void (*one)(const char *s, size_t i))
{
    for (size_t i = 0; s != NULL && *s != '\0' && i < max; i++) {
        one(s, i);
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
}

static void stats_entry(const char *s, size_t i)
{
    wire_seg_stats *w = &g_hb.segs[i];
    memset(w, 0, sizeof *w);
    if (sscanf(s,
               "%" SCNu64 ":%" SCNu64 ":%" SCNd64 ":%" SCNd64 ":%" SCNd64 ":%" SCNu64 ":%" SCNu64,
               &w->segment_id, &w->epoch, &w->available, &w->held, &w->sold, &w->reserved,
               &w->empties) != 7) {
        coord_fail("stats= wants ID:EPOCH:AVAIL:HELD:SOLD:RESERVED:EMPTIES,...");
    }
    g_hb.nsegs = i + 1;
}

static void result_entry(const char *s, size_t i)
{
    wire_transfer_result *r = &g_hb.xfers[i];
    if (sscanf(s, "%" SCNu64 ":%" SCNu32 ":%" SCNd64, &r->transfer_id, &r->outcome, &r->qty) != 3) {
        coord_fail("results= wants ID:OUTCOME:QTY,...");
    }
    g_hb.nxfers = i + 1;
}

static void dry_entry(const char *s, size_t i)
{
    g_hb.dry[i] = strtoull(s, NULL, 10);
    g_hb.ndry = i + 1;
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

/* NODE INCARNATION NODE_ENDPOINT (argv[3..5]) into g_hb, lists empty. */
static void fill_hb(char **argv)
{
    memset(&g_hb, 0, sizeof g_hb);
    snprintf(g_hb.node_id, sizeof g_hb.node_id, "%s", argv[3]);
    g_hb.incarnation = strtoull(argv[4], NULL, 10);
    snprintf(g_hb.endpoint, sizeof g_hb.endpoint, "%s", argv[5]);
}

/* Sends g_hb (resent: heartbeats are idempotent); the answer into g_hbr. */
static int send_hb(probe_req *c, uint64_t corr, wire_reply *rep)
{
    size_t len;
    if (wire_encode_heartbeat(corr, &g_hb, g_buf, sizeof g_buf, &len) != 0) {
        coord_fail("cannot encode the heartbeat");
    }
    memset(rep, 0, sizeof *rep);
    rep->hb = &g_hbr;
    return coord_call(c, g_buf, len, true, rep);
}

int fake_node_hb(int argc, char **argv)
{
    if (argc < 6) {
        coord_fail("hb URL NODE INCARNATION NODE_ENDPOINT [k=v ...]");
    }
    fill_hb(argv);
    for_each_entry(coord_kv(argc, argv, 6, "stats"), ESC_HB_SEGMENTS_MAX, stats_entry);
    for_each_entry(coord_kv(argc, argv, 6, "results"), ESC_HB_TRANSFERS_MAX, result_entry);
    for_each_entry(coord_kv(argc, argv, 6, "dry"), ESC_HB_SEGMENTS_MAX, dry_entry);
    const char *st = coord_kv(argc, argv, 6, "stopping");
    g_hb.stopping = st != NULL && strcmp(st, "1") == 0;
    probe_req c;
    coord_open(&c, argv[2]);
    wire_reply rep = {0};
    if (!send_hb(&c, 1, &rep)) {
        printf("NO_REPLY\n");
        return 1;
    }
    static char line[FAKE_NODE_LINE_MAX];
    line[0] = '\0';
    if (rep.has_hb) {
        format_hb(&g_hbr, line, sizeof line);
    }
    printf("%s lease_ms=%u heartbeat_ms=%u %s msg=%s\n", esc_err_name(rep.status),
           rep.has_hb ? g_hbr.lease_ms : 0, rep.has_hb ? g_hbr.heartbeat_ms : 0, line, rep.message);
    return 0;
}

/* Writes line to path through path.tmp and a rename (readers see whole lines). */
static void write_line(const char *path, const char *line)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f != NULL) {
        fprintf(f, "%s\n", line);
        fclose(f);
        (void)rename(tmp, path);
    }
}

int fake_node_hb_loop(int argc, char **argv)
{
    if (argc != 9) {
        coord_fail("hb-loop URL NODE INCARNATION NODE_ENDPOINT EVERY_MS OUT_FILE STOP_FILE");
    }
    fill_hb(argv);
    long every = strtol(argv[6], NULL, 10);
    probe_req c;
    coord_open(&c, argv[2]);
    static char line[FAKE_NODE_LINE_MAX], last[FAKE_NODE_LINE_MAX];
    last[0] = '\0';
    for (uint64_t corr = 1; access(argv[8], F_OK) != 0; corr++) {
        wire_reply rep = {0};
        if (send_hb(&c, corr, &rep) && rep.has_hb) {
            format_hb(&g_hbr, line, sizeof line);
            if (strcmp(line, last) != 0) {
                snprintf(last, sizeof last, "%s", line);
                write_line(argv[7], line);
            }
        }
        usleep((useconds_t)every * 1000);
    }
    return 0;
}
