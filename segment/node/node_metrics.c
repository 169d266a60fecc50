/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_metrics.c - see node_metrics.h. Handles are looked up once (at open,
 * or lazily for op x status) and kept; hooks are relaxed atomic adds.
 */
#include "node_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "node.h"
#include "wire.h"

#define OPS_N (WIRE_OP_ADMIN + 1)
#define STATUS_N (-ESC_E_LAST_ + 1) /* 0 .. -ESC_E_LAST_-1, and one for unknown codes */

struct node_metrics {
    metrics_registry *reg; /* owned */
    metrics_http *http;    /* owned */
    metrics_family *requests, *rejections;
    metrics_series *req[OPS_N][STATUS_N]; /* looked up on first use */
    metrics_series *rej[STATUS_N];
    metrics_series *holds_live, *holds_created, *ended_converted, *ended_cancelled, *ended_expired;
    metrics_series *units_available, *units_held, *units_sold;
    metrics_series *batch_rows, *commit_latency, *batches_failed;
    metrics_series *fenced, *served, *loaded, *dropped;
    metrics_family *transfers;
    metrics_series *db_up[2], *db_down[2], *db_reconnects[2];
    bool db_seen_up[2];
    metrics_series *hb_sent, *hb_failed, *hb_replied;
    int64_t last_sample_us;
    /* The unit gauges, kept segment by segment (node_metrics_figures):
     * what each segment added to them, by index of the core. */
    struct unit_seen {
        int64_t available, held, sold;
        bool served;
    } * seen;
    size_t nseen;
    int64_t served_n, available, held, sold;
};

static const char *const op_names[OPS_N] = {"none", "reserve", "confirm", "release",   "extend",
                                            "get",  "stats",   "route",   "heartbeat", "admin"};
static const double rows_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
static const double latency_bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                        0.1,    0.2,   0.5,   1,     2,    5};

static metrics_family *fam(node_metrics *m, metrics_type t, const char *name, const char *help,
                           const char *const *labels)
{
    const double *b = t == METRICS_HISTOGRAM ? latency_bounds : NULL;
    size_t nb = t == METRICS_HISTOGRAM ? sizeof latency_bounds / sizeof latency_bounds[0] : 0;
    if (t == METRICS_HISTOGRAM && strcmp(name, "escrow_batch_rows") == 0) {
        b = rows_bounds;
        nb = sizeof rows_bounds / sizeof rows_bounds[0];
    }
    metrics_family *f = metrics_family_add(m->reg, t, name, help, labels, b, nb);
    ESC_ASSERT(f != NULL); /* names are literals: a failure is a programmer error */
    return f;
}

static metrics_series *one(node_metrics *m, metrics_type t, const char *name, const char *help)
{
    return metrics_get0(fam(m, t, name, help, NULL));
}

static void register_holds(node_metrics *m)
{
    static const char *const state[] = {"state", NULL};
    m->holds_live = one(m, METRICS_GAUGE, "escrow_holds_live", "Holds in state held, in memory.");
    m->holds_created = one(m, METRICS_COUNTER, "escrow_holds_created_total",
                           "Holds created (reserves committed).");
    metrics_family *ended = fam(m, METRICS_COUNTER, "escrow_holds_ended_total",
                                "Holds that ended, committed, by final state.", state);
    m->ended_converted = metrics_get1(ended, "converted");
    m->ended_cancelled = metrics_get1(ended, "cancelled");
    m->ended_expired = metrics_get1(ended, "expired");
    metrics_family *units =
        fam(m, METRICS_GAUGE, "escrow_units",
            "Units in the segments this node serves, by state (held includes returning).", state);
    m->units_available = metrics_get1(units, "available");
    m->units_held = metrics_get1(units, "held");
    m->units_sold = metrics_get1(units, "sold");
}

static void register_batches(node_metrics *m)
{
    m->batch_rows =
        one(m, METRICS_HISTOGRAM, "escrow_batch_rows", "Rows (decisions) per group commit batch.");
    m->commit_latency = one(m, METRICS_HISTOGRAM, "escrow_commit_latency_seconds",
                            "Round trip of one group commit batch to PostgreSQL.");
    m->batches_failed = one(m, METRICS_COUNTER, "escrow_batches_failed_total",
                            "Group commit batches refused by the database or lost with the "
                            "connection.");
}

static void register_segments(node_metrics *m)
{
    m->fenced = one(m, METRICS_COUNTER, "escrow_segments_fenced_total",
                    "Segments dropped because the database named a newer owner (epoch fence).");
    m->served = one(m, METRICS_GAUGE, "escrow_segments_served", "Segments this node serves now.");
    m->loaded = one(m, METRICS_COUNTER, "escrow_segments_loaded_total",
                    "Segments loaded after the coordinator assigned them.");
    m->dropped = one(m, METRICS_COUNTER, "escrow_segments_dropped_total",
                     "Segments dropped because the coordinator no longer assigns them here.");
    static const char *const kind_outcome[] = {"kind", "outcome", NULL};
    m->transfers =
        fam(m, METRICS_COUNTER, "escrow_transfers_total",
            "Transfer commands executed, by kind (give, receive) and outcome.", kind_outcome);
}

static void register_io(node_metrics *m)
{
    static const char *const conn[] = {"conn", NULL};
    static const char *const names[2] = {"commit", "query"};
    metrics_family *up =
        fam(m, METRICS_GAUGE, "escrow_db_up", "1 when the PostgreSQL connection is usable.", conn);
    metrics_family *down = fam(m, METRICS_COUNTER, "escrow_db_disconnects_total",
                               "PostgreSQL connections lost or not established.", conn);
    metrics_family *re = fam(m, METRICS_COUNTER, "escrow_db_reconnects_total",
                             "PostgreSQL connections re-established after a loss.", conn);
    for (int i = 0; i < 2; i++) {
        m->db_up[i] = metrics_get1(up, names[i]);
        m->db_down[i] = metrics_get1(down, names[i]);
        m->db_reconnects[i] = metrics_get1(re, names[i]);
    }
    static const char *const result[] = {"result", NULL};
    metrics_family *hb =
        fam(m, METRICS_COUNTER, "escrow_heartbeats_total",
            "Heartbeats to the coordinator: sent, failed (not sent), replied.", result);
    m->hb_sent = metrics_get1(hb, "sent");
    m->hb_failed = metrics_get1(hb, "failed");
    m->hb_replied = metrics_get1(hb, "replied");
}

int node_metrics_open(node *n)
{
    if (n->cfg.metrics == NULL) {
        return 0;
    }
    node_metrics *m = esc_xcalloc(1, sizeof *m);
    n->metrics = m;
    int rc = metrics_registry_new(&m->reg);
    if (rc != 0) {
        return rc;
    }
    static const char *const op_status[] = {"op", "status", NULL};
    static const char *const kind[] = {"kind", NULL};
    m->requests = fam(m, METRICS_COUNTER, "escrow_requests_total",
                      "Answers sent to clients, by operation and status.", op_status);
    m->rejections = fam(m, METRICS_COUNTER, "escrow_rejections_total",
                        "Answers other than OK, by status (SOLD_OUT, TRY_LATER, ...).", kind);
    register_holds(m);
    register_batches(m);
    register_segments(m);
    register_io(m);
    return daemon_metrics_start(m->reg, n->cfg.metrics, &m->http, "SEG-METRICS");
}

void node_metrics_free(node *n)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    metrics_http_stop(m->http); /* joins the HTTP thread: nobody reads the registry after */
    metrics_registry_free(m->reg);
    free(m->seen);
    free(m);
    n->metrics = NULL;
}

/* ---- hooks ------------------------------------------------------------------ */

void node_metrics_answer(node *n, int op, int status)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    int o = op > 0 && op < OPS_N ? op : 0;
    int s = status <= 0 && status > ESC_E_LAST_ ? -status : STATUS_N - 1;
    if (m->req[o][s] == NULL) {
        m->req[o][s] = metrics_get2(m->requests, op_names[o], esc_err_name(status));
    }
    metrics_inc(m->req[o][s]);
    if (status == 0) {
        return;
    }
    if (m->rej[s] == NULL) {
        m->rej[s] = metrics_get1(m->rejections, esc_err_name(status));
    }
    metrics_inc(m->rej[s]);
}

void node_metrics_commit(node *n, size_t rows, int64_t us, bool failed)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    metrics_observe(m->batch_rows, (double)rows);
    metrics_observe(m->commit_latency, (double)us / 1e6);
    if (failed) {
        metrics_inc(m->batches_failed);
    }
}

void node_metrics_op_committed(node *n, int kind)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    switch (kind) {
    case SEG_OP_RESERVE:
        metrics_inc(m->holds_created);
        break;
    case SEG_OP_CONFIRM:
        metrics_inc(m->ended_converted);
        break;
    case SEG_OP_RELEASE:
        metrics_inc(m->ended_cancelled);
        break;
    case SEG_OP_EXPIRE:
        metrics_inc(m->ended_expired);
        break;
    default:
        break;
    }
}

void node_metrics_fenced(node *n)
{
    if (n->metrics != NULL) {
        metrics_inc(n->metrics->fenced);
    }
}

void node_metrics_segment(node *n, bool loaded)
{
    if (n->metrics != NULL) {
        metrics_inc(loaded ? n->metrics->loaded : n->metrics->dropped);
    }
}

void node_metrics_transfer(node *n, bool give, const char *outcome)
{
    if (n->metrics != NULL) {
        /* at most 2 x 4 series: looked up per transfer, which is rare */
        metrics_inc(metrics_get2(n->metrics->transfers, give ? "give" : "receive", outcome));
    }
}

void node_metrics_db(node *n, const char *conn, bool up)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    int i = strcmp(conn, "commit") == 0 ? 0 : 1;
    metrics_set(m->db_up[i], up ? 1 : 0);
    if (!up) {
        metrics_inc(m->db_down[i]);
    } else if (m->db_seen_up[i]) {
        metrics_inc(m->db_reconnects[i]);
    }
    m->db_seen_up[i] = m->db_seen_up[i] || up;
}

void node_metrics_heartbeat(node *n, const char *result)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    metrics_inc(strcmp(result, "sent") == 0     ? m->hb_sent
                : strcmp(result, "failed") == 0 ? m->hb_failed
                                                : m->hb_replied);
}

void node_metrics_figures(node *n, size_t i)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    if (i >= m->nseen) {
        size_t cap = m->nseen ? m->nseen : 1024;
        while (cap <= i) {
            cap *= 2;
        }
        m->seen = esc_xrealloc(m->seen, cap * sizeof *m->seen);
        memset(m->seen + m->nseen, 0, (cap - m->nseen) * sizeof *m->seen);
        m->nseen = cap;
    }
    const seg_segment *s = &n->core.segs[i];
    struct unit_seen now = {0, 0, 0, false};
    if (!s->fenced) {
        now = (struct unit_seen){s->available, s->held + s->returning, s->sold, true};
    }
    struct unit_seen *was = &m->seen[i];
    m->served_n += (int64_t)now.served - (int64_t)was->served;
    m->available += now.available - was->available;
    m->held += now.held - was->held;
    m->sold += now.sold - was->sold;
    *was = now;
}

void node_metrics_sample(node *n)
{
    node_metrics *m = n->metrics;
    if (m == NULL) {
        return;
    }
    int64_t now = esc_mono_us();
    if (m->last_sample_us != 0 && now - m->last_sample_us < NODE_METRICS_SAMPLE_MS * 1000) {
        return;
    }
    m->last_sample_us = now;
#ifdef ESC_CHECK_RUNNING_SUMS
    /* sanitizer (test) builds: the kept sums are what a walk finds */
    int64_t served = 0, avail = 0, held = 0, sold = 0;
    for (size_t i = 0; i < n->core.nsegs; i++) {
        const seg_segment *s = &n->core.segs[i];
        if (!s->fenced && !s->touched) { /* a touched one is taken at the next tick */
            served++;
            avail += s->available;
            held += s->held + s->returning;
            sold += s->sold;
        } else if (s->touched && i < m->nseen) {
            served += m->seen[i].served;
            avail += m->seen[i].available;
            held += m->seen[i].held;
            sold += m->seen[i].sold;
        }
    }
    ESC_ASSERT(served == m->served_n && avail == m->available && held == m->held &&
               sold == m->sold);
#endif
    metrics_set(m->served, (double)m->served_n);
    metrics_set(m->units_available, (double)m->available);
    metrics_set(m->units_held, (double)m->held);
    metrics_set(m->units_sold, (double)m->sold);
    metrics_set(m->holds_live, (double)n->core.live_holds);
}
