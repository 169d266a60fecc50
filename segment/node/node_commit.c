/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_commit.c - see node_commit.h.
 *
 * The order of a batch's outcome handling matters: first every op is
 * settled in memory (commit or undo), then requests are answered, then
 * parked requests are decided again, so each decision sees settled state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "escrow_errors.h"
#include "failpoint.h"
#include "log.h"
#include "node_admit.h"
#include "node_commit.h"
#include "node_metrics.h"
#include "node_reply.h"
#include "node_req.h"
#include "node_xfer.h"
#include "pg_result.h"
#include "seg_delta.h"
#include "seg_store.h"
#include "sqlstate.h"

#define BATCH_CAP (ESC_BATCH_ROWS_MAX + ESC_SWEEP_ROWS_MAX)

/* ESC_FAILPOINT_NODE_EXIT (failpoint.h): the chaos suite's crash points.
 * after-give fires only for a batch that gives units to a transfer. */
static void failpoint_check_exit(const node_batch *b, failpoint_where where)
{
    if (!failpoint_node_exit(where)) {
        return;
    }
    if (where == FAILPOINT_AFTER_GIVE) {
        bool gives = false;
        for (size_t i = 0; i < b->n && !gives; i++) {
            gives = b->ops[i].kind == SEG_OP_GIVE;
        }
        if (!gives) {
            return;
        }
    }
    ESC_LOG(ESC_LOG_WARN, "SEG-FAILPOINT", "ESC_FAILPOINT_NODE_EXIT=%s batch=%" PRIu64 ": exiting",
            failpoint_where_name(where), b->batch_id);
    _exit(FAILPOINT_EXIT_STATUS);
}

static void on_commit(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg);

void node_commit_init(node *n)
{
    n->filling_batch.ops = esc_xcalloc(BATCH_CAP, sizeof(seg_op));
    n->filling_batch.n = 0;
    n->filling = &n->filling_batch;
    n->next_batch_id = (uint64_t)esc_wall_ms() * 1000u;
    uint32_t k = n->cfg.commit_streams == 0 ? NODE_STREAMS_DEFAULT : n->cfg.commit_streams;
    n->nstreams = (int)(k > NODE_STREAMS_MAX ? NODE_STREAMS_MAX : k);
    for (int i = 0; i < n->nstreams; i++) {
        node_stream *st = &n->streams[i];
        st->n = n;
        st->batch.ops = esc_xcalloc(BATCH_CAP, sizeof(seg_op));
        for (int j = 0; j < SEG_COMMIT_NPARAMS; j++) {
            pg_array_init(&st->params[j]);
        }
        st->deltas = esc_xcalloc(BATCH_CAP, sizeof *st->deltas);
        st->rejected = esc_xcalloc(BATCH_CAP, sizeof *st->rejected);
        st->present = esc_xcalloc(BATCH_CAP, sizeof *st->present);
    }
}

void node_commit_fini(node *n)
{
    free(n->filling_batch.ops);
    n->filling_batch.ops = NULL;
    for (int i = 0; i < n->nstreams; i++) {
        node_stream *st = &n->streams[i];
        if (st->deltas != NULL) {
            for (int j = 0; j < SEG_COMMIT_NPARAMS; j++) {
                pg_array_fini(&st->params[j]);
            }
        }
        free(st->batch.ops);
        free(st->deltas);
        free(st->rejected);
        free(st->present);
        st->batch.ops = NULL;
        st->deltas = NULL;
        st->rejected = NULL;
        st->present = NULL;
    }
}

bool node_commit_full(const node *n)
{
    return n->filling->n >= ESC_BATCH_ROWS_MAX;
}

static node_stream *idle_stream(node *n, bool ready, bool *lane);

/* Whether op could go in a batch now: its segment is not committing and a
 * stream is idle that takes its tenant's ops. Else adding it sends nothing,
 * and the filling batch is not searched for what could go. */
static bool can_go(node *n, const seg_op *op)
{
    bool lane;
    return !op->seg->committing && idle_stream(n, false, &lane) != NULL &&
           (!lane || node_admit_lane_open(n, op->seg->item->tenant_id));
}

void node_commit_add(node *n, const seg_op *op)
{
    if (n->filling->n >= BATCH_CAP) {
        node_req *r = op->req;
        seg_core_undo_op(&n->core, op);
        if (op->hold == NULL) {
            node_xfer_forget(n, op->transfer_id);
        }
        if (r != NULL) {
            node_reply_answer(n, &r->hdr, &r->req, ESC_EBUSY, NULL);
            node_req_free(n, r);
        }
        return;
    }
    n->filling->ops[n->filling->n++] = *op;
    if (can_go(n, op)) {
        node_commit_kick(n); /* else it waits for a batch to settle, which kicks */
    }
}

void node_commit_sweep(node *n, int64_t now_ms)
{
    size_t room = BATCH_CAP - n->filling->n;
    if (room > ESC_SWEEP_ROWS_MAX) {
        room = ESC_SWEEP_ROWS_MAX;
    }
    size_t k = seg_core_sweep(&n->core, now_ms, n->filling->ops + n->filling->n, room);
    n->filling->n += k;
    n->seq_due = n->core.seq_wanted > 0;
    if (k > 0 || n->seq_due) {
        node_commit_kick(n);
    }
}

/* ---- building the commit call ------------------------------------------- */

static const char *kind_text(int kind)
{
    switch (kind) {
    case SEG_OP_CONFIRM:
        return "converted";
    case SEG_OP_RELEASE:
        return "cancelled";
    case SEG_OP_EXPIRE:
        return "expired";
    default:
        return "extended";
    }
}

static void add_reserve(node_stream *n, const seg_op *op)
{
    const seg_hold *h = op->hold;
    const seg_item *it = h->seg->item;
    pg_array_i64(&n->params[7], (int64_t)h->hold_id);
    pg_array_i64(&n->params[8], (int64_t)h->seg->segment_id);
    pg_array_str(&n->params[9], it->tenant_id);
    pg_array_str(&n->params[10], it->item_id);
    pg_array_str(&n->params[11], h->buyer_id);
    pg_array_i64(&n->params[12], h->qty);
    pg_array_str(&n->params[13], h->key);
    pg_array_i64(&n->params[14], h->request_hash);
    pg_array_i64(&n->params[15], h->expires_at_ms);
    pg_array_i64(&n->params[16], it->max_per_buyer);
    pg_array_i64(&n->params[17], (int64_t)h->seg->epoch);
}

static void add_transition(node_stream *n, const seg_op *op)
{
    pg_array_i64(&n->params[18], (int64_t)op->hold->hold_id);
    pg_array_str(&n->params[19], kind_text(op->kind));
    pg_array_i64(&n->params[20], op->sold);
    pg_array_i64(&n->params[21], op->kind == SEG_OP_EXTEND ? op->new_expires_at_ms : 0);
    pg_array_str(&n->params[SEG_P_T_ACTOR], op->by_operator ? "operator" : "");
}

/* A transfer: its counter delta is computed by the database, only if the
 * transfer's state allows the step; the segment is in the batch anyway, so
 * the epoch fence covers it. */
static void add_xfer(node_stream *n, const seg_op *op)
{
    pg_array_i64(&n->params[SEG_P_X_ID], (int64_t)op->transfer_id);
    pg_array_str(&n->params[SEG_P_X_KIND], op->kind == SEG_OP_GIVE ? "give" : "receive");
    pg_array_i64(&n->params[SEG_P_X_SEG], (int64_t)op->seg->segment_id);
    pg_array_i64(&n->params[SEG_P_X_QTY], op->qty);
}

/* The commit call's parameters: the rows of b's ops in op order, then one
 * row per segment with its deltas (seg_delta.h: in segment id order, and
 * asserted to add up before anything is written). */
static void build_params(node_stream *n, const node_batch *b, const char **values, char *batch_id,
                         size_t batch_id_len)
{
    for (int i = 1; i < SEG_COMMIT_NPARAMS; i++) {
        pg_array_reset(&n->params[i]);
    }
    for (size_t i = 0; i < b->n; i++) {
        const seg_op *op = &b->ops[i];
        if (op->hold == NULL) {
            add_xfer(n, op);
        } else if (op->kind == SEG_OP_RESERVE) {
            add_reserve(n, op);
        } else {
            add_transition(n, op);
        }
    }
    size_t nd = seg_delta_build(&n->n->core, b->ops, b->n, n->deltas, BATCH_CAP);
    for (size_t i = 0; i < nd; i++) {
        const seg_delta *d = &n->deltas[i];
        pg_array_i64(&n->params[1], (int64_t)d->seg->segment_id);
        pg_array_i64(&n->params[2], (int64_t)d->seg->epoch);
        pg_array_i64(&n->params[3], d->available);
        pg_array_i64(&n->params[4], d->held);
        pg_array_i64(&n->params[5], d->sold);
        pg_array_i64(&n->params[6], (int64_t)d->seq_limit);
    }
    n->ndeltas = nd;
    snprintf(batch_id, batch_id_len, "%" PRIu64, b->batch_id);
    values[0] = batch_id;
    for (int i = 1; i < SEG_COMMIT_NPARAMS; i++) {
        values[i] = pg_array_text(&n->params[i]);
    }
}

/* Moves the filling batch's ops on segments no stream is committing into
 * b, in order; the others stay, in order. The last idle stream (lane) only
 * takes the ops of tenants with nothing committing (node_admit_lane_open). */
static void take_ops(node *n, node_batch *b, bool lane)
{
    node_batch *f = n->filling;
    size_t keep = 0;
    b->n = 0;
    for (size_t k = 0; k < f->n; k++) {
        const seg_segment *s = f->ops[k].seg;
        if (s->committing || (lane && !node_admit_lane_open(n, s->item->tenant_id))) {
            f->ops[keep++] = f->ops[k];
        } else {
            b->ops[b->n++] = f->ops[k];
        }
    }
    f->n = keep;
}

/* Sends on st (idle, its connection ready) what no other stream is
 * committing; false if there was nothing to send. */
static bool send_batch(node *n, node_stream *st, bool lane)
{
    node_batch *b = &st->batch;
    take_ops(n, b, lane);
    /* A batch without ops only carries hold id ranges, at most once per
     * sweep tick (seq_due): a refused one is not retried in a tight loop. */
    bool ranges = n->seq_due && n->core.seq_wanted > 0;
    if (b->n == 0 && !ranges) {
        return false;
    }
    const char *values[SEG_COMMIT_NPARAMS];
    char batch_id[24];
    b->batch_id = n->next_batch_id + 1;
    build_params(st, b, values, batch_id, sizeof batch_id);
    if (st->ndeltas == 0) {
        return false; /* the segments that want ranges are all committing */
    }
    node_admit_sent(n, b);
    n->next_batch_id++;
    for (size_t i = 0; i < st->ndeltas; i++) {
        st->deltas[i].seg->committing = true;
    }
    st->busy = true;
    st->backend_pid = PQbackendPID(st->conn.conn);
    st->start_us = esc_mono_us();
    st->unknown = false;
    n->seq_due = false;
    failpoint_check_exit(b, FAILPOINT_BEFORE_COMMIT);
    int rc = pgx_query(&st->conn, SEG_STMT_COMMIT, NULL, SEG_COMMIT_NPARAMS, values, on_commit, st);
    if (rc != 0) {
        /* never sent: nothing happened in the database */
        pgx_err err;
        memset(&err, 0, sizeof err);
        err.code = rc;
        snprintf(err.message, sizeof err.message, "could not send the batch");
        on_commit(&st->conn, NULL, &err, st);
        return true;
    }
    node_admit_batch_opened(n); /* waiting requests into the filling batch */
    n->up.progress(n);          /* room again: reading may resume */
    return true;
}

/* A stream with no batch committing, or NULL; with ready set, one whose
 * connection can take a batch now. *lane: it is the last idle one of
 * several, kept for the tenants with nothing committing. */
static node_stream *idle_stream(node *n, bool ready, bool *lane)
{
    node_stream *found = NULL;
    int idle = 0;
    for (int i = 0; i < n->nstreams; i++) {
        node_stream *st = &n->streams[i];
        idle += !st->busy;
        if (found == NULL && !st->busy && (!ready || pgx_ready(&st->conn))) {
            found = st;
        }
    }
    *lane = idle == 1 && n->nstreams > 1;
    return found;
}

void node_commit_kick(node *n)
{
    bool lane;
    if (n->admit.draining || n->fencing || idle_stream(n, false, &lane) == NULL) {
        return; /* the drain's or the fence's caller kicks once done; a settled batch kicks */
    }
    if (n->filling->n == 0) {
        node_admit_batch_opened(n); /* nothing in the batch: every slot is free */
    } else {
        node_admit_drain(n); /* waiting requests first: they ride this batch */
    }
    node_stream *st;
    while ((st = idle_stream(n, true, &lane)) != NULL && send_batch(n, st, lane)) {
    }
}

/* The batch of st committed: the hold id ranges its rows asked for are
 * durable under the owners' epochs. */
static void grant_ranges(node_stream *st)
{
    for (size_t i = 0; i < st->ndeltas; i++) {
        seg_core_seq_granted(&st->n->core, st->deltas[i].seg, st->deltas[i].seq_limit);
    }
}

/* The batch of st is settled (committed or not): its segments may go in
 * the next batch of any stream. */
static void release_segments(node_stream *st)
{
    node_admit_settled(st->n, &st->batch);
    for (size_t i = 0; i < st->ndeltas; i++) {
        st->deltas[i].seg->committing = false;
    }
    st->ndeltas = 0;
}

/* ---- outcome ------------------------------------------------------------ */

/* Appends list (linked by next) at *tail and moves *tail to its end. */
static void chain(node_req ***tail, void *list)
{
    **tail = list;
    while (**tail != NULL) {
        *tail = &(**tail)->next;
    }
}

static void count_commit(node *n, const seg_op *op)
{
    switch (op->kind) {
    case SEG_OP_CONFIRM:
        n->stats.confirms++;
        break;
    case SEG_OP_RELEASE:
        n->stats.releases++;
        break;
    case SEG_OP_EXPIRE:
        n->stats.expiries++;
        break;
    case SEG_OP_EXTEND:
        n->stats.extends++;
        break;
    default:
        break;
    }
}

/* Settles op k of b in memory: a committed one is finalised and answered;
 * an undone one's request (unless the database's verdict answered it) is
 * chained at *tail to be decided again. */
static void settle_op(node_stream *st, size_t k, bool committed, int64_t now, node_req ***tail)
{
    node *n = st->n;
    seg_op *op = &st->batch.ops[k];
    node_req *r = op->req;
    if (committed && !st->rejected[k]) {
        seg_core_commit_op(&n->core, op, now);
        count_commit(n, op);
        node_metrics_op_committed(n, op->kind);
        if (r != NULL) {
            node_reply_answer(n, &r->hdr, &r->req, r->status, op->hold);
            node_req_free(n, r);
        }
        return;
    }
    seg_core_undo_op(&n->core, op);
    if (r != NULL && st->rejected[k] && r->status == INT32_MIN) {
        node_req_free(n, r); /* already answered by the database's verdict */
    } else if (r != NULL) {
        r->next = NULL;
        chain(tail, r);
    }
}

/* Settles every op of st's batch: committed ones are finalised and
 * answered, rejected/undone ones are undone; then parked requests are
 * decided again and undone requests re-dispatched (attempts bounded). The
 * batch's segments are released first: what is decided again may go in
 * the next batch. */
static void settle(node_stream *st, bool committed, int fail_status)
{
    node *n = st->n;
    node_batch *b = &st->batch;
    release_segments(st);
    int64_t now = esc_wall_ms();
    node_req *again = NULL, **tail = &again;
    for (size_t k = b->n; k-- > 0;) {
        seg_op *op = &b->ops[k];
        if (op->hold == NULL) {
            node_xfer_settle(n, op, committed);
            continue;
        }
        chain(&tail, op->hold->waiters);
        op->hold->waiters = NULL;
        settle_op(st, k, committed, now, &tail);
    }
    b->n = 0;
    node_req *r;
    while ((r = node_req_pop(&again)) != NULL) {
        if (!committed && ++r->attempts > NODE_REQ_ATTEMPTS_MAX) {
            node_reply_answer(n, &r->hdr, &r->req, fail_status, NULL);
            node_req_free(n, r);
            continue;
        }
        n->up.redecide(n, r);
    }
}

static seg_op *find_reserve(node_batch *b, uint64_t hold_id, size_t *idx)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->ops[i].kind == SEG_OP_RESERVE && b->ops[i].hold->hold_id == hold_id) {
            *idx = i;
            return &b->ops[i];
        }
    }
    return NULL;
}

/* The database's verdict on reserves it did not accept: answered here. */
static void apply_rejections(node_stream *st, PGresult *res)
{
    node *n = st->n;
    node_batch *b = &st->batch;
    for (int row = 0; res != NULL && row < PQntuples(res); row++) {
        if (strcmp(PQgetvalue(res, row, 1), "xfer") == 0) {
            node_xfer_verdict(n, (uint64_t)pg_result_i64_or(res, row, 0, 0),
                              PQgetvalue(res, row, 8), pg_result_i64_or(res, row, 6, 0));
            continue;
        }
        size_t idx;
        seg_op *op = find_reserve(b, (uint64_t)pg_result_i64_or(res, row, 0, 0), &idx);
        if (op == NULL) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-COMMIT", "verdict for an unknown hold %s",
                    PQgetvalue(res, row, 0));
            continue;
        }
        st->rejected[idx] = true;
        node_req *r = op->req;
        if (r == NULL) {
            continue;
        }
        r->status = INT32_MIN;
        if (strcmp(PQgetvalue(res, row, 1), "buyer_limit") == 0) {
            node_reply_answer(n, &r->hdr, &r->req, ESC_EBUYER_LIMIT, NULL);
            continue;
        }
        /* duplicate: this key already has a hold, here it is */
        wire_hold w;
        seg_store_hold_from_row(res, row, 2, &w);
        bool same = pg_result_i64_or(res, row, 11, 0) == op->hold->request_hash;
        node_reply_row(n, r, same ? 0 : ESC_EIDEMPOTENCY_MISMATCH, same ? &w : NULL, same);
    }
}

static void batch_done(node_stream *st)
{
    node *n = st->n;
    st->busy = false;
    node_commit_kick(n);
    n->up.progress(n);
}

static void on_fenced_list(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg);

/* Removes the filling batch's ops on seg (undone, answered status). */
static void drop_filling_ops(node *n, const seg_segment *seg, int status)
{
    node_batch *f = n->filling;
    size_t keep = 0;
    for (size_t k = f->n; k-- > 0;) {
        seg_op *op = &f->ops[k];
        if (op->seg != seg) {
            continue;
        }
        node_req *r = op->req;
        if (op->hold != NULL) {
            node_reply_all(n, op->hold->waiters, status);
            op->hold->waiters = NULL;
        }
        seg_core_undo_op(&n->core, op);
        if (op->hold == NULL) {
            node_xfer_forget(n, op->transfer_id);
        }
        op->seg = NULL;
        if (r != NULL) {
            node_reply_answer(n, &r->hdr, &r->req, status, NULL);
            node_req_free(n, r);
        }
    }
    for (size_t k = 0; k < f->n; k++) {
        if (f->ops[k].seg != NULL) {
            f->ops[keep++] = f->ops[k];
        }
    }
    f->n = keep;
}

bool node_commit_touches(const node *n, const seg_segment *s)
{
    (void)n;
    return s->committing;
}

typedef struct drop_ctx {
    node *n;
    int status;
} drop_ctx;

static void drop_waiters_cb(void *waiters, void *arg)
{
    drop_ctx *d = arg;
    node_reply_all(d->n, waiters, d->status);
}

void node_commit_drop_mark(node *n, seg_segment *s, int status)
{
    ESC_ASSERT(!node_commit_touches(n, s));
    drop_filling_ops(n, s, status);
    seg_core_fence_mark(&n->core, s);
}

void node_commit_drop_sweep(node *n, int status)
{
    size_t segments = n->core.unswept;
    if (segments == 0) {
        return;
    }
    int64_t t0 = esc_mono_us();
    drop_ctx d = {n, status};
    size_t holds = seg_core_fence_sweep(&n->core, drop_waiters_cb, &d);
    if (holds > 0) {
        ESC_LOG(ESC_LOG_INFO, "SEG-DROPPED", "%zu segment(s): %zu holds left memory in %.1f ms",
                segments, holds, (double)(esc_mono_us() - t0) / 1000.0);
    }
}

void node_commit_drop_segment(node *n, seg_segment *s, int status)
{
    node_commit_drop_mark(n, s, status);
    node_commit_drop_sweep(n, status);
}

/* The batch was refused by the epoch fence: find which segments moved on. */
static void start_fence_check(node_stream *st)
{
    const char *v[2] = {pg_array_text(&st->params[1]), pg_array_text(&st->params[2])};
    int rc = pgx_query(&st->conn, NULL, SEG_SQL_FENCED, 2, v, on_fenced_list, st);
    if (rc != 0) {
        st->unknown = false;
        st->fence_suspect = false;
        settle(st, false, ESC_EUNAVAILABLE);
        batch_done(st);
    }
}

/* node_commit_fence without the sweep: the caller sweeps (ESC_EFENCED). */
static void fence_mark(node *n, seg_segment *s, const char *why)
{
    ESC_LOG(ESC_LOG_WARN, "SEG-FENCED",
            "seg=%" PRIu64 " item=%s/%s epoch=%" PRIu64
            ": a newer owner exists (%s); this node stops serving it",
            s->segment_id, s->item->tenant_id, s->item->item_id, s->epoch, why);
    node_commit_drop_mark(n, s, ESC_EFENCED);
    n->stats.fenced_segments++;
    node_metrics_fenced(n);
}

void node_commit_fence(node *n, seg_segment *s, const char *why)
{
    fence_mark(n, s, why);
    node_commit_drop_sweep(n, ESC_EFENCED);
}

/* The fence check's answer: the batch's segments whose epoch moved on (or
 * that were retired). A batch refused for a reason only a stale owner can
 * cause (fence_suspect) while none moved on is a bug of ours. */
static void on_fenced_list(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node_stream *st = arg;
    node *n = st->n;
    node_batch *b = &st->batch;
    size_t rows = b->n;
    /* What settling decides again waits in the filling batch until the
     * segments that moved on are dropped (with their ops): no other
     * stream may send an op on one of them first. */
    n->fencing = true;
    settle(st, false, ESC_EUNAVAILABLE); /* the transaction rolled back as a whole */
    int moved = 0;
    for (int row = 0; err->code == 0 && row < PQntuples(res); row++) {
        seg_segment *s =
            seg_core_find_segment(&n->core, (uint64_t)pg_result_i64_or(res, row, 0, 0));
        moved++;
        if (s != NULL && !s->fenced) {
            fence_mark(n, s,
                       st->fence_suspect ? "its batch collided with the new owner's writes"
                                         : "the epoch fence refused its batch");
        }
    }
    node_commit_drop_sweep(n, ESC_EFENCED);
    if (err->code == 0 && moved == 0 && st->fence_suspect) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-BUG",
                "node=%s batch=%" PRIu64 " rows=%zu: refused as if a newer owner had written, "
                "yet this node still owns every segment in it: memory and database disagree",
                n->cfg.node_id, b->batch_id, rows);
    }
    st->fence_suspect = false;
    n->fencing = false;
    batch_done(st);
}

/* The primary key of holds, as a violation names it: holds_pkey, or the
 * index of the day partition the row went to (holds_pYYYYMMDD_pkey,
 * holds_default_pkey). */
static bool is_holds_pkey(const char *constraint)
{
    size_t n = strlen(constraint);
    return strcmp(constraint, "holds_pkey") == 0 ||
           (strncmp(constraint, "holds_", 6) == 0 && n > 11 &&
            strcmp(constraint + n - 5, "_pkey") == 0);
}

/* A refusal that a stale owner causes (its memory is behind the record the
 * new owner writes): checked against the fence before it is called a bug. */
static bool stale_symptom(const pgx_err *err)
{
    return sqlstate_is(err->sqlstate, SQLSTATE_ESC_HOLD_DIVERGED) ||
           is_holds_pkey(err->constraint) ||
           strcmp(err->constraint, "segments_counters_nonneg") == 0;
}

static void log_batch_error(const node *n, const node_batch *b, const pgx_err *err)
{
    /* diagnosed by the constraint's name, never by the message text */
    const char *meaning = "unexpected database error";
    if (strcmp(err->constraint, "segments_counters_nonneg") == 0) {
        meaning = "a counter would go below zero; checking the fence";
    } else if (strcmp(err->constraint, "buyer_usage_within_limit") == 0) {
        meaning = "per-buyer maximum tripped outside the arbiter";
    } else if (is_holds_pkey(err->constraint)) {
        meaning = "hold id reused; checking the fence";
    } else if (sqlstate_is(err->sqlstate, SQLSTATE_ESC_HOLD_DIVERGED)) {
        meaning = "hold state diverged from the record; checking the fence";
    } else if (sqlstate_is(err->sqlstate, SQLSTATE_ESC_FENCED)) {
        meaning = "a newer owner exists";
    } else if (sqlstate_is(err->sqlstate, SQLSTATE_DEADLOCK_DETECTED) ||
               sqlstate_is(err->sqlstate, SQLSTATE_SERIALIZATION_FAILURE)) {
        meaning = "transient conflict; retried";
    }
    ESC_LOG(ESC_LOG_WARN, "SEG-COMMIT",
            "node=%s batch=%" PRIu64 " rows=%zu failed: sqlstate=%s constraint=%s (%s): %s",
            n->cfg.node_id, b->batch_id, b->n, err->sqlstate,
            err->constraint[0] ? err->constraint : "-", meaning, err->message);
}

static void on_commit(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node_stream *st = arg;
    node *n = st->n;
    node_batch *b = &st->batch;
    int64_t us = esc_mono_us() - st->start_us;
    n->stats.batches++;
    node_metrics_commit(n, b->n, us, err->code != 0);
    n->stats.batch_rows += b->n;
    if (b->n > n->stats.batch_rows_max) {
        n->stats.batch_rows_max = b->n;
    }
    n->stats.commit_us_total += us;
    if (us > n->stats.commit_us_max) {
        n->stats.commit_us_max = us;
    }
    memset(st->rejected, 0, b->n * sizeof *st->rejected);
    if (err->code == 0) {
        node_admit_committed(n, us, esc_mono_us());
        failpoint_check_exit(b, FAILPOINT_AFTER_COMMIT);
        failpoint_check_exit(b, FAILPOINT_AFTER_GIVE);
    }
    if (err->code == 0 && failpoint_commit_lost()) {
        ESC_LOG(ESC_LOG_WARN, "SEG-FAILPOINT",
                "batch=%" PRIu64 " committed; dropping the reply and the connection", b->batch_id);
        n->stats.batch_failures++;
        st->unknown = true;
        pgx_drop(&st->conn);
        return;
    }
    if (err->code == 0) {
        grant_ranges(st);
        apply_rejections(st, res);
        settle(st, true, 0);
        batch_done(st);
        return;
    }
    n->stats.batch_failures++;
    if (err->conn_lost) {
        /* COMMIT may or may not have happened: answer nobody until we know */
        ESC_LOG(ESC_LOG_WARN, "SEG-COMMIT",
                "batch=%" PRIu64 " outcome unknown (%s); will reconcile", b->batch_id,
                err->message);
        st->unknown = true;
        return; /* the state callback reconnects, then reconciles */
    }
    log_batch_error(n, b, err);
    st->fence_suspect = stale_symptom(err);
    if (sqlstate_is(err->sqlstate, SQLSTATE_ESC_FENCED) || st->fence_suspect) {
        start_fence_check(st);
        return;
    }
    settle(st, false, ESC_EUNAVAILABLE);
    batch_done(st);
}

/* ---- reconciliation after a lost connection ----------------------------- */

static void on_reconciled(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg);

/* The numbers of s, a list of unsigned decimals separated by anything
 * else (the reconcile's "id state qty ..." text), into out[cap]. */
static size_t parse_numbers(const char *s, uint64_t *out, size_t cap)
{
    size_t k = 0;
    while (*s != '\0' && k < cap) {
        if (*s >= '0' && *s <= '9') {
            char *end;
            out[k++] = strtoull(s, &end, 10);
            s = end;
        } else {
            s++;
        }
    }
    return k;
}

static void on_terminated(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)res;
    node_stream *n = arg;
    if (err->code != 0 && err->conn_lost) {
        n->reconciling = false; /* down again; the next reconnect starts over */
        return;
    }
    char batch_id[24];
    snprintf(batch_id, sizeof batch_id, "%" PRIu64, n->batch.batch_id);
    const char *v[4] = {pg_array_text(&n->params[SEG_P_SEG_ID]), batch_id,
                        pg_array_text(&n->params[SEG_P_HOLD]),
                        pg_array_text(&n->params[SEG_P_X_ID])};
    if (pgx_query(c, NULL, SEG_SQL_RECONCILE, 4, v, on_reconciled, n) != 0) {
        n->reconciling = false;
    }
}

static void start_reconcile(node_stream *n)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", n->backend_pid);
    const char *v[1] = {pid};
    n->reconciling = true;
    /* the old backend may still be running our transaction: end it first,
     * so that what we read next is final */
    if (pgx_query(&n->conn, NULL, SEG_SQL_TERMINATE, 1, v, on_terminated, n) != 0) {
        n->reconciling = false;
    }
}

/* The transfers a committed batch moved ("id state qty ..."); the others
 * of the batch were stale. */
static void reconcile_xfers(node *n, const node_batch *b, const char *moved)
{
    static const char *const states[] = {"stale", "sent", "received", "cancelled"};
    uint64_t v[3 * ESC_HB_TRANSFERS_MAX];
    size_t nv = parse_numbers(moved, v, 3 * ESC_HB_TRANSFERS_MAX);
    for (size_t i = 0; i < b->n; i++) {
        const seg_op *op = &b->ops[i];
        if (op->hold != NULL) {
            continue;
        }
        const char *state = "stale";
        int64_t qty = 0;
        for (size_t j = 0; j + 2 < nv; j += 3) {
            if (v[j] == op->transfer_id && v[j + 1] >= 1 && v[j + 1] <= 3) {
                state = states[v[j + 1]];
                qty = (int64_t)v[j + 2];
            }
        }
        node_xfer_verdict(n, op->transfer_id, state, qty);
    }
}

static void on_reconciled(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node_stream *st = arg;
    node *n = st->n;
    node_batch *b = &st->batch;
    st->reconciling = false;
    if (err->code != 0) {
        if (!err->conn_lost) {
            ESC_LOG(ESC_LOG_ERROR, "SEG-RECONCILE", "batch=%" PRIu64 ": %s", b->batch_id,
                    err->message);
        }
        return; /* retried after the next reconnect */
    }
    bool committed = pg_result_true(res, 0, 0);
    size_t np = 0;
    if (pg_array_parse_i64(pg_result_text_or(res, 0, 1, "{}"), st->present, BATCH_CAP, &np) != 0) {
        /* not what array_agg writes: every reserve is decided again */
        ESC_LOG(ESC_LOG_ERROR, "SEG-RECONCILE", "batch=%" PRIu64 ": unreadable hold list",
                b->batch_id);
    }
    memset(st->rejected, 0, b->n * sizeof *st->rejected);
    for (size_t i = 0; committed && i < b->n; i++) {
        if (b->ops[i].kind != SEG_OP_RESERVE) {
            continue;
        }
        bool found = false;
        for (size_t j = 0; j < np && !found; j++) {
            found = st->present[j] == (int64_t)b->ops[i].hold->hold_id;
        }
        st->rejected[i] = !found; /* decided again: the database will say why */
    }
    if (committed) {
        grant_ranges(st);
        reconcile_xfers(n, b, PQgetvalue(res, 0, 2));
    }
    ESC_LOG(ESC_LOG_INFO, "SEG-RECONCILE", "batch=%" PRIu64 " %s", b->batch_id,
            committed ? "had committed" : "had not committed");
    st->unknown = false;
    settle(st, committed, ESC_EUNAVAILABLE);
    batch_done(st);
}

/* ---- the commit connections ------------------------------------------- */

void node_commit_conn_up(node_stream *st)
{
    if (st->busy && st->unknown && !st->reconciling) {
        start_reconcile(st);
    } else {
        node_commit_kick(st->n);
    }
}

bool node_commit_idle(const node *n)
{
    for (int i = 0; i < n->nstreams; i++) {
        if (n->streams[i].busy) {
            return false;
        }
    }
    return n->filling->n == 0 && n->admit.waiting == 0;
}
