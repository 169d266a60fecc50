/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_restore.c - see ctl_restore.h. The fence is one transaction: the
 * coordinator lease row is locked first, so a coordinator cannot take the
 * lease between the check and the update.
 */
#include "ctl_restore.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"

#define TAG "/* escrow:ctl-restore */ "

/* 2^32: room for 4,096 changes of owner per segment (each reserves a range
 * of 2^20) or 4 billion holds between the backup and the loss; a segment
 * has 2^40 numbers. */
#define FENCE_STEP "4294967296"
#define HOLD_SEQ_MAX "1099511627775"

static const char sql_lease[] =
    TAG "SELECT expires_at > now(), holder, expires_at FROM coord_leader FOR UPDATE";
static const char sql_fence[] =
    TAG "WITH moved AS (UPDATE segments SET hold_seq = least(hold_seq + " FENCE_STEP
        ", " HOLD_SEQ_MAX ") RETURNING segment_id, hold_seq) "
        "SELECT count(*), coalesce(min(" HOLD_SEQ_MAX " - hold_seq), " HOLD_SEQ_MAX "), "
        "coalesce((SELECT segment_id FROM moved ORDER BY hold_seq DESC, segment_id LIMIT 1), 0) "
        "FROM moved";
static const char sql_epoch[] = TAG "SELECT coalesce(max(x), 0)::bigint / 4294967296 + 1 FROM ("
                                    "SELECT pg_current_xact_id()::text::numeric AS x UNION ALL "
                                    "SELECT txid::text::numeric FROM outbox UNION ALL "
                                    "SELECT cursor_txid::text::numeric FROM feed_consumers UNION ALL "
                                    /* the catalog's marks (migration 0018): below the new
                                     * ids, or the coordinator reads those rows at every poll */
                                    "SELECT cat_xid::text::numeric FROM items UNION ALL "
                                    "SELECT cat_xid::text::numeric FROM segments UNION ALL "
                                    "SELECT cat_xid::text::numeric FROM transfers UNION ALL "
                                    "SELECT cat_xid::text::numeric FROM global_items UNION ALL "
                                    "SELECT cat_xid::text::numeric FROM nodes) t";

/* Locks the lease row; refuses while a coordinator holds the lease. */
static int lease_free(PGconn *conn)
{
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_lease, 0, NULL, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
        fprintf(stderr,
                "escrowctl: coordinator %s leads this database until %s: stop every daemon "
                "before a restore fence (docs/backup.md); nothing changed\n",
                PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
        rc = ESC_ECONFLICT;
    }
    PQclear(res);
    return rc;
}

static void fence_print(FILE *out, const ctl_args *a, const PGresult *res)
{
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "segments", PQgetvalue(res, 0, 0));
        ctl_json_num(&j, "step", FENCE_STEP);
        ctl_json_num(&j, "least_headroom", PQgetvalue(res, 0, 1));
        ctl_json_num(&j, "least_headroom_segment", PQgetvalue(res, 0, 2));
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
        return;
    }
    fprintf(out,
            "fenced %s segments: every hold sequence moved " FENCE_STEP
            " numbers on; the least room left is %s numbers (segment %s)\n",
            PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
}

int ctl_restore_fence(PGconn *conn, const ctl_args *a, FILE *out)
{
    PGresult *res = NULL;
    int rc = ctl_db_begin(conn, "");
    rc = rc != 0 ? rc : lease_free(conn);
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_fence, 0, NULL, &res);
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
    } else {
        fence_print(out, a, res);
    }
    PQclear(res);
    return rc;
}

int ctl_restore_xid_epoch(PGconn *conn, const ctl_args *a, FILE *out)
{
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_epoch, 0, NULL, &res);
    if (rc != 0) {
        return rc;
    }
    const char *e = PQgetvalue(res, 0, 0);
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "epoch", e);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    } else {
        fprintf(out,
                "%s\n# stop PostgreSQL, run pg_resetwal -e %s DATADIR, start it "
                "(docs/backup.md)\n",
                e, e);
    }
    PQclear(res);
    return 0;
}
