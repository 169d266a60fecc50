/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_counts.c - see coord_counts.h.
 */
#include "coord_counts.h"

#include <stdlib.h>

#include "coord_db.h"
#include "coord_metrics.h"
#include "pg_array.h"
#include "pg_result.h"

#define TAG "/* escrow:coord-counts */ "

static const char sql_counts[] =
    TAG "SELECT segment_id, available, held, sold FROM segments "
        "WHERE segment_id = ANY ($1::bigint[])";

/* The counters of the rows read; a row that differs from its owner's
 * report at the same epoch is read again at the next poll. */
static void on_counts(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)arg;
    c->db.counts_running = false;
    if (err->code != 0) {
        return; /* the items stay unread: their next report marks them again */
    }
    coord_metrics_catalog_rows(c, "counts", (uint64_t)PQntuples(res));
    for (int i = 0; i < PQntuples(res); i++) {
        coord_seg *s = coord_cat_seg(&c->cat, (uint64_t)pg_result_i64_or(res, i, 0, 0));
        if (s == NULL) {
            continue;
        }
        int64_t av = pg_result_i64_or(res, i, 1, 0), held = pg_result_i64_or(res, i, 2, 0),
                sold = pg_result_i64_or(res, i, 3, 0);
        coord_cat_set_db_counts(&c->cat, s, av, held, sold);
        bool agrees = s->available == av && s->held == held && s->sold == sold;
        if (s->reported && s->rep_epoch == s->epoch && !agrees) {
            coord_cat_mark(&c->cat, s->item, COORD_WORK_COUNTS);
        }
    }
}

void coord_counts_poll(coord *c)
{
    if (c->db.counts_running || c->stopping) {
        return;
    }
    size_t n = 0;
    coord_item **items = coord_cat_take(&c->cat, COORD_WORK_COUNTS, &n);
    if (n == 0) {
        return;
    }
    pg_array ids;
    pg_array_init(&ids);
    size_t nsegs = 0;
    for (size_t i = 0; i < n; i++) {
        if (i >= COORD_COUNTS_ITEMS_MAX) {
            coord_cat_mark(&c->cat, items[i], COORD_WORK_COUNTS); /* the next poll's */
            continue;
        }
        for (size_t k = 0; k < ESC_SEGMENTS_PER_ITEM_MAX; k++) {
            if (items[i]->segs[k] != NULL) {
                pg_array_i64(&ids, (int64_t)items[i]->segs[k]->segment_id);
                nsegs++;
            }
        }
    }
    if (nsegs > 0) {
        const char *params[1] = {pg_array_text(&ids)};
        if (coord_db_push(c, sql_counts, 1, params, on_counts, NULL) == 0) {
            c->db.counts_running = true;
        } else {
            for (size_t i = 0; i < n && i < COORD_COUNTS_ITEMS_MAX; i++) {
                coord_cat_mark(&c->cat, items[i], COORD_WORK_COUNTS); /* the queue is full */
            }
        }
    }
    pg_array_fini(&ids);
}
