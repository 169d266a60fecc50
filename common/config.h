/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - a daemon's own configuration file (/etc/escrow/segment.ini,
 * coordinator.ini ...): one INI section named after the daemon, read with
 * libinih like the region files (region_cfg.h), whose keys are the
 * daemon's command-line flags.
 *
 *   [segment]                       ; the daemon's section, the only one
 *   node_id     = n1                ; --node-id n1
 *   listen      = tcp://0.0.0.0:7101
 *   listen      = ipc:///run/escrow/n1.sock   ; a repeatable flag: one line each
 *   log_format  = json              ; --log-format json
 *
 * The table of keys is the daemon's getopt_long table itself: every option
 * that takes an argument is a key, its name with '_' for '-', except the
 * ones the daemon lists as command-line only (config_spec.not_keys, e.g.
 * "config"). So a new flag is a key the day it exists, and the file and
 * the command line accept exactly the same values: each value goes through
 * the daemon's own setter (config_set_fn), the one its flags go through.
 *
 * Precedence: the command line overrides the file. The caller parses argv
 * first, noting which options it gave; config_load skips the keys of those
 * options (they are not read at all).
 *
 * Errors are one line naming the file, the line and the key, and nothing is
 * set when the file has one (the caller stops, exit code 2):
 *   segment.ini:7: [segment] unknown key 'lisen'
 *   segment.ini:4: [segment] sweep_ms: must be 1..10000, not '0'
 *   segment.ini:9: [segment] dsn: given twice (first on line 3)
 *   segment.ini:1: unknown section [segmnt]; this file has one section, [segment]
 *   segment.ini:2: key 'dsn' is outside [segment]
 *   segment.ini:12: syntax error
 *   segment.ini: cannot open: No such file or directory
 *
 * Not for concurrent use: it sets libinih's process-wide options, like
 * region_cfg_load. No sockets, no database: daemons load it before they
 * open anything.
 */
#ifndef ESC_CONFIG_H
#define ESC_CONFIG_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#define CONFIG_ERR_LEN 640
/* Bytes per line, newline excluded (a DSN of 1 KiB and its key fit). */
#define CONFIG_LINE_LEN_MAX 1200
/* getopt values of the options a file may set are below this. */
#define CONFIG_OPTS_MAX 256
/* Settings one file may hold (lines with a key). */
#define CONFIG_KEYS_MAX 256

typedef struct config_spec {
    const char *section;           /* "segment": the file's one section */
    const struct option *opts;     /* the daemon's getopt_long table, {0}-terminated */
    const char *const *not_keys;   /* NULL-terminated option names never read from a file */
    const char *const *repeatable; /* NULL-terminated option names that may be on several lines */
} config_spec;

/* Sets option opt (its getopt value) to value (borrowed for the call: copy
 * what must outlive it). Returns 0, or -1 with a sentence in why ("must be
 * 1..10000, not '0'"): the same setter the command line uses. */
typedef int (*config_set_fn)(void *arg, int opt, const char *value, char *why, size_t why_len);

/* Reads path (s's section) and calls set for each key, in file order,
 * unless given[its option's value] (the command line set it; given may be
 * NULL). The whole file is checked before the first set: an unknown key or
 * section, a key twice, a line too long or a syntax error sets nothing.
 * A value the setter refuses stops at that line (earlier keys were set:
 * the caller discards the half-built settings). Returns 0, or -1 with
 * "PATH:LINE: ..." in err. */
int config_load(const config_spec *s, const char *path, const bool *given, config_set_fn set,
                void *arg, char *err, size_t errlen);

/* The command line of a daemon: the same setter as its file. Options
 * with these getopt values are the ones every daemon has and config_argv
 * handles itself: --config FILE, --check-config, --help, --version. */
#define CONFIG_OPT_FILE 'F'
#define CONFIG_OPT_CHECK 'X'
#define CONFIG_OPT_HELP 'h'
#define CONFIG_OPT_VERSION 'V'

typedef struct config_argv_out {
    bool *given;       /* [CONFIG_OPTS_MAX]: set for each option given */
    const char **file; /* --config FILE (borrowed from argv) */
    bool *check_only;  /* --check-config */
    bool *show_usage;  /* on -1: the usage should follow the error */
} config_argv_out;

enum { CONFIG_ARGV_HELP = 1, CONFIG_ARGV_VERSION = 2 };

/* Parses argv with s's getopt table, calling set for each other option.
 * Returns 0, CONFIG_ARGV_HELP or CONFIG_ARGV_VERSION (the caller prints
 * and exits 0), or -1 with "--FLAG: why" or a usage error in err. */
int config_argv(const config_spec *s, int argc, char **argv, config_set_fn set, void *arg,
                const config_argv_out *out, char *err, size_t errlen);

/* Copies of the strings a file gave (a setter's value lives only for its
 * call): one owner per parse, freed with the settings built from it. */
typedef struct config_strs {
    char **v; /* owned, each owned */
    size_t n, cap;
} config_strs;

/* A copy of s owned by strs; aborts on out of memory (daemons at start). */
const char *config_strs_dup(config_strs *strs, const char *s);
void config_strs_free(config_strs *strs);

/* A reload compares each setting (old and new: NULL = not set): when they
 * differ it logs, under log_id, "reload: KEY OLD -> NEW (applied)" or, when
 * the running daemon cannot take it, "reload: KEY OLD -> NEW: needs a
 * restart (still OLD)". secret: the values are not shown ("changed").
 * Returns 1 when they differ, else 0. */
int config_note_change(const char *log_id, const char *key, const char *old, const char *new_,
                       bool applied, bool secret);

/* The values every daemon's setter shares, with the same sentence in why
 * when a value is refused: a log level (error, warn, info or debug), a log
 * format (text or json), on or off. Each returns 0 or -1. */
int config_parse_log_level(const char *v, int *level, char *why, size_t why_len);
int config_parse_log_format(const char *v, int *format, char *why, size_t why_len);
int config_parse_onoff(const char *v, bool *on, char *why, size_t why_len);

/* The region file a daemon was given, and by which setting (for messages). */
typedef struct config_region_ref {
    const char **region;    /* --region FILE, NULL if none; set here when --config names one */
    const char **region_by; /* "--config", "region in FILE" */
    char *by_buf;           /* room for "region in FILE" */
    size_t by_cap;
    int region_opt; /* --region's getopt value */
} config_region_ref;

/* --config FILE of a daemon that also takes --region: a region file (first
 * section [region]) is taken as --region FILE; any other file is the
 * daemon's own, loaded with config_load (its region key, unless --region
 * was given, is then named "region in FILE"). Returns 0, or -1 with a
 * sentence in err. */
int config_load_or_region(const config_spec *s, const char *path, const bool *given,
                          config_set_fn set, void *arg, const config_region_ref *r, char *err,
                          size_t errlen);

/* Logs the reload of the log level and format (both applied at once):
 * the number of settings that changed. */
int config_note_log_changes(const char *log_id, int level_a, int level_b, int format_a,
                            int format_b);

/* True if the option named name (a flag's name, "sweep-ms") is a key of s. */
bool config_is_key(const config_spec *s, const char *name);

/* What kind of INI file path is, by its first section header: 1 a region
 * file ([region]: region_cfg.h), 0 anything else (a daemon's file, or no
 * header). -1 with "PATH: cannot open: ..." in err when it cannot be read. */
int config_is_region_file(const char *path, char *err, size_t errlen);

#endif
