/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe.c - what esc_probe's sub-commands share (see probe.h).
 */
#include "probe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "esc_limits.h"

void probe_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "esc_probe: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(PROBE_EXIT_FAIL);
}

void *probe_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p == NULL) {
        probe_die("out of memory (%zu x %zu bytes)", n, size);
    }
    return p;
}

const char *probe_state_name(const esc_hold *h)
{
    return h != NULL ? esc_hold_state_name(h->state) : "none";
}

void probe_format_key(char *dst, size_t cap, const char *prefix, uint64_t i)
{
    snprintf(dst, cap, "%s-%" PRIu64, prefix, i);
}

void probe_print_outcome(FILE *f, int status, const esc_hold *h)
{
    if (h == NULL) {
        fprintf(f, "%s hold=0 state=none\n", esc_err_name(status));
        return;
    }
    fprintf(f,
            "%s hold=%" PRIu64 " seg=%" PRIu64 " state=%s qty=%" PRId64 " sold=%" PRId64
            " extended=%d expires_at_ms=%" PRId64 " buyer=%s item=%s\n",
            esc_err_name(status), h->hold_id, h->segment_id, probe_state_name(h), h->qty,
            h->qty_sold, h->extended ? 1 : 0, h->expires_at_ms, h->buyer_id, h->item_id);
}

FILE *probe_open_out(const probe_args *args)
{
    if (args->out_path == NULL) {
        return NULL;
    }
    FILE *f = fopen(args->out_path, "w");
    if (f == NULL) {
        probe_die("cannot open %s: %s", args->out_path, strerror(errno));
    }
    return f;
}

/* libescrow's warnings and errors (level <= 1) go to stderr, with the time:
 * when a test fails, the probe's stderr says what the client saw. */
static void probe_log(int level, const char *line, void *arg)
{
    (void)arg;
    if (level <= 1) {
        fprintf(stderr, "esc_probe: %" PRId64 " libescrow: %s\n", esc_wall_ms(), line);
    }
}

esc_options probe_options(const probe_args *args)
{
    esc_options o = {.endpoint = args->endpoint,
                     .coordinator = args->coordinator,
                     .routes = args->routes,
                     .tenant_id = args->tenant,
                     .deadline_ms = args->deadline_ms,
                     .log_fn = probe_log,
                     .credential = args->credential};
    return o;
}

size_t probe_cart_lines(char *spec, esc_cart_line *lines)
{
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(spec, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (colon == NULL || n == ESC_CART_LINES_MAX) {
            probe_die("a cart wants --item ITEM:QTY[,ITEM:QTY...]");
        }
        *colon = '\0';
        lines[n].item_id = tok;
        lines[n].qty = strtoll(colon + 1, NULL, 10);
        n++;
    }
    return n;
}
