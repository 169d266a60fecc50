/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node.c - see node.h. The node's life cycle: node_start opens the parts
 * in order (credentials, segments, batches, metrics, socket, timers,
 * connections, heartbeats) and wires the upcalls; node_stop stops reading
 * and lets the batches finish; the stop completes (every handle closed, so
 * uv_run returns) once nothing is in flight and, under a coordinator, the
 * coordinator heard "stopping". Signals are the daemon skeleton's
 * (daemon.h): they call node_stop.
 */
#include "node.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "conn_guard.h"
#include "escrow_errors.h"
#include "log.h"
#include "node_assign.h"
#include "node_commit.h"
#include "node_db.h"
#include "node_load.h"
#include "node_metrics.h"
#include "node_net.h"

static void on_sweep(uv_timer_t *t)
{
    node *n = t->data;
    int64_t now = esc_wall_ms();
    node_commit_sweep(n, now);
    seg_core_trim(&n->core, now);
    node_assign_take_touched(n); /* the unit gauges without a walk */
    node_metrics_sample(n);
}

static int start_sweep(node *n)
{
    if (uv_timer_init(n->loop, &n->sweep_timer) != 0) {
        return ESC_EIO;
    }
    n->handles_open++;
    n->sweep_timer.data = n;
    if (uv_timer_start(&n->sweep_timer, on_sweep, n->cfg.sweep_ms, n->cfg.sweep_ms) != 0) {
        return ESC_EIO;
    }
    return 0;
}

static void log_stopped(const node *n)
{
    const node_stats *st = &n->stats;
    ESC_LOG(ESC_LOG_INFO, "SEG-STOP",
            "node=%s stopped requests=%" PRIu64 " holds=%" PRIu64 " confirms=%" PRIu64
            " releases=%" PRIu64 " expiries=%" PRIu64 " sold_out=%" PRIu64 " try_later=%" PRIu64
            " segment_empty=%" PRIu64 " batches=%" PRIu64 " rows=%" PRIu64
            " rows_avg=%.1f rows_max=%" PRIu64 " failed_batches=%" PRIu64 " heartbeats=%" PRIu64
            " loaded=%" PRIu64 " dropped=%" PRIu64 " fenced=%" PRIu64 " transfers=%" PRIu64
            " commit_avg_ms=%.2f commit_max_ms=%.2f auth_refused=%" PRIu64 " rate_limited=%" PRIu64
            " waited_turn=%" PRIu64 " fair_slots=%u fair_cuts=%" PRIu64,
            n->cfg.node_id, st->requests, st->reserves_ok, st->confirms, st->releases, st->expiries,
            st->rejected_sold_out, st->rejected_try_later, st->rejected_segment_empty, st->batches,
            st->batch_rows, st->batches ? (double)st->batch_rows / (double)st->batches : 0.0,
            st->batch_rows_max, st->batch_failures, st->heartbeats, st->segments_loaded,
            st->segments_dropped, st->fenced_segments, st->transfers_done,
            st->batches ? (double)st->commit_us_total / (double)st->batches / 1000.0 : 0.0,
            (double)st->commit_us_max / 1000.0, n->auth.refused, n->rate_limited, n->admit.waited,
            n->admit.share.slots, n->admit.share.cuts);
}

static void on_handle_closed(uv_handle_t *h)
{
    node *n = h->data;
    n->handles_open--;
}

/* Completes a stop once nothing is in flight: closes every handle, so
 * uv_run returns after the last close callback. */
static void finish_stop(node *n)
{
    if (!n->stopping || !node_commit_idle(n) || n->query_busy || n->handles_open < 0) {
        return;
    }
    if (uv_is_closing((uv_handle_t *)&n->sweep_timer)) {
        return;
    }
    if (n->managed && !node_assign_stop_done(n)) {
        return; /* the coordinator hears "stopping" first: it hands our segments over at once */
    }
    node_assign_close(n);
    uv_close((uv_handle_t *)&n->sweep_timer, on_handle_closed);
    node_net_close(n);
    node_db_close(n);
    log_stopped(n);
}

/* The progress upcall (node.h). */
static void on_progress(node *n)
{
    if (!n->stopping && !node_commit_full(n) && node_net_resume(n) != 0) {
        node_stop(n);
        return;
    }
    finish_stop(n);
}

static void wire_upcalls(node *n)
{
    n->up.redecide = node_net_redecide;
    n->up.progress = on_progress;
    if (n->managed) {
        n->up.report_soon = node_assign_soon;
        n->up.query_first = node_load_next;
    }
}

int node_start(node *n, uv_loop_t *loop, const node_config *cfg)
{
    memset(n, 0, sizeof *n);
    n->loop = loop;
    n->cfg = *cfg;
    n->sock = -1;
    n->hb.sock = -1;
    if (n->cfg.sweep_ms == 0) {
        n->cfg.sweep_ms = 50;
    }
    int rc = seg_core_init(&n->core, ESC_NODE_SEGMENTS_MAX);
    if (rc != 0 || (rc = node_net_guard_start(n)) != 0) {
        return rc;
    }
    n->managed = cfg->coordinator != NULL;
    n->core.managed = n->managed;
    wire_upcalls(n);
    if (n->cfg.advertise == NULL) {
        n->cfg.advertise = cfg->nlisten ? cfg->listen[0] : "";
    }
    if (!n->managed && (rc = node_load_owned(n)) != 0) {
        return rc;
    }
    node_commit_init(n);
    conn_guard_cfg guard = {cfg->conn_per_peer, cfg->conn_idle_s};
    if ((rc = conn_guard_start(&guard, 0, "escrow-segment")) != 0 ||
        (rc = node_metrics_open(n)) != 0 || (rc = node_net_open(n)) != 0 ||
        (rc = start_sweep(n)) != 0 || (rc = node_db_open(n)) != 0 ||
        (n->managed && (rc = node_assign_open(n)) != 0)) {
        return rc;
    }
    ESC_LOG(ESC_LOG_INFO, "SEG-READY",
            "node=%s segments=%zu items=%zu live_holds=%zu listen=%s mode=%s%s", cfg->node_id,
            n->core.nsegs, n->core.nitems, n->core.live_holds, cfg->nlisten ? cfg->listen[0] : "-",
            n->managed ? "managed coordinator=" : "static", n->managed ? cfg->coordinator : "");
    return 0;
}

/* The coordinator counts as reached while its last reply is this recent
 * (many heartbeats: one lost reply is not a reason to leave the pool). */
#define NODE_READY_COORD_SILENCE_MS 5000

bool node_ready(const node *n, char *why, size_t cap)
{
    const char *conn = !pgx_connected(&n->query_conn) ? "query" : NULL;
    for (int i = 0; i < n->nstreams && conn == NULL; i++) {
        conn = pgx_connected(&n->streams[i].conn) ? NULL : "commit";
    }
    if (conn != NULL) {
        snprintf(why, cap, "database not connected (%s connection)", conn);
        return false;
    }
    if (!n->schema_ok) {
        snprintf(why, cap, "database schema not checked yet");
        return false;
    }
    if (!n->managed) {
        return true; /* static: the segments were loaded before the loop started */
    }
    int64_t silence = esc_mono_us() / 1000 - n->hb.last_reply_ms;
    if (n->hb.last_reply_ms == 0 || silence > NODE_READY_COORD_SILENCE_MS) {
        snprintf(why, cap, "coordinator %s not reached%s", n->cfg.coordinator,
                 n->hb.last_reply_ms == 0 ? " yet" : " for more than 5 s");
        return false;
    }
    if (n->hb.applied_corr == 0 || n->load.wanted || n->load.busy) {
        snprintf(why, cap, "assignment not loaded yet");
        return false;
    }
    return true;
}

void node_stop(node *n)
{
    if (n->stopping) {
        return;
    }
    node_net_pause(n);
    n->stopping = true;
    node_commit_kick(n);
    finish_stop(n);
}

void node_fini(node *n)
{
    node_net_fini(n);
    node_assign_fini(n);
    node_metrics_free(n);
    node_commit_fini(n);
    seg_core_fini(&n->core);
}
