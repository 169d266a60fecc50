/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_config.h - escrow-gateway's settings: defaults, one key at a time
 * (a command-line flag and an INI key are the same setting: --tls-cert and
 * tls_cert), the INI file (section [gateway], read by config.h as the
 * other daemons' files are), and the checks that need them all. Reads the
 * file and nothing else: no sockets, no loop. Errors are one line: "gw.ini:7: [gateway] unknown key
 * 'lisen'",
 * "--deadline-ms: must be a number in 100..600000, not 'x'".
 *
 *   [gateway]
 *   dsn             = host=... dbname=escrow   ; required: credentials and the event feed
 *   coordinator     = tcp://127.0.0.1:7000     ; required: libescrow's routing mode
 *   routes          = tcp://127.0.0.1:7001     ; optional: the coordinator's PUB endpoint
 *   listen          = 127.0.0.1:8443           ; HOST:PORT, [IPV6]:PORT or PORT (loopback)
 *   tls_cert        = /etc/escrow/gw.crt       ; PEM certificate (chain)
 *   tls_key         = /etc/escrow/gw.key       ; PEM private key
 *   plain_http      = off                      ; on: HTTP without TLS (excludes tls_*)
 *   metrics         = 127.0.0.1:9102           ; optional: Prometheus /metrics
 *   deadline_ms     = 5000                     ; per call to the cluster
 *   connections_max = 1024                     ; open HTTP connections
 *   body_bytes_max  = 65536                    ; request body
 *   rate_tenant     = 0                        ; requests/s per tenant, N[:BURST]; 0 = off
 *   streams_max     = 64                       ; event streams at once (a thread each)
 *   clients_max     = 256                      ; tenant keys with a cluster client at once
 *   log_level       = info                     ; error|warn|info|debug
 */
#ifndef ESC_GW_CONFIG_H
#define ESC_GW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "esc_limits.h"

#define GW_PATH_LEN_MAX 1024
#define GW_DSN_LEN_MAX 1024
#define GW_ERR_LEN 512
/* Bytes per line of the INI file (a dsn and its key fit). */
#define GW_LINE_LEN_MAX CONFIG_LINE_LEN_MAX
#define GW_LISTEN_DEFAULT_TLS "127.0.0.1:8443"
#define GW_LISTEN_DEFAULT_PLAIN "127.0.0.1:8080"

typedef struct gw_config {
    char dsn[GW_DSN_LEN_MAX + 1];
    char coordinator[ESC_ENDPOINT_LEN_MAX + 1];
    char routes[ESC_ENDPOINT_LEN_MAX + 1]; /* "" = none */
    char listen[ESC_ENDPOINT_LEN_MAX + 1]; /* "" = the default for the mode */
    char tls_cert[GW_PATH_LEN_MAX + 1];
    char tls_key[GW_PATH_LEN_MAX + 1];
    bool plain_http;
    char metrics[ESC_ENDPOINT_LEN_MAX + 1]; /* "" = off */
    uint32_t deadline_ms;                   /* 100..600000 */
    uint32_t connections_max;               /* 1..65536 */
    uint32_t body_bytes_max;                /* 256..1048576 */
    char rate_tenant[32];                   /* "N[:BURST]" (ratelim_parse); "0" = off */
    uint32_t streams_max;                   /* 0..1024; 0 = no event streams */
    uint32_t clients_max;                   /* 1..4096 */
    int log_level;                          /* ESC_LOG_*; -1 = not set */
} gw_config;

void gw_config_defaults(gw_config *c);

/* Sets one key ("tls_cert"; a flag's name with '-' as '_'). Returns 0, or
 * ESC_EINVAL with a sentence in err ("KEY: ..."); unknown keys too. */
int gw_config_set(gw_config *c, const char *key, const char *value, char *err, size_t errlen);

/* The gateway's flags as a config.h spec: the getopt table (every flag that
 * takes a value is a key of [gateway], "tls-cert" as tls_cert; --config,
 * --help and --version are config.h's) and its setter (a config_set_fn;
 * arg is the gw_config). config_argv parses the command line with them. */
const config_spec *gw_config_spec(void);
int gw_config_set_opt(void *arg, int opt, const char *value, char *why, size_t why_len);

/* Reads path's [gateway] section into c (config_load); keys whose flag is
 * given[its getopt value] are left alone (the command line set them; given
 * may be NULL). Returns 0, or -1 with "PATH:LINE: ..." in err (an unknown
 * section or key, a key given twice, a value out of range, a line too
 * long, a file that cannot be read). */
int gw_config_load(const char *path, gw_config *c, const bool *given, char *err, size_t errlen);

/* What needs every setting: dsn and coordinator given; tls_cert and
 * tls_key both, unless plain_http (which excludes them); listen parses.
 * Returns 0 or -1 with a sentence in err. */
int gw_config_check(const gw_config *c, char *err, size_t errlen);

/* The address to listen on: c->listen, or the mode's default. HOST ""
 * never happens: a bare PORT means 127.0.0.1. Returns 0 or ESC_EINVAL. */
int gw_config_listen(const gw_config *c, char *host, size_t host_cap, uint16_t *port);

#endif
