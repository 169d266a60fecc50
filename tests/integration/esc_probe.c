/*
 * esc_probe.c - the C driver of the integration tests (the scripts in
 * tests/integration/).
 *
 * One executable, one sub-command per job a shell script cannot do well
 * itself: many calls in flight at once (libescrow's asynchronous API on one
 * libuv loop), calls timed against a hold's expiry, a recorded history of
 * acknowledged outcomes, and frames no well-behaved client would send (a raw
 * nanomsg REQ socket through common/nnx.h, protobuf built by hand with the
 * generated protobuf-c structs, plain TCP sockets).
 *
 * Conventions: every sub-command prints machine-readable lines on stdout
 * ("KEY value" or "STATUS field=value ..."), diagnostics on stderr. Exit 0
 * when the sub-command's own checks hold, 1 with "esc_probe: FAIL: ..." on
 * stderr when a guarantee broke, 2 on a usage error. The single-call
 * sub-commands (reserve, confirm, release, extend, get) exit 0 whatever the
 * node answered: the answer is the output, the script asserts on it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "clock.h"
#include "esc_limits.h"
#include "escrow.h"
#include "escrow.pb-c.h"
#include "nnx.h"
#include "probe_coord.h"
#include "probe_frame.h"
#include "wire.h"

#define PROBE_EXIT_FAIL 1
#define PROBE_EXIT_USAGE 2
/* Bounds of the bulk sub-commands: arrays are sized from --n. */
#define PROBE_N_MAX 1000000u
#define PROBE_CONCURRENCY_MAX 4096u
#define PROBE_PER_HOLD_MAX 16u
#define PROBE_LINE_MAX 512
/* No probe runs longer than this (ESC_PROBE_TIMEOUT_S overrides): a hung
 * probe must fail its test, not hang it. */
#define PROBE_TIMEOUT_S_DEFAULT 55

typedef struct probe_args {
    const char *cmd;
    const char *endpoint;    /* borrowed from argv */
    const char *coordinator; /* borrowed; routing mode instead of endpoint */
    const char *routes;      /* borrowed; the coordinator's PUB endpoint */
    const char *tenant;      /* borrowed */
    const char *item;        /* borrowed */
    const char *buyer;       /* borrowed; default = key */
    const char *key;         /* borrowed */
    const char *prefix;      /* borrowed; keys are "<prefix>-<index>" */
    const char *out_path;    /* borrowed */
    const char *in_path;     /* borrowed */
    const char *stop_file;   /* borrowed */
    const char *credential;  /* borrowed: the key text sent with every request, or NULL */
    const char *op;          /* borrowed: frame's operation */
    const char *node;        /* borrowed: frame's node (drain) or region (quota) */
    int64_t qty;
    bool qty_set; /* --qty given; otherwise reserve 1, confirm 0 (the whole hold) */
    uint64_t hold_id;
    uint64_t segment_id;
    uint64_t attempt; /* hint-reserve: the attempt number sent */
    bool resolve;     /* hint-reserve: send a resolve */
    uint32_t ttl_ms;
    uint32_t deadline_ms;
    uint32_t n;
    uint32_t concurrency;
    uint32_t per_hold;
    uint32_t seconds;
    uint32_t every;
} probe_args;

/* ---- small helpers ------------------------------------------------------ */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "esc_probe: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(PROBE_EXIT_FAIL);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p == NULL) {
        die("out of memory (%zu x %zu bytes)", n, size);
    }
    return p;
}

static const char *state_name(const esc_hold *h)
{
    return h != NULL ? esc_hold_state_name(h->state) : "none";
}

static void format_key(char *dst, size_t cap, const char *prefix, uint64_t i)
{
    snprintf(dst, cap, "%s-%" PRIu64, prefix, i);
}

static void print_outcome(FILE *f, int status, const esc_hold *h)
{
    if (h == NULL) {
        fprintf(f, "%s hold=0 state=none\n", esc_err_name(status));
        return;
    }
    fprintf(f,
            "%s hold=%" PRIu64 " seg=%" PRIu64 " state=%s qty=%" PRId64 " sold=%" PRId64
            " extended=%d expires_at_ms=%" PRId64 " buyer=%s item=%s\n",
            esc_err_name(status), h->hold_id, h->segment_id, state_name(h), h->qty, h->qty_sold,
            h->extended ? 1 : 0, h->expires_at_ms, h->buyer_id, h->item_id);
}

/* ---- asynchronous client plumbing --------------------------------------- */

typedef struct probe_async {
    uv_loop_t loop; /* embedded */
    esc_async *a;   /* owned until closed */
    esc_async *a2;  /* owned until closed: a second connection (cr-race) */
} probe_async;

/* libescrow's warnings and errors (level <= 1) go to stderr, with the time:
 * when a test fails, the probe's stderr says what the client saw. */
static void probe_log(int level, const char *line, void *arg)
{
    (void)arg;
    if (level <= 1) {
        fprintf(stderr, "esc_probe: %" PRId64 " libescrow: %s\n", esc_wall_ms(), line);
    }
}

/* Opens the client. two: a second connection to the same node (cr-race
 * needs it; ESC_PROBE_TWO_CLIENTS=1 forces it everywhere, which is how the
 * reconnect stall after a node restart reported with crash.sh reproduces). */
static void probe_async_open(probe_async *p, const probe_args *args, bool two)
{
    if (uv_loop_init(&p->loop) != 0) {
        die("cannot create a libuv loop");
    }
    esc_options o = {.endpoint = args->endpoint,
                     .coordinator = args->coordinator,
                     .routes = args->routes,
                     .tenant_id = args->tenant,
                     .deadline_ms = args->deadline_ms,
                     .log_fn = probe_log,
                     .credential = args->credential};
    int rc = esc_async_new(&p->loop, &o, &p->a);
    p->a2 = p->a;
    if (rc == 0 && (two || getenv("ESC_PROBE_TWO_CLIENTS") != NULL)) {
        rc = esc_async_new(&p->loop, &o, &p->a2);
    }
    if (rc != 0) {
        die("esc_async_new(%s): %s", args->endpoint ? args->endpoint : args->coordinator,
            esc_err_name(rc));
    }
}

static void on_async_closed(void *arg)
{
    *(bool *)arg = true;
}

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

static void probe_async_close(probe_async *p)
{
    bool closed = false, closed2 = true;
    if (p->a2 != p->a) {
        closed2 = false;
        esc_async_close(p->a2, on_async_closed, &closed2);
    }
    esc_async_close(p->a, on_async_closed, &closed);
    (void)uv_run(&p->loop, UV_RUN_DEFAULT);
    if (!closed || !closed2) {
        die("esc_async_close did not call its close_cb");
    }
    uv_walk(&p->loop, close_walk_cb, NULL);
    (void)uv_run(&p->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&p->loop) != 0) {
        die("libuv loop still has handles after the client closed");
    }
}

/* Calls whose outcome_cb has not run yet. uv_run(UV_RUN_DEFAULT) is not a
 * way to wait for them: libescrow's resend timer stays armed up to
 * resend_ms after the last reply (see the report), so the probe turns the
 * loop until this count is zero instead. */
static uint64_t g_pending;

static void probe_wait(probe_async *p)
{
    while (g_pending > 0) {
        (void)uv_run(&p->loop, UV_RUN_ONCE);
    }
}

/* "STATUS <name> <count>" for every status seen (index = -status). */
static void print_status_counts(const uint64_t by_status[32])
{
    for (int i = 0; i < 32; i++) {
        if (by_status[i] != 0) {
            printf("STATUS %s %" PRIu64 "\n", esc_err_name(-i), by_status[i]);
        }
    }
}

/* The outcome of one asynchronous call. */
typedef struct outcome {
    bool done;
    int status;
    bool has_hold;
    esc_hold hold;
    int64_t at_wall_ms; /* when the reply arrived */
} outcome;

static void outcome_cb(int status, const esc_hold *hold, void *arg)
{
    outcome *o = arg;
    if (o->done) {
        die("a libescrow callback ran twice");
    }
    o->done = true;
    g_pending--;
    o->status = status;
    o->has_hold = hold != NULL;
    if (hold != NULL) {
        o->hold = *hold;
    }
    o->at_wall_ms = esc_wall_ms();
}

/* Reserves alternate between the two connections, so both are up before
 * any race that uses them. */
static void submit_reserve(probe_async *p, const char *item, const char *buyer, const char *key,
                           int64_t qty, uint32_t ttl_ms, uint32_t deadline_ms, outcome *o)
{
    static unsigned turn;
    esc_reserve_req req = {
        .item_id = item, .buyer_id = buyer, .qty = qty, .idempotency_key = key, .ttl_ms = ttl_ms};
    int rc = esc_async_reserve(turn++ % 2 ? p->a2 : p->a, &req, deadline_ms, outcome_cb, o);
    if (rc != 0) {
        die("esc_async_reserve(key=%s) refused locally: %s", key, esc_err_name(rc));
    }
    g_pending++;
}

/* ---- single calls (blocking API) ---------------------------------------- */

static esc_client *client_open(const probe_args *args)
{
    esc_options o = {.endpoint = args->endpoint,
                     .coordinator = args->coordinator,
                     .routes = args->routes,
                     .tenant_id = args->tenant,
                     .deadline_ms = args->deadline_ms,
                     .log_fn = probe_log,
                     .credential = args->credential};
    esc_client *c = NULL;
    int rc = esc_client_new(&o, &c);
    if (rc != 0) {
        die("esc_client_new(%s): %s", args->endpoint ? args->endpoint : args->coordinator,
            esc_err_name(rc));
    }
    return c;
}

static int cmd_single(const probe_args *args)
{
    esc_client *c = client_open(args);
    esc_hold h;
    memset(&h, 0, sizeof h);
    h.state = ESC_HOLD_UNKNOWN;
    int rc;
    if (strcmp(args->cmd, "reserve") == 0) {
        esc_reserve_req req = {.item_id = args->item,
                               .buyer_id = args->buyer ? args->buyer : args->key,
                               .qty = args->qty,
                               .idempotency_key = args->key,
                               .ttl_ms = args->ttl_ms};
        rc = esc_reserve(c, &req, 0, &h);
    } else if (strcmp(args->cmd, "confirm") == 0) {
        rc = esc_confirm(c, args->hold_id, args->qty_set ? args->qty : 0, 0, &h);
    } else if (strcmp(args->cmd, "release") == 0) {
        rc = esc_release(c, args->hold_id, 0, &h);
    } else if (strcmp(args->cmd, "extend") == 0) {
        rc = esc_extend(c, args->hold_id, args->ttl_ms, 0, &h);
    } else {
        rc = esc_get(c, args->hold_id, 0, &h);
    }
    /* *out is written on success and with a final state; hold_id 0 = not written */
    print_outcome(stdout, rc, h.hold_id != 0 ? &h : NULL);
    if (rc == ESC_ETIMEDOUT) {
        fprintf(stderr, "esc_probe: %" PRId64 " %s hold=%" PRIu64 " key=%s: no answer in %u ms\n",
                esc_wall_ms(), args->cmd, args->hold_id, args->key ? args->key : "-",
                args->deadline_ms);
    }
    esc_client_free(c);
    return 0;
}

/* ---- same-key: N reserves with one key, all in flight at once ----------- */

static int cmd_same_key(const probe_args *args)
{
    probe_async p;
    probe_async_open(&p, args, false);
    outcome *o = xcalloc(args->n, sizeof *o);
    const char *buyer = args->buyer ? args->buyer : args->key;
    for (uint32_t i = 0; i < args->n; i++) {
        submit_reserve(&p, args->item, buyer, args->key, args->qty, args->ttl_ms, args->deadline_ms,
                       &o[i]);
    }
    probe_wait(&p);
    int bad = 0;
    for (uint32_t i = 0; i < args->n; i++) {
        printf("REPLY %u ", i);
        print_outcome(stdout, o[i].status, o[i].has_hold ? &o[i].hold : NULL);
        if (!o[i].done || o[i].status != 0 || !o[i].has_hold) {
            bad++;
        } else if (o[i].hold.hold_id != o[0].hold.hold_id) {
            fprintf(stderr, "esc_probe: reply %u has hold %" PRIu64 ", reply 0 has %" PRIu64 "\n",
                    i, o[i].hold.hold_id, o[0].hold.hold_id);
            bad++;
        }
    }
    probe_async_close(&p);
    if (bad != 0) {
        die("same-key: %d of %u replies were not OK with one and the same hold", bad, args->n);
    }
    printf("HOLD %" PRIu64 "\n", o[0].hold.hold_id);
    free(o);
    return 0;
}

/* ---- reserving n holds at once (cr-race, rx-race) ----------------------- */

static outcome *reserve_many(probe_async *p, const probe_args *args, uint32_t ttl_ms)
{
    outcome *o = xcalloc(args->n, sizeof *o);
    for (uint32_t i = 0; i < args->n; i++) {
        char key[ESC_ID_MAX + 1];
        format_key(key, sizeof key, args->prefix, i);
        submit_reserve(p, args->item, key, key, args->qty, ttl_ms, args->deadline_ms, &o[i]);
    }
    probe_wait(p);
    for (uint32_t i = 0; i < args->n; i++) {
        if (o[i].status != 0 || !o[i].has_hold || o[i].hold.state != ESC_HOLD_HELD) {
            die("reserve %s-%u: %s (state %s); the race needs every hold", args->prefix, i,
                esc_err_name(o[i].status), o[i].has_hold ? state_name(&o[i].hold) : "none");
        }
    }
    return o;
}

static FILE *open_out(const probe_args *args)
{
    if (args->out_path == NULL) {
        return NULL;
    }
    FILE *f = fopen(args->out_path, "w");
    if (f == NULL) {
        die("cannot open %s: %s", args->out_path, strerror(errno));
    }
    return f;
}

/* ---- cr-race: confirm and release of one hold, both in flight ----------- */

/* 1 confirm won, 2 release won, 0 a broken outcome (printed). */
static int cr_judge(uint64_t hold_id, const outcome *c, const outcome *r)
{
    bool c_won = c->status == 0 && c->has_hold && c->hold.state == ESC_HOLD_CONVERTED &&
                 c->hold.qty_sold == c->hold.qty;
    bool r_won = r->status == 0 && r->has_hold && r->hold.state == ESC_HOLD_CANCELLED;
    bool c_lost = c->status == ESC_ENOT_HELD && c->has_hold && c->hold.state == ESC_HOLD_CANCELLED;
    bool r_lost = r->status == ESC_ENOT_HELD && r->has_hold && r->hold.state == ESC_HOLD_CONVERTED;
    if (c_won && r_lost) {
        return 1;
    }
    if (r_won && c_lost) {
        return 2;
    }
    fprintf(stderr,
            "esc_probe: hold %" PRIu64 ": confirm -> %s (%s), release -> %s (%s): not exactly "
            "one winner\n",
            hold_id, esc_err_name(c->status), c->has_hold ? state_name(&c->hold) : "none",
            esc_err_name(r->status), r->has_hold ? state_name(&r->hold) : "none");
    return 0;
}

/* Confirms go through the first connection, releases through the second:
 * the node interleaves its connections, so neither always comes first. */
static void submit_hold_op(probe_async *p, int confirm, uint64_t hold_id, uint32_t deadline_ms,
                           outcome *o)
{
    int rc = confirm ? esc_async_confirm(p->a, hold_id, 0, deadline_ms, outcome_cb, o)
                     : esc_async_release(p->a2, hold_id, deadline_ms, outcome_cb, o);
    if (rc != 0) {
        die("%s of %" PRIu64 " refused locally: %s", confirm ? "confirm" : "release", hold_id,
            esc_err_name(rc));
    }
    g_pending++;
}

static int cmd_cr_race(const probe_args *args)
{
    probe_async p;
    probe_async_open(&p, args, true);
    outcome *held = reserve_many(&p, args, args->ttl_ms);
    outcome *conf = xcalloc(args->n, sizeof *conf);
    outcome *rel = xcalloc(args->n, sizeof *rel);
    /* Confirms in hold order on one connection, releases in reverse order
     * on the other: the node interleaves the two streams, so the first
     * holds meet their confirm first and the last ones their release. */
    for (uint32_t i = 0; i < args->n; i++) {
        submit_hold_op(&p, 1, held[i].hold.hold_id, args->deadline_ms, &conf[i]);
        uint32_t j = args->n - 1 - i;
        submit_hold_op(&p, 0, held[j].hold.hold_id, args->deadline_ms, &rel[j]);
    }
    probe_wait(&p);
    FILE *out = open_out(args);
    uint32_t won[3] = {0, 0, 0};
    for (uint32_t i = 0; i < args->n; i++) {
        int w = cr_judge(held[i].hold.hold_id, &conf[i], &rel[i]);
        won[w]++;
        if (out != NULL) {
            fprintf(out, "%" PRIu64 " %s\n", held[i].hold.hold_id,
                    w == 1   ? "converted"
                    : w == 2 ? "cancelled"
                             : "broken");
        }
    }
    if (out != NULL) {
        fclose(out);
    }
    probe_async_close(&p);
    printf("WON confirm=%u release=%u broken=%u\n", won[1], won[2], won[0]);
    free(held);
    free(conf);
    free(rel);
    if (won[0] != 0) {
        die("cr-race: %u holds without exactly one winner", won[0]);
    }
    return 0;
}

/* ---- rx-race: releases fired around the moment a hold expires ----------- */

typedef struct rx_shot {
    uv_timer_t timer; /* embedded */
    probe_async *p;   /* borrowed */
    uint64_t hold_id;
    uint32_t deadline_ms;
    outcome o;
} rx_shot;

static void rx_fire(uv_timer_t *t)
{
    rx_shot *s = t->data;
    g_pending--; /* the shot becomes the call it submits */
    submit_hold_op(s->p, 0, s->hold_id, s->deadline_ms, &s->o);
    uv_close((uv_handle_t *)t, NULL);
}

/* When shot j of hold i fires, in ms from the hold's expires_at: the holds
 * are centred on -6, -3, 0, +3, +6 ms (so both outcomes occur), and each
 * hold's per_hold shots spread over 4 ms around its centre. */
static int64_t rx_offset_ms(uint32_t i, uint32_t j, uint32_t per_hold)
{
    int64_t centre = ((int64_t)(i % 5) - 2) * 3;
    if (per_hold == 1) {
        return centre;
    }
    return centre - 2 + (int64_t)j * 4 / (int64_t)(per_hold - 1);
}

/* Every reply for one hold is OK and they all name the same final state. */
static int rx_judge(const rx_shot *shots, uint32_t k)
{
    int state = 0;
    for (uint32_t j = 0; j < k; j++) {
        const outcome *o = &shots[j].o;
        if (o->status != 0 || !o->has_hold ||
            (o->hold.state != ESC_HOLD_CANCELLED && o->hold.state != ESC_HOLD_EXPIRED) ||
            (state != 0 && (int)o->hold.state != state)) {
            fprintf(stderr, "esc_probe: hold %" PRIu64 " release #%u -> %s (%s)\n",
                    shots[j].hold_id, j, esc_err_name(o->status),
                    o->has_hold ? state_name(&o->hold) : "none");
            return 0;
        }
        state = (int)o->hold.state;
    }
    return state;
}

static int cmd_rx_race(const probe_args *args)
{
    probe_async p;
    probe_async_open(&p, args, false);
    outcome *held = reserve_many(&p, args, args->ttl_ms);
    uint32_t k = args->per_hold;
    rx_shot *shots = xcalloc((size_t)args->n * k, sizeof *shots);
    uv_update_time(&p.loop); /* timers count from the loop's cached time */
    int64_t now = esc_wall_ms();
    for (uint32_t i = 0; i < args->n; i++) {
        for (uint32_t j = 0; j < k; j++) {
            rx_shot *s = &shots[(size_t)i * k + j];
            s->p = &p;
            s->hold_id = held[i].hold.hold_id;
            s->deadline_ms = args->deadline_ms;
            int64_t at = held[i].hold.expires_at_ms + rx_offset_ms(i, j, k);
            (void)uv_timer_init(&p.loop, &s->timer);
            s->timer.data = s;
            (void)uv_timer_start(&s->timer, rx_fire, at > now ? (uint64_t)(at - now) : 0, 0);
            g_pending++;
        }
    }
    probe_wait(&p);
    FILE *out = open_out(args);
    uint32_t cancelled = 0, expired = 0, broken = 0;
    for (uint32_t i = 0; i < args->n; i++) {
        int st = rx_judge(&shots[(size_t)i * k], k);
        cancelled += st == ESC_HOLD_CANCELLED;
        expired += st == ESC_HOLD_EXPIRED;
        broken += st == 0;
        if (out != NULL) {
            fprintf(out, "%" PRIu64 " %s\n", held[i].hold.hold_id,
                    st == 0 ? "broken" : esc_hold_state_name((esc_hold_state)st));
        }
    }
    if (out != NULL) {
        fclose(out);
    }
    probe_async_close(&p);
    printf("RX cancelled=%u expired=%u broken=%u\n", cancelled, expired, broken);
    free(held);
    free(shots);
    if (broken != 0) {
        die("rx-race: %u holds got releases that disagree or failed", broken);
    }
    return 0;
}

/* ---- record: a flash sale that writes down every acknowledged outcome --- */

/* What buyer i does with its hold: deterministic, so SQL can recompute it.
 * 0..5 confirm, 6..7 release, 8..9 abandon (the hold expires). */
static int record_decision(uint64_t i)
{
    uint64_t d = i % 10;
    return d < 6 ? 0 : d < 8 ? 1 : 2;
}

typedef struct rec_run rec_run;
typedef struct rec_slot {
    rec_run *r; /* borrowed */
    uint64_t index;
    uint64_t hold_id;
    char key[ESC_ID_MAX + 1];
} rec_slot;

struct rec_run {
    const probe_args *args; /* borrowed */
    probe_async p;
    FILE *out; /* owned */
    rec_slot *slots;
    uint64_t next; /* next buyer index */
    uint64_t done;
    uint64_t by_status[32]; /* reserve answers by -status */
    uint64_t acked[3];      /* R, C, X lines */
    int64_t stop_at_us;
};

static void rec_line(rec_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_line(rec_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->out, fmt, ap);
    va_end(ap);
    if (fflush(r->out) != 0) {
        die("cannot write the record: %s", strerror(errno));
    }
}

static void rec_count(rec_run *r, int status)
{
    unsigned idx = status <= 0 && status > ESC_E_LAST_ ? (unsigned)-status : 0u;
    r->by_status[idx < 32 ? idx : 0]++;
}

static void rec_next(rec_slot *s);

static void rec_after_cb(int status, const esc_hold *hold, void *arg)
{
    rec_slot *s = arg;
    rec_run *r = s->r;
    if (status == 0 && hold != NULL) {
        int conf = record_decision(s->index) == 0;
        rec_line(r, "%s %s %" PRIu64 " %s %" PRId64 "\n", conf ? "C" : "X", s->key, hold->hold_id,
                 state_name(hold), hold->qty_sold);
        r->acked[conf ? 1 : 2]++;
    }
    r->done++;
    rec_next(s);
}

static void rec_reserve_cb(int status, const esc_hold *hold, void *arg)
{
    rec_slot *s = arg;
    rec_run *r = s->r;
    rec_count(r, status);
    if (status != 0 || hold == NULL) {
        r->done++;
        rec_next(s);
        return;
    }
    rec_line(r, "R %s %" PRIu64 " %s %" PRId64 "\n", s->key, hold->hold_id, state_name(hold),
             hold->qty);
    r->acked[0]++;
    s->hold_id = hold->hold_id;
    int d = record_decision(s->index);
    int rc = 0;
    if (d == 0) {
        rc = esc_async_confirm(r->p.a, s->hold_id, 0, r->args->deadline_ms, rec_after_cb, s);
    } else if (d == 1) {
        rc = esc_async_release(r->p.a, s->hold_id, r->args->deadline_ms, rec_after_cb, s);
    } else {
        r->done++;
        rec_next(s);
        return;
    }
    if (rc != 0) {
        die("%s of %" PRIu64 " refused locally: %s", d == 0 ? "confirm" : "release", s->hold_id,
            esc_err_name(rc));
    }
}

static void rec_next(rec_slot *s)
{
    rec_run *r = s->r;
    if (r->next >= r->args->n || (r->stop_at_us != 0 && esc_mono_us() >= r->stop_at_us)) {
        return;
    }
    s->index = r->next++;
    s->hold_id = 0;
    format_key(s->key, sizeof s->key, r->args->prefix, s->index);
    esc_reserve_req req = {.item_id = r->args->item,
                           .buyer_id = s->key,
                           .qty = 1,
                           .idempotency_key = s->key,
                           .ttl_ms = r->args->ttl_ms};
    int rc = esc_async_reserve(r->p.a, &req, r->args->deadline_ms, rec_reserve_cb, s);
    if (rc != 0) {
        die("reserve %s refused locally: %s", s->key, esc_err_name(rc));
    }
}

static int cmd_record(const probe_args *args)
{
    if (args->out_path == NULL) {
        die("record needs --out FILE");
    }
    rec_run *r = xcalloc(1, sizeof *r);
    r->args = args;
    r->out = open_out(args);
    r->stop_at_us = args->seconds ? esc_mono_us() + (int64_t)args->seconds * 1000000 : 0;
    probe_async_open(&r->p, args, false);
    r->slots = xcalloc(args->concurrency, sizeof *r->slots);
    for (uint32_t i = 0; i < args->concurrency; i++) {
        r->slots[i].r = r;
        rec_next(&r->slots[i]);
    }
    (void)uv_run(&r->p.loop, UV_RUN_DEFAULT);
    probe_async_close(&r->p);
    fclose(r->out);
    printf("SENT %" PRIu64 "\n", r->next);
    printf("ACKED reserve=%" PRIu64 " confirm=%" PRIu64 " release=%" PRIu64 "\n", r->acked[0],
           r->acked[1], r->acked[2]);
    print_status_counts(r->by_status);
    free(r->slots);
    free(r);
    return 0;
}

/* ---- verify: re-reserve recorded keys; each must get its recorded hold -- */

typedef struct ver_entry {
    char key[ESC_ID_MAX + 1];
    uint64_t hold_id;
    char final_state[16]; /* from a C or X line; "" if only R */
    outcome o;
} ver_entry;

/* Reads "R key hold ..." lines and the C/X lines that follow them. */
static ver_entry *ver_load(const char *path, size_t *count)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        die("cannot open %s: %s", path, strerror(errno));
    }
    size_t cap = 1024, n = 0;
    ver_entry *v = xcalloc(cap, sizeof *v);
    char line[PROBE_LINE_MAX], kind[4], key[ESC_ID_MAX + 1], state[16];
    uint64_t hold;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "%3s %128s %" SCNu64 " %15s", kind, key, &hold, state) != 4) {
            die("bad record line: %s", line);
        }
        if (kind[0] == 'R') {
            if (n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof *v);
                if (v == NULL) {
                    die("out of memory");
                }
            }
            memset(&v[n], 0, sizeof v[n]);
            snprintf(v[n].key, sizeof v[n].key, "%s", key);
            v[n++].hold_id = hold;
            continue;
        }
        for (size_t i = n; i-- > 0;) { /* the R line is recent: search backwards */
            if (v[i].hold_id == hold) {
                snprintf(v[i].final_state, sizeof v[i].final_state, "%s", state);
                break;
            }
        }
    }
    fclose(f);
    *count = n;
    return v;
}

static int ver_check(const ver_entry *e)
{
    const outcome *o = &e->o;
    if (o->status != 0 || !o->has_hold || o->hold.hold_id != e->hold_id) {
        fprintf(stderr,
                "esc_probe: key %s: recorded hold %" PRIu64 ", retry got %s hold %" PRIu64 "\n",
                e->key, e->hold_id, esc_err_name(o->status), o->has_hold ? o->hold.hold_id : 0);
        return 0;
    }
    if (e->final_state[0] != '\0' && strcmp(e->final_state, state_name(&o->hold)) != 0) {
        fprintf(stderr, "esc_probe: key %s hold %" PRIu64 ": acknowledged %s, now %s\n", e->key,
                e->hold_id, e->final_state, state_name(&o->hold));
        return 0;
    }
    return 1;
}

static int cmd_verify(const probe_args *args)
{
    if (args->in_path == NULL) {
        die("verify needs --in FILE");
    }
    size_t n = 0;
    ver_entry *v = ver_load(args->in_path, &n);
    uint32_t every = args->every ? args->every : 1;
    probe_async p;
    probe_async_open(&p, args, false);
    size_t sent = 0;
    for (size_t i = 0; i < n; i += every) {
        submit_reserve(&p, args->item, v[i].key, v[i].key, 1, args->ttl_ms, args->deadline_ms,
                       &v[i].o);
        sent++;
    }
    probe_wait(&p);
    probe_async_close(&p);
    size_t good = 0;
    for (size_t i = 0; i < n; i += every) {
        good += (size_t)ver_check(&v[i]);
    }
    printf("VERIFIED %zu of %zu (recorded holds %zu)\n", good, sent, n);
    free(v);
    if (good != sent || sent == 0) {
        die("verify: %zu of %zu retried keys did not get their acknowledged hold", sent - good,
            sent);
    }
    return 0;
}

/* ---- fence-load: keep a node busy and write down every OK it gives ------ */

typedef struct fl_run fl_run;
typedef struct fl_slot {
    fl_run *r; /* borrowed */
    uint64_t hold_id;
    char key[ESC_ID_MAX + 1];
} fl_slot;

struct fl_run {
    const probe_args *args; /* borrowed */
    probe_async p;
    FILE *out; /* owned */
    fl_slot *slots;
    uv_timer_t tick; /* embedded: checks the stop file */
    bool stopping;
    uint64_t next;
    uint64_t ok[2];
    uint64_t by_status[32];
    int64_t stop_at_us;
};

static void fl_next(fl_slot *s);

static void fl_count(fl_run *r, int status)
{
    unsigned idx = status <= 0 && status > ESC_E_LAST_ ? (unsigned)-status : 0u;
    r->by_status[idx < 32 ? idx : 0]++;
}

static void fl_confirm_cb(int status, const esc_hold *hold, void *arg)
{
    fl_slot *s = arg;
    fl_count(s->r, status);
    if (status == 0) {
        fprintf(s->r->out, "OK %" PRId64 " confirm %" PRIu64 " %s %s\n", esc_wall_ms(), s->hold_id,
                s->key, state_name(hold));
        fflush(s->r->out);
        s->r->ok[1]++;
    }
    fl_next(s);
}

static void fl_reserve_cb(int status, const esc_hold *hold, void *arg)
{
    fl_slot *s = arg;
    fl_run *r = s->r;
    fl_count(r, status);
    if (status != 0 || hold == NULL) {
        fl_next(s);
        return;
    }
    fprintf(r->out, "OK %" PRId64 " reserve %" PRIu64 " %s %s\n", esc_wall_ms(), hold->hold_id,
            s->key, state_name(hold));
    fflush(r->out);
    r->ok[0]++;
    s->hold_id = hold->hold_id;
    int rc = esc_async_confirm(r->p.a, s->hold_id, 0, r->args->deadline_ms, fl_confirm_cb, s);
    if (rc != 0) {
        die("confirm refused locally: %s", esc_err_name(rc));
    }
}

static void fl_next(fl_slot *s)
{
    fl_run *r = s->r;
    if (r->stopping) {
        return;
    }
    format_key(s->key, sizeof s->key, r->args->prefix, r->next++);
    esc_reserve_req req = {.item_id = r->args->item,
                           .buyer_id = s->key,
                           .qty = 1,
                           .idempotency_key = s->key,
                           .ttl_ms = r->args->ttl_ms};
    int rc = esc_async_reserve(r->p.a, &req, r->args->deadline_ms, fl_reserve_cb, s);
    if (rc != 0) {
        die("reserve refused locally: %s", esc_err_name(rc));
    }
}

static void fl_tick(uv_timer_t *t)
{
    fl_run *r = t->data;
    bool stop = (r->args->stop_file != NULL && access(r->args->stop_file, F_OK) == 0) ||
                (r->stop_at_us != 0 && esc_mono_us() >= r->stop_at_us);
    if (stop) {
        r->stopping = true;
        uv_close((uv_handle_t *)t, NULL);
    }
}

static int cmd_fence_load(const probe_args *args)
{
    if (args->out_path == NULL || (args->stop_file == NULL && args->seconds == 0)) {
        die("fence-load needs --out FILE and --stop-file FILE or --seconds S");
    }
    fl_run *r = xcalloc(1, sizeof *r);
    r->args = args;
    r->out = open_out(args);
    r->stop_at_us = args->seconds ? esc_mono_us() + (int64_t)args->seconds * 1000000 : 0;
    probe_async_open(&r->p, args, false);
    (void)uv_timer_init(&r->p.loop, &r->tick);
    r->tick.data = r;
    (void)uv_timer_start(&r->tick, fl_tick, 20, 20);
    r->slots = xcalloc(args->concurrency, sizeof *r->slots);
    for (uint32_t i = 0; i < args->concurrency; i++) {
        r->slots[i].r = r;
        fl_next(&r->slots[i]);
    }
    (void)uv_run(&r->p.loop, UV_RUN_DEFAULT);
    probe_async_close(&r->p);
    fclose(r->out);
    printf("SENT %" PRIu64 "\n", r->next);
    printf("OKS reserve=%" PRIu64 " confirm=%" PRIu64 "\n", r->ok[0], r->ok[1]);
    print_status_counts(r->by_status);
    free(r->slots);
    free(r);
    return 0;
}

/* ---- raw: frames no libescrow would send --------------------------------- */

typedef struct raw_conn {
    int sock;
    int rcvfd;
    uint32_t next_id;
} raw_conn;

static void raw_open(raw_conn *c, const char *endpoint)
{
    if (endpoint == NULL) {
        die("this command talks to one node: it needs --endpoint");
    }
    memset(c, 0, sizeof *c);
    int rc = nnx_open_req(&c->sock);
    if (rc == 0) {
        rc = nnx_connect(c->sock, endpoint, NULL);
    }
    if (rc != 0) {
        die("raw socket to %s: %s", endpoint, esc_err_name(rc));
    }
    size_t sz = sizeof c->rcvfd;
    if (nn_getsockopt(c->sock, NN_SOL_SOCKET, NN_RCVFD, &c->rcvfd, &sz) < 0) {
        die("NN_RCVFD: %s", nn_strerror(nn_errno()));
    }
    c->next_id = 1;
}

/* Waits up to wait_ms for the reply to request id. 1 = got it, 0 = none. */
static int raw_wait(raw_conn *c, uint32_t id, int64_t wait_ms, wire_reply *rep)
{
    int64_t end = esc_mono_us() + wait_ms * 1000;
    for (;;) {
        void *msg = NULL;
        size_t len = 0;
        nnx_hdr hdr;
        hdr.len = 0;
        int rc = nnx_recv(c->sock, &msg, &len, &hdr);
        if (rc != 0) {
            die("raw recv: %s", esc_err_name(rc));
        }
        if (msg != NULL) {
            uint32_t got = nnx_hdr_get_request_id(&hdr);
            rep->segs = NULL;
            rep->segs_cap = 0;
            rep->route = NULL;
            rep->hb = NULL;
            rc = wire_decode_reply(msg, len, rep);
            nnx_free(msg);
            if (rc != 0) {
                die("the node sent a reply we cannot decode: %s", esc_err_name(rc));
            }
            if (got == id) {
                return 1;
            }
            continue; /* a late answer to an earlier resend */
        }
        int64_t left_ms = (end - esc_mono_us()) / 1000;
        if (left_ms <= 0) {
            return 0;
        }
        struct pollfd pfd = {.fd = c->rcvfd, .events = POLLIN};
        (void)poll(&pfd, 1, (int)(left_ms < 50 ? left_ms : 50));
    }
}

/* Sends a frame (resending every 250 ms: a raw socket drops frames while it
 * has no connection) and waits for its reply. 1 = reply in *rep, 0 = none
 * within timeout_ms. */
static int raw_call(raw_conn *c, const void *buf, size_t len, int64_t timeout_ms, wire_reply *rep)
{
    uint32_t id = c->next_id++;
    nnx_hdr hdr;
    nnx_hdr_request_id(&hdr, id);
    int64_t end = esc_mono_us() + timeout_ms * 1000;
    while (esc_mono_us() < end) {
        int rc = nnx_send(c->sock, &hdr, buf, len);
        if (rc != 0 && rc != ESC_EBUSY) {
            die("raw send of %zu bytes: %s", len, esc_err_name(rc));
        }
        int64_t left = (end - esc_mono_us()) / 1000;
        int64_t wait = rc == ESC_EBUSY ? 10 : (left < 250 ? left : 250);
        if (raw_wait(c, id, wait, rep) == 1) {
            return 1;
        }
    }
    return 0;
}

/* A Request with every field settable, packed into buf. */
typedef struct raw_req {
    uint32_t version;
    const char *tenant;
    int op; /* WIRE_OP_* */
    const char *item, *buyer, *key;
    int64_t qty;
    uint32_t ttl_ms;
    uint64_t segment_id, hold_id;
    size_t credential_len;
} raw_req;

static size_t raw_pack(const raw_req *q, uint8_t *buf, size_t cap)
{
    uint8_t *cred = NULL;
    if (q->credential_len > 0) {
        cred = xcalloc(q->credential_len, 1);
        memset(cred, 'c', q->credential_len);
    }
    wire_raw_request r = {
        .version = q->version,
        .corr_id = 42,
        .tenant_id = q->tenant,
        .credential = cred,
        .credential_len = q->credential_len,
        .op = q->op,
        .item_id = q->op == WIRE_OP_STATS ? "" : q->item,
        .buyer_id = q->buyer,
        .key = q->key,
        .qty = q->qty,
        .ttl_ms = q->ttl_ms,
        .segment_id = q->segment_id,
        .hold_id = q->hold_id,
    };
    size_t n = 0;
    int rc = wire_encode_raw(&r, buf, cap, &n);
    free(cred);
    if (rc != 0) {
        die("raw request does not fit %zu bytes", cap);
    }
    return n;
}

typedef struct raw_ctx {
    raw_conn c;
    const probe_args *args;
    int failures;
    int cases;
    uint8_t *buf; /* owned, RAW_BUF_BYTES */
} raw_ctx;

#define RAW_BUF_BYTES (256 * 1024)
#define RAW_REPLY_MS 3000

/* A reserve for the probe's tenant and item with sane fields. */
static raw_req raw_base(const probe_args *args)
{
    raw_req q;
    memset(&q, 0, sizeof q);
    q.version = WIRE_VERSION;
    q.tenant = args->tenant;
    q.op = WIRE_OP_RESERVE;
    q.item = args->item;
    q.buyer = "raw-buyer";
    q.key = "raw-key-never-stored";
    q.qty = 1;
    return q;
}

/* Sends len bytes of x->buf; expects a reply with status want. */
static void raw_expect(raw_ctx *x, const char *name, size_t len, int want)
{
    wire_reply rep;
    x->cases++;
    if (raw_call(&x->c, x->buf, len, RAW_REPLY_MS, &rep) == 0) {
        printf("CASE %-28s bytes=%-7zu -> no reply (expected %s)\n", name, len, esc_err_name(want));
        x->failures++;
        return;
    }
    bool ok = rep.status == want;
    printf("CASE %-28s bytes=%-7zu -> %s%s%s (%s)\n", name, len, esc_err_name(rep.status),
           ok ? "" : ", expected ", ok ? "" : esc_err_name(want), rep.message);
    if (!ok) {
        x->failures++;
    }
}

static void raw_expect_req(raw_ctx *x, const char *name, const raw_req *q, int want)
{
    raw_expect(x, name, raw_pack(q, x->buf, RAW_BUF_BYTES), want);
}

static char *repeat_char(char ch, size_t n)
{
    char *s = xcalloc(n + 1, 1);
    memset(s, ch, n);
    return s;
}

/* Not protobuf at all, or protobuf that is not an escrow request. */
static void raw_cases_malformed(raw_ctx *x)
{
    static const uint8_t wire7[] = {0x0f, 0xff, 0xff, 0xff}; /* field 1, wire type 7 */
    static const uint8_t trunc[] = {0x10, 0xff, 0xff};       /* varint cut short */
    static const uint8_t badlen[] = {0x1a, 0x7f, 'a', 'b'};  /* string longer than frame */
    memcpy(x->buf, wire7, sizeof wire7);
    raw_expect(x, "malformed_wire_type", sizeof wire7, ESC_EPROTO);
    memcpy(x->buf, trunc, sizeof trunc);
    raw_expect(x, "malformed_truncated_varint", sizeof trunc, ESC_EPROTO);
    memcpy(x->buf, badlen, sizeof badlen);
    raw_expect(x, "malformed_length_overrun", sizeof badlen, ESC_EPROTO);
    raw_expect(x, "empty_frame", 0, ESC_EPROTO);
    raw_req q = raw_base(x->args);
    size_t n = raw_pack(&q, x->buf, RAW_BUF_BYTES);
    x->buf[n] = 0xff; /* a valid reserve with one byte of garbage after it */
    raw_expect(x, "trailing_garbage", n + 1, ESC_EPROTO);
    q.version = 7;
    raw_expect_req(x, "wrong_version", &q, ESC_EPROTO);
    q.version = 0;
    raw_expect_req(x, "version_missing", &q, ESC_EPROTO);
    q = raw_base(x->args);
    q.op = WIRE_OP_NONE;
    raw_expect_req(x, "no_operation", &q, ESC_EPROTO);
}

static void raw_cases_qty(raw_ctx *x)
{
    raw_req q = raw_base(x->args);
    q.qty = 0;
    raw_expect_req(x, "qty_zero", &q, ESC_EINVAL);
    q.qty = -1;
    raw_expect_req(x, "qty_negative", &q, ESC_EINVAL);
    q.qty = INT64_MIN;
    raw_expect_req(x, "qty_int64_min", &q, ESC_EINVAL);
    q.qty = ESC_QTY_MAX + 1;
    raw_expect_req(x, "qty_above_max", &q, ESC_EINVAL);
    q.qty = INT64_MAX;
    raw_expect_req(x, "qty_int64_max", &q, ESC_EINVAL);
    q.qty = 1;
    q.ttl_ms = ESC_TTL_MS_MIN - 1;
    raw_expect_req(x, "ttl_below_min", &q, ESC_EINVAL);
    q.ttl_ms = ESC_TTL_MS_MAX + 1;
    raw_expect_req(x, "ttl_above_max", &q, ESC_EINVAL);
    q.ttl_ms = 0;
    q.segment_id = ESC_SEGMENT_ID_MAX + 1;
    raw_expect_req(x, "segment_hint_out_of_range", &q, ESC_EINVAL);
}

static void raw_cases_ids(raw_ctx *x)
{
    char *k129 = repeat_char('k', ESC_KEY_LEN_MAX + 1);
    char *t65 = repeat_char('t', ESC_TENANT_LEN_MAX + 1);
    raw_req q = raw_base(x->args);
    q.key = k129;
    raw_expect_req(x, "key_129_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.item = k129;
    raw_expect_req(x, "item_129_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.buyer = k129;
    raw_expect_req(x, "buyer_129_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.tenant = t65;
    raw_expect_req(x, "tenant_65_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.key = "has space";
    raw_expect_req(x, "key_with_space", &q, ESC_EINVAL);
    q.key = "del\x7f";
    raw_expect_req(x, "key_with_del", &q, ESC_EINVAL);
    q.key = "";
    raw_expect_req(x, "key_empty", &q, ESC_EINVAL);
    q = raw_base(x->args);
    q.tenant = "";
    raw_expect_req(x, "tenant_empty", &q, ESC_EINVAL);
    q = raw_base(x->args);
    q.credential_len = ESC_CREDENTIAL_LEN_MAX + 1;
    raw_expect_req(x, "credential_257_bytes", &q, ESC_ETOOBIG);
    q = raw_base(x->args);
    q.tenant = "no-such-tenant";
    raw_expect_req(x, "unknown_tenant", &q, ESC_EUNKNOWN_TENANT);
    q = raw_base(x->args);
    q.item = "no-such-item";
    raw_expect_req(x, "unknown_item", &q, ESC_EUNKNOWN_ITEM);
    free(k129);
    free(t65);
}

/* Transitions on hold ids that are malformed, foreign, absent or misused. */
static void raw_cases_holds(raw_ctx *x)
{
    const probe_args *a = x->args;
    raw_req q = raw_base(a);
    q.op = WIRE_OP_CONFIRM;
    q.qty = 0;
    q.hold_id = 0;
    raw_expect_req(x, "confirm_hold_id_zero", &q, ESC_EINVAL);
    q.hold_id = 5; /* segment 0 */
    raw_expect_req(x, "confirm_hold_segment_zero", &q, ESC_EINVAL);
    q.hold_id = a->hold_id;
    q.qty = -1;
    raw_expect_req(x, "confirm_qty_negative", &q, ESC_EINVAL);
    q.qty = ESC_QTY_MAX + 1;
    raw_expect_req(x, "confirm_qty_above_max", &q, ESC_EINVAL);
    q.qty = a->qty + 1; /* more than the hold has: refused, hold untouched */
    raw_expect_req(x, "confirm_more_than_held", &q, ESC_EINVAL);
    q.op = WIRE_OP_RELEASE;
    q.hold_id = ((uint64_t)ESC_SEGMENT_ID_MAX << ESC_HOLD_SEQ_BITS) | 1u;
    raw_expect_req(x, "release_unowned_segment", &q, ESC_ENOT_OWNER);
    q.op = WIRE_OP_GET;
    q.hold_id = (a->segment_id << ESC_HOLD_SEQ_BITS) | 0xfffffffu;
    raw_expect_req(x, "get_absent_hold", &q, ESC_ENOT_FOUND);
    q.op = WIRE_OP_CONFIRM;
    q.qty = 0;
    q.hold_id = a->hold_id;
    q.tenant = "other-tenant";
    raw_expect_req(x, "confirm_other_tenants_hold", &q, ESC_ENOT_FOUND);
    q = raw_base(a);
    q.op = WIRE_OP_EXTEND;
    q.hold_id = a->hold_id;
    q.ttl_ms = 10;
    raw_expect_req(x, "extend_ttl_below_min", &q, ESC_EINVAL);
    q = raw_base(a);
    q.key = a->key; /* the existing hold's key with another qty */
    q.buyer = a->key;
    q.qty = a->qty + 1;
    raw_expect_req(x, "reserve_key_mismatch", &q, ESC_EIDEMPOTENCY_MISMATCH);
}

/* Frames near and over the protocol's size limit. */
static void raw_cases_size(raw_ctx *x)
{
    /* A 60 KiB field in a frame under the limit: refused by the field's own
     * bound (TOOBIG), not by the decoder running out of room (PROTO). */
    char *big = repeat_char('b', 60 * 1024);
    raw_req q = raw_base(x->args);
    q.tenant = big;
    raw_expect(x, "tenant_60_kib", raw_pack(&q, x->buf, RAW_BUF_BYTES), ESC_ETOOBIG);
    q = raw_base(x->args);
    q.credential_len = 60 * 1024;
    raw_expect(x, "credential_60_kib", raw_pack(&q, x->buf, RAW_BUF_BYTES), ESC_ETOOBIG);
    free(big);
    /* Over NN_RCVMAXSIZE: nanomsg drops the connection; no reply is fine. */
    size_t len = ESC_FRAME_BYTES_MAX + 4096;
    memset(x->buf, 0x0a, len);
    wire_reply rep;
    x->cases++;
    int got = raw_call(&x->c, x->buf, len, 1500, &rep);
    printf("CASE %-28s bytes=%-7zu -> %s\n", "oversized_frame", len,
           got ? esc_err_name(rep.status) : "no reply (connection dropped)");
    if (got && rep.status != ESC_ETOOBIG && rep.status != ESC_EPROTO) {
        x->failures++;
    }
}

/* The node still answers on this socket (stats touches no database). */
static void raw_alive(raw_ctx *x, const char *name)
{
    raw_req q = raw_base(x->args);
    q.op = WIRE_OP_STATS;
    raw_expect_req(x, name, &q, 0);
}

/* ---- plain TCP at the node's port --------------------------------------- */

static int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        die("socket: %s", strerror(errno));
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        die("connect to 127.0.0.1:%d: %s", port, strerror(errno));
    }
    return fd;
}

/* True if the peer closes (EOF or reset) within wait_ms; reads what it sends. */
static bool tcp_closed_by_peer(int fd, int wait_ms)
{
    int64_t end = esc_mono_us() + (int64_t)wait_ms * 1000;
    for (;;) {
        int64_t left = (end - esc_mono_us()) / 1000;
        if (left <= 0) {
            return false;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)left) <= 0) {
            continue;
        }
        char b[256];
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
            return true;
        }
    }
}

static void tcp_send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return; /* the node may close while we write: that is its answer */
        }
        p += n;
        len -= (size_t)n;
    }
}

/* The SP protocol header nanomsg speaks on TCP: \0 S P \0, protocol, 0 0. */
static void sp_header(uint8_t h[8], int protocol)
{
    h[0] = 0;
    h[1] = 'S';
    h[2] = 'P';
    h[3] = 0;
    h[4] = (uint8_t)(protocol >> 8);
    h[5] = (uint8_t)protocol;
    h[6] = 0;
    h[7] = 0;
}

static void tcp_case(raw_ctx *x, const char *name, int fd, bool must_close)
{
    x->cases++;
    bool closed = tcp_closed_by_peer(fd, 2000);
    printf("CASE %-28s -> %s\n", name, closed ? "connection closed by the node" : "still open");
    if (must_close && !closed) {
        x->failures++;
    }
    close(fd);
}

static void raw_cases_tcp(raw_ctx *x, int port)
{
    static const char http[] = "GET / HTTP/1.1\r\nHost: escrow\r\n\r\n";
    int fd = tcp_connect(port);
    tcp_send_all(fd, http, sizeof http - 1);
    tcp_case(x, "tcp_http_garbage", fd, true);

    uint8_t h[8];
    fd = tcp_connect(port);
    sp_header(h, NN_PROTO_REQREP * 16 + 1); /* REP talking to REP: wrong peer protocol */
    tcp_send_all(fd, h, sizeof h);
    tcp_case(x, "tcp_wrong_sp_protocol", fd, true);

    fd = tcp_connect(port);
    sp_header(h, NN_REQ);
    uint8_t huge[8] = {0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff}; /* a 140 TB frame */
    tcp_send_all(fd, h, sizeof h);
    tcp_send_all(fd, huge, sizeof huge);
    tcp_case(x, "tcp_frame_length_140TB", fd, true);

    fd = tcp_connect(port);
    uint8_t half[8 + 8 + 10] = {0};
    sp_header(half, NN_REQ);
    half[15] = 100; /* announces 100 bytes, sends 10, hangs up */
    tcp_send_all(fd, half, sizeof half);
    close(fd);
    printf("CASE %-28s -> sent and hung up\n", "tcp_half_frame");

    uint8_t noise[4096];
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < sizeof noise; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        noise[i] = (uint8_t)s;
    }
    for (int i = 0; i < 20; i++) {
        fd = tcp_connect(port);
        tcp_send_all(fd, noise + i * 100, 1000);
        close(fd);
    }
    printf("CASE %-28s -> 20 connections sent 1000 random bytes each\n", "tcp_noise");
}

/* Idle TCP connections must not stall the node for everyone else. */
static void raw_idle_connections(raw_ctx *x, int port)
{
    int fds[16];
    for (int i = 0; i < 16; i++) {
        fds[i] = tcp_connect(port);
    }
    raw_alive(x, "alive_with_idle_tcp_peers");
    for (int i = 0; i < 16; i++) {
        close(fds[i]);
    }
}

static int endpoint_port(const char *endpoint)
{
    const char *colon = strrchr(endpoint, ':');
    int port = colon ? atoi(colon + 1) : 0;
    if (strncmp(endpoint, "tcp://", 6) != 0 || port <= 0 || port > 65535) {
        die("raw needs a tcp://HOST:PORT endpoint, got %s", endpoint);
    }
    return port;
}

static int cmd_raw(const probe_args *args)
{
    if (args->hold_id == 0 || args->segment_id == 0 || args->key == NULL) {
        die("raw needs --hold ID --segment ID --key KEY (an existing hold and its key)");
    }
    raw_ctx x;
    memset(&x, 0, sizeof x);
    x.args = args;
    x.buf = xcalloc(RAW_BUF_BYTES, 1);
    raw_open(&x.c, args->endpoint);
    raw_alive(&x, "alive_at_start");
    raw_cases_malformed(&x);
    raw_cases_qty(&x);
    raw_cases_ids(&x);
    raw_cases_holds(&x);
    raw_cases_size(&x);
    raw_alive(&x, "alive_after_oversized");
    raw_cases_tcp(&x, endpoint_port(args->endpoint));
    raw_idle_connections(&x, endpoint_port(args->endpoint));
    raw_alive(&x, "alive_at_end");
    nnx_close(x.c.sock);
    free(x.buf);
    printf("RAW cases=%d failures=%d\n", x.cases, x.failures);
    if (x.failures != 0) {
        die("raw: %d of %d cases got an unexpected answer", x.failures, x.cases);
    }
    return 0;
}

/* ---- argv --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: esc_probe COMMAND (--endpoint URL | --coordinator URL [--routes URL]) "
               "[--tenant T] [options]\n"
               "  reserve --item I --key K [--buyer B] [--qty Q] [--ttl-ms MS]\n"
               "  confirm|release|extend|get --hold ID [--qty Q] [--ttl-ms MS]\n"
               "      one blocking call; prints 'STATUS hold=.. state=.. qty=.. sold=..'\n"
               "  same-key --item I --key K --n N [--qty Q]   N reserves with one key at once\n"
               "  cr-race --item I --prefix P --n N           confirm vs release per hold\n"
               "  rx-race --item I --prefix P --n N --ttl-ms MS --per-hold K\n"
               "                                              K releases around each expiry\n"
               "  record --item I --prefix P --n N --concurrency C --out FILE [--ttl-ms MS]\n"
               "  verify --item I --in FILE [--every K]       recorded keys get their holds\n"
               "  fence-load --item I --prefix P --concurrency C --out FILE\n"
               "             (--stop-file F | --seconds S)    every OK with its wall time\n"
               "  raw --item I --hold ID --segment ID --key K --qty Q   malformed input\n"
               "  fake-coord --in SPEC --out LOG (--stop-file F | --seconds S)\n"
               "             a coordinator answering heartbeats (see probe_coord.c)\n"
               "  hint-reserve --item I --key K [--buyer B] [--segment S] [--qty Q] [--attempt N]\n"
               "             [--resolve]\n"
               "             one reserve (or resolve) frame with a segment hint\n"
               "  op-release --hold ID                        release by an operator\n"
               "  frame --op OP [--item I --key K --hold ID --qty Q --node N]\n"
               "      one request of any kind (probe_frame.h), answer as one line\n"
               "common: --tenant (t1) --deadline-ms (5000) --qty (1)\n"
               "        --credential KEY  sent with every request (libescrow and raw)\n");
}

static int parse_u64_arg(const char *s, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (s[0] == '-') {
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

static const struct option probe_opts[] = {{"endpoint", required_argument, NULL, 'e'},
                                           {"coordinator", required_argument, NULL, 'C'},
                                           {"routes", required_argument, NULL, 'R'},
                                           {"tenant", required_argument, NULL, 't'},
                                           {"item", required_argument, NULL, 'i'},
                                           {"buyer", required_argument, NULL, 'b'},
                                           {"key", required_argument, NULL, 'k'},
                                           {"prefix", required_argument, NULL, 'p'},
                                           {"out", required_argument, NULL, 'o'},
                                           {"in", required_argument, NULL, 'I'},
                                           {"stop-file", required_argument, NULL, 'S'},
                                           {"qty", required_argument, NULL, 'q'},
                                           {"hold", required_argument, NULL, 'H'},
                                           {"segment", required_argument, NULL, 'g'},
                                           {"ttl-ms", required_argument, NULL, 'l'},
                                           {"deadline-ms", required_argument, NULL, 'd'},
                                           {"n", required_argument, NULL, 'n'},
                                           {"concurrency", required_argument, NULL, 'c'},
                                           {"per-hold", required_argument, NULL, 'K'},
                                           {"seconds", required_argument, NULL, 's'},
                                           {"every", required_argument, NULL, 'E'},
                                           {"credential", required_argument, NULL, 'X'},
                                           {"op", required_argument, NULL, 'O'},
                                           {"node", required_argument, NULL, 'N'},
                                           {"attempt", required_argument, NULL, 'A'},
                                           {"resolve", no_argument, NULL, 'r'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};

static int parse_number(probe_args *a, int ch, const char *v)
{
    uint64_t u = 0;
    switch (ch) {
    case 'q': {
        char *end = NULL;
        errno = 0;
        long long q = strtoll(v, &end, 10);
        if (errno != 0 || end == v || *end != '\0') {
            return -1;
        }
        a->qty = q;
        a->qty_set = true;
        return 0;
    }
    case 'H':
        return parse_u64_arg(v, UINT64_MAX, &a->hold_id);
    case 'g':
        return parse_u64_arg(v, UINT64_MAX, &a->segment_id);
    case 'A':
        return parse_u64_arg(v, UINT64_MAX, &a->attempt);
    default:
        break;
    }
    uint64_t max = ch == 'n'   ? PROBE_N_MAX
                   : ch == 'c' ? PROBE_CONCURRENCY_MAX
                   : ch == 'K' ? PROBE_PER_HOLD_MAX
                               : UINT32_MAX;
    if (parse_u64_arg(v, max, &u) < 0) {
        return -1;
    }
    uint32_t *dst = ch == 'l'   ? &a->ttl_ms
                    : ch == 'd' ? &a->deadline_ms
                    : ch == 'n' ? &a->n
                    : ch == 'c' ? &a->concurrency
                    : ch == 'K' ? &a->per_hold
                    : ch == 's' ? &a->seconds
                                : &a->every;
    *dst = (uint32_t)u;
    return 0;
}

static int parse_args(int argc, char **argv, probe_args *a)
{
    memset(a, 0, sizeof *a);
    a->tenant = "t1";
    a->qty = 1;
    a->n = 1;
    a->concurrency = 64;
    a->per_hold = 5;
    a->deadline_ms = 5000;
    if (argc < 2 || argv[1][0] == '-') {
        usage(stderr);
        return -1;
    }
    a->cmd = argv[1];
    optind = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "", probe_opts, NULL)) != -1) {
        const char **s = ch == 'e'   ? &a->endpoint
                         : ch == 'C' ? &a->coordinator
                         : ch == 'R' ? &a->routes
                         : ch == 't' ? &a->tenant
                         : ch == 'i' ? &a->item
                         : ch == 'b' ? &a->buyer
                         : ch == 'k' ? &a->key
                         : ch == 'p' ? &a->prefix
                         : ch == 'o' ? &a->out_path
                         : ch == 'I' ? &a->in_path
                         : ch == 'S' ? &a->stop_file
                         : ch == 'X' ? &a->credential
                         : ch == 'O' ? &a->op
                         : ch == 'N' ? &a->node
                                     : NULL;
        if (s != NULL) {
            *s = optarg;
        } else if (ch == 'h') {
            usage(stdout);
            exit(0);
        } else if (ch == 'r') {
            a->resolve = true;
        } else if (ch == '?' || parse_number(a, ch, optarg) < 0) {
            fprintf(stderr, "esc_probe: bad option or value near '%s'\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind != argc || (a->endpoint == NULL) == (a->coordinator == NULL)) {
        fprintf(stderr, "esc_probe: --endpoint or --coordinator is required (one of them); "
                        "no positional arguments\n");
        return -1;
    }
    return 0;
}

/* cart --item "a:2,b:1,a:1" --key CART: one all-or-nothing cart (blocking).
 * Prints "<STATUS> holds=N failed_line=I" and one "HOLD ..." line per hold. */
static int cmd_cart(const probe_args *args)
{
    char spec[1024];
    esc_cart_line lines[ESC_CART_LINES_MAX];
    size_t n = 0;
    snprintf(spec, sizeof spec, "%s", args->item);
    for (char *save = NULL, *tok = strtok_r(spec, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (colon == NULL || n == ESC_CART_LINES_MAX) {
            die("cart: --item wants ITEM:QTY[,ITEM:QTY...]");
        }
        *colon = '\0';
        lines[n].item_id = tok;
        lines[n].qty = strtoll(colon + 1, NULL, 10);
        n++;
    }
    esc_client *c = client_open(args);
    esc_hold holds[ESC_CART_LINES_MAX];
    size_t nholds = 0, failed = 0;
    int rc = esc_reserve_cart(c, args->buyer ? args->buyer : args->key, lines, n, args->key,
                              args->ttl_ms, 0, holds, &nholds, &failed);
    printf("%s holds=%zu failed_line=%zu\n", esc_err_name(rc), rc == 0 ? nholds : 0,
           rc == 0 ? n : failed);
    for (size_t i = 0; rc == 0 && i < nholds; i++) {
        printf("HOLD item=%s qty=%lld hold=%llu\n", holds[i].item_id, (long long)holds[i].qty,
               (unsigned long long)holds[i].hold_id);
    }
    esc_client_free(c);
    return 0;
}

/* Managed mode (probe_coord.c). */
static int cmd_fake_coord(const probe_args *a)
{
    return probe_fake_coord(a->endpoint, a->in_path, a->out_path, a->stop_file, a->seconds);
}

static int cmd_hint_reserve(const probe_args *a)
{
    return probe_hint_reserve(a->endpoint, a->tenant, a->item, a->buyer, a->key, a->qty,
                              a->segment_id, a->attempt, a->resolve, a->deadline_ms);
}

static int cmd_frame(const probe_args *a)
{
    if (a->op == NULL || a->endpoint == NULL) {
        die("frame needs --op and --endpoint (a node's or the coordinator's)");
    }
    probe_frame_args f = {.endpoint = a->endpoint,
                          .op = a->op,
                          .tenant = a->tenant,
                          .item = a->item,
                          .key = a->key,
                          .node = a->node,
                          .hold_id = a->hold_id,
                          .segment_id = a->segment_id,
                          .qty = a->qty,
                          .deadline_ms = a->deadline_ms,
                          .n = a->n};
    return probe_frame(&f);
}

static int cmd_op_release(const probe_args *a)
{
    return probe_op_release(a->endpoint, a->tenant, a->hold_id, a->deadline_ms);
}

typedef struct probe_cmd {
    const char *name;
    int (*fn)(const probe_args *args);
    bool needs_item, needs_key, needs_prefix, needs_hold;
} probe_cmd;

static const probe_cmd probe_cmds[] = {
    {"reserve", cmd_single, true, true, false, false},
    {"confirm", cmd_single, false, false, false, true},
    {"release", cmd_single, false, false, false, true},
    {"extend", cmd_single, false, false, false, true},
    {"get", cmd_single, false, false, false, true},
    {"same-key", cmd_same_key, true, true, false, false},
    {"cr-race", cmd_cr_race, true, false, true, false},
    {"rx-race", cmd_rx_race, true, false, true, false},
    {"record", cmd_record, true, false, true, false},
    {"verify", cmd_verify, true, false, false, false},
    {"fence-load", cmd_fence_load, true, false, true, false},
    {"raw", cmd_raw, true, false, false, false},
    {"cart", cmd_cart, true, true, false, false},
    {"fake-coord", cmd_fake_coord, false, false, false, false},
    {"hint-reserve", cmd_hint_reserve, true, true, false, false},
    {"op-release", cmd_op_release, false, false, false, true},
    {"frame", cmd_frame, false, false, false, false},
};

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "esc_probe: FAIL: still running at its time limit "
                              "(ESC_PROBE_TIMEOUT_S); killed itself\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(PROBE_EXIT_FAIL);
}

static void arm_watchdog(void)
{
    const char *env = getenv("ESC_PROBE_TIMEOUT_S");
    long s = env != NULL ? strtol(env, NULL, 10) : PROBE_TIMEOUT_S_DEFAULT;
    if (s > 0) {
        signal(SIGALRM, on_alarm);
        alarm((unsigned)s);
    }
}

int main(int argc, char **argv)
{
    probe_args args;
    if (parse_args(argc, argv, &args) < 0) {
        return PROBE_EXIT_USAGE;
    }
    if (args.credential != NULL && wire_set_credential(args.credential) != 0) {
        fprintf(stderr, "esc_probe: --credential is longer than %d bytes\n",
                ESC_CREDENTIAL_LEN_MAX);
        return PROBE_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof probe_cmds / sizeof probe_cmds[0]; i++) {
        const probe_cmd *c = &probe_cmds[i];
        if (strcmp(c->name, args.cmd) != 0) {
            continue;
        }
        if ((c->needs_item && args.item == NULL) || (c->needs_key && args.key == NULL) ||
            (c->needs_prefix && args.prefix == NULL) || (c->needs_hold && args.hold_id == 0)) {
            fprintf(stderr, "esc_probe %s: missing --item, --key, --prefix or --hold\n", c->name);
            return PROBE_EXIT_USAGE;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        arm_watchdog();
        return c->fn(&args);
    }
    fprintf(stderr, "esc_probe: unknown command '%s'\n", args.cmd);
    usage(stderr);
    return PROBE_EXIT_USAGE;
}
