/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_place.c - nodes, leases and placement.
 *
 * A node is alive while its heartbeats arrive within lease_ms. When its
 * lease runs out its segments are revoked: nobody serves them until an
 * ownership write gave them a new epoch (to a live node, or to the same
 * node if it comes back). A new incarnation of a node (a restarted process)
 * is written together with a raise of every epoch it owns, in one
 * statement, so no two processes of one node ever share an epoch. A node
 * that is stopping or drained keeps serving until another node took its
 * segments (handover by an ownership write).
 *
 * Every ownership write is conditional on the epoch the coordinator
 * believes in (UPDATE ... WHERE epoch = $e); a segment whose write matched
 * nothing is re-read from the catalog and placed again.
 */
#include "coord_place.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_asg.h"
#include "coord_db.h"
#include "coord_lease.h"
#include "coord_metrics.h"
#include "escrow_errors.h"
#include "hb_sync.h"
#include "log.h"
#include "pg_array.h"
#include "pg_result.h"
#include "segment_lock.h"

#define NODE_WRITE_EVERY_US 1000000

static const char *const node_state_names[] = {"up", "draining", "down"};

/* ---- nodes rows ------------------------------------------------------------ */

static const char sql_node[] =
    "/* escrow:coord-node */ WITH n AS ("
    "INSERT INTO nodes (node_id, endpoint, incarnation, state, last_seen_at, lease_until) "
    "VALUES ($1, $2, $3, $4, to_timestamp($5::bigint / 1000.0), "
    "to_timestamp($6::bigint / 1000.0)) ON CONFLICT (node_id) DO UPDATE SET "
    "endpoint = EXCLUDED.endpoint, incarnation = EXCLUDED.incarnation, state = EXCLUDED.state, "
    "last_seen_at = EXCLUDED.last_seen_at, lease_until = EXCLUDED.lease_until RETURNING 1), "
    "u AS (UPDATE segments s SET epoch = s.epoch + 1 "
    "FROM unnest($7::bigint[], $8::bigint[]) AS x(id, ep), n, "
    SEGMENTS_LOCKED("segment_id = ANY ($7::bigint[])")
    " WHERE s.segment_id = l.segment_id AND s.segment_id = x.id AND s.epoch = x.ep "
    "AND s.node_id = $1 "
    "RETURNING s.segment_id, s.epoch) SELECT segment_id, epoch FROM u";

typedef struct node_write {
    coord_node *n;
    uint64_t incarnation;
    int state;
    bool raise;
    size_t nsegs;
    coord_seg *segs[]; /* raised with the incarnation (borrowed) */
} node_write;

static void on_node_written(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    node_write *w = arg;
    coord_node *n = w->n;
    n->write_busy = false;
    if (w->raise) {
        n->inc_pending = false;
    }
    if (err->code == 0) {
        n->db_state = w->state;
        if (w->raise) {
            n->db_incarnation = w->incarnation;
        }
        for (int i = 0; i < PQntuples(res); i++) {
            coord_seg *s = coord_cat_seg(&c->cat, (uint64_t)pg_result_i64_or(res, i, 0, 0));
            if (s != NULL) {
                s->epoch = (uint64_t)pg_result_i64_or(res, i, 1, 0);
                s->pending = false;
                s->revoked = false;
                s->reported = false;
                coord_cat_touch(&c->cat, s->item);
            }
        }
    } else if (err->conn_lost && err->code != ESC_ECLOSED) {
        coord_db_unknown(c);
    }
    bool stale = false;
    for (size_t i = 0; i < w->nsegs; i++) {
        if (w->segs[i]->pending) {
            /* not raised: its epoch was not the one believed; raise it again */
            w->segs[i]->pending = false;
            w->segs[i]->revoked = true;
            coord_cat_touch(&c->cat, w->segs[i]->item);
            stale = err->code == 0;
        }
    }
    if (err->code == 0 && w->raise) {
        ESC_LOG(ESC_LOG_INFO, "COORD-NODE",
                "node=%s incarnation=%" PRIu64 " endpoint=%s registered; %d segment epochs raised",
                n->node_id, w->incarnation, n->endpoint, PQntuples(res));
    }
    if (stale) {
        coord_db_reload(c);
    }
    free(w);
}

static int node_state_now(const coord_node *n)
{
    return !n->alive ? COORD_NODE_DOWN : n->drained ? COORD_NODE_DRAINING : COORD_NODE_UP;
}

void coord_place_node_write(coord *c, coord_node *n, bool force)
{
    int64_t now = esc_mono_us();
    int state = node_state_now(n);
    bool raise = n->seen && n->alive && n->incarnation != n->db_incarnation;
    if (n->write_busy || c->stopping ||
        (!force && !raise && state == n->db_state &&
         now - n->last_write_us < NODE_WRITE_EVERY_US)) {
        return;
    }
    size_t cap = 0;
    for (size_t i = 0; raise && i < c->cat.nsegs; i++) {
        cap += c->cat.segs[i]->owner == n;
    }
    node_write *w = esc_xcalloc(1, sizeof *w + cap * sizeof(coord_seg *));
    w->n = n;
    w->incarnation = n->incarnation;
    w->state = state;
    w->raise = raise;
    pg_array ids, eps;
    pg_array_init(&ids);
    pg_array_init(&eps);
    for (size_t i = 0; raise && i < c->cat.nsegs; i++) {
        coord_seg *s = c->cat.segs[i];
        if (s->owner == n && !s->pending) {
            pg_array_i64(&ids, (int64_t)s->segment_id);
            pg_array_i64(&eps, (int64_t)s->epoch);
            w->segs[w->nsegs++] = s;
        }
    }
    char inc[24], seen[24], lease[24];
    snprintf(inc, sizeof inc, "%" PRId64, (int64_t)n->incarnation);
    snprintf(seen, sizeof seen, "%" PRId64, n->last_hb_wall_ms);
    snprintf(lease, sizeof lease, "%" PRId64, n->last_hb_wall_ms + (int64_t)c->cfg.lease_ms);
    const char *v[8] = {
        n->node_id,          n->endpoint,        inc, node_state_names[state], seen, lease,
        pg_array_text(&ids), pg_array_text(&eps)};
    if (coord_db_push(c, sql_node, 8, v, on_node_written, w) != 0) {
        free(w);
    } else {
        n->write_busy = true;
        n->last_write_us = now;
        if (raise) {
            n->inc_pending = true;
            for (size_t i = 0; i < w->nsegs; i++) {
                w->segs[i]->pending = true;
            }
        }
    }
    pg_array_fini(&ids);
    pg_array_fini(&eps);
}

/* ---- heartbeats ------------------------------------------------------------- */

static void take_stats(coord *c, coord_node *n, coord_seg *s, const wire_seg_stats *st, int64_t now)
{
    bool same = s->reported && s->rep_epoch == st->epoch;
    if (same && now > s->last_rep_us) {
        uint64_t dr = st->reserved >= s->reserved ? st->reserved - s->reserved : st->reserved;
        uint64_t de = st->empties >= s->empties ? st->empties - s->empties : st->empties;
        s->demand = coord_policy_demand(s->demand, dr, de, now - s->last_rep_us);
    }
    (void)n;
    if (!same || s->available != st->available || s->held != st->held || s->sold != st->sold ||
        s->reserved != st->reserved || s->empties != st->empties) {
        /* its stock or demand moved: a pass at the next rebalance */
        coord_cat_mark(&c->cat, s->item, COORD_WORK_POLICY);
    }
    if (!same || s->available != st->available || s->held != st->held || s->sold != st->sold) {
        /* the row's counters the coordinator holds are now behind (coord_counts.h) */
        coord_cat_mark(&c->cat, s->item, COORD_WORK_COUNTS);
    }
    s->reported = true;
    s->rep_epoch = st->epoch;
    s->available = st->available;
    s->held = st->held;
    s->sold = st->sold;
    s->reserved = st->reserved;
    s->empties = st->empties;
    s->last_rep_us = now;
    if (st->available > 0) {
        s->dry = false;
    }
}

/* One segment's figures: taken when n serves it at that epoch. False when
 * n owns it at that epoch but it is not served right now (an ownership
 * write in flight): the coordinator will want these figures later. */
static bool take_one(coord *c, coord_node *n, const wire_seg_stats *st, int64_t now)
{
    coord_seg *s = coord_cat_seg(&c->cat, st->segment_id);
    if (s != NULL && s->owner == n && s->epoch == st->epoch && coord_cat_seg_served(s)) {
        take_stats(c, n, s, st, now);
    }
    return s == NULL || s->owner != n || s->epoch != st->epoch || !s->pending;
}

/* A delta heartbeat: the changed figures into the mirror (coord_asg.h) and
 * the catalog; a complete one is checked against the node's summary. */
static void take_delta(coord *c, coord_node *n, const wire_heartbeat *hb, int64_t now)
{
    bool fresh = hb->resync;
    if (hb->resync || n->mirror_inc != hb->incarnation) {
        coord_mirror_clear(n);
        n->mirror_inc = hb->incarnation;
        n->want_resync = !hb->resync; /* it holds nothing of this process: all of it */
    }
    for (size_t i = 0; i < hb->nsegs; i++) {
        const wire_seg_stats *st = &hb->segs[i];
        if (take_one(c, n, st, now)) {
            coord_mirror_put(n, st->segment_id, hb_sync_stats_hash(st));
        } else {
            coord_mirror_del(n, st->segment_id); /* a mismatch: it is sent again */
        }
    }
    for (size_t i = 0; i < hb->ngone; i++) {
        coord_mirror_del(n, hb->gone[i]);
    }
    if (hb->more || n->want_resync) {
        return;
    }
    if (n->mirror_count != hb->seg_count || n->mirror_digest != hb->seg_digest) {
        ESC_LOG(fresh ? ESC_LOG_WARN : ESC_LOG_INFO, "COORD-HB",
                "node=%s reports %u segments, this coordinator holds figures of %u (or they "
                "differ): asking for a full report",
                n->node_id, hb->seg_count, n->mirror_count);
        coord_metrics_resync(c);
        n->want_resync = true;
    }
}

void coord_place_heartbeat(coord *c, const wire_heartbeat *hb, coord_node **out)
{
    coord_node *n = coord_cat_node(&c->cat, hb->node_id);
    if (n == NULL && (n = coord_cat_add_node(&c->cat, hb->node_id)) == NULL) {
        *out = NULL;
        return;
    }
    int64_t now = esc_mono_us();
    bool was_alive = n->alive, was_seen = n->seen;
    n->seen = true;
    n->alive = true;
    n->last_hb_us = now;
    n->last_hb_wall_ms = esc_wall_ms();
    if (n->stopping != hb->stopping) {
        coord_cat_touch_node(&c->cat, n);
    }
    n->stopping = hb->stopping;
    char endpoint_before[sizeof n->endpoint];
    memcpy(endpoint_before, n->endpoint, sizeof endpoint_before);
    snprintf(n->endpoint, sizeof n->endpoint, "%s", hb->endpoint);
    if (n->incarnation != hb->incarnation || !was_seen) {
        ESC_LOG(ESC_LOG_INFO, "COORD-NODE",
                "node=%s incarnation=%" PRIu64 " endpoint=%s heartbeats%s", n->node_id,
                hb->incarnation, hb->endpoint,
                n->db_incarnation == hb->incarnation ? " (known incarnation)" : "");
        n->incarnation = hb->incarnation;
        coord_cat_touch_node(&c->cat, n);
    }
    if (!was_alive && was_seen) {
        ESC_LOG(ESC_LOG_INFO, "COORD-NODE", "node=%s is back (its segments get new epochs)",
                n->node_id);
    }
    if (!was_alive || strcmp(endpoint_before, n->endpoint) != 0) {
        coord_cat_touch_node(&c->cat, n); /* its segments' routes name it again */
    }
    coord_place_node_write(c, n, !was_alive);
    if (hb->delta) {
        take_delta(c, n, hb, now);
    } else {
        for (size_t i = 0; i < hb->nsegs; i++) {
            take_one(c, n, &hb->segs[i], now);
        }
    }
    *out = n;
}

/* ---- leases ------------------------------------------------------------------ */

static void expire_leases(coord *c, int64_t now)
{
    for (size_t i = 0; i < c->cat.nnodes; i++) {
        coord_node *n = c->cat.nodes[i];
        if (!coord_lease_missed(n, now, c->cfg.lease_ms)) {
            continue;
        }
        n->alive = false;
        coord_metrics_lease_expired(c);
        size_t lost = n->nowned;
        for (size_t j = 0; j < n->nowned; j++) {
            coord_seg *s = n->owned[j];
            s->revoked = true;
            coord_cat_touch(&c->cat, s->item);
        }
        ESC_LOG(ESC_LOG_WARN, "COORD-NODE-DEAD",
                "node=%s missed its lease (%u ms); %zu segments revoked", n->node_id,
                c->cfg.lease_ms, lost);
        coord_place_node_write(c, n, true);
    }
}

void coord_place_loop_stalled(coord *c, int64_t stall_us)
{
    size_t graced = coord_lease_grace(&c->cat, esc_mono_us());
    coord_metrics_loop_stall(c);
    ESC_LOG(ESC_LOG_WARN, "COORD-STALL",
            "this coordinator's loop stalled for %" PRId64 " ms (over a quarter of the %u ms "
            "lease): %zu live nodes get a lease of grace, their heartbeats were waiting",
            stall_us / 1000, c->cfg.lease_ms, graced);
}

/* ---- placement ------------------------------------------------------------------ */

static const char sql_grant[] =
    "/* escrow:coord-grant */ UPDATE segments s SET node_id = x.node, epoch = s.epoch + 1 "
    "FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS x(id, node, ep), "
    SEGMENTS_LOCKED("segment_id = ANY ($1::bigint[])")
    " WHERE s.segment_id = l.segment_id AND s.segment_id = x.id AND s.epoch = x.ep "
    "RETURNING s.segment_id, s.node_id, s.epoch";

typedef struct grant {
    size_t n;
    coord_seg *segs[COORD_GRANT_MAX]; /* borrowed */
} grant;

static void on_granted(coord *c, PGresult *res, const pgx_err *err, void *arg)
{
    grant *g = arg;
    c->grant_busy = false;
    if (err->code == 0) {
        for (int i = 0; i < PQntuples(res); i++) {
            coord_seg *s = coord_cat_seg(&c->cat, (uint64_t)pg_result_i64_or(res, i, 0, 0));
            coord_node *n = coord_cat_node(&c->cat, PQgetvalue(res, i, 1));
            if (s == NULL || n == NULL) {
                continue;
            }
            coord_cat_set_owner(s, n);
            s->epoch = (uint64_t)pg_result_i64_or(res, i, 2, 0);
            s->pending = false;
            s->revoked = false;
            s->reported = false;
            s->dry = false;
            coord_cat_touch(&c->cat, s->item);
            c->n_grants++;
            coord_metrics_grant(c);
            ESC_LOG(ESC_LOG_INFO, "COORD-GRANT",
                    "seg=%" PRIu64 " item=%s/%s node=%s epoch=%" PRIu64, s->segment_id,
                    s->item->tenant_id, s->item->item_id, n->node_id, s->epoch);
        }
    } else if (err->conn_lost && err->code != ESC_ECLOSED) {
        coord_db_unknown(c);
    }
    bool stale = false;
    for (size_t i = 0; i < g->n; i++) {
        if (g->segs[i]->pending) {
            g->segs[i]->pending = false;
            coord_cat_touch(&c->cat, g->segs[i]->item);
            stale = err->code == 0; /* its epoch moved: read it again */
        }
    }
    if (stale) {
        coord_db_reload(c); /* memory believed another epoch: read it all */
    }
    free(g);
}

static bool needs_move(const coord_seg *s)
{
    const coord_node *o = s->owner;
    return o == NULL || s->revoked || !o->alive || o->stopping || o->drained;
}

static coord_node *least_loaded(coord *c, const coord_node *except)
{
    coord_node *best = NULL;
    for (size_t i = 0; i < c->cat.nnodes; i++) {
        coord_node *n = c->cat.nodes[i];
        if (n != except && coord_cat_node_eligible(n) && (best == NULL || n->nsegs < best->nsegs)) {
            best = n;
        }
    }
    return best;
}

static coord_node *most_loaded(coord *c)
{
    coord_node *best = NULL;
    for (size_t i = 0; i < c->cat.nnodes; i++) {
        coord_node *n = c->cat.nodes[i];
        if (coord_cat_node_eligible(n) && (best == NULL || n->nsegs > best->nsegs)) {
            best = n;
        }
    }
    return best;
}

static void add_move(grant *g, pg_array *ids, pg_array *nodes, pg_array *eps, coord_seg *s,
                     coord_node *to)
{
    g->segs[g->n++] = s;
    pg_array_i64(ids, (int64_t)s->segment_id);
    pg_array_str(nodes, to->node_id);
    pg_array_i64(eps, (int64_t)s->epoch);
    to->nsegs++;
}

/* Evens out the loads: from the most to the least loaded node, segments
 * that are idle (no transfer, no write in flight). */
static void balance(coord *c, grant *g, pg_array *ids, pg_array *nodes, pg_array *eps)
{
    for (int moves = 0; moves < COORD_BALANCE_MOVES_MAX && g->n < COORD_GRANT_MAX; moves++) {
        coord_node *hi = most_loaded(c), *lo = least_loaded(c, NULL);
        if (hi == NULL || lo == NULL || hi->nsegs <= lo->nsegs + 1) {
            return;
        }
        coord_seg *pick = NULL;
        for (size_t i = 0; i < hi->nowned && pick == NULL; i++) {
            coord_seg *s = hi->owned[i];
            if (!s->pending && s->xfer_id == 0 && coord_cat_seg_served(s)) {
                pick = s;
            }
        }
        if (pick == NULL) {
            return;
        }
        pick->pending = true; /* not picked twice */
        hi->nsegs--;
        add_move(g, ids, nodes, eps, pick, lo);
    }
}

/* Counts every node's segments (those it owns and keeps, or is being
 * given): O(segments), so only when something is to be placed or the loads
 * are due for a check. */
static void count_loads(coord *c)
{
    for (size_t i = 0; i < c->cat.nnodes; i++) {
        c->cat.nodes[i]->nsegs = 0;
    }
    for (size_t i = 0; i < c->cat.nsegs; i++) {
        coord_seg *s = c->cat.segs[i];
        if (s->owner != NULL && (s->pending || !needs_move(s))) {
            s->owner->nsegs++;
        }
    }
}

static bool wants_owner(const coord_seg *s)
{
    return !s->pending && s->state != WIRE_SEG_RETIRED && needs_move(s);
}

static bool item_wants_owner(const coord_item *it)
{
    for (size_t j = 0; j < it->nsegs; j++) {
        if (wants_owner(it->segs[j])) {
            return true;
        }
    }
    return false;
}

/* The marked items (and the sweep's slice) whose segments want an owner,
 * into the grant; the items left over (the grant is full, no node takes
 * them, their owner's incarnation is being written) stay marked. */
static void place_marked(coord *c, grant *g, pg_array *ids, pg_array *nodes, pg_array *eps)
{
    size_t n = 0;
    coord_item **v = coord_cat_take(&c->cat, COORD_WORK_PLACE, &n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (item_wants_owner(v[i])) {
            v[k++] = v[i];
        }
    }
    if (k == 0) {
        return;
    }
    count_loads(c);
    for (size_t i = 0; i < k; i++) {
        coord_item *it = v[i];
        bool left = false;
        for (size_t j = 0; j < it->nsegs; j++) {
            coord_seg *s = it->segs[j];
            if (!wants_owner(s)) {
                continue;
            }
            coord_node *to = NULL;
            if (g->n < COORD_GRANT_MAX && (s->owner == NULL || !s->owner->inc_pending)) {
                to = least_loaded(c, NULL);
            }
            if (to != NULL) {
                add_move(g, ids, nodes, eps, s, to);
            } else {
                left = true;
            }
        }
        if (left) {
            coord_cat_mark(&c->cat, it, COORD_WORK_PLACE); /* again at the next tick */
        }
    }
}

void coord_place_tick(coord *c)
{
    int64_t now = esc_mono_us();
    expire_leases(c, now);
    for (size_t i = 0; i < c->cat.nnodes; i++) {
        coord_place_node_write(c, c->cat.nodes[i], false);
    }
    if (coord_cat_check_nodes(&c->cat) > 0) {
        c->place_balance_us = 0; /* a node changed: its load too */
    }
    uint32_t tick = c->cfg.heartbeat_ms / 2 > 10 ? c->cfg.heartbeat_ms / 2 : 10; /* coord.c */
    coord_cat_sweep(&c->cat, COORD_WORK_PLACE,
                    coord_cat_sweep_slice(c->cat.nitems, tick, COORD_SWEEP_MS));
    if (c->db.need_reconcile || c->grant_busy) {
        return; /* the marked items wait */
    }
    grant *g = esc_xcalloc(1, sizeof *g);
    pg_array ids, nodes, eps;
    pg_array_init(&ids);
    pg_array_init(&nodes);
    pg_array_init(&eps);
    place_marked(c, g, &ids, &nodes, &eps);
    if (g->n == 0 && now - c->place_balance_us >= (int64_t)COORD_BALANCE_CHECK_MS * 1000) {
        count_loads(c);
        balance(c, g, &ids, &nodes, &eps);
        /* while it moves segments it looks again at every tick */
        c->place_balance_us = g->n > 0 ? 0 : now;
    }
    if (g->n > 0) {
        const char *v[3] = {pg_array_text(&ids), pg_array_text(&nodes), pg_array_text(&eps)};
        if (coord_db_push(c, sql_grant, 3, v, on_granted, g) == 0) {
            c->grant_busy = true;
            for (size_t i = 0; i < g->n; i++) {
                g->segs[i]->pending = true;
            }
            g = NULL;
        } else {
            for (size_t i = 0; i < g->n; i++) {
                g->segs[i]->pending = false;
                coord_cat_mark(&c->cat, g->segs[i]->item, COORD_WORK_PLACE);
            }
        }
    }
    free(g);
    pg_array_fini(&ids);
    pg_array_fini(&nodes);
    pg_array_fini(&eps);
}
