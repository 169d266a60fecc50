/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_config.c - see gw_config.h. The file and the flags go through
 * config.h, as the other daemons' do: one setter (gw_config_set_opt) for
 * both.
 */
#include "gw_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esc_assert.h"
#include "escrow_errors.h"

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
        return errf(err, errlen, "must be a number in %u..%u, not '%s'", k->lo, k->hi, value);
    }
    *(uint32_t *)field = (uint32_t)v;
    return 0;
}

/* Sets k to value; on error a sentence without the key in why. */
static int set_key(gw_config *c, const key_def *k, const char *value, char *why, size_t why_len)
{
    void *field = (char *)c + k->off;
    switch (k->kind) {
    case K_STR:
        if (strlen(value) >= k->cap) {
            return errf(why, why_len, "longer than %zu bytes", k->cap - 1);
        }
        memcpy(field, value, strlen(value) + 1);
        return 0;
    case K_ONOFF:
        return config_parse_onoff(value, field, why, why_len) == 0 ? 0 : ESC_EINVAL;
    case K_LOG:
        return config_parse_log_level(value, field, why, why_len) == 0 ? 0 : ESC_EINVAL;
    default:
        return set_u32(k, field, value, why, why_len);
    }
}

int gw_config_set(gw_config *c, const char *key, const char *value, char *err, size_t errlen)
{
    const key_def *k = find_key(key);
    if (k == NULL) {
        return errf(err, errlen, "unknown key '%s'", key);
    }
    char why[GW_ERR_LEN / 2];
    if (set_key(c, k, value, why, sizeof why) != 0) {
        return errf(err, errlen, "%s: %s", key, why);
    }
    return 0;
}

/* The flags, each a key of [gateway] with '_' for '-' (config.h): getopt
 * values 1.. (none of config.h's own). */
static const struct option opts[] = {{"dsn", required_argument, NULL, 1},
                                     {"coordinator", required_argument, NULL, 2},
                                     {"routes", required_argument, NULL, 3},
                                     {"listen", required_argument, NULL, 4},
                                     {"tls-cert", required_argument, NULL, 5},
                                     {"tls-key", required_argument, NULL, 6},
                                     {"plain-http", required_argument, NULL, 7},
                                     {"metrics", required_argument, NULL, 8},
                                     {"deadline-ms", required_argument, NULL, 9},
                                     {"connections-max", required_argument, NULL, 10},
                                     {"body-bytes-max", required_argument, NULL, 11},
                                     {"rate-tenant", required_argument, NULL, 12},
                                     {"streams-max", required_argument, NULL, 13},
                                     {"clients-max", required_argument, NULL, 14},
                                     {"log-level", required_argument, NULL, 15},
                                     {"config", required_argument, NULL, CONFIG_OPT_FILE},
                                     {"help", no_argument, NULL, CONFIG_OPT_HELP},
                                     {"version", no_argument, NULL, CONFIG_OPT_VERSION},
                                     {NULL, 0, NULL, 0}};

static const char *const not_keys[] = {"config", NULL};
static const config_spec spec = {"gateway", opts, not_keys, NULL};

const config_spec *gw_config_spec(void)
{
    return &spec;
}

int gw_config_set_opt(void *arg, int opt, const char *value, char *why, size_t why_len)
{
    for (size_t i = 0; opts[i].name != NULL; i++) {
        if (opts[i].val == opt && opt != CONFIG_OPT_FILE) {
            char key[32];
            snprintf(key, sizeof key, "%s", opts[i].name);
            for (char *p = key; *p != '\0'; p++) {
                *p = *p == '-' ? '_' : *p;
            }
            const key_def *k = find_key(key);
            ESC_ASSERT(k != NULL);
            return set_key(arg, k, value, why, why_len) == 0 ? 0 : -1;
        }
    }
    snprintf(why, why_len, "not a setting");
    return -1;
}

int gw_config_load(const char *path, gw_config *c, const bool *given, char *err, size_t errlen)
{
    return config_load(&spec, path, given, gw_config_set_opt, c, err, errlen);
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
