/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_store.h - the segment node's SQL: taking ownership and loading state
 * at start (synchronous; the loop is not running yet), and the text of the
 * statements the node runs asynchronously on its connections.
 */
#ifndef ESC_SEG_STORE_H
#define ESC_SEG_STORE_H

#include <libpq-fe.h>

#include "seg_core.h"
#include "wire.h"

#define SEG_STMT_COMMIT "escrow_commit"
#define SEG_SQL_COMMIT                                                                             \
    "/* escrow:segment-commit */ SELECT * FROM escrow_commit_batch("                               \
    "$1::bigint, $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], "           \
    "$7::bigint[], $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], "            \
    "$13::integer[], $14::text[], $15::bigint[], $16::bigint[], $17::integer[], $18::bigint[], "   \
    "$19::bigint[], $20::text[], $21::integer[], $22::bigint[], $23::text[], $24::bigint[], "      \
    "$25::text[], $26::bigint[], $27::bigint[])"
#define SEG_COMMIT_NPARAMS 27
/* Indexes of the commit call's parameters the node refers to by name. */
enum {
    SEG_P_BATCH = 0,
    SEG_P_SEG_ID = 1,
    SEG_P_SEG_EPOCH = 2,
    SEG_P_HOLD = 7,
    SEG_P_T_ACTOR = 22,
    SEG_P_X_ID = 23,
    SEG_P_X_KIND = 24,
    SEG_P_X_SEG = 25,
    SEG_P_X_QTY = 26
};

/* Did batch $2 commit? Which of its new holds exist? Which of its transfers
 * did it move ("id state qty ..." with state 1 sent, 2 received, 3
 * cancelled)? (after a lost connection) */
#define SEG_SQL_RECONCILE                                                                          \
    "/* escrow:segment-reconcile */ SELECT "                                                       \
    "COALESCE((SELECT bool_or(last_batch = $2::bigint) FROM segments "                             \
    "          WHERE segment_id = ANY ($1::bigint[])), false), "                                   \
    "COALESCE((SELECT array_agg(hold_id) FROM holds WHERE hold_id = ANY ($3::bigint[])), '{}'), "  \
    "COALESCE((SELECT string_agg(transfer_id || ' ' || CASE state WHEN 'sent' THEN 1 "             \
    "  WHEN 'received' THEN 2 ELSE 3 END || ' ' || CASE state WHEN 'cancelled' THEN 0 ELSE qty "   \
    "  END, ' ') FROM transfers WHERE transfer_id = ANY ($4::bigint[]) AND "                       \
    "  ((state IN ('sent', 'cancelled') AND sent_batch = $2::bigint) OR "                          \
    "   (state = 'received' AND received_batch = $2::bigint))), '')"

#define SEG_SQL_TERMINATE                                                                          \
    "/* escrow:segment-reconcile */ SELECT pg_terminate_backend($1::integer, 5000) "               \
    "FROM pg_stat_activity WHERE pid = $1::integer"

#define SEG_SQL_FENCED                                                                             \
    "/* escrow:segment-fence */ SELECT s.segment_id FROM segments s "                              \
    "JOIN unnest($1::bigint[], $2::bigint[]) AS d(id, epoch) ON s.segment_id = d.id "              \
    "WHERE s.epoch <> d.epoch OR s.state = 'retired'"

/* A hold by id (columns as seg_store_hold_from_row), then the epoch its
 * segment is at now: a hold that is held in the record but unknown to the
 * memory of its segment's owner was made by a newer owner, unless the
 * epochs agree (then it is a bug). */
#define SEG_SQL_LOOKUP                                                                             \
    "/* escrow:segment-lookup */ SELECT h.hold_id, h.segment_id, h.item_id, h.buyer_id, h.qty, "   \
    "h.qty_sold, h.state, round(extract(epoch FROM h.expires_at) * 1000)::bigint, h.extended, "    \
    "s.epoch FROM holds h LEFT JOIN segments s USING (segment_id) "                                \
    "WHERE h.hold_id = $1::bigint AND h.tenant_id = $2"

/* A resolve's question: the hold this idempotency key has, anywhere in the
 * region. Columns as SEG_SQL_LOOKUP, then request_hash. */
#define SEG_SQL_LOOKUP_KEY                                                                         \
    "/* escrow:segment-resolve */ SELECT hold_id, segment_id, item_id, buyer_id, qty, qty_sold, "  \
    "state, round(extract(epoch FROM expires_at) * 1000)::bigint, extended, request_hash "         \
    "FROM holds WHERE tenant_id = $1 AND idempotency_key = $2"

/* Managed mode: the assigned segments ($2 ids at $3 epochs) that are still
 * this node's ($1) at exactly that epoch, with their items; each one's
 * hold_seq is raised by $4 (ESC_HOLD_SEQ_RANGE) under that epoch: the new
 * owner's range of hold ids, past everything earlier owners reserved.
 * Columns: segment_id, tenant_id, item_id, epoch, available, held, sold,
 * hold_seq (the raised one: the range ends there), state, max_per_order,
 * max_per_buyer, hold_ttl_ms, item state. */
#define SEG_SQL_LOAD_SEGMENTS                                                                      \
    "/* escrow:segment-load */ WITH s AS (UPDATE segments g SET hold_seq = g.hold_seq + "          \
    "$4::bigint "                                                                                  \
    "FROM unnest($2::bigint[], $3::bigint[]) AS a(id, epoch) "                                     \
    "WHERE g.segment_id = a.id AND g.epoch = a.epoch AND g.node_id = $1 AND g.state <> 'retired' " \
    "RETURNING g.*) SELECT s.segment_id, s.tenant_id, s.item_id, s.epoch, "                        \
    "s.available, s.held, s.sold, s.hold_seq, s.state, i.max_per_order, i.max_per_buyer, "         \
    "i.hold_ttl_ms, i.state FROM s JOIN items i USING (tenant_id, item_id)"

/* The live holds of segments $1 and the holds that ended within the
 * retention (so that retries are answered from memory). Columns: hold_id,
 * segment_id, buyer_id, idempotency_key, qty, qty_sold, state, expires (unix
 * ms), extended, request_hash, ended (unix ms or 0). */
#define SEG_SQL_LOAD_HOLDS                                                                         \
    "/* escrow:segment-load */ SELECT hold_id, segment_id, buyer_id, idempotency_key, qty, "       \
    "qty_sold, state, round(extract(epoch FROM expires_at) * 1000)::bigint, extended, "            \
    "request_hash, COALESCE(round(extract(epoch FROM ended_at) * 1000)::bigint, 0) "               \
    "FROM holds WHERE segment_id = ANY ($1::bigint[]) AND (state = 'held' OR "                     \
    "(state <> 'held' AND ended_at > now() - interval '15 minutes')) "                             \
    "ORDER BY ended_at NULLS FIRST LIMIT 4194304"

/* Adds the holds of a SEG_SQL_LOAD_HOLDS result to core (their segments
 * must be in core; rows of other segments are skipped when skip_unknown).
 * Returns 0 or ESC_EINTERNAL with *why set. */
int seg_store_add_holds(const PGresult *r, seg_core *core, bool skip_unknown, char *why,
                        size_t why_len);

/* "active" -> SEG_ACTIVE etc. */
int seg_store_segment_state(const char *s);

/* Registers the node, raises the epoch of every segment assigned to it (so
 * any previous owner is fenced from this moment) and reserves each one a
 * fresh range of hold ids (ESC_HOLD_SEQ_RANGE), and loads items, segments,
 * live holds and recently ended holds into core. Returns 0, ESC_EDB or
 * ESC_EINTERNAL (loaded state inconsistent); *why says what went wrong. */
int seg_store_take_ownership(PGconn *conn, const char *node_id, const char *endpoint,
                             seg_core *core, char *why, size_t why_len);

/* The range of hold ids a load reserved, from the raised hold_seq it
 * returned: next_seq = hold_seq - ESC_HOLD_SEQ_RANGE, seq_limit = hold_seq. */
void seg_store_seq_range(uint64_t hold_seq, seg_segment *proto);

/* "held" -> SEG_HELD etc.; 0 if unknown. */
int seg_store_state_from_text(const char *s);

/* A hold as the commit function's verdicts and the lookups return it, from
 * column c of row: hold_id, segment_id, item_id, buyer_id, qty, qty_sold,
 * state, expires (unix ms), extended. */
void seg_store_hold_from_row(const PGresult *res, int row, int c, wire_hold *w);

#endif
