/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_ret.c - see coord_ret.h.
 */
#include "coord_ret.h"

#include <stdlib.h>
#include <string.h>

#include "coord_state.h"
#include "escrow_errors.h"
#include "log.h"
#include "pgx.h"

#define TAG "/* escrow:coord-retention */ "

static const char sql_run[] = TAG "SELECT count(*), COALESCE(string_agg(part, ' '), '') "
                                  "FROM escrow_retention_run()";

struct coord_ret {
    coord *c;
    pgx_conn db;
    uv_timer_t timer;
    bool busy;
    bool closing;
};

static void on_ran(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg)
{
    (void)pc;
    struct coord_ret *r = arg;
    r->busy = false;
    if (err->code != 0 || PQnfields(res) != 2 || PQntuples(res) != 1) {
        if (!r->closing) {
            ESC_LOG(ESC_LOG_WARN, "COORD-RETENTION", "retention run failed: %s",
                    err->code != 0 ? err->message : "unexpected answer");
        }
        return;
    }
    if (strcmp(PQgetvalue(res, 0, 0), "0") != 0) {
        ESC_LOG(ESC_LOG_INFO, "COORD-RETENTION", "dropped %s partitions: %s", PQgetvalue(res, 0, 0),
                PQgetvalue(res, 0, 1));
    }
}

static void on_timer(uv_timer_t *t)
{
    struct coord_ret *r = t->data;
    if (r->busy || r->closing) {
        return;
    }
    if (!pgx_ready(&r->db)) {
        pgx_reconnect(&r->db); /* no-op unless it is down */
        return;
    }
    if (pgx_query(&r->db, NULL, sql_run, 0, NULL, on_ran, r) == 0) {
        r->busy = true;
    }
}

static void on_db_state(pgx_conn *pc, bool up, void *arg)
{
    (void)pc;
    struct coord_ret *r = arg;
    if (!up) {
        r->busy = false; /* the query in progress was failed already */
    }
}

int coord_ret_start(coord *c)
{
    if (c->cfg.retention_s == 0) {
        ESC_LOG(ESC_LOG_INFO, "COORD-RETENTION", "retention schedule off (--retention-s 0)");
        return 0;
    }
    struct coord_ret *r = esc_xcalloc(1, sizeof *r);
    r->c = c;
    c->ret = r;
    int rc = pgx_open(c->loop, &r->db, c->cfg.dsn, "retention", NULL, NULL, 0, on_db_state, r);
    if (rc != 0) {
        return rc;
    }
    if (uv_timer_init(c->loop, &r->timer) != 0) {
        return ESC_EIO;
    }
    c->handles_open++;
    r->timer.data = r;
    uint64_t ms = (uint64_t)c->cfg.retention_s * 1000;
    if (uv_timer_start(&r->timer, on_timer, ms, ms) != 0) {
        return ESC_EIO;
    }
    ESC_LOG(ESC_LOG_DEBUG, "COORD-RETENTION", "retention run every %u s", c->cfg.retention_s);
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    struct coord_ret *r = h->data;
    r->c->handles_open--;
}

static void on_db_closed(uv_handle_t *h)
{
    struct coord_ret *r = ((pgx_conn *)h->data)->state_arg;
    r->c->handles_open--;
}

void coord_ret_close(coord *c)
{
    struct coord_ret *r = c->ret;
    if (r == NULL || r->closing) {
        return;
    }
    r->closing = true;
    if (r->timer.loop != NULL && !uv_is_closing((uv_handle_t *)&r->timer)) {
        uv_close((uv_handle_t *)&r->timer, on_timer_closed); /* initialised by start */
    }
    c->handles_open++;
    if (!pgx_close(&r->db, on_db_closed)) {
        c->handles_open--;
    }
}

void coord_ret_free(coord *c)
{
    free(c->ret);
    c->ret = NULL;
}
