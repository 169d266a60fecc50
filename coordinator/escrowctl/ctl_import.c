/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_import.c - see ctl_import.h.
 *
 * The file is read whole into an array of validated rows before the
 * database is touched: a catalog of 100,000 items is a few tens of MB.
 */
#include "ctl_import.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "ctl_admin.h"
#include "ctl_db.h"
#include "ctl_import_db.h"
#include "ctl_import_parse.h"
#include "ctl_json.h"
#include "escrow_errors.h"

/* Items created from which the import ANALYZEs the catalog's tables. */
#define CTL_IMPORT_ANALYZE_MIN 1000

typedef struct rows {
    ctl_import_row *row;
    size_t n, cap;
    size_t lines;   /* data lines read (not the header, not blank ones) */
    int64_t failed; /* lines refused */
} rows;

typedef struct tally {
    int64_t created, unchanged, failed;
    size_t rows;
    double seconds;
} tally;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int push(rows *r, const ctl_import_row *row)
{
    if (r->n == r->cap) {
        size_t cap = r->cap == 0 ? 1024 : 2 * r->cap;
        ctl_import_row *p = realloc(r->row, cap * sizeof *p);
        if (p == NULL) {
            fprintf(stderr, "escrowctl: out of memory reading the file\n");
            return ESC_ENOMEM;
        }
        r->row = p;
        r->cap = cap;
    }
    r->row[r->n++] = *row;
    return 0;
}

/* A refused line: counted, named (up to CTL_IMPORT_ERRORS_SHOWN). */
static void refuse(rows *r, const char *why)
{
    if (r->failed++ < CTL_IMPORT_ERRORS_SHOWN) {
        fprintf(stderr, "escrowctl: %s\n", why);
    }
}

/* One line (its newline stripped) of the file. */
static int take_line(rows *r, ctl_import_format fmt, ctl_import_header *h, bool *have_header,
                     char *line, long lineno)
{
    char why[CTL_WHY_MAX];
    ctl_import_row row;
    if (ctl_import_blank(line)) {
        return 0;
    }
    if (fmt == CTL_IMPORT_CSV && !*have_header) {
        if (ctl_import_csv_header(line, h, why) != 0) {
            refuse(r, why);
            return ESC_EINVAL; /* without its header no line can be read */
        }
        *have_header = true;
        return 0;
    }
    r->lines++;
    int rc = fmt == CTL_IMPORT_CSV ? ctl_import_csv_row(h, line, lineno, &row, why)
                                   : ctl_import_json_row(line, lineno, &row, why);
    if (rc != 0) {
        refuse(r, why);
        return 0;
    }
    return push(r, &row);
}

static int read_rows(FILE *in, ctl_import_format fmt, rows *r)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    ctl_import_header h;
    bool have_header = false;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n') {
            line[--len] = '\0';
        }
        if (strlen(line) != (size_t)len) {
            char why[CTL_WHY_MAX];
            snprintf(why, sizeof why, "line %ld: a NUL byte", lineno);
            r->lines++;
            refuse(r, why);
            continue;
        }
        rc = take_line(r, fmt, &h, &have_header, line, lineno);
    }
    free(line);
    if (rc == 0 && ferror(in)) {
        fprintf(stderr, "escrowctl: cannot read the file: %s\n", strerror(errno));
        return ESC_EIO;
    }
    if (rc == 0 && fmt == CTL_IMPORT_CSV && !have_header) {
        refuse(r, "the file is empty: a CSV file starts with its header line");
    }
    return rc;
}

static int by_key(const void *a, const void *b)
{
    const ctl_import_row *x = *(const ctl_import_row *const *)a;
    const ctl_import_row *y = *(const ctl_import_row *const *)b;
    int c = strcmp(x->tenant, y->tenant);
    c = c != 0 ? c : strcmp(x->item, y->item);
    return c != 0 ? c : (x->line > y->line) - (x->line < y->line);
}

/* An item named twice in the file is an error on its second line. */
static int check_repeats(rows *r)
{
    const ctl_import_row **idx = malloc((r->n + 1) * sizeof *idx);
    if (idx == NULL) {
        fprintf(stderr, "escrowctl: out of memory\n");
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < r->n; i++) {
        idx[i] = &r->row[i];
    }
    qsort(idx, r->n, sizeof *idx, by_key);
    for (size_t i = 1; i < r->n; i++) {
        if (strcmp(idx[i]->tenant, idx[i - 1]->tenant) == 0 &&
            strcmp(idx[i]->item, idx[i - 1]->item) == 0) {
            char why[CTL_WHY_MAX];
            snprintf(why, sizeof why, "line %ld: item %s/%s is already on line %ld", idx[i]->line,
                     idx[i]->tenant, idx[i]->item, idx[i - 1]->line);
            refuse(r, why);
        }
    }
    free(idx);
    return 0;
}

static void progress(size_t done, size_t n, double t0)
{
    fprintf(stderr, "\rimport: %zu of %zu rows (%d%%), %.1f s", done, n,
            n > 0 ? (int)(100 * done / n) : 100, now_s() - t0);
    fflush(stderr);
}

/* Steps 2 and 3 (ctl_import.h) on one connection. */
static int write_rows(PGconn *conn, const ctl_args *a, const rows *r, tally *t, double t0)
{
    int64_t conflicts = 0;
    int rc = ctl_import_db_load(conn, r->row, r->n, a->spec.region, &t->unchanged);
    rc = rc != 0 ? rc : ctl_import_db_conflicts(conn, 0, r->n, &conflicts);
    if (rc == 0 && conflicts > 0) {
        t->failed = conflicts;
        fprintf(stderr,
                "escrowctl: %" PRId64 " item%s conflict with what exists; nothing was "
                "changed\n",
                conflicts, conflicts == 1 ? "" : "s");
        rc = ESC_ECONFLICT;
    }
    bool tty = isatty(STDERR_FILENO) == 1;
    size_t lo = 0;
    for (; rc == 0 && lo < r->n; lo += (size_t)a->import_chunk) {
        size_t hi = lo + (size_t)a->import_chunk < r->n ? lo + (size_t)a->import_chunk : r->n;
        int64_t created = 0, unchanged = 0;
        rc = ctl_import_db_chunk(conn, lo, hi, a->spec.region, &created, &unchanged);
        if (rc == 0) {
            t->created += created;
            t->unchanged += unchanged;
        }
        if (tty) {
            progress(rc == 0 ? hi : lo, r->n, t0);
        }
    }
    if (tty && r->n > 0) {
        fputc('\n', stderr);
    }
    if (rc == 0 && t->created >= CTL_IMPORT_ANALYZE_MIN) {
        ctl_import_db_analyze(conn);
    }
    if (rc != 0 && lo > 0 && lo < r->n) {
        fprintf(stderr,
                "escrowctl: stopped at line %ld: the rows before it are committed; "
                "run the same import again to finish it\n",
                r->row[lo].line);
    }
    return rc;
}

static void summary(const ctl_args *a, const tally *t, FILE *out)
{
    if (!a->json) {
        fprintf(out,
                "import: %zu rows: %" PRId64 " created, %" PRId64 " unchanged, %" PRId64
                " failed in %.1f s\n",
                t->rows, t->created, t->unchanged, t->failed, t->seconds);
        return;
    }
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_i64(&j, "rows", (int64_t)t->rows);
    ctl_json_i64(&j, "created", t->created);
    ctl_json_i64(&j, "unchanged", t->unchanged);
    ctl_json_i64(&j, "failed", t->failed);
    ctl_json_f64(&j, "seconds", t->seconds, 3);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_import(PGconn *conn, const ctl_args *a, FILE *out)
{
    double t0 = now_s();
    bool std_in = strcmp(a->import_path, "-") == 0;
    FILE *in = std_in ? stdin : fopen(a->import_path, "r");
    if (in == NULL) {
        fprintf(stderr, "escrowctl: cannot open %s: %s\n", a->import_path, strerror(errno));
        return ESC_EINVAL;
    }
    rows r = {NULL, 0, 0, 0, 0};
    tally t = {0, 0, 0, 0, 0};
    int rc = read_rows(in, a->import_format, &r);
    if (!std_in) {
        fclose(in);
    }
    rc = rc != 0 ? rc : check_repeats(&r);
    if (rc == 0 && r.failed > 0) {
        fprintf(stderr, "escrowctl: %" PRId64 " bad line%s; nothing was changed\n", r.failed,
                r.failed == 1 ? "" : "s");
        rc = ESC_EINVAL;
    }
    t.rows = r.lines;
    t.failed = r.failed;
    if (rc == 0) {
        rc = write_rows(conn, a, &r, &t, t0);
    }
    t.seconds = now_s() - t0;
    free(r.row);
    if (rc == ESC_EUNAVAILABLE) {
        return rc;
    }
    summary(a, &t, out);
    if (rc == 0 && t.created > 0) {
        ctl_admin_reload(a); /* best effort: the coordinator also polls the catalog */
    }
    return rc;
}
