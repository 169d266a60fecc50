/*
 * ctl_opts.h - escrowctl's command line: parsing, validation, usage text,
 * exit codes, and the segment split arithmetic.
 *
 * Pure: no libpq, no I/O except the FILE the usage is written to, so every
 * branch is unit-tested (tests/unit/test_ctl.c). Everything that comes from
 * argv or the environment is validated here against common/esc_limits.h before a
 * single statement reaches PostgreSQL; a bad argument changes nothing and
 * exits 2.
 */
#ifndef CTL_OPTS_H
#define CTL_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "esc_limits.h"

/* Nodes and regions: the schema allows 1..64 printable ASCII bytes. */
#define CTL_NODE_LEN_MAX 64
#define CTL_REGION_LEN_MAX 64
/* A conninfo string or URI; longer ones are refused, not truncated. */
#define CTL_DSN_LEN_MAX 4096
/* Positional words on one command line ("item create TENANT ITEM" is 4). */
#define CTL_POSITIONAL_MAX 8
/* Rows printed by the list commands (holds, events): --limit bounds. */
#define CTL_LIST_ROWS_DEFAULT 100
#define CTL_LIST_ROWS_MAX 10000
/* Items shown by status; each costs up to ESC_SEGMENTS_PER_ITEM_MAX rows. */
#define CTL_STATUS_ITEMS_MAX 1000
/* Violations printed per kind by check (all are counted). */
#define CTL_CHECK_PRINT_MAX 1000
/* Room for one error sentence. */
#define CTL_WHY_MAX 256

/* Exit codes: 0 fine, 1 failed or an invariant is violated, 2 usage or
 * connection error (nothing was done). */
enum { CTL_EXIT_OK = 0, CTL_EXIT_FAIL = 1, CTL_EXIT_USAGE = 2 };

typedef enum ctl_cmd {
    CTL_CMD_NONE = 0,
    CTL_CMD_MIGRATE,
    CTL_CMD_ITEM_CREATE,
    CTL_CMD_STATUS,
    CTL_CMD_HOLDS,
    CTL_CMD_CHECK,
    CTL_CMD_EVENTS,
} ctl_cmd;

typedef struct ctl_item_spec {
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    char node[CTL_NODE_LEN_MAX + 1];
    char region[CTL_REGION_LEN_MAX + 1];
    int64_t total;     /* 0..ESC_TOTAL_MAX */
    int segments;      /* 1..ESC_SEGMENTS_PER_ITEM_MAX */
    int max_per_order; /* 0 = no limit, else 1..ESC_QTY_MAX */
    int max_per_buyer; /* 0 = no limit, else 1..ESC_TOTAL_MAX */
    int hold_ttl_ms;   /* ESC_TTL_MS_MIN..ESC_TTL_MS_MAX */
} ctl_item_spec;

typedef struct ctl_args {
    ctl_cmd cmd;
    bool help;
    bool json;
    char dsn[CTL_DSN_LEN_MAX + 1]; /* from --dsn, else ESCROW_DSN */
    /* status, holds, events: filters; "" means "all" */
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    char buyer[ESC_BUYER_LEN_MAX + 1];
    int64_t hold_id;    /* holds --hold; 0 = not given */
    int64_t after;      /* events --after; 0 = from the start */
    int limit;          /* holds, events: 1..CTL_LIST_ROWS_MAX */
    ctl_item_spec spec; /* item create */
} ctl_args;

/* Parses argv[0..argc) (without the program name). env_dsn is the value of
 * ESCROW_DSN or NULL (borrowed). On success writes *out and returns 0; with
 * --help, out->help is set and nothing else is required. On a usage error
 * returns ESC_EINVAL with a sentence in why and leaves *out untouched. */
int ctl_args_parse(int argc, char *const argv[], const char *env_dsn, ctl_args *out,
                   char why[CTL_WHY_MAX]);

/* Strict decimal integer in [min, max]: no sign games, no spaces, no
 * trailing bytes. Returns 0 and *out, or ESC_EINVAL. */
int ctl_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Units given to segment seg_no when total is split over segments: an even
 * split, the remainder spread one unit each over the first segments. The
 * splits of seg_no 0..segments-1 add up to total. */
int64_t ctl_split_available(int64_t total, int segments, int seg_no);

/* Exit code for a command's result: rc is 0 or ESC_E*; violated is check's
 * verdict. Connection and usage errors are 2; check cannot judge -> 2. */
int ctl_exit_code(ctl_cmd cmd, int rc, bool violated);

/* The synopsis, for --help and usage errors. */
void ctl_usage(FILE *f);

#endif
