/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_import_db.c - see ctl_import_db.h.
 *
 * The file's rows live in a temporary table for the session (one COPY,
 * indexed by their position idx), so the conflict check and every chunk are
 * single statements over it: no statement per item. A chunk inserts its
 * items with ON CONFLICT DO NOTHING and the segments of exactly the items
 * it inserted (RETURNING), each split as item create splits (ctl_num_split,
 * computed here and sent as a bigint[] column).
 */
#include "ctl_import_db.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_num.h"
#include "escrow_errors.h"

#define TAG "/* escrow:ctl-item-import */ "

static const char sql_region[] = TAG "SELECT 1 FROM regions WHERE region = $1";
static const char sql_table[] =
    TAG "CREATE TEMP TABLE import_rows (idx bigint PRIMARY KEY, line bigint NOT NULL, "
        "tenant_id text NOT NULL, item_id text NOT NULL, total bigint NOT NULL, "
        "segments integer NOT NULL, max_per_order integer NOT NULL, "
        "max_per_buyer integer NOT NULL, hold_ttl_ms integer NOT NULL, split bigint[] NOT NULL)";
static const char sql_copy[] = TAG "COPY import_rows FROM STDIN";
static const char sql_analyze[] = TAG "ANALYZE import_rows";
/* Rows whose item exists with the same values: unchanged, set aside. */
static const char sql_unchanged[] =
    TAG "DELETE FROM import_rows r USING items i WHERE i.tenant_id = r.tenant_id "
        "AND i.item_id = r.item_id AND (i.total, i.segments_wanted, i.max_per_order, "
        "i.max_per_buyer, i.hold_ttl_ms) = (r.total, r.segments, r.max_per_order, "
        "r.max_per_buyer, r.hold_ttl_ms)";
static const char sql_analyze_catalog[] = TAG "ANALYZE items, segments";

/* The rows in [$1, $2) whose item exists with other values. */
static const char sql_conflicts[] =
    TAG "SELECT r.line, r.tenant_id, r.item_id, i.total, i.segments_wanted, i.max_per_order, "
        "i.max_per_buyer, i.hold_ttl_ms FROM import_rows r JOIN items i USING (tenant_id, item_id) "
        "WHERE r.idx >= $1 AND r.idx < $2 AND (i.total, i.segments_wanted, i.max_per_order, "
        "i.max_per_buyer, i.hold_ttl_ms) IS DISTINCT FROM (r.total, r.segments, r.max_per_order, "
        "r.max_per_buyer, r.hold_ttl_ms) ORDER BY r.idx";

static const char sql_tenants[] =
    TAG "INSERT INTO tenants (tenant_id) SELECT DISTINCT tenant_id FROM import_rows "
        "WHERE idx >= $1 AND idx < $2 ORDER BY 1 ON CONFLICT DO NOTHING";
static const char sql_items[] =
    TAG "WITH ins AS (INSERT INTO items (tenant_id, item_id, total, unallocated, max_per_order, "
        "max_per_buyer, hold_ttl_ms, segments_wanted) SELECT tenant_id, item_id, total, 0, "
        "max_per_order, max_per_buyer, hold_ttl_ms, segments FROM import_rows "
        "WHERE idx >= $1 AND idx < $2 ORDER BY idx ON CONFLICT DO NOTHING "
        "RETURNING tenant_id, item_id), "
        "segs AS (INSERT INTO segments (tenant_id, item_id, region, seg_no, node_id, epoch, "
        "available) SELECT r.tenant_id, r.item_id, $3, (g.n - 1)::integer, NULL, 0, g.available "
        "FROM ins JOIN import_rows r USING (tenant_id, item_id) "
        "CROSS JOIN LATERAL unnest(r.split) WITH ORDINALITY AS g(available, n) "
        "WHERE r.idx >= $1 AND r.idx < $2 ORDER BY r.idx, g.n RETURNING 1) "
        "SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM segs), "
        "(SELECT COALESCE(sum(segments), 0) FROM import_rows r JOIN ins USING (tenant_id, item_id) "
        "WHERE r.idx >= $1 AND r.idx < $2), "
        "(SELECT count(*) FROM import_rows WHERE idx >= $1 AND idx < $2)";

/* COPY text: ids are printable ASCII without spaces; only '\' needs an
 * escape. */
static size_t copy_id(char *dst, const char *id)
{
    size_t n = 0;
    for (const char *p = id; *p != '\0'; p++) {
        if (*p == '\\') {
            dst[n++] = '\\';
        }
        dst[n++] = *p;
    }
    return n;
}

/* One COPY line for rows[i] into buf (large enough: CTL_IMPORT_LINE_MAX). */
#define LINE_MAX_                                                                                  \
    (2 * (ESC_TENANT_LEN_MAX + ESC_ITEM_LEN_MAX) + 21 * (ESC_SEGMENTS_PER_ITEM_MAX + 8))
static size_t copy_line(char *buf, const ctl_import_row *r, size_t idx)
{
    size_t n = (size_t)sprintf(buf, "%zu\t%ld\t", idx, r->line);
    n += copy_id(buf + n, r->tenant);
    buf[n++] = '\t';
    n += copy_id(buf + n, r->item);
    n += (size_t)sprintf(buf + n, "\t%" PRId64 "\t%d\t%d\t%d\t%d\t{", r->total, r->segments,
                         r->max_per_order, r->max_per_buyer, r->hold_ttl_ms);
    for (int s = 0; s < r->segments; s++) {
        n += (size_t)sprintf(buf + n, "%s%" PRId64, s > 0 ? "," : "",
                             ctl_num_split(r->total, r->segments, s));
    }
    n += (size_t)sprintf(buf + n, "}\n");
    return n;
}

static int copy_rows(PGconn *conn, const ctl_import_row *rows, size_t n)
{
    static char buf[1 << 16];
    size_t used = 0;
    int ok = 1;
    for (size_t i = 0; i < n && ok == 1; i++) {
        if (used + LINE_MAX_ > sizeof buf) {
            ok = PQputCopyData(conn, buf, (int)used);
            used = 0;
        }
        used += copy_line(buf + used, &rows[i], i);
    }
    if (ok == 1 && used > 0) {
        ok = PQputCopyData(conn, buf, (int)used);
    }
    if (PQputCopyEnd(conn, ok == 1 ? NULL : "escrowctl: cannot send the rows") != 1) {
        ok = 0;
    }
    PGresult *res = PQgetResult(conn);
    int rc = ok == 1 && PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : ESC_EDB;
    if (rc != 0) {
        fprintf(stderr, "escrowctl: database error: COPY of the rows failed: %s",
                PQerrorMessage(conn));
    }
    PQclear(res);
    while ((res = PQgetResult(conn)) != NULL) {
        PQclear(res);
    }
    return PQstatus(conn) != CONNECTION_OK ? ESC_EUNAVAILABLE : rc;
}

int ctl_import_db_load(PGconn *conn, const ctl_import_row *rows, size_t n, const char *region,
                       int64_t *unchanged)
{
    PGresult *res = NULL;
    const char *p_region[] = {region};
    int rc = ctl_db_query(conn, sql_region, 1, p_region, &res);
    if (rc == 0 && PQntuples(res) != 1) {
        fprintf(stderr, "escrowctl: unknown region '%s'\n", region);
        rc = ESC_EINVAL;
    }
    PQclear(res);
    rc = rc != 0 ? rc : ctl_db_exec(conn, sql_table, 0, NULL);
    if (rc != 0) {
        return rc;
    }
    res = PQexec(conn, sql_copy);
    if (PQresultStatus(res) != PGRES_COPY_IN) {
        fprintf(stderr, "escrowctl: database error: cannot start the COPY: %s",
                PQerrorMessage(conn));
        PQclear(res);
        return PQstatus(conn) != CONNECTION_OK ? ESC_EUNAVAILABLE : ESC_EDB;
    }
    PQclear(res);
    rc = copy_rows(conn, rows, n);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_unchanged, 0, NULL, &res);
    if (rc == 0) {
        *unchanged = strtoll(PQcmdTuples(res), NULL, 10);
    }
    PQclear(res);
    return rc != 0 ? rc : ctl_db_exec(conn, sql_analyze, 0, NULL);
}

void ctl_import_db_analyze(PGconn *conn)
{
    (void)ctl_db_exec(conn, sql_analyze_catalog, 0, NULL); /* plans only: best effort */
}

int ctl_import_db_conflicts(PGconn *conn, size_t lo, size_t hi, int64_t *conflicts)
{
    char a[24], b[24];
    snprintf(a, sizeof a, "%zu", lo);
    snprintf(b, sizeof b, "%zu", hi);
    const char *params[] = {a, b};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_conflicts, 2, params, &res);
    if (rc != 0) {
        return rc;
    }
    for (int i = 0; i < PQntuples(res) && i < CTL_IMPORT_ERRORS_SHOWN; i++) {
        fprintf(stderr,
                "escrowctl: line %s: item %s/%s already exists with other values (total %s, "
                "segments %s, max_per_order %s, max_per_buyer %s, hold_ttl_ms %s)\n",
                PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                PQgetvalue(res, i, 3), PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
                PQgetvalue(res, i, 6), PQgetvalue(res, i, 7));
    }
    *conflicts = PQntuples(res);
    PQclear(res);
    return 0;
}

int ctl_import_db_chunk(PGconn *conn, size_t lo, size_t hi, const char *region, int64_t *created,
                        int64_t *unchanged)
{
    char a[24], b[24];
    snprintf(a, sizeof a, "%zu", lo);
    snprintf(b, sizeof b, "%zu", hi);
    const char *params[] = {a, b, region};
    PGresult *res = NULL;
    int64_t items = 0, segs = 0, wanted = 0, rows = 0, conflicts = 0;
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL READ COMMITTED");
    rc = rc != 0 ? rc : ctl_db_exec(conn, sql_tenants, 2, params);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_items, 3, params, &res);
    rc = rc != 0 ? rc : ctl_db_i64(res, 0, 0, &items);
    rc = rc != 0 ? rc : ctl_db_i64(res, 0, 1, &segs);
    rc = rc != 0 ? rc : ctl_db_i64(res, 0, 2, &wanted);
    rc = rc != 0 ? rc : ctl_db_i64(res, 0, 3, &rows);
    PQclear(res);
    if (rc == 0 && segs != wanted) {
        fprintf(stderr,
                "escrowctl: %" PRId64 " segments written instead of %" PRId64 "; rolled back\n",
                segs, wanted);
        rc = ESC_EINTERNAL;
    }
    if (rc == 0 && items < rows) { /* some existed by now: a concurrent create */
        rc = ctl_import_db_conflicts(conn, lo, hi, &conflicts);
    }
    rc = rc == 0 && conflicts > 0 ? ESC_ECONFLICT : rc;
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        return rc;
    }
    *created = items;
    *unchanged = rows - items;
    return 0;
}
