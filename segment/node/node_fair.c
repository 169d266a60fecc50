/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_fair.c - see node_fair.h.
 */
#include "node_fair.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "escrow_errors.h"
#include "hmap.h"
#include "log.h"
#include "pg_result.h"

/* Slots of the shared bucket table (24 bytes each). */
#define NODE_FAIR_SHARED_SLOTS 4096

static const char sql_limits[] =
    "/* escrow:node-fair */ SELECT tenant_id, rate_per_s, rate_burst, live_holds_max "
    "FROM tenants WHERE rate_per_s IS NOT NULL OR live_holds_max IS NOT NULL LIMIT 65536";

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const node_fair_tenant *)a)->tenant_id,
                  ((const node_fair_tenant *)b)->tenant_id);
}

static node_fair_tenant *find_row(const node_fair *f, const char *tenant_id)
{
    node_fair_tenant key;
    snprintf(key.tenant_id, sizeof key.tenant_id, "%s", tenant_id);
    return f->nrows == 0 ? NULL : bsearch(&key, f->rows, f->nrows, sizeof key, row_cmp);
}

/* ---- rate ------------------------------------------------------------------ */

static bool bucket_take(node_fair_tenant *t, int64_t now_us)
{
    if (t->rate == 0) {
        return true;
    }
    int64_t cap_u = (int64_t)(t->burst ? t->burst : t->rate) * 1000000;
    if (now_us > t->last_us) {
        int64_t add = (now_us - t->last_us) * (int64_t)t->rate;
        t->tokens_u = add > cap_u - t->tokens_u ? cap_u : t->tokens_u + add;
        t->last_us = now_us;
    }
    if (t->tokens_u < 1000000) {
        return false;
    }
    t->tokens_u -= 1000000;
    return true;
}

uint32_t node_fair_rate(const node_fair *f, const char *tenant_id)
{
    const node_fair_tenant *t = find_row(f, tenant_id);
    return t != NULL && t->own_rate ? t->rate : f->cfg.rate;
}

bool node_fair_admit(node_fair *f, const char *tenant_id, int64_t now_us, char *why, size_t why_len)
{
    node_fair_tenant *t = find_row(f, tenant_id);
    bool ok =
        t != NULL && t->own_rate
            ? bucket_take(t, now_us)
            : f->shared.slots == NULL ||
                  ratelim_take(&f->shared, hmap_hash_bytes(tenant_id, strlen(tenant_id), f->seed),
                               now_us);
    if (!ok) {
        f->refused_rate++;
        snprintf(why, why_len,
                 "rate limited: this tenant is over %u requests/s on this node; retry later",
                 node_fair_rate(f, tenant_id));
    }
    return ok;
}

/* ---- live holds --------------------------------------------------------------- */

void node_fair_apply(node_fair *f)
{
    seg_core *c = f->core;
    c->tenant_holds_max = f->cfg.live_holds_max;
    for (size_t i = 0; i < c->ntenants; i++) {
        const node_fair_tenant *t = find_row(f, c->tenants[i]->tenant_id);
        c->tenants[i]->live_holds_max =
            t != NULL && t->own_holds ? t->live_holds_max : f->cfg.live_holds_max;
    }
}

int node_fair_set_defaults(node_fair *f, uint32_t rate, uint32_t burst, uint32_t live_holds_max)
{
    int rc = ratelim_set(&f->shared, NODE_FAIR_SHARED_SLOTS, rate, burst);
    if (rc != 0) {
        return rc;
    }
    f->cfg.rate = rate;
    f->cfg.burst = burst;
    f->cfg.live_holds_max = live_holds_max;
    node_fair_apply(f);
    return 0;
}

/* ---- the rows ------------------------------------------------------------------ */

/* Copies row i of res into t, keeping the bucket of the same tenant and rate. */
static void take_row(node_fair *f, PGresult *res, int i, node_fair_tenant *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->tenant_id, sizeof t->tenant_id, "%s", PQgetvalue(res, i, 0));
    t->own_rate = !PQgetisnull(res, i, 1);
    t->rate = (uint32_t)pg_result_i64_or(res, i, 1, 0);
    t->burst = (uint32_t)pg_result_i64_or(res, i, 2, 0);
    t->own_holds = !PQgetisnull(res, i, 3);
    t->live_holds_max = (uint32_t)pg_result_i64_or(res, i, 3, 0);
    const node_fair_tenant *old = find_row(f, t->tenant_id);
    if (old != NULL && old->own_rate && old->rate == t->rate && old->burst == t->burst) {
        t->tokens_u = old->tokens_u;
        t->last_us = old->last_us;
    } else {
        t->tokens_u = (int64_t)(t->burst ? t->burst : t->rate) * 1000000; /* starts full */
        t->last_us = esc_mono_us();
    }
}

static void on_rows(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node_fair *f = arg;
    f->loading = false;
    if (err->code != 0) {
        f->reload_failures++;
        ESC_LOG(ESC_LOG_WARN, "SEG-FAIR", "cannot read the tenants' limits (%s); keeping %zu",
                err->message, f->nrows);
        return;
    }
    size_t n = (size_t)PQntuples(res);
    node_fair_tenant *rows = n ? calloc(n, sizeof *rows) : NULL;
    if (n > 0 && rows == NULL) {
        f->reload_failures++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        take_row(f, res, (int)i, &rows[i]);
    }
    if (!f->loaded || n != f->nrows) {
        ESC_LOG(ESC_LOG_INFO, "SEG-FAIR", "%zu tenants with limits of their own", n);
    }
    free(f->rows);
    f->rows = rows;
    f->nrows = n;
    if (n > 1) { /* in strcmp's order for bsearch (the database's collation may differ) */
        qsort(f->rows, f->nrows, sizeof *f->rows, row_cmp);
    }
    f->loaded = true;
    f->reloads++;
    node_fair_apply(f);
}

static void start_load(node_fair *f)
{
    if (f->loading || f->closing > 0 || !pgx_ready(&f->conn)) {
        return;
    }
    if (pgx_query(&f->conn, NULL, sql_limits, 0, NULL, on_rows, f) == 0) {
        f->loading = true;
    }
}

static void on_timer(uv_timer_t *t)
{
    node_fair *f = t->data;
    if (f->conn.state == PGX_DOWN) {
        pgx_reconnect(&f->conn);
        return;
    }
    start_load(f);
}

static void on_state(pgx_conn *c, bool up, void *arg)
{
    (void)c;
    node_fair *f = arg;
    if (up) {
        start_load(f);
    } else {
        f->loading = false; /* the timer reconnects */
    }
}

/* ---- life cycle ------------------------------------------------------------------ */

int node_fair_start(node_fair *f, uv_loop_t *loop, seg_core *core, const node_fair_config *cfg)
{
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    f->core = core;
    f->seed = auth_random_u64();
    int rc = ratelim_init(&f->shared, NODE_FAIR_SHARED_SLOTS, cfg->rate, cfg->burst);
    if (rc != 0) {
        return rc;
    }
    node_fair_apply(f);
    if ((rc = pgx_open(loop, &f->conn, cfg->dsn, "fair", NULL, NULL, 0, on_state, f)) != 0) {
        return rc;
    }
    f->conn_open = true;
    if (uv_timer_init(loop, &f->timer) != 0) {
        return ESC_EINTERNAL;
    }
    f->timer_open = true;
    f->timer.data = f;
    if (uv_timer_start(&f->timer, on_timer, NODE_FAIR_RELOAD_MS, NODE_FAIR_RELOAD_MS) != 0) {
        return ESC_EINTERNAL;
    }
    ESC_LOG(ESC_LOG_INFO, "SEG-FAIR",
            "per tenant by default: %u requests/s (burst %u), %u live holds; "
            "escrowctl tenant limits sets a tenant's own",
            cfg->rate, cfg->burst ? cfg->burst : cfg->rate, cfg->live_holds_max);
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    node_fair *f = h->data;
    if (--f->closing == 0 && f->close_done != NULL) {
        f->close_done(f->close_arg);
    }
}

static void on_conn_closed(uv_handle_t *h)
{
    pgx_conn *c = h->data;
    node_fair *f = c->state_arg;
    if (--f->closing == 0 && f->close_done != NULL) {
        f->close_done(f->close_arg);
    }
}

bool node_fair_close(node_fair *f, void (*done)(void *arg), void *arg)
{
    if (f->closing > 0 || (!f->timer_open && !f->conn_open)) {
        return false;
    }
    f->close_done = done;
    f->close_arg = arg;
    f->closing = 1; /* held until both closes were started */
    if (f->timer_open) {
        f->timer_open = false;
        f->closing++;
        uv_close((uv_handle_t *)&f->timer, on_closed);
    }
    if (f->conn_open) {
        f->conn_open = false;
        if (pgx_close(&f->conn, on_conn_closed)) {
            f->closing++;
        }
    }
    return --f->closing > 0;
}

void node_fair_fini(node_fair *f)
{
    ratelim_fini(&f->shared);
    free(f->rows);
    f->rows = NULL;
    f->nrows = 0;
}
