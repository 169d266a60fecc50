/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_cart.c - all-or-nothing carts on the asynchronous engine.
 *
 * cart.c plans the cart (one reserve per distinct item, key
 * "<cart_key>/<item_id>"); here every planned line is reserved concurrently.
 * When all answered, the cart's outcome is, in this order:
 *   1. a line whose key already has an ended hold (an idempotent replay of
 *      a hold that was sold, released or expired): the cart key is used up.
 *      ESC_EEXPIRED when that hold lapsed, else ESC_ECART_ENDED; every hold
 *      the cart got is released; the next attempt needs a NEW cart key;
 *   2. a line whose outcome is unknown (ESC_ETIMEDOUT, or ESC_ECLOSED while
 *      in flight): that answer, and the holds the cart got are KEPT (not
 *      released): a retry with the SAME cart key gets them back by their
 *      keys and learns the unknown line, so it completes (or gives a
 *      definite answer). Not retried, they lapse at their ttl;
 *   3. a line that failed (SOLD_OUT, TRY_LATER, a limit ...): the first in
 *      input order; every hold the cart got is released (compensation: the
 *      releases use the client's default deadline, not what is left of the
 *      cart's, because giving units back matters even after a slow cart);
 *      a new attempt needs a NEW cart key (the released lines would replay
 *      as ended, 1.);
 *   4. otherwise every line holds its units: the caller gets the holds.
 * A release that fails is logged; that hold lapses at its ttl.
 */
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "cart.h"
#include "wire.h"

typedef struct cart_op cart_op;

typedef struct cart_line {
    cart_op *op; /* borrowed back pointer */
    cli_cart_line plan;
    int status;
    bool sent;      /* a reserve was accepted for it */
    bool have_hold; /* holds[index] is a live hold of ours */
    size_t index;
} cart_line;

struct cart_op {
    esc_async *a; /* borrowed */
    esc_cart_cb cb;
    void *arg; /* borrowed: the caller's */
    size_t nlines;
    size_t nplan;
    size_t pending; /* reserves, then releases, outstanding */
    int result;
    size_t failed_line;
    cart_line *lines; /* nplan entries, in the same allocation */
    esc_hold *holds;  /* nplan entries, in the same allocation */
};

static void deliver(cart_op *op)
{
    bool ok = op->result == 0;
    op->cb(op->result, ok ? op->holds : NULL, ok ? op->nplan : 0, op->failed_line, op->arg);
    free(op);
}

static bool unknown_outcome(int status)
{
    return status == ESC_ETIMEDOUT || status == ESC_ECLOSED;
}

static bool key_used_up(int status)
{
    return status == ESC_EEXPIRED || status == ESC_ECART_ENDED;
}

/* Sets the cart's result to the first line (in plan order) whose status
 * matches; returns whether one did. NULL matches any failure. */
static bool pick_first(cart_op *op, bool (*match)(int status))
{
    for (size_t i = 0; i < op->nplan; i++) {
        int st = op->lines[i].status;
        if (st != 0 && (match == NULL || match(st))) {
            op->result = st;
            op->failed_line = op->lines[i].plan.first_line;
            return true;
        }
    }
    return false;
}

/* The outcome, in the order of the file's header. */
static void pick_failure(cart_op *op)
{
    op->result = 0;
    op->failed_line = op->nlines;
    if (!pick_first(op, key_used_up) && !pick_first(op, unknown_outcome)) {
        (void)pick_first(op, NULL);
    }
}

static void release_cb(int status, const esc_hold *hold, void *arg)
{
    (void)hold;
    cart_line *l = arg;
    cart_op *op = l->op;
    if (status != 0 && status != ESC_ENOT_HELD && status != ESC_EEXPIRED) {
        cli_log(cli_async_opts(op->a), 1,
                "ESC-CLIENT-CART-RELEASE hold=%llu err=%s (the hold lapses at its ttl)",
                (unsigned long long)op->holds[l->index].hold_id, esc_err_name(status));
    }
    if (--op->pending == 0) {
        deliver(op);
    }
}

/* All reserves answered: deliver, or release what we hold first (not when
 * a line's outcome is unknown: a retry with the same cart key needs them). */
static void settle(cart_op *op)
{
    pick_failure(op);
    if (op->result == 0 || unknown_outcome(op->result)) {
        deliver(op);
        return;
    }
    for (size_t i = 0; i < op->nplan; i++) {
        cart_line *l = &op->lines[i];
        if (!l->have_hold) {
            continue;
        }
        int rc = esc_async_release(op->a, op->holds[i].hold_id, 0, release_cb, l);
        if (rc == 0) {
            op->pending++;
        } else {
            cli_log(cli_async_opts(op->a), 1,
                    "ESC-CLIENT-CART-RELEASE hold=%llu err=%s (the hold lapses at its ttl)",
                    (unsigned long long)op->holds[i].hold_id, esc_err_name(rc));
        }
    }
    if (op->pending == 0) {
        deliver(op);
    }
}

static void line_cb(int status, const esc_hold *hold, void *arg)
{
    cart_line *l = arg;
    cart_op *op = l->op;
    l->status = status;
    if (status == 0 && hold != NULL) {
        op->holds[l->index] = *hold;
        if (hold->state == ESC_HOLD_HELD) {
            l->have_hold = true;
        } else {
            /* a replay of this key's hold, which ended: the key is used up */
            l->status = hold->state == ESC_HOLD_EXPIRED ? ESC_EEXPIRED : ESC_ECART_ENDED;
        }
    }
    if (--op->pending == 0) {
        settle(op);
    }
}

/* Allocates the op and plans the cart into it. */
static int cart_new(const esc_cart_line *lines, size_t nlines, const char *cart_key, cart_op **out,
                    size_t *bad_line)
{
    if (lines == NULL || nlines == 0 || nlines > ESC_CART_LINES_MAX) {
        *bad_line = nlines;
        return ESC_EINVAL;
    }
    cli_cart_line *plan = malloc(nlines * sizeof *plan);
    cart_op *op = calloc(1, sizeof *op + nlines * (sizeof(cart_line) + sizeof(esc_hold)));
    if (plan == NULL || op == NULL) {
        free(plan);
        free(op);
        return ESC_ENOMEM;
    }
    size_t nplan = 0;
    int rc = cli_cart_plan(lines, nlines, cart_key, plan, &nplan, bad_line);
    if (rc < 0) {
        free(plan);
        free(op);
        return rc;
    }
    op->nlines = nlines;
    op->nplan = nplan;
    op->lines = (cart_line *)(op + 1);
    op->holds = (esc_hold *)(op->lines + nlines);
    for (size_t i = 0; i < nplan; i++) {
        op->lines[i].op = op;
        op->lines[i].plan = plan[i];
        op->lines[i].index = i;
    }
    free(plan);
    *out = op;
    return 0;
}

/* Sends every line. A line refused locally (ESC_ENOMEM) fails the cart; if
 * nothing was sent the error is returned, otherwise it is reported once the
 * lines already sent have answered. */
static int send_lines(cart_op *op, const char *buyer_id, uint32_t ttl_ms, uint32_t deadline_ms)
{
    for (size_t i = 0; i < op->nplan; i++) {
        cart_line *l = &op->lines[i];
        esc_reserve_req req = {
            .item_id = l->plan.item_id,
            .buyer_id = buyer_id,
            .qty = l->plan.qty,
            .idempotency_key = l->plan.key,
            .ttl_ms = ttl_ms,
        };
        int rc = esc_async_reserve(op->a, &req, deadline_ms, line_cb, l);
        if (rc < 0) {
            if (i == 0) {
                return rc;
            }
            l->status = rc;
            return 0;
        }
        l->sent = true;
        op->pending++;
    }
    return 0;
}

int cli_async_cart(esc_async *a, const char *buyer_id, const esc_cart_line *lines, size_t nlines,
                   const char *cart_key, uint32_t ttl_ms, uint32_t deadline_ms, esc_cart_cb cb,
                   void *arg, size_t *bad_line)
{
    *bad_line = nlines;
    uint32_t dl_ms;
    if (a == NULL || cb == NULL || !wire_id_valid(buyer_id, ESC_BUYER_LEN_MAX) ||
        (ttl_ms != 0 && (ttl_ms < ESC_TTL_MS_MIN || ttl_ms > ESC_TTL_MS_MAX)) ||
        cli_opts_deadline(cli_async_opts(a), deadline_ms, &dl_ms) < 0) {
        return ESC_EINVAL;
    }
    cart_op *op = NULL;
    int rc = cart_new(lines, nlines, cart_key, &op, bad_line);
    if (rc < 0) {
        return rc;
    }
    if (cli_async_room(a) < op->nplan) {
        free(op);
        return cli_async_closing(a) ? ESC_ECLOSED : ESC_EBUSY;
    }
    op->a = a;
    op->cb = cb;
    op->arg = arg;
    rc = send_lines(op, buyer_id, ttl_ms, dl_ms);
    if (rc < 0) {
        free(op);
        return rc;
    }
    return 0;
}

int esc_async_reserve_cart(esc_async *a, const char *buyer_id, const esc_cart_line *lines,
                           size_t nlines, const char *cart_key, uint32_t ttl_ms,
                           uint32_t deadline_ms, esc_cart_cb cb, void *arg)
{
    size_t bad_line;
    return cli_async_cart(a, buyer_id, lines, nlines, cart_key, ttl_ms, deadline_ms, cb, arg,
                          &bad_line);
}
