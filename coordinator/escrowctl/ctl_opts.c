/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_opts.c - see ctl_opts.h.
 *
 * Two passes: raw_parse() sorts argv into options (by table) and positional
 * words without interpreting them; then the command's builder checks which
 * options apply and validates every value. The result is written to the
 * caller only when all of it is valid.
 */
#include "ctl_opts.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_import_parse.h"
#include "ctl_num.h"
#include "ctl_quota.h"
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
    OPT_COORDINATOR,
    OPT_TIMEOUT_MS,
    OPT_ALL,
    OPT_FOLLOW,
    OPT_CONSUMER,
    OPT_FROM_START,
    OPT_CONFIG,
    OPT_GLOBAL,
    OPT_QUOTA,
    OPT_FROM,
    OPT_TO,
    OPT_OP_ID,
    OPT_VIA,
    OPT_STATUS,
    OPT_FORMAT,
    OPT_CHUNK,
    OPT_TENANT,
    OPT_ITEM_PREFIX,
    OPT_STATE,
    OPT_SOLD_OUT,
    OPT_PAUSED,
    OPT_OFFSET,
    OPT_COUNT_
};

#define OPT_BIT(id) (UINT64_C(1) << (id))
#define OPTS_GLOBAL                                                                                \
    (OPT_BIT(OPT_DSN) | OPT_BIT(OPT_JSON) | OPT_BIT(OPT_HELP) | OPT_BIT(OPT_COORDINATOR) |         \
     OPT_BIT(OPT_TIMEOUT_MS) | OPT_BIT(OPT_CONFIG))

/* status: its filters and pages */
#define OPTS_STATUS                                                                                \
    (OPT_BIT(OPT_TENANT) | OPT_BIT(OPT_ITEM_PREFIX) | OPT_BIT(OPT_STATE) | OPT_BIT(OPT_SOLD_OUT) | \
     OPT_BIT(OPT_PAUSED) | OPT_BIT(OPT_LIMIT) | OPT_BIT(OPT_OFFSET))

/* item restock / reduce: of a global item with --global */
#define OPTS_STOCK                                                                                 \
    (OPT_BIT(OPT_GLOBAL) | OPT_BIT(OPT_REGION) | OPT_BIT(OPT_OP_ID) | OPT_BIT(OPT_VIA))

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
    [OPT_COORDINATOR] = {"coordinator", true},
    [OPT_TIMEOUT_MS] = {"timeout-ms", true},
    [OPT_ALL] = {"all", false},
    [OPT_FOLLOW] = {"follow", false},
    [OPT_CONSUMER] = {"consumer", true},
    [OPT_FROM_START] = {"from-start", false},
    [OPT_CONFIG] = {"config", true},
    [OPT_GLOBAL] = {"global", false},
    [OPT_QUOTA] = {"quota", true},
    [OPT_FROM] = {"from", true},
    [OPT_TO] = {"to", true},
    [OPT_OP_ID] = {"op-id", true},
    [OPT_VIA] = {"via", true},
    [OPT_STATUS] = {"status", false},
    [OPT_FORMAT] = {"format", true},
    [OPT_CHUNK] = {"chunk", true},
    [OPT_TENANT] = {"tenant", true},
    [OPT_ITEM_PREFIX] = {"item-prefix", true},
    [OPT_STATE] = {"state", true},
    [OPT_SOLD_OUT] = {"sold-out", false},
    [OPT_PAUSED] = {"paused", false},
    [OPT_OFFSET] = {"offset", true},
};

/* What the positional words after the command words mean. */
typedef enum pos_kind {
    POS_NONE = 0,
    POS_FILTERS,    /* [TENANT [ITEM]] or TENANT */
    POS_ITEM_SPEC,  /* item create TENANT ITEM */
    POS_ITEM,       /* TENANT ITEM */
    POS_ITEM_QTY,   /* TENANT ITEM QTY */
    POS_ITEM_SPLIT, /* TENANT ITEM N */
    POS_NODE,       /* NODE */
    POS_HOLD,       /* HOLD_ID */
    POS_FILE,       /* FILE (item import) */
} pos_kind;

static const struct cmd_def {
    const char *word;
    const char *word2; /* NULL for one-word commands */
    ctl_cmd cmd;
    int pos_min; /* positional arguments after the command words */
    int pos_max;
    uint64_t opts; /* options allowed besides the global ones */
    pos_kind pos;
    uint32_t admin_op; /* WIRE_ADMIN_* for the coordinator's commands, else 0 */
} cmd_defs[] = {
    {"migrate", NULL, CTL_CMD_MIGRATE, 0, 0, OPT_BIT(OPT_STATUS), POS_NONE, 0},
    {"item", "create", CTL_CMD_ITEM_CREATE, 2, 2,
     OPT_BIT(OPT_TOTAL) | OPT_BIT(OPT_SEGMENTS) | OPT_BIT(OPT_NODE) | OPT_BIT(OPT_REGION) |
         OPT_BIT(OPT_MAX_PER_ORDER) | OPT_BIT(OPT_MAX_PER_BUYER) | OPT_BIT(OPT_HOLD_TTL_MS) |
         OPT_BIT(OPT_GLOBAL) | OPT_BIT(OPT_QUOTA),
     POS_ITEM_SPEC, 0},
    {"item", "import", CTL_CMD_ITEM_IMPORT, 1, 1,
     OPT_BIT(OPT_FORMAT) | OPT_BIT(OPT_CHUNK) | OPT_BIT(OPT_REGION), POS_FILE, 0},
    {"item", "restock", CTL_CMD_ITEM_RESTOCK, 3, 3, OPTS_STOCK, POS_ITEM_QTY, WIRE_ADMIN_RESTOCK},
    {"item", "reduce", CTL_CMD_ITEM_REDUCE, 3, 3, OPTS_STOCK, POS_ITEM_QTY, WIRE_ADMIN_REDUCE},
    {"item", "pause", CTL_CMD_ITEM_PAUSE, 2, 2, 0, POS_ITEM, WIRE_ADMIN_PAUSE},
    {"item", "resume", CTL_CMD_ITEM_RESUME, 2, 2, 0, POS_ITEM, WIRE_ADMIN_RESUME},
    {"item", "retire", CTL_CMD_ITEM_RETIRE, 2, 2, 0, POS_ITEM, WIRE_ADMIN_RETIRE},
    {"item", "split", CTL_CMD_ITEM_SPLIT, 3, 3, 0, POS_ITEM_SPLIT, WIRE_ADMIN_SPLIT},
    {"item", "collapse", CTL_CMD_ITEM_COLLAPSE, 2, 2, 0, POS_ITEM, WIRE_ADMIN_COLLAPSE},
    {"item", "rebalance", CTL_CMD_ITEM_REBALANCE, 2, 2, 0, POS_ITEM, WIRE_ADMIN_REBALANCE},
    {"drain", NULL, CTL_CMD_DRAIN, 1, 1, 0, POS_NODE, WIRE_ADMIN_DRAIN},
    {"undrain", NULL, CTL_CMD_UNDRAIN, 1, 1, 0, POS_NODE, WIRE_ADMIN_UNDRAIN},
    {"status", NULL, CTL_CMD_STATUS, 0, 2, OPT_BIT(OPT_GLOBAL) | OPTS_STATUS, POS_FILTERS, 0},
    {"nodes", NULL, CTL_CMD_NODES, 0, 0, 0, POS_NONE, 0},
    {"transfers", NULL, CTL_CMD_TRANSFERS, 0, 2, OPT_BIT(OPT_ALL) | OPT_BIT(OPT_LIMIT), POS_FILTERS,
     0},
    {"release", NULL, CTL_CMD_RELEASE, 1, 1, 0, POS_HOLD, 0},
    {"holds", NULL, CTL_CMD_HOLDS, 1, 1,
     OPT_BIT(OPT_BUYER) | OPT_BIT(OPT_ITEM) | OPT_BIT(OPT_HOLD) | OPT_BIT(OPT_LIMIT), POS_FILTERS,
     0},
    {"check", NULL, CTL_CMD_CHECK, 0, 0, OPT_BIT(OPT_GLOBAL), POS_NONE, 0},
    {"events", NULL, CTL_CMD_EVENTS, 1, 1,
     OPT_BIT(OPT_ITEM) | OPT_BIT(OPT_AFTER) | OPT_BIT(OPT_LIMIT) | OPT_BIT(OPT_FOLLOW) |
         OPT_BIT(OPT_CONSUMER) | OPT_BIT(OPT_FROM_START),
     POS_FILTERS, 0},
    {"consumers", NULL, CTL_CMD_CONSUMERS, 1, 1, OPT_BIT(OPT_LIMIT), POS_FILTERS, 0},
    {"retention", "show", CTL_CMD_RETENTION_SHOW, 0, 0, 0, POS_NONE, 0},
    {"retention", "run", CTL_CMD_RETENTION_RUN, 0, 0, 0, POS_NONE, 0},
    {"restore", "fence", CTL_CMD_RESTORE_FENCE, 0, 0, 0, POS_NONE, 0},
    {"restore", "xid-epoch", CTL_CMD_RESTORE_XID_EPOCH, 0, 0, 0, POS_NONE, 0},
    {"quota", "show", CTL_CMD_QUOTA_SHOW, 0, 2, 0, POS_FILTERS, 0},
    {"quota", "move", CTL_CMD_QUOTA_MOVE, 3, 3, OPT_BIT(OPT_FROM) | OPT_BIT(OPT_TO), POS_ITEM_QTY,
     0},
    {"regions", NULL, CTL_CMD_REGIONS, 0, 0, 0, POS_NONE, 0},
};

#define CMD_DEFS_COUNT (sizeof cmd_defs / sizeof cmd_defs[0])

typedef struct raw_args {
    const char *val[OPT_COUNT_]; /* borrowed from argv; "" for flags */
    uint64_t seen;               /* OPT_BIT()s */
    const char *pos[CTL_POSITIONAL_MAX];
    int npos;
    const char *config[CTL_CONFIG_MAX]; /* --config may be repeated */
    int nconfig;
} raw_args;

int ctl_fail(char why[CTL_WHY_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, CTL_WHY_MAX, fmt, ap);
    va_end(ap);
    return ESC_EINVAL;
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
        return ctl_fail(why, "unknown option --%.*s", (int)strcspn(arg, "="), arg);
    }
    if ((raw->seen & OPT_BIT(id)) != 0 && id != OPT_CONFIG) {
        return ctl_fail(why, "option --%s given twice", opt_defs[id].name);
    }
    const char *value = "";
    if (arg[n] == '=') {
        if (!opt_defs[id].has_value) {
            return ctl_fail(why, "option --%s takes no value", opt_defs[id].name);
        }
        value = arg + n + 1;
    } else if (opt_defs[id].has_value) {
        if (*i + 1 >= argc) {
            return ctl_fail(why, "option --%s needs a value", opt_defs[id].name);
        }
        *i += 1;
        value = argv[*i];
    }
    if (id == OPT_CONFIG) {
        if (raw->nconfig == CTL_CONFIG_MAX) {
            return ctl_fail(why, "at most %d --config files", CTL_CONFIG_MAX);
        }
        if (value[0] == '\0' || strlen(value) > CTL_CONFIG_PATH_LEN_MAX) {
            return ctl_fail(why, "--config takes a file path of 1..%d bytes",
                            CTL_CONFIG_PATH_LEN_MAX);
        }
        raw->config[raw->nconfig++] = value;
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
            return ctl_fail(why, "unknown option %s (options are spelled --name)", arg);
        } else {
            if (raw->npos >= CTL_POSITIONAL_MAX) {
                return ctl_fail(why, "too many arguments");
            }
            raw->pos[raw->npos++] = arg;
        }
    }
    return 0;
}

static int copy_id(char *dst, const char *src, size_t max, const char *what, char why[CTL_WHY_MAX])
{
    if (!wire_id_valid(src, max)) {
        return ctl_fail(why, "%s must be 1..%zu printable ASCII characters without spaces", what,
                        max);
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
    if (ctl_num_parse(raw->val[id], min, max, out) != 0) {
        return ctl_fail(why, "--%s must be an integer in %" PRId64 "..%" PRId64, opt_defs[id].name,
                        min, max);
    }
    return 0;
}

static const struct cmd_def *find_cmd(const raw_args *raw, char why[CTL_WHY_MAX])
{
    if (raw->npos == 0) {
        ctl_fail(why, "no command given");
        return NULL;
    }
    bool word_known = false;
    for (size_t i = 0; i < CMD_DEFS_COUNT; i++) {
        const struct cmd_def *c = &cmd_defs[i];
        if (strcmp(raw->pos[0], c->word) != 0) {
            continue;
        }
        word_known = true;
        if (c->word2 == NULL || (raw->npos >= 2 && strcmp(raw->pos[1], c->word2) == 0)) {
            return c;
        }
    }
    if (!word_known) {
        ctl_fail(why, "unknown command '%s'", raw->pos[0]);
        return NULL;
    }
    /* a two-word command whose second word is missing or wrong: list them */
    char subs[CTL_WHY_MAX] = "";
    size_t off = 0;
    for (size_t i = 0; i < CMD_DEFS_COUNT && off < sizeof subs; i++) {
        if (strcmp(raw->pos[0], cmd_defs[i].word) == 0 && cmd_defs[i].word2 != NULL) {
            int n = snprintf(subs + off, sizeof subs - off, "%s%s", off > 0 ? ", " : "",
                             cmd_defs[i].word2);
            off += n > 0 ? (size_t)n : 0;
        }
    }
    ctl_fail(why, "'%s' needs a subcommand: %s", raw->pos[0], subs);
    return NULL;
}

static int check_cmd_shape(const struct cmd_def *c, const raw_args *raw, char why[CTL_WHY_MAX])
{
    int words = c->word2 != NULL ? 2 : 1;
    int npos = raw->npos - words;
    uint64_t foreign = raw->seen & ~(c->opts | OPTS_GLOBAL);
    if (foreign != 0) {
        for (int i = 0; i < OPT_COUNT_; i++) {
            if ((foreign & OPT_BIT(i)) != 0) {
                return ctl_fail(why, "option --%s does not apply to '%s'", opt_defs[i].name,
                                c->word);
            }
        }
    }
    if (npos < c->pos_min || npos > c->pos_max) {
        return ctl_fail(why, "wrong number of arguments for '%s%s%s'", c->word,
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
    /* Without --node the segments stay unassigned (node_id NULL) until the
     * coordinator places them; with it, a node in static mode serves them. */
    const char *region = (raw->seen & OPT_BIT(OPT_REGION)) != 0 ? raw->val[OPT_REGION] : "local";
    if ((raw->seen & OPT_BIT(OPT_NODE)) != 0) {
        rc = copy_id(s->node, raw->val[OPT_NODE], CTL_NODE_LEN_MAX, "--node", why);
    }
    rc = rc != 0 ? rc : copy_id(s->region, region, CTL_REGION_LEN_MAX, "--region", why);
    if (rc != 0) {
        return rc;
    }
    if ((raw->seen & OPT_BIT(OPT_TOTAL)) == 0) {
        return ctl_fail(why, "item create needs --total N");
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
        return ctl_fail(why, "holds needs exactly one of --buyer B or --hold HOLD_ID");
    }
    if (by_hold && (raw->seen & OPT_BIT(OPT_ITEM)) != 0) {
        return ctl_fail(why, "--item goes with --buyer, not with --hold");
    }
    if (by_buyer) {
        return copy_id(a->buyer, raw->val[OPT_BUYER], ESC_BUYER_LEN_MAX, "--buyer", why);
    }
    if (ctl_num_parse(raw->val[OPT_HOLD], 1, INT64_MAX, &a->hold_id) != 0) {
        return ctl_fail(why, "--hold must be a hold id (a positive integer)");
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

/* item import FILE [--format csv|jsonl] [--chunk N] [--region R]. */
static int build_import(const raw_args *raw, const char *const *pos, ctl_args *a,
                        char why[CTL_WHY_MAX])
{
    if (pos[0][0] == '\0' || strlen(pos[0]) > CTL_IMPORT_PATH_LEN_MAX) {
        return ctl_fail(why, "FILE must be a path of 1..%d bytes, or - for stdin",
                        CTL_IMPORT_PATH_LEN_MAX);
    }
    memcpy(a->import_path, pos[0], strlen(pos[0]) + 1);
    ctl_import_format fmt = CTL_IMPORT_CSV;
    const char *format = (raw->seen & OPT_BIT(OPT_FORMAT)) != 0 ? raw->val[OPT_FORMAT] : NULL;
    int rc = ctl_import_format_of(format, a->import_path, &fmt, why);
    a->import_format = (int)fmt;
    const char *region = (raw->seen & OPT_BIT(OPT_REGION)) != 0 ? raw->val[OPT_REGION] : "local";
    rc = rc != 0 ? rc : copy_id(a->spec.region, region, CTL_REGION_LEN_MAX, "--region", why);
    int64_t chunk = 0;
    rc = rc != 0 ? rc
                 : get_int(raw, OPT_CHUNK, 1, CTL_IMPORT_CHUNK_MAX, CTL_IMPORT_CHUNK_DEFAULT,
                           &chunk, why);
    a->import_chunk = (int)chunk;
    return rc;
}

/* status [TENANT [ITEM]] [--tenant T] [--item-prefix P] [--state S]
 * [--paused] [--sold-out] [--limit N] [--offset N]. */
static int build_status(const raw_args *raw, int npos, ctl_args *a, char why[CTL_WHY_MAX])
{
    static const char *const states[] = {"", "active", "paused", "retired"};
    int rc = 0;
    if (a->global && (raw->seen & OPTS_STATUS) != 0) {
        return ctl_fail(why, "status --global takes no filters or pages; name a TENANT [ITEM]");
    }
    if ((raw->seen & OPT_BIT(OPT_TENANT)) != 0) {
        rc = npos > 0
                 ? ctl_fail(why, "--tenant and a TENANT word exclude each other")
                 : copy_id(a->tenant, raw->val[OPT_TENANT], ESC_TENANT_LEN_MAX, "--tenant", why);
    }
    if (rc == 0 && (raw->seen & OPT_BIT(OPT_ITEM_PREFIX)) != 0) {
        rc = npos > 1 ? ctl_fail(why, "--item-prefix and an ITEM word exclude each other")
                      : copy_id(a->item_prefix, raw->val[OPT_ITEM_PREFIX], ESC_ITEM_LEN_MAX,
                                "--item-prefix", why);
    }
    if (rc == 0 && (raw->seen & OPT_BIT(OPT_STATE)) != 0) {
        for (int i = 1; i < 4; i++) {
            a->item_state = strcmp(raw->val[OPT_STATE], states[i]) == 0 ? i : a->item_state;
        }
        if (a->item_state == 0) {
            rc = ctl_fail(why, "--state must be active, paused or retired, not '%s'",
                          raw->val[OPT_STATE]);
        }
    }
    if (rc == 0 && (raw->seen & OPT_BIT(OPT_PAUSED)) != 0) {
        if (a->item_state != 0 && a->item_state != 2) {
            return ctl_fail(why, "--paused and --state %s exclude each other", raw->val[OPT_STATE]);
        }
        a->item_state = 2;
    }
    a->sold_out = (raw->seen & OPT_BIT(OPT_SOLD_OUT)) != 0;
    int64_t limit = 0;
    rc = rc != 0 ? rc
                 : get_int(raw, OPT_LIMIT, 1, CTL_STATUS_ITEMS_MAX, CTL_STATUS_ITEMS_DEFAULT,
                           &limit, why);
    rc = rc != 0 ? rc : get_int(raw, OPT_OFFSET, 0, INT64_MAX / 2, 0, &a->offset, why);
    a->limit = (int)limit;
    return rc;
}

/* events --follow --consumer NAME [--from-start | --after ID]. */
static int build_follow(const raw_args *raw, ctl_args *a, char why[CTL_WHY_MAX])
{
    bool follow = (raw->seen & OPT_BIT(OPT_FOLLOW)) != 0;
    bool consumer = (raw->seen & OPT_BIT(OPT_CONSUMER)) != 0;
    bool from_start = (raw->seen & OPT_BIT(OPT_FROM_START)) != 0;
    bool after = (raw->seen & OPT_BIT(OPT_AFTER)) != 0;
    if (!follow) {
        if (consumer || from_start) {
            return ctl_fail(why, "--consumer and --from-start go with --follow");
        }
        return 0;
    }
    if (!consumer) {
        return ctl_fail(why, "events --follow needs --consumer NAME (the cursor is kept under it)");
    }
    if (from_start && after) {
        return ctl_fail(why, "--from-start and --after exclude each other");
    }
    if (after && a->after < 1) {
        return ctl_fail(why, "--after with --follow must be an event id (>= 1)");
    }
    a->follow = true;
    a->from_start = from_start;
    return copy_id(a->consumer, raw->val[OPT_CONSUMER], CTL_CONSUMER_LEN_MAX, "--consumer", why);
}

static bool one_url_valid(const char *url, size_t len)
{
    static const char *const schemes[] = {"tcp://", "ipc://", "inproc://"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i]);
        if (len > n && strncmp(url, schemes[i], n) == 0) {
            return true;
        }
    }
    return false;
}

/* One URL, or a comma-separated list (a region's coordinators). */
bool ctl_opts_url_valid(const char *url)
{
    if (url == NULL || !wire_id_valid(url, ESC_ENDPOINT_LEN_MAX)) {
        return false;
    }
    for (const char *p = url;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (!one_url_valid(p, len)) {
            return false;
        }
        if (comma == NULL) {
            return true;
        }
        p = comma + 1;
    }
}

int ctl_opts_apply_region(ctl_args *a, const region_cfg *region, char why[CTL_WHY_MAX])
{
    if (!a->dsn_given && !ctl_opts_is_admin(a->cmd)) {
        if (strlen(region->dsn) > CTL_DSN_LEN_MAX) {
            return ctl_fail(why, "%s: the dsn is longer than %d bytes", region->path,
                            CTL_DSN_LEN_MAX);
        }
        memcpy(a->dsn, region->dsn, strlen(region->dsn) + 1);
    }
    if (!a->coordinator_given) {
        if (!ctl_opts_url_valid(region->coordinator)) {
            return ctl_fail(why, "%s: the coordinator '%s' is not an endpoint escrowctl can use",
                            region->path, region->coordinator);
        }
        memcpy(a->coordinator, region->coordinator, strlen(region->coordinator) + 1);
    }
    return 0;
}

bool ctl_opt_takes_value(const char *name)
{
    size_t n = 0;
    int id = find_opt(name, &n);
    return id >= 0 && opt_defs[id].has_value && name[n] != '=';
}

bool ctl_opts_is_admin(ctl_cmd cmd)
{
    return cmd >= CTL_CMD_ITEM_RESTOCK && cmd <= CTL_CMD_UNDRAIN;
}

/* The database (every command but the coordinator's) and the coordinator
 * (required by those, optional for the rest). */
static int build_targets(const raw_args *raw, const ctl_env *env, const struct cmd_def *c,
                         ctl_args *a, char why[CTL_WHY_MAX])
{
    /* --config: the file names the database and the coordinator; the
     * environment is not consulted (ctl_opts_apply_region fills them) */
    for (int i = 0; i < raw->nconfig; i++) {
        memcpy(a->config[i], raw->config[i], strlen(raw->config[i]) + 1);
    }
    a->nconfig = raw->nconfig;
    a->dsn_given = (raw->seen & OPT_BIT(OPT_DSN)) != 0;
    a->coordinator_given = (raw->seen & OPT_BIT(OPT_COORDINATOR)) != 0;
    const ctl_env env_none = {NULL, NULL};
    if (raw->nconfig > 0) {
        env = &env_none;
    }
    const char *coord = a->coordinator_given ? raw->val[OPT_COORDINATOR] : env->coordinator;
    bool admin = ctl_opts_is_admin(c->cmd);
    if (coord != NULL && coord[0] != '\0') {
        if (!ctl_opts_url_valid(coord)) {
            return ctl_fail(
                why,
                "the coordinator URL must be tcp://HOST:PORT, ipc://PATH or inproc://NAME, "
                "or a comma-separated list of them (at most %d bytes)",
                ESC_ENDPOINT_LEN_MAX);
        }
        memcpy(a->coordinator, coord, strlen(coord) + 1);
    } else if (admin && raw->nconfig == 0) {
        return ctl_fail(why,
                        "'%s%s%s' is carried out by the coordinator: pass --coordinator URL or "
                        "set ESCROW_COORDINATOR",
                        c->word, c->word2 != NULL ? " " : "", c->word2 != NULL ? c->word2 : "");
    }
    int64_t t = 0;
    int rc = get_int(raw, OPT_TIMEOUT_MS, CTL_TIMEOUT_MS_MIN, CTL_TIMEOUT_MS_MAX,
                     CTL_TIMEOUT_MS_DEFAULT, &t, why);
    if (rc != 0) {
        return rc;
    }
    a->timeout_ms = (int)t;
    if (admin) {
        return 0; /* the coordinator owns the catalog; escrowctl needs no database */
    }
    const char *dsn = a->dsn_given ? raw->val[OPT_DSN] : env->dsn;
    if (!a->dsn_given && raw->nconfig > 0) {
        return 0; /* the file's dsn */
    }
    if (dsn == NULL || dsn[0] == '\0') {
        return ctl_fail(why, "no database given: pass --dsn DSN, --config FILE or set ESCROW_DSN");
    }
    if (strlen(dsn) > CTL_DSN_LEN_MAX) {
        return ctl_fail(why, "the DSN is longer than %d bytes", CTL_DSN_LEN_MAX);
    }
    memcpy(a->dsn, dsn, strlen(dsn) + 1);
    return 0;
}

/* TENANT ITEM [QTY | N] of the coordinator's item commands, NODE of drain
 * and undrain, HOLD_ID of release. */
static int build_admin_pos(const struct cmd_def *c, const char *const *pos, ctl_args *a,
                           char why[CTL_WHY_MAX])
{
    int rc = 0;
    switch (c->pos) {
    case POS_NODE:
        return copy_id(a->node, pos[0], CTL_NODE_LEN_MAX, "NODE", why);
    case POS_HOLD:
        if (ctl_num_parse(pos[0], 1, INT64_MAX, &a->hold_id) != 0 ||
            !wire_hold_id_valid((uint64_t)a->hold_id)) {
            return ctl_fail(why,
                            "HOLD_ID must be a hold id (a positive integer naming a segment), "
                            "not '%s'",
                            pos[0]);
        }
        return 0;
    default:
        break;
    }
    rc = copy_id(a->tenant, pos[0], ESC_TENANT_LEN_MAX, "TENANT", why);
    rc = rc != 0 ? rc : copy_id(a->item, pos[1], ESC_ITEM_LEN_MAX, "ITEM", why);
    if (rc == 0 && c->pos == POS_ITEM_QTY &&
        ctl_num_parse(pos[2], 1, ESC_TOTAL_MAX, &a->qty) != 0) {
        rc = ctl_fail(why, "QTY must be an integer in 1..%lld, not '%s'", (long long)ESC_TOTAL_MAX,
                      pos[2]);
    }
    int64_t n = 0;
    if (rc == 0 && c->pos == POS_ITEM_SPLIT) {
        if (ctl_num_parse(pos[2], 1, ESC_SEGMENTS_PER_ITEM_MAX, &n) != 0) {
            return ctl_fail(why, "N (segments) must be an integer in 1..%d, not '%s'",
                            ESC_SEGMENTS_PER_ITEM_MAX, pos[2]);
        }
        a->nsegments = (int)n;
    }
    return rc;
}

/* The commands over several regions (ctl_region.h): their regions come
 * from --config files, never from --dsn or ESCROW_DSN. */
static bool region_cmd(const struct cmd_def *c, const raw_args *raw)
{
    return (raw->seen & OPT_BIT(OPT_GLOBAL)) != 0 || c->cmd == CTL_CMD_QUOTA_SHOW ||
           c->cmd == CTL_CMD_QUOTA_MOVE || c->cmd == CTL_CMD_REGIONS;
}

static int check_region_shape(const struct cmd_def *c, const raw_args *raw, char why[CTL_WHY_MAX])
{
    const char *sp = c->word2 != NULL ? " " : "";
    const char *w2 = c->word2 != NULL ? c->word2 : "";
    if (!region_cmd(c, raw)) {
        return (raw->seen & OPT_BIT(OPT_QUOTA)) != 0 ? ctl_fail(why, "--quota goes with --global")
                                                     : 0;
    }
    if (raw->nconfig == 0) {
        return ctl_fail(why, "'%s%s%s%s' needs --config FILE, one per region", c->word, sp, w2,
                        (raw->seen & OPT_BIT(OPT_GLOBAL)) != 0 ? " --global" : "");
    }
    if ((raw->seen & OPT_BIT(OPT_DSN)) != 0) {
        return ctl_fail(why, "--dsn does not apply to '%s%s%s': each --config names its database",
                        c->word, sp, w2);
    }
    if ((raw->seen & OPT_BIT(OPT_NODE)) != 0) {
        return ctl_fail(why, "--node does not apply to --global: each region places its segments");
    }
    return 0;
}

/* item restock|reduce --global [--region R] [--via R] [--op-id ID]. */
static int build_stock(const struct cmd_def *c, const raw_args *raw, ctl_args *a,
                       char why[CTL_WHY_MAX])
{
    const unsigned opts = OPT_BIT(OPT_REGION) | OPT_BIT(OPT_OP_ID) | OPT_BIT(OPT_VIA);
    if (!a->global) {
        return (raw->seen & opts) != 0
                   ? ctl_fail(why, "--region, --via and --op-id go with --global")
                   : 0;
    }
    int rc = 0;
    if ((raw->seen & OPT_BIT(OPT_REGION)) != 0) {
        rc = c->cmd == CTL_CMD_ITEM_REDUCE
                 ? ctl_fail(why, "a reduce names no --region: it takes from every region")
                 : copy_id(a->op_region, raw->val[OPT_REGION], CTL_REGION_LEN_MAX, "--region", why);
    }
    if (rc == 0 && (raw->seen & OPT_BIT(OPT_VIA)) != 0) {
        rc = copy_id(a->via_region, raw->val[OPT_VIA], CTL_REGION_LEN_MAX, "--via", why);
    }
    if (rc == 0 && (raw->seen & OPT_BIT(OPT_OP_ID)) != 0) {
        rc = copy_id(a->op_id, raw->val[OPT_OP_ID], ESC_KEY_LEN_MAX, "--op-id", why);
    }
    return rc;
}

/* --global, --quota (adding up to --total), quota move's --from and --to. */
static int build_region(const struct cmd_def *c, const raw_args *raw, ctl_args *a,
                        char why[CTL_WHY_MAX])
{
    a->global = (raw->seen & OPT_BIT(OPT_GLOBAL)) != 0;
    if ((raw->seen & OPT_BIT(OPT_QUOTA)) != 0) {
        int rc = ctl_quota_parse(raw->val[OPT_QUOTA], a->quota, &a->nquota, why, CTL_WHY_MAX);
        if (rc != 0) {
            return rc;
        }
        int64_t sum = 0;
        for (size_t i = 0; i < a->nquota; i++) {
            sum += a->quota[i].units;
        }
        if (sum != a->spec.total) {
            return ctl_fail(why, "--quota adds up to %" PRId64 ", not --total %" PRId64, sum,
                            a->spec.total);
        }
    }
    if (c->cmd == CTL_CMD_ITEM_RESTOCK || c->cmd == CTL_CMD_ITEM_REDUCE) {
        return build_stock(c, raw, a, why);
    }
    if (c->cmd != CTL_CMD_QUOTA_MOVE) {
        return 0;
    }
    if ((raw->seen & OPT_BIT(OPT_FROM)) == 0 || (raw->seen & OPT_BIT(OPT_TO)) == 0) {
        return ctl_fail(why, "quota move needs --from REGION and --to REGION");
    }
    int rc = copy_id(a->from_region, raw->val[OPT_FROM], CTL_REGION_LEN_MAX, "--from", why);
    rc = rc != 0 ? rc : copy_id(a->to_region, raw->val[OPT_TO], CTL_REGION_LEN_MAX, "--to", why);
    if (rc == 0 && strcmp(a->from_region, a->to_region) == 0) {
        return ctl_fail(why, "--from and --to name the same region");
    }
    return rc;
}

static int build_command(const struct cmd_def *c, const raw_args *raw, ctl_args *a,
                         char why[CTL_WHY_MAX])
{
    int words = c->word2 != NULL ? 2 : 1;
    const char *const *pos = raw->pos + words;
    int rc = 0;
    switch (c->pos) {
    case POS_ITEM_SPEC:
        rc = build_item_spec(raw, pos, &a->spec, why);
        break;
    case POS_FILE:
        rc = build_import(raw, pos, a, why);
        break;
    case POS_NONE:
    case POS_FILTERS:
        rc = build_filters(raw, pos, raw->npos - words, a, why);
        break;
    default:
        rc = build_admin_pos(c, pos, a, why);
        break;
    }
    if (rc == 0 && c->cmd == CTL_CMD_HOLDS) {
        rc = build_holds(raw, a, why);
    }
    if (rc == 0 && c->cmd == CTL_CMD_EVENTS) {
        rc = build_follow(raw, a, why);
    }
    if (rc == 0 && c->cmd == CTL_CMD_STATUS) {
        a->global = (raw->seen & OPT_BIT(OPT_GLOBAL)) != 0;
        rc = build_status(raw, raw->npos - words, a, why);
    }
    if (rc == 0) {
        rc = build_region(c, raw, a, why);
    }
    a->all = (raw->seen & OPT_BIT(OPT_ALL)) != 0;
    a->status = (raw->seen & OPT_BIT(OPT_STATUS)) != 0;
    a->admin_op = c->admin_op;
    return rc;
}

int ctl_opts_parse(int argc, char *const argv[], const ctl_env *env, ctl_args *out,
                   char why[CTL_WHY_MAX])
{
    static raw_args raw_zero;
    static ctl_args args_zero;
    static const ctl_env env_none;
    raw_args raw = raw_zero;
    ctl_args a = args_zero;
    if (env == NULL) {
        env = &env_none;
    }
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
    rc = rc != 0 ? rc : check_region_shape(c, &raw, why);
    rc = rc != 0 ? rc : build_targets(&raw, env, c, &a, why);
    rc = rc != 0 ? rc : build_command(c, &raw, &a, why);
    if (rc != 0) {
        return rc;
    }
    a.cmd = c->cmd;
    a.json = (raw.seen & OPT_BIT(OPT_JSON)) != 0;
    *out = a;
    return 0;
}
