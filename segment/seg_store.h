/*
 * seg_store.h - the segment node's SQL: taking ownership and loading state
 * at start (synchronous; the loop is not running yet), and the text of the
 * statements the node runs asynchronously on its connections.
 */
#ifndef ESC_SEG_STORE_H
#define ESC_SEG_STORE_H

#include <libpq-fe.h>

#include "seg_core.h"

#define SEG_STMT_COMMIT "escrow_commit"
#define SEG_SQL_COMMIT                                                                             \
    "/* escrow:segment-commit */ SELECT * FROM escrow_commit_batch("                               \
    "$1::bigint, $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], "           \
    "$7::bigint[], $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], "            \
    "$13::integer[], $14::text[], $15::bigint[], $16::bigint[], $17::integer[], $18::bigint[], "   \
    "$19::bigint[], $20::text[], $21::integer[], $22::bigint[])"
#define SEG_COMMIT_NPARAMS 22

/* Did batch $2 commit? Which of its new holds exist? (after a lost connection) */
#define SEG_SQL_RECONCILE                                                                          \
    "/* escrow:segment-reconcile */ SELECT "                                                       \
    "COALESCE((SELECT bool_or(last_batch = $2::bigint) FROM segments "                             \
    "          WHERE segment_id = ANY ($1::bigint[])), false), "                                   \
    "COALESCE((SELECT array_agg(hold_id) FROM holds WHERE hold_id = ANY ($3::bigint[])), '{}')"

#define SEG_SQL_TERMINATE                                                                          \
    "/* escrow:segment-reconcile */ SELECT pg_terminate_backend($1::integer, 5000) "               \
    "FROM pg_stat_activity WHERE pid = $1::integer"

#define SEG_SQL_FENCED                                                                             \
    "/* escrow:segment-fence */ SELECT s.segment_id FROM segments s "                              \
    "JOIN unnest($1::bigint[], $2::bigint[]) AS d(id, epoch) ON s.segment_id = d.id "              \
    "WHERE s.epoch <> d.epoch OR s.state = 'retired'"

#define SEG_SQL_LOOKUP                                                                             \
    "/* escrow:segment-lookup */ SELECT hold_id, segment_id, item_id, buyer_id, qty, qty_sold, "   \
    "state, round(extract(epoch FROM expires_at) * 1000)::bigint, extended "                       \
    "FROM holds WHERE hold_id = $1::bigint AND tenant_id = $2"

/* Registers the node, raises the epoch of every segment assigned to it (so
 * any previous owner is fenced from this moment), and loads items, segments,
 * live holds and recently ended holds into core. Returns 0, ESC_EDB or
 * ESC_EINTERNAL (loaded state inconsistent); *why says what went wrong. */
int seg_store_take_ownership(PGconn *conn, const char *node_id, const char *endpoint,
                             seg_core *core, char *why, size_t why_len);

/* "held" -> SEG_HELD etc.; 0 if unknown. */
int seg_store_state_from_text(const char *s);

#endif
