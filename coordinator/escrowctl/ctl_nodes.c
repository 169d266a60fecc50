/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_nodes.c - see ctl_nodes.h.
 *
 * Ages are computed by PostgreSQL (now() - last_seen_at), not by comparing
 * clocks: the coordinator writes those times with the database's clock.
 */
#include "ctl_nodes.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "pg_result.h"

static const char sql_nodes[] =
    "/* escrow:ctl-nodes */ "
    "SELECT n.node_id, COALESCE(NULLIF($2, ''), n.region), n.endpoint, n.state, n.incarnation, "
    "to_char(n.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "(extract(epoch FROM now() - n.last_seen_at) * 1000)::bigint, "
    "to_char(n.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "(extract(epoch FROM n.lease_until - now()) * 1000)::bigint, "
    "count(s.segment_id), count(s.segment_id) FILTER (WHERE s.state = 'active'), "
    "count(s.segment_id) FILTER (WHERE s.state = 'draining') "
    "FROM nodes n LEFT JOIN segments s ON s.node_id = n.node_id "
    "GROUP BY n.node_id ORDER BY n.node_id LIMIT $1";

enum {
    N_ID,
    N_REGION,
    N_EP,
    N_STATE,
    N_INC,
    N_SEEN,
    N_SEEN_AGO,
    N_LEASE,
    N_LEASE_LEFT,
    N_SEGS,
    N_ACTIVE,
    N_DRAINING,
    N_COLS_
};

/* Open transfers first by default; ended ones with --all. One row more
 * than shown tells whether the list was cut. */
static const char sql_transfers[] =
    "/* escrow:ctl-transfers */ "
    "SELECT transfer_id, tenant_id, item_id, from_segment, to_segment, reason, planned_qty, "
    "qty, state, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "(extract(epoch FROM now() - created_at) * 1000)::bigint "
    "FROM transfers WHERE ($1::text IS NULL OR tenant_id = $1) "
    "AND ($2::text IS NULL OR item_id = $2) "
    "AND ($3::boolean OR state IN ('planned', 'sent')) "
    "ORDER BY transfer_id DESC LIMIT $4::integer + 1";

enum {
    T_ID,
    T_TENANT,
    T_ITEM,
    T_FROM,
    T_TO,
    T_REASON,
    T_PLANNED,
    T_QTY,
    T_STATE,
    T_CREATED,
    T_SENT,
    T_RECEIVED,
    T_AGE,
    T_COLS_
};

/* "0.4 s ago" / "1.6 s left" / "expired 3.0 s ago" / "-", from milliseconds. */
static void fmt_age(char *buf, size_t cap, const PGresult *res, int row, int col, bool lease)
{
    if (PQgetisnull(res, row, col)) {
        snprintf(buf, cap, "-");
        return;
    }
    long long ms = pg_result_i64_or(res, row, col, 0);
    if (!lease) {
        snprintf(buf, cap, "%.1f s ago", (double)ms / 1000.0);
    } else if (ms > 0) {
        snprintf(buf, cap, "%.1f s left", (double)ms / 1000.0);
    } else {
        snprintf(buf, cap, "expired %.1f s ago", (double)-ms / 1000.0);
    }
}

static void nodes_human(FILE *out, const PGresult *res)
{
    int n = PQntuples(res);
    if (n == 0) {
        fprintf(out, "no nodes\n");
        return;
    }
    fprintf(out, "%-12s %-8s %-9s %-28s %-14s %-20s %s\n", "NODE", "REGION", "STATE", "ENDPOINT",
            "LAST_SEEN", "LEASE", "SEGMENTS");
    for (int r = 0; r < n; r++) {
        char seen[32], lease[40], segs[64];
        fmt_age(seen, sizeof seen, res, r, N_SEEN_AGO, false);
        fmt_age(lease, sizeof lease, res, r, N_LEASE_LEFT, true);
        snprintf(segs, sizeof segs, "%s (%s active, %s draining)",
                 pg_result_text_or(res, r, N_SEGS, "-"), pg_result_text_or(res, r, N_ACTIVE, "-"),
                 pg_result_text_or(res, r, N_DRAINING, "-"));
        const char *ep = PQgetvalue(res, r, N_EP);
        fprintf(out, "%-12s %-8s %-9s %-28s %-14s %-20s %s\n", pg_result_text_or(res, r, N_ID, "-"),
                pg_result_text_or(res, r, N_REGION, "-"), pg_result_text_or(res, r, N_STATE, "-"),
                ep[0] != '\0' ? ep : "-", seen, lease, segs);
    }
    fprintf(out, "%d node%s\n", n, n == 1 ? "" : "s");
}

static void nodes_json(FILE *out, const PGresult *res)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "nodes");
    for (int r = 0; r < PQntuples(res); r++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "node", pg_result_text(res, r, N_ID));
        ctl_json_str(&j, "region", pg_result_text(res, r, N_REGION));
        ctl_json_str(&j, "endpoint", pg_result_text(res, r, N_EP));
        ctl_json_str(&j, "state", pg_result_text(res, r, N_STATE));
        ctl_json_num(&j, "incarnation", pg_result_text(res, r, N_INC));
        ctl_json_str(&j, "last_seen_at", pg_result_text(res, r, N_SEEN));
        ctl_json_num(&j, "last_seen_ms_ago", pg_result_text(res, r, N_SEEN_AGO));
        ctl_json_str(&j, "lease_until", pg_result_text(res, r, N_LEASE));
        ctl_json_num(&j, "lease_left_ms", pg_result_text(res, r, N_LEASE_LEFT));
        ctl_json_num(&j, "segments", pg_result_text(res, r, N_SEGS));
        ctl_json_num(&j, "segments_active", pg_result_text(res, r, N_ACTIVE));
        ctl_json_num(&j, "segments_draining", pg_result_text(res, r, N_DRAINING));
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_nodes(PGconn *conn, const ctl_args *a, FILE *out)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", CTL_LIST_ROWS_MAX);
    char region[CTL_REGION_LEN_MAX + 1] = ""; /* region_self: the nodes' real region */
    const char *params[] = {limit, region};
    PGresult *res = NULL;
    int rc = ctl_db_region_self(conn, region, sizeof region);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_nodes, 2, params, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQnfields(res) != N_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the nodes query\n");
        rc = ESC_EDB;
    } else if (a->json) {
        nodes_json(out, res);
    } else {
        nodes_human(out, res);
    }
    PQclear(res);
    return rc;
}

/* "unallocated" stands for a NULL end: restock takes from it, reduce
 * returns to it. */
#define UNALLOCATED "unallocated"

static void transfers_human(FILE *out, const PGresult *res, int shown, const ctl_args *a)
{
    if (shown == 0) {
        fprintf(out, "no %stransfers\n", a->all ? "" : "open ");
        return;
    }
    fprintf(out, "%-10s %-10s %-16s %-11s %-11s %-9s %8s %8s %-9s %-12s %s\n", "TRANSFER", "TENANT",
            "ITEM", "FROM", "TO", "REASON", "PLANNED", "QTY", "STATE", "AGE", "CREATED_AT");
    for (int r = 0; r < shown; r++) {
        char age[32];
        fmt_age(age, sizeof age, res, r, T_AGE, false);
        fprintf(out, "%-10s %-10s %-16s %-11s %-11s %-9s %8s %8s %-9s %-12s %s\n",
                pg_result_text_or(res, r, T_ID, "-"), pg_result_text_or(res, r, T_TENANT, "-"),
                pg_result_text_or(res, r, T_ITEM, "-"),
                pg_result_text_or(res, r, T_FROM, UNALLOCATED),
                pg_result_text_or(res, r, T_TO, UNALLOCATED),
                pg_result_text_or(res, r, T_REASON, "-"), pg_result_text_or(res, r, T_PLANNED, "-"),
                pg_result_text_or(res, r, T_QTY, "-"), pg_result_text_or(res, r, T_STATE, "-"), age,
                pg_result_text_or(res, r, T_CREATED, "-"));
    }
    fprintf(out, "%d %stransfer%s", shown, a->all ? "" : "open ", shown == 1 ? "" : "s");
    if (PQntuples(res) > shown) {
        fprintf(out, " shown; more exist (raise --limit)");
    }
    fputc('\n', out);
}

static void transfers_json(FILE *out, const PGresult *res, int shown)
{
    static const char *const keys[T_COLS_] = {
        [T_ID] = "transfer_id",      [T_TENANT] = "tenant", [T_ITEM] = "item",
        [T_FROM] = "from_segment",   [T_TO] = "to_segment", [T_REASON] = "reason",
        [T_PLANNED] = "planned_qty", [T_QTY] = "qty",       [T_STATE] = "state",
        [T_CREATED] = "created_at",  [T_SENT] = "sent_at",  [T_RECEIVED] = "received_at",
        [T_AGE] = "age_ms"};
    static const bool numeric[T_COLS_] = {[T_ID] = true,  [T_FROM] = true,    [T_TO] = true,
                                          [T_QTY] = true, [T_PLANNED] = true, [T_AGE] = true};
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "transfers");
    for (int r = 0; r < shown; r++) {
        ctl_json_begin_obj(&j, NULL);
        for (int c = 0; c < T_COLS_; c++) {
            if (numeric[c]) {
                ctl_json_num(&j, keys[c], pg_result_text(res, r, c));
            } else {
                ctl_json_str(&j, keys[c], pg_result_text(res, r, c));
            }
        }
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_bool(&j, "truncated", PQntuples(res) > shown);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_nodes_transfers(PGconn *conn, const ctl_args *a, FILE *out)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", a->limit);
    const char *params[] = {a->tenant[0] != '\0' ? a->tenant : NULL,
                            a->item[0] != '\0' ? a->item : NULL, a->all ? "true" : "false", limit};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_transfers, 4, params, &res);
    if (rc != 0) {
        return rc;
    }
    int shown = PQntuples(res) > a->limit ? a->limit : PQntuples(res);
    if (PQnfields(res) != T_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the transfers query\n");
        rc = ESC_EDB;
    } else if (a->json) {
        transfers_json(out, res, shown);
    } else {
        transfers_human(out, res, shown, a);
    }
    PQclear(res);
    return rc;
}
