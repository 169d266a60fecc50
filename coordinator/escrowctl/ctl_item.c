/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_item.c - see ctl_item.h.
 *
 * The item insert uses ON CONFLICT DO NOTHING: two concurrent creates of the
 * same item serialize on the primary key and the second one sees zero rows
 * and rolls back, so the answer is "exists" rather than a constraint error.
 * The split is computed in C (ctl_num_split, unit-tested) and sent as
 * one bigint[]; the sum is asserted before anything is written.
 */
#include "ctl_item.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "ctl_admin.h"
#include "ctl_db.h"
#include "ctl_json.h"
#include "ctl_num.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_array.h"

#define TAG "/* escrow:ctl-item-create */ "

static const char sql_tenant[] =
    TAG "INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING";
static const char sql_region[] = TAG "SELECT 1 FROM regions WHERE region = $1";
static const char sql_node[] =
    TAG "INSERT INTO nodes (node_id, region) VALUES ($1, $2) ON CONFLICT DO NOTHING";
static const char sql_item[] =
    TAG "INSERT INTO items (tenant_id, item_id, total, unallocated, max_per_order, "
        "max_per_buyer, hold_ttl_ms, segments_wanted) VALUES ($1, $2, $3, 0, $4, $5, $6, $7) "
        "ON CONFLICT DO NOTHING RETURNING 1";
static const char sql_segments[] =
    TAG "WITH ins AS (INSERT INTO segments (tenant_id, item_id, region, seg_no, node_id, "
        "epoch, available) "
        "SELECT $1, $2, $3, (g.n - 1)::integer, $4, 0, g.available "
        "FROM unnest($5::bigint[]) WITH ORDINALITY AS g(available, n) "
        "RETURNING segment_id, seg_no, available) "
        "SELECT segment_id, seg_no, available FROM ins ORDER BY seg_no";

/* The split as a bigint[] literal (arr, initialised by the caller); its sum
 * is asserted. */
static void split_text(const ctl_item_spec *s, pg_array *arr)
{
    int64_t sum = 0;
    for (int i = 0; i < s->segments; i++) {
        int64_t v = ctl_num_split(s->total, s->segments, i);
        sum += v;
        pg_array_i64(arr, v);
    }
    ESC_ASSERT(sum == s->total);
}

/* Tenant, region check, node, item; in the open transaction. */
static int insert_catalog(PGconn *conn, const ctl_item_spec *s)
{
    char total[24], mpo[16], mpb[16], ttl[16], nsegs[16];
    snprintf(total, sizeof total, "%" PRId64, s->total);
    snprintf(mpo, sizeof mpo, "%d", s->max_per_order);
    snprintf(mpb, sizeof mpb, "%d", s->max_per_buyer);
    snprintf(ttl, sizeof ttl, "%d", s->hold_ttl_ms);
    snprintf(nsegs, sizeof nsegs, "%d", s->segments);
    const char *p_tenant[] = {s->tenant};
    const char *p_region[] = {s->region};
    const char *p_node[] = {s->node, s->region};
    const char *p_item[] = {s->tenant, s->item, total, mpo, mpb, ttl, nsegs};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_region, 1, p_region, &res);
    if (rc == 0 && PQntuples(res) != 1) {
        fprintf(stderr, "escrowctl: unknown region '%s'\n", s->region);
        rc = ESC_EINVAL;
    }
    PQclear(res);
    res = NULL;
    rc = rc != 0 ? rc : ctl_db_exec(conn, sql_tenant, 1, p_tenant);
    if (s->node[0] != '\0') {
        rc = rc != 0 ? rc : ctl_db_exec(conn, sql_node, 2, p_node);
    }
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_item, 7, p_item, &res);
    if (rc == 0 && PQntuples(res) != 1) {
        fprintf(stderr, "escrowctl: item %s/%s already exists; nothing was changed\n", s->tenant,
                s->item);
        rc = ESC_ECONFLICT;
    }
    PQclear(res);
    return rc;
}

static void print_created(const ctl_args *a, const PGresult *segs, FILE *out)
{
    const ctl_item_spec *s = &a->spec;
    if (!a->json) {
        fprintf(out, "created item %s/%s total=%" PRId64 " segments=%d node=%s region=%s\n",
                s->tenant, s->item, s->total, s->segments,
                s->node[0] != '\0' ? s->node : "(unassigned: the coordinator places them)",
                s->region);
        for (int i = 0; i < PQntuples(segs); i++) {
            fprintf(out, "  segment %s seg_no=%s available=%s\n", PQgetvalue(segs, i, 0),
                    PQgetvalue(segs, i, 1), PQgetvalue(segs, i, 2));
        }
        return;
    }
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_str(&j, "tenant", s->tenant);
    ctl_json_str(&j, "item", s->item);
    ctl_json_i64(&j, "total", s->total);
    ctl_json_str(&j, "node", s->node[0] != '\0' ? s->node : NULL);
    ctl_json_str(&j, "region", s->region);
    ctl_json_begin_arr(&j, "segments");
    for (int i = 0; i < PQntuples(segs); i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "segment_id", PQgetvalue(segs, i, 0));
        ctl_json_num(&j, "seg_no", PQgetvalue(segs, i, 1));
        ctl_json_num(&j, "available", PQgetvalue(segs, i, 2));
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_item_insert(PGconn *conn, const ctl_item_spec *s, PGresult **out)
{
    pg_array split;
    pg_array_init(&split);
    split_text(s, &split);
    const char *p_segs[] = {s->tenant, s->item, s->region, s->node[0] != '\0' ? s->node : NULL,
                            pg_array_text(&split)};
    PGresult *segs = NULL;
    int rc = insert_catalog(conn, s);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_segments, 5, p_segs, &segs);
    if (rc == 0 && PQntuples(segs) != s->segments) {
        fprintf(stderr, "escrowctl: %d segments written instead of %d; rolled back\n",
                PQntuples(segs), s->segments);
        rc = ESC_EINTERNAL;
    }
    pg_array_fini(&split);
    if (rc != 0) {
        PQclear(segs);
        return rc;
    }
    *out = segs;
    return 0;
}

int ctl_item_create(PGconn *conn, const ctl_args *a, FILE *out)
{
    PGresult *segs = NULL;
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL READ COMMITTED");
    rc = rc != 0 ? rc : ctl_item_insert(conn, &a->spec, &segs);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        PQclear(segs);
        return rc;
    }
    print_created(a, segs, out);
    PQclear(segs);
    ctl_admin_reload(a); /* best effort: the coordinator also polls the catalog */
    return 0;
}
