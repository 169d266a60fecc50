/*
 * ctl_opts.c - see ctl_opts.h.
 *
 * Two passes: raw_parse() sorts argv into options (by table) and positional
 * words without interpreting them; then the command's builder checks which
 * options apply and validates every value. The result is written to the
 * caller only when all of it is valid.
 */
#include "ctl_opts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "wire.h"

enum opt_id {
    OPT_DSN = 0,
    OPT_JSON,
    OPT_HELP,
    OPT_TOTAL,
    OPT_SEGMENTS,
    OPT_NODE,
    OPT_REGION,
    OPT_MAX_PER_ORDER,
    OPT_MAX_PER_BUYER,
    OPT_HOLD_TTL_MS,
    OPT_BUYER,
    OPT_ITEM,
    OPT_HOLD,
    OPT_AFTER,
    OPT_LIMIT,
    OPT_COUNT_
};

#define OPT_BIT(id) (1u << (id))
#define OPTS_GLOBAL (OPT_BIT(OPT_DSN) | OPT_BIT(OPT_JSON) | OPT_BIT(OPT_HELP))

static const struct opt_def {
    const char *name; /* without the leading "--" */
    bool has_value;
} opt_defs[OPT_COUNT_] = {
    [OPT_DSN] = {"dsn", true},
    [OPT_JSON] = {"json", false},
    [OPT_HELP] = {"help", false},
    [OPT_TOTAL] = {"total", true},
    [OPT_SEGMENTS] = {"segments", true},
    [OPT_NODE] = {"node", true},
    [OPT_REGION] = {"region", true},
    [OPT_MAX_PER_ORDER] = {"max-per-order", true},
    [OPT_MAX_PER_BUYER] = {"max-per-buyer", true},
    [OPT_HOLD_TTL_MS] = {"hold-ttl-ms", true},
    [OPT_BUYER] = {"buyer", true},
    [OPT_ITEM] = {"item", true},
    [OPT_HOLD] = {"hold", true},
    [OPT_AFTER] = {"after", true},
    [OPT_LIMIT] = {"limit", true},
};

static const struct cmd_def {
    const char *word;
    const char *word2; /* NULL for one-word commands */
    ctl_cmd cmd;
    int pos_min; /* positional arguments after the command words */
    int pos_max;
    unsigned opts; /* options allowed besides the global ones */
} cmd_defs[] = {
    {"migrate", NULL, CTL_CMD_MIGRATE, 0, 0, 0},
    {"item", "create", CTL_CMD_ITEM_CREATE, 2, 2,
     OPT_BIT(OPT_TOTAL) | OPT_BIT(OPT_SEGMENTS) | OPT_BIT(OPT_NODE) | OPT_BIT(OPT_REGION) |
         OPT_BIT(OPT_MAX_PER_ORDER) | OPT_BIT(OPT_MAX_PER_BUYER) | OPT_BIT(OPT_HOLD_TTL_MS)},
    {"status", NULL, CTL_CMD_STATUS, 0, 2, 0},
    {"holds", NULL, CTL_CMD_HOLDS, 1, 1,
     OPT_BIT(OPT_BUYER) | OPT_BIT(OPT_ITEM) | OPT_BIT(OPT_HOLD) | OPT_BIT(OPT_LIMIT)},
    {"check", NULL, CTL_CMD_CHECK, 0, 0, 0},
    {"events", NULL, CTL_CMD_EVENTS, 1, 1,
     OPT_BIT(OPT_ITEM) | OPT_BIT(OPT_AFTER) | OPT_BIT(OPT_LIMIT)},
};

#define CMD_DEFS_COUNT (sizeof cmd_defs / sizeof cmd_defs[0])

typedef struct raw_args {
    const char *val[OPT_COUNT_]; /* borrowed from argv; "" for flags */
    unsigned seen;               /* OPT_BIT()s */
    const char *pos[CTL_POSITIONAL_MAX];
    int npos;
} raw_args;

static int fail(char why[CTL_WHY_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(char why[CTL_WHY_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, CTL_WHY_MAX, fmt, ap);
    va_end(ap);
    return ESC_EINVAL;
}

int ctl_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (s == NULL || (s[0] != '-' && (s[0] < '0' || s[0] > '9'))) {
        return ESC_EINVAL;
    }
    if (s[0] == '-' && (s[1] < '0' || s[1] > '9')) {
        return ESC_EINVAL;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        return ESC_EINVAL;
    }
    *out = (int64_t)v;
    return 0;
}

int64_t ctl_split_available(int64_t total, int segments, int seg_no)
{
    if (total < 0 || segments < 1 || seg_no < 0 || seg_no >= segments) {
        return 0;
    }
    int64_t share = total / segments;
    int64_t rest = total % segments;
    return share + (seg_no < rest ? 1 : 0);
}

static int find_opt(const char *arg, size_t *name_len)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    for (int i = 0; i < OPT_COUNT_; i++) {
        if (strlen(opt_defs[i].name) == n && strncmp(opt_defs[i].name, arg, n) == 0) {
            *name_len = n;
            return i;
        }
    }
    return -1;
}

/* Takes the option at argv[*i] (and its value); advances *i past the value. */
static int raw_take_opt(int argc, char *const argv[], int *i, raw_args *raw, char why[CTL_WHY_MAX])
{
    const char *arg = argv[*i] + 2;
    size_t n = 0;
    int id = find_opt(arg, &n);
    if (id < 0) {
        return fail(why, "unknown option --%.*s", (int)strcspn(arg, "="), arg);
    }
    if ((raw->seen & OPT_BIT(id)) != 0) {
        return fail(why, "option --%s given twice", opt_defs[id].name);
    }
    const char *value = "";
    if (arg[n] == '=') {
        if (!opt_defs[id].has_value) {
            return fail(why, "option --%s takes no value", opt_defs[id].name);
        }
        value = arg + n + 1;
    } else if (opt_defs[id].has_value) {
        if (*i + 1 >= argc) {
            return fail(why, "option --%s needs a value", opt_defs[id].name);
        }
        *i += 1;
        value = argv[*i];
    }
    raw->seen |= OPT_BIT(id);
    raw->val[id] = value;
    return 0;
}

static int raw_parse(int argc, char *const argv[], raw_args *raw, char why[CTL_WHY_MAX])
{
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (!options_done && strcmp(arg, "-h") == 0) {
            raw->seen |= OPT_BIT(OPT_HELP);
        } else if (!options_done && strncmp(arg, "--", 2) == 0) {
            int rc = raw_take_opt(argc, argv, &i, raw, why);
            if (rc != 0) {
                return rc;
            }
        } else if (!options_done && arg[0] == '-' && arg[1] != '\0') {
            return fail(why, "unknown option %s (options are spelled --name)", arg);
        } else {
            if (raw->npos >= CTL_POSITIONAL_MAX) {
                return fail(why, "too many arguments");
            }
            raw->pos[raw->npos++] = arg;
        }
    }
    return 0;
}

static int copy_id(char *dst, const char *src, size_t max, const char *what, char why[CTL_WHY_MAX])
{
    if (!wire_id_valid(src, max)) {
        return fail(why, "%s must be 1..%zu printable ASCII characters without spaces", what, max);
    }
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* The integer option id in [min, max], or dflt when it was not given. */
static int get_int(const raw_args *raw, int id, int64_t min, int64_t max, int64_t dflt,
                   int64_t *out, char why[CTL_WHY_MAX])
{
    if ((raw->seen & OPT_BIT(id)) == 0) {
        *out = dflt;
        return 0;
    }
    if (ctl_parse_i64(raw->val[id], min, max, out) != 0) {
        return fail(why, "--%s must be an integer in %" PRId64 "..%" PRId64, opt_defs[id].name, min,
                    max);
    }
    return 0;
}

static const struct cmd_def *find_cmd(const raw_args *raw, char why[CTL_WHY_MAX])
{
    if (raw->npos == 0) {
        fail(why, "no command given");
        return NULL;
    }
    for (size_t i = 0; i < CMD_DEFS_COUNT; i++) {
        const struct cmd_def *c = &cmd_defs[i];
        if (strcmp(raw->pos[0], c->word) != 0) {
            continue;
        }
        if (c->word2 != NULL && (raw->npos < 2 || strcmp(raw->pos[1], c->word2) != 0)) {
            fail(why, "'%s' needs a subcommand: '%s %s'", c->word, c->word, c->word2);
            return NULL;
        }
        return c;
    }
    fail(why, "unknown command '%s'", raw->pos[0]);
    return NULL;
}

static int check_cmd_shape(const struct cmd_def *c, const raw_args *raw, char why[CTL_WHY_MAX])
{
    int words = c->word2 != NULL ? 2 : 1;
    int npos = raw->npos - words;
    unsigned foreign = raw->seen & ~(c->opts | OPTS_GLOBAL);
    if (foreign != 0) {
        for (int i = 0; i < OPT_COUNT_; i++) {
            if ((foreign & OPT_BIT(i)) != 0) {
                return fail(why, "option --%s does not apply to '%s'", opt_defs[i].name, c->word);
            }
        }
    }
    if (npos < c->pos_min || npos > c->pos_max) {
        return fail(why, "wrong number of arguments for '%s%s%s'", c->word,
                    c->word2 != NULL ? " " : "", c->word2 != NULL ? c->word2 : "");
    }
    return 0;
}

static int build_item_spec(const raw_args *raw, const char *const *pos, ctl_item_spec *s,
                           char why[CTL_WHY_MAX])
{
    int64_t v[5];
    int rc = copy_id(s->tenant, pos[0], ESC_TENANT_LEN_MAX, "TENANT", why);
    rc = rc != 0 ? rc : copy_id(s->item, pos[1], ESC_ITEM_LEN_MAX, "ITEM", why);
    if (rc != 0) {
        return rc;
    }
    const char *node = (raw->seen & OPT_BIT(OPT_NODE)) != 0 ? raw->val[OPT_NODE] : "n1";
    const char *region = (raw->seen & OPT_BIT(OPT_REGION)) != 0 ? raw->val[OPT_REGION] : "local";
    rc = copy_id(s->node, node, CTL_NODE_LEN_MAX, "--node", why);
    rc = rc != 0 ? rc : copy_id(s->region, region, CTL_REGION_LEN_MAX, "--region", why);
    if (rc != 0) {
        return rc;
    }
    if ((raw->seen & OPT_BIT(OPT_TOTAL)) == 0) {
        return fail(why, "item create needs --total N");
    }
    rc = get_int(raw, OPT_TOTAL, 0, ESC_TOTAL_MAX, 0, &s->total, why);
    rc = rc != 0 ? rc : get_int(raw, OPT_SEGMENTS, 1, ESC_SEGMENTS_PER_ITEM_MAX, 1, &v[0], why);
    rc = rc != 0 ? rc : get_int(raw, OPT_MAX_PER_ORDER, 0, ESC_QTY_MAX, 0, &v[1], why);
    rc = rc != 0 ? rc : get_int(raw, OPT_MAX_PER_BUYER, 0, ESC_TOTAL_MAX, 0, &v[2], why);
    rc = rc != 0 ? rc
                 : get_int(raw, OPT_HOLD_TTL_MS, ESC_TTL_MS_MIN, ESC_TTL_MS_MAX, ESC_TTL_MS_DEFAULT,
                           &v[3], why);
    if (rc != 0) {
        return rc;
    }
    s->segments = (int)v[0];
    s->max_per_order = (int)v[1];
    s->max_per_buyer = (int)v[2];
    s->hold_ttl_ms = (int)v[3];
    return 0;
}

static int build_holds(const raw_args *raw, ctl_args *a, char why[CTL_WHY_MAX])
{
    bool by_buyer = (raw->seen & OPT_BIT(OPT_BUYER)) != 0;
    bool by_hold = (raw->seen & OPT_BIT(OPT_HOLD)) != 0;
    if (by_buyer == by_hold) {
        return fail(why, "holds needs exactly one of --buyer B or --hold HOLD_ID");
    }
    if (by_hold && (raw->seen & OPT_BIT(OPT_ITEM)) != 0) {
        return fail(why, "--item goes with --buyer, not with --hold");
    }
    if (by_buyer) {
        return copy_id(a->buyer, raw->val[OPT_BUYER], ESC_BUYER_LEN_MAX, "--buyer", why);
    }
    if (ctl_parse_i64(raw->val[OPT_HOLD], 1, INT64_MAX, &a->hold_id) != 0) {
        return fail(why, "--hold must be a hold id (a positive integer)");
    }
    return 0;
}

/* Filters and list bounds shared by status, holds and events. */
static int build_filters(const raw_args *raw, const char *const *pos, int npos, ctl_args *a,
                         char why[CTL_WHY_MAX])
{
    int rc = 0;
    if (npos >= 1) {
        rc = copy_id(a->tenant, pos[0], ESC_TENANT_LEN_MAX, "TENANT", why);
    }
    if (rc == 0 && npos >= 2) {
        rc = copy_id(a->item, pos[1], ESC_ITEM_LEN_MAX, "ITEM", why);
    }
    if (rc == 0 && (raw->seen & OPT_BIT(OPT_ITEM)) != 0) {
        rc = copy_id(a->item, raw->val[OPT_ITEM], ESC_ITEM_LEN_MAX, "--item", why);
    }
    int64_t limit = 0;
    rc = rc != 0 ? rc : get_int(raw, OPT_AFTER, 0, INT64_MAX, 0, &a->after, why);
    rc = rc != 0
             ? rc
             : get_int(raw, OPT_LIMIT, 1, CTL_LIST_ROWS_MAX, CTL_LIST_ROWS_DEFAULT, &limit, why);
    a->limit = (int)limit;
    return rc;
}

static int build_dsn(const raw_args *raw, const char *env_dsn, ctl_args *a, char why[CTL_WHY_MAX])
{
    const char *dsn = (raw->seen & OPT_BIT(OPT_DSN)) != 0 ? raw->val[OPT_DSN] : env_dsn;
    if (dsn == NULL || dsn[0] == '\0') {
        return fail(why, "no database given: pass --dsn DSN or set ESCROW_DSN");
    }
    if (strlen(dsn) > CTL_DSN_LEN_MAX) {
        return fail(why, "the DSN is longer than %d bytes", CTL_DSN_LEN_MAX);
    }
    memcpy(a->dsn, dsn, strlen(dsn) + 1);
    return 0;
}

int ctl_args_parse(int argc, char *const argv[], const char *env_dsn, ctl_args *out,
                   char why[CTL_WHY_MAX])
{
    static raw_args raw_zero;
    static ctl_args args_zero;
    raw_args raw = raw_zero;
    ctl_args a = args_zero;
    int rc = raw_parse(argc, argv, &raw, why);
    if (rc == 0 && (raw.seen & OPT_BIT(OPT_HELP)) != 0) {
        a.help = true;
        *out = a;
        return 0;
    }
    const struct cmd_def *c = rc == 0 ? find_cmd(&raw, why) : NULL;
    if (c == NULL) {
        return ESC_EINVAL;
    }
    rc = check_cmd_shape(c, &raw, why);
    rc = rc != 0 ? rc : build_dsn(&raw, env_dsn, &a, why);
    int words = c->word2 != NULL ? 2 : 1;
    const char *const *pos = raw.pos + words;
    if (rc == 0 && c->cmd == CTL_CMD_ITEM_CREATE) {
        rc = build_item_spec(&raw, pos, &a.spec, why);
    } else if (rc == 0) {
        rc = build_filters(&raw, pos, raw.npos - words, &a, why);
    }
    if (rc == 0 && c->cmd == CTL_CMD_HOLDS) {
        rc = build_holds(&raw, &a, why);
    }
    if (rc != 0) {
        return rc;
    }
    a.cmd = c->cmd;
    a.json = (raw.seen & OPT_BIT(OPT_JSON)) != 0;
    *out = a;
    return 0;
}

int ctl_exit_code(ctl_cmd cmd, int rc, bool violated)
{
    if (rc == 0) {
        return violated ? CTL_EXIT_FAIL : CTL_EXIT_OK;
    }
    if (rc == ESC_EINVAL || rc == ESC_EUNAVAILABLE || cmd == CTL_CMD_CHECK) {
        return CTL_EXIT_USAGE;
    }
    return CTL_EXIT_FAIL;
}

void ctl_usage(FILE *f)
{
    fputs("usage: escrowctl [--dsn DSN] [--json] COMMAND [ARGS]\n"
          "\n"
          "  migrate                      apply the embedded schema migrations (idempotent)\n"
          "  item create TENANT ITEM --total N [--segments K] [--node NODE] [--region R]\n"
          "              [--max-per-order N] [--max-per-buyer N] [--hold-ttl-ms MS]\n"
          "                               create an item and its K segments on NODE\n"
          "  status [TENANT [ITEM]]       counters per item and per segment\n"
          "  holds TENANT --buyer B [--item I] [--limit N]\n"
          "  holds TENANT --hold HOLD_ID  list holds\n"
          "  events TENANT [--item I] [--after EVENT_ID] [--limit N]\n"
          "                               list outbox events\n"
          "  check                        verify conservation and the counters; exit 1 if "
          "violated\n"
          "\n"
          "  --dsn DSN    PostgreSQL connection string (default: $ESCROW_DSN)\n"
          "  --json       machine-readable output\n"
          "  --help       this text\n"
          "\n"
          "defaults: --segments 1, --node n1, --region local, --hold-ttl-ms 600000,\n"
          "          --max-per-order 0 and --max-per-buyer 0 (no limit), --limit 100\n"
          "exit: 0 ok, 1 failed or invariant violated, 2 usage or connection error\n",
          f);
}
