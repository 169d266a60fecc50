/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_metrics.c - see coord_metrics.h. Fixed handles are looked up at
 * open; the few labelled ones (reason, admin op) are looked up when they
 * happen, which is at most a few times per second.
 */
#include "coord_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"
#include "metrics_http.h"

struct coord_metrics {
    metrics_registry *reg; /* owned */
    metrics_http *http;    /* owned; NULL until started */
    metrics_series *nodes_up, *nodes_draining, *nodes_down;
    metrics_series *lease_expiries, *epoch_changes, *loop_stalls;
    metrics_series *segs_active, *segs_draining, *segs_unserved, *segs_reported, *view_gap;
    metrics_series *xf_planned_now, *xf_sent_now;
    metrics_family *xf_planned, *xf_completed, *admin;
    metrics_series *routes, *collapses, *heartbeats, *resyncs, *hb_in, *hb_out, *passes;
    metrics_family *polls, *cat_rows;
    metrics_family *db_up, *db_down, *db_re;
    bool db_seen_up[2]; /* coord, monitor */
    int64_t last_sample_us;
};

static const char *const admin_ops[WIRE_ADMIN_LAST_] = {
    "none",     "restock",   "reduce", "pause", "resume",  "split",
    "collapse", "rebalance", "retire", "drain", "undrain", "reload"};

static metrics_family *fam(coord_metrics *m, metrics_type t, const char *name, const char *help,
                           const char *const *labels)
{
    metrics_family *f = metrics_family_add(m->reg, t, name, help, labels, NULL, 0);
    ESC_ASSERT(f != NULL); /* literal names: a failure is a programmer error */
    return f;
}

static void register_catalog(coord_metrics *m)
{
    static const char *const state[] = {"state", NULL};
    metrics_family *f = fam(m, METRICS_GAUGE, "escrow_coord_nodes",
                            "Segment nodes known to the coordinator, by state.", state);
    m->nodes_up = metrics_get1(f, "up");
    m->nodes_draining = metrics_get1(f, "draining");
    m->nodes_down = metrics_get1(f, "down");
    m->lease_expiries =
        metrics_get0(fam(m, METRICS_COUNTER, "escrow_coord_lease_expiries_total",
                         "Nodes that missed their lease (segments revoked).", NULL));
    m->loop_stalls = metrics_get0(
        fam(m, METRICS_COUNTER, "escrow_coord_loop_stalls_total",
            "Stalls of the coordinator's own loop long enough to give every node a lease of grace.",
            NULL));
    m->epoch_changes = metrics_get0(
        fam(m, METRICS_COUNTER, "escrow_coord_epoch_changes_total",
            "Segments granted to a node with a raised epoch (committed grants).", NULL));
    f = fam(m, METRICS_GAUGE, "escrow_coord_segments", "Live segments, by state.", state);
    m->segs_active = metrics_get1(f, "active");
    m->segs_draining = metrics_get1(f, "draining");
    m->segs_unserved = metrics_get0(fam(m, METRICS_GAUGE, "escrow_coord_segments_unserved",
                                        "Segments without a live owner serving them now.", NULL));
    m->segs_reported = metrics_get0(
        fam(m, METRICS_GAUGE, "escrow_coord_segments_reported",
            "Served segments whose owner's figures at their epoch this coordinator holds.", NULL));
    m->view_gap = metrics_get0(
        fam(m, METRICS_GAUGE, "escrow_coord_view_gap_units",
            "Units by which the owners' last reports (available + held + sold per segment) "
            "differ from the segment rows of the last catalog read, summed over segments.",
            NULL));
}

static void register_transfers(coord_metrics *m)
{
    static const char *const state[] = {"state", NULL};
    static const char *const reason[] = {"reason", NULL};
    static const char *const reason_outcome[] = {"reason", "outcome", NULL};
    metrics_family *f = fam(m, METRICS_GAUGE, "escrow_coord_transfers_in_flight",
                            "Open transfers, by state (sent units are in no segment).", state);
    m->xf_planned_now = metrics_get1(f, "planned");
    m->xf_sent_now = metrics_get1(f, "sent");
    m->xf_planned = fam(m, METRICS_COUNTER, "escrow_coord_transfers_planned_total",
                        "Transfers planned (restocks: sent at once), by reason.", reason);
    m->xf_completed = fam(m, METRICS_COUNTER, "escrow_coord_transfers_completed_total",
                          "Transfers closed, by reason and outcome.", reason_outcome);
}

static void register_misc(coord_metrics *m)
{
    static const char *const op_outcome[] = {"op", "outcome", NULL};
    static const char *const conn[] = {"conn", NULL};
    m->routes = metrics_get0(fam(m, METRICS_COUNTER, "escrow_coord_routes_published_total",
                                 "Routing tables published to subscribers.", NULL));
    m->collapses = metrics_get0(fam(m, METRICS_COUNTER, "escrow_coord_collapses_total",
                                    "Items collapsed into one tail segment.", NULL));
    m->heartbeats = metrics_get0(fam(m, METRICS_COUNTER, "escrow_coord_heartbeats_total",
                                     "Node heartbeats answered.", NULL));
    static const char *const dir[] = {"direction", NULL};
    metrics_family *hbf =
        fam(m, METRICS_COUNTER, "escrow_coord_heartbeat_bytes_total",
            "Bytes of node heartbeats (in) and of the replies to them (out).", dir);
    m->hb_in = metrics_get1(hbf, "in");
    m->hb_out = metrics_get1(hbf, "out");
    m->resyncs =
        metrics_get0(fam(m, METRICS_COUNTER, "escrow_coord_heartbeat_resyncs_total",
                         "Full segment reports asked of nodes (their summary differed).", NULL));
    static const char *const read[] = {"read", NULL};
    m->polls = fam(m, METRICS_COUNTER, "escrow_coord_catalog_polls_total",
                   "Catalog reads, by kind: the whole catalog (full), the rows changed since "
                   "the last read (changes), or none changed (skipped).",
                   read);
    m->cat_rows = fam(m, METRICS_COUNTER, "escrow_coord_catalog_rows_total",
                      "Catalog rows read (items, nodes, segments, transfers), by kind of read: "
                      "the whole catalog (full) or the rows changed since the last read (changes).",
                      read);
    m->passes = metrics_get0(fam(m, METRICS_COUNTER, "escrow_coord_policy_passes_total",
                                 "Policy passes run (one item each).", NULL));
    m->admin = fam(m, METRICS_COUNTER, "escrow_coord_admin_requests_total",
                   "escrowctl operations answered, by operation and outcome.", op_outcome);
    m->db_up =
        fam(m, METRICS_GAUGE, "escrow_db_up", "1 when the PostgreSQL connection is usable.", conn);
    m->db_down = fam(m, METRICS_COUNTER, "escrow_db_disconnects_total",
                     "PostgreSQL connections lost or not established.", conn);
    m->db_re = fam(m, METRICS_COUNTER, "escrow_db_reconnects_total",
                   "PostgreSQL connections re-established after a loss.", conn);
}

int coord_metrics_open(coord *c)
{
    if (c->cfg.metrics == NULL) {
        return 0;
    }
    coord_metrics *m = esc_xcalloc(1, sizeof *m);
    c->metrics = m;
    int rc = metrics_registry_new(&m->reg);
    if (rc != 0) {
        return rc;
    }
    register_catalog(m);
    register_transfers(m);
    register_misc(m);
    return daemon_metrics_start(m->reg, c->cfg.metrics, &m->http, "COORD-METRICS");
}

void coord_metrics_free(coord *c)
{
    coord_metrics *m = c->metrics;
    if (m == NULL) {
        return;
    }
    metrics_http_stop(m->http); /* joins the HTTP thread first */
    metrics_registry_free(m->reg);
    free(m);
    c->metrics = NULL;
}

metrics_registry *coord_metrics_registry(coord *c)
{
    return c->metrics != NULL ? c->metrics->reg : NULL;
}

/* ---- hooks ------------------------------------------------------------------ */

void coord_metrics_lease_expired(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->lease_expiries);
    }
}

void coord_metrics_loop_stall(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->loop_stalls);
    }
}

void coord_metrics_grant(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->epoch_changes);
    }
}

void coord_metrics_xfer_planned(coord *c, const char *reason)
{
    if (c->metrics != NULL) {
        metrics_inc(metrics_get1(c->metrics->xf_planned, reason));
    }
}

void coord_metrics_xfer_completed(coord *c, const char *reason, const char *outcome)
{
    if (c->metrics != NULL) {
        metrics_inc(metrics_get2(c->metrics->xf_completed, reason ? reason : "unknown", outcome));
    }
}

void coord_metrics_route_published(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->routes);
    }
}

void coord_metrics_catalog_poll(coord *c, const char *read)
{
    if (c->metrics != NULL) {
        metrics_inc(metrics_get1(c->metrics->polls, read));
    }
}

void coord_metrics_catalog_rows(coord *c, const char *read, uint64_t n)
{
    if (c->metrics != NULL) {
        metrics_add(metrics_get1(c->metrics->cat_rows, read), n);
    }
}

void coord_metrics_policy_pass(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->passes);
    }
}

void coord_metrics_collapse(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->collapses);
    }
}

void coord_metrics_heartbeat(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->heartbeats);
    }
}

void coord_metrics_heartbeat_bytes(coord *c, bool in, size_t bytes)
{
    if (c->metrics != NULL) {
        metrics_add(in ? c->metrics->hb_in : c->metrics->hb_out, bytes);
    }
}

void coord_metrics_resync(coord *c)
{
    if (c->metrics != NULL) {
        metrics_inc(c->metrics->resyncs);
    }
}

void coord_metrics_admin(coord *c, unsigned op, int status)
{
    if (c->metrics != NULL) {
        const char *name = op < WIRE_ADMIN_LAST_ ? admin_ops[op] : "unknown";
        metrics_inc(metrics_get2(c->metrics->admin, name, esc_err_name(status)));
    }
}

void coord_metrics_db(coord *c, const char *conn, bool up)
{
    coord_metrics *m = c->metrics;
    if (m == NULL) {
        return;
    }
    bool *seen = &m->db_seen_up[strcmp(conn, "coord") == 0 ? 0 : 1];
    metrics_set(metrics_get1(m->db_up, conn), up ? 1 : 0);
    if (!up) {
        metrics_inc(metrics_get1(m->db_down, conn));
    } else if (*seen) {
        metrics_inc(metrics_get1(m->db_re, conn));
    }
    *seen = *seen || up;
}

void coord_metrics_sample(coord *c)
{
    coord_metrics *m = c->metrics;
    int64_t now = esc_mono_us();
    if (m == NULL ||
        (m->last_sample_us != 0 && now - m->last_sample_us < COORD_METRICS_SAMPLE_MS * 1000)) {
        return;
    }
    m->last_sample_us = now;
    size_t up = 0, draining = 0, down = 0;
    for (size_t i = 0; i < c->cat.nnodes; i++) {
        const coord_node *n = c->cat.nodes[i];
        if (!n->alive) {
            down++;
        } else if (n->drained || n->stopping) {
            draining++;
        } else {
            up++;
        }
    }
    size_t active = 0, sdraining = 0, unserved = 0, reported = 0;
    int64_t gap = 0;
    for (size_t i = 0; i < c->cat.nsegs; i++) {
        const coord_seg *s = c->cat.segs[i];
        int64_t d =
            (s->available + s->held + s->sold) - (s->db_available + s->db_held + s->db_sold);
        gap += s->reported ? (d < 0 ? -d : d) : 0;
        active += s->state == WIRE_SEG_ACTIVE;
        sdraining += s->state == WIRE_SEG_DRAINING;
        unserved += s->state != WIRE_SEG_RETIRED && !coord_cat_seg_served(s);
        reported += coord_cat_seg_served(s) && s->reported && s->rep_epoch == s->epoch;
    }
    size_t planned = 0, sent = 0;
    for (size_t i = 0; i < c->cat.nxfers; i++) {
        planned += c->cat.xfers[i]->state == COORD_XF_PLANNED;
        sent += c->cat.xfers[i]->state == COORD_XF_SENT;
    }
    metrics_set(m->nodes_up, (double)up);
    metrics_set(m->nodes_draining, (double)draining);
    metrics_set(m->nodes_down, (double)down);
    metrics_set(m->segs_active, (double)active);
    metrics_set(m->segs_draining, (double)sdraining);
    metrics_set(m->segs_unserved, (double)unserved);
    metrics_set(m->segs_reported, (double)reported);
    metrics_set(m->view_gap, (double)gap);
    metrics_set(m->xf_planned_now, (double)planned);
    metrics_set(m->xf_sent_now, (double)sent);
}
