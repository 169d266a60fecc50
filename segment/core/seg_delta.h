/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_delta.h - what a batch of decided ops changes in each segment row:
 * the counter deltas (available, held, sold) the group commit applies
 * under the epoch fence. Part of the segment core: pure, no I/O. The node
 * (node_commit.c) and the simulator turn the same ops into the same
 * deltas through it; the node then writes them as the commit call's
 * parameters.
 *
 * One entry per segment the ops touch, in segment id order: every batch
 * locks its segment rows in that one order, so two batches never deadlock.
 * A transfer op (GIVE, RECEIVE) touches its segment with zero deltas: the
 * database computes a transfer's delta from the transfer row, but the
 * segment must be in the batch for the fence to cover it. Every entry also
 * asks for the segment's next range of hold ids (ESC_HOLD_SEQ_RANGE); a
 * segment whose ids ran out is added with zero deltas for that alone.
 *
 * Invariants, asserted in every build while the deltas are built: each
 * touched segment is served (not fenced) and its counters add up
 * (seg_core_assert_segment); a batch moves units between states and never
 * makes or loses one, so available + held + sold == 0 in every entry.
 */
#ifndef ESC_SEG_DELTA_H
#define ESC_SEG_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "seg_core.h"

typedef struct seg_delta {
    seg_segment *seg; /* borrowed */
    int64_t available, held, sold;
    /* The hold id limit the row asks for (seg_core_seq_ask): written to
     * segments.hold_seq under the fence; once the batch committed, the
     * caller gives it to seg_core_seq_granted. */
    uint64_t seq_limit;
} seg_delta;

/* Fills out with one entry per segment ops[0..nops) touch, plus (room
 * permitting) one with zero deltas per segment of c whose hold ids ran out
 * (seq_wanted) and that no batch is committing, sorted by segment id, and
 * returns how many. out (caller
 * storage) has room for cap >= nops entries. */
size_t seg_delta_build(const seg_core *c, const seg_op *ops, size_t nops, seg_delta *out,
                       size_t cap);

#endif
