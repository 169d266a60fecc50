/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow-gateway.c - the escrow-gateway daemon's main: reads the settings
 * (flags over the INI file of --config over the defaults; gw_config.h),
 * checks them, and hands the gateway to the daemon skeleton (daemon.h).
 * Exit codes: 0 clean stop, 1 failure, 2 bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_info.h"
#include "config.h"
#include "daemon.h"
#include "gw.h"
#include "log.h"
#include "ratelim.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: escrow-gateway --coordinator URL [--routes URL] [--dsn DSN]\n"
            "                      [--listen HOST:PORT] --tls-cert FILE --tls-key FILE\n"
            "                      [--plain-http on|off] [--metrics [HOST:]PORT]\n"
            "                      [--deadline-ms 5000] [--connections-max 1024]\n"
            "                      [--body-bytes-max 65536] [--rate-tenant N[:BURST]]\n"
            "                      [--streams-max 64] [--clients-max 256]\n"
            "                      [--log-level error|warn|info|debug]\n"
            "       escrow-gateway --config FILE [any flag above, which overrides the file]\n"
            "       escrow-gateway --version | --help\n"
            "\n"
            "An HTTPS + JSON door to escrow for checkout code in any language: reserve,\n"
            "confirm, release, extend, get and carts with Idempotency-Key, the event feed\n"
            "as Server-Sent Events, the OpenAPI document at /v1/openapi.json. Requests carry\n"
            "Authorization: Bearer <a shop's key> (escrowctl key create); the gateway checks\n"
            "it and calls the cluster with it (libescrow, routing mode).\n"
            "  --config           INI file, section [gateway], one key per flag (tls_cert for\n"
            "                     --tls-cert ...); flags override it\n"
            "  --coordinator      the coordinator's request endpoint (its --listen URL)\n"
            "  --routes           the coordinator's routing PUB endpoint (its --publish URL):\n"
            "                     routing changes and sold-out flags are pushed (recommended)\n"
            "  --dsn              PostgreSQL connection string: the keys and the event feed\n"
            "                     (default: $ESCROW_DSN)\n"
            "  --listen           address to serve on: HOST:PORT, [IPV6]:PORT, or PORT on\n"
            "                     127.0.0.1 (default 127.0.0.1:8443, plain HTTP\n"
            "                     127.0.0.1:8080); 0.0.0.0:PORT serves every interface\n"
            "  --tls-cert         PEM certificate (chain) for HTTPS\n"
            "  --tls-key          PEM private key of the certificate\n"
            "  --plain-http       on: serve HTTP without TLS (for a local proxy that\n"
            "                     terminates TLS; excludes --tls-cert and --tls-key); off\n"
            "                     (default)\n"
            "  --metrics          serve Prometheus metrics over HTTP at http://HOST:PORT/metrics\n"
            "                     (a bare PORT listens on every interface; off when not given)\n"
            "  --deadline-ms      how long one call to the cluster may take (100..600000);\n"
            "                     past it the answer is 504 timed_out: retry with the same key\n"
            "  --connections-max  open HTTP connections at most (1..65536)\n"
            "  --body-bytes-max   request body at most, in bytes (256..1048576); more is 413\n"
            "  --rate-tenant      requests per second per tenant (token bucket, burst BURST,\n"
            "                     default one second's worth); over it: 429. 0 = off (default)\n"
            "  --streams-max      event streams (GET /v1/events) at once, a thread each\n"
            "                     (0..1024)\n"
            "  --clients-max      tenant keys with a cluster client at once (1..4096)\n"
            "  --log-level        error, warn, info (default) or debug\n"
            "  --version          print the version and the git commit, and exit\n"
            "Environment: ESCROW_GATEWAY_RECORD=FILE appends every answer to FILE as a JSON\n"
            "line (the test suite validates them against the OpenAPI document).\n");
}

/* Defaults, $ESCROW_DSN, the flags, the file (config.h: the keys the flags
 * did not set), the checks. Returns 0, 2 (bad usage, after a message on
 * stderr) or -1 (--help or --version printed: exit 0). */
static int configure(int argc, char **argv, gw_config *cfg)
{
    static bool given[CONFIG_OPTS_MAX];
    const char *file = NULL;
    bool check_only = false, show_usage = false;
    gw_config_defaults(cfg);
    const char *env_dsn = getenv("ESCROW_DSN");
    char err[GW_ERR_LEN];
    if (env_dsn != NULL && gw_config_set(cfg, "dsn", env_dsn, err, sizeof err) != 0) {
        fprintf(stderr, "escrow-gateway: $ESCROW_DSN: %s\n", err);
        return 2;
    }
    const config_argv_out out = {given, &file, &check_only, &show_usage};
    int rc =
        config_argv(gw_config_spec(), argc, argv, gw_config_set_opt, cfg, &out, err, sizeof err);
    if (rc == CONFIG_ARGV_HELP) {
        usage(stdout);
        return -1;
    }
    if (rc == CONFIG_ARGV_VERSION) {
        build_info_print(stdout, "escrow-gateway");
        return -1;
    }
    if (rc == 0 && file != NULL) {
        rc = gw_config_load(file, cfg, given, err, sizeof err);
    }
    if (rc != 0) {
        fprintf(stderr, "escrow-gateway: %s\n", err);
        if (show_usage) {
            usage(stderr);
        }
        return 2;
    }
    uint32_t rate, burst;
    if (ratelim_parse(cfg->rate_tenant, &rate, &burst) != 0) {
        fprintf(stderr,
                "escrow-gateway: rate_tenant takes RATE or RATE:BURST (0..1000000 "
                "each), not '%s'\n",
                cfg->rate_tenant);
        return 2;
    }
    if (gw_config_check(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "escrow-gateway: %s\n", err);
        return 2;
    }
    if (cfg->log_level >= 0) {
        esc_log_set_level(cfg->log_level);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static gw_config cfg; /* the gateway borrows it until exit */
    int rc = configure(argc, argv, &cfg);
    if (rc != 0) {
        return rc < 0 ? 0 : rc;
    }
    static gw g;
    static const daemon_ops ops = {.name = "escrow-gateway",
                                   .stop_log_id = "GW-STOP",
                                   .stop_note = "no new connections; answering the requests in "
                                                "flight, ending event streams",
                                   .abort_note = "requests in flight are cut off: clients retry "
                                                 "with the same Idempotency-Key",
                                   .start = gw_start,
                                   .stop = gw_stop,
                                   .stopping = gw_stopping,
                                   .ready = gw_ready,
                                   .fini = gw_fini,
                                   .exit_code = gw_exit_code};
    return daemon_run(&ops, &g, &cfg);
}
