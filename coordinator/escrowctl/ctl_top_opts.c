/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_opts.c - see ctl_top_opts.h.
 *
 * Two passes, as ctl_opts.c: sort argv into options (by table) and words,
 * then validate every value. The result reaches the caller only when all of
 * it is valid.
 */
#include "ctl_top_opts.h"

#include <stdarg.h>
#include <string.h>

#include "ctl_num.h"
#include "escrow_errors.h"
#include "wire.h"

enum top_opt {
    T_DSN = 0,
    T_CONFIG,
    T_JSON,
    T_HELP,
    T_TIMEOUT_MS,
    T_PREFIX,
    T_STATE,
    T_PAUSED,
    T_SOLD_OUT,
    T_COLLAPSED,
    T_LIMIT,
    T_PAGE,
    T_INTERVAL_MS,
    T_ONCE,
    T_BATCH,
    T_ITERATIONS,
    T_TENANT,
    T_ITEM_PREFIX,
    T_COUNT_
};

static const struct top_opt_def {
    const char *name; /* without "--" */
    bool has_value;
} top_opts[T_COUNT_] = {
    [T_DSN] = {"dsn", true},
    [T_CONFIG] = {"config", true},
    [T_JSON] = {"json", false},
    [T_HELP] = {"help", false},
    [T_TIMEOUT_MS] = {"timeout-ms", true},
    [T_PREFIX] = {"prefix", true},
    [T_STATE] = {"state", true},
    [T_PAUSED] = {"paused", false},
    [T_SOLD_OUT] = {"sold-out", false},
    [T_COLLAPSED] = {"collapsed", false},
    [T_LIMIT] = {"limit", true},
    [T_PAGE] = {"page", true},
    [T_INTERVAL_MS] = {"interval-ms", true},
    [T_ONCE] = {"once", false},
    [T_BATCH] = {"batch", false},
    [T_ITERATIONS] = {"iterations", true},
    [T_TENANT] = {"tenant", true},           /* = TENANT, as status takes it */
    [T_ITEM_PREFIX] = {"item-prefix", true}, /* = --prefix, as status takes it */
};

/* Words after "top": at most TENANT. */
#define TOP_WORDS_MAX 2

typedef struct top_raw {
    const char *val[T_COUNT_]; /* borrowed from argv; "" for flags; NULL = not given */
    const char *word[TOP_WORDS_MAX + 1];
    int nwords;
} top_raw;

/* The option named by arg (after "--", up to '=' if any); -1 if unknown. */
static int find_opt(const char *arg, size_t *name_len)
{
    size_t n = strcspn(arg, "=");
    for (int i = 0; i < T_COUNT_; i++) {
        if (strlen(top_opts[i].name) == n && strncmp(top_opts[i].name, arg, n) == 0) {
            *name_len = n;
            return i;
        }
    }
    return -1;
}

/* Options other commands take that have a value, for ctl_top_is_cmd. */
static bool takes_value(const char *arg)
{
    static const char *const others[] = {"coordinator"};
    size_t n = 0;
    int id = find_opt(arg, &n);
    if (id >= 0) {
        return top_opts[id].has_value && arg[n] != '=';
    }
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        if (strcmp(arg, others[i]) == 0) {
            return true;
        }
    }
    return false;
}

bool ctl_top_is_cmd(int argc, char *const argv[])
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            return i + 1 < argc && strcmp(argv[i + 1], "top") == 0;
        }
        if (strncmp(argv[i], "--", 2) == 0) {
            i += takes_value(argv[i] + 2) ? 1 : 0;
            continue;
        }
        return strcmp(argv[i], "top") == 0;
    }
    return false;
}

static int take_opt(int argc, char *const argv[], int *i, top_raw *raw, char why[CTL_WHY_MAX])
{
    const char *arg = argv[*i] + 2;
    size_t n = 0;
    int id = find_opt(arg, &n);
    if (id < 0) {
        return ctl_fail(why, "unknown option --%.*s for 'top'", (int)strcspn(arg, "="), arg);
    }
    if (raw->val[id] != NULL) {
        return ctl_fail(why, "option --%s given twice", top_opts[id].name);
    }
    const char *value = "";
    if (arg[n] == '=') {
        if (!top_opts[id].has_value) {
            return ctl_fail(why, "option --%s takes no value", top_opts[id].name);
        }
        value = arg + n + 1;
    } else if (top_opts[id].has_value) {
        if (*i + 1 >= argc) {
            return ctl_fail(why, "option --%s needs a value", top_opts[id].name);
        }
        *i += 1;
        value = argv[*i];
    }
    raw->val[id] = value;
    return 0;
}

/* After "--" every word is a word (a tenant named "--x"). */
static int raw_parse(int argc, char *const argv[], top_raw *raw, char why[CTL_WHY_MAX])
{
    bool words_only = false;
    for (int i = 0; i < argc; i++) {
        if (!words_only && strcmp(argv[i], "--") == 0) {
            words_only = true;
            continue;
        }
        if (!words_only && strncmp(argv[i], "--", 2) == 0) {
            int rc = take_opt(argc, argv, &i, raw, why);
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        if (raw->nwords == TOP_WORDS_MAX) {
            return ctl_fail(why, "'top' takes at most one TENANT (got '%s' too)", argv[i]);
        }
        raw->word[raw->nwords++] = argv[i];
    }
    return 0;
}

static int get_int(const top_raw *raw, int id, int64_t min, int64_t max, int64_t dflt, int64_t *out,
                   char why[CTL_WHY_MAX])
{
    if (raw->val[id] == NULL) {
        *out = dflt;
        return 0;
    }
    if (ctl_num_parse(raw->val[id], min, max, out) != 0) {
        return ctl_fail(why, "--%s must be an integer in %lld..%lld, not '%s'", top_opts[id].name,
                        (long long)min, (long long)max, raw->val[id]);
    }
    return 0;
}

static int copy_id(char *dst, const char *src, size_t max, const char *what, char why[CTL_WHY_MAX])
{
    if (!wire_id_valid(src, max)) {
        return ctl_fail(why, "%s must be 1..%zu printable ASCII bytes without spaces", what, max);
    }
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

static int build_state(const top_raw *raw, ctl_top_filter *f, char why[CTL_WHY_MAX])
{
    static const char *const names[] = {[CTL_TOP_STATE_ACTIVE] = "active",
                                        [CTL_TOP_STATE_PAUSED] = "paused",
                                        [CTL_TOP_STATE_RETIRED] = "retired"};
    f->state = CTL_TOP_STATE_ANY;
    if (raw->val[T_STATE] != NULL) {
        for (int s = CTL_TOP_STATE_ACTIVE; s <= CTL_TOP_STATE_RETIRED; s++) {
            if (strcmp(raw->val[T_STATE], names[s]) == 0) {
                f->state = (ctl_top_state)s;
            }
        }
        if (f->state == CTL_TOP_STATE_ANY) {
            return ctl_fail(why, "--state must be active, paused or retired, not '%s'",
                            raw->val[T_STATE]);
        }
    }
    if (raw->val[T_PAUSED] != NULL) {
        if (f->state != CTL_TOP_STATE_ANY && f->state != CTL_TOP_STATE_PAUSED) {
            return ctl_fail(why, "--paused and --state %s exclude each other", raw->val[T_STATE]);
        }
        f->state = CTL_TOP_STATE_PAUSED;
    }
    return 0;
}

static int build_filter(const top_raw *raw, ctl_top_filter *f, char why[CTL_WHY_MAX])
{
    int rc = 0;
    if (raw->nwords < 1 || strcmp(raw->word[0], "top") != 0) {
        return ctl_fail(why, "expected the command 'top' first");
    }
    if (raw->nwords == 2 && raw->val[T_TENANT] != NULL) {
        return ctl_fail(why, "--tenant and a TENANT word exclude each other");
    }
    if (raw->val[T_PREFIX] != NULL && raw->val[T_ITEM_PREFIX] != NULL) {
        return ctl_fail(why, "--prefix and --item-prefix exclude each other");
    }
    const char *tenant = raw->nwords == 2 ? raw->word[1] : raw->val[T_TENANT];
    const char *prefix = raw->val[T_PREFIX] != NULL ? raw->val[T_PREFIX] : raw->val[T_ITEM_PREFIX];
    if (tenant != NULL) {
        rc = copy_id(f->tenant, tenant, ESC_TENANT_LEN_MAX, "TENANT", why);
    }
    if (rc == 0 && prefix != NULL) {
        rc = copy_id(f->prefix, prefix, ESC_ITEM_LEN_MAX, "--prefix", why);
    }
    rc = rc != 0 ? rc : build_state(raw, f, why);
    f->sold_out = raw->val[T_SOLD_OUT] != NULL;
    f->collapsed = raw->val[T_COLLAPSED] != NULL;
    return rc;
}

/* --once, --batch, --iterations, --interval-ms, --limit, --page. */
static int build_refresh(const top_raw *raw, ctl_top_args *a, char why[CTL_WHY_MAX])
{
    a->once = raw->val[T_ONCE] != NULL;
    a->batch = raw->val[T_BATCH] != NULL;
    if (a->once && a->batch) {
        return ctl_fail(why, "--once and --batch exclude each other");
    }
    if (raw->val[T_ITERATIONS] != NULL && !a->batch) {
        return ctl_fail(why, "--iterations goes with --batch");
    }
    int64_t interval = 0, limit = 0;
    int rc = get_int(raw, T_ITERATIONS, 1, CTL_TOP_ITERATIONS_MAX, 0, &a->iterations, why);
    rc = rc != 0 ? rc
                 : get_int(raw, T_INTERVAL_MS, CTL_TOP_INTERVAL_MS_MIN, CTL_TOP_INTERVAL_MS_MAX,
                           CTL_TOP_INTERVAL_MS_DEFAULT, &interval, why);
    rc = rc != 0 ? rc : get_int(raw, T_LIMIT, 1, CTL_TOP_LIMIT_MAX, 0, &limit, why);
    rc = rc != 0 ? rc : get_int(raw, T_PAGE, 1, CTL_TOP_PAGE_MAX, 1, &a->page, why);
    a->interval_ms = (int)interval;
    a->limit = (int)limit;
    return rc;
}

/* --dsn, --config, $ESCROW_DSN, --timeout-ms. */
static int build_targets(const top_raw *raw, const ctl_env *env, ctl_top_args *a,
                         char why[CTL_WHY_MAX])
{
    const char *config = raw->val[T_CONFIG];
    if (config != NULL) {
        if (config[0] == '\0' || strlen(config) > CTL_CONFIG_PATH_LEN_MAX) {
            return ctl_fail(why, "--config takes a file path of 1..%d bytes",
                            CTL_CONFIG_PATH_LEN_MAX);
        }
        memcpy(a->config, config, strlen(config) + 1);
    }
    const char *dsn = raw->val[T_DSN] != NULL ? raw->val[T_DSN] : config != NULL ? "" : env->dsn;
    if ((dsn == NULL || dsn[0] == '\0') && config == NULL) {
        return ctl_fail(why, "no database given: pass --dsn DSN, --config FILE or set ESCROW_DSN");
    }
    if (strlen(dsn) > CTL_DSN_LEN_MAX) {
        return ctl_fail(why, "the DSN is longer than %d bytes", CTL_DSN_LEN_MAX);
    }
    memcpy(a->dsn, dsn, strlen(dsn) + 1);
    int64_t t = 0;
    int rc = get_int(raw, T_TIMEOUT_MS, CTL_TIMEOUT_MS_MIN, CTL_TIMEOUT_MS_MAX,
                     CTL_TOP_STATS_TIMEOUT_MS_DEFAULT, &t, why);
    a->stats_timeout_ms = (int)t;
    return rc;
}

int ctl_top_args_parse(int argc, char *const argv[], const ctl_env *env, ctl_top_args *out,
                       char why[CTL_WHY_MAX])
{
    static const ctl_env env_none;
    static top_raw raw_zero;
    static ctl_top_args args_zero;
    top_raw raw = raw_zero;
    ctl_top_args a = args_zero;
    int rc = raw_parse(argc, argv, &raw, why);
    if (rc != 0) {
        return rc;
    }
    if (raw.val[T_HELP] != NULL) {
        a.help = true;
        *out = a;
        return 0;
    }
    rc = build_filter(&raw, &a.filter, why);
    rc = rc != 0 ? rc : build_refresh(&raw, &a, why);
    rc = rc != 0 ? rc : build_targets(&raw, env != NULL ? env : &env_none, &a, why);
    if (rc != 0) {
        return rc;
    }
    a.json = raw.val[T_JSON] != NULL;
    *out = a;
    return 0;
}

ctl_top_mode ctl_top_mode_of(const ctl_top_args *a, bool stdout_is_tty)
{
    ctl_top_mode m = {.live = stdout_is_tty && !a->once && !a->batch && !a->json};
    if (m.live) {
        m.limit = a->limit; /* 0: as many as fit */
        return m;
    }
    m.snapshots = a->batch ? a->iterations : 1;
    m.limit = a->limit != 0 ? a->limit : CTL_TOP_LIMIT_DEFAULT;
    return m;
}

void ctl_top_usage(FILE *f)
{
    fputs("a live view, like top(1) (--dsn; the counters from the segments' owners):\n"
          "  top [TENANT | --tenant T] [--prefix P | --item-prefix P]\n"
          "      [--state active|paused|retired] [--paused] [--sold-out]\n"
          "      [--collapsed] [--limit N] [--page N] [--interval-ms MS] [--timeout-ms MS]\n"
          "      [--once | --batch [--iterations N]] [--json]\n"
          "                               per item and segment: owner, state, available,\n"
          "                               held, sold, holds/s and rejections/s (two samples\n"
          "                               of the owners' counters), transfers in flight, tail\n"
          "                               and collapse; every --interval-ms (default 1000);\n"
          "                               keys: q quit, n/space/PgDn next page, p/PgUp\n"
          "                               previous page, g first page\n"
          "    filters: TENANT (or --tenant T); --prefix P or --item-prefix P (item ids\n"
          "             starting with P); --state; --paused\n"
          "             (= --state paused); --sold-out (nothing available, held, in flight\n"
          "             or unallocated); --collapsed (the item has a tail segment)\n"
          "    pages:   --limit N items a page (default: what fits the terminal; 20 in\n"
          "             plain output; at most 500); --page N starts at item (N-1)*limit+1\n"
          "    plain:   --once prints one snapshot, --batch one every interval (--iterations\n"
          "             N of them, default until interrupted), as text or, with --json, as\n"
          "             JSON lines; a stdout that is not a terminal gets one unless --batch\n"
          "    --timeout-ms MS  how long each node gets to answer (default 500)\n",
          f);
}
