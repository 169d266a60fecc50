/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_delta.c - see seg_delta.h. A batch touches few segments: the entry
 * for an op's segment is found by a linear scan, then the entries are
 * sorted once.
 */
#include "seg_delta.h"

#include <stdlib.h>

#include "log.h"

static seg_delta *touch(seg_delta *out, size_t *nt, seg_segment *s)
{
    for (size_t i = 0; i < *nt; i++) {
        if (out[i].seg == s) {
            return &out[i];
        }
    }
    seg_delta *d = &out[(*nt)++];
    d->seg = s;
    d->available = d->held = d->sold = 0;
    return d;
}

static int by_segment_id(const void *a, const void *b)
{
    uint64_t x = ((const seg_delta *)a)->seg->segment_id;
    uint64_t y = ((const seg_delta *)b)->seg->segment_id;
    return x < y ? -1 : x > y;
}

/* What one op moves: a reserve takes units from available into held; a
 * final transition takes the hold's units out of held into sold and back
 * to available; an extend and a transfer move nothing here. */
static void add_op(seg_delta *d, const seg_op *op)
{
    if (op->hold == NULL || op->kind == SEG_OP_EXTEND) {
        return;
    }
    if (op->kind == SEG_OP_RESERVE) {
        d->available -= op->hold->qty;
        d->held += op->hold->qty;
        return;
    }
    d->held -= op->hold->qty;
    d->sold += op->sold;
    d->available += op->returned;
}

/* Adds the segments whose hold ids ran out (seq_wanted) that the ops do
 * not touch and no other batch is committing, while out has room: their
 * row asks for the next range. */
static void add_wanted(const seg_core *c, seg_delta *out, size_t *nt, size_t cap)
{
    size_t left = c->seq_wanted;
    for (size_t i = 0; i < c->nsegs && left > 0 && *nt < cap; i++) {
        seg_segment *s = &c->segs[i];
        if (s->seq_wanted && !s->fenced) {
            left--;
            if (!s->committing) {
                touch(out, nt, s);
            }
        }
    }
}

size_t seg_delta_build(const seg_core *c, const seg_op *ops, size_t nops, seg_delta *out,
                       size_t cap)
{
    ESC_ASSERT(nops <= cap);
    size_t nt = 0;
    for (size_t i = 0; i < nops; i++) {
        ESC_ASSERT(ops[i].seg != NULL && !ops[i].seg->fenced);
        add_op(touch(out, &nt, ops[i].seg), &ops[i]);
    }
    add_wanted(c, out, &nt, cap);
    qsort(out, nt, sizeof *out, by_segment_id); /* one lock order */
    for (size_t i = 0; i < nt; i++) {
        ESC_ASSERT(out[i].available + out[i].held + out[i].sold == 0);
        seg_core_assert_segment(out[i].seg);
        out[i].seq_limit = seg_core_seq_ask(c, out[i].seg);
    }
    return nt;
}
