/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_config.c - see gw_config.h. libinih reads the file through a reader
 * of ours that counts lines (Debian builds libinih without
 * INI_HANDLER_LINENO; inih calls the handler for the line it read last),
 * as common/region_cfg.c does.
 */
#include "gw_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "escrow_errors.h"
#include "log.h"

enum key_kind { K_STR, K_ONOFF, K_U32, K_LOG };

typedef struct key_def {
    const char *name;
    enum key_kind kind;
    size_t off, cap; /* offsetof / sizeof the field */
    uint32_t lo, hi; /* K_U32 */
} key_def;

#define STR(name)                                                                                  \
    {                                                                                              \
#name, K_STR, offsetof(gw_config, name), sizeof(((gw_config *)0)->name), 0, 0              \
    }
#define U32(name, lo, hi)                                                                          \
    {                                                                                              \
#name, K_U32, offsetof(gw_config, name), sizeof(uint32_t), lo, hi                          \
    }

static const key_def keys[] = {
    STR(dsn),
    STR(coordinator),
    STR(routes),
    STR(listen),
    STR(tls_cert),
    STR(tls_key),
    {"plain_http", K_ONOFF, offsetof(gw_config, plain_http), sizeof(bool), 0, 0},
    STR(metrics),
    U32(deadline_ms, 100, ESC_DEADLINE_MS_MAX),
    U32(connections_max, 1, 65536),
    U32(body_bytes_max, 256, 1048576),
    STR(rate_tenant),
    U32(streams_max, 0, 1024),
    U32(clients_max, 1, 4096),
    {"log_level", K_LOG, offsetof(gw_config, log_level), sizeof(int), 0, 0},
};
#define NKEYS (sizeof keys / sizeof keys[0])

static int errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return ESC_EINVAL;
}

void gw_config_defaults(gw_config *c)
{
    memset(c, 0, sizeof *c);
    c->deadline_ms = 5000;
    c->connections_max = 1024;
    c->body_bytes_max = 65536;
    snprintf(c->rate_tenant, sizeof c->rate_tenant, "0");
    c->streams_max = 64;
    c->clients_max = 256;
    c->log_level = -1;
}

static const key_def *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (strcmp(keys[i].name, name) == 0) {
            return &keys[i];
        }
    }
    return NULL;
}

static int set_u32(const key_def *k, void *field, const char *value, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || v < k->lo || v > k->hi) {
        return errf(err, errlen, "%s: must be a number in %u..%u, not '%s'", k->name, k->lo, k->hi,
                    value);
    }
    *(uint32_t *)field = (uint32_t)v;
    return 0;
}

int gw_config_set(gw_config *c, const char *key, const char *value, char *err, size_t errlen)
{
    const key_def *k = find_key(key);
    if (k == NULL) {
        return errf(err, errlen, "unknown key '%s'", key);
    }
    void *field = (char *)c + k->off;
    switch (k->kind) {
    case K_STR:
        if (strlen(value) >= k->cap) {
            return errf(err, errlen, "%s: longer than %zu bytes", k->name, k->cap - 1);
        }
        memcpy(field, value, strlen(value) + 1);
        return 0;
    case K_ONOFF:
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0) {
            return errf(err, errlen, "%s: takes on or off, not '%s'", k->name, value);
        }
        *(bool *)field = strcmp(value, "on") == 0;
        return 0;
    case K_LOG:
        if (esc_log_level_parse(value) < 0) {
            return errf(err, errlen, "%s: takes error, warn, info or debug, not '%s'", k->name,
                        value);
        }
        *(int *)field = esc_log_level_parse(value);
        return 0;
    default:
        return set_u32(k, field, value, err, errlen);
    }
}

typedef struct load_state {
    FILE *f;
    const char *path;
    gw_config *c;
    bool (*skip)(const char *key, void *arg);
    void *skip_arg;
    int line;
    int err_line; /* first error's line; 0 = none */
    char err[GW_ERR_LEN];
    int key_line[NKEYS];
} load_state;

static void fail_at(load_state *st, const char *msg)
{
    if (st->err_line == 0) {
        st->err_line = st->line;
        snprintf(st->err, sizeof st->err, "%s", msg);
    }
}

static int on_key(void *arg, const char *section, const char *name, const char *value)
{
    load_state *st = arg;
    char msg[GW_ERR_LEN];
    const key_def *k = find_key(name);
    if (strcmp(section, "gateway") != 0) {
        snprintf(msg, sizeof msg,
                 section[0] ? "unknown section [%s]" : "key '%s' is outside of [gateway]",
                 section[0] ? section : name);
    } else if (k == NULL) {
        snprintf(msg, sizeof msg, "[gateway] unknown key '%s'", name);
    } else if (st->key_line[k - keys] != 0) {
        snprintf(msg, sizeof msg, "[gateway] %s given twice (first on line %d)", name,
                 st->key_line[k - keys]);
    } else {
        st->key_line[k - keys] = st->line;
        char why[GW_ERR_LEN - 16];
        if (st->skip != NULL && st->skip(name, st->skip_arg)) {
            return 1;
        }
        if (gw_config_set(st->c, name, value, why, sizeof why) == 0) {
            return 1;
        }
        snprintf(msg, sizeof msg, "[gateway] %s", why);
    }
    fail_at(st, msg);
    return 1;
}

static char *read_line(char *buf, int cap, void *arg)
{
    load_state *st = arg;
    if (fgets(buf, cap, st->f) == NULL) {
        return NULL;
    }
    st->line++;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] != '\n' && !feof(st->f)) {
        int ch;
        while ((ch = fgetc(st->f)) != EOF && ch != '\n') {
        }
        char msg[64];
        snprintf(msg, sizeof msg, "line longer than %d bytes", GW_LINE_LEN_MAX);
        fail_at(st, msg);
        buf[0] = '\0';
    }
    return buf;
}

int gw_config_load(const char *path, gw_config *c, bool (*skip)(const char *key, void *arg),
                   void *arg, char *err, size_t errlen)
{
    static load_state st; /* large; the daemon loads once, before any thread */
    memset(&st, 0, sizeof st);
    st.f = fopen(path, "r");
    if (st.f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    st.path = path;
    st.c = c;
    st.skip = skip;
    st.skip_arg = arg;
    ini_max_line = GW_LINE_LEN_MAX + 3;
    ini_use_stack = true;
    ini_allow_multiline = false;
    ini_allow_inline_comments = true;
    ini_allow_no_value = false;
    ini_stop_on_first_error = false;
    int rc = ini_parse_stream(read_line, &st, on_key, &st);
    bool bad_read = ferror(st.f) != 0;
    fclose(st.f);
    if (bad_read) {
        snprintf(err, errlen, "%s: cannot read", path);
        return -1;
    }
    if (rc > 0 && (st.err_line == 0 || rc < st.err_line)) {
        st.err_line = rc;
        snprintf(st.err, sizeof st.err, "syntax error");
    }
    if (rc < 0 || st.err_line != 0) {
        snprintf(err, errlen, "%s:%d: %s", path, rc < 0 ? 0 : st.err_line,
                 rc < 0 ? "out of memory" : st.err);
        return -1;
    }
    return 0;
}

/* "HOST:PORT", "[V6]:PORT" or "PORT" (127.0.0.1). */
static int parse_listen(const char *s, char *host, size_t host_cap, uint16_t *port)
{
    const char *p;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':') {
            return ESC_EINVAL;
        }
        hlen = (size_t)(close - s - 1);
        p = close + 2;
        s++;
    } else if ((p = strrchr(s, ':')) != NULL) {
        hlen = (size_t)(p - s);
        p++;
    } else {
        hlen = 0;
        p = s;
    }
    char *end;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (p[0] < '0' || p[0] > '9' || *end != '\0' || errno != 0 || v > 65535 ||
        hlen + 1 > host_cap || (hlen == 0 && s[0] != '\0' && p != s)) {
        return ESC_EINVAL;
    }
    if (hlen == 0) {
        snprintf(host, host_cap, "127.0.0.1");
    } else {
        memcpy(host, s, hlen);
        host[hlen] = '\0';
    }
    *port = (uint16_t)v;
    return 0;
}

int gw_config_listen(const gw_config *c, char *host, size_t host_cap, uint16_t *port)
{
    const char *s = c->listen[0] != '\0' ? c->listen
                    : c->plain_http      ? GW_LISTEN_DEFAULT_PLAIN
                                         : GW_LISTEN_DEFAULT_TLS;
    return parse_listen(s, host, host_cap, port);
}

int gw_config_check(const gw_config *c, char *err, size_t errlen)
{
    char host[ESC_ENDPOINT_LEN_MAX + 1];
    uint16_t port;
    if (c->dsn[0] == '\0') {
        errf(err, errlen,
             "a DSN is required (--dsn, dsn = in the file, or $ESCROW_DSN): the "
             "gateway reads the tenants' keys and the event feed there");
    } else if (c->coordinator[0] == '\0') {
        errf(err, errlen, "the coordinator is required (--coordinator URL)");
    } else if (c->plain_http && (c->tls_cert[0] != '\0' || c->tls_key[0] != '\0')) {
        errf(err, errlen, "--plain-http on excludes --tls-cert and --tls-key");
    } else if (!c->plain_http && (c->tls_cert[0] == '\0' || c->tls_key[0] == '\0')) {
        errf(err, errlen,
             "HTTPS needs --tls-cert and --tls-key (plain HTTP only with "
             "--plain-http on)");
    } else if (gw_config_listen(c, host, sizeof host, &port) != 0) {
        errf(err, errlen, "--listen takes HOST:PORT, [IPV6]:PORT or PORT, not '%s'", c->listen);
    } else {
        return 0;
    }
    return -1;
}
