/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_xfer.c - see coord_xfer.h.
 *
 * A transfer between two segments is planned by a policy pass (coord_pass.c:
 * INSERT ... 'planned'),
 * given by the donor node (GIVE in its heartbeat replies until it reports
 * sent or cancelled) and received by the receiver node (RECEIVE until it
 * reports received). The nodes write those states in their own group
 * commits, conditionally, so a command sent twice is applied once and a
 * late one is answered STALE; then the coordinator re-reads the row.
 * The coordinator commits the ends that touch items.unallocated itself:
 * a restock transfer is inserted already 'sent' together with
 * unallocated -= q, and a transfer to unallocated is received with
 * unallocated += q (and a pending reduce applied), conditional on 'sent'.
 */
#include "coord_xfer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_state.h"
#include "coord_db.h"
#include "coord_failpoint.h"
#include "coord_metrics.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_result.h"

static void xfer_done(coord *c, coord_xfer *x, const char *how)
{
    ESC_LOG(ESC_LOG_INFO, "COORD-XFER",
            "transfer=%" PRIu64 " item=%s/%s from=%" PRIu64 " to=%" PRIu64 " qty=%" PRId64 " %s",
            x->transfer_id, x->item->tenant_id, x->item->item_id, x->from, x->to, x->qty, how);
    c->n_xfers_done++;
    c->db.xfer_changes++;
    coord_metrics_xfer_completed(c, x->reason,
                                 strncmp(how, "cancelled", 9) == 0 ? "cancelled" : "received");
    coord_cat_drop_xfer(&c->cat, x);
}

/* The transfer a statement's answer is about (its id is the query's arg), no
 * longer busy; NULL if it has left the catalog meanwhile. */
static coord_xfer *xfer_answered(coord *c, void *arg)
{
    coord_xfer *x = coord_cat_xfer(&c->cat, (uint64_t)(uintptr_t)arg);
    if (x != NULL) {
        x->busy = false;
    }
    return x;
}

/* ---- re-reading one transfer ---------------------------------------------------- */

static const char sql_reread[] =
    "/* escrow:coord-xfer */ SELECT state, qty FROM transfers WHERE transfer_id = $1";

static void on_reread(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    coord_xfer *x = xfer_answered(c, arg);
    if (x == NULL) {
        return;
    }
    if (err->code != 0) {
        return; /* the next STALE or catalog read tries again */
    }
    if (PQntuples(res) != 1) {
        xfer_done(c, x, "vanished");
        return;
    }
    const char *st = PQgetvalue(res, 0, 0);
    if (strcmp(st, "received") == 0 || strcmp(st, "cancelled") == 0) {
        xfer_done(c, x, st);
        return;
    }
    bool became_sent = x->state == COORD_XF_PLANNED && strcmp(st, "sent") == 0;
    x->state = strcmp(st, "sent") == 0 ? COORD_XF_SENT : COORD_XF_PLANNED;
    x->qty = pg_result_i64_or(res, 0, 1, 0);
    c->db.xfer_changes++;
    if (became_sent) {
        coord_failpoint_xfer_sent(x);
    }
}

static void reread(coord *c, coord_xfer *x)
{
    if (x->busy) {
        return;
    }
    char id[24];
    snprintf(id, sizeof id, "%" PRIu64, x->transfer_id);
    const char *v[1] = {id};
    if (coord_db_push(c, sql_reread, 1, v, on_reread, (void *)(uintptr_t)x->transfer_id) == 0) {
        x->busy = true;
    }
}

void coord_xfer_results(coord *c, const wire_heartbeat *hb)
{
    for (size_t i = 0; i < hb->nxfers; i++) {
        const wire_transfer_result *r = &hb->xfers[i];
        coord_xfer *x = coord_cat_xfer(&c->cat, r->transfer_id);
        if (x == NULL || x->busy) {
            continue; /* already closed, or being committed here */
        }
        switch (r->outcome) {
        case WIRE_XFER_SENT:
            if (x->state == COORD_XF_PLANNED) {
                x->state = COORD_XF_SENT;
                x->qty = r->qty;
                c->db.xfer_changes++;
                coord_failpoint_xfer_sent(x);
            }
            break;
        case WIRE_XFER_RECEIVED:
            xfer_done(c, x, "received");
            break;
        case WIRE_XFER_CANCELLED:
            xfer_done(c, x, "cancelled (the donor had nothing)");
            break;
        case WIRE_XFER_STALE:
            reread(c, x);
            break;
        default:
            break;
        }
    }
}

/* ---- receiving into unallocated ------------------------------------------------------ */

static const char sql_to_unallocated[] =
    "/* escrow:coord-xfer */ WITH t AS (UPDATE transfers SET state = 'received', "
    "received_at = now() WHERE transfer_id = $1 AND state = 'sent' AND to_segment IS NULL "
    "RETURNING tenant_id, item_id, qty), "
    "c AS (SELECT i.tenant_id, i.item_id, t.qty, "
    "LEAST(i.reduce_pending, i.unallocated + t.qty) AS red FROM items i JOIN t "
    "USING (tenant_id, item_id)), "
    "u AS (UPDATE items i SET unallocated = i.unallocated + c.qty - c.red, "
    "total = i.total - c.red, reduce_pending = i.reduce_pending - c.red FROM c "
    "WHERE i.tenant_id = c.tenant_id AND i.item_id = c.item_id "
    "RETURNING i.total, i.unallocated, i.reduce_pending), "
    "o1 AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT tenant_id, item_id, 'transfer_received', qty, 'coordinator' FROM c), "
    "o2 AS (INSERT INTO outbox (tenant_id, item_id, kind, qty, actor) "
    "SELECT tenant_id, item_id, 'reduced', red, 'coordinator' FROM c WHERE red > 0) "
    "SELECT total, unallocated, reduce_pending FROM u";

static void on_received_here(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    coord_xfer *x = xfer_answered(c, arg);
    if (x == NULL) {
        return;
    }
    if (err->code != 0) {
        if (err->conn_lost && err->code != ESC_ECLOSED) {
            coord_db_unknown(c);
        }
        return;
    }
    if (PQntuples(res) != 1) {
        reread(c, x); /* not 'sent' any more */
        return;
    }
    coord_item *it = x->item;
    it->total = pg_result_i64_or(res, 0, 0, 0);
    it->unallocated = pg_result_i64_or(res, 0, 1, 0);
    it->reduce_pending = pg_result_i64_or(res, 0, 2, 0);
    xfer_done(c, x, "received into unallocated");
}

void coord_xfer_tick(coord *c)
{
    for (size_t i = 0; i < c->cat.nxfers; i++) {
        coord_xfer *x = c->cat.xfers[i];
        if (x->state != COORD_XF_SENT || x->to != 0 || x->busy || x->item->write_busy) {
            continue;
        }
        char id[24];
        snprintf(id, sizeof id, "%" PRIu64, x->transfer_id);
        const char *v[1] = {id};
        if (coord_db_push(c, sql_to_unallocated, 1, v, on_received_here,
                          (void *)(uintptr_t)x->transfer_id) == 0) {
            x->busy = true;
        }
    }
}
