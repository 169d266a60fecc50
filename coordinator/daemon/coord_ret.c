/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_ret.c - see coord_ret.h.
 */
#include "coord_ret.h"

#include <stdlib.h>
#include <string.h>

#include "coord_periodic.h"
#include "coord_state.h"
#include "log.h"
#include "pgx.h"

#define TAG "/* escrow:coord-retention */ "

static const char sql_run[] = TAG "SELECT count(*), COALESCE(string_agg(part, ' '), '') "
                                  "FROM escrow_retention_run()";

struct coord_ret {
    coord_periodic job;
};

static void on_ran(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg)
{
    (void)pc;
    coord_periodic *p = arg;
    p->busy = false;
    if (err->code != 0 || PQnfields(res) != 2 || PQntuples(res) != 1) {
        if (!p->closing) {
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

static bool tick(coord_periodic *p)
{
    return pgx_query(&p->db, NULL, sql_run, 0, NULL, on_ran, p) == 0;
}

int coord_ret_start(coord *c)
{
    if (c->cfg.retention_s == 0) {
        ESC_LOG(ESC_LOG_INFO, "COORD-RETENTION", "retention schedule off (--retention-s 0)");
        return 0;
    }
    struct coord_ret *r = esc_xcalloc(1, sizeof *r);
    c->ret = r;
    r->job.tick = tick;
    uint64_t ms = (uint64_t)c->cfg.retention_s * 1000;
    int rc = coord_periodic_start(c, &r->job, "retention", ms, ms);
    if (rc == 0) {
        ESC_LOG(ESC_LOG_DEBUG, "COORD-RETENTION", "retention run every %u s", c->cfg.retention_s);
    }
    return rc;
}

void coord_ret_close(coord *c)
{
    if (c->ret != NULL) {
        coord_periodic_close(&c->ret->job);
    }
}

void coord_ret_free(coord *c)
{
    free(c->ret);
    c->ret = NULL;
}
