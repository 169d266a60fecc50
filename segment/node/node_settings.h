/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_settings.h - escrow-segment's settings, from four places, in this
 * order of precedence: the command line, the node's config file
 * (--config FILE, section [segment]: every flag is a key, config.h), the
 * region file (--region FILE, region_cfg.h: the dsn, the coordinator and
 * the node's endpoint) and the environment ($ESCROW_DSN,
 * $ESCROW_CLUSTER_KEY); then the defaults.
 *
 * --config used to name the region file; it still accepts one: a file
 * whose first section is [region] is read as --region FILE, so existing
 * command lines keep working.
 *
 * The same functions serve a reload (SIGHUP): the command line is parsed
 * once, at start; a reload reads the files again into a copy of what the
 * command line gave, and node_settings_diff says what changed.
 */
#ifndef ESC_NODE_SETTINGS_H
#define ESC_NODE_SETTINGS_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "esc_limits.h"
#include "node.h"
#include "region_cfg.h"

typedef struct node_settings {
    node_config node;      /* strings borrowed from argv, strs or region_cfg */
    int log_level;         /* ESC_LOG_*, default info */
    int log_format;        /* ESC_LOG_TEXT (default) or ESC_LOG_JSON */
    const char *config;    /* the node's config file, or NULL */
    const char *region;    /* the region file, or NULL */
    const char *region_by; /* what named it: "--region", "--config", "region in FILE" */
    const char *cluster_key_file;
    bool check_only;             /* --check-config: check the settings, start nothing */
    bool given[CONFIG_OPTS_MAX]; /* options the command line gave (by getopt value) */
    config_strs strs;            /* owned: copies of the values */
    region_cfg *region_cfg;      /* owned (heap: large), when region */
    char region_by_buf[1100];
    char cluster_key[ESC_CREDENTIAL_LEN_MAX + 1];
    char cluster_key_prev[ESC_CREDENTIAL_LEN_MAX + 1]; /* "" = none */
} node_settings;

#define NODE_SETTINGS_ERR_LEN 1024

/* Defaults into s (zeroed first). */
void node_settings_init(node_settings *s);

/* Parses argv into s. Returns 0, 1 when --help or --version was printed
 * (exit 0), or -1 with a sentence in err (*show_usage: print the usage
 * too). */
int node_settings_args(node_settings *s, int argc, char **argv, bool *show_usage, char *err,
                       size_t errlen);

/* Reads the files (config, region, cluster key), fills in the environment
 * and checks the whole. Returns 0, or -1 with a sentence in err ("FILE:LINE:
 * [segment] key: ..." for the config file; *show_usage as above). */
int node_settings_files(node_settings *s, bool *show_usage, char *err, size_t errlen);

/* dst = a copy of argv_only (settings after node_settings_args) that owns
 * nothing yet: the start of the settings a node runs with, or of a reload. */
void node_settings_fork(node_settings *dst, const node_settings *argv_only);

/* Frees what s owns (copies of the values, the region). */
void node_settings_free(node_settings *s);

/* Logs (id SEG-RELOAD) every setting that differs between running and
 * fresh: those a reload applies (log_level, log_format, rate_tenant,
 * rate_buyer, the cluster keys) as applied, the others as needing a
 * restart. Returns how many differ. */
int node_settings_diff(const node_settings *running, const node_settings *fresh);

/* Copies what a reload applies from fresh into running. */
void node_settings_take_reloadable(node_settings *running, const node_settings *fresh);

void node_settings_usage(FILE *f);

#endif
