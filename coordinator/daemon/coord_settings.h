/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_settings.h - escrow-coordinator's settings, from four places, in
 * this order of precedence: the command line, the coordinator's config
 * file (--config FILE, section [coordinator]: every flag is a key,
 * config.h), the region file (--region FILE, region_cfg.h: the dsn, the
 * endpoints, the metrics address and its [coordinator] tuning) and the
 * environment ($ESCROW_DSN, $ESCROW_CLUSTER_KEY); then the defaults.
 *
 * --config used to name the region file; it still accepts one: a file
 * whose first section is [region] is read as --region FILE, so existing
 * command lines keep working.
 *
 * A reload (SIGHUP) reads the files again into a copy of what the command
 * line gave; coord_settings_diff says what changed.
 */
#ifndef ESC_COORD_SETTINGS_H
#define ESC_COORD_SETTINGS_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "coord_state.h"
#include "esc_limits.h"
#include "region_cfg.h"

typedef struct coord_settings {
    coord_config coord;    /* strings borrowed from strs or region_cfg */
    int log_level;         /* ESC_LOG_*, default info */
    int log_format;        /* ESC_LOG_TEXT (default) or ESC_LOG_JSON */
    const char *config;    /* the coordinator's config file, or NULL */
    const char *region;    /* the region file, or NULL */
    const char *region_by; /* what named it: "--region", "--config", "region in FILE" */
    const char *cluster_key_file;
    bool check_only;             /* --check-config: check the settings, start nothing */
    bool given[CONFIG_OPTS_MAX]; /* options the command line gave (by getopt value) */
    bool set[CONFIG_OPTS_MAX];   /* options the command line or the config file set */
    config_strs strs;            /* owned: copies of the values */
    region_cfg *region_cfg;      /* owned (heap: large), when region */
    char region_by_buf[1100];
    char cluster_key[ESC_CREDENTIAL_LEN_MAX + 1];
    char cluster_key_prev[ESC_CREDENTIAL_LEN_MAX + 1]; /* "" = none */
} coord_settings;

#define COORD_SETTINGS_ERR_LEN 1024

/* Defaults into s (zeroed first). */
void coord_settings_init(coord_settings *s);

/* Parses argv into s. Returns 0, 1 when --help or --version was printed
 * (exit 0), or -1 with a sentence in err (*show_usage: print the usage
 * too). */
int coord_settings_args(coord_settings *s, int argc, char **argv, bool *show_usage, char *err,
                        size_t errlen);

/* Reads the files (config, region, cluster key), fills in the environment
 * and checks the whole. Returns 0, or -1 with a sentence in err ("FILE:LINE:
 * [coordinator] key: ..." for the config file; *show_usage as above). */
int coord_settings_files(coord_settings *s, bool *show_usage, char *err, size_t errlen);

/* dst = a copy of argv_only (after coord_settings_args) owning nothing yet. */
void coord_settings_fork(coord_settings *dst, const coord_settings *argv_only);

/* Frees what s owns. */
void coord_settings_free(coord_settings *s);

/* Logs (id COORD-RELOAD) every setting that differs between running and
 * fresh: the log level and format and the cluster keys as applied, the
 * others as needing a restart. Returns how many differ. */
int coord_settings_diff(const coord_settings *running, const coord_settings *fresh);

/* Copies what a reload applies from fresh into running. */
void coord_settings_take_reloadable(coord_settings *running, const coord_settings *fresh);

void coord_settings_usage(FILE *f);

#endif
