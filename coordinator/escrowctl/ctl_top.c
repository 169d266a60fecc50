/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top.c - see ctl_top.h.
 *
 * Both loops keep two snapshots: the one on screen (also the base of the
 * next rates) and the one being read. The cadence is kept by a deadline
 * that advances by the interval (never behind the present), so a slow
 * sample does not stretch the next interval.
 */
#include "ctl_top.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctl_db.h"
#include "ctl_exit.h"
#include "ctl_top_db.h"
#include "ctl_top_layout.h"
#include "ctl_top_opts.h"
#include "ctl_top_pager.h"
#include "ctl_top_print.h"
#include "ctl_top_snap.h"
#include "ctl_top_stats.h"
#include "ctl_top_term.h"
#include "escrow_errors.h"
#include "region_cfg.h"

/* Keys read at once from the terminal. */
#define KEYS_MAX 64

typedef struct top_run {
    const ctl_top_args *a; /* borrowed */
    PGconn *conn;          /* borrowed */
    ctl_top_snap shown;    /* on screen; the base of the next rates */
    ctl_top_snap next;     /* being read */
    int64_t due_us;        /* the next sample's deadline */
    char filter[256];      /* the filter in words */
} top_run;

/* Reads one sample at offset into r->next, rates against r->shown, then
 * makes it the shown one. */
static int sample(top_run *r, int64_t offset, int limit)
{
    int rc = ctl_top_db_sample(r->conn, &r->a->filter, offset, limit, &r->next);
    if (rc == 0) {
        ctl_top_stats_collect(&r->next, r->a->stats_timeout_ms);
        rc = ctl_top_rates(r->shown.nsegs > 0 ? &r->shown : NULL, &r->next);
    }
    ctl_top_snap_free(&r->shown);
    r->shown = r->next;
    memset(&r->next, 0, sizeof r->next);
    return rc;
}

/* The next deadline: one interval on, never in the past. */
static void advance(top_run *r)
{
    int64_t now = esc_mono_us();
    r->due_us += (int64_t)r->a->interval_ms * 1000;
    if (r->due_us < now) {
        r->due_us = now;
    }
}

static void clock_text(int64_t at_ms, char *buf, size_t cap)
{
    time_t t = (time_t)(at_ms / 1000);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(buf, cap, "%H:%M:%S", &tm) == 0) {
        snprintf(buf, cap, "-");
    }
}

static ctl_top_view view_of(const top_run *r, char *clock, size_t cap)
{
    clock_text(r->shown.at_ms, clock, cap);
    ctl_top_view v = {.clock = clock, .filter = r->filter, .interval_ms = r->a->interval_ms};
    return v;
}

static int run_plain(top_run *r, const ctl_top_mode *m, FILE *out)
{
    int64_t offset = (r->a->page - 1) * (int64_t)m->limit;
    int rc = sample(r, offset, m->limit);
    r->due_us = esc_mono_us();
    for (int64_t k = 0; rc == 0 && (m->snapshots == 0 || k < m->snapshots); k++) {
        advance(r);
        size_t nkeys = 0;
        if (ctl_top_wait(-1, r->due_us, NULL, 0, &nkeys) == CTL_TOP_EV_STOP) {
            break;
        }
        rc = sample(r, offset, m->limit);
        char clock[32];
        ctl_top_view v = view_of(r, clock, sizeof clock);
        if (rc == 0 && r->a->json) {
            rc = ctl_top_print_json(out, &r->shown, r->a->interval_ms);
        } else if (rc == 0) {
            if (k > 0) {
                fputc('\n', out);
            }
            rc = ctl_top_print_text(out, &r->shown, &v);
        }
    }
    return rc;
}

/* Lays the shown snapshot out for the terminal and draws it. */
static int draw(top_run *r, ctl_top_lines *lines, FILE *out)
{
    int width = 0, height = 0;
    ctl_top_term_size(&width, &height);
    if ((size_t)height > lines->cap) {
        ctl_top_line *l = realloc(lines->line, (size_t)height * sizeof *l);
        if (l == NULL) {
            return ESC_ENOMEM;
        }
        lines->line = l;
        lines->cap = (size_t)height;
    }
    char clock[32];
    ctl_top_view v = view_of(r, clock, sizeof clock);
    v.width = width - 1; /* the last column would wrap on some terminals */
    v.height = height;
    v.live = true;
    ctl_top_layout(&r->shown, &v, lines);
    return ctl_top_term_draw(out, lines);
}

/* What the keys ask for; returns false to quit. *resample when the page
 * moved. */
static bool on_keys(const char *keys, size_t n, ctl_top_pager *pg, const ctl_top_lines *lines,
                    int64_t matched, bool *resample)
{
    size_t used = 0;
    for (size_t i = 0; i < n; i += used) {
        switch (ctl_top_key_decode(keys + i, n - i, &used)) {
        case CTL_TOP_KEY_QUIT:
            return false;
        case CTL_TOP_KEY_NEXT:
            *resample = ctl_top_pager_next(pg, lines->items_shown, matched) || *resample;
            break;
        case CTL_TOP_KEY_PREV:
            *resample = ctl_top_pager_prev(pg, lines->items_shown) || *resample;
            break;
        case CTL_TOP_KEY_FIRST:
            *resample = pg->offset != 0 || *resample;
            ctl_top_pager_first(pg);
            break;
        default:
            break;
        }
    }
    return true;
}

/* Items to read for the live view: as many as could fit (each takes a row
 * at least), or --limit. */
static int live_limit(const ctl_top_mode *m)
{
    int width = 0, height = 0;
    ctl_top_term_size(&width, &height);
    int limit = m->limit != 0 ? m->limit : height;
    return limit < 1 ? 1 : limit > CTL_TOP_LIMIT_MAX ? CTL_TOP_LIMIT_MAX : limit;
}

static int live_loop(top_run *r, const ctl_top_mode *m, int keys_fd, FILE *out)
{
    ctl_top_pager pg;
    ctl_top_pager_init(&pg, (r->a->page - 1) *
                                (int64_t)(m->limit != 0 ? m->limit : CTL_TOP_LIMIT_DEFAULT));
    ctl_top_lines lines = {0};
    int rc = 0;
    bool resample = true, running = true;
    r->due_us = esc_mono_us();
    while (rc == 0 && running) {
        if (resample) {
            rc = sample(r, pg.offset, live_limit(m));
            if (rc == 0 && ctl_top_pager_clamp(&pg, r->shown.matched)) {
                continue; /* the page emptied: read the first one now */
            }
            resample = false;
        }
        rc = rc != 0 ? rc : draw(r, &lines, out);
        char keys[KEYS_MAX];
        size_t nkeys = 0;
        int ev = rc == 0 ? ctl_top_wait(keys_fd, r->due_us, keys, sizeof keys, &nkeys) : 0;
        if (ev == CTL_TOP_EV_STOP) {
            running = false;
        } else if (ev == CTL_TOP_EV_TIMEOUT) {
            advance(r);
            resample = true;
        } else if (ev == CTL_TOP_EV_KEYS) {
            running = on_keys(keys, nkeys, &pg, &lines, r->shown.matched, &resample);
        }
    }
    free(lines.line);
    return rc;
}

static int run_live(top_run *r, const ctl_top_mode *m, FILE *out)
{
    int keys_fd = -1;
    if (ctl_top_term_open(&keys_fd) != 0) {
        fprintf(stderr, "escrowctl: top: stdout is not a terminal\n");
        return ESC_EIO;
    }
    int rc = live_loop(r, m, keys_fd, out);
    ctl_top_term_close();
    if (rc != 0) {
        fprintf(stderr, "escrowctl: top stopped: %s\n", esc_strerror(rc));
    }
    return rc;
}

/* The database: --dsn, else the --config file's, else $ESCROW_DSN (the
 * parser already chose between the first and the last). */
static int resolve_dsn(ctl_top_args *a)
{
    if (a->dsn[0] != '\0' || a->config[0] == '\0') {
        return 0;
    }
    static region_cfg region; /* large: not on the stack */
    char err[REGION_ERR_LEN];
    if (region_cfg_load(a->config, &region, err, sizeof err) != 0) {
        fprintf(stderr, "escrowctl: %s\n", err);
        return ESC_EINVAL;
    }
    if (strlen(region.dsn) > CTL_DSN_LEN_MAX) {
        fprintf(stderr, "escrowctl: %s: the dsn is longer than %d bytes\n", a->config,
                CTL_DSN_LEN_MAX);
        return ESC_EINVAL;
    }
    memcpy(a->dsn, region.dsn, strlen(region.dsn) + 1);
    return 0;
}

/* The title names the database's region first ("region=eu tenant=..."),
 * when it has one (region_self, written by escrowctl region create). */
static void name_region(top_run *r)
{
    char region[64];
    if (ctl_db_region_self(r->conn, region, sizeof region) != 0 || region[0] == '\0') {
        return;
    }
    char words[sizeof r->filter];
    snprintf(words, sizeof words, "%s", r->filter);
    int n = snprintf(r->filter, sizeof r->filter, "region=%s%s%s", region,
                     words[0] != '\0' ? " " : "", words);
    if (n < 0 || (size_t)n >= sizeof r->filter) {
        r->filter[sizeof r->filter - 1] = '\0'; /* cut: a title, not data */
    }
}

int ctl_top_main(int argc, char *const argv[], const ctl_env *env, FILE *out)
{
    static ctl_top_args a; /* large: not on the stack */
    char why[CTL_WHY_MAX];
    if (ctl_top_args_parse(argc, argv, env, &a, why) != 0) {
        fprintf(stderr, "escrowctl: %s\nrun 'escrowctl top --help' for usage\n", why);
        return CTL_EXIT_USAGE;
    }
    if (a.help) {
        fputs("usage: escrowctl [--config FILE] [--dsn DSN] [--credential FILE] top [TENANT] "
              "[OPTIONS]\n\n",
              out);
        ctl_top_usage(out);
        fputs("\nexit: 0 quit (q, Ctrl-C) or all snapshots printed; 1 a database error;\n"
              "      2 usage or database connection error\n",
              out);
        return CTL_EXIT_OK;
    }
    top_run r = {.a = &a};
    ctl_top_filter_describe(&a.filter, r.filter, sizeof r.filter);
    ctl_top_mode m = ctl_top_mode_of(&a, isatty(fileno(out)) == 1);
    int rc = resolve_dsn(&a);
    rc = rc != 0 ? rc : ctl_top_signals_install(m.live);
    rc = rc != 0 ? rc : ctl_top_db_open(a.dsn, &r.conn);
    if (rc == 0) {
        name_region(&r);
        rc = m.live ? run_live(&r, &m, out) : run_plain(&r, &m, out);
        ctl_db_close(r.conn);
    }
    ctl_top_snap_free(&r.shown);
    ctl_top_snap_free(&r.next);
    if (rc == ESC_EIO && !m.live) {
        fprintf(stderr, "escrowctl: cannot write the output\n");
    }
    return ctl_exit_code(CTL_CMD_STATUS, rc, false, false);
}
