/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chaos_client.c - the workload clients of the chaos suite (chaos/chaos.py).
 *
 * Real checkout traffic through libescrow's asynchronous API in routing mode
 * (coordinator + route PUB socket), on one libuv loop, `concurrency` slots
 * each running one buyer story after another (the slots are the lanes of
 * tests/tools/driver, a story is one of its jobs). Every call is recorded as a
 * history line in Jepsen's style (JSON lines): an "invoke" before the call,
 * then "ok", "fail" (definitely nothing changed / the stated outcome) or
 * "info" (outcome unknown: timeout, transport error). A slot is a process:
 * it has at most one call outstanding, so an invoke and its completion pair
 * up by process. chaos/check.py reads these files.
 *
 *   chaos_client --coordinator URL --routes URL --tenant T --workload W
 *                --seconds S --process-base P --out FILE [--seed N]
 *                [--concurrency C] [--items a,b,..] [--segments 1,2,..]
 *
 * Workloads (the guarantees they exercise: docs/guarantees.md):
 *   flash    items flash-0..: 10,000 buyers per round for 100 units, qty 1,
 *            ttl 1500 ms; 70 % confirm, 20 % release, 10 % abandon
 *   cart     carts of 1..5 lines over items cart-0..cart-4 (all-or-nothing);
 *            then 70 % confirm every hold, 30 % release every hold
 *   skew     item skew, 16 segments, 80 % of buyers on 2 segments; 90 % confirm
 *   retry    the same keys resent (concurrently, and after a 150 ms deadline
 *            ran out); confirm or release twice
 *   expiry   ttl 300 ms holds confirmed or released at the deadline +- 6 ms
 *   tenant   item "same" with keys tk-<n>: run once per tenant with the same
 *            seed; identical ids and keys in both tenants
 *   finish   P9: first every segment of --segments is probed (a get of an
 *            absent hold: NOT_FOUND = its owner serves it), then every item
 *            of --items is bought out (reserve + confirm until SOLD_OUT)
 * Exit 0 (the history is the output), 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "driver.h"
#include "escrow.h"

#define CC_SLOTS_MAX 512u
#define CC_ITEMS_MAX 64u
#define CC_SEGS_MAX 1024u
#define CC_FLASH_ITEMS 10u
#define CC_FLASH_BUYERS 10000u
#define CC_CART_ITEMS 5u
#define CC_PROBE_SEQ ((1ULL << 40) - 2) /* a hold sequence no segment reaches */

typedef struct cc cc;

typedef struct slot {
    cc *c;          /* borrowed */
    uint32_t index; /* the driver's lane; its timer waits think time, an expiry race */
    uint32_t process;
    uint64_t story; /* stories started by this slot */
    int step;       /* the story's next step */
    int plan;       /* 0 confirm, 1 release, 2 abandon */
    int dup;        /* repeats left of the current call (retry storm) */
    uint64_t holds[8];
    size_t nholds;
    size_t hi; /* next hold of holds[] to end */
    int64_t expires_ms;
    int64_t qty;
    uint32_t ttl_ms;
    uint32_t deadline_ms;
    const char *f; /* the call in flight */
    char item[ESC_ID_MAX + 1];
    char key[ESC_ID_MAX + 1];
    char buyer[ESC_ID_MAX + 1];
    esc_cart_line lines[CC_CART_ITEMS];
    char line_items[CC_CART_ITEMS][32];
    size_t nlines;
    int fin_item; /* finish: the item being bought out */
} slot;

struct cc {
    const char *coordinator, *routes, *tenant, *workload, *out_path;
    const char *credential; /* the tenant's key (esk_...), or NULL: the cluster runs without auth */
    uint64_t seed;
    uint32_t seconds, concurrency, process_base;
    char *items[CC_ITEMS_MAX];
    size_t nitems;
    uint64_t segs[CC_SEGS_MAX];
    size_t nsegs;
    FILE *out;
    esc_async *a;
    uv_loop_t *loop;
    driver *d; /* owned: the slots' loop, stops after --seconds */
    slot *slots;
    uv_signal_t sigterm;
    int64_t t0_ms;
    uint64_t ops, oks, fails, infos;
    esc_stats st;        /* libescrow's counters, read before the close */
    uint64_t flash_next; /* next flash buyer (round = / CC_FLASH_BUYERS) */
    uint64_t global_story;
    bool fin_done[CC_ITEMS_MAX];
    bool seg_served[CC_SEGS_MAX];
    size_t segs_left;
    int64_t seg_served_ms[CC_SEGS_MAX];
};

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A deterministic draw in [0, n) for (slot, story, salt). */
static uint32_t draw(const slot *s, uint64_t salt, uint32_t n)
{
    uint64_t x = mix64(s->c->seed ^ mix64(((uint64_t)s->process << 32) ^ s->story) ^ salt);
    return n ? (uint32_t)(x % n) : 0;
}

/* ---- history ------------------------------------------------------------ */

static void h_begin(cc *c, const char *type, const char *f, uint32_t process)
{
    fprintf(c->out,
            "{\"type\":\"%s\",\"f\":\"%s\",\"process\":%" PRIu32 ",\"time\":%" PRId64
            ",\"tenant\":\"%s\",\"value\":{",
            type, f, process, wall_us(), c->tenant);
}

static void h_end(cc *c)
{
    fputs("}}\n", c->out);
}

static void h_hold(FILE *o, const esc_hold *h)
{
    fprintf(o,
            "\"hold\":%" PRIu64 ",\"seg\":%" PRIu64 ",\"item\":\"%s\",\"hqty\":%" PRId64
            ",\"qty_sold\":%" PRId64 ",\"state\":\"%s\",\"expires\":%" PRId64,
            h->hold_id, h->segment_id, h->item_id, h->qty, h->qty_sold,
            esc_hold_state_name(h->state), h->expires_at_ms);
}

/* Definite answers: nothing was written, or the answer states the outcome. */
static bool definite(int status)
{
    switch (status) {
    case ESC_ESOLD_OUT:
    case ESC_ETRY_LATER:
    case ESC_ESEGMENT_EMPTY:
    case ESC_EEXPIRED:
    case ESC_ENOT_HELD:
    case ESC_EIDEMPOTENCY_MISMATCH:
    case ESC_EBUYER_LIMIT:
    case ESC_EORDER_LIMIT:
    case ESC_EALREADY_EXTENDED:
    case ESC_ENOT_FOUND:
    case ESC_EUNKNOWN_TENANT:
    case ESC_EUNKNOWN_ITEM:
    case ESC_EPAUSED:
    case ESC_EINVAL:
    case ESC_ETOOBIG:
    case ESC_EPROTO:
    case ESC_EUNAVAILABLE:
        return true;
    default:
        return false;
    }
}

/* Counts one completed operation; returns its history type: ok / fail /
 * info. */
static const char *h_outcome(cc *c, int status)
{
    const char *type = status == 0 ? "ok" : definite(status) ? "fail" : "info";
    c->ops++;
    if (status == 0) {
        c->oks++;
    } else if (type[0] == 'f') {
        c->fails++;
    } else {
        c->infos++;
    }
    return type;
}

/* Writes the completion of slot s's call: ok / fail / info. */
static void h_complete(slot *s, int status, const esc_hold *h)
{
    cc *c = s->c;
    const char *type = h_outcome(c, status);
    h_begin(c, type, s->f, s->process);
    fprintf(c->out, "\"error\":\"%s\"", status ? esc_err_name(status) : "");
    if (h != NULL) {
        fputc(',', c->out);
        h_hold(c->out, h);
    }
    h_end(c);
}

/* ---- calls -------------------------------------------------------------- */

static void story_next(slot *s);
static void step(slot *s);
static void hold_cb(int status, const esc_hold *hold, void *arg);
static void later(slot *s, uint64_t ms);

static void call_failed(slot *s, int rc)
{
    /* The library refused the call (never sent): a definite failure. */
    h_begin(s->c, "fail", s->f, s->process);
    fprintf(s->c->out, "\"error\":\"%s\",\"refused\":true", esc_err_name(rc));
    h_end(s->c);
    s->c->ops++;
    s->c->fails++;
    story_next(s);
}

static void do_reserve(slot *s)
{
    s->f = "reserve";
    h_begin(s->c, "invoke", "reserve", s->process);
    fprintf(s->c->out,
            "\"item\":\"%s\",\"key\":\"%s\",\"buyer\":\"%s\",\"qty\":%" PRId64 ",\"ttl\":%" PRIu32,
            s->item, s->key, s->buyer, s->qty, s->ttl_ms);
    h_end(s->c);
    esc_reserve_req req = {.item_id = s->item,
                           .buyer_id = s->buyer,
                           .qty = s->qty,
                           .idempotency_key = s->key,
                           .ttl_ms = s->ttl_ms};
    int rc = esc_async_reserve(s->c->a, &req, s->deadline_ms, hold_cb, s);
    if (rc != 0) {
        call_failed(s, rc);
    }
}

/* f: "confirm", "release" or "get". */
static void do_hold_op(slot *s, const char *f, uint64_t hold_id)
{
    s->f = f;
    h_begin(s->c, "invoke", f, s->process);
    fprintf(s->c->out, "\"hold\":%" PRIu64 ",\"qty\":0", hold_id);
    h_end(s->c);
    int rc;
    if (f[0] == 'c') {
        rc = esc_async_confirm(s->c->a, hold_id, 0, s->deadline_ms, hold_cb, s);
    } else if (f[0] == 'r') {
        rc = esc_async_release(s->c->a, hold_id, s->deadline_ms, hold_cb, s);
    } else {
        rc = esc_async_get(s->c->a, hold_id, s->deadline_ms, hold_cb, s);
    }
    if (rc != 0) {
        call_failed(s, rc);
    }
}

static void cart_cb(int status, const esc_hold *holds, size_t nholds, size_t failed_line, void *arg)
{
    slot *s = arg;
    cc *c = s->c;
    const char *type = h_outcome(c, status);
    h_begin(c, type, "cart", s->process);
    fprintf(c->out, "\"error\":\"%s\",\"failed_line\":%zu,\"holds\":[",
            status ? esc_err_name(status) : "", status ? failed_line : 0);
    s->nholds = 0;
    for (size_t i = 0; status == 0 && i < nholds && i < 8; i++) {
        fputs(i ? ",{" : "{", c->out);
        h_hold(c->out, &holds[i]);
        fputc('}', c->out);
        s->holds[s->nholds++] = holds[i].hold_id;
    }
    fputc(']', c->out);
    h_end(c);
    if (status != 0) {
        s->step = 99; /* back off, as after a failed reserve */
        later(s, 50 + draw(s, 23, 100));
        return;
    }
    s->hi = 0;
    step(s);
}

static void do_cart(slot *s)
{
    s->f = "cart";
    h_begin(s->c, "invoke", "cart", s->process);
    fprintf(s->c->out, "\"key\":\"%s\",\"buyer\":\"%s\",\"lines\":[", s->key, s->buyer);
    for (size_t i = 0; i < s->nlines; i++) {
        fprintf(s->c->out, "%s{\"item\":\"%s\",\"qty\":%" PRId64 "}", i ? "," : "",
                s->lines[i].item_id, s->lines[i].qty);
    }
    fputc(']', s->c->out);
    h_end(s->c);
    int rc = esc_async_reserve_cart(s->c->a, s->buyer, s->lines, s->nlines, s->key, 0,
                                    s->deadline_ms, cart_cb, s);
    if (rc != 0) {
        call_failed(s, rc);
    }
}

/* ---- stories ------------------------------------------------------------ */

static void timer_cb(driver *d, uint32_t lane, void *arg)
{
    (void)d;
    step(&((cc *)arg)->slots[lane]);
}

static void later(slot *s, uint64_t ms)
{
    if (driver_later(s->c->d, s->index, ms, timer_cb) != 0) {
        step(s);
    }
}

static void set_item(slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_item(slot *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->item, sizeof s->item, fmt, ap);
    va_end(ap);
}

static void begin_flash(slot *s)
{
    cc *c = s->c;
    uint64_t n = c->flash_next++;
    uint64_t round = n / CC_FLASH_BUYERS;
    set_item(s, "flash-%" PRIu64, round % CC_FLASH_ITEMS);
    snprintf(s->key, sizeof s->key, "flash-%" PRIu64 "-%" PRIu64, c->seed, n);
    s->ttl_ms = 1500;
}

static void begin_cart(slot *s)
{
    s->nlines = 1 + draw(s, 2, CC_CART_ITEMS);
    uint32_t first = draw(s, 3, CC_CART_ITEMS);
    for (size_t i = 0; i < s->nlines; i++) {
        snprintf(s->line_items[i], sizeof s->line_items[i], "cart-%zu",
                 (first + i) % CC_CART_ITEMS);
        s->lines[i].item_id = s->line_items[i];
        s->lines[i].qty = 1 + draw(s, 10 + i, 2);
    }
    s->plan = draw(s, 4, 100) < 70 ? 0 : 1;
}

static void begin_skew(slot *s)
{
    set_item(s, "skew");
    bool hot = draw(s, 5, 100) < 80;
    for (uint32_t k = 0; k < 64; k++) {
        snprintf(s->buyer, sizeof s->buyer, "b%" PRIu32 "-%" PRIu64 "-%" PRIu32, s->process,
                 s->story, k);
        if ((esc_route_slot(s->c->tenant, "skew", s->buyer, 16) < 2) == hot) {
            break;
        }
    }
    s->plan = draw(s, 6, 100) < 90 ? 0 : 1;
}

/* Stories share keys: about four stories per key, across slots. */
static void begin_retry(slot *s)
{
    cc *c = s->c;
    uint64_t k = c->global_story / 4;
    set_item(s, "retry");
    snprintf(s->key, sizeof s->key, "retry-%" PRIu64 "-%" PRIu64, c->seed, k);
    snprintf(s->buyer, sizeof s->buyer, "rb-%" PRIu64, k);
    s->qty = 1 + (int64_t)(k % 2);
    s->plan = (k % 3 == 0) ? 1 : 0;
    s->dup = 1;
}

static void begin_tenant(slot *s)
{
    set_item(s, "same");
    snprintf(s->key, sizeof s->key, "tk-%" PRIu64 "-%" PRIu32 "-%" PRIu64, s->c->seed, s->process,
             s->story);
    snprintf(s->buyer, sizeof s->buyer, "tb-%" PRIu32 "-%" PRIu64, s->process, s->story);
    s->plan = draw(s, 8, 100) < 70 ? 0 : 1;
}

/* Probes while a segment is not served yet, then buys out the first item
 * not sold out; false when every item is. */
static bool begin_finish(slot *s)
{
    cc *c = s->c;
    if (c->segs_left > 0) {
        s->step = 100; /* probing */
        return true;
    }
    size_t i;
    for (i = 0; i < c->nitems; i++) {
        size_t j = (s->index + i) % c->nitems;
        if (!c->fin_done[j]) {
            s->fin_item = (int)j;
            break;
        }
    }
    if (i == c->nitems) {
        return false;
    }
    set_item(s, "%s", c->items[s->fin_item]);
    snprintf(s->key, sizeof s->key, "fin-%" PRIu64 "-%" PRIu32 "-%" PRIu64, c->seed, s->process,
             s->story);
    s->plan = 0;
    return true;
}

/* Sets up the slot's next story; returns false when the slot is done. */
static bool story_begin(slot *s)
{
    cc *c = s->c;
    const char *w = c->workload;
    s->story++;
    c->global_story++;
    s->step = 0;
    s->nholds = s->hi = 0;
    s->qty = 1;
    s->ttl_ms = 0;
    s->deadline_ms = 3000;
    s->dup = 0;
    uint32_t u = draw(s, 1, 100);
    s->plan = u < 70 ? 0 : u < 90 ? 1 : 2;
    snprintf(s->buyer, sizeof s->buyer, "b%" PRIu32 "-%" PRIu64, s->process, s->story);
    snprintf(s->key, sizeof s->key, "%s-%" PRIu64 "-%" PRIu32 "-%" PRIu64, w, c->seed, s->process,
             s->story);
    if (strcmp(w, "flash") == 0) {
        begin_flash(s);
    } else if (strcmp(w, "cart") == 0) {
        begin_cart(s);
    } else if (strcmp(w, "skew") == 0) {
        begin_skew(s);
    } else if (strcmp(w, "retry") == 0) {
        begin_retry(s);
    } else if (strcmp(w, "expiry") == 0) {
        set_item(s, "expiry");
        s->ttl_ms = 300;
        s->plan = draw(s, 7, 100) < 80 ? 0 : 1;
    } else if (strcmp(w, "tenant") == 0) {
        begin_tenant(s);
    } else if (strcmp(w, "finish") == 0) {
        return begin_finish(s);
    }
    return true;
}

/* The slot's story ended: the driver starts its next one (story_start),
 * or retires the slot once the run stops. */
static void story_next(slot *s)
{
    driver_done(s->c->d, s->index);
}

/* Starts the slot's next story (driver_next_fn). */
static int story_start(driver *d, uint32_t lane, uint64_t job, void *arg)
{
    (void)d;
    (void)job;
    cc *c = arg;
    slot *s = &c->slots[lane];
    if (!story_begin(s)) {
        return DRIVER_IDLE;
    }
    if (strcmp(c->workload, "finish") != 0) {
        later(s, draw(s, 24, 40)); /* think time between buyers */
    } else {
        step(s);
    }
    return DRIVER_BUSY;
}

/* Every slot is done (driver_end_fn): close what keeps the loop alive. */
static void run_end(driver *d, void *arg)
{
    (void)d;
    cc *c = arg;
    uv_close((uv_handle_t *)&c->sigterm, NULL);
    esc_async_stats(c->a, &c->st);
    esc_async_close(c->a, NULL, NULL);
}

/* Ends the story's holds one by one (confirm or release), then the next story. */
static void end_holds(slot *s)
{
    if (s->plan == 2 || s->hi >= s->nholds) {
        story_next(s);
        return;
    }
    do_hold_op(s, s->plan == 0 ? "confirm" : "release", s->holds[s->hi++]);
}

static void step(slot *s)
{
    const char *w = s->c->workload;
    int st = s->step++;
    if (st == 100) { /* finish: probe one segment not yet served */
        cc *c = s->c;
        size_t j = (s->index + s->story) % c->nsegs;
        while (c->seg_served[j]) {
            j = (j + 1) % c->nsegs;
        }
        s->holds[0] = j;
        s->deadline_ms = 1000;
        do_hold_op(s, "get", (c->segs[j] << 40) | CC_PROBE_SEQ);
        return;
    }
    if (strcmp(w, "cart") == 0) {
        if (st == 0) {
            do_cart(s);
        } else {
            end_holds(s);
        }
        return;
    }
    switch (st) {
    case 0:
        if (strcmp(w, "retry") == 0 && draw(s, 20, 2) == 0) {
            s->deadline_ms = 150; /* likely to run out: then resent below */
        }
        do_reserve(s);
        return;
    case 1: /* after the reserve answered ok */
        if (strcmp(w, "expiry") == 0) {
            int64_t now_ms = wall_us() / 1000;
            int64_t at = s->expires_ms - 6 + (int64_t)draw(s, 21, 13);
            later(s, at > now_ms ? (uint64_t)(at - now_ms) : 0);
            return;
        }
        if (strcmp(w, "flash") == 0 && s->plan != 2) {
            later(s, draw(s, 22, 200));
            return;
        }
        step(s);
        return;
    default:
        if (s->plan == 2 || s->hi >= s->nholds) {
            if (s->dup > 0 && s->nholds > 0) { /* retry storm: the same end again */
                s->dup--;
                s->hi = 0;
            } else {
                story_next(s);
                return;
            }
        }
        do_hold_op(s, s->plan == 0 ? "confirm" : "release", s->holds[s->hi++]);
        return;
    }
}

static void hold_cb(int status, const esc_hold *hold, void *arg)
{
    slot *s = arg;
    cc *c = s->c;
    const char *f = s->f;
    h_complete(s, status, hold);
    if (strcmp(f, "get") == 0) { /* finish: probe */
        size_t j = (size_t)s->holds[0];
        if (status == ESC_ENOT_FOUND && !c->seg_served[j]) {
            c->seg_served[j] = true;
            c->seg_served_ms[j] = wall_us() / 1000 - c->t0_ms;
            c->segs_left--;
            printf("SERVED seg=%" PRIu64 " ms=%" PRId64 "\n", c->segs[j], c->seg_served_ms[j]);
        }
        story_next(s);
        return;
    }
    if (strcmp(f, "reserve") == 0) {
        if (status == 0 && hold != NULL) {
            s->holds[0] = hold->hold_id;
            s->nholds = 1;
            s->hi = 0;
            s->expires_ms = hold->expires_at_ms;
            step(s);
            return;
        }
        if (strcmp(c->workload, "retry") == 0 && !definite(status) && s->dup > 0) {
            s->dup--; /* resend the same key after a timeout, with time to spare */
            s->deadline_ms = 3000;
            do_reserve(s);
            return;
        }
        if (strcmp(c->workload, "finish") == 0 && status == ESC_ESOLD_OUT) {
            c->fin_done[s->fin_item] = true;
        }
        if (status == ESC_ETRY_LATER || status == ESC_ESOLD_OUT || !definite(status)) {
            /* Back off before the next story: a buyer told "sold out" leaves,
             * and cached sold-out answers would otherwise spin the loop. */
            s->step = 99;
            later(s, 50 + draw(s, 23, 100));
            return;
        }
        story_next(s);
        return;
    }
    step(s);
}

/* Slots waiting on a timer end now; slots with a call finish it. */
static void sigterm_cb(uv_signal_t *h, int signum)
{
    (void)signum;
    driver_stop(((cc *)h->data)->d);
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: chaos_client --coordinator URL [--routes URL] --tenant T --workload "
                    "flash|cart|skew|retry|expiry|tenant|finish --seconds S --process-base P "
                    "--out FILE [--seed N] [--concurrency C] [--items a,b] [--segments 1,2] "
                    "[--credential KEY]\n");
    exit(2);
}

static void split_list(cc *c, char *arg, bool segs)
{
    for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
        if (segs && c->nsegs < CC_SEGS_MAX) {
            c->segs[c->nsegs++] = strtoull(tok, NULL, 10);
        } else if (!segs && c->nitems < CC_ITEMS_MAX) {
            c->items[c->nitems++] = tok;
        }
    }
}

static void parse(cc *c, int argc, char **argv)
{
    static const struct option opts[] = {{"coordinator", required_argument, NULL, 'C'},
                                         {"routes", required_argument, NULL, 'R'},
                                         {"tenant", required_argument, NULL, 't'},
                                         {"workload", required_argument, NULL, 'w'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"process-base", required_argument, NULL, 'p'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"seed", required_argument, NULL, 'S'},
                                         {"concurrency", required_argument, NULL, 'c'},
                                         {"items", required_argument, NULL, 'i'},
                                         {"segments", required_argument, NULL, 'g'},
                                         {"credential", required_argument, NULL, 'K'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    c->concurrency = 64;
    c->tenant = "t1";
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'C':
            c->coordinator = optarg;
            break;
        case 'R':
            c->routes = optarg;
            break;
        case 't':
            c->tenant = optarg;
            break;
        case 'w':
            c->workload = optarg;
            break;
        case 's':
            c->seconds = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'p':
            c->process_base = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'o':
            c->out_path = optarg;
            break;
        case 'S':
            c->seed = strtoull(optarg, NULL, 10);
            break;
        case 'K':
            c->credential = optarg;
            break;
        case 'c':
            c->concurrency = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'i':
            split_list(c, optarg, false);
            break;
        case 'g':
            split_list(c, optarg, true);
            break;
        default:
            usage();
        }
    }
    if (!c->coordinator || !c->workload || !c->out_path || c->seconds == 0 || c->concurrency == 0 ||
        c->concurrency > CC_SLOTS_MAX) {
        usage();
    }
}

int main(int argc, char **argv)
{
    static cc c;
    parse(&c, argc, argv);
    c.out = fopen(c.out_path, "w");
    if (c.out == NULL) {
        fprintf(stderr, "chaos_client: %s: %s\n", c.out_path, strerror(errno));
        return 2;
    }
    setvbuf(c.out, NULL, _IOFBF, 1 << 16);
    c.segs_left = strcmp(c.workload, "finish") == 0 ? c.nsegs : 0;
    c.loop = uv_default_loop();
    esc_options o = {.coordinator = c.coordinator,
                     .routes = c.routes,
                     .tenant_id = c.tenant,
                     .credential = c.credential,
                     .deadline_ms = 3000,
                     .resend_ms = 300};
    int rc = esc_async_new(c.loop, &o, &c.a);
    if (rc != 0) {
        fprintf(stderr, "chaos_client: esc_async_new: %s\n", esc_strerror(rc));
        return 2;
    }
    c.slots = calloc(c.concurrency, sizeof *c.slots);
    if (c.slots == NULL) {
        return 2;
    }
    driver_config dc = {.lanes = c.concurrency,
                        .run_ms = (uint64_t)c.seconds * 1000,
                        .next = story_start,
                        .end = run_end,
                        .arg = &c};
    if (driver_new(c.loop, &dc, &c.d) != 0) {
        return 2;
    }
    c.t0_ms = wall_us() / 1000;
    uv_signal_init(c.loop, &c.sigterm);
    c.sigterm.data = &c;
    uv_signal_start(&c.sigterm, sigterm_cb, SIGTERM);
    for (uint32_t i = 0; i < c.concurrency; i++) {
        slot *s = &c.slots[i];
        s->c = &c;
        s->index = i;
        s->process = c.process_base + i;
    }
    driver_start(c.d);
    uv_run(c.loop, UV_RUN_DEFAULT);
    driver_free(c.d);
    fflush(c.out);
    fclose(c.out);
    size_t served = 0;
    for (size_t j = 0; j < c.nsegs; j++) {
        served += c.seg_served[j];
    }
    size_t sold_out = 0;
    for (size_t j = 0; j < c.nitems; j++) {
        sold_out += c.fin_done[j];
    }
    printf("CLIENT workload=%s tenant=%s ops=%" PRIu64 " ok=%" PRIu64 " fail=%" PRIu64
           " info=%" PRIu64 " segs_served=%zu/%zu items_sold_out=%zu/%zu resolves=%" PRIu64
           " seconds=%.1f\n",
           c.workload, c.tenant, c.ops, c.oks, c.fails, c.infos, served, c.nsegs, sold_out,
           c.nitems, c.st.resolves, (double)(wall_us() / 1000 - c.t0_ms) / 1000.0);
    free(c.slots);
    uv_loop_close(c.loop);
    return 0;
}
