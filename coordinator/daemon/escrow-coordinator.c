/*
 * escrow-coordinator.c - escrow-coordinator: parses argv and hands the
 * coordinator to the daemon skeleton (daemon.h: the loop, SIGINT/SIGTERM).
 * Exit codes: 0 clean stop, 1 failure (or a second signal), 2 bad usage,
 * 99 a failpoint fired (coord_failpoint.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "auth_guard.h"
#include "coord.h"
#include "coord_mon.h"
#include "daemon.h"
#include "escrow_errors.h"
#include "log.h"
#include "metrics_http.h"
#include "region_cfg.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: escrow-coordinator --dsn DSN --listen URL [--listen URL ...] --publish URL\n"
        "                          [--lease-ms 2000] [--heartbeat-ms 200] [--rebalance-ms 200]\n"
        "                          [--collapse-pct 5] [--low-water-pct 25]\n"
        "                          [--catalog-poll-ms 1000] [--log-level error|warn|info|debug]\n"
        "                          [--metrics [HOST:]PORT] [--metrics-labels on|off]\n"
        "                          [--check-ms 5000]\n"
        "                          [--auth on|off] [--cluster-key FILE] [--auth-window-ms MS]\n"
        "       escrow-coordinator --config FILE [the options above but --dsn, --listen and\n"
        "                          --publish]\n"
        "\n"
        "Places escrow segments on the segment nodes that heartbeat to it (leases and\n"
        "epochs), moves tail stock between segments, collapses items near sellout,\n"
        "publishes routing tables and answers escrowctl's operations.\n"
        "  --config           the region's INI file (examples/regions/eu.ini): dsn, listen\n"
        "                     (its coordinator), publish, metrics and the [coordinator]\n"
        "                     keys; excludes --dsn, --listen and --publish; the other\n"
        "                     flags override the file\n"
        "  --dsn              PostgreSQL connection string (default: $ESCROW_DSN)\n"
        "  --listen           nanomsg endpoint for heartbeats, routes and admin requests\n"
        "  --publish          nanomsg endpoint of the routing updates (PUB)\n"
        "  --lease-ms         a node without a heartbeat for this long loses its segments\n"
        "                     (100..600000)\n"
        "  --heartbeat-ms     the nodes' heartbeat period (10..60000, below the lease)\n"
        "  --rebalance-ms     policy pass period (10..60000)\n"
        "  --collapse-pct     collapse an item when its remaining stock is at most this\n"
        "                     percentage of its total (0 = never automatically; 0..100)\n"
        "  --low-water-pct    a segment below this percentage of its target is refilled\n"
        "                     (0..100)\n"
        "  --catalog-poll-ms  re-read items, segments and nodes this often (100..600000)\n"
        "  --metrics          serve Prometheus metrics over HTTP at http://HOST:PORT/metrics\n"
        "                     (e.g. 9100 = 127.0.0.1:9100, the default host; 0.0.0.0:9100\n"
        "                     listens on every interface; off when not given)\n"
        "  --metrics-labels   on: series may name a tenant and an item (the invariant\n"
        "                     monitor's escrow_conservation_divergence_units{tenant,item});\n"
        "                     off (default): no series names a tenant or an item\n"
        "  --check-ms         run the conservation check (invariant monitor) this often\n"
        "                     (50..3600000, default 5000); the result is exported as\n"
        "                     escrow_conservation_* metrics, logged (COORD-INVARIANT) and\n"
        "                     written for escrowctl status\n"
        "  --auth             on: every request needs a valid signature: routes the tenant's\n"
        "                     key, escrowctl's operations an admin key, heartbeats and peer\n"
        "                     coordinators' quota messages the cluster key; routing updates\n"
        "                     are published sealed per tenant key; off (default)\n"
        "  --cluster-key      file with the cluster key (default: $ESCROW_CLUSTER_KEY);\n"
        "                     required with --auth on; signs quota messages to peers\n"
        "  --auth-window-ms   a signed frame is accepted this long before or after this\n"
        "                     coordinator's clock (1000..600000, default 30000)\n"
        "Environment: ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1 exits with status 99 the first\n"
        "time a segment-to-segment transfer is known to be sent (crash tests).\n");
}

static int parse_ms(const char *name, const char *v, long lo, long hi, uint32_t *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "escrow-coordinator: --%s must be a number in %ld..%ld, not '%s'\n", name,
                lo, hi, v);
        return -1;
    }
    *out = (uint32_t)x;
    return 0;
}

static int parse_metrics(const char *v)
{
    char host[METRICS_HTTP_ADDR_LEN_MAX + 1];
    uint16_t port;
    if (metrics_http_parse(v, host, sizeof host, &port) != 0) {
        fprintf(stderr,
                "escrow-coordinator: --metrics takes PORT, HOST:PORT or [IPV6]:PORT, not '%s'\n",
                v);
        return -1;
    }
    return 0;
}

/* What the command line gave besides the values: --config, and which
 * flags it set (by their getopt character: they override the file). */
typedef struct cli_given {
    const char *config;      /* borrowed from argv; NULL = none */
    const char *cluster_key; /* --cluster-key FILE, borrowed; NULL = none */
    bool flag[128];
} cli_given;

/* One option (getopt character ch, its value optarg). Returns 0, or -1
 * after a message on stderr. */
static int take_opt(int ch, coord_config *cfg, cli_given *given)
{
    switch (ch) {
    case 'd':
        cfg->dsn = optarg;
        return 0;
    case 'l':
        if (cfg->nlisten == COORD_LISTEN_MAX) {
            fprintf(stderr, "escrow-coordinator: at most %d --listen endpoints\n",
                    COORD_LISTEN_MAX);
            return -1;
        }
        cfg->listen[cfg->nlisten++] = optarg;
        return 0;
    case 'p':
        cfg->publish = optarg;
        return 0;
    case 'L':
        return parse_ms("lease-ms", optarg, 100, 600000, &cfg->lease_ms);
    case 'H':
        return parse_ms("heartbeat-ms", optarg, 10, 60000, &cfg->heartbeat_ms);
    case 'R':
        return parse_ms("rebalance-ms", optarg, 10, 60000, &cfg->rebalance_ms);
    case 'C':
        return parse_ms("collapse-pct", optarg, 0, 100, &cfg->collapse_pct);
    case 'W':
        return parse_ms("low-water-pct", optarg, 0, 100, &cfg->low_water_pct);
    case 'P':
        return parse_ms("catalog-poll-ms", optarg, 100, 600000, &cfg->catalog_poll_ms);
    case 'K':
        return parse_ms("check-ms", optarg, COORD_MON_CHECK_MS_MIN, COORD_MON_CHECK_MS_MAX,
                        &cfg->check_ms);
    case 'm':
        cfg->metrics = optarg;
        return parse_metrics(optarg);
    case 'b':
        if (auth_parse_onoff(optarg, &cfg->metrics_labels) != 0) {
            fprintf(stderr, "escrow-coordinator: --metrics-labels takes on or off\n");
            return -1;
        }
        return 0;
    case 'v':
        if (esc_log_level_parse(optarg) < 0) {
            fprintf(stderr, "escrow-coordinator: unknown log level '%s'\n", optarg);
            return -1;
        }
        esc_log_set_level(esc_log_level_parse(optarg));
        return 0;
    case 'F':
        given->config = optarg;
        return 0;
    case 'a':
        if (auth_parse_onoff(optarg, &cfg->auth) != 0) {
            fprintf(stderr, "escrow-coordinator: --auth takes on or off\n");
            return -1;
        }
        return 0;
    case 'k':
        given->cluster_key = optarg;
        return 0;
    case 'w':
        return parse_ms("auth-window-ms", optarg, AUTH_WINDOW_MS_MIN, AUTH_WINDOW_MS_MAX,
                        &cfg->auth_window_ms);
    case 'h':
        usage(stdout);
        exit(0);
    default:
        return -1;
    }
}

static int parse_args(int argc, char **argv, coord_config *cfg, cli_given *given)
{
    static const struct option opts[] = {{"dsn", required_argument, NULL, 'd'},
                                         {"listen", required_argument, NULL, 'l'},
                                         {"publish", required_argument, NULL, 'p'},
                                         {"lease-ms", required_argument, NULL, 'L'},
                                         {"heartbeat-ms", required_argument, NULL, 'H'},
                                         {"rebalance-ms", required_argument, NULL, 'R'},
                                         {"collapse-pct", required_argument, NULL, 'C'},
                                         {"low-water-pct", required_argument, NULL, 'W'},
                                         {"catalog-poll-ms", required_argument, NULL, 'P'},
                                         {"log-level", required_argument, NULL, 'v'},
                                         {"metrics", required_argument, NULL, 'm'},
                                         {"check-ms", required_argument, NULL, 'K'},
                                         {"config", required_argument, NULL, 'F'},
                                         {"auth", required_argument, NULL, 'a'},
                                         {"cluster-key", required_argument, NULL, 'k'},
                                         {"auth-window-ms", required_argument, NULL, 'w'},
                                         {"metrics-labels", required_argument, NULL, 'b'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int ch, rc = 0;
    while (rc == 0 && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch > 0 && ch < 128) {
            given->flag[ch] = true;
        }
        rc = take_opt(ch, cfg, given);
    }
    return rc;
}

static int check_args(int argc, const coord_config *cfg)
{
    if (optind != argc) {
        fprintf(stderr, "escrow-coordinator: unexpected argument '%s'\n", "(positional)");
        return -1;
    }
    if (cfg->dsn == NULL || cfg->dsn[0] == '\0') {
        fprintf(stderr, "escrow-coordinator: a DSN is required (--dsn or $ESCROW_DSN)\n");
        return -1;
    }
    if (cfg->nlisten == 0 || cfg->publish == NULL) {
        fprintf(stderr, "escrow-coordinator: --listen and --publish are required\n");
        return -1;
    }
    if (cfg->heartbeat_ms >= cfg->lease_ms) {
        fprintf(stderr, "escrow-coordinator: --heartbeat-ms (%u) must be below --lease-ms (%u)\n",
                cfg->heartbeat_ms, cfg->lease_ms);
        return -1;
    }
    return 0;
}

/* The region file (region_cfg.h) fills what the command line left out:
 * dsn, listen, publish from [region] (never combined with their flags),
 * metrics and the [coordinator] keys unless their flags were given.
 * Returns 0, or -1 after a message on stderr (nothing was opened). */
static int apply_config(const cli_given *g, coord_config *cfg)
{
    static region_cfg region; /* large, and cfg->region borrows it until exit */
    char err[REGION_ERR_LEN];
    if (region_cfg_load(g->config, &region, err, sizeof err) != 0) {
        fprintf(stderr, "escrow-coordinator: %s\n", err);
        return -1;
    }
    cfg->dsn = region.dsn;
    cfg->listen[0] = region.coordinator;
    cfg->nlisten = 1;
    cfg->publish = region.publish;
    if (!g->flag['m'] && region.metrics[0] != '\0') {
        cfg->metrics = region.metrics;
    }
    const struct {
        int ch;   /* the flag that overrides the file */
        bool set; /* in the file */
        uint32_t v;
        uint32_t *field;
    } tuning[] = {
        {'L', region.lease_ms != 0, region.lease_ms, &cfg->lease_ms},
        {'H', region.heartbeat_ms != 0, region.heartbeat_ms, &cfg->heartbeat_ms},
        {'R', region.rebalance_ms != 0, region.rebalance_ms, &cfg->rebalance_ms},
        {'P', region.catalog_poll_ms != 0, region.catalog_poll_ms, &cfg->catalog_poll_ms},
        {'K', region.check_ms != 0, region.check_ms, &cfg->check_ms},
        {'C', region.collapse_pct >= 0, (uint32_t)region.collapse_pct, &cfg->collapse_pct},
        {'W', region.low_water_pct >= 0, (uint32_t)region.low_water_pct, &cfg->low_water_pct}};
    for (size_t i = 0; i < sizeof tuning / sizeof tuning[0]; i++) {
        if (tuning[i].set && !g->flag[tuning[i].ch]) {
            *tuning[i].field = tuning[i].v;
        }
    }
    cfg->region = &region;
    return 0;
}

static void defaults(coord_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->dsn = getenv("ESCROW_DSN");
    cfg->lease_ms = 2000;
    cfg->heartbeat_ms = 200;
    cfg->rebalance_ms = 200;
    cfg->collapse_pct = 5;
    cfg->low_water_pct = 25;
    cfg->catalog_poll_ms = 1000;
    cfg->check_ms = COORD_MON_CHECK_MS_DEFAULT;
}

/* The cluster key (--cluster-key FILE or $ESCROW_CLUSTER_KEY), required by
 * --auth on. Returns 0, or -1 after a message on stderr. */
static int load_cluster_key(const cli_given *given, coord_config *cfg)
{
    static char cluster_key[ESC_CREDENTIAL_LEN_MAX + 1]; /* cfg borrows it until exit */
    bool have_key = false;
    char why[256];
    if (auth_cluster_key_load(given->cluster_key, cluster_key, &have_key, why, sizeof why) != 0) {
        fprintf(stderr, "escrow-coordinator: %s\n", why);
        return -1;
    }
    if (cfg->auth && !have_key) {
        fprintf(stderr, "escrow-coordinator: --auth on needs the cluster key (--cluster-key FILE "
                        "or $ESCROW_CLUSTER_KEY): nodes could not heartbeat\n");
        return -1;
    }
    if (have_key) {
        cfg->cluster_key = cluster_key;
        (void)wire_set_credential(
            cluster_key); /* well-formed (loaded above): signs quota messages to peers */
    }
    return 0;
}

/* Defaults, the command line, the region file, the cluster key. Returns 0,
 * or 2 (bad usage) after a message on stderr. */
static int configure(int argc, char **argv, coord_config *cfg)
{
    defaults(cfg);
    cli_given given;
    memset(&given, 0, sizeof given);
    if (parse_args(argc, argv, cfg, &given) != 0) {
        usage(stderr);
        return 2;
    }
    if (given.config != NULL && (given.flag['d'] || given.flag['l'] || given.flag['p'])) {
        fprintf(stderr, "escrow-coordinator: --config excludes --dsn, --listen and --publish "
                        "(the file names them)\n");
        usage(stderr);
        return 2;
    }
    if (given.config != NULL && apply_config(&given, cfg) != 0) {
        return 2;
    }
    if (check_args(argc, cfg) != 0) {
        usage(stderr);
        return 2;
    }
    return load_cluster_key(&given, cfg) != 0 ? 2 : 0;
}

/* The coordinator as daemon_run sees it. */
static int run_start(void *d, uv_loop_t *loop, const void *cfg)
{
    int rc = coord_start(d, loop, cfg);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-START", "cannot start: %s", esc_strerror(rc));
    }
    return rc;
}

static void run_stop(void *d)
{
    coord_stop(d);
}

static bool run_stopping(const void *d)
{
    return ((const coord *)d)->stopping;
}

static void run_fini(void *d)
{
    coord_fini(d);
}

/* 1 when the region could not run (coord_region), else 0. */
static int run_exit_code(const void *d)
{
    return ((const coord *)d)->exit_code;
}

int main(int argc, char **argv)
{
    coord_config cfg;
    int rc = configure(argc, argv, &cfg);
    if (rc != 0) {
        return rc;
    }
    static const daemon_ops ops = {.name = "escrow-coordinator",
                                   .stop_log_id = "COORD-STOP",
                                   .stop_note = "stopping",
                                   .abort_note = "",
                                   .start = run_start,
                                   .stop = run_stop,
                                   .stopping = run_stopping,
                                   .fini = run_fini,
                                   .exit_code = run_exit_code};
    static coord c; /* static: reachable until exit */
    return daemon_run(&ops, &c, &cfg);
}
