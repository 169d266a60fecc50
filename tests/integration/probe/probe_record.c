/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_record.c - esc_probe's recordings (see probe_record.h): what each
 * buyer's story does and what is written down; the stories run in
 * probe_inflight.c's pool.
 */
#include "probe_record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "probe.h"
#include "probe_inflight.h"

/* ---- record: a flash sale that writes down every acknowledged outcome --- */

/* What buyer i does with its hold: deterministic, so SQL can recompute it.
 * 0..5 confirm, 6..7 release, 8..9 abandon (the hold expires). */
static int record_decision(uint64_t i)
{
    uint64_t d = i % 10;
    return d < 6 ? 0 : d < 8 ? 1 : 2;
}

typedef struct rec_run {
    probe_pool pool;
    FILE *out;         /* owned */
    uint64_t acked[3]; /* R, C, X lines */
    int64_t stop_at_us;
} rec_run;

static void rec_line(rec_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_line(rec_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->out, fmt, ap);
    va_end(ap);
    if (fflush(r->out) != 0) {
        probe_die("cannot write the record: %s", strerror(errno));
    }
}

static bool rec_more(const probe_pool *pool, void *arg)
{
    const rec_run *r = arg;
    return pool->next < pool->args->n && (r->stop_at_us == 0 || esc_mono_us() < r->stop_at_us);
}

static void rec_reserved(probe_slot *s, const esc_hold *hold, void *arg)
{
    rec_run *r = arg;
    rec_line(r, "R %s %" PRIu64 " %s %" PRId64 "\n", s->key, hold->hold_id, probe_state_name(hold),
             hold->qty);
    r->acked[0]++;
    int d = record_decision(s->index);
    if (d == 0) {
        probe_slot_confirm(s);
    } else if (d == 1) {
        probe_slot_release(s);
    } else {
        probe_slot_next(s);
    }
}

static void rec_ended(probe_slot *s, int status, const esc_hold *hold, void *arg)
{
    rec_run *r = arg;
    if (status == 0 && hold != NULL) {
        int conf = record_decision(s->index) == 0;
        rec_line(r, "%s %s %" PRIu64 " %s %" PRId64 "\n", conf ? "C" : "X", s->key, hold->hold_id,
                 probe_state_name(hold), hold->qty_sold);
        r->acked[conf ? 1 : 2]++;
    }
    probe_slot_next(s);
}

int probe_record(const probe_args *args)
{
    if (args->out_path == NULL) {
        probe_die("record needs --out FILE");
    }
    rec_run *r = probe_xcalloc(1, sizeof *r);
    r->out = probe_open_out(args);
    r->stop_at_us = args->seconds ? esc_mono_us() + (int64_t)args->seconds * 1000000 : 0;
    probe_story story = {.more = rec_more, .reserved = rec_reserved, .ended = rec_ended, .arg = r};
    probe_pool_open(&r->pool, args, &story);
    probe_pool_run(&r->pool);
    fclose(r->out);
    printf("SENT %" PRIu64 "\n", r->pool.next);
    printf("ACKED reserve=%" PRIu64 " confirm=%" PRIu64 " release=%" PRIu64 "\n", r->acked[0],
           r->acked[1], r->acked[2]);
    probe_print_status_counts(r->pool.by_status);
    free(r);
    return 0;
}

/* ---- verify: re-reserve recorded keys; each must get its recorded hold -- */

typedef struct ver_entry {
    char key[ESC_ID_MAX + 1];
    uint64_t hold_id;
    char final_state[16]; /* from a C or X line; "" if only R */
    probe_outcome o;
} ver_entry;

/* Appends an R line's key and hold to v (grown as needed). */
static ver_entry *ver_add(ver_entry *v, size_t *n, size_t *cap, const char *key, uint64_t hold)
{
    if (*n == *cap) {
        *cap *= 2;
        v = realloc(v, *cap * sizeof *v);
        if (v == NULL) {
            probe_die("out of memory");
        }
    }
    memset(&v[*n], 0, sizeof v[*n]);
    snprintf(v[*n].key, sizeof v[*n].key, "%s", key);
    v[(*n)++].hold_id = hold;
    return v;
}

/* Reads "R key hold ..." lines and the C/X lines that follow them. */
static ver_entry *ver_load(const char *path, size_t *count)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        probe_die("cannot open %s: %s", path, strerror(errno));
    }
    size_t cap = 1024, n = 0;
    ver_entry *v = probe_xcalloc(cap, sizeof *v);
    char line[PROBE_LINE_MAX], kind[4], key[ESC_ID_MAX + 1], state[16];
    uint64_t hold;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "%3s %128s %" SCNu64 " %15s", kind, key, &hold, state) != 4) {
            probe_die("bad record line: %s", line);
        }
        if (kind[0] == 'R') {
            v = ver_add(v, &n, &cap, key, hold);
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
    const probe_outcome *o = &e->o;
    if (o->status != 0 || !o->has_hold || o->hold.hold_id != e->hold_id) {
        fprintf(stderr,
                "esc_probe: key %s: recorded hold %" PRIu64 ", retry got %s hold %" PRIu64 "\n",
                e->key, e->hold_id, esc_err_name(o->status), o->has_hold ? o->hold.hold_id : 0);
        return 0;
    }
    if (e->final_state[0] != '\0' && strcmp(e->final_state, probe_state_name(&o->hold)) != 0) {
        fprintf(stderr, "esc_probe: key %s hold %" PRIu64 ": acknowledged %s, now %s\n", e->key,
                e->hold_id, e->final_state, probe_state_name(&o->hold));
        return 0;
    }
    return 1;
}

int probe_verify(const probe_args *args)
{
    if (args->in_path == NULL) {
        probe_die("verify needs --in FILE");
    }
    size_t n = 0;
    ver_entry *v = ver_load(args->in_path, &n);
    uint32_t every = args->every ? args->every : 1;
    probe_async p;
    probe_async_open(&p, args, false);
    size_t sent = 0;
    for (size_t i = 0; i < n; i += every) {
        probe_submit_reserve(&p, args->item, v[i].key, v[i].key, 1, args->ttl_ms, args->deadline_ms,
                             &v[i].o);
        sent++;
    }
    probe_async_wait(&p);
    probe_async_close(&p);
    size_t good = 0;
    for (size_t i = 0; i < n; i += every) {
        good += (size_t)ver_check(&v[i]);
    }
    printf("VERIFIED %zu of %zu (recorded holds %zu)\n", good, sent, n);
    free(v);
    if (good != sent || sent == 0) {
        probe_die("verify: %zu of %zu retried keys did not get their acknowledged hold",
                  sent - good, sent);
    }
    return 0;
}

/* ---- fence-load: keep a node busy and write down every OK it gives ------ */
/* One line per OK: "OK RECEIVED_MS reserve|confirm HOLD KEY STATE SENT_MS"
 * (wall clock ms: when the answer came, when the call was made). */

typedef struct fl_run {
    probe_pool pool;
    FILE *out;       /* owned */
    uv_timer_t tick; /* embedded: checks the stop file */
    bool stopping;
    uint64_t ok[2];
    int64_t stop_at_us;
} fl_run;

static bool fl_more(const probe_pool *pool, void *arg)
{
    (void)pool;
    return !((const fl_run *)arg)->stopping;
}

static void fl_reserved(probe_slot *s, const esc_hold *hold, void *arg)
{
    fl_run *r = arg;
    fprintf(r->out, "OK %" PRId64 " reserve %" PRIu64 " %s %s %" PRId64 "\n", esc_wall_ms(),
            hold->hold_id, s->key, probe_state_name(hold), s->sent_ms);
    fflush(r->out);
    r->ok[0]++;
    probe_slot_confirm(s);
}

static void fl_ended(probe_slot *s, int status, const esc_hold *hold, void *arg)
{
    fl_run *r = arg;
    probe_pool_count(&r->pool, status);
    if (status == 0) {
        fprintf(r->out, "OK %" PRId64 " confirm %" PRIu64 " %s %s %" PRId64 "\n", esc_wall_ms(),
                s->hold_id, s->key, probe_state_name(hold), s->sent_ms);
        fflush(r->out);
        r->ok[1]++;
    }
    probe_slot_next(s);
}

static void fl_tick(uv_timer_t *t)
{
    fl_run *r = t->data;
    const probe_args *args = r->pool.args;
    bool stop = (args->stop_file != NULL && access(args->stop_file, F_OK) == 0) ||
                (r->stop_at_us != 0 && esc_mono_us() >= r->stop_at_us);
    if (stop) {
        r->stopping = true;
        uv_close((uv_handle_t *)t, NULL);
    }
}

int probe_fence_load(const probe_args *args)
{
    if (args->out_path == NULL || (args->stop_file == NULL && args->seconds == 0)) {
        probe_die("fence-load needs --out FILE and --stop-file FILE or --seconds S");
    }
    fl_run *r = probe_xcalloc(1, sizeof *r);
    r->out = probe_open_out(args);
    r->stop_at_us = args->seconds ? esc_mono_us() + (int64_t)args->seconds * 1000000 : 0;
    probe_story story = {.more = fl_more, .reserved = fl_reserved, .ended = fl_ended, .arg = r};
    probe_pool_open(&r->pool, args, &story);
    (void)uv_timer_init(&r->pool.p.loop, &r->tick);
    r->tick.data = r;
    (void)uv_timer_start(&r->tick, fl_tick, 20, 20);
    probe_pool_run(&r->pool);
    fclose(r->out);
    printf("SENT %" PRIu64 "\n", r->pool.next);
    printf("OKS reserve=%" PRIu64 " confirm=%" PRIu64 "\n", r->ok[0], r->ok[1]);
    probe_print_status_counts(r->pool.by_status);
    free(r);
    return 0;
}
