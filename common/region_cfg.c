/* SPDX-License-Identifier: Apache-2.0 */
/*
 * region_cfg.c - see region_cfg.h.
 *
 * libinih reads the file through our own reader (ini_parse_stream) that
 * counts lines: inih calls the handler for the line it read last, so the
 * reader's count is the handler's line (Debian builds libinih without
 * INI_HANDLER_LINENO). The reader also notes section headers, which inih
 * does not report, so an empty or unknown section and the line of every
 * header are known. Each value is validated in the handler; what needs the
 * whole file (required keys, a peer named like this region, two endpoints
 * on one address) is checked after the parse. The first error by line wins
 * (syntax errors included). The result is built in heap memory of our own
 * and copied to the caller only when all of it is valid.
 *
 * Debian's libinih keeps its compile-time options as run-time variables:
 * we set the line buffer (a VLA of ini_max_line bytes when ini_use_stack)
 * and turn continuation lines off, so an indented key is a key, not the
 * previous value's second line.
 */
#include "region_cfg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "ini_line.h"
#include <libpq-fe.h>

enum { SEC_REGION, SEC_COORDINATOR, SEC_QUOTA, SEC_FLOORS, SEC_NODES, SEC_PEERS, SEC_COUNT_ };

static const char *const sec_names[SEC_COUNT_] = {"region", "coordinator", "quota",
                                                  "floors", "nodes",       "peers"};

typedef enum key_kind {
    KIND_NAME,     /* [!-~]{1,REGION_NAME_LEN_MAX} */
    KIND_DSN,      /* PQconninfoParse accepts it */
    KIND_ENDPOINT, /* tcp://HOST:PORT or ipc://PATH */
    KIND_METRICS,  /* [HOST:]PORT */
    KIND_U32,
    KIND_I32,
    KIND_I64,
    KIND_BOOL,
} key_kind;

/* The keys of [region], [coordinator] and [quota]: where each goes in
 * region_cfg and what it may hold. */
typedef struct key_def {
    int sec;
    const char *name;
    key_kind kind;
    int64_t lo, hi;
    size_t off; /* offsetof(region_cfg, field) */
    size_t cap; /* sizeof the field */
    bool required;
} key_def;

#define FIELD(f) offsetof(region_cfg, f), sizeof(((region_cfg *)0)->f)
#define KEY_STR(sec, name, kind, f, req)                                                           \
    {                                                                                              \
        sec, name, kind, 0, 0, FIELD(f), req                                                       \
    }
#define KEY_INT(sec, name, kind, lo, hi, f)                                                        \
    {                                                                                              \
        sec, name, kind, lo, hi, FIELD(f), false                                                   \
    }

/* The [coordinator] ranges are escrow-coordinator's command-line ranges
 * (coordinator/daemon/escrow-coordinator.c; check_ms: COORD_MON_CHECK_MS_MIN..MAX,
 * check_sweep_ms: COORD_MON_SWEEP_MS_MIN..MAX). */
static const key_def key_defs[] = {
    KEY_STR(SEC_REGION, "name", KIND_NAME, name, true),
    KEY_STR(SEC_REGION, "dsn", KIND_DSN, dsn, true),
    KEY_STR(SEC_REGION, "coordinator", KIND_ENDPOINT, coordinator, true),
    KEY_STR(SEC_REGION, "publish", KIND_ENDPOINT, publish, true),
    KEY_STR(SEC_REGION, "metrics", KIND_METRICS, metrics, false),
    KEY_INT(SEC_COORDINATOR, "lease_ms", KIND_U32, 100, 600000, lease_ms),
    KEY_INT(SEC_COORDINATOR, "heartbeat_ms", KIND_U32, 10, 60000, heartbeat_ms),
    KEY_INT(SEC_COORDINATOR, "rebalance_ms", KIND_U32, 10, 60000, rebalance_ms),
    KEY_INT(SEC_COORDINATOR, "collapse_pct", KIND_I32, 0, 100, collapse_pct),
    KEY_INT(SEC_COORDINATOR, "low_water_pct", KIND_I32, 0, 100, low_water_pct),
    KEY_INT(SEC_COORDINATOR, "catalog_poll_ms", KIND_U32, 100, 600000, catalog_poll_ms),
    KEY_INT(SEC_COORDINATOR, "check_ms", KIND_U32, 50, 3600000, check_ms),
    KEY_INT(SEC_COORDINATOR, "check_sweep_ms", KIND_U32, 50, 86400000, check_sweep_ms),
    KEY_INT(SEC_QUOTA, "share", KIND_U32, 1, 1000, share),
    KEY_INT(SEC_QUOTA, "floor", KIND_I64, 0, REGION_FLOOR_UNITS_MAX, floor),
    KEY_INT(SEC_QUOTA, "interval_ms", KIND_U32, 100, 600000, interval_ms),
    KEY_INT(SEC_QUOTA, "horizon_ms", KIND_U32, 100, 3600000, horizon_ms),
    KEY_INT(SEC_QUOTA, "auto", KIND_BOOL, 0, 1, quota_auto),
};

#define KEY_DEFS_COUNT (sizeof key_defs / sizeof key_defs[0])

/* A parsed endpoint, for the overlap check: a TCP address (host "" or a
 * wildcard = every interface) or an IPC path. */
typedef struct ep_addr {
    bool ipc;
    char host[ESC_ENDPOINT_LEN_MAX + 1];
    unsigned port;
    const char *path; /* borrowed from the endpoint string */
} ep_addr;

/* One endpoint of the file: its label ("coordinator" for the [region]
 * keys, "[nodes] n1" / "[peers] us" else) and line. */
typedef struct ep_use {
    char label[REGION_NAME_LEN_MAX + 16];
    const char *endpoint; /* borrowed from the region_cfg */
    int line;
    ep_addr addr;
} ep_use;

/* [region] coordinator, publish, metrics; the nodes; the peers. */
#define EP_USES_MAX (3 + REGION_NODES_MAX + REGION_PEERS_MAX)

typedef struct load_state {
    region_cfg c;                 /* the result being built */
    FILE *f;                      /* borrowed */
    const char *path;             /* borrowed: as the caller gave it, for messages */
    int line;                     /* lines read: the handler's line */
    int sec_line[SEC_COUNT_];     /* line of each section's header; 0 = absent */
    int key_line[KEY_DEFS_COUNT]; /* line of each key; 0 = not given */
    int err_line;                 /* line of the first error; -1 = none yet */
    char err[REGION_ERR_LEN];
    ep_use uses[EP_USES_MAX]; /* scratch of check_overlaps */
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

static bool id_valid(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        if (n >= max || (unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e) {
            return false;
        }
    }
    return n > 0;
}

/* Strict decimal in [lo, hi]: digits only, no sign, no spaces. */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (s[0] < '0' || s[0] > '9') {
        return -1;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static int parse_port(const char *s, unsigned *port)
{
    int64_t v = 0;
    if (parse_int(s, 1, 65535, &v) != 0) {
        return -1;
    }
    *port = (unsigned)v;
    return 0;
}

/* HOST:PORT or [IPV6]:PORT into a; host_required = false also takes PORT. */
static int parse_hostport(const char *s, bool host_required, ep_addr *a)
{
    const char *h = s, *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':') {
            return -1;
        }
        h = s + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL) {
            a->host[0] = '\0';
            return host_required ? -1 : parse_port(s, &a->port);
        }
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL) {
            return -1; /* an IPv6 address goes in brackets */
        }
    }
    if (hlen == 0 || hlen >= sizeof a->host || memchr(h, '/', hlen) != NULL) {
        return -1;
    }
    memcpy(a->host, h, hlen);
    a->host[hlen] = '\0';
    return parse_port(colon + 1, &a->port);
}

/* tcp://HOST:PORT or ipc://PATH (what nanomsg binds), into a. */
static int parse_endpoint(const char *s, ep_addr *a)
{
    memset(a, 0, sizeof *a);
    if (!id_valid(s, ESC_ENDPOINT_LEN_MAX)) {
        return -1;
    }
    if (strncmp(s, "ipc://", 6) == 0 && s[6] != '\0') {
        a->ipc = true;
        a->path = s + 6;
        return 0;
    }
    if (strncmp(s, "tcp://", 6) != 0) {
        return -1;
    }
    return parse_hostport(s + 6, true, a);
}

/* [HOST:]PORT or [IPV6]:PORT, the coordinator's --metrics. */
static int parse_metrics(const char *s, ep_addr *a)
{
    memset(a, 0, sizeof *a);
    if (!id_valid(s, ESC_ENDPOINT_LEN_MAX)) {
        return -1;
    }
    return parse_hostport(s, false, a);
}

static int check_dsn(load_state *st, const char *v)
{
    if (v[0] == '\0' || strlen(v) > REGION_DSN_LEN_MAX) {
        set_err(st, st->line, "[region] dsn: must be 1..%d bytes", REGION_DSN_LEN_MAX);
        return -1;
    }
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(v, &msg);
    if (opts == NULL) {
        size_t n = msg != NULL ? strcspn(msg, "\n") : 0;
        set_err(st, st->line, "[region] dsn: %.*s", (int)n, msg != NULL ? msg : "out of memory");
        PQfreemem(msg);
        return -1;
    }
    PQconninfoFree(opts);
    return 0;
}

static int parse_bool(const char *v, int64_t *out)
{
    static const char *const yes[] = {"on", "true", "yes", "1"};
    static const char *const no[] = {"off", "false", "no", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0) {
            *out = strcasecmp(v, yes[i]) == 0;
            return 0;
        }
    }
    return -1;
}

/* Validates value for the string key k and stores it. */
static void set_string(load_state *st, const key_def *k, const char *value)
{
    const char *sec = sec_names[k->sec];
    ep_addr a;
    switch (k->kind) {
    case KIND_NAME:
        if (!id_valid(value, REGION_NAME_LEN_MAX)) {
            set_err(st, st->line,
                    "[%s] %s: must be 1..%d printable ASCII characters without spaces, not '%s'",
                    sec, k->name, REGION_NAME_LEN_MAX, value);
            return;
        }
        break;
    case KIND_DSN:
        if (check_dsn(st, value) != 0) {
            return;
        }
        break;
    case KIND_ENDPOINT:
        if (parse_endpoint(value, &a) != 0) {
            set_err(st, st->line, "[%s] %s: '%s' is not tcp://HOST:PORT or ipc://PATH", sec,
                    k->name, value);
            return;
        }
        break;
    default:
        if (parse_metrics(value, &a) != 0) {
            set_err(st, st->line, "[%s] %s: '%s' is not PORT, HOST:PORT or [IPV6]:PORT", sec,
                    k->name, value);
            return;
        }
        break;
    }
    memcpy((char *)&st->c + k->off, value, strlen(value) + 1); /* lengths checked above */
}

/* Validates value for the integer or boolean key k and stores it. */
static void set_number(load_state *st, const key_def *k, const char *value)
{
    int64_t v = 0;
    char *field = (char *)&st->c + k->off;
    if (k->kind == KIND_BOOL) {
        if (parse_bool(value, &v) != 0) {
            set_err(st, st->line,
                    "[%s] %s: must be on, off, true, false, yes, no, 1 or 0, not '%s'",
                    sec_names[k->sec], k->name, value);
            return;
        }
        bool b = v != 0;
        memcpy(field, &b, sizeof b);
        return;
    }
    if (parse_int(value, k->lo, k->hi, &v) != 0) {
        set_err(st, st->line, "[%s] %s: must be an integer in %" PRId64 "..%" PRId64 ", not '%s'",
                sec_names[k->sec], k->name, k->lo, k->hi, value);
        return;
    }
    if (k->kind == KIND_U32) {
        uint32_t u = (uint32_t)v;
        memcpy(field, &u, sizeof u);
    } else if (k->kind == KIND_I32) {
        int32_t i = (int32_t)v;
        memcpy(field, &i, sizeof i);
    } else {
        memcpy(field, &v, sizeof v);
    }
}

/* The index of [sec] name in key_defs, or KEY_DEFS_COUNT. */
static size_t key_index(int sec, const char *name)
{
    size_t i = 0;
    while (i < KEY_DEFS_COUNT && (key_defs[i].sec != sec || strcmp(key_defs[i].name, name) != 0)) {
        i++;
    }
    return i;
}

static void set_scalar(load_state *st, int sec, const char *name, const char *value)
{
    size_t i = key_index(sec, name);
    if (i == KEY_DEFS_COUNT) {
        set_err(st, st->line, "[%s] unknown key '%s'", sec_names[sec], name);
        return;
    }
    const key_def *k = &key_defs[i];
    if (st->key_line[i] != 0) {
        set_err(st, st->line, "[%s] duplicate key '%s' (first on line %d)", sec_names[sec], name,
                st->key_line[i]);
        return;
    }
    st->key_line[i] = st->line;
    if (k->kind == KIND_NAME || k->kind == KIND_DSN || k->kind == KIND_ENDPOINT ||
        k->kind == KIND_METRICS) {
        set_string(st, k, value);
    } else {
        set_number(st, k, value);
    }
}

/* [floors] TENANT/ITEM = UNITS. An item id may hold '/', a tenant id not. */
static void add_floor(load_state *st, const char *key, const char *value)
{
    region_cfg *c = &st->c;
    const char *slash = strchr(key, '/');
    size_t tlen = slash != NULL ? (size_t)(slash - key) : 0;
    region_floor fl;
    memset(&fl, 0, sizeof fl);
    if (tlen > 0 && tlen <= ESC_TENANT_LEN_MAX) {
        memcpy(fl.tenant_id, key, tlen);
    }
    if (tlen == 0 || !id_valid(fl.tenant_id, ESC_TENANT_LEN_MAX) ||
        !id_valid(slash + 1, ESC_ITEM_LEN_MAX)) {
        set_err(st, st->line,
                "[floors] '%s': the key must be TENANT/ITEM (a tenant of 1..%d and an item of "
                "1..%d printable ASCII characters without spaces)",
                key, ESC_TENANT_LEN_MAX, ESC_ITEM_LEN_MAX);
        return;
    }
    memcpy(fl.item_id, slash + 1, strlen(slash + 1) + 1);
    for (size_t i = 0; i < c->nfloors; i++) {
        if (strcmp(c->floors[i].tenant_id, fl.tenant_id) == 0 &&
            strcmp(c->floors[i].item_id, fl.item_id) == 0) {
            set_err(st, st->line, "[floors] duplicate key '%s' (first on line %d)", key,
                    c->floors[i].line);
            return;
        }
    }
    if (c->nfloors == REGION_FLOORS_MAX) {
        set_err(st, st->line, "[floors] more than %d entries", REGION_FLOORS_MAX);
        return;
    }
    if (parse_int(value, 0, REGION_FLOOR_UNITS_MAX, &fl.units) != 0) {
        set_err(st, st->line, "[floors] %s: must be an integer in 0..%lld, not '%s'", key,
                REGION_FLOOR_UNITS_MAX, value);
        return;
    }
    fl.line = st->line;
    c->floors[c->nfloors++] = fl;
}

/* Checks one entry of [nodes] (NODE_ID = ENDPOINT) or [peers] (REGION =
 * ENDPOINT): the key, a duplicate (*dup_line: the line of an entry with the
 * same key, 0 = none), the room left, the endpoint. Returns 0 or -1. */
static int add_named_endpoint(load_state *st, int sec, const char *key, const char *value,
                              size_t id_max, size_t count, size_t count_max, int *dup_line)
{
    const char *sname = sec_names[sec];
    if (!id_valid(key, id_max)) {
        set_err(st, st->line,
                "[%s] '%s': the key must be 1..%zu printable ASCII characters without spaces",
                sname, key, id_max);
        return -1;
    }
    if (*dup_line != 0) {
        set_err(st, st->line, "[%s] duplicate key '%s' (first on line %d)", sname, key, *dup_line);
        return -1;
    }
    if (count == count_max) {
        set_err(st, st->line, "[%s] more than %zu entries", sname, count_max);
        return -1;
    }
    ep_addr a;
    if (parse_endpoint(value, &a) != 0) {
        set_err(st, st->line, "[%s] %s: '%s' is not tcp://HOST:PORT or ipc://PATH", sname, key,
                value);
        return -1;
    }
    return 0;
}

static void add_node(load_state *st, const char *key, const char *value)
{
    region_cfg *c = &st->c;
    const region_node *dup = region_cfg_node(c, key);
    int dup_line = dup != NULL ? dup->line : 0;
    if (add_named_endpoint(st, SEC_NODES, key, value, ESC_NODE_ID_LEN_MAX, c->nnodes,
                           REGION_NODES_MAX, &dup_line) != 0) {
        return;
    }
    region_node *n = &c->nodes[c->nnodes++];
    memcpy(n->node_id, key, strlen(key) + 1);
    memcpy(n->endpoint, value, strlen(value) + 1);
    n->line = st->line;
}

static void add_peer(load_state *st, const char *key, const char *value)
{
    region_cfg *c = &st->c;
    const region_peer *dup = region_cfg_peer(c, key);
    int dup_line = dup != NULL ? dup->line : 0;
    if (add_named_endpoint(st, SEC_PEERS, key, value, REGION_NAME_LEN_MAX, c->npeers,
                           REGION_PEERS_MAX, &dup_line) != 0) {
        return;
    }
    region_peer *p = &c->peers[c->npeers++];
    memcpy(p->name, key, strlen(key) + 1);
    memcpy(p->coordinator, value, strlen(value) + 1);
    p->line = st->line;
}

static int find_section(const char *name, size_t len)
{
    for (int i = 0; i < SEC_COUNT_; i++) {
        if (strlen(sec_names[i]) == len && strncmp(sec_names[i], name, len) == 0) {
            return i;
        }
    }
    return -1;
}

/* inih's handler: one key of the most recent line read. Always returns 1
 * (go on), so inih's own return value names only syntax errors. */
static int on_key(void *arg, const char *section, const char *name, const char *value)
{
    load_state *st = arg;
    if (st->err_line >= 0) {
        return 1; /* only the first error is reported; read on for syntax */
    }
    int sec = find_section(section, strlen(section));
    if (section[0] == '\0') {
        set_err(st, st->line, "key '%s' is outside of any section", name);
    } else if (sec < 0) {
        set_err(st, st->line, "unknown section [%s]", section);
    } else if (sec == SEC_FLOORS) {
        add_floor(st, name, value);
    } else if (sec == SEC_NODES) {
        add_node(st, name, value);
    } else if (sec == SEC_PEERS) {
        add_peer(st, name, value);
    } else {
        set_scalar(st, sec, name, value);
    }
    return 1;
}

/* A section header on this line (as inih sees one: '[' after blanks, up to
 * the first ']'): unknown sections and repeated headers are errors. */
static void note_section(load_state *st, const char *line)
{
    if (st->line == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0) {
        line += 3; /* a UTF-8 byte order mark, which inih skips too */
    }
    line += strspn(line, " \t\r\f\v");
    const char *close = line[0] == '[' ? strchr(line, ']') : NULL;
    if (close == NULL) {
        return; /* not a header, or inih's syntax error */
    }
    size_t len = (size_t)(close - line - 1);
    int sec = find_section(line + 1, len);
    if (sec < 0) {
        set_err(st, st->line, "unknown section [%.*s]", (int)len, line + 1);
    } else if (st->sec_line[sec] != 0) {
        set_err(st, st->line, "section [%s] given twice (first on line %d)", sec_names[sec],
                st->sec_line[sec]);
    } else {
        st->sec_line[sec] = st->line;
    }
}

/* inih's reader (fgets-like): counts lines; a line longer than the buffer
 * is an error and reaches inih as an empty line. */
static char *read_line(char *buf, int cap, void *arg)
{
    load_state *st = arg;
    bool too_long;
    if (ini_line_read(buf, cap, st->f, REGION_LINE_LEN_MAX, &too_long) == NULL) {
        return NULL;
    }
    st->line++;
    if (too_long) {
        set_err(st, st->line, "line longer than %d bytes", REGION_LINE_LEN_MAX);
        return buf;
    }
    note_section(st, buf);
    return buf;
}

static bool host_wildcard(const char *h)
{
    return h[0] == '\0' || strcmp(h, "*") == 0 || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0;
}

static bool addr_overlap(const ep_addr *a, const ep_addr *b)
{
    if (a->ipc || b->ipc) {
        return a->ipc && b->ipc && strcmp(a->path, b->path) == 0;
    }
    if (a->port != b->port) {
        return false;
    }
    const char *ha = strcasecmp(a->host, "localhost") == 0 ? "127.0.0.1" : a->host;
    const char *hb = strcasecmp(b->host, "localhost") == 0 ? "127.0.0.1" : b->host;
    return host_wildcard(ha) || host_wildcard(hb) || strcasecmp(ha, hb) == 0;
}

/* Every endpoint of the file, with its label and line (all were parsed
 * successfully in the handler). Returns how many. */
static size_t collect_endpoints(const load_state *st, ep_use *u)
{
    const region_cfg *c = &st->c;
    size_t n = 0;
    for (size_t i = 0; i < KEY_DEFS_COUNT; i++) {
        const key_def *k = &key_defs[i];
        if (st->key_line[i] == 0 || (k->kind != KIND_ENDPOINT && k->kind != KIND_METRICS)) {
            continue;
        }
        u[n].endpoint = (const char *)c + k->off;
        u[n].line = st->key_line[i];
        snprintf(u[n].label, sizeof u[n].label, "%s", k->name);
        if (k->kind == KIND_ENDPOINT) {
            parse_endpoint(u[n].endpoint, &u[n].addr);
        } else {
            parse_metrics(u[n].endpoint, &u[n].addr);
        }
        n++;
    }
    for (size_t i = 0; i < c->nnodes; i++, n++) {
        u[n].endpoint = c->nodes[i].endpoint;
        u[n].line = c->nodes[i].line;
        snprintf(u[n].label, sizeof u[n].label, "[nodes] %s", c->nodes[i].node_id);
        parse_endpoint(u[n].endpoint, &u[n].addr);
    }
    for (size_t i = 0; i < c->npeers; i++, n++) {
        u[n].endpoint = c->peers[i].coordinator;
        u[n].line = c->peers[i].line;
        snprintf(u[n].label, sizeof u[n].label, "[peers] %s", c->peers[i].name);
        parse_endpoint(u[n].endpoint, &u[n].addr);
    }
    return n;
}

/* Two endpoints on one address: reported at the later line of the pair
 * that comes first in the file. */
static void check_overlaps(load_state *st)
{
    ep_use *u = st->uses;
    size_t n = collect_endpoints(st, u);
    const ep_use *later = NULL, *earlier = NULL;
    for (size_t j = 0; j < n; j++) {
        for (size_t i = 0; i < n; i++) {
            if (u[i].line >= u[j].line || !addr_overlap(&u[i].addr, &u[j].addr)) {
                continue;
            }
            if (later == NULL || u[j].line < later->line ||
                (u[j].line == later->line && u[i].line < earlier->line)) {
                later = &u[j];
                earlier = &u[i];
            }
        }
    }
    if (later == NULL) {
        return;
    }
    /* "[region] publish" / "[nodes] n2": the subject always names its section */
    char subject[sizeof later->label + 16];
    snprintf(subject, sizeof subject, "%s%s", later->label[0] == '[' ? "" : "[region] ",
             later->label);
    set_err(st, later->line, "%s: endpoint %s is already used by %s (line %d)", subject,
            later->endpoint, earlier->label, earlier->line);
}

/* What needs the whole file. */
static void check_whole(load_state *st)
{
    const region_cfg *c = &st->c;
    for (size_t i = 0; i < KEY_DEFS_COUNT; i++) {
        const key_def *k = &key_defs[i];
        if (k->required && st->key_line[i] == 0) {
            set_err(st, st->sec_line[k->sec], "[%s] missing key '%s'", sec_names[k->sec], k->name);
            return;
        }
    }
    if (c->lease_ms != 0 && c->heartbeat_ms != 0 && c->heartbeat_ms >= c->lease_ms) {
        set_err(st, st->key_line[key_index(SEC_COORDINATOR, "heartbeat_ms")],
                "[coordinator] heartbeat_ms: %" PRIu32 " must be below lease_ms (%" PRIu32 ")",
                c->heartbeat_ms, c->lease_ms);
        return;
    }
    for (size_t i = 0; i < c->npeers; i++) {
        if (strcmp(c->peers[i].name, c->name) == 0) {
            set_err(st, c->peers[i].line, "[peers] %s: a peer cannot have this region's name",
                    c->peers[i].name);
            return;
        }
    }
    check_overlaps(st);
}

static void set_defaults(region_cfg *c)
{
    c->collapse_pct = -1;
    c->low_water_pct = -1;
    c->share = 1;
    c->floor = 0;
    c->interval_ms = 1000;
    c->horizon_ms = 5000;
    c->quota_auto = true;
}

/* libinih's run-time options (Debian's build; see the file comment). */
static void ini_setup(void)
{
    ini_max_line = REGION_LINE_LEN_MAX + 3; /* "\r\n" and the terminating NUL */
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
        return -1;
    }
    if (rc < 0) {
        set_err(st, st->line, "out of memory");
        return -1;
    }
    if (rc > 0 && (st->err_line < 0 || rc < st->err_line)) {
        st->err_line = -1;
        set_err(st, rc, "syntax error");
    }
    if (st->err_line < 0) {
        check_whole(st);
    }
    return st->err_line < 0 ? 0 : -1;
}

int region_cfg_load(const char *path, region_cfg *out, char *err, size_t errlen)
{
    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof out->path) {
        snprintf(err, errlen, "%s: the path must be 1..%zu bytes", path != NULL ? path : "(null)",
                 sizeof out->path - 1);
        return -1;
    }
    load_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    st->path = path;
    st->err_line = -1;
    set_defaults(&st->c);
    memcpy(st->c.path, path, strlen(path) + 1);
    st->f = fopen(path, "r");
    if (st->f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        free(st);
        return -1;
    }
    int rc = parse_file(st);
    fclose(st->f);
    if (rc == 0) {
        memcpy(out, &st->c, sizeof *out);
    } else {
        snprintf(err, errlen, "%s", st->err);
    }
    free(st);
    return rc;
}

int64_t region_cfg_floor(const region_cfg *c, const char *tenant_id, const char *item_id)
{
    for (size_t i = 0; i < c->nfloors; i++) {
        if (strcmp(c->floors[i].tenant_id, tenant_id) == 0 &&
            strcmp(c->floors[i].item_id, item_id) == 0) {
            return c->floors[i].units;
        }
    }
    return c->floor;
}

const region_node *region_cfg_node(const region_cfg *c, const char *node_id)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        if (strcmp(c->nodes[i].node_id, node_id) == 0) {
            return &c->nodes[i];
        }
    }
    return NULL;
}

const region_peer *region_cfg_peer(const region_cfg *c, const char *name)
{
    for (size_t i = 0; i < c->npeers; i++) {
        if (strcmp(c->peers[i].name, name) == 0) {
            return &c->peers[i];
        }
    }
    return NULL;
}
