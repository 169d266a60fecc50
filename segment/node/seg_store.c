/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_store.c - see seg_store.h.
 */
#include "seg_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"
#include "pg_array.h"
#include "pg_result.h"
#include "segment_lock.h"

int seg_store_state_from_text(const char *s)
{
    if (strcmp(s, "held") == 0) {
        return SEG_HELD;
    }
    if (strcmp(s, "converted") == 0) {
        return SEG_CONVERTED;
    }
    if (strcmp(s, "cancelled") == 0) {
        return SEG_CANCELLED;
    }
    if (strcmp(s, "expired") == 0) {
        return SEG_EXPIRED;
    }
    return 0;
}

int seg_store_segment_state(const char *s)
{
    return strcmp(s, "active") == 0     ? SEG_ACTIVE
           : strcmp(s, "draining") == 0 ? SEG_DRAINING
                                        : SEG_RETIRED;
}

static int fail(PGresult *r, PGconn *conn, char *why, size_t why_len, const char *step)
{
    snprintf(why, why_len, "%s: %s", step, r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
    PQclear(r);
    return ESC_EDB;
}

static PGresult *exec(PGconn *conn, const char *sql, int n, const char *const *v, int want)
{
    PGresult *r = PQexecParams(conn, sql, n, NULL, v, NULL, NULL, 0);
    if (r != NULL && PQresultStatus(r) != (ExecStatusType)want) {
        return r; /* caller checks status */
    }
    return r;
}

static bool ok(PGresult *r, int want)
{
    return r != NULL && PQresultStatus(r) == (ExecStatusType)want;
}

static int load_items(PGconn *conn, const char *node_id, seg_core *core, char *why, size_t why_len)
{
    const char *v[1] = {node_id};
    PGresult *r = exec(conn,
                       "/* escrow:segment-load */ SELECT i.tenant_id, i.item_id, i.max_per_order, "
                       "i.max_per_buyer, i.hold_ttl_ms, i.state, "
                       "(SELECT count(*) FROM segments o WHERE o.tenant_id = i.tenant_id AND "
                       " o.item_id = i.item_id AND o.state = 'active' AND "
                       " o.node_id IS DISTINCT FROM $1) "
                       "FROM items i WHERE EXISTS (SELECT 1 FROM segments s WHERE s.node_id = $1 "
                       "AND s.state <> 'retired' AND s.tenant_id = i.tenant_id AND "
                       "s.item_id = i.item_id)",
                       1, v, PGRES_TUPLES_OK);
    if (!ok(r, PGRES_TUPLES_OK)) {
        return fail(r, conn, why, why_len, "load items");
    }
    for (int i = 0; i < PQntuples(r); i++) {
        seg_item proto;
        memset(&proto, 0, sizeof proto);
        snprintf(proto.tenant_id, sizeof proto.tenant_id, "%s", PQgetvalue(r, i, 0));
        snprintf(proto.item_id, sizeof proto.item_id, "%s", PQgetvalue(r, i, 1));
        proto.max_per_order = (int32_t)pg_result_i64_or(r, i, 2, 0);
        proto.max_per_buyer = (int32_t)pg_result_i64_or(r, i, 3, 0);
        proto.hold_ttl_ms = (uint32_t)pg_result_i64_or(r, i, 4, 0);
        proto.paused = strcmp(PQgetvalue(r, i, 5), "active") != 0;
        proto.remote_segments = (uint32_t)pg_result_i64_or(r, i, 6, 0);
        seg_item *it;
        if (seg_core_add_item(core, &proto, &it) != 0) {
            PQclear(r);
            snprintf(why, why_len, "out of memory loading items");
            return ESC_ENOMEM;
        }
    }
    PQclear(r);
    return 0;
}

/* Raises the epoch of our segments and loads them; fills ids for the holds query. */
static int claim_segments(PGconn *conn, const char *node_id, seg_core *core, pg_array *ids,
                          char *why, size_t why_len)
{
    char range[24];
    snprintf(range, sizeof range, "%llu", (unsigned long long)ESC_HOLD_SEQ_RANGE);
    const char *v[2] = {node_id, range};
    PGresult *r = exec(conn,
                       "/* escrow:segment-claim */ UPDATE segments s SET epoch = s.epoch + 1, "
                       "hold_seq = s.hold_seq + $2::bigint "
                       "FROM " SEGMENTS_LOCKED("node_id = $1 AND state <> 'retired'")
                       " WHERE s.segment_id = l.segment_id AND s.node_id = $1 "
                       "AND s.state <> 'retired' RETURNING s.segment_id, s.tenant_id, "
                       "s.item_id, s.epoch, s.available, s.held, s.sold, s.hold_seq, s.state",
                       2, v, PGRES_TUPLES_OK);
    if (!ok(r, PGRES_TUPLES_OK)) {
        return fail(r, conn, why, why_len, "claim segments");
    }
    pg_array_reset(ids);
    for (int i = 0; i < PQntuples(r); i++) {
        seg_item *it = seg_core_find_item(core, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
        seg_segment proto, *s;
        memset(&proto, 0, sizeof proto);
        proto.segment_id = (uint64_t)pg_result_i64_or(r, i, 0, 0);
        proto.epoch = (uint64_t)pg_result_i64_or(r, i, 3, 0);
        proto.available = pg_result_i64_or(r, i, 4, 0);
        proto.held = pg_result_i64_or(r, i, 5, 0);
        proto.sold = pg_result_i64_or(r, i, 6, 0);
        seg_store_seq_range((uint64_t)pg_result_i64_or(r, i, 7, 0), &proto);
        proto.state = seg_store_segment_state(PQgetvalue(r, i, 8));
        if (it == NULL || seg_core_add_segment(core, it, &proto, &s) != 0) {
            snprintf(why, why_len, "segment %" PRIu64 " cannot be loaded", proto.segment_id);
            PQclear(r);
            return ESC_EINTERNAL;
        }
        pg_array_i64(ids, (int64_t)proto.segment_id);
        ESC_LOG(ESC_LOG_INFO, "SEG-CLAIM",
                "seg=%" PRIu64 " item=%s/%s epoch=%" PRIu64 " available=%" PRId64 " held=%" PRId64
                " sold=%" PRId64,
                s->segment_id, it->tenant_id, it->item_id, s->epoch, s->available, s->held,
                s->sold);
    }
    PQclear(r);
    return 0;
}

int seg_store_add_holds(const PGresult *r, seg_core *core, bool skip_unknown, char *why,
                        size_t why_len)
{
    for (int i = 0; i < PQntuples(r); i++) {
        seg_segment *s = seg_core_find_segment(core, (uint64_t)pg_result_i64_or(r, i, 1, 0));
        if (skip_unknown && (s == NULL || s->fenced)) {
            continue;
        }
        seg_hold proto, *h;
        memset(&proto, 0, sizeof proto);
        proto.hold_id = (uint64_t)pg_result_i64_or(r, i, 0, 0);
        proto.qty = pg_result_i64_or(r, i, 4, 0);
        proto.qty_sold = pg_result_i64_or(r, i, 5, 0);
        proto.state = (uint8_t)seg_store_state_from_text(PQgetvalue(r, i, 6));
        proto.expires_at_ms = pg_result_i64_or(r, i, 7, 0);
        proto.extended = pg_result_true(r, i, 8);
        proto.request_hash = pg_result_i64_or(r, i, 9, 0);
        proto.ended_at_ms = pg_result_i64_or(r, i, 10, 0);
        if (s == NULL || proto.state == 0 ||
            seg_core_add_hold(core, s, &proto, PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), &h) != 0) {
            snprintf(why, why_len, "hold %" PRIu64 " cannot be loaded", proto.hold_id);
            return ESC_EINTERNAL;
        }
    }
    return 0;
}

static int load_holds(PGconn *conn, seg_core *core, const char *ids, char *why, size_t why_len)
{
    const char *v[1] = {ids};
    PGresult *r = exec(conn, SEG_SQL_LOAD_HOLDS, 1, v, PGRES_TUPLES_OK);
    if (!ok(r, PGRES_TUPLES_OK)) {
        return fail(r, conn, why, why_len, "load holds");
    }
    int rc = seg_store_add_holds(r, core, false, why, why_len);
    if (rc == 0) {
        ESC_LOG(ESC_LOG_INFO, "SEG-LOAD", "holds=%d live=%zu", PQntuples(r), core->live_holds);
    }
    PQclear(r);
    return rc;
}

int seg_store_take_ownership(PGconn *conn, const char *node_id, const char *endpoint,
                             seg_core *core, char *why, size_t why_len)
{
    const char *v[2] = {node_id, endpoint};
    PGresult *r = exec(conn, "/* escrow:segment-claim */ BEGIN", 0, NULL, PGRES_COMMAND_OK);
    if (!ok(r, PGRES_COMMAND_OK)) {
        return fail(r, conn, why, why_len, "begin");
    }
    PQclear(r);
    r = exec(conn,
             "/* escrow:segment-register */ INSERT INTO nodes (node_id, endpoint) VALUES ($1, $2) "
             "ON CONFLICT (node_id) DO UPDATE SET endpoint = EXCLUDED.endpoint, state = 'up', "
             "last_seen_at = now()",
             2, v, PGRES_COMMAND_OK);
    if (!ok(r, PGRES_COMMAND_OK)) {
        PQclear(PQexec(conn, "/* escrow:segment-claim */ ROLLBACK"));
        return fail(r, conn, why, why_len, "register node");
    }
    PQclear(r);
    pg_array ids;
    pg_array_init(&ids);
    int rc = load_items(conn, node_id, core, why, why_len);
    if (rc == 0) {
        rc = claim_segments(conn, node_id, core, &ids, why, why_len);
    }
    r = exec(conn,
             rc == 0 ? "/* escrow:segment-claim */ COMMIT" : "/* escrow:segment-claim */ ROLLBACK",
             0, NULL, PGRES_COMMAND_OK);
    if (rc == 0 && !ok(r, PGRES_COMMAND_OK)) {
        pg_array_fini(&ids);
        return fail(r, conn, why, why_len, "commit");
    }
    PQclear(r);
    /* After COMMIT: the old owner is fenced, so what we read now is final. */
    if (rc == 0) {
        rc = load_holds(conn, core, pg_array_text(&ids), why, why_len);
    }
    pg_array_fini(&ids);
    uint64_t bad = 0;
    if (rc == 0 && seg_core_check(core, &bad) != 0) {
        snprintf(why, why_len, "segment %" PRIu64 " counters disagree with its holds", bad);
        rc = ESC_EINTERNAL;
    }
    return rc;
}

void seg_store_seq_range(uint64_t hold_seq, seg_segment *proto)
{
    proto->seq_limit = hold_seq;
    proto->next_seq = hold_seq > ESC_HOLD_SEQ_RANGE ? hold_seq - ESC_HOLD_SEQ_RANGE : 1;
}

void seg_store_hold_from_row(const PGresult *res, int row, int c, wire_hold *w)
{
    memset(w, 0, sizeof *w);
    w->hold_id = (uint64_t)pg_result_i64_or(res, row, c, 0);
    w->segment_id = (uint64_t)pg_result_i64_or(res, row, c + 1, 0);
    snprintf(w->item_id, sizeof w->item_id, "%s", PQgetvalue(res, row, c + 2));
    snprintf(w->buyer_id, sizeof w->buyer_id, "%s", PQgetvalue(res, row, c + 3));
    w->qty = pg_result_i64_or(res, row, c + 4, 0);
    w->qty_sold = pg_result_i64_or(res, row, c + 5, 0);
    w->state = seg_store_state_from_text(PQgetvalue(res, row, c + 6));
    w->expires_at_ms = pg_result_i64_or(res, row, c + 7, 0);
    w->extended = pg_result_true(res, row, c + 8);
}
