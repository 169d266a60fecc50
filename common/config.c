/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - see config.h.
 *
 * Two passes. libinih reads the file through our reader (it counts lines,
 * as in region_cfg.c: Debian builds libinih without INI_HANDLER_LINENO, and
 * inih calls the handler for the line it read last) into a list of
 * entries, checking sections, keys and repeats; only when the whole file
 * passed are the entries handed to the daemon's setter, in file order. The
 * first error by line wins, syntax errors included.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "ini_line.h"

#include "log.h"

typedef struct entry {
    int opt;     /* getopt value */
    int key;     /* index in the option table */
    char *value; /* owned */
    int line;
} entry;

typedef struct load_state {
    const config_spec *spec;
    const char *path; /* borrowed, for messages */
    FILE *f;
    int line;
    int err_line; /* -1 = none yet */
    char err[CONFIG_ERR_LEN];
    entry entries[CONFIG_KEYS_MAX];
    size_t n;
} load_state;

static void set_err(load_state *st, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the first error only: the file is read in line order. */
static void set_err(load_state *st, int line, const char *fmt, ...)
{
    if (st->err_line >= 0) {
        return;
    }
    int n = snprintf(st->err, sizeof st->err, "%s:%d: ", st->path, line);
    if (n > 0 && (size_t)n < sizeof st->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->err + n, sizeof st->err - (size_t)n, fmt, ap);
        va_end(ap);
    }
    st->err_line = line;
}

static bool in_list(const char *const *list, const char *name)
{
    for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
        if (strcmp(list[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* "sweep_ms" names the option "sweep-ms". */
static bool key_matches(const char *opt_name, const char *key)
{
    for (; *opt_name != '\0' && *key != '\0'; opt_name++, key++) {
        if (*key != (*opt_name == '-' ? '_' : *opt_name)) {
            return false;
        }
    }
    return *opt_name == '\0' && *key == '\0';
}

bool config_is_key(const config_spec *s, const char *name)
{
    for (const struct option *o = s->opts; o->name != NULL; o++) {
        if (strcmp(o->name, name) == 0) {
            return o->has_arg == required_argument && !in_list(s->not_keys, name) && o->val > 0 &&
                   o->val < CONFIG_OPTS_MAX;
        }
    }
    return false;
}

/* The option of a key, or -1. */
static int find_key(const config_spec *s, const char *key)
{
    for (int i = 0; s->opts[i].name != NULL; i++) {
        if (key_matches(s->opts[i].name, key)) {
            return config_is_key(s, s->opts[i].name) ? i : -1;
        }
    }
    return -1;
}

static int on_key(void *arg, const char *section, const char *name, const char *value)
{
    load_state *st = arg;
    const config_spec *s = st->spec;
    if (st->err_line >= 0) {
        return 1; /* only the first error is reported; read on for syntax */
    }
    if (section[0] == '\0') {
        set_err(st, st->line, "key '%s' is outside [%s]", name, s->section);
        return 1;
    }
    if (strcmp(section, s->section) != 0) {
        return 1; /* reported by note_section */
    }
    int k = find_key(s, name);
    if (k < 0) {
        set_err(st, st->line, "[%s] unknown key '%s'", s->section, name);
        return 1;
    }
    if (!in_list(s->repeatable, s->opts[k].name)) {
        for (size_t i = 0; i < st->n; i++) {
            if (st->entries[i].key == k) {
                set_err(st, st->line, "[%s] %s: given twice (first on line %d)", s->section, name,
                        st->entries[i].line);
                return 1;
            }
        }
    }
    if (st->n == CONFIG_KEYS_MAX) {
        set_err(st, st->line, "more than %d settings", CONFIG_KEYS_MAX);
        return 1;
    }
    char *v = strdup(value);
    if (v == NULL) {
        set_err(st, st->line, "out of memory");
        return 1;
    }
    st->entries[st->n++] = (entry){s->opts[k].val, k, v, st->line};
    return 1;
}

/* A section header on this line (as inih sees one: '[' after blanks, up
 * to the first ']'): any section but the daemon's is an error. */
static void note_section(load_state *st, const char *line)
{
    if (st->line == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0) {
        line += 3; /* a UTF-8 byte order mark, which inih skips too */
    }
    line += strspn(line, " \t\r\f\v");
    const char *close = line[0] == '[' ? strchr(line, ']') : NULL;
    if (close == NULL) {
        return;
    }
    size_t len = (size_t)(close - line - 1);
    if (len != strlen(st->spec->section) || strncmp(line + 1, st->spec->section, len) != 0) {
        set_err(st, st->line, "unknown section [%.*s]; this file has one section, [%s]", (int)len,
                line + 1, st->spec->section);
    }
}

/* inih's reader (fgets-like): counts lines; a line longer than the buffer
 * is an error and reaches inih as an empty line. */
static char *read_line(char *buf, int cap, void *arg)
{
    load_state *st = arg;
    bool too_long;
    if (ini_line_read(buf, cap, st->f, CONFIG_LINE_LEN_MAX, &too_long) == NULL) {
        return NULL;
    }
    st->line++;
    if (too_long) {
        set_err(st, st->line, "line longer than %d bytes", CONFIG_LINE_LEN_MAX);
        return buf;
    }
    note_section(st, buf);
    return buf;
}

/* libinih's run-time options (Debian's build; see region_cfg.c). */
static void ini_setup(void)
{
    ini_max_line = CONFIG_LINE_LEN_MAX + 3; /* "\r\n" and the terminating NUL */
    ini_use_stack = true;
    ini_allow_multiline = false;
    ini_allow_inline_comments = true;
    ini_allow_no_value = false;
    ini_stop_on_first_error = false;
}

static int parse_file(load_state *st)
{
    ini_setup();
    int rc = ini_parse_stream(read_line, st, on_key, st);
    if (ferror(st->f)) {
        set_err(st, st->line + 1, "cannot read: %s", strerror(errno));
    } else if (rc < 0) {
        set_err(st, st->line, "out of memory");
    } else if (rc > 0 && (st->err_line < 0 || rc < st->err_line)) {
        st->err_line = -1;
        set_err(st, rc, "syntax error");
    }
    return st->err_line < 0 ? 0 : -1;
}

/* Hands the entries to the setter, in file order. */
static int apply(load_state *st, const bool *given, config_set_fn set, void *arg)
{
    for (size_t i = 0; i < st->n; i++) {
        const entry *e = &st->entries[i];
        if (given != NULL && given[e->opt]) {
            continue;
        }
        char why[CONFIG_ERR_LEN / 2] = "";
        if (set(arg, e->opt, e->value, why, sizeof why) != 0) {
            char key[64];
            snprintf(key, sizeof key, "%s", st->spec->opts[e->key].name);
            for (char *p = key; *p != '\0'; p++) {
                *p = *p == '-' ? '_' : *p;
            }
            set_err(st, e->line, "[%s] %s: %s", st->spec->section, key, why);
            return -1;
        }
    }
    return 0;
}

int config_load(const config_spec *s, const char *path, const bool *given, config_set_fn set,
                void *arg, char *err, size_t errlen)
{
    load_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    st->spec = s;
    st->path = path;
    st->err_line = -1;
    st->f = fopen(path, "r");
    if (st->f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        free(st);
        return -1;
    }
    int rc = parse_file(st);
    fclose(st->f);
    if (rc == 0) {
        rc = apply(st, given, set, arg);
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s", st->err);
    }
    for (size_t i = 0; i < st->n; i++) {
        free(st->entries[i].value);
    }
    free(st);
    return rc;
}

int config_is_region_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char line[CONFIG_LINE_LEN_MAX + 3];
    int kind = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        const char *p = line + strspn(line, " \t\r\f\v");
        if (strncmp(p, "\xEF\xBB\xBF", 3) == 0) {
            p += 3;
        }
        if (p[0] == '[') {
            kind = strncmp(p, "[region]", 8) == 0 ? 1 : 0;
            break;
        }
    }
    fclose(f);
    return kind;
}

const char *config_strs_dup(config_strs *strs, const char *s)
{
    if (strs->n == strs->cap) {
        strs->cap = strs->cap ? strs->cap * 2 : 16;
        strs->v = esc_xrealloc(strs->v, strs->cap * sizeof *strs->v);
    }
    char *copy = esc_xstrdup(s);
    strs->v[strs->n++] = copy;
    return copy;
}

void config_strs_free(config_strs *strs)
{
    for (size_t i = 0; i < strs->n; i++) {
        free(strs->v[i]);
    }
    free(strs->v);
    memset(strs, 0, sizeof *strs);
}

int config_note_change(const char *log_id, const char *key, const char *old, const char *new_,
                       bool applied, bool secret)
{
    const char *o = old != NULL && old[0] != '\0' ? old : "(none)";
    const char *n = new_ != NULL && new_[0] != '\0' ? new_ : "(none)";
    if (strcmp(o, n) == 0) {
        return 0;
    }
    if (secret) {
        o = "(old)";
        n = "(new)";
    }
    if (applied) {
        ESC_LOG(ESC_LOG_INFO, log_id, "reload: %s %s -> %s (applied)", key, o, n);
    } else {
        ESC_LOG(ESC_LOG_WARN, log_id, "reload: %s %s -> %s: needs a restart (still %s)", key, o, n,
                o);
    }
    return 1;
}

int config_argv(const config_spec *s, int argc, char **argv, config_set_fn set, void *arg,
                const config_argv_out *out, char *err, size_t errlen)
{
    int c, idx;
    *out->show_usage = false;
    while ((c = getopt_long(argc, argv, "", s->opts, &idx)) != -1) {
        char why[256];
        if (c == CONFIG_OPT_CHECK) {
            *out->check_only = true;
            continue;
        }
        if (c == CONFIG_OPT_HELP || c == CONFIG_OPT_VERSION) {
            return c == CONFIG_OPT_HELP ? CONFIG_ARGV_HELP : CONFIG_ARGV_VERSION;
        }
        if (c == '?' || c == ':' || c < 0 || c >= CONFIG_OPTS_MAX) {
            *out->show_usage = true;
            snprintf(err, errlen, "unknown option or missing value");
            return -1;
        }
        out->given[c] = true;
        if (c == CONFIG_OPT_FILE) {
            *out->file = optarg;
        } else if (set(arg, c, optarg, why, sizeof why) != 0) {
            snprintf(err, errlen, "--%s: %s", s->opts[idx].name, why);
            return -1;
        }
    }
    if (optind != argc) {
        *out->show_usage = true;
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    return 0;
}

int config_parse_log_level(const char *v, int *level, char *why, size_t why_len)
{
    *level = esc_log_level_parse(v);
    if (*level < 0) {
        snprintf(why, why_len, "takes error, warn, info or debug, not '%s'", v);
        return -1;
    }
    return 0;
}

int config_parse_log_format(const char *v, int *format, char *why, size_t why_len)
{
    *format = esc_log_format_parse(v);
    if (*format < 0) {
        snprintf(why, why_len, "takes text or json, not '%s'", v);
        return -1;
    }
    return 0;
}

int config_parse_onoff(const char *v, bool *on, char *why, size_t why_len)
{
    if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0) {
        *on = strcmp(v, "on") == 0;
        return 0;
    }
    snprintf(why, why_len, "takes on or off, not '%s'", v);
    return -1;
}

int config_load_or_region(const config_spec *s, const char *path, const bool *given,
                          config_set_fn set, void *arg, const config_region_ref *r, char *err,
                          size_t errlen)
{
    int kind = config_is_region_file(path, err, errlen);
    if (kind < 0) {
        return -1;
    }
    if (kind == 1) {
        if (*r->region != NULL) {
            snprintf(err, errlen, "--config names a region file and --region another one");
            return -1;
        }
        *r->region = path;
        *r->region_by = "--config";
        return 0;
    }
    if (config_load(s, path, given, set, arg, err, errlen) != 0) {
        return -1;
    }
    if (*r->region != NULL && !given[r->region_opt]) {
        snprintf(r->by_buf, r->by_cap, "region in %s", path);
        *r->region_by = r->by_buf;
    }
    return 0;
}

int config_note_log_changes(const char *log_id, int level_a, int level_b, int format_a,
                            int format_b)
{
    int n = config_note_change(log_id, "log_level", esc_log_level_name(level_a),
                               esc_log_level_name(level_b), true, false);
    return n + config_note_change(log_id, "log_format", esc_log_format_name(format_a),
                                  esc_log_format_name(format_b), true, false);
}
