/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_import_parse.h - the lines of `escrowctl item import`: CSV with a
 * header, or JSON lines, into validated item rows.
 *
 * The columns (CSV header names, JSON keys) are the values `item create`
 * takes: tenant, item, total (required); segments, max_per_order,
 * max_per_buyer, hold_ttl_ms (optional; an empty CSV cell or a missing key
 * takes item create's default). They are validated with item create's
 * bounds and its sentences, prefixed by the line number: "line 7: total must
 * be an integer in 0..1000000000". Unknown or repeated columns are refused.
 *
 * CSV: comma-separated, a field may be quoted ("a,b", "" for a quote inside);
 * a trailing CR is dropped; blank lines are skipped. JSON lines: one object
 * per line, numbers as JSON integers; blank lines are skipped.
 *
 * Pure: no I/O; unit-tested (tests/unit/test_ctl_import.c).
 */
#ifndef CTL_IMPORT_PARSE_H
#define CTL_IMPORT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"
#include "ctl_opts.h"

typedef enum ctl_import_format {
    CTL_IMPORT_CSV = 0,
    CTL_IMPORT_JSONL,
} ctl_import_format;

/* One item of the file, validated. */
typedef struct ctl_import_row {
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    int64_t total;     /* 0..ESC_TOTAL_MAX */
    int segments;      /* 1..ESC_SEGMENTS_PER_ITEM_MAX; default 1 */
    int max_per_order; /* 0 = no limit, else 1..ESC_QTY_MAX */
    int max_per_buyer; /* 0 = no limit, else 1..ESC_TOTAL_MAX */
    int hold_ttl_ms;   /* ESC_TTL_MS_MIN..ESC_TTL_MS_MAX; default ESC_TTL_MS_DEFAULT */
    long line;         /* 1-based line number in the file */
} ctl_import_row;

/* The columns, in the order a CSV header names them. */
#define CTL_IMPORT_COLS_MAX 16
typedef struct ctl_import_header {
    int col[CTL_IMPORT_COLS_MAX]; /* which field each CSV column is */
    int ncols;
} ctl_import_header;

/* The format named by --format ("csv", "jsonl"), else by the file name's
 * extension (.csv; .jsonl, .ndjson, .json). Returns 0, or ESC_EINVAL with a
 * sentence in why (no --format and no known extension, or "-"). */
int ctl_import_format_of(const char *format, const char *path, ctl_import_format *out,
                         char why[CTL_WHY_MAX]);

/* The CSV header line (without its newline). Returns 0 and *h, or
 * ESC_EINVAL with a sentence in why (an unknown, repeated or missing
 * required column). */
int ctl_import_csv_header(const char *line, ctl_import_header *h, char why[CTL_WHY_MAX]);

/* True if line (without its newline) holds nothing but spaces or a CR. */
bool ctl_import_blank(const char *line);

/* One CSV data line number lineno. Returns 0 and *row, or ESC_EINVAL with
 * "line N: ..." in why. */
int ctl_import_csv_row(const ctl_import_header *h, const char *line, long lineno,
                       ctl_import_row *row, char why[CTL_WHY_MAX]);

/* One JSON line number lineno. Returns 0 and *row, or ESC_EINVAL with
 * "line N: ..." in why. */
int ctl_import_json_row(const char *line, long lineno, ctl_import_row *row, char why[CTL_WHY_MAX]);

#endif
