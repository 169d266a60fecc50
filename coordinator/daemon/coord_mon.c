/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_mon.c - see coord_mon.h. One check in flight at a time: the timer
 * only starts a check when the previous one (and its write to the monitor
 * table) finished.
 */
#include "coord_mon.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_periodic.h"
#include "coord_state.h"
#include "coord_leader.h"
#include "coord_metrics.h"
#include "log.h"
#include "metrics.h"
#include "pg_result.h"
#include "sqlstate.h"

#define TAG "/* escrow:coord-monitor */ "
#define STR_(x) #x
#define STR(x) STR_(x)
#define DETAIL_MAX 4096

/* One statement, one snapshot. Columns: kind, tenant, item, segment,
 * a, b, c, d, violations of this kind (before LIMIT), now (unix s).
 *   item:    total, accounted, held, sold
 *   segment: held, holds' live qty, sold, holds' qty sold
 *   count:   items, segments (one row) */
static const char sql_check[] = TAG
    "(SELECT 'item'::text, tenant_id, item_id, 0::bigint, total::bigint, "
    "(available + held + sold + in_flight + unallocated)::bigint, held::bigint, sold::bigint, "
    "count(*) OVER (), extract(epoch FROM now())::float8 "
    "FROM conservation WHERE NOT ok OR unallocated < 0 "
    "ORDER BY tenant_id, item_id LIMIT " STR(
        COORD_MON_ITEMS_MAX) ") "
                             "UNION ALL (SELECT 'segment', s.tenant_id, s.item_id, "
                             "s.segment_id, s.held::bigint, "
                             "a.holds_live::bigint, s.sold::bigint, a.holds_sold::bigint, "
                             "count(*) OVER (), "
                             "extract(epoch FROM now())::float8 "
                             "FROM segments s JOIN segment_holds_agree_recent a USING (segment_id) "
                             "WHERE NOT a.ok OR s.available < 0 OR s.held < 0 OR s.sold < 0 "
                             "ORDER BY s.segment_id LIMIT " STR(
                                 COORD_MON_ITEMS_MAX) ") "
                                                      "UNION ALL SELECT 'count', '', '', 0, "
                                                      "(SELECT count(*) FROM items), "
                                                      "(SELECT count(*) FROM segments), 0, 0, "
                                                      "0, extract(epoch FROM now())::float8";
enum { K_KIND, K_TENANT, K_ITEM, K_SEG, K_A, K_B, K_C, K_D, K_N, K_NOW, K_COLS_ };

/* Written only while this coordinator's epoch leads (coord_leader.h): this
 * connection's statement is its own fence. */
static const char sql_write[] =
    TAG "INSERT INTO monitor (name, ok, violations, items, segments, checked_at, check_ms, detail) "
        "SELECT 'conservation', $1::boolean, $2::bigint, $3::bigint, $4::bigint, "
        "to_timestamp($5::float8), $6::integer, $7 FROM coord_leader WHERE epoch = $8::bigint "
        "FOR SHARE ON CONFLICT (name) DO UPDATE SET "
        "ok = EXCLUDED.ok, violations = EXCLUDED.violations, items = EXCLUDED.items, "
        "segments = EXCLUDED.segments, checked_at = EXCLUDED.checked_at, "
        "check_ms = EXCLUDED.check_ms, detail = EXCLUDED.detail";

struct coord_mon {
    coord_periodic job; /* first: the job's callbacks get it; busy: a check or its write */
    bool was_violated;  /* the last completed check found a violation */
    bool warned_table;  /* "no monitor table" was logged */
    int64_t started_us;
    char detail[DETAIL_MAX];
    /* metrics (NULL when --metrics is off) */
    metrics_family *f_ok, *f_items, *f_segs, *f_div, *f_ts, *f_checks;
};

/* A summary of one check. */
typedef struct mon_result {
    int64_t items_bad, segs_bad, items, segments;
    double now_s;
} mon_result;

/* ---- metrics ------------------------------------------------------------------ */

/* The per-item divergence names the tenant and the item: registered only
 * with --metrics-labels on (m->f_div stays NULL otherwise). */
static void register_metrics(coord_mon *m, metrics_registry *reg, bool labels)
{
    static const char *const item[] = {"tenant", "item", NULL};
    static const char *const result[] = {"result", NULL};
    m->f_ok =
        metrics_family_add(reg, METRICS_GAUGE, "escrow_conservation_ok",
                           "1 when the last conservation check found no violation.", NULL, NULL, 0);
    m->f_items =
        metrics_family_add(reg, METRICS_GAUGE, "escrow_conservation_violations",
                           "Items violating conservation at the last check.", NULL, NULL, 0);
    m->f_segs = metrics_family_add(
        reg, METRICS_GAUGE, "escrow_conservation_segment_violations",
        "Segments whose counters disagree with their holds (or are negative) at the last check.",
        NULL, NULL, 0);
    if (labels) {
        m->f_div = metrics_family_add(reg, METRICS_GAUGE, "escrow_conservation_divergence_units",
                                      "Per violating item: total minus the units accounted for.",
                                      item, NULL, 0);
        ESC_ASSERT(m->f_div != NULL);
    }
    m->f_ts =
        metrics_family_add(reg, METRICS_GAUGE, "escrow_conservation_last_check_timestamp_seconds",
                           "When the last completed conservation check took its snapshot "
                           "(unix time).",
                           NULL, NULL, 0);
    m->f_checks = metrics_family_add(reg, METRICS_COUNTER, "escrow_conservation_checks_total",
                                     "Conservation checks, by result (ok, violated, failed).",
                                     result, NULL, 0);
    /* every name is a literal: NULL here is a programmer error */
    ESC_ASSERT(m->f_ok && m->f_items && m->f_segs && m->f_ts && m->f_checks);
}

static void export_divergence(coord_mon *m, const PGresult *res)
{
    metrics_family_clear(m->f_div); /* only items that violate now */
    for (int i = 0; i < PQntuples(res); i++) {
        if (strcmp(PQgetvalue(res, i, K_KIND), "item") == 0) {
            int64_t total = pg_result_i64_or(res, i, K_A, 0);
            int64_t accounted = pg_result_i64_or(res, i, K_B, 0);
            metrics_set(
                metrics_get2(m->f_div, PQgetvalue(res, i, K_TENANT), PQgetvalue(res, i, K_ITEM)),
                (double)(total - accounted));
        }
    }
}

static void export_result(coord_mon *m, const PGresult *res, const mon_result *r)
{
    if (m->f_ok == NULL) {
        return;
    }
    if (m->f_div != NULL) {
        export_divergence(m, res);
    }
    bool ok = r->items_bad == 0 && r->segs_bad == 0;
    metrics_set(metrics_get0(m->f_ok), ok ? 1 : 0);
    metrics_set(metrics_get0(m->f_items), (double)r->items_bad);
    metrics_set(metrics_get0(m->f_segs), (double)r->segs_bad);
    metrics_set(metrics_get0(m->f_ts), r->now_s);
    metrics_inc(metrics_get1(m->f_checks, ok ? "ok" : "violated"));
}

/* ---- one check ------------------------------------------------------------------- */

static void on_written(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg);

/* One line per violation for the log and monitor.detail. */
static void describe(const PGresult *res, int i, char *line, size_t cap)
{
    const char *t = PQgetvalue(res, i, K_TENANT);
    const char *it = PQgetvalue(res, i, K_ITEM);
    if (strcmp(PQgetvalue(res, i, K_KIND), "item") == 0) {
        int64_t total = pg_result_i64_or(res, i, K_A, 0);
        int64_t acc = pg_result_i64_or(res, i, K_B, 0);
        snprintf(line, cap,
                 "item=%s/%s total=%" PRId64 " accounted=%" PRId64 " divergence=%" PRId64
                 " held=%s sold=%s",
                 t, it, total, acc, total - acc, PQgetvalue(res, i, K_C), PQgetvalue(res, i, K_D));
    } else {
        snprintf(line, cap, "segment=%s item=%s/%s held=%s (holds say %s) sold=%s (holds say %s)",
                 PQgetvalue(res, i, K_SEG), t, it, PQgetvalue(res, i, K_A), PQgetvalue(res, i, K_B),
                 PQgetvalue(res, i, K_C), PQgetvalue(res, i, K_D));
    }
}

/* Reads the counts, logs the violations, fills m->detail. */
static void read_result(coord_mon *m, const PGresult *res, mon_result *r)
{
    memset(r, 0, sizeof *r);
    size_t len = 0;
    int logged = 0;
    m->detail[0] = '\0';
    for (int i = 0; i < PQntuples(res); i++) {
        const char *kind = PQgetvalue(res, i, K_KIND);
        r->now_s = strtod(PQgetvalue(res, i, K_NOW), NULL);
        if (strcmp(kind, "count") == 0) {
            r->items = pg_result_i64_or(res, i, K_A, 0);
            r->segments = pg_result_i64_or(res, i, K_B, 0);
            continue;
        }
        int64_t n = pg_result_i64_or(res, i, K_N, 0);
        *(strcmp(kind, "item") == 0 ? &r->items_bad : &r->segs_bad) = n;
        if (logged++ >= COORD_MON_LOG_MAX) {
            continue;
        }
        char line[512];
        describe(res, i, line, sizeof line);
        ESC_LOG(ESC_LOG_WARN, "COORD-INVARIANT", "conservation violated: %s", line);
        int w = snprintf(m->detail + len, sizeof m->detail - len, "%s%s", len ? "\n" : "", line);
        if (w > 0 && (size_t)w < sizeof m->detail - len) {
            len += (size_t)w;
        }
    }
}

static void finish(coord_mon *m)
{
    m->job.busy = false;
}

static void on_checked(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg)
{
    coord_mon *m = arg;
    if (err->code != 0 || PQnfields(res) != K_COLS_) {
        if (!m->job.closing) {
            ESC_LOG(ESC_LOG_WARN, "COORD-INVARIANT", "conservation check failed: %s",
                    err->code != 0 ? err->message : "unexpected columns");
        }
        if (m->f_checks != NULL) {
            metrics_inc(metrics_get1(m->f_checks, "failed"));
        }
        finish(m);
        return;
    }
    mon_result r;
    read_result(m, res, &r);
    export_result(m, res, &r);
    bool ok = r.items_bad == 0 && r.segs_bad == 0;
    if (ok && m->was_violated) {
        ESC_LOG(ESC_LOG_INFO, "COORD-INVARIANT", "conservation holds again (items=%" PRId64 ")",
                r.items);
    }
    m->was_violated = !ok;
    char v_ok[2], v_bad[24], v_items[24], v_segs[24], v_now[40], v_ms[16];
    snprintf(v_ok, sizeof v_ok, "%s", ok ? "t" : "f");
    snprintf(v_bad, sizeof v_bad, "%" PRId64, r.items_bad + r.segs_bad);
    snprintf(v_items, sizeof v_items, "%" PRId64, r.items);
    snprintf(v_segs, sizeof v_segs, "%" PRId64, r.segments);
    snprintf(v_now, sizeof v_now, "%.6f", r.now_s);
    snprintf(v_ms, sizeof v_ms, "%u", m->job.c->cfg.check_ms);
    char v_epoch[24];
    snprintf(v_epoch, sizeof v_epoch, "%" PRIu64, m->job.c->lead.epoch);
    const char *v[8] = {v_ok, v_bad, v_items, v_segs, v_now, v_ms, m->detail, v_epoch};
    if (pgx_query(pc, NULL, sql_write, 8, v, on_written, m) != 0) {
        finish(m);
    }
}

static void on_written(pgx_conn *pc, PGresult *res, const pgx_err *err, void *arg)
{
    (void)pc;
    (void)res;
    coord_mon *m = arg;
    bool no_table = sqlstate_is(err->sqlstate, SQLSTATE_UNDEFINED_TABLE);
    if (err->code != 0 && !m->job.closing && (!m->warned_table || !no_table)) {
        m->warned_table = m->warned_table || no_table;
        ESC_LOG(ESC_LOG_WARN, "COORD-INVARIANT", "cannot record the check: %s%s", err->message,
                no_table ? " (run escrowctl migrate)" : "");
    }
    finish(m);
}

static bool tick(coord_periodic *p)
{
    coord_mon *m = (coord_mon *)p;
    if (!coord_leader_serving(p->c)) {
        return false;
    }
    m->started_us = esc_mono_us();
    return pgx_query(&p->db, NULL, sql_check, 0, NULL, on_checked, m) == 0;
}

static void on_db_state(coord_periodic *p, bool up)
{
    coord_metrics_db(p->c, "monitor", up);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int coord_mon_start(coord *c)
{
    coord_mon *m = esc_xcalloc(1, sizeof *m);
    c->mon = m;
    metrics_registry *reg = coord_metrics_registry(c);
    if (reg != NULL) {
        register_metrics(m, reg, c->cfg.metrics_labels);
    }
    m->job.tick = tick;
    m->job.db_state = on_db_state;
    int rc = coord_periodic_start(c, &m->job, "monitor", c->cfg.check_ms, c->cfg.check_ms);
    if (rc == 0) {
        ESC_LOG(ESC_LOG_DEBUG, "COORD-INVARIANT", "conservation check every %u ms",
                c->cfg.check_ms);
    }
    return rc;
}

void coord_mon_close(coord *c)
{
    if (c->mon != NULL) {
        coord_periodic_close(&c->mon->job);
    }
}

void coord_mon_free(coord *c)
{
    free(c->mon);
    c->mon = NULL;
}
