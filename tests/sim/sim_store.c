/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_store.c - the simulated PostgreSQL: the durable rows (segments with
 * epoch, counters, hold_seq and last_batch; holds; transfers) and the
 * semantics of escrow_commit_batch (common/schema/migrations/0007): new holds
 * ON CONFLICT (tenant_id, idempotency_key) answered as duplicates,
 * transitions only from 'held' (else ES002, the whole batch rolls back),
 * transfer steps only from the state that allows them, counters by delta
 * under the epoch fence (else ES001) and CHECK (counters >= 0). A batch is
 * validated first and applied only as a whole, as a transaction.
 *
 * Apart from the counters the store keeps, for the checks, each segment's
 * allocation (initial + received - sent) and the sums over its hold rows:
 * they are computed from different inputs than the node's deltas, so a
 * disagreement is a finding.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "sim.h"

#define SEQ_MASK ((1ULL << ESC_HOLD_SEQ_BITS) - 1)

int store_init(sim_store *s, int64_t a1, int64_t a2)
{
    memset(s, 0, sizeof *s);
    s->total = a1 + a2;
    for (int i = 1; i <= SIM_NSEG; i++) {
        st_segment *g = &s->segs[i];
        g->epoch = 1;
        g->available = g->initial = g->alloc = (i == 1) ? a1 : a2;
        g->hold_seq = 1;
    }
    return 0;
}

void store_fini(sim_store *s)
{
    for (int i = 1; i <= SIM_NSEG; i++) {
        free(s->segs[i].by_seq);
    }
    free(s->holds);
    free(s->by_key);
    free(s->xfers);
    memset(s, 0, sizeof *s);
}

/* Grows *arr (elements of size el) to hold index i; aborts on OOM (a test). */
static void *grow(void *arr, size_t *cap, size_t i, size_t el)
{
    if (i < *cap) {
        return arr;
    }
    size_t n = *cap ? *cap : 64;
    while (n <= i) {
        n *= 2;
    }
    char *p = realloc(arr, n * el);
    if (p == NULL) {
        abort();
    }
    memset(p + *cap * el, 0, (n - *cap) * el);
    *cap = n;
    return p;
}

st_hold *store_hold(sim_store *s, uint64_t hold_id)
{
    uint64_t seg = hold_id >> ESC_HOLD_SEQ_BITS, seq = hold_id & SEQ_MASK;
    if (seg < 1 || seg > SIM_NSEG || seq >= s->segs[seg].by_seq_cap) {
        return NULL;
    }
    uint32_t i = s->segs[seg].by_seq[seq];
    return i ? &s->holds[i - 1] : NULL;
}

st_hold *store_hold_by_key(sim_store *s, uint32_t key_no)
{
    if (key_no >= s->by_key_cap || s->by_key[key_no] == 0) {
        return NULL;
    }
    return &s->holds[s->by_key[key_no] - 1];
}

st_xfer *store_xfer(sim_store *s, uint64_t id)
{
    for (size_t i = 0; i < s->nxfers; i++) {
        if (s->xfers[i].id == id) {
            return &s->xfers[i];
        }
    }
    return NULL;
}

int store_plan_xfer(sim_store *s, uint64_t id, int from, int to, int64_t qty)
{
    s->xfers = grow(s->xfers, &s->xfers_cap, s->nxfers, sizeof *s->xfers);
    st_xfer *x = &s->xfers[s->nxfers++];
    memset(x, 0, sizeof *x);
    x->id = id;
    x->from = from;
    x->to = to;
    x->qty = qty;
    x->state = XS_PLANNED;
    return 0;
}

static const char *state_text(int st)
{
    switch (st) {
    case SEG_HELD:
        return "held";
    case SEG_CONVERTED:
        return "converted";
    case SEG_CANCELLED:
        return "cancelled";
    case SEG_EXPIRED:
        return "expired";
    default:
        return "?";
    }
}

static const char *xstate_text(int st)
{
    static const char *const t[] = {"planned", "sent", "received", "cancelled"};
    return (st >= 0 && st <= XS_CANCELLED) ? t[st] : "?";
}

/* ---- commit --------------------------------------------------------------- */

static bool is_transition(int kind)
{
    return kind == SEG_OP_CONFIRM || kind == SEG_OP_RELEASE || kind == SEG_OP_EXPIRE ||
           kind == SEG_OP_EXTEND;
}

/* Steps 1 (duplicates), 4 (transitions only from held) and 5 (transfer
 * verdicts) of escrow_commit_batch, without writing. */
static int validate_rows(sim_world *w, const sim_batch *b, sim_commit_result *out)
{
    sim_store *s = &w->store;
    for (size_t i = 0; i < b->nrows; i++) {
        const sb_row *r = &b->rows[i];
        if (r->kind == SEG_OP_RESERVE && w->mutate != MUT_NO_UNIQUE_KEY &&
            store_hold_by_key(s, r->key_no) != NULL) {
            out->verdict[i] = SV_DUPLICATE;
            out->dup_hold[i] = s->by_key[r->key_no];
        }
    }
    for (size_t i = 0; i < b->nrows; i++) {
        const sb_row *r = &b->rows[i];
        if (!is_transition(r->kind)) {
            continue;
        }
        const st_hold *h = store_hold(s, r->hold_id);
        if (h == NULL || h->state != SEG_HELD || (r->kind == SEG_OP_EXTEND && h->extended)) {
            return SB_DIVERGED;
        }
    }
    for (size_t i = 0; i < b->nrows; i++) {
        const sb_row *r = &b->rows[i];
        const st_xfer *x = store_xfer(s, r->transfer_id);
        if (r->kind == SEG_OP_GIVE) {
            bool ok = x != NULL && x->state == XS_PLANNED && x->from == r->seg && r->qty >= 0;
            out->verdict[i] = !ok ? SV_STALE : r->qty > 0 ? SV_SENT : SV_CANCELLED;
            out->xfer_qty[i] = ok ? r->qty : 0;
        } else if (r->kind == SEG_OP_RECEIVE) {
            bool from_ok = x != NULL && (x->state == XS_SENT || (w->mutate == MUT_DOUBLE_TRANSFER &&
                                                                 x->state == XS_RECEIVED));
            bool ok = from_ok && x->to == r->seg;
            out->verdict[i] = ok ? SV_RECEIVED : SV_STALE;
            out->xfer_qty[i] = ok ? x->qty : 0;
        }
    }
    return SB_OK;
}

/* Step 6: the new counters of each segment in the batch, or the error. */
static int new_counters(sim_world *w, const sim_batch *b, const sim_commit_result *out,
                        int64_t nc[][3])
{
    sim_store *s = &w->store;
    for (size_t k = 0; k < b->nsegs; k++) {
        const sb_seg *d = &b->segs[k];
        const st_segment *g = &s->segs[d->seg];
        if (g->epoch != d->epoch && w->mutate != MUT_FENCED_COMMIT) {
            return SB_FENCED;
        }
        int64_t dupq = 0, xd = 0;
        for (size_t i = 0; i < b->nrows; i++) {
            const sb_row *r = &b->rows[i];
            if (r->seg != d->seg) {
                continue;
            }
            if (out->verdict[i] == SV_DUPLICATE) {
                dupq += r->qty;
            } else if (out->verdict[i] == SV_SENT) {
                xd -= out->xfer_qty[i];
            } else if (out->verdict[i] == SV_RECEIVED) {
                xd += out->xfer_qty[i];
            }
        }
        nc[k][0] = g->available + d->da + dupq + xd;
        nc[k][1] = g->held + d->dh - dupq;
        nc[k][2] = g->sold + d->ds;
        if (nc[k][0] < 0 || nc[k][1] < 0 || nc[k][2] < 0) {
            return SB_CHECK;
        }
    }
    return SB_OK;
}

static void index_hold(sim_store *s, const st_hold *h, uint32_t idx1)
{
    st_segment *g = &s->segs[h->seg];
    uint64_t seq = h->hold_id & SEQ_MASK;
    g->by_seq = grow(g->by_seq, &g->by_seq_cap, seq, sizeof *g->by_seq);
    g->by_seq[seq] = idx1;
    s->by_key = grow(s->by_key, &s->by_key_cap, h->key_no, sizeof *s->by_key);
    if (s->by_key[h->key_no] == 0) {
        s->by_key[h->key_no] = idx1;
    }
}

static void apply_reserve(sim_world *w, const sb_row *r)
{
    sim_store *s = &w->store;
    if (store_hold(s, r->hold_id) != NULL) {
        sim_violation(w, "store: hold id %" PRIu64 " inserted twice (holds_pkey)", r->hold_id);
        return;
    }
    const st_hold *other = store_hold_by_key(s, r->key_no);
    if (other != NULL) {
        sim_violation(w,
                      "P4 two holds for one key: key=k%u holds %" PRIu64 " and %" PRIu64
                      " (UNIQUE (tenant_id, idempotency_key) not enforced)",
                      r->key_no, other->hold_id, r->hold_id);
    }
    s->holds = grow(s->holds, &s->holds_cap, s->nholds, sizeof *s->holds);
    st_hold *h = &s->holds[s->nholds++];
    memset(h, 0, sizeof *h);
    h->hold_id = r->hold_id;
    h->seg = r->seg;
    h->key_no = r->key_no;
    h->buyer = r->buyer;
    h->qty = r->qty;
    h->state = SEG_HELD;
    h->expires_at_ms = r->expires_at_ms;
    h->request_hash = r->request_hash;
    h->epoch = r->epoch;
    h->created_step = w->step;
    s->segs[r->seg].sum_held += r->qty;
    index_hold(s, h, (uint32_t)s->nholds);
}

static void apply_transition(sim_world *w, const sb_row *r)
{
    sim_store *s = &w->store;
    st_hold *h = store_hold(s, r->hold_id);
    check_commit_row(w, r, h, s->segs[r->seg].epoch);
    if (r->kind == SEG_OP_EXTEND) {
        h->expires_at_ms = r->new_expires_at_ms;
        h->extended = true;
        return;
    }
    h->state = r->kind == SEG_OP_CONFIRM   ? SEG_CONVERTED
               : r->kind == SEG_OP_RELEASE ? SEG_CANCELLED
                                           : SEG_EXPIRED;
    h->qty_sold = r->kind == SEG_OP_CONFIRM ? r->sold : 0;
    h->ended_at_ms = w->now_ms;
    h->decided_at_ms = r->decided_at_ms;
    h->end_epoch = r->epoch;
    s->segs[h->seg].sum_held -= h->qty;
    s->segs[h->seg].sum_sold += h->qty_sold;
}

static void apply_xfer(sim_world *w, const sb_row *r, int verdict, int64_t qty, uint64_t batch)
{
    sim_store *s = &w->store;
    st_xfer *x = store_xfer(s, r->transfer_id);
    switch (verdict) {
    case SV_SENT:
        x->state = XS_SENT;
        x->qty = qty;
        x->sent_batch = batch;
        s->segs[x->from].alloc -= qty;
        break;
    case SV_CANCELLED:
        x->state = XS_CANCELLED;
        x->sent_batch = batch;
        break;
    case SV_RECEIVED:
        x->state = XS_RECEIVED;
        x->received_batch = batch;
        x->receives++;
        s->segs[x->to].alloc += qty;
        break;
    default:
        break;
    }
}

/* The store's log of what a commit wrote (history: process "store"). */
static void log_commit(sim_world *w, const sim_batch *b, const sim_commit_result *out, int node)
{
    if (w->hist == NULL && !w->trace) {
        return;
    }
    char buf[8192];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "{\"type\":\"info\",\"process\":\"store\",\"f\":\"commit\",\"value\":{"
                          "\"batch\":%" PRIu64 ",\"node\":%d,\"epochs\":{",
                          b->batch_id, node);
    for (size_t k = 0; k < b->nsegs && n < sizeof buf; k++) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"%d\":%" PRIu64, k ? "," : "",
                              b->segs[k].seg, b->segs[k].epoch);
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "},\"rows\":[");
    bool first = true;
    for (size_t i = 0; i < b->nrows && n < sizeof buf - 200; i++) {
        const sb_row *r = &b->rows[i];
        const char *sep = first ? "" : ",";
        first = false;
        if (r->kind == SEG_OP_RESERVE) {
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  "%s{\"op\":\"%s\",\"hold\":%" PRIu64 ",\"seg\":%d,\"key\":\"k%u\""
                                  ",\"qty\":%" PRId64 ",\"expires\":%" PRId64 "}",
                                  sep, out->verdict[i] == SV_DUPLICATE ? "duplicate" : "reserve",
                                  r->hold_id, r->seg, r->key_no, r->qty, r->expires_at_ms);
        } else if (is_transition(r->kind)) {
            const st_hold *h = store_hold(&w->store, r->hold_id);
            n += (size_t)snprintf(
                buf + n, sizeof buf - n,
                "%s{\"op\":\"%s\",\"hold\":%" PRIu64 ",\"seg\":%d,\"qty\":%" PRId64
                ",\"sold\":%" PRId64 ",\"decided_at\":%" PRId64 ",\"expires\":%" PRId64 "}",
                sep,
                r->kind == SEG_OP_EXTEND    ? "extend"
                : r->kind == SEG_OP_CONFIRM ? "converted"
                : r->kind == SEG_OP_RELEASE ? "cancelled"
                                            : "expired",
                r->hold_id, r->seg, h ? h->qty : 0, r->sold, r->decided_at_ms,
                r->kind == SEG_OP_EXTEND ? r->new_expires_at_ms : (h ? h->expires_at_ms : 0));
        } else {
            static const char *const v[] = {"", "", "stale", "sent", "received", "cancelled"};
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  "%s{\"op\":\"%s\",\"transfer\":%" PRIu64 ",\"seg\":%d"
                                  ",\"qty\":%" PRId64 ",\"verdict\":\"%s\"}",
                                  sep, r->kind == SEG_OP_GIVE ? "give" : "receive", r->transfer_id,
                                  r->seg, out->xfer_qty[i], v[out->verdict[i]]);
        }
    }
    if (n < sizeof buf) {
        snprintf(buf + n, sizeof buf - n, "]}");
    }
    sim_event(w, "%s", buf);
}

void store_commit(sim_world *w, const sim_batch *b, sim_commit_result *out)
{
    memset(out, 0, sizeof *out);
    int64_t nc[SIM_NSEG][3];
    int rc = validate_rows(w, b, out);
    if (rc == SB_OK) {
        rc = new_counters(w, b, out, nc);
    }
    out->outcome = rc;
    if (rc == SB_CHECK) {
        sim_violation(w,
                      "store: CHECK segments_counters_nonneg refused batch %" PRIu64
                      ": the node's memory and the database disagree",
                      b->batch_id);
    }
    if (rc != SB_OK) {
        return;
    }
    sim_store *s = &w->store;
    log_commit(w, b, out, (int)(b->batch_id / 1000000000ULL));
    for (size_t i = 0; i < b->nrows; i++) {
        const sb_row *r = &b->rows[i];
        if (r->kind == SEG_OP_RESERVE && out->verdict[i] != SV_DUPLICATE) {
            apply_reserve(w, r);
        } else if (is_transition(r->kind)) {
            apply_transition(w, r);
        } else if (r->kind == SEG_OP_GIVE || r->kind == SEG_OP_RECEIVE) {
            apply_xfer(w, r, out->verdict[i], out->xfer_qty[i], b->batch_id);
        }
    }
    for (size_t k = 0; k < b->nsegs; k++) {
        const sb_seg *d = &b->segs[k];
        st_segment *g = &s->segs[d->seg];
        if (g->epoch != d->epoch) {
            sim_violation(w,
                          "P7 store accepted batch %" PRIu64
                          " for seg=%d under fenced epoch %" PRIu64 " (current %" PRIu64 ")",
                          b->batch_id, d->seg, d->epoch, g->epoch);
        }
        g->available = nc[k][0];
        g->held = nc[k][1];
        g->sold = nc[k][2];
        g->hold_seq = g->hold_seq > d->seq_limit ? g->hold_seq : d->seq_limit;
        g->last_batch = b->batch_id;
    }
    s->commits++;
}

bool store_committed(const sim_store *s, const sim_batch *b)
{
    for (size_t k = 0; k < b->nsegs; k++) {
        if (s->segs[b->segs[k].seg].last_batch == b->batch_id) {
            return true;
        }
    }
    return false;
}

/* ---- taking ownership (seg_store.c) ------------------------------------- */

static sim_store *sort_store; /* qsort has no context argument */

static int load_cmp(const void *a, const void *b)
{
    const st_hold *x = &sort_store->holds[*(const uint32_t *)a];
    const st_hold *y = &sort_store->holds[*(const uint32_t *)b];
    /* ORDER BY ended_at NULLS FIRST, then insertion order */
    int64_t ex = x->state == SEG_HELD ? -1 : x->ended_at_ms;
    int64_t ey = y->state == SEG_HELD ? -1 : y->ended_at_ms;
    if (ex != ey) {
        return ex < ey ? -1 : 1;
    }
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void load_holds(sim_world *w, sim_node *n)
{
    sim_store *s = &w->store;
    uint32_t *sel = malloc((s->nholds + 1) * sizeof *sel);
    if (sel == NULL) {
        abort();
    }
    size_t k = 0;
    for (size_t i = 0; i < s->nholds; i++) {
        const st_hold *h = &s->holds[i];
        if (h->state == SEG_HELD || h->ended_at_ms > w->now_ms - SIM_RETAIN_MS) {
            sel[k++] = (uint32_t)i;
        }
    }
    sort_store = s;
    qsort(sel, k, sizeof *sel, load_cmp);
    for (size_t i = 0; i < k; i++) {
        const st_hold *h = &s->holds[sel[i]];
        seg_hold proto, *out;
        memset(&proto, 0, sizeof proto);
        proto.hold_id = h->hold_id;
        proto.qty = (int32_t)h->qty;
        proto.qty_sold = (int32_t)h->qty_sold;
        proto.state = (uint8_t)h->state;
        proto.expires_at_ms = h->expires_at_ms;
        proto.extended = h->extended;
        proto.request_hash = h->request_hash;
        proto.ended_at_ms = h->ended_at_ms;
        char buyer[16], key[16];
        snprintf(buyer, sizeof buyer, "b%d", h->buyer);
        snprintf(key, sizeof key, "k%u", h->key_no);
        seg_segment *sg = seg_core_find_segment(&n->core, (uint64_t)h->seg);
        if (sg == NULL || seg_core_add_hold(&n->core, sg, &proto, buyer, key, &out) != 0) {
            sim_violation(w, "recovery: hold %" PRIu64 " cannot be loaded", h->hold_id);
        }
    }
    free(sel);
}

void store_claim(sim_world *w, sim_node *n)
{
    sim_store *s = &w->store;
    char ep[64];
    size_t m = 0;
    for (int i = 1; i <= SIM_NSEG; i++) {
        st_segment *g = &s->segs[i];
        g->epoch++;
        m += (size_t)snprintf(ep + m, sizeof ep - m, "%s\"%d\":%" PRIu64, i > 1 ? "," : "", i,
                              g->epoch);
        seg_segment proto, *out;
        memset(&proto, 0, sizeof proto);
        proto.segment_id = (uint64_t)i;
        proto.epoch = g->epoch;
        proto.available = g->available;
        proto.held = g->held;
        proto.sold = g->sold;
        /* the claim reserves a fresh range of hold ids (seg_store.c) */
        proto.next_seq = g->hold_seq;
        g->hold_seq += SIM_SEQ_RANGE;
        proto.seq_limit = g->hold_seq;
        proto.state = SEG_ACTIVE;
        if (seg_core_add_segment(&n->core, n->item, &proto, &out) != 0) {
            sim_violation(w, "recovery: segment %d cannot be loaded", i);
        }
    }
    sim_event(w,
              "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"claim\",\"value\":{\"node\":%d,"
              "\"epochs\":{%s}}",
              n->id, ep);
    load_holds(w, n);
    uint64_t bad = 0;
    if (seg_core_check(&n->core, &bad) != 0) {
        sim_violation(w, "recovery: segment %" PRIu64 " counters disagree with its holds", bad);
    }
}

/* ---- final state dump (JSON) --------------------------------------------- */

void store_dump(const sim_world *w, FILE *f)
{
    const sim_store *s = &w->store;
    fprintf(f,
            "{\"seed\":%" PRIu64 ",\"tenant\":\"shop\",\"item\":\"tee\",\"total\":%" PRId64
            ",\"segments\":[",
            w->seed, s->total);
    for (int i = 1; i <= SIM_NSEG; i++) {
        const st_segment *g = &s->segs[i];
        fprintf(f,
                "%s{\"id\":%d,\"epoch\":%" PRIu64 ",\"available\":%" PRId64 ",\"held\":%" PRId64
                ",\"sold\":%" PRId64 ",\"initial\":%" PRId64 "}",
                i > 1 ? "," : "", i, g->epoch, g->available, g->held, g->sold, g->initial);
    }
    fprintf(f, "],\"transfers\":[");
    for (size_t i = 0; i < s->nxfers; i++) {
        const st_xfer *x = &s->xfers[i];
        fprintf(f,
                "%s{\"id\":%" PRIu64 ",\"from\":%d,\"to\":%d,\"qty\":%" PRId64 ",\"state\":\"%s\"}",
                i ? "," : "", x->id, x->from, x->to, x->qty, xstate_text(x->state));
    }
    fprintf(f, "],\"holds\":[");
    for (size_t i = 0; i < s->nholds; i++) {
        const st_hold *h = &s->holds[i];
        fprintf(f,
                "%s\n{\"hold\":%" PRIu64
                ",\"seg\":%d,\"key\":\"k%u\",\"buyer\":\"b%d\",\"qty\":%" PRId64
                ",\"qty_sold\":%" PRId64 ",\"state\":\"%s\",\"expires\":%" PRId64
                ",\"extended\":%s,\"epoch\":%" PRIu64 ",\"end_epoch\":%" PRIu64
                ",\"decided_at\":%" PRId64 "}",
                i ? "," : "", h->hold_id, h->seg, h->key_no, h->buyer, h->qty, h->qty_sold,
                state_text(h->state), h->expires_at_ms, h->extended ? "true" : "false", h->epoch,
                h->end_epoch, h->decided_at_ms);
    }
    fprintf(f, "]}\n");
}
