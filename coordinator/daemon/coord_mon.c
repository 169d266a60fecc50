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
#include "pg_array.h"
#include "pg_result.h"
#include "sqlstate.h"

#define TAG "/* escrow:coord-monitor */ "
#define DETAIL_MAX 4096

/* One statement, one snapshot, over the items named by $1 (tenants) and $2
 * (item ids) alone: the `conservation` and `segment_holds_agree_recent`
 * views' arithmetic (common/schema/current/), restricted to those items so
 * that PostgreSQL reads their rows by index instead of every item's (an
 * item's sums in a LATERAL subquery: a join to an aggregate of g was planned
 * as a nested loop that re-aggregated g per item). The recent holds are
 * read as the view reads them (the open days), for the checked segments
 * only. Columns: kind, tenant, item, segment, a, b, c, d,
 * n, now (unix s):
 *   item:    total, accounted, held, sold (a violating item)
 *   segment: held, holds' live qty, sold, holds' qty sold (a violating segment)
 *   count:   items, segments (the whole catalog's count(*) when $3, else
 *            -1), items checked, segments checked (one row) */
static const char sql_check[] =
    TAG "WITH k AS (SELECT DISTINCT u.t AS tenant_id, u.i AS item_id "
        "FROM unnest($1::text[], $2::text[]) AS u(t, i)), "
        "g AS MATERIALIZED (SELECT x.segment_id, x.tenant_id, x.item_id, x.available, x.held, "
        "x.sold FROM k JOIN segments x ON x.tenant_id = k.tenant_id AND x.item_id = k.item_id), "
        "h AS (SELECT segment_id, sum(qty) FILTER (WHERE state = 'held') AS live, "
        "sum(qty_sold) FILTER (WHERE state = 'converted') AS sold FROM holds "
        "WHERE created_day >= COALESCE((SELECT m.through + 1 FROM holds_closed_mark m), "
        "'-infinity') AND segment_id IN (SELECT segment_id FROM g) GROUP BY segment_id), "
        "f AS (SELECT tenant_id, item_id, sum(qty) AS in_flight FROM transfers "
        "WHERE state = 'sent' GROUP BY tenant_id, item_id), "
        "c AS (SELECT i.tenant_id, i.item_id, i.total, i.unallocated, "
        "COALESCE(s.available, 0) + COALESCE(s.held, 0) + COALESCE(s.sold, 0) "
        "+ COALESCE(f.in_flight, 0) + i.unallocated AS accounted, "
        "COALESCE(s.held, 0) AS held, COALESCE(s.sold, 0) AS sold "
        "FROM k JOIN items i ON i.tenant_id = k.tenant_id AND i.item_id = k.item_id "
        "CROSS JOIN LATERAL (SELECT sum(x.available) AS available, sum(x.held) AS held, "
        "sum(x.sold) AS sold FROM segments x "
        "WHERE x.tenant_id = i.tenant_id AND x.item_id = i.item_id) s "
        "LEFT JOIN f ON f.tenant_id = i.tenant_id AND f.item_id = i.item_id), "
        "a AS (SELECT g.*, COALESCE(h.live, 0) AS holds_live, "
        "COALESCE(h.sold, 0) + COALESCE(cl.sold, 0) + COALESCE(r.sold, 0) AS holds_sold "
        "FROM g LEFT JOIN h USING (segment_id) LEFT JOIN holds_closed cl USING (segment_id) "
        "LEFT JOIN holds_retired r USING (segment_id)) "
        "SELECT * FROM ((SELECT 'item'::text AS kind, tenant_id, item_id, 0::bigint AS seg, "
        "total::bigint, accounted::bigint, held::bigint, sold::bigint, 0::bigint, "
        "extract(epoch FROM now())::float8 FROM c "
        "WHERE accounted <> total OR held + sold > total OR unallocated < 0) "
        "UNION ALL (SELECT 'segment', tenant_id, item_id, segment_id, held::bigint, "
        "holds_live::bigint, sold::bigint, holds_sold::bigint, 0, "
        "extract(epoch FROM now())::float8 FROM a "
        "WHERE held <> holds_live OR sold <> holds_sold OR available < 0 OR held < 0 OR sold < 0) "
        "UNION ALL SELECT 'count', '', '', 0, "
        "CASE WHEN $3::boolean THEN (SELECT count(*) FROM items) ELSE -1 END, "
        "CASE WHEN $3::boolean THEN (SELECT count(*) FROM segments) ELSE -1 END, "
        "(SELECT count(*) FROM c), (SELECT count(*) FROM g), 0, "
        "extract(epoch FROM now())::float8) r ORDER BY 1, 2, 3, 4";
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
    /* what the check in flight looks at (borrowed items: they live as long
     * as the catalog) */
    coord_item **checked;
    size_t nchecked, checked_cap;
    pg_array a_tenants, a_items; /* their keys, for the statement */
    /* the items whose last check found a violation: checked every time */
    coord_item **bad;
    size_t nbad, bad_cap;
    /* the catalog's size at the last count(*) (monitor.items, .segments) */
    bool counting; /* the check in flight counts */
    bool counted;
    int64_t items, segments;
    size_t cat_items, cat_segs; /* the coordinator's catalog then */
    unsigned long cat_sweeps;   /* the monitor list's round robin then */
    /* metrics (NULL when --metrics is off) */
    metrics_family *f_ok, *f_items, *f_segs, *f_div, *f_ts, *f_checks, *f_checked, *f_sweeps;
};

/* A summary of one check. */
typedef struct mon_result {
    int64_t items_bad, segs_bad, items, segments, checked_items, checked_segs;
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
    m->f_checked = metrics_family_add(reg, METRICS_COUNTER, "escrow_conservation_items_checked_total",
                                      "Items the conservation checks looked at: the changed ones, "
                                      "the violating ones and a round-robin slice of the rest.",
                                      NULL, NULL, 0);
    m->f_sweeps = metrics_family_add(reg, METRICS_COUNTER_SET, "escrow_conservation_sweeps_total",
                                     "Rounds of the conservation checks' round robin over every "
                                     "item of the catalog.",
                                     NULL, NULL, 0);
    /* every name is a literal: NULL here is a programmer error */
    ESC_ASSERT(m->f_ok && m->f_items && m->f_segs && m->f_ts && m->f_checks && m->f_checked &&
               m->f_sweeps);
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
    metrics_add(metrics_get0(m->f_checked), (uint64_t)r->checked_items);
    metrics_set(metrics_get0(m->f_sweeps),
                (double)m->job.c->cat.work[COORD_WORK_MONITOR].sweeps);
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

/* Forgets what the last checks found on the items just checked. */
static void clear_checked(coord_mon *m)
{
    for (size_t i = 0; i < m->nchecked; i++) {
        m->checked[i]->mon_bad = false;
        m->checked[i]->mon_segs_bad = 0;
    }
}

/* The list of violating items: those found now, and those found before
 * and not checked now (a check capped at COORD_MON_BATCH_MAX). Sums them
 * into r. */
static void rebuild_bad(coord_mon *m, mon_result *r)
{
    coord_item **old = m->bad;
    size_t nold = m->nbad;
    m->bad = NULL;
    m->nbad = m->bad_cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        coord_item **v = pass == 0 ? old : m->checked;
        size_t n = pass == 0 ? nold : m->nchecked;
        for (size_t i = 0; i < n; i++) {
            coord_item *it = v[i];
            if ((!it->mon_bad && it->mon_segs_bad == 0) || it->mon_listed) {
                continue;
            }
            it->mon_listed = true;
            if (m->nbad == m->bad_cap) {
                m->bad_cap = m->bad_cap ? m->bad_cap * 2 : 16;
                m->bad = esc_xrealloc(m->bad, m->bad_cap * sizeof *m->bad);
            }
            m->bad[m->nbad++] = it;
        }
    }
    free(old);
    for (size_t i = 0; i < m->nbad; i++) {
        m->bad[i]->mon_listed = false;
        r->items_bad += m->bad[i]->mon_bad;
        r->segs_bad += m->bad[i]->mon_segs_bad;
    }
}

/* One violating row: the item's state, the log and m->detail. */
static void take_row(coord_mon *m, const PGresult *res, int i, int *logged, size_t *len)
{
    coord_item *it =
        coord_cat_item(&m->job.c->cat, PQgetvalue(res, i, K_TENANT), PQgetvalue(res, i, K_ITEM));
    if (it != NULL) {
        if (strcmp(PQgetvalue(res, i, K_KIND), "item") == 0) {
            it->mon_bad = true;
        } else {
            it->mon_segs_bad++;
        }
    }
    if ((*logged)++ >= COORD_MON_LOG_MAX) {
        return;
    }
    char line[512];
    describe(res, i, line, sizeof line);
    ESC_LOG(ESC_LOG_WARN, "COORD-INVARIANT", "conservation violated: %s", line);
    int w = snprintf(m->detail + *len, sizeof m->detail - *len, "%s%s", *len ? "\n" : "", line);
    if (w > 0 && (size_t)w < sizeof m->detail - *len) {
        *len += (size_t)w;
    }
}

/* Reads the counts, logs the violations, fills m->detail, and keeps what
 * each checked item showed. */
static void read_result(coord_mon *m, const PGresult *res, mon_result *r)
{
    memset(r, 0, sizeof *r);
    size_t len = 0;
    int logged = 0;
    m->detail[0] = '\0';
    clear_checked(m);
    for (int i = 0; i < PQntuples(res); i++) {
        r->now_s = strtod(PQgetvalue(res, i, K_NOW), NULL);
        if (strcmp(PQgetvalue(res, i, K_KIND), "count") == 0) {
            if (m->counting && pg_result_i64_or(res, i, K_A, -1) >= 0) {
                m->items = pg_result_i64_or(res, i, K_A, 0);
                m->segments = pg_result_i64_or(res, i, K_B, 0);
                m->counted = true;
            }
            r->checked_items = pg_result_i64_or(res, i, K_C, 0);
            r->checked_segs = pg_result_i64_or(res, i, K_D, 0);
            continue;
        }
        take_row(m, res, i, &logged, &len);
    }
    rebuild_bad(m, r);
    r->items = m->items;
    r->segments = m->segments;
}

static void finish(coord_mon *m)
{
    m->job.busy = false;
}

static void remark_checked(coord_mon *m)
{
    for (size_t i = 0; i < m->nchecked; i++) {
        coord_cat_mark(&m->job.c->cat, m->checked[i], COORD_WORK_MONITOR);
    }
    m->counted = m->counted && !m->counting;
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
        remark_checked(m); /* looked at again by the next check */
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

/* The items this check looks at, into m->checked: the violating ones, the
 * marked ones (their figures, transfers or segments changed) and the
 * sweep's slice of the rest, at most COORD_MON_BATCH_MAX (the rest stay
 * marked for the next check). */
static void pick(coord_mon *m)
{
    coord *c = m->job.c;
    for (size_t i = 0; i < m->nbad; i++) {
        coord_cat_mark(&c->cat, m->bad[i], COORD_WORK_MONITOR);
    }
    size_t k = coord_cat_sweep_slice(c->cat.nitems, c->cfg.check_ms, c->cfg.check_sweep_ms);
    size_t least = c->cat.nitems < COORD_MON_SLICE_MIN ? c->cat.nitems : COORD_MON_SLICE_MIN;
    coord_cat_sweep(&c->cat, COORD_WORK_MONITOR, k > least ? k : least);
    size_t n = 0;
    coord_item **v = coord_cat_take(&c->cat, COORD_WORK_MONITOR, &n);
    m->nchecked = 0;
    pg_array_reset(&m->a_tenants);
    pg_array_reset(&m->a_items);
    for (size_t i = 0; i < n; i++) {
        if (m->nchecked == COORD_MON_BATCH_MAX) {
            coord_cat_mark(&c->cat, v[i], COORD_WORK_MONITOR);
            continue;
        }
        if (m->nchecked == m->checked_cap) {
            m->checked_cap = m->checked_cap ? m->checked_cap * 2 : 64;
            m->checked = esc_xrealloc(m->checked, m->checked_cap * sizeof *m->checked);
        }
        m->checked[m->nchecked++] = v[i];
        pg_array_str(&m->a_tenants, v[i]->tenant_id);
        pg_array_str(&m->a_items, v[i]->item_id);
    }
}

static bool tick(coord_periodic *p)
{
    coord_mon *m = (coord_mon *)p;
    coord *c = p->c;
    if (!coord_leader_serving(c)) {
        return false;
    }
    m->started_us = esc_mono_us();
    pick(m);
    /* the whole catalog is counted once per round of the sweep, and when
     * the coordinator's catalog grew or shrank since */
    const coord_dirty *d = &c->cat.work[COORD_WORK_MONITOR];
    m->counting = !m->counted || d->sweeps != m->cat_sweeps || c->cat.nitems != m->cat_items ||
                  c->cat.nsegs != m->cat_segs;
    if (m->counting) {
        m->cat_sweeps = d->sweeps;
        m->cat_items = c->cat.nitems;
        m->cat_segs = c->cat.nsegs;
    }
    const char *v[3] = {pg_array_text(&m->a_tenants), pg_array_text(&m->a_items),
                        m->counting ? "true" : "false"};
    if (pgx_query(&p->db, NULL, sql_check, 3, v, on_checked, m) != 0) {
        remark_checked(m);
        return false;
    }
    return true;
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
    pg_array_init(&m->a_tenants);
    pg_array_init(&m->a_items);
    metrics_registry *reg = coord_metrics_registry(c);
    if (reg != NULL) {
        register_metrics(m, reg, c->cfg.metrics_labels);
    }
    m->job.tick = tick;
    m->job.db_state = on_db_state;
    int rc = coord_periodic_start(c, &m->job, "monitor", c->cfg.check_ms, c->cfg.check_ms);
    if (rc == 0) {
        ESC_LOG(ESC_LOG_INFO, "COORD-INVARIANT",
                "conservation check every %u ms, every item at least every %u ms", c->cfg.check_ms,
                c->cfg.check_sweep_ms);
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
    if (c->mon != NULL) {
        pg_array_fini(&c->mon->a_tenants);
        pg_array_fini(&c->mon->a_items);
        free(c->mon->checked);
        free(c->mon->bad);
    }
    free(c->mon);
    c->mon = NULL;
}
