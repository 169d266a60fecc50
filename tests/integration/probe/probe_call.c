/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_call.c - see probe_call.h.
 */
#include "probe_call.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "esc_limits.h"
#include "probe.h"

#define SENTINEL 0xA5

typedef struct call_result {
    int status;
    bool done; /* acall: the callback ran */
    bool out;  /* the call wrote its hold(s) */
    esc_hold holds[ESC_CART_LINES_MAX];
    size_t nholds; /* cart */
    size_t failed; /* cart */
} call_result;

typedef enum call_op { OP_RESERVE, OP_CONFIRM, OP_RELEASE, OP_EXTEND, OP_GET, OP_CART } call_op;

/* --op into an op and whether "+close" follows; dies if unknown. */
static call_op parse_op(const char *op, bool *close_early)
{
    static const char *const names[] = {"reserve", "confirm", "release", "extend", "get", "cart"};
    size_t n = op != NULL ? strcspn(op, "+") : 0;
    *close_early = op != NULL && strcmp(op + n, "+close") == 0;
    for (size_t i = 0; op != NULL && i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i]) == n && strncmp(op, names[i], n) == 0 &&
            (op[n] == '\0' || *close_early)) {
            return (call_op)i;
        }
    }
    probe_die("call: --op wants reserve|confirm|release|extend|get|cart[+close], not '%s'",
              op != NULL ? op : "(none)");
}

static esc_reserve_req reserve_req(const probe_args *args)
{
    esc_reserve_req req = {.item_id = args->item,
                           .buyer_id = args->buyer ? args->buyer : args->key,
                           .qty = args->qty,
                           .idempotency_key = args->key,
                           .ttl_ms = args->ttl_ms};
    return req;
}

static void print_result(call_op op, const call_result *r)
{
    if (op == OP_CART) {
        char failed[24] = "-";
        if (r->failed != SIZE_MAX) {
            snprintf(failed, sizeof failed, "%zu", r->failed);
        }
        printf("%s out=%s holds=%zu failed_line=%s\n", esc_err_name(r->status),
               r->out ? "holds" : "none", r->out ? r->nholds : 0, failed);
        for (size_t i = 0; r->out && i < r->nholds; i++) {
            printf("HOLD item=%s qty=%lld hold=%" PRIu64 "\n", r->holds[i].item_id,
                   (long long)r->holds[i].qty, r->holds[i].hold_id);
        }
        return;
    }
    const esc_hold *h = &r->holds[0];
    printf("%s out=%s state=%s hold=%" PRIu64 " qty=%lld sold=%lld\n", esc_err_name(r->status),
           r->out ? "hold" : "none", r->out ? esc_hold_state_name(h->state) : "-",
           r->out ? h->hold_id : 0, r->out ? (long long)h->qty : 0,
           r->out ? (long long)h->qty_sold : 0);
}

/* ---- blocking ------------------------------------------------------------ */

static int blocking_one(esc_client *c, call_op op, const probe_args *args, esc_hold *h)
{
    esc_reserve_req req = reserve_req(args);
    switch (op) {
    case OP_RESERVE:
        return esc_reserve(c, &req, 0, h);
    case OP_CONFIRM:
        return esc_confirm(c, args->hold_id, args->qty_set ? args->qty : 0, 0, h);
    case OP_RELEASE:
        return esc_release(c, args->hold_id, 0, h);
    case OP_EXTEND:
        return esc_extend(c, args->hold_id, args->ttl_ms, 0, h);
    default:
        return esc_get(c, args->hold_id, 0, h);
    }
}

int probe_call(const probe_args *args)
{
    bool close_early;
    call_op op = parse_op(args->op, &close_early);
    if (close_early) {
        probe_die("call: +close is for acall (the blocking API has no close during a call)");
    }
    esc_options o = probe_options(args);
    esc_client *c = NULL;
    int rc = esc_client_new(&o, &c);
    if (rc != 0) {
        probe_die("esc_client_new: %s", esc_err_name(rc));
    }
    static call_result r;
    static esc_hold before[ESC_CART_LINES_MAX];
    memset(r.holds, SENTINEL, sizeof r.holds);
    memset(before, SENTINEL, sizeof before);
    if (op == OP_CART) {
        char spec[1024];
        esc_cart_line lines[ESC_CART_LINES_MAX];
        snprintf(spec, sizeof spec, "%s", args->item != NULL ? args->item : "");
        size_t n = probe_cart_lines(spec, lines);
        r.nholds = r.failed = SIZE_MAX;
        r.status = esc_reserve_cart(c, args->buyer ? args->buyer : args->key, lines, n, args->key,
                                    args->ttl_ms, 0, r.holds, &r.nholds, &r.failed);
        r.out = memcmp(r.holds, before, sizeof before) != 0;
    } else {
        r.status = blocking_one(c, op, args, &r.holds[0]);
        r.out = memcmp(&r.holds[0], &before[0], sizeof before[0]) != 0;
    }
    print_result(op, &r);
    esc_client_free(c);
    return 0;
}

/* ---- asynchronous --------------------------------------------------------- */

static void hold_cb(int status, const esc_hold *hold, void *arg)
{
    call_result *r = arg;
    r->status = status;
    r->out = hold != NULL;
    if (hold != NULL) {
        r->holds[0] = *hold;
    }
    r->done = true;
}

static void cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line, void *arg)
{
    call_result *r = arg;
    r->status = status;
    r->out = holds != NULL;
    for (size_t i = 0; holds != NULL && i < nholds && i < ESC_CART_LINES_MAX; i++) {
        r->holds[i] = holds[i];
    }
    r->nholds = nholds;
    r->failed = failed_line;
    r->done = true;
}

static int async_one(esc_async *a, call_op op, const probe_args *args, call_result *r)
{
    esc_reserve_req req = reserve_req(args);
    switch (op) {
    case OP_RESERVE:
        return esc_async_reserve(a, &req, 0, hold_cb, r);
    case OP_CONFIRM:
        return esc_async_confirm(a, args->hold_id, args->qty_set ? args->qty : 0, 0, hold_cb, r);
    case OP_RELEASE:
        return esc_async_release(a, args->hold_id, 0, hold_cb, r);
    case OP_EXTEND:
        return esc_async_extend(a, args->hold_id, args->ttl_ms, 0, hold_cb, r);
    case OP_GET:
        return esc_async_get(a, args->hold_id, 0, hold_cb, r);
    default:
        break;
    }
    static char spec[1024];
    static esc_cart_line lines[ESC_CART_LINES_MAX];
    snprintf(spec, sizeof spec, "%s", args->item != NULL ? args->item : "");
    size_t n = probe_cart_lines(spec, lines);
    return esc_async_reserve_cart(a, args->buyer ? args->buyer : args->key, lines, n, args->key,
                                  args->ttl_ms, 0, cart_cb, r);
}

static void closed_cb(void *arg)
{
    *(bool *)arg = true;
}

int probe_acall(const probe_args *args)
{
    bool close_early;
    call_op op = parse_op(args->op, &close_early);
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) {
        probe_die("acall: uv_loop_init");
    }
    esc_options o = probe_options(args);
    esc_async *a = NULL;
    int rc = esc_async_new(&loop, &o, &a);
    if (rc != 0) {
        probe_die("esc_async_new: %s", esc_err_name(rc));
    }
    static call_result r;
    rc = async_one(a, op, args, &r);
    bool closed = false;
    if (rc != 0) {
        /* refused at once: the callback never runs (escrow.h) */
        r.status = rc;
        r.out = false;
        r.failed = SIZE_MAX;
        esc_async_close(a, closed_cb, &closed);
    } else if (close_early) {
        esc_async_close(a, closed_cb, &closed);
    }
    while (rc == 0 && !r.done) {
        if (uv_run(&loop, UV_RUN_ONCE) == 0) {
            break;
        }
    }
    if (!closed) {
        esc_async_close(a, closed_cb, &closed);
    }
    (void)uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) {
        probe_die("acall: the loop is still busy after the client closed");
    }
    print_result(op, &r);
    return 0;
}
