/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_opts.h - `escrowctl top`'s command line: its filters, its pages,
 * how often and how many times it samples, and where the database is.
 *
 * top has its own parser (escrowctl.c hands it the command line when
 * ctl_top_is_cmd says so), because its options (filters, paging, refresh)
 * belong to no other command. It accepts the options every database command
 * takes (--dsn, --config, --json, --timeout-ms, --help) the same way, with
 * the same precedence: --dsn, else the --config file's dsn, else $ESCROW_DSN
 * (not consulted when --config is given).
 *
 * Pure: no I/O but the FILE the usage is written to; unit-tested
 * (tests/unit/test_ctl_top.c). A bad argument gets a sentence and exit 2.
 */
#ifndef CTL_TOP_OPTS_H
#define CTL_TOP_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_opts.h"
#include "ctl_top_filter.h"

/* Items on one page: --limit bounds. Each item brings up to
 * ESC_SEGMENTS_PER_ITEM_MAX segment rows; 500 items of 4 segments are a
 * 2,500-line snapshot. Plain output shows CTL_TOP_LIMIT_DEFAULT items per
 * page unless told; the live view as many as fit the terminal. */
#define CTL_TOP_LIMIT_DEFAULT 20
#define CTL_TOP_LIMIT_MAX 500
/* --page bound: 10^9 items are more than any catalog. */
#define CTL_TOP_PAGE_MAX 1000000000LL
/* --interval-ms: the time between two samples (rates are measured over it). */
#define CTL_TOP_INTERVAL_MS_DEFAULT 1000
#define CTL_TOP_INTERVAL_MS_MIN 100
#define CTL_TOP_INTERVAL_MS_MAX 60000
/* --iterations bound (with --batch; without it, until interrupted). */
#define CTL_TOP_ITERATIONS_MAX 1000000000LL
/* How long a node gets to answer the counters request (--timeout-ms
 * overrides): short, because a silent node delays every refresh. */
#define CTL_TOP_STATS_TIMEOUT_MS_DEFAULT 500

typedef struct ctl_top_args {
    bool help;
    bool json;
    bool once;            /* one snapshot, plain text (or JSON) */
    bool batch;           /* plain snapshots every interval, iterations of them */
    int64_t iterations;   /* with batch: 0 = until interrupted */
    int interval_ms;      /* CTL_TOP_INTERVAL_MS_MIN..MAX */
    int limit;            /* items per page; 0 = not given (the mode decides) */
    int64_t page;         /* 1-based: the first page shown */
    int stats_timeout_ms; /* CTL_TIMEOUT_MS_MIN..CTL_TIMEOUT_MS_MAX */
    ctl_top_filter filter;
    char dsn[CTL_DSN_LEN_MAX + 1]; /* from --dsn, else $ESCROW_DSN; "" = the --config file's */
    char config[CTL_CONFIG_PATH_LEN_MAX + 1]; /* "" = none */
} ctl_top_args;

/* How top runs, decided from the arguments and whether stdout is a
 * terminal: the live view, or plain snapshots (text, or JSON lines). */
typedef struct ctl_top_mode {
    bool live;
    int64_t snapshots; /* plain: how many; 0 = until interrupted */
    int limit;         /* items per page; 0 = as many as fit (live only) */
} ctl_top_mode;

/* True if argv[0..argc) (the program name skipped) names the top command:
 * its first word that is neither an option nor an option's value is
 * "top". */
bool ctl_top_is_cmd(int argc, char *const argv[]);

/* Parses argv[0..argc) (the program name skipped; "top" is among them).
 * env is borrowed (NULL = nothing set). On success writes *out and returns
 * 0; with --help only out->help is meaningful. On a usage error returns
 * ESC_EINVAL with a sentence in why and leaves *out untouched. */
int ctl_top_args_parse(int argc, char *const argv[], const ctl_env *env, ctl_top_args *out,
                       char why[CTL_WHY_MAX]);

/* The mode for a (parsed) a: live only on a terminal without --once,
 * --batch or --json. */
ctl_top_mode ctl_top_mode_of(const ctl_top_args *a, bool stdout_is_tty);

/* top's lines in `escrowctl --help` and `escrowctl top --help`. */
void ctl_top_usage(FILE *f);

#endif
