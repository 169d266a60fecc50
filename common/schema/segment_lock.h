/* SPDX-License-Identifier: Apache-2.0 */
/*
 * segment_lock.h - the lock order of segments rows.
 *
 * A statement that changes several segments rows locks them lowest
 * segment_id first, before it changes any (migration
 * 0020_segment_lock_order). An UPDATE alone locks rows in the order its
 * plan reads them: a node's batch (its segments' counters) and a collapse
 * (every other segment of the item draining) took the same rows in
 * different orders and deadlocked mid-sale; PostgreSQL broke the cycle
 * after deadlock_timeout (1 s) by aborting one of them. Two transactions
 * that take the rows in one order never wait for each other in a cycle
 * over them. escrow_commit_batch and escrow_global_restock follow the rule
 * in SQL; tests/integration/lock_order.sh proves it for the batch and the
 * collapse.
 *
 * SEGMENTS_LOCKED(cond) is a sub-select for an UPDATE's FROM list: the ids
 * of the segments rows that match cond (an SQL condition on the columns of
 * segments, unqualified), locked in ascending order, as l.segment_id. The
 * UPDATE joins it (`AND s.segment_id = l.segment_id`) and so changes a row
 * only after the sub-select locked it. FOR NO KEY UPDATE is the lock an
 * UPDATE of non-key columns takes itself: foreign key checks (KEY SHARE)
 * still pass.
 */
#ifndef ESC_SEGMENT_LOCK_H
#define ESC_SEGMENT_LOCK_H

#define SEGMENTS_LOCKED(cond)                                                                      \
    "(SELECT segment_id FROM segments WHERE " cond                                                 \
    " ORDER BY segment_id FOR NO KEY UPDATE) l"

#endif
