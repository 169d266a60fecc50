/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_policy.c - see coord_policy.h.
 *
 * One pass, in this order: units an operator asked to remove (reduce) are
 * reclaimed first; then either collapse (decided alone: the segments' states
 * change in the database before anything moves), or, collapsed, one transfer
 * into the tail (restocked units first, then the draining segment with the
 * most available); or, not collapsed, surplus segments of a split give to
 * the active ones, unallocated units are spread over the active segments,
 * and stock moves toward demand. Every choice takes segments that are not
 * busy and marks them busy, so a plan never uses a segment twice.
 */
#include "coord_policy.h"

#include <math.h>
#include <string.h>

#include "esc_limits.h"
#include "log.h"
#include "wire.h"

/* Weight of one SEGMENT_EMPTY answer against one reserved unit: a refused
 * buyer is demand that was not met. */
#define DEMAND_EMPTY_WEIGHT 1.0
/* Smoothing time of the demand estimate. */
#define DEMAND_TAU_US 1000000.0

static const char *const reason_names[COORD_R_LAST_] = {
    "rebalance", "refill", "collapse", "forward", "restock", "reduce", "split"};

const char *coord_policy_reason_name(int reason)
{
    return reason >= 0 && reason < COORD_R_LAST_ ? reason_names[reason] : "rebalance";
}

typedef struct pass {
    const coord_pitem *in;
    bool busy[ESC_SEGMENTS_PER_ITEM_MAX];
    coord_plan *out;
} pass;

static bool usable(const pass *p, size_t i)
{
    const coord_pseg *s = &p->in->segs[i];
    return s->owner_live && !p->busy[i] && s->state != WIRE_SEG_RETIRED;
}

static bool add(pass *p, long from, long to, int64_t qty, int reason)
{
    if (qty < 1 || p->out->nxfers == COORD_PLAN_XFERS_MAX) {
        return false;
    }
    coord_pxfer *x = &p->out->xfers[p->out->nxfers++];
    x->from = from >= 0 ? p->in->segs[from].segment_id : 0;
    x->to = to >= 0 ? p->in->segs[to].segment_id : 0;
    x->qty = qty;
    x->reason = reason;
    if (from >= 0) {
        ESC_ASSERT(qty <= p->in->segs[from].available);
        p->busy[from] = true;
    }
    if (to >= 0) {
        p->busy[to] = true;
    }
    return true;
}

int64_t coord_policy_remaining(const coord_pitem *in)
{
    int64_t r = in->in_flight + in->unallocated;
    for (size_t i = 0; i < in->nsegs; i++) {
        if (in->segs[i].state != WIRE_SEG_RETIRED) {
            r += in->segs[i].available;
        }
    }
    return r;
}

bool coord_policy_sold_out(const coord_pitem *in)
{
    if (in->retired || in->unallocated != 0 || in->in_flight != 0) {
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < in->nsegs; i++) {
        const coord_pseg *s = &in->segs[i];
        if (s->state == WIRE_SEG_RETIRED) {
            continue;
        }
        if (!s->reported || s->available != 0 || s->held != 0 || s->busy) {
            return false;
        }
        n++;
    }
    return n > 0;
}

/* Units to remove that are not yet on their way back: taken from the
 * segments with the most available. */
static void plan_reduce(pass *p)
{
    int64_t left =
        p->in->reduce_pending + p->in->export_want - p->in->reclaiming - p->in->unallocated;
    while (left > 0) {
        long best = -1;
        for (size_t i = 0; i < p->in->nsegs; i++) {
            if (usable(p, i) && p->in->segs[i].available > 0 &&
                (best < 0 || p->in->segs[i].available > p->in->segs[best].available)) {
                best = (long)i;
            }
        }
        if (best < 0) {
            return;
        }
        int64_t q = p->in->segs[best].available < left ? p->in->segs[best].available : left;
        if (!add(p, best, -1, q, COORD_R_REDUCE)) {
            return;
        }
        left -= q;
    }
}

static long find_segment(const coord_pitem *in, uint64_t id)
{
    for (size_t i = 0; i < in->nsegs; i++) {
        if (in->segs[i].segment_id == id) {
            return (long)i;
        }
    }
    return -1;
}

/* Collapsed: one transfer at a time into the tail. */
static void plan_collapsed(pass *p)
{
    long t = find_segment(p->in, p->in->tail_segment);
    if (t < 0 || !usable(p, (size_t)t)) {
        return;
    }
    if (p->in->unallocated > 0 && p->in->reduce_pending == 0 && p->in->export_want == 0) {
        add(p, -1, t, p->in->unallocated, COORD_R_RESTOCK);
        return;
    }
    long best = -1;
    for (size_t i = 0; i < p->in->nsegs; i++) {
        const coord_pseg *s = &p->in->segs[i];
        if ((long)i != t && s->state == WIRE_SEG_DRAINING && usable(p, i) && s->available > 0 &&
            (best < 0 || s->available > p->in->segs[best].available)) {
            best = (long)i;
        }
    }
    if (best >= 0) {
        const coord_pseg *d = &p->in->segs[best];
        add(p, best, t, d->available, d->forwarded ? COORD_R_FORWARD : COORD_R_COLLAPSE);
    }
}

/* The usable active segment with the least available, or -1. */
static long lowest_active(const pass *p)
{
    long best = -1;
    for (size_t i = 0; i < p->in->nsegs; i++) {
        const coord_pseg *s = &p->in->segs[i];
        if (s->state == WIRE_SEG_ACTIVE && usable(p, i) &&
            (best < 0 || s->available < p->in->segs[best].available)) {
            best = (long)i;
        }
    }
    return best;
}

/* Not collapsed: draining segments (surplus after a split) give everything
 * to the active segments with the least available. */
static void plan_split_surplus(pass *p)
{
    for (size_t i = 0; i < p->in->nsegs; i++) {
        const coord_pseg *s = &p->in->segs[i];
        if (s->state != WIRE_SEG_DRAINING || !usable(p, i) || s->available <= 0) {
            continue;
        }
        long to = lowest_active(p);
        if (to < 0) {
            return;
        }
        add(p, (long)i, to, s->available, COORD_R_SPLIT);
    }
}

/* Unallocated units (a restock) spread over the usable active segments,
 * equal shares, the busiest first (they get the remainder). */
static void plan_restock(pass *p)
{
    if (p->in->unallocated <= 0 || p->in->reduce_pending > 0 || p->in->export_want > 0) {
        return;
    }
    long order[ESC_SEGMENTS_PER_ITEM_MAX];
    size_t n = 0;
    for (size_t i = 0; i < p->in->nsegs; i++) {
        if (p->in->segs[i].state == WIRE_SEG_ACTIVE && usable(p, i)) {
            size_t j = n++;
            while (j > 0 && p->in->segs[order[j - 1]].demand < p->in->segs[i].demand) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = (long)i;
        }
    }
    if (n == 0) {
        return;
    }
    int64_t share = p->in->unallocated / (int64_t)n, rem = p->in->unallocated % (int64_t)n;
    for (size_t k = 0; k < n; k++) {
        add(p, -1, order[k], share + ((int64_t)k < rem ? 1 : 0), COORD_R_RESTOCK);
    }
}

/* Targets proportional to demand (equal shares without demand). */
static void targets(const coord_pitem *in, double *target)
{
    double sum_avail = 0, sum_demand = 0;
    size_t n = 0;
    for (size_t i = 0; i < in->nsegs; i++) {
        if (in->segs[i].state == WIRE_SEG_ACTIVE) {
            sum_avail += (double)in->segs[i].available;
            sum_demand += in->segs[i].demand;
            n++;
        }
    }
    for (size_t i = 0; i < in->nsegs; i++) {
        const coord_pseg *s = &in->segs[i];
        if (s->state != WIRE_SEG_ACTIVE) {
            target[i] = 0;
        } else if (sum_demand > 0) {
            target[i] = sum_avail * s->demand / sum_demand;
        } else {
            target[i] = sum_avail / (double)n;
        }
    }
}

/* Receiver: dry, or below low water with demand; the largest deficit. */
static long pick_receiver(const pass *p, const double *target, int64_t *deficit)
{
    long best = -1;
    int64_t best_def = 0;
    for (size_t i = 0; i < p->in->nsegs; i++) {
        const coord_pseg *s = &p->in->segs[i];
        if (s->state != WIRE_SEG_ACTIVE || !usable(p, i)) {
            continue;
        }
        double low = target[i] * (double)p->in->low_water_pct / 100.0;
        bool wants = s->dry || (s->demand > 0 && (double)s->available < low);
        int64_t def = (int64_t)floor(target[i] - (double)s->available);
        if (s->dry && def < 1) {
            def = 1;
        }
        if (wants && def >= 1 && def > best_def) {
            best = (long)i;
            best_def = def;
        }
    }
    *deficit = best_def;
    return best;
}

static long pick_donor(const pass *p, const double *target, long recv, int64_t *surplus)
{
    long best = -1;
    int64_t best_sur = 0;
    for (size_t i = 0; i < p->in->nsegs; i++) {
        const coord_pseg *s = &p->in->segs[i];
        if ((long)i == recv || s->state != WIRE_SEG_ACTIVE || !usable(p, i) || s->dry) {
            continue;
        }
        int64_t sur = (int64_t)floor((double)s->available - target[i]);
        if (sur > s->available) {
            sur = s->available;
        }
        if (sur >= 1 && sur > best_sur) {
            best = (long)i;
            best_sur = sur;
        }
    }
    *surplus = best_sur;
    return best;
}

static void plan_demand(pass *p)
{
    double target[ESC_SEGMENTS_PER_ITEM_MAX];
    targets(p->in, target);
    for (;;) {
        int64_t deficit, surplus;
        long r = pick_receiver(p, target, &deficit);
        if (r < 0) {
            return;
        }
        long d = pick_donor(p, target, r, &surplus);
        if (d < 0) {
            return;
        }
        int64_t q = surplus < deficit ? surplus : deficit;
        if (!add(p, d, r, q, p->in->segs[r].dry ? COORD_R_REFILL : COORD_R_REBALANCE)) {
            return;
        }
    }
}

static bool should_collapse(const coord_pitem *in, bool force)
{
    size_t active = 0;
    for (size_t i = 0; i < in->nsegs; i++) {
        active += in->segs[i].state == WIRE_SEG_ACTIVE;
    }
    if (in->tail_segment != 0 || active < 2) {
        return false;
    }
    if (force) {
        return true;
    }
    if (in->collapse_pct == 0) {
        return false; /* automatic collapse switched off */
    }
    int64_t threshold = in->total * (int64_t)in->collapse_pct / 100;
    return coord_policy_remaining(in) <= (threshold > 1 ? threshold : 1);
}

/* The tail: the active segment with the most available, served by a live owner. */
static long pick_tail(const coord_pitem *in)
{
    long best = -1;
    for (size_t i = 0; i < in->nsegs; i++) {
        const coord_pseg *s = &in->segs[i];
        if (s->state == WIRE_SEG_ACTIVE && s->owner_live &&
            (best < 0 || s->available > in->segs[best].available)) {
            best = (long)i;
        }
    }
    return best;
}

void coord_policy_plan(const coord_pitem *in, bool force_collapse, coord_plan *out)
{
    ESC_ASSERT(in->nsegs <= ESC_SEGMENTS_PER_ITEM_MAX);
    /* the head only: a pass runs for every item every --rebalance-ms, and
     * clearing all COORD_PLAN_XFERS_MAX entries each time was most of a
     * large catalog's loop (add() writes every field of an entry it uses) */
    out->collapse = false;
    out->tail = 0;
    out->nxfers = 0;
    out->sold_out = coord_policy_sold_out(in);
    if (in->retired) {
        return;
    }
    pass p;
    p.in = in;
    p.out = out;
    for (size_t i = 0; i < in->nsegs; i++) {
        p.busy[i] = in->segs[i].busy;
    }
    if (should_collapse(in, force_collapse)) {
        long t = pick_tail(in);
        if (t >= 0) {
            out->collapse = true;
            out->tail = in->segs[t].segment_id;
            return;
        }
    }
    if (in->reduce_pending > 0 || in->export_want > 0) {
        plan_reduce(&p);
    }
    if (in->tail_segment != 0) {
        plan_collapsed(&p);
        return;
    }
    plan_split_surplus(&p);
    plan_restock(&p);
    if (!in->paused) {
        plan_demand(&p);
    }
}

double coord_policy_demand(double prev, uint64_t d_reserved, uint64_t d_empties, int64_t dt_us)
{
    if (dt_us <= 0) {
        return prev;
    }
    double rate =
        ((double)d_reserved + DEMAND_EMPTY_WEIGHT * (double)d_empties) * 1e6 / (double)dt_us;
    double alpha = (double)dt_us / DEMAND_TAU_US;
    if (alpha > 1.0) {
        alpha = 1.0;
    }
    return prev + alpha * (rate - prev);
}

/* Units wanted over horizon_ms at demand_milli (rounded up). */
static int64_t over_horizon(int64_t demand_milli, uint32_t horizon_ms)
{
    if (demand_milli <= 0) {
        return 0;
    }
    /* demand_milli / 1000 units/s * horizon_ms / 1000 s */
    double u = (double)demand_milli * (double)horizon_ms / 1e6;
    return u > 1e12 ? (int64_t)1e12 : (int64_t)ceil(u);
}

int coord_policy_quota(const coord_qin *in, int64_t *qty)
{
    int64_t keep = over_horizon(in->demand_milli, in->horizon_ms);
    if (keep < in->floor) {
        keep = in->floor;
    }
    int64_t spare = in->unused - keep;
    if (spare <= 0) {
        return -1;
    }
    long best = -1;
    int64_t best_need = 0;
    for (size_t i = 0; i < in->npeers; i++) {
        const coord_qpeer *p = &in->peers[i];
        if (!p->fresh) {
            continue;
        }
        int64_t need = over_horizon(p->demand_milli, in->horizon_ms) - p->unused - p->in_flight_to;
        if (need > best_need) {
            best_need = need;
            best = (long)i;
        }
    }
    if (best < 0) {
        return -1;
    }
    *qty = spare < best_need ? spare : best_need;
    return (int)best;
}

int coord_policy_restock_place(const coord_qregion *r, size_t n, uint32_t horizon_ms,
                               int64_t total_after)
{
    long best = -1;
    int64_t best_need = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t need =
            over_horizon(r[i].demand_milli, horizon_ms) - r[i].unused - r[i].in_flight_to;
        if (r[i].usable && need > best_need) {
            best_need = need;
            best = (long)i;
        }
    }
    if (best >= 0) {
        return (int)best;
    }
    /* by share: the largest (share_i * total_after / sum) - quota_i, compared
     * without division: share_i * total_after - quota_i * sum */
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += r[i].usable ? (r[i].share > 0 ? r[i].share : 1) : 0;
    }
    double best_gap = 0;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].usable) {
            continue;
        }
        double share = r[i].share > 0 ? r[i].share : 1;
        double gap = share * (double)total_after - (double)(r[i].quota + r[i].in_flight_to) * sum;
        if (best < 0 || gap > best_gap) {
            best_gap = gap;
            best = (long)i;
        }
    }
    return (int)best;
}

/* True if region a gives up its units before region b. */
static bool gives_first(const coord_qregion *r, size_t a, size_t b)
{
    if (r[a].demand_milli != r[b].demand_milli) {
        return r[a].demand_milli < r[b].demand_milli;
    }
    if (r[a].unused != r[b].unused) {
        return r[a].unused > r[b].unused;
    }
    return a < b;
}

int64_t coord_policy_reduce_sources(const coord_qregion *r, size_t n, int64_t pending,
                                    int64_t take[])
{
    size_t order[COORD_QREGIONS_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        take[i] = 0;
        if (!r[i].usable || k == COORD_QREGIONS_MAX) {
            continue;
        }
        size_t j = k++;
        for (; j > 0 && gives_first(r, i, order[j - 1]); j--) {
            order[j] = order[j - 1];
        }
        order[j] = i;
    }
    int64_t left = pending > 0 ? pending : 0, sum = 0;
    for (size_t j = 0; j < k && left > 0; j++) {
        int64_t u = r[order[j]].unused > 0 ? r[order[j]].unused : 0;
        int64_t t = u < left ? u : left;
        take[order[j]] = t;
        left -= t;
        sum += t;
    }
    return sum;
}
