/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_routing.c - see async_routing.h.
 *
 * In routing mode, a definite "nothing done" answer (SEGMENT_EMPTY,
 * NOT_OWNER, FENCED) sends the call through a routing step: a new corr_id
 * (same slot) and a frame re-encoded with the new segment hint and the same
 * idempotency key; replies to the old frame are then late duplicates and
 * dropped. At most CLI_FETCHES_MAX route fetches are in flight; calls that
 * need more, or whose item was fetched less than CLI_ROUTE_REFETCH_US ago,
 * wait on the timer and try again.
 */
#include "async_routing.h"

#include <stdlib.h>
#include <string.h>

#include "async_answer.h"
#include "async_conn.h"
#include "async_slot.h"
#include "async_timer.h"
#include "auth_route.h"
#include "clock.h"
#include "esc_assert.h"

int cli_routing_init(esc_async *a)
{
    a->routes = malloc(sizeof *a->routes);
    a->scratch = malloc(sizeof *a->scratch);
    if (a->routes == NULL || a->scratch == NULL) {
        free(a->routes);
        a->routes = NULL;
        return ESC_ENOMEM;
    }
    if (cli_route_cache_init(a->routes) < 0) {
        free(a->routes);
        a->routes = NULL;
        return ESC_ENOMEM;
    }
    return 0;
}

void cli_routing_unwait(call *c)
{
    call *f = c->fetch;
    if (f == NULL) {
        return;
    }
    *(c->wprev != NULL ? &c->wprev->wnext : &f->waiters) = c->wnext;
    if (c->wnext != NULL) {
        c->wnext->wprev = c->wprev;
    }
    c->fetch = c->wprev = c->wnext = NULL;
}

static uint64_t hold_segment(const call *c)
{
    return c->req->hold_id >> ESC_HOLD_SEQ_BITS;
}

/* The cached route of user call c: its item's, or its hold's segment's. */
static cli_route *call_route(const esc_async *a, const call *c)
{
    if (c->op == WIRE_OP_RESERVE) {
        return cli_route_find(a->routes, c->req->item_id);
    }
    const cli_rseg *s = cli_route_find_seg(a->routes, hold_segment(c));
    return s != NULL ? s->route : NULL;
}

/* The fetch in flight for item (non-NULL) or for segment seg, or NULL. */
static call *fetch_find(const esc_async *a, const char *item, uint64_t seg)
{
    for (call *f = a->fetches; f != NULL; f = f->fnext) {
        if (item != NULL ? strcmp(f->req->item_id, item) == 0
                         : f->req->item_id[0] == '\0' && f->req->segment_id == seg) {
            return f;
        }
    }
    return NULL;
}

/* Sends a RouteReq for item (non-NULL) or segment seg to the coordinator.
 * Returns 0 and *out, or ESC_EBUSY (too many fetches) / ESC_ENOMEM. */
static int fetch_start(esc_async *a, const char *item, uint64_t seg, int64_t now, call **out)
{
    if (a->nfetches >= CLI_FETCHES_MAX) {
        return ESC_EBUSY;
    }
    wire_request req;
    memset(&req, 0, sizeof req);
    req.op = WIRE_OP_ROUTE;
    memcpy(req.tenant_id, a->opts.tenant_id, sizeof req.tenant_id);
    if (item != NULL) {
        memcpy(req.item_id, item, strlen(item) + 1);
    } else {
        req.segment_id = seg;
    }
    call *f = NULL;
    int rc = cli_slot_new(a, CALL_FETCH, &req, a->opts.deadline_ms, now, &f);
    if (rc == 0) {
        rc = cli_slot_encode(a, f, f->req);
        if (rc < 0) {
            cli_slot_free(a, f);
        }
    }
    if (rc < 0) {
        return rc;
    }
    f->fnext = a->fetches;
    if (a->fetches != NULL) {
        a->fetches->fprev = f;
    }
    a->fetches = f;
    a->nfetches++;
    a->stats.route_fetches++;
    cli_route *r = item != NULL ? cli_route_find(a->routes, item) : NULL;
    if (r != NULL) {
        r->next_fetch_us = now + CLI_ROUTE_REFETCH_US;
    }
    cli_conn_target(f, a->conns[0]);
    f->phase = PH_SENT;
    cli_conn_send(a, f, now);
    *out = f;
    return 0;
}

/* Parks c until the route it needs arrives: it joins the fetch in flight,
 * starts one, or (rate limit, too many fetches) waits on the timer. */
static void park_for_route(esc_async *a, call *c, int64_t now)
{
    cli_conn_untarget(c);
    c->phase = PH_PARKED;
    cli_route *r = call_route(a, c);
    const char *item = c->op == WIRE_OP_RESERVE ? c->req->item_id : NULL;
    if (item == NULL && r != NULL) {
        item = r->item_id;
    }
    uint64_t seg = c->op == WIRE_OP_RESERVE ? 0 : hold_segment(c);
    call *f = fetch_find(a, item, seg);
    if (f == NULL && r != NULL && now < r->next_fetch_us) {
        cli_timer_set_due(a, c, r->next_fetch_us);
        return;
    }
    if (f == NULL && fetch_start(a, item, seg, now, &f) < 0) {
        cli_timer_set_due(a, c, now + CLI_ROUTE_REFETCH_US);
        return;
    }
    c->fetch = f;
    c->wprev = NULL;
    c->wnext = f->waiters;
    if (f->waiters != NULL) {
        f->waiters->wprev = c;
    }
    f->waiters = c;
    cli_timer_set_due(a, c, c->deadline_us);
}

/* Fetches r again in the background when nothing keeps it fresh: no pushes
 * and older than CLI_ROUTE_MAX_AGE_US, or forced (a silent node). */
static void refresh_bg(esc_async *a, cli_route *r, int64_t now, bool force)
{
    if (r == NULL || now < r->next_fetch_us || fetch_find(a, r->item_id, 0) != NULL) {
        return;
    }
    bool pushed = r->pushed_us != 0 && now - r->pushed_us <= CLI_ROUTE_PUSH_ALIVE_US;
    if (!force && (pushed || now - r->fetched_us <= CLI_ROUTE_MAX_AGE_US)) {
        return;
    }
    call *f = NULL;
    (void)fetch_start(a, r->item_id, 0, now, &f); /* best effort: the cached route still serves */
}

/* Points c at segment s of the route cache (cli_slot_aim), through its node's socket. */
static void send_to(esc_async *a, call *c, const cli_rseg *s, int64_t now)
{
    int rc = 0;
    conn *k = cli_conn_node(a, s->node, &rc);
    if (k == NULL) {
        cli_log(&a->opts, 1, "ESC-CLIENT-NODE endpoint=%s err=%s",
                cli_route_node_url(a->routes, s->node), esc_err_name(rc));
        cli_conn_untarget(c);
        c->phase = PH_PARKED;
        cli_timer_set_due(a, c, now + CLI_ROUTE_REFETCH_US);
        return;
    }
    cli_slot_aim(a, c, k, s->segment_id, now);
}

static void step_reserve(esc_async *a, call *c, int64_t now)
{
    cli_route *r = cli_route_find(a->routes, c->req->item_id);
    if (r == NULL || r->stale) {
        park_for_route(a, c, now);
        return;
    }
    refresh_bg(a, r, now, false);
    const cli_rseg *s = NULL;
    switch (cli_route_pick_reserve(r, c->hash, c->empties, &s)) {
    case CLI_PICK_SEND:
        send_to(a, c, s, now);
        return;
    case CLI_PICK_SOLD_OUT:
        a->stats.sold_out_cached++;
        cli_answer_complete(a, c, ESC_ESOLD_OUT);
        return;
    case CLI_PICK_PAUSED:
        cli_answer_complete(a, c, ESC_EPAUSED);
        return;
    case CLI_PICK_REFRESH:
        r->stale = true;
        park_for_route(a, c, now);
        return;
    case CLI_PICK_EXHAUSTED:
        break;
    }
    int verdict = cli_route_verdict(r, now);
    if (verdict < 0) {
        cli_answer_complete(a, c, verdict);
        return;
    }
    c->last_status = ESC_ETRY_LATER; /* the answer if the deadline comes first */
    park_for_route(a, c, now);
}

/* Sends c to segment seg's owner now, or waits for a route that names one
 * (a hold's segment; a resolving reserve's newest stray segment). */
static void step_segment(esc_async *a, call *c, uint64_t seg, int64_t now)
{
    cli_rseg *s = cli_route_find_seg(a->routes, seg);
    if (s == NULL || s->route->stale || s->node == CLI_NODE_NONE) {
        if (s != NULL) {
            s->route->stale = true;
        }
        park_for_route(a, c, now);
        return;
    }
    refresh_bg(a, s->route, now, false);
    send_to(a, c, s, now);
}

void cli_routing_step(esc_async *a, call *c, int64_t now)
{
    if (c->resolving) {
        step_segment(a, c, c->strays[c->nstrays - 1], now);
    } else if (c->op == WIRE_OP_RESERVE) {
        step_reserve(a, c, now);
    } else {
        step_segment(a, c, hold_segment(c), now);
    }
}

/* The socket that now owns the segment sent call c's frame names, if the
 * route knows one and it is not where the frame went; else NULL. */
static conn *new_owner(esc_async *a, const call *c)
{
    const cli_rseg *s = cli_route_find_seg(a->routes, c->target_seg);
    if (s == NULL || s->node == CLI_NODE_NONE) {
        return NULL;
    }
    int rc = 0;
    conn *k = cli_conn_node(a, s->node, &rc);
    return k != c->target ? k : NULL;
}

/* Moves sent call c, frame and corr_id unchanged, to k: the segment it
 * names has a new owner. A reserve in flight is never moved to another
 * SEGMENT: its first segment may have committed the hold, so only a
 * definite "nothing done" answer (SEGMENT_EMPTY, NOT_OWNER, FENCED) lets it
 * go elsewhere. The same segment under a new owner is safe: the new owner
 * loads that segment's holds (and keys) from PostgreSQL. */
static void move_to_owner(esc_async *a, call *c, conn *k, int64_t now)
{
    cli_log(&a->opts, 3, "ESC-CLIENT-MOVE corr=%llu seg=%llu endpoint=%s",
            (unsigned long long)c->corr_id, (unsigned long long)c->target_seg, k->url);
    cli_conn_target(c, k);
    c->doubt = cli_answer_in_doubt(c); /* the old owner may have taken a copy it never answered */
    c->sends = 0;
    c->answers = 0;
    a->stats.retargets++;
    cli_timer_set_due(a, c, now);
}

/* A new version of r arrived: calls whose segment changed owner are resent
 * to the new owner now instead of at their next resend. */
static void wake_moved(esc_async *a, const cli_route *r, int64_t now)
{
    for (uint32_t i = 0; i < a->cap; i++) {
        call *c = a->slots[i];
        if (c == NULL || c->kind != CALL_USER || c->phase != PH_SENT || call_route(a, c) != r) {
            continue;
        }
        conn *k = new_owner(a, c);
        if (k != NULL) {
            move_to_owner(a, c, k, now);
        }
    }
    cli_timer_arm(a);
}

/* Applies a route (fetched or pushed) to the cache. */
static void apply_route(esc_async *a, const wire_route *w, bool pushed, int64_t now)
{
    cli_route *r = NULL;
    int rc = cli_route_apply(a->routes, w, pushed, now, cli_conn_node_idle, a, &r);
    if (rc < 0) {
        cli_log(&a->opts, 1, "ESC-CLIENT-ROUTE item=%s err=%s (route ignored)", w->item_id,
                esc_err_name(rc));
        return;
    }
    if (rc == CLI_ROUTE_OLDER) {
        return;
    }
    if (!pushed) {
        r->next_fetch_us = now + CLI_ROUTE_REFETCH_US;
    }
    if (rc == CLI_ROUTE_NEW) {
        cli_log(&a->opts, 3,
                "ESC-CLIENT-ROUTE item=%s version=%llu segments=%u active=%u tail=%llu sold_out=%d "
                "paused=%d (%s)",
                r->item_id, (unsigned long long)r->version, r->nsegs, r->nactive,
                (unsigned long long)r->tail_segment, r->sold_out, r->paused,
                pushed ? "pushed" : "fetched");
        wake_moved(a, r, now);
    }
}

/* Answers that end a waiting call: the coordinator knows neither the item
 * nor the segment, or refuses us. */
static bool fetch_final(int status)
{
    return status == ESC_EUNKNOWN_ITEM || status == ESC_EUNKNOWN_TENANT ||
           status == ESC_ENOT_FOUND || status == ESC_EINVAL || status == ESC_EAUTH ||
           status == ESC_EPROTO;
}

void cli_routing_fetch_done(esc_async *a, call *f, int status)
{
    ESC_ASSERT(f->kind == CALL_FETCH && a->nfetches > 0);
    *(f->fprev != NULL ? &f->fprev->fnext : &a->fetches) = f->fnext;
    if (f->fnext != NULL) {
        f->fnext->fprev = f->fprev;
    }
    a->nfetches--;
    bool by_seg = f->req->item_id[0] == '\0';
    uint64_t seg = f->req->segment_id;
    call *w = f->waiters;
    f->waiters = NULL;
    for (call *x = w; x != NULL; x = x->wnext) {
        x->fetch = NULL;
    }
    cli_slot_free(a, f);
    int64_t now = esc_mono_us();
    while (w != NULL) {
        call *next = w->wnext;
        w->wprev = w->wnext = NULL;
        if (status == 0 && by_seg && cli_route_find_seg(a->routes, seg) == NULL) {
            cli_answer_finish(a, w, ESC_ENOT_FOUND, NULL); /* the coordinator's route lacks it */
        } else if (by_seg && (status == ESC_EUNKNOWN_ITEM || status == ESC_EUNKNOWN_TENANT)) {
            /* a hold id naming a segment that does not exist: no such hold */
            cli_answer_finish(a, w, ESC_ENOT_FOUND, NULL);
        } else if (fetch_final(status)) {
            cli_answer_finish(a, w, status, NULL);
        } else {
            cli_timer_set_due(a, w, status == 0 ? now : now + CLI_ROUTE_REFETCH_US);
        }
        w = next;
    }
    cli_timer_arm(a);
}

void cli_routing_fetch_reply(esc_async *a, call *f, const wire_reply *rep)
{
    int status = rep->status;
    if (status == 0 && !rep->has_route) {
        status = ESC_EPROTO;
    } else if (status > 0 || status <= ESC_E_LAST_) {
        status = ESC_EPROTO;
    }
    if ((status == ESC_EBUSY || status == ESC_EUNAVAILABLE) && cli_answer_backoff(a, f, status)) {
        return;
    }
    if (status == 0 && strcmp(rep->route->tenant_id, a->opts.tenant_id) != 0) {
        status = ESC_EPROTO;
    }
    if (status == 0) {
        apply_route(a, rep->route, false, esc_mono_us());
    } else {
        cli_log(&a->opts, 1, "ESC-CLIENT-ROUTE-FETCH item=%s seg=%llu err=%s", f->req->item_id,
                (unsigned long long)f->req->segment_id, esc_err_name(status));
    }
    cli_routing_fetch_done(a, f, status);
}

/* c's frame went unanswered for a resend period. In routing mode the owner
 * may be gone: the route is fetched again in the background while the frame
 * is resent (a new route moves the call). */
void cli_routing_resend(esc_async *a, call *c, int64_t now)
{
    if (a->opts.routing && c->kind == CALL_USER) {
        conn *k = new_owner(a, c);
        if (k != NULL) {
            move_to_owner(a, c, k, now);
        } else if (c->sends > 0) {
            refresh_bg(a, call_route(a, c), now, true);
        }
    }
    cli_conn_send(a, c, now);
}

void cli_routing_distrust(esc_async *a, const call *c)
{
    cli_route *r = call_route(a, c);
    if (r != NULL) {
        r->stale = true;
    }
}

/* Decodes a routing update into a->scratch: a clear one as it is, a
 * sealed one (auth_route.h) after opening it with the handle's key. */
static int decode_push(esc_async *a, const uint8_t *msg, size_t len)
{
    if (len == 0 || msg[0] != AUTH_ROUTE_MARK) {
        return wire_decode_route_pub(msg, len, a->scratch);
    }
    if (!a->opts.has_signer || len < AUTH_ROUTE_OVERHEAD) {
        return ESC_EPROTO;
    }
    size_t cap = len - AUTH_ROUTE_OVERHEAD, n = 0;
    uint8_t *plain = malloc(cap > 0 ? cap : 1);
    if (plain == NULL) {
        return ESC_ENOMEM;
    }
    int rc = auth_route_open(&a->opts.route_key, msg, len, plain, cap, &n);
    if (rc == 0) {
        rc = wire_decode_route_pub(plain, n, a->scratch);
    }
    free(plain);
    return rc;
}

void cli_routing_push(esc_async *a, void *msg, size_t len)
{
    int rc = decode_push(a, msg, len);
    nnx_free(msg);
    if (rc < 0) {
        cli_log(&a->opts, 1, "ESC-CLIENT-ROUTES-BAD bytes=%zu err=%s", len, esc_err_name(rc));
        return;
    }
    /* Only routes we use: a tenant with many items is not mirrored. */
    if (strcmp(a->scratch->tenant_id, a->opts.tenant_id) != 0 ||
        cli_route_find(a->routes, a->scratch->item_id) == NULL) {
        return;
    }
    a->stats.route_pushes++;
    apply_route(a, a->scratch, true, esc_mono_us());
}

void cli_routing_fini(esc_async *a)
{
    if (a->routes != NULL) {
        cli_route_cache_fini(a->routes);
        free(a->routes);
        a->routes = NULL;
    }
    free(a->scratch);
    a->scratch = NULL;
}
