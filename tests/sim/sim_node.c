/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_node.c - the node shell of the simulation: what segment/node/
 * (node_net.c, node_commit.c) does around seg_core, with the simulated
 * store instead of libpq and the simulated network instead of nanomsg.
 *
 *   dispatch: a seg_result is answered now (REPLY), queued into the filling
 *     batch (COMMIT; answered after the batch's outcome), parked on the hold
 *     (PARK; decided again once its op settles) or looked up in the store
 *     (LOOKUP).
 *   group commit: one batch in flight; its outcome is ok (duplicate
 *     verdicts answered, then settle as committed), an error (settle as
 *     failed: undo, re-dispatch, at most SIM_ATTEMPTS_MAX attempts), fenced
 *     (settle as failed, then drop every segment whose epoch moved on), or
 *     unknown (the reply was lost: nobody is answered until reconciliation
 *     through segments.last_batch says whether it committed).
 *   settle mirrors node_commit.c settle(): ops in reverse order, waiters
 *     first, then the again-list is dispatched.
 *
 * Requests live in a fixed pool per node instance (sim_req.next links the
 * parking and again lists), so discarding a crashed node frees everything.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "seg_delta.h"
#include "sim.h"

static void dispatch(sim_world *w, sim_node *n, sim_req *r);

sim_node *node_start(sim_world *w, int id)
{
    sim_node *n = calloc(1, sizeof *n);
    if (n == NULL || seg_core_init(&n->core, 16) != 0) {
        abort();
    }
    n->id = id;
    n->core.retain_ms = SIM_RETAIN_MS;
    n->core.seq_range = SIM_SEQ_RANGE;
    n->next_batch_id = (uint64_t)id * 1000000000ULL;
    seg_item proto;
    memset(&proto, 0, sizeof proto);
    strcpy(proto.tenant_id, "shop");
    strcpy(proto.item_id, "tee");
    proto.max_per_order = 3;
    proto.hold_ttl_ms = SIM_HOLD_TTL_MS;
    if (seg_core_add_item(&n->core, &proto, &n->item) != 0) {
        abort();
    }
    store_claim(w, n);
    w->st.recoveries++;
    return n;
}

void node_free(sim_node *n)
{
    if (n != NULL) {
        seg_core_fini(&n->core);
        free(n);
    }
}

/* ---- requests ------------------------------------------------------------ */

static sim_req *req_alloc(sim_node *n)
{
    for (int i = 0; i < SIM_REQS_MAX; i++) {
        if (!n->reqs[i].used) {
            n->reqs[i].used = true;
            n->reqs[i].next = -1;
            return &n->reqs[i];
        }
    }
    return NULL;
}

static int ridx(const sim_node *n, const sim_req *r)
{
    return (int)(r - n->reqs);
}

static void fill_reply_hold(sim_reply *rep, const seg_hold *h)
{
    rep->has_hold = true;
    rep->hold_id = h->hold_id;
    rep->seg = (int)h->seg->segment_id;
    rep->qty = h->qty;
    rep->qty_sold = h->qty_sold;
    rep->state = h->state;
    rep->expires_at_ms = h->expires_at_ms;
    rep->extended = h->extended;
    rep->epoch = h->seg->epoch;
}

static void answer(sim_world *w, sim_node *n, sim_req *r, int status, const seg_hold *h,
                   uint64_t batch)
{
    sim_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.status = status;
    rep.node = n->id;
    rep.batch = batch;
    if (h != NULL) {
        fill_reply_hold(&rep, h);
    }
    sim_send_reply(w, r->process, r->corr, &rep);
    r->used = false;
}

static void answer_row(sim_world *w, sim_node *n, sim_req *r, int status, const st_hold *h)
{
    sim_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.status = status;
    rep.node = n->id;
    if (h != NULL && status == 0) {
        rep.has_hold = true;
        rep.hold_id = h->hold_id;
        rep.seg = h->seg;
        rep.qty = h->qty;
        rep.qty_sold = h->qty_sold;
        rep.state = h->state;
        rep.expires_at_ms = h->expires_at_ms;
        rep.extended = h->extended;
    }
    sim_send_reply(w, r->process, r->corr, &rep);
}

/* Appends r (a single request) at the end of the list at *head. */
static void list_append(sim_node *n, sim_req **head, sim_req *r)
{
    r->next = -1;
    if (*head == NULL) {
        *head = r;
        return;
    }
    sim_req *t = *head;
    while (t->next >= 0) {
        t = &n->reqs[t->next];
    }
    t->next = ridx(n, r);
}

/* Appends the whole list first at the end of *head. */
static void list_chain(sim_node *n, sim_req **head, sim_req *first)
{
    while (first != NULL) {
        sim_req *next = first->next >= 0 ? &n->reqs[first->next] : NULL;
        list_append(n, head, first);
        first = next;
    }
}

static sim_req *list_pop(sim_node *n, sim_req **head)
{
    sim_req *r = *head;
    if (r != NULL) {
        *head = r->next >= 0 ? &n->reqs[r->next] : NULL;
        r->next = -1;
    }
    return r;
}

/* ---- batches --------------------------------------------------------------- */

static void add_op(sim_world *w, sim_node *n, const seg_op *op, size_t cap)
{
    if (n->nfilling >= cap) {
        sim_req *r = op->req;
        seg_core_undo_op(&n->core, op);
        if (r != NULL) {
            answer(w, n, r, ESC_EBUSY, NULL, 0);
        }
        return;
    }
    n->filling_at[n->nfilling] = w->now_ms;
    n->filling[n->nfilling++] = *op;
}

static void lookup(sim_world *w, sim_node *n, sim_req *r)
{
    if (!w->quiet && sim_pct(w, 20)) {
        sim_fault(w, FLT_DB_QUERY_FAIL);
        answer(w, n, r, ESC_EUNAVAILABLE, NULL, 0);
        return;
    }
    const st_hold *h = store_hold(&w->store, r->hold_id);
    int status;
    if (h == NULL) {
        status = ESC_ENOT_FOUND;
    } else if (h->state == SEG_HELD) {
        status = ESC_EINTERNAL;
    } else if (r->f == F_CONFIRM) {
        status = h->state == SEG_CONVERTED
                     ? ((r->qty == 0 || r->qty == h->qty_sold) ? 0 : ESC_ECONFLICT)
                 : h->state == SEG_EXPIRED ? ESC_EEXPIRED
                                           : ESC_ENOT_HELD;
    } else if (r->f == F_RELEASE) {
        status = h->state == SEG_CANCELLED ? 0
                 : h->state == SEG_EXPIRED ? ESC_EEXPIRED
                                           : ESC_ENOT_HELD;
    } else if (r->f == F_EXTEND) {
        status = h->state == SEG_EXPIRED ? ESC_EEXPIRED : ESC_ENOT_HELD;
    } else {
        status = 0;
    }
    answer_row(w, n, r, status, h);
    r->used = false;
}

static void decide(sim_world *w, sim_node *n, sim_req *r, seg_result *res)
{
    char key[16], buyer[16];
    snprintf(key, sizeof key, "k%u", r->key_no);
    snprintf(buyer, sizeof buyer, "b%d", r->buyer);
    int64_t now = w->now_ms;
    switch (r->f) {
    case F_RESERVE: {
        seg_reserve_in in = {"shop", "tee", buyer, key, r->qty, 0, 0, r->qty * 1000 + r->buyer,
                             0,      false};
        seg_core_reserve(&n->core, &in, now, res);
        break;
    }
    case F_CONFIRM:
        seg_core_confirm(&n->core, "shop", r->hold_id, r->qty,
                         w->mutate == MUT_STALE_CLOCK ? now - 300 : now, res);
        break;
    case F_RELEASE:
        seg_core_release(&n->core, "shop", r->hold_id, now, res);
        break;
    case F_EXTEND:
        seg_core_extend(&n->core, "shop", r->hold_id, r->ttl_ms, now, res);
        break;
    default:
        seg_core_get(&n->core, "shop", r->hold_id, res);
        break;
    }
}

static void dispatch(sim_world *w, sim_node *n, sim_req *r)
{
    seg_result res;
    decide(w, n, r, &res);
    switch (res.disp) {
    case SEG_REPLY:
        answer(w, n, r, res.status, res.hold, 0);
        return;
    case SEG_COMMIT:
        r->status = res.status;
        if (w->mutate == MUT_ACK_BEFORE_COMMIT) {
            sim_reply rep;
            memset(&rep, 0, sizeof rep);
            rep.status = res.status;
            rep.node = n->id;
            fill_reply_hold(&rep, res.hold);
            sim_send_reply(w, r->process, r->corr, &rep);
        }
        res.op.req = r;
        add_op(w, n, &res.op, SIM_BATCH_ROWS);
        return;
    case SEG_PARK: {
        sim_req *head = res.hold->waiters;
        list_append(n, &head, r);
        res.hold->waiters = head;
        return;
    }
    default:
        lookup(w, n, r);
        return;
    }
}

void node_deliver(sim_world *w, sim_node *n, const sim_req *in, bool direct)
{
    (void)direct;
    sim_req *r = req_alloc(n);
    if (r == NULL) {
        sim_req tmp = *in;
        answer(w, n, &tmp, ESC_EBUSY, NULL, 0);
        return;
    }
    int next = r->next;
    *r = *in;
    r->used = true;
    r->next = next;
    r->attempts = 0;
    r->answered_by_db = false;
    dispatch(w, n, r);
}

/* ---- transfers ------------------------------------------------------------- */

/* A transfer's two steps (GIVE on the donor, RECEIVE on the receiver) share
 * its id; the node remembers each step apart. */
static sim_xfer_mem *xfer_find(sim_node *n, uint64_t id, int kind)
{
    for (size_t i = 0; i < n->nxfers; i++) {
        if (n->xfers[i].id == id && n->xfers[i].kind == kind) {
            return &n->xfers[i];
        }
    }
    return NULL;
}

static void xfer_forget(sim_node *n, uint64_t id, int kind)
{
    for (size_t i = 0; i < n->nxfers; i++) {
        if (n->xfers[i].id == id && n->xfers[i].kind == kind) {
            n->xfers[i] = n->xfers[--n->nxfers];
            return;
        }
    }
}

void node_command(sim_world *w, sim_node *n, int kind, uint64_t transfer_id, int seg, int64_t qty)
{
    int op_kind = kind == MSG_GIVE ? SEG_OP_GIVE : SEG_OP_RECEIVE;
    if (xfer_find(n, transfer_id, op_kind) != NULL) {
        return; /* in flight or done here: a repeated command is stale */
    }
    seg_segment *s = seg_core_find_segment(&n->core, (uint64_t)seg);
    if (s == NULL) {
        return;
    }
    seg_op op;
    int rc = kind == MSG_GIVE ? seg_core_give(&n->core, s, transfer_id, qty, &op)
                              : seg_core_receive(&n->core, s, transfer_id, qty, &op);
    if (rc != 0) {
        return;
    }
    if (n->nxfers == SIM_XFERS_MAX) {
        memmove(&n->xfers[0], &n->xfers[1], (SIM_XFERS_MAX - 1) * sizeof n->xfers[0]);
        n->nxfers--;
    }
    sim_xfer_mem *x = &n->xfers[n->nxfers++];
    memset(x, 0, sizeof *x);
    x->id = transfer_id;
    x->kind = op_kind;
    if (n->nfilling >= SIM_BATCH_CAP) {
        seg_core_undo_op(&n->core, &op);
        xfer_forget(n, transfer_id, op_kind);
        return;
    }
    add_op(w, n, &op, SIM_BATCH_CAP);
}

static void xfer_settle(sim_world *w, sim_node *n, const seg_op *op, bool committed)
{
    sim_xfer_mem *x = xfer_find(n, op->transfer_id, op->kind);
    if (!committed || x == NULL) {
        seg_core_undo_op(&n->core, op);
        xfer_forget(n, op->transfer_id, op->kind);
        return;
    }
    seg_op done = *op;
    switch (x->verdict) {
    case SV_SENT:
    case SV_CANCELLED:
        if (x->qty != op->qty) {
            sim_violation(w, "transfer %" PRIu64 ": gave %" PRId64 ", the store says %" PRId64,
                          op->transfer_id, op->qty, x->qty);
        }
        seg_core_commit_op(&n->core, &done, w->now_ms);
        break;
    case SV_RECEIVED:
        done.qty = x->qty;
        seg_core_commit_op(&n->core, &done, w->now_ms);
        break;
    default:
        x->verdict = SV_STALE;
        seg_core_undo_op(&n->core, op);
        break;
    }
    x->done = true;
    w->st.transfers_done++;
}

/* ---- outcome ----------------------------------------------------------------- */

static void settle(sim_world *w, sim_node *n, bool committed, int fail_status)
{
    sim_req *again = NULL;
    for (size_t k = n->ninflight; k-- > 0;) {
        seg_op *op = &n->inflight[k];
        sim_req *r = op->req;
        if (op->hold == NULL) {
            xfer_settle(w, n, op, committed);
            continue;
        }
        list_chain(n, &again, op->hold->waiters);
        op->hold->waiters = NULL;
        if (committed && !n->rejected[k]) {
            seg_core_commit_op(&n->core, op, w->now_ms);
            if (op->kind == SEG_OP_EXPIRE) {
                w->st.expiries++;
            }
            if (r != NULL && w->mutate == MUT_ACK_BEFORE_COMMIT) {
                r->used = false;
            } else if (r != NULL) {
                answer(w, n, r, r->status, op->hold, n->batch.batch_id);
            }
            continue;
        }
        seg_core_undo_op(&n->core, op);
        if (r != NULL && n->rejected[k] && r->answered_by_db) {
            r->used = false;
        } else if (r != NULL) {
            list_append(n, &again, r);
        }
    }
    n->ninflight = 0;
    n->if_state = IF_NONE;
    sim_req *r;
    while ((r = list_pop(n, &again)) != NULL) {
        if (!committed && ++r->attempts > SIM_ATTEMPTS_MAX) {
            answer(w, n, r, fail_status, NULL, 0);
            continue;
        }
        dispatch(w, n, r);
    }
}

static int find_reserve(const sim_node *n, uint64_t hold_id)
{
    for (size_t i = 0; i < n->ninflight; i++) {
        if (n->inflight[i].kind == SEG_OP_RESERVE && n->inflight[i].hold->hold_id == hold_id) {
            return (int)i;
        }
    }
    return -1;
}

/* The store's verdicts: duplicates are answered here (with the existing
 * hold, or IDEMPOTENCY_MISMATCH), transfer verdicts remembered. */
static void apply_verdicts(sim_world *w, sim_node *n)
{
    const sim_batch *b = &n->batch;
    const sim_commit_result *res = &n->if_result;
    for (size_t i = 0; i < b->nrows; i++) {
        const sb_row *row = &b->rows[i];
        if (row->kind == SEG_OP_GIVE || row->kind == SEG_OP_RECEIVE) {
            sim_xfer_mem *x = xfer_find(n, row->transfer_id, row->kind);
            if (x != NULL && !x->done) {
                x->verdict = res->verdict[i];
                x->qty = res->verdict[i] == SV_STALE ? 0 : res->xfer_qty[i];
            }
            continue;
        }
        if (res->verdict[i] != SV_DUPLICATE) {
            continue;
        }
        int k = find_reserve(n, row->hold_id);
        if (k < 0) {
            continue;
        }
        n->rejected[k] = true;
        sim_req *r = n->inflight[k].req;
        if (r == NULL) {
            continue;
        }
        const st_hold *h = &w->store.holds[res->dup_hold[i] - 1];
        bool same = h->request_hash == row->request_hash;
        answer_row(w, n, r, same ? 0 : ESC_EIDEMPOTENCY_MISMATCH, h);
        r->answered_by_db = true;
    }
}

static void drop_filling_ops(sim_world *w, sim_node *n, const seg_segment *seg)
{
    size_t keep = 0;
    for (size_t k = n->nfilling; k-- > 0;) {
        seg_op *op = &n->filling[k];
        if (op->seg != seg) {
            continue;
        }
        sim_req *r = op->req;
        if (op->hold != NULL) {
            sim_req *wt;
            sim_req *head = op->hold->waiters;
            while ((wt = list_pop(n, &head)) != NULL) {
                answer(w, n, wt, ESC_EFENCED, NULL, 0);
            }
            op->hold->waiters = NULL;
        }
        seg_core_undo_op(&n->core, op);
        if (op->hold == NULL) {
            xfer_forget(n, op->transfer_id, op->kind);
        }
        op->seg = NULL;
        if (r != NULL) {
            answer(w, n, r, ESC_EFENCED, NULL, 0);
        }
    }
    for (size_t k = 0; k < n->nfilling; k++) {
        if (n->filling[k].seg != NULL) {
            n->filling_at[keep] = n->filling_at[k];
            n->filling[keep++] = n->filling[k];
        }
    }
    n->nfilling = keep;
}

typedef struct fence_ctx {
    sim_world *w;
    sim_node *n;
} fence_ctx;

static void fence_waiters_cb(void *waiters, void *arg)
{
    fence_ctx *c = arg;
    sim_req *head = waiters, *r;
    while ((r = list_pop(c->n, &head)) != NULL) {
        answer(c->w, c->n, r, ESC_EFENCED, NULL, 0);
    }
}

/* The batch was refused by the fence: drop every segment that moved on. */
static void fence_check(sim_world *w, sim_node *n)
{
    for (int i = 1; i <= SIM_NSEG; i++) {
        seg_segment *s = seg_core_find_segment(&n->core, (uint64_t)i);
        if (s == NULL || s->fenced || w->store.segs[i].epoch == s->epoch) {
            continue;
        }
        drop_filling_ops(w, n, s);
        fence_ctx c = {w, n};
        seg_core_fence(&n->core, s, fence_waiters_cb, &c);
        for (size_t k = n->nxfers; k-- > 0;) {
            if (!n->xfers[k].done) {
                xfer_forget(n, n->xfers[k].id, n->xfers[k].kind);
            }
        }
        w->st.fences++;
        sim_event(w,
                  "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"fenced\",\"value\":{"
                  "\"node\":%d,\"seg\":%d,\"epoch\":%" PRIu64 "}",
                  n->id, i, s->epoch);
    }
}

/* Reconciliation after a lost reply: did the batch commit (last_batch),
 * which of its new holds exist, which transfers did it move? */
/* The inflight batch committed: the hold id limits its rows asked for are
 * durable (node_commit.c grant_ranges). */
static void grant_ranges(sim_node *n)
{
    for (size_t k = 0; k < n->batch.nsegs; k++) {
        const sb_seg *t = &n->batch.segs[k];
        seg_segment *s = seg_core_find_segment(&n->core, (uint64_t)t->seg);
        if (s != NULL) {
            seg_core_seq_granted(&n->core, s, t->seq_limit);
        }
    }
}

static void reconcile(sim_world *w, sim_node *n)
{
    if (!w->quiet && sim_pct(w, 100)) {
        sim_fault(w, FLT_DB_QUERY_FAIL); /* down again; retried next step */
        return;
    }
    w->st.reconciles++;
    const sim_batch *b = &n->batch;
    bool committed = store_committed(&w->store, b);
    memset(n->rejected, 0, sizeof n->rejected);
    for (size_t i = 0; committed && i < n->ninflight; i++) {
        const seg_op *op = &n->inflight[i];
        if (op->kind == SEG_OP_RESERVE) {
            n->rejected[i] = store_hold(&w->store, op->hold->hold_id) == NULL;
        } else if (op->hold == NULL) {
            sim_xfer_mem *x = xfer_find(n, op->transfer_id, op->kind);
            const st_xfer *sx = store_xfer(&w->store, op->transfer_id);
            if (x == NULL) {
                continue;
            }
            x->verdict = SV_STALE;
            x->qty = 0;
            if (sx != NULL && (sx->state == XS_SENT || sx->state == XS_CANCELLED) &&
                sx->sent_batch == b->batch_id) {
                x->verdict = sx->state == XS_SENT ? SV_SENT : SV_CANCELLED;
                x->qty = sx->state == XS_SENT ? sx->qty : 0;
            } else if (sx != NULL && sx->state == XS_RECEIVED &&
                       sx->received_batch == b->batch_id) {
                x->verdict = SV_RECEIVED;
                x->qty = sx->qty;
            }
        }
    }
    sim_event(w,
              "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"reconciled\",\"value\":{"
              "\"node\":%d,\"batch\":%" PRIu64 ",\"committed\":%s}",
              n->id, b->batch_id, committed ? "true" : "false");
    if (committed) {
        grant_ranges(n);
    }
    settle(w, n, committed, ESC_EUNAVAILABLE);
}

static void on_outcome(sim_world *w, sim_node *n)
{
    memset(n->rejected, 0, sizeof n->rejected);
    if (n->if_reply_lost) {
        if (w->mutate == MUT_LOST_AS_FAILED) {
            settle(w, n, false, ESC_EUNAVAILABLE); /* the bug: no reconciliation */
            return;
        }
        n->if_state = IF_UNKNOWN;
        return;
    }
    switch (n->if_result.outcome) {
    case SB_OK:
        grant_ranges(n);
        apply_verdicts(w, n);
        settle(w, n, true, 0);
        return;
    case SB_FENCED:
        settle(w, n, false, ESC_EUNAVAILABLE);
        fence_check(w, n);
        return;
    default:
        settle(w, n, false, ESC_EUNAVAILABLE);
        return;
    }
}

/* What node_commit.c's build_params writes: rows in op order, and one
 * delta per segment from the core's seg_delta_build (the same code the
 * node runs, with its assertions). */
static void build_batch(sim_node *n)
{
    sim_batch *b = &n->batch;
    b->batch_id = ++n->next_batch_id;
    b->nrows = n->ninflight;
    for (size_t i = 0; i < n->ninflight; i++) {
        const seg_op *op = &n->inflight[i];
        sb_row *r = &b->rows[i];
        memset(r, 0, sizeof *r);
        r->kind = op->kind;
        r->seg = (int)op->seg->segment_id;
        r->epoch = op->seg->epoch;
        r->decided_at_ms = n->filling_at[i];
        if (op->hold == NULL) {
            r->transfer_id = op->transfer_id;
            r->qty = op->qty;
            continue;
        }
        const seg_hold *h = op->hold;
        r->hold_id = h->hold_id;
        r->qty = h->qty;
        if (op->kind == SEG_OP_RESERVE) {
            r->key_no = (uint32_t)strtoul(h->key + 1, NULL, 10);
            r->buyer = (int)strtol(h->buyer_id + 1, NULL, 10);
            r->request_hash = h->request_hash;
            r->expires_at_ms = h->expires_at_ms;
            continue;
        }
        r->sold = op->sold;
        r->returned = op->returned;
        r->new_expires_at_ms = op->new_expires_at_ms;
    }
    seg_delta d[SIM_BATCH_CAP];
    b->nsegs = seg_delta_build(&n->core, n->inflight, n->ninflight, d, SIM_BATCH_CAP);
    for (size_t k = 0; k < b->nsegs; k++) {
        sb_seg *t = &b->segs[k];
        t->seg = (int)d[k].seg->segment_id;
        t->epoch = d[k].seg->epoch;
        t->da = d[k].available;
        t->dh = d[k].held;
        t->ds = d[k].sold;
        t->seq_limit = d[k].seq_limit;
    }
}

/* Sends the filling batch; the store's outcome and the reply's fate are
 * decided now (the commit happens now or never; the reply comes later or
 * is lost). */
static void send_batch(sim_world *w, sim_node *n)
{
    memcpy(n->inflight, n->filling, n->nfilling * sizeof n->filling[0]);
    n->ninflight = n->nfilling;
    n->nfilling = 0;
    build_batch(n);
    w->st.batches++;
    n->if_state = IF_WAIT;
    n->if_reply_step = w->step + 1;
    n->if_reply_lost = false;
    memset(&n->if_result, 0, sizeof n->if_result);
    unsigned r = w->quiet ? 1000 : (unsigned)sim_below(w, 1000);
    const char *fault = NULL;
    if (r < 25) {
        sim_fault(w, FLT_DB_ERROR);
        fault = "db-error";
        n->if_result.outcome = SB_ERROR; /* a transient error: nothing happened */
    } else if (r < 50) {
        sim_fault(w, FLT_DB_LOST_UNCOMMITTED);
        fault = "db-lost-uncommitted";
        n->if_reply_lost = true;
        n->if_result.outcome = SB_ERROR;
    } else {
        store_commit(w, &n->batch, &n->if_result);
        if (r < 95) {
            sim_fault(w, FLT_DB_LOST_COMMITTED);
            fault = "db-lost-committed";
            n->if_reply_lost = true;
        } else if (r < 150) {
            sim_fault(w, FLT_DB_DELAY);
            fault = "db-delay";
            n->if_reply_step += 1 + (int64_t)sim_below(w, 8);
        }
    }
    if (fault != NULL) {
        sim_event(w,
                  "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"%s\",\"value\":{\"node\":%d,"
                  "\"batch\":%" PRIu64 "}",
                  fault, n->id, n->batch.batch_id);
    }
}

void node_tick(sim_world *w, sim_node *n)
{
    if (n->if_state == IF_WAIT && w->step >= n->if_reply_step) {
        on_outcome(w, n);
    }
    if (n->if_state == IF_UNKNOWN) {
        reconcile(w, n);
    }
    size_t room = SIM_BATCH_CAP - n->nfilling;
    room = room > SIM_SWEEP_ROWS ? SIM_SWEEP_ROWS : room;
    size_t k = seg_core_sweep(&n->core, w->now_ms, n->filling + n->nfilling, room);
    for (size_t i = 0; i < k; i++) {
        n->filling_at[n->nfilling + i] = w->now_ms;
    }
    n->nfilling += k;
    seg_core_trim(&n->core, w->now_ms);
    if (n->if_state == IF_NONE && n->nfilling > 0) {
        send_batch(w, n);
    }
}

bool node_quiescent(const sim_node *n)
{
    return n->if_state == IF_NONE && n->nfilling == 0;
}
