/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeline.c - escrow-bench --timeline FILE: every answer that arrived in
 * the timed window, kept in memory during the run (no I/O on the loop) and
 * written once at the end as CSV for tests/support/latency_svg.py, which
 * draws p50/p99 per 100 ms window over time so stalls show. See bench.h.
 *
 * The file:
 *   # escrow-bench timeline t0_wall_us=<unix us when the window opened>
 *   t_ms,latency_us,kind
 *   <ms since the window opened, at the answer>,<latency>,<ok|no|err>
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bench_timeline_add(bench_timeline *tl, const bench_meter *m, int kind, int64_t start_us,
                        int64_t end_us)
{
    if (end_us < m->t0_us || end_us > m->t1_us) {
        return;
    }
    if (tl->n == tl->cap) {
        size_t cap = tl->cap ? tl->cap * 2 : 65536;
        if (cap > BENCH_TIMELINE_MAX) {
            tl->dropped++;
            return;
        }
        bench_timeline_rec *rec = realloc(tl->rec, cap * sizeof *rec);
        if (rec == NULL) {
            tl->dropped++;
            return;
        }
        tl->rec = rec;
        tl->cap = cap;
    }
    bench_timeline_rec *r = &tl->rec[tl->n++];
    r->t_us = end_us - m->t0_us;
    r->lat_us = end_us > start_us ? end_us - start_us : 0;
    r->kind = kind;
}

int bench_timeline_write(const bench_timeline *tl, const char *path, int64_t t0_wall_us)
{
    static const char *const KIND[] = {"ok", "no", "err"};
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "escrow-bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "# escrow-bench timeline t0_wall_us=%" PRId64 " dropped=%" PRIu64 "\n", t0_wall_us,
            tl->dropped);
    fputs("t_ms,latency_us,kind\n", f);
    for (size_t i = 0; i < tl->n; i++) {
        const bench_timeline_rec *r = &tl->rec[i];
        fprintf(f, "%.3f,%" PRId64 ",%s\n", (double)r->t_us / 1000.0, r->lat_us,
                KIND[r->kind >= 0 && r->kind <= 2 ? r->kind : 2]);
    }
    int rc = ferror(f) ? -1 : 0;
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "escrow-bench: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

void bench_timeline_free(bench_timeline *tl)
{
    free(tl->rec);
    memset(tl, 0, sizeof *tl);
}
