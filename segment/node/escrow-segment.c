/*
 * escrow-segment.c - the escrow-segment daemon's main: parses argv (and
 * the region file of --config) into a node_config, checks it, and hands a
 * node to the daemon skeleton (daemon.h), which runs it on a libuv loop
 * until a clean stop. Exit codes: 0 clean stop, 1 failure, 2 bad usage,
 * 99 a failpoint fired (failpoint.h).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth_guard.h"
#include "clock.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "failpoint.h"
#include "log.h"
#include "metrics_http.h"
#include "node.h"
#include "region_cfg.h"
#include "wire.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: escrow-segment --node-id ID --listen URL [--listen URL ...] [--dsn DSN]\n"
            "                      [--coordinator URL [--advertise URL]]\n"
            "                      [--log-level error|warn|info|debug] [--sweep-ms MS]\n"
            "                      [--metrics [HOST:]PORT]\n"
            "                      [--auth on|off] [--cluster-key FILE] [--auth-window-ms MS]\n"
            "                      [--rate-tenant N[:BURST]] [--rate-buyer N[:BURST]]\n"
            "       escrow-segment --config FILE --node-id ID [--advertise URL]\n"
            "                      [--log-level error|warn|info|debug] [--sweep-ms MS]\n"
            "                      [--metrics [HOST:]PORT]\n"
            "\n"
            "Static mode (no --coordinator): serves the escrow segments assigned to node ID\n"
            "in PostgreSQL; taking them raises their epoch, which fences any previous owner.\n"
            "Managed mode: heartbeats the coordinator and serves the segments it assigns.\n"
            "  --config       the region's INI file (examples/regions/eu.ini): the dsn and\n"
            "                 the coordinator from [region], listen = advertise = the node's\n"
            "                 endpoint in [nodes]; excludes --dsn, --listen, --coordinator\n"
            "  --dsn          PostgreSQL connection string (default: $ESCROW_DSN)\n"
            "  --listen       nanomsg endpoint, e.g. tcp://127.0.0.1:7101 or ipc:///tmp/esc.sock\n"
            "  --coordinator  the coordinator's heartbeat endpoint (its --listen URL)\n"
            "  --advertise    the endpoint clients use to reach this node (default: the first\n"
            "                 --listen)\n"
            "  --sweep-ms     expiry sweeper period (default 50)\n"
            "  --metrics      serve Prometheus metrics over HTTP at http://HOST:PORT/metrics\n"
            "                 (e.g. 9101 = 127.0.0.1:9101, the default host; 0.0.0.0:9101\n"
            "                 listens on every interface; off when not given)\n"
            "  --auth         on: every request needs a valid signature (tenant key for its\n"
            "                 own tenant, admin key for operator release); off (default): none\n"
            "  --auth-window-ms  a signed frame is accepted this long before or after this\n"
            "                 node's clock (default 30000, 1000..600000)\n"
            "  --cluster-key  file with the cluster key the heartbeats carry (default:\n"
            "                 $ESCROW_CLUSTER_KEY); needed in managed mode when the\n"
            "                 coordinator runs with --auth on\n"
            "  --rate-tenant  requests per second per tenant (token bucket, burst BURST,\n"
            "                 default one second's worth); over it: BUSY. 0 = off (default)\n"
            "  --rate-buyer   reserves per second per buyer of a tenant; 0 = off (default)\n");
}

/* A random number per process start: a restarted node is a new incarnation
 * and never inherits the epochs its previous process was granted. */
static uint64_t new_incarnation(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) {
            v = 0;
        }
        close(fd);
    }
    if (v == 0) {
        v = (uint64_t)esc_wall_ms() * 1000003u ^ (uint64_t)getpid() ^ (uint64_t)esc_mono_us();
    }
    return v ? v : 1;
}

/* --config FILE --node-id ID: the dsn, the coordinator (managed mode) and
 * the node's endpoint (listen, and advertise unless --advertise) from the
 * region file. Returns 0, or -1 after a message on stderr (nothing was
 * opened but the file). */
static int apply_config(const char *path, node_config *cfg)
{
    static region_cfg region; /* large; cfg borrows its strings until exit */
    char err[REGION_ERR_LEN];
    if (region_cfg_load(path, &region, err, sizeof err) != 0) {
        fprintf(stderr, "escrow-segment: %s\n", err);
        return -1;
    }
    if (cfg->node_id == NULL) {
        fprintf(stderr, "escrow-segment: --config needs --node-id ID (a key of [nodes] in %s)\n",
                path);
        return -1;
    }
    const region_node *n = region_cfg_node(&region, cfg->node_id);
    if (n == NULL) {
        fprintf(stderr, "escrow-segment: %s: no node '%s' in [nodes]\n", path, cfg->node_id);
        return -1;
    }
    cfg->dsn = region.dsn;
    cfg->coordinator = region.coordinator;
    cfg->listen[0] = n->endpoint;
    cfg->nlisten = 1;
    if (cfg->advertise == NULL) {
        cfg->advertise = n->endpoint;
    }
    return 0;
}

/* What the command line gave besides the node_config fields. */
typedef struct cli_given {
    const char *config;           /* --config FILE */
    const char *cluster_key_file; /* --cluster-key FILE */
    bool targets;                 /* --dsn, --listen or --coordinator: not with --config */
} cli_given;

/* The options that take a checked value. Returns 0, or -1 after a message. */
static int parse_value(int c, const char *arg, node_config *cfg)
{
    switch (c) {
    case 'A':
        if (auth_parse_onoff(arg, &cfg->auth) != 0) {
            fprintf(stderr, "escrow-segment: --auth takes on or off\n");
            return -1;
        }
        return 0;
    case 'W':
        if (auth_parse_window(arg, &cfg->auth_window_ms) != 0) {
            fprintf(stderr, "escrow-segment: --auth-window-ms takes 1000..600000\n");
            return -1;
        }
        return 0;
    case 'T':
    case 'B':
        if (ratelim_parse(arg, c == 'T' ? &cfg->rate_tenant : &cfg->rate_buyer,
                          c == 'T' ? &cfg->rate_tenant_burst : &cfg->rate_buyer_burst) != 0) {
            fprintf(stderr, "escrow-segment: --rate-%s takes N or N:BURST (0..1000000)\n",
                    c == 'T' ? "tenant" : "buyer");
            return -1;
        }
        return 0;
    case 'm': {
        char host[METRICS_HTTP_ADDR_LEN_MAX + 1];
        uint16_t port;
        if (metrics_http_parse(arg, host, sizeof host, &port) != 0) {
            fprintf(stderr,
                    "escrow-segment: --metrics takes PORT, HOST:PORT or [IPV6]:PORT, not '%s'\n",
                    arg);
            return -1;
        }
        cfg->metrics = arg;
        return 0;
    }
    case 'v':
        if (esc_log_level_parse(arg) < 0) {
            fprintf(stderr, "escrow-segment: unknown log level '%s'\n", arg);
            return -1;
        }
        esc_log_set_level(esc_log_level_parse(arg));
        return 0;
    default: { /* 's' */
        char *end;
        long v = strtol(arg, &end, 10);
        if (*end != '\0' || v < 1 || v > 10000) {
            fprintf(stderr, "escrow-segment: --sweep-ms must be 1..10000\n");
            return -1;
        }
        cfg->sweep_ms = (uint32_t)v;
        return 0;
    }
    }
}

/* Returns 0, 1 after --help, or -1 after a message (usage printed when the
 * option itself was not understood). */
static int parse_args(int argc, char **argv, node_config *cfg, cli_given *g)
{
    static const struct option opts[] = {{"node-id", required_argument, NULL, 'n'},
                                         {"listen", required_argument, NULL, 'l'},
                                         {"dsn", required_argument, NULL, 'd'},
                                         {"log-level", required_argument, NULL, 'v'},
                                         {"sweep-ms", required_argument, NULL, 's'},
                                         {"coordinator", required_argument, NULL, 'c'},
                                         {"advertise", required_argument, NULL, 'a'},
                                         {"metrics", required_argument, NULL, 'm'},
                                         {"config", required_argument, NULL, 'F'},
                                         {"auth", required_argument, NULL, 'A'},
                                         {"cluster-key", required_argument, NULL, 'K'},
                                         {"auth-window-ms", required_argument, NULL, 'W'},
                                         {"rate-tenant", required_argument, NULL, 'T'},
                                         {"rate-buyer", required_argument, NULL, 'B'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        g->targets = g->targets || c == 'd' || c == 'l' || c == 'c';
        switch (c) {
        case 'n':
            cfg->node_id = optarg;
            break;
        case 'l':
            if (cfg->nlisten == NODE_LISTEN_MAX) {
                fprintf(stderr, "escrow-segment: at most %d --listen endpoints\n", NODE_LISTEN_MAX);
                return -1;
            }
            cfg->listen[cfg->nlisten++] = optarg;
            break;
        case 'd':
            cfg->dsn = optarg;
            break;
        case 'c':
            cfg->coordinator = optarg;
            break;
        case 'a':
            cfg->advertise = optarg;
            break;
        case 'F':
            g->config = optarg;
            break;
        case 'K':
            g->cluster_key_file = optarg;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case 'A':
        case 'W':
        case 'T':
        case 'B':
        case 'm':
        case 'v':
        case 's':
            if (parse_value(c, optarg, cfg) != 0) {
                return -1;
            }
            break;
        default:
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* Returns 0, or -1 after a message (and the usage where it helps). */
static int check_args(int argc, const cli_given *g, node_config *cfg)
{
    if (g->config != NULL && g->targets) {
        fprintf(stderr, "escrow-segment: --config excludes --dsn, --listen and --coordinator "
                        "(the file names them)\n");
        usage(stderr);
        return -1;
    }
    if (g->config != NULL && apply_config(g->config, cfg) != 0) {
        return -1;
    }
    if (cfg->node_id == NULL || !wire_id_valid(cfg->node_id, ESC_TENANT_LEN_MAX) ||
        cfg->nlisten == 0 || cfg->dsn == NULL || optind != argc) {
        fprintf(stderr, "escrow-segment: --node-id (printable, <= 64 bytes), --listen and a DSN "
                        "(--dsn or $ESCROW_DSN) are required\n");
        usage(stderr);
        return -1;
    }
    if ((cfg->advertise != NULL && cfg->coordinator == NULL) ||
        (cfg->advertise != NULL &&
         (cfg->advertise[0] == '\0' || strlen(cfg->advertise) > ESC_ENDPOINT_LEN_MAX)) ||
        (cfg->coordinator != NULL && cfg->coordinator[0] == '\0') ||
        (cfg->coordinator != NULL && cfg->advertise == NULL &&
         strlen(cfg->listen[0]) > ESC_ENDPOINT_LEN_MAX)) {
        fprintf(stderr,
                "escrow-segment: --advertise needs --coordinator; endpoints are 1..%d bytes\n",
                ESC_ENDPOINT_LEN_MAX);
        return -1;
    }
    return 0;
}

/* The cluster key the heartbeats carry (--cluster-key FILE or
 * $ESCROW_CLUSTER_KEY), if any. Returns 0, or -1 after a message. */
static int load_cluster_key(const char *file, node_config *cfg)
{
    static char key[ESC_CREDENTIAL_LEN_MAX + 1]; /* cfg borrows it until exit */
    bool have = false;
    char why[256];
    if (auth_cluster_key_load(file, key, &have, why, sizeof why) != 0) {
        fprintf(stderr, "escrow-segment: %s\n", why);
        return -1;
    }
    if (have) {
        cfg->cluster_key = key;
        (void)wire_set_credential(
            key); /* a well-formed key (loaded above): it signs the heartbeats */
    }
    return 0;
}

/* The node as daemon_run sees it. */
static int run_start(void *d, uv_loop_t *loop, const void *cfg)
{
    return node_start(d, loop, cfg);
}

static void run_stop(void *d)
{
    node_stop(d);
}

static bool run_stopping(const void *d)
{
    return ((const node *)d)->stopping;
}

static void run_fini(void *d)
{
    node_fini(d);
}

int main(int argc, char **argv)
{
    node_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dsn = getenv("ESCROW_DSN");
    char why[256];
    if (failpoint_load(FAILPOINT_NODE_EXIT, why, sizeof why) != 0) {
        fprintf(stderr, "escrow-segment: %s\n", why);
        return 2;
    }
    cli_given given;
    memset(&given, 0, sizeof given);
    int rc = parse_args(argc, argv, &cfg, &given);
    if (rc != 0) {
        return rc > 0 ? 0 : 2;
    }
    if (check_args(argc, &given, &cfg) != 0 ||
        load_cluster_key(given.cluster_key_file, &cfg) != 0) {
        return 2;
    }
    cfg.incarnation = new_incarnation();
    static const daemon_ops ops = {.name = "escrow-segment",
                                   .stop_log_id = "SEG-STOP",
                                   .stop_note = "finishing batches, then stopping",
                                   .abort_note = "unanswered requests were never acknowledged",
                                   .start = run_start,
                                   .stop = run_stop,
                                   .stopping = run_stopping,
                                   .fini = run_fini};
    static node n; /* static: reachable until exit */
    return daemon_run(&ops, &n, &cfg);
}
