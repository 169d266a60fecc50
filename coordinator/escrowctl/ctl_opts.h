/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_opts.h - escrowctl's command line: parsing and validation into
 * ctl_args. Its synopsis is ctl_usage.h, its exit codes ctl_exit.h, its
 * numbers ctl_num.h.
 *
 * Pure: no libpq, no I/O except the FILE the usage is written to, so every
 * branch is unit-tested (tests/unit/test_ctl.c). Everything that comes from
 * argv or the environment is validated here against common/esc_limits.h before a
 * single statement reaches PostgreSQL or a single frame reaches the
 * coordinator; a bad argument changes nothing and exits 2.
 *
 * Two kinds of commands: those that read or write the database (--dsn /
 * ESCROW_DSN) and those the coordinator carries out (--coordinator /
 * ESCROW_COORDINATOR: item restock/reduce/pause/resume/retire/split/collapse/
 * rebalance, drain, undrain), which need no database at all.
 */
#ifndef CTL_OPTS_H
#define CTL_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_quota.h"
#include "esc_limits.h"
#include "region_cfg.h"

/* Nodes and regions: the schema allows 1..64 printable ASCII bytes. */
#define CTL_NODE_LEN_MAX 64
#define CTL_REGION_LEN_MAX 64
/* A conninfo string or URI; longer ones are refused, not truncated. */
#define CTL_DSN_LEN_MAX 4096
/* Positional words on one command line ("item create TENANT ITEM" is 4). */
#define CTL_POSITIONAL_MAX 8
/* Event feed consumer names (table feed_consumers): 1..64 printable ASCII. */
#define CTL_CONSUMER_LEN_MAX 64
/* Rows printed by the list commands (holds, events): --limit bounds. */
#define CTL_LIST_ROWS_DEFAULT 100
#define CTL_LIST_ROWS_MAX 10000
/* Items shown by status; each costs up to ESC_SEGMENTS_PER_ITEM_MAX rows. */
#define CTL_STATUS_ITEMS_MAX 1000
/* status: items a page (--limit; default CTL_STATUS_ITEMS_DEFAULT). */
#define CTL_STATUS_ITEMS_DEFAULT 50
/* item import: rows per transaction (--chunk). */
#define CTL_IMPORT_CHUNK_DEFAULT 1000
#define CTL_IMPORT_CHUNK_MAX 100000
#define CTL_IMPORT_PATH_LEN_MAX 4095
/* Violations printed per kind by check (all are counted). */
#define CTL_CHECK_PRINT_MAX 1000
/* --config FILE: region files (region_cfg.h), in command-line order; the
 * first is this region (its dsn and coordinator are the defaults), the
 * others its peers (for the commands over several regions). */
#define CTL_CONFIG_MAX (REGION_PEERS_MAX + 1)
#define CTL_CONFIG_PATH_LEN_MAX 1023
/* Room for one error sentence. */
#define CTL_WHY_MAX 256

/* Writes the sentence into why and returns ESC_EINVAL: every refusal of a
 * parser of escrowctl's input (options, import files) ends this way. */
int ctl_fail(char why[CTL_WHY_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How long a command waits for the coordinator's (or, for release, the
 * node's) answer: --timeout-ms bounds. One round trip on loopback takes well
 * under a millisecond; 3 s covers a coordinator busy with a catalog reload. */
#define CTL_TIMEOUT_MS_DEFAULT 3000
#define CTL_TIMEOUT_MS_MIN 10
#define CTL_TIMEOUT_MS_MAX 60000

typedef enum ctl_cmd {
    CTL_CMD_NONE = 0,
    CTL_CMD_MIGRATE,
    CTL_CMD_ITEM_CREATE,
    CTL_CMD_ITEM_IMPORT,
    CTL_CMD_STATUS,
    CTL_CMD_HOLDS,
    CTL_CMD_CHECK,
    CTL_CMD_EVENTS,
    CTL_CMD_NODES,
    CTL_CMD_TRANSFERS,
    CTL_CMD_RELEASE,
    CTL_CMD_CONSUMERS,
    CTL_CMD_RETENTION_SHOW,
    CTL_CMD_RETENTION_RUN,
    CTL_CMD_RESTORE_FENCE,
    CTL_CMD_RESTORE_XID_EPOCH,
    /* over several regions, one --config each (ctl_region.h) */
    CTL_CMD_QUOTA_SHOW,
    CTL_CMD_QUOTA_MOVE,
    CTL_CMD_REGIONS,
    /* through the coordinator (ctl_opts_is_admin) */
    CTL_CMD_ITEM_RESTOCK,
    CTL_CMD_ITEM_REDUCE,
    CTL_CMD_ITEM_PAUSE,
    CTL_CMD_ITEM_RESUME,
    CTL_CMD_ITEM_RETIRE,
    CTL_CMD_ITEM_SPLIT,
    CTL_CMD_ITEM_COLLAPSE,
    CTL_CMD_ITEM_REBALANCE,
    CTL_CMD_DRAIN,
    CTL_CMD_UNDRAIN,
} ctl_cmd;

typedef struct ctl_item_spec {
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    char node[CTL_NODE_LEN_MAX + 1]; /* "" = unassigned: the coordinator places them */
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
    char dsn[CTL_DSN_LEN_MAX + 1]; /* from --dsn, else ESCROW_DSN; "" for admin commands */
    /* from --coordinator, else ESCROW_COORDINATOR; "" = none (required by the
     * admin commands; item create then asks it to reload, best effort) */
    char coordinator[ESC_ENDPOINT_LEN_MAX + 1];
    /* --config FILE, repeatable: the paths in order. With one, dsn and
     * coordinator come from config[0] (ctl_opts_apply_region) unless --dsn /
     * --coordinator were given; the environment is not consulted. */
    char config[CTL_CONFIG_MAX][CTL_CONFIG_PATH_LEN_MAX + 1];
    int nconfig;
    bool dsn_given;         /* --dsn was on the command line */
    bool coordinator_given; /* --coordinator was on the command line */
    int timeout_ms;         /* CTL_TIMEOUT_MS_MIN..CTL_TIMEOUT_MS_MAX */
    /* status, holds, events: filters; "" means "all" */
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    char buyer[ESC_BUYER_LEN_MAX + 1];
    int64_t hold_id; /* holds --hold, release; 0 = not given */
    int64_t after;   /* events --after; 0 = from the start */
    int limit;       /* holds, events, transfers: 1..CTL_LIST_ROWS_MAX */
    bool all;        /* transfers --all: ended ones too */
    bool status;     /* migrate --status: report, change nothing */
    /* events --follow --consumer NAME [--from-start | --after ID]: --after
     * (>= 1) or from_start say where a NEW consumer starts (an existing one
     * resumes after its cursor); limit is then the batch size */
    bool follow;
    bool from_start;
    char consumer[CTL_CONSUMER_LEN_MAX + 1];
    ctl_item_spec spec; /* item create; item import: spec.region */
    /* item import FILE ("-" = stdin) [--format csv|jsonl] [--chunk N] */
    char import_path[CTL_IMPORT_PATH_LEN_MAX + 1];
    int import_format; /* ctl_import_format (ctl_import_parse.h) */
    int import_chunk;  /* 1..CTL_IMPORT_CHUNK_MAX */
    /* status: --item-prefix, --state (0 any, 1 active, 2 paused, 3 retired:
     * ctl_top_state), --sold-out, --offset; the tenant is a->tenant */
    char item_prefix[ESC_ITEM_LEN_MAX + 1];
    int item_state;
    bool sold_out;
    int64_t offset;
    /* admin commands */
    uint32_t admin_op;               /* WIRE_ADMIN_* */
    int64_t qty;                     /* item restock / reduce: 1..ESC_TOTAL_MAX */
    int nsegments;                   /* item split: 1..ESC_SEGMENTS_PER_ITEM_MAX */
    char node[CTL_NODE_LEN_MAX + 1]; /* drain, undrain */
    /* regions (ctl_region.h): item create / status / check --global */
    bool global;
    size_t nquota;                            /* item create --global --quota; 0 = by shares */
    ctl_quota_part quota[CTL_REGIONS_MAX];    /* adding up to spec.total */
    char from_region[CTL_REGION_LEN_MAX + 1]; /* quota move --from */
    char to_region[CTL_REGION_LEN_MAX + 1];   /* quota move --to */
    /* item restock|reduce --global: where a restock's units go (--region;
     * "" = where demand or the shares say), the region that carries it out
     * (--via; "" = the item's first region), the operation id (--op-id; ""
     * = make one up) */
    char op_region[CTL_REGION_LEN_MAX + 1];
    char via_region[CTL_REGION_LEN_MAX + 1];
    char op_id[ESC_KEY_LEN_MAX + 1];
} ctl_args;

/* Where the defaults of --dsn and --coordinator come from (borrowed; NULL =
 * not set). */
typedef struct ctl_env {
    const char *dsn;         /* ESCROW_DSN */
    const char *coordinator; /* ESCROW_COORDINATOR */
} ctl_env;

/* Parses argv[0..argc) (without the program name). env is borrowed. On
 * success writes *out and returns 0; with --help, out->help is set and
 * nothing else is required. On a usage error returns ESC_EINVAL with a
 * sentence in why and leaves *out untouched. */
int ctl_opts_parse(int argc, char *const argv[], const ctl_env *env, ctl_args *out,
                   char why[CTL_WHY_MAX]);

/* Fills a->dsn and a->coordinator from region (the loaded a->config[0],
 * borrowed) where the command line gave neither. Returns 0, or ESC_EINVAL
 * with a sentence in why (a value too long for ctl_args). */
int ctl_opts_apply_region(ctl_args *a, const region_cfg *region, char why[CTL_WHY_MAX]);

/* True for the commands the coordinator carries out (no database). */
bool ctl_opts_is_admin(ctl_cmd cmd);
/* True if the option named name (without "--", up to an '=') takes a
 * value in the next word. */
bool ctl_opt_takes_value(const char *name);

/* True if url names a nanomsg endpoint escrow can use: tcp://, ipc:// or
 * inproc:// followed by 1..ESC_ENDPOINT_LEN_MAX printable bytes in all. */
bool ctl_opts_url_valid(const char *url);

#endif
