/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_settings.c - see coord_settings.h. One setter (set_opt) takes every
 * value, from the command line and from the config file alike.
 */
#include "coord_settings.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "auth_guard.h"
#include "build_info.h"
#include "conn_guard.h"
#include "coord_mon.h"
#include "coord_ret.h"
#include "log.h"
#include "metrics_http.h"

static const struct option opts[] = {{"dsn", required_argument, NULL, 'd'},
                                     {"listen", required_argument, NULL, 'l'},
                                     {"publish", required_argument, NULL, 'p'},
                                     {"lease-ms", required_argument, NULL, 'L'},
                                     {"leader-lease-ms", required_argument, NULL, 'E'},
                                     {"heartbeat-ms", required_argument, NULL, 'H'},
                                     {"rebalance-ms", required_argument, NULL, 'R'},
                                     {"collapse-pct", required_argument, NULL, 'C'},
                                     {"low-water-pct", required_argument, NULL, 'W'},
                                     {"catalog-poll-ms", required_argument, NULL, 'P'},
                                     {"log-level", required_argument, NULL, 'v'},
                                     {"log-format", required_argument, NULL, 'f'},
                                     {"metrics", required_argument, NULL, 'm'},
                                     {"check-ms", required_argument, NULL, 'K'},
                                     {"check-sweep-ms", required_argument, NULL, 'S'},
                                     {"retention-s", required_argument, NULL, 'T'},
                                     {"config", required_argument, NULL, 'F'},
                                     {"region", required_argument, NULL, 'r'},
                                     {"auth", required_argument, NULL, 'a'},
                                     {"cluster-key", required_argument, NULL, 'k'},
                                     {"auth-window-ms", required_argument, NULL, 'w'},
                                     {"metrics-labels", required_argument, NULL, 'b'},
                                     {"conn-per-peer", required_argument, NULL, 'c'},
                                     {"conn-idle-s", required_argument, NULL, 'i'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"version", no_argument, NULL, 'V'},
                                     {"check-config", no_argument, NULL, 'X'},
                                     {NULL, 0, NULL, 0}};

static const char *const not_keys[] = {"config", NULL};
static const char *const repeatable[] = {"listen", NULL};
static const config_spec spec = {"coordinator", opts, not_keys, repeatable};

/* The --help text (docs/flags.md and escrow-coordinator(8) are checked against it). */
static const char usage_text[] =
    "usage: escrow-coordinator --dsn DSN --listen URL [--listen URL ...] --publish URL\n"
    "                          [--lease-ms 2000] [--heartbeat-ms 200] [--rebalance-ms 200]\n"
    "                          [--collapse-pct 5] [--low-water-pct 25]\n"
    "                          [--catalog-poll-ms 1000] [--log-level error|warn|info|debug]\n"
    "                          [--log-format text|json] [--metrics [HOST:]PORT]\n"
    "                          [--metrics-labels on|off] [--check-ms 5000]\n"
    "                          [--check-sweep-ms 300000] [--retention-s 3600]\n"
    "                          [--auth on|off] [--cluster-key FILE] [--auth-window-ms MS]\n"
    "                          [--leader-lease-ms 5000] [--conn-per-peer N]\n"
    "                          [--conn-idle-s S]\n"
    "       escrow-coordinator --region FILE [the options above but --dsn, --listen and\n"
    "                          --publish]\n"
    "       escrow-coordinator --config FILE [any option above]\n"
    "       escrow-coordinator --check-config [the options above]\n"
    "       escrow-coordinator --version | --help\n"
    "\n"
    "Places escrow segments on the segment nodes that heartbeat to it (leases and\n"
    "epochs), moves tail stock between segments, collapses items near sellout,\n"
    "publishes routing tables and answers escrowctl's operations.\n"
    "  --config           the coordinator's config file (examples/config/coordinator.ini):\n"
    "                     section [coordinator], every option below is a key\n"
    "                     (lease_ms = 2000); the command line overrides it; SIGHUP\n"
    "                     re-reads it. A region file (first section [region]) given\n"
    "                     here is read as --region\n"
    "  --region           the region's INI file (examples/regions/eu.ini): dsn, listen\n"
    "                     (its coordinator), publish, metrics and the [coordinator]\n"
    "                     keys; excludes --dsn, --listen and --publish; the other\n"
    "                     options override the file\n"
    "  --dsn              PostgreSQL connection string (default: $ESCROW_DSN)\n"
    "  --listen           nanomsg endpoint for heartbeats, routes and admin requests\n"
    "  --publish          nanomsg endpoint of the routing updates (PUB)\n"
    "  --lease-ms         a node without a heartbeat for this long loses its segments\n"
    "                     (100..600000)\n"
    "  --leader-lease-ms  the lease that makes this coordinator the region's leader,\n"
    "                     held in the database (500..600000, default 5000): a second\n"
    "                     coordinator on the same database stands by (binds nothing)\n"
    "                     and takes over once the leader has not renewed it for this\n"
    "                     long; a deposed leader exits with status 3\n"
    "  --heartbeat-ms     the nodes' heartbeat period (10..60000, below the lease)\n"
    "  --rebalance-ms     policy pass period (10..60000)\n"
    "  --collapse-pct     collapse an item when its remaining stock is at most this\n"
    "                     percentage of its total (0 = never automatically; 0..100)\n"
    "  --low-water-pct    a segment below this percentage of its target is refilled\n"
    "                     (0..100)\n"
    "  --catalog-poll-ms  read the items, segments, transfers and nodes changed since\n"
    "                     the last read this often (100..600000)\n"
    "  --log-level        lowest level logged (default info)\n"
    "  --log-format       text (default) or json: one object per line\n"
    "  --metrics          serve Prometheus metrics over HTTP at http://HOST:PORT/metrics,\n"
    "                     and /healthz and /readyz (e.g. 9100 = 127.0.0.1:9100, the\n"
    "                     default host; 0.0.0.0:9100 listens on every interface; off\n"
    "                     when not given)\n"
    "  --metrics-labels   on: series may name a tenant and an item (the invariant\n"
    "                     monitor's escrow_conservation_divergence_units{tenant,item});\n"
    "                     off (default): no series names a tenant or an item\n"
    "  --check-ms         run the conservation check (invariant monitor) this often\n"
    "                     (50..3600000, default 5000); the result is exported as\n"
    "                     escrow_conservation_* metrics, logged (COORD-INVARIANT) and\n"
    "                     written for escrowctl status. A check looks at the items\n"
    "                     whose figures changed since the last one, the violating\n"
    "                     ones and a round-robin slice of the rest\n"
    "  --check-sweep-ms   every item is checked at least this often by that round\n"
    "                     robin, changed or not (50..86400000, default 300000; at\n"
    "                     least 256 items a check; at or below --check-ms every\n"
    "                     check looks at every item)\n"
    "  --retention-s      run retention this often, in seconds (0..604800, 0 = never,\n"
    "                     default 3600): make the day partitions of holds and outbox\n"
    "                     ahead and drop the old ones (escrowctl retention run does\n"
    "                     the same by hand); logged as COORD-RETENTION\n"
    "  --auth             on: every request needs a valid signature: routes the tenant's\n"
    "                     key, escrowctl's operations an admin key, heartbeats and peer\n"
    "                     coordinators' quota messages the cluster key; routing updates\n"
    "                     are published sealed per tenant key; off (default)\n"
    "  --cluster-key      file with the cluster key (default: $ESCROW_CLUSTER_KEY), and\n"
    "                     optionally on its second line the previous key, still\n"
    "                     accepted; required with --auth on; signs quota messages\n"
    "  --auth-window-ms   a signed frame is accepted this long before or after this\n"
    "                     coordinator's clock (1000..600000, default 30000)\n"
    "  --conn-per-peer    TCP connections one IP address may hold open; more are\n"
    "                     closed at accept (0..1000000, 0 = no cap, default 1024).\n"
    "                     Every node heartbeats on one connection and every\n"
    "                     libescrow client holds two (requests, routes): a NAT or one\n"
    "                     big host needs more. SIGHUP applies it\n"
    "  --conn-idle-s      a connection that sent no byte for this long is closed\n"
    "                     (0..86400, 0 = never, the default): a routes subscriber\n"
    "                     never sends, so a value here drops idle subscribers too\n"
    "                     (they reconnect and read the next full table within a\n"
    "                     second). SIGHUP applies it\n"
    "  --check-config     read and check the settings and the files they name, print\n"
    "                     \"configuration ok\" and exit 0 (2 and the error if not);\n"
    "                     opens nothing\n"
    "  --version          print the version and the git commit, and exit\n"
    "Signals: SIGTERM/SIGINT stop; SIGHUP re-reads the config file and the cluster key\n"
    "file and applies the log level and format, the connection limits and the\n"
    "cluster key (the rest needs a restart, as the log says).\n"
    "Environment: ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1 exits with status 99 the first\n"
    "time a segment-to-segment transfer is known to be sent (crash tests).\n";

void coord_settings_usage(FILE *f)
{
    fputs(usage_text, f);
}

void coord_settings_init(coord_settings *s)
{
    memset(s, 0, sizeof *s);
    s->log_level = ESC_LOG_INFO;
    s->log_format = ESC_LOG_TEXT;
    coord_config *c = &s->coord;
    c->lease_ms = 2000;
    c->leader_lease_ms = 5000;
    c->heartbeat_ms = 200;
    c->rebalance_ms = 200;
    c->collapse_pct = 5;
    c->low_water_pct = 25;
    c->catalog_poll_ms = 1000;
    c->check_ms = COORD_MON_CHECK_MS_DEFAULT;
    c->check_sweep_ms = COORD_MON_SWEEP_MS_DEFAULT;
    c->retention_s = COORD_RET_S_DEFAULT;
    c->conn_per_peer = CONN_GUARD_PER_PEER_DEFAULT;
    c->conn_idle_s = 0; /* a routes subscriber never sends a byte */
}

static int set_range(const char *v, long lo, long hi, uint32_t *out, char *why, size_t why_len)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
        snprintf(why, why_len, "must be a number in %ld..%ld, not '%s'", lo, hi, v);
        return -1;
    }
    *out = (uint32_t)x;
    return 0;
}

static int set_number(coord_settings *s, int opt, const char *v, char *why, size_t why_len)
{
    coord_config *c = &s->coord;
    switch (opt) {
    case 'L':
        return set_range(v, 100, 600000, &c->lease_ms, why, why_len);
    case 'E':
        return set_range(v, 500, 600000, &c->leader_lease_ms, why, why_len);
    case 'H':
        return set_range(v, 10, 60000, &c->heartbeat_ms, why, why_len);
    case 'R':
        return set_range(v, 10, 60000, &c->rebalance_ms, why, why_len);
    case 'C':
        return set_range(v, 0, 100, &c->collapse_pct, why, why_len);
    case 'W':
        return set_range(v, 0, 100, &c->low_water_pct, why, why_len);
    case 'P':
        return set_range(v, 100, 600000, &c->catalog_poll_ms, why, why_len);
    case 'w':
        return set_range(v, AUTH_WINDOW_MS_MIN, AUTH_WINDOW_MS_MAX, &c->auth_window_ms, why,
                         why_len);
    case 'T':
        return set_range(v, 0, COORD_RET_S_MAX, &c->retention_s, why, why_len);
    case 'c':
        return set_range(v, 0, 1000000, &c->conn_per_peer, why, why_len);
    case 'i':
        return set_range(v, 0, 86400, &c->conn_idle_s, why, why_len);
    case 'S':
        return set_range(v, COORD_MON_SWEEP_MS_MIN, COORD_MON_SWEEP_MS_MAX, &c->check_sweep_ms,
                         why, why_len);
    default: /* 'K' */
        return set_range(v, COORD_MON_CHECK_MS_MIN, COORD_MON_CHECK_MS_MAX, &c->check_ms, why,
                         why_len);
    }
}

static int set_string(coord_settings *s, int opt, const char *v, char *why, size_t why_len)
{
    coord_config *c = &s->coord;
    char host[METRICS_HTTP_ADDR_LEN_MAX + 1];
    uint16_t port;
    if (opt == 'm' && metrics_http_parse(v, host, sizeof host, &port) != 0) {
        snprintf(why, why_len, "takes PORT, HOST:PORT or [IPV6]:PORT, not '%s'", v);
        return -1;
    }
    if (opt == 'l' && c->nlisten == COORD_LISTEN_MAX) {
        snprintf(why, why_len, "at most %d endpoints", COORD_LISTEN_MAX);
        return -1;
    }
    const char *copy = config_strs_dup(&s->strs, v);
    switch (opt) {
    case 'd':
        c->dsn = copy;
        return 0;
    case 'l':
        c->listen[c->nlisten++] = copy;
        return 0;
    case 'p':
        c->publish = copy;
        return 0;
    case 'm':
        c->metrics = copy;
        return 0;
    case 'r':
        s->region = copy;
        return 0;
    default: /* 'k' */
        s->cluster_key_file = copy;
        return 0;
    }
}

/* One option's value: the command line's and the config file's setter. */
static int set_opt(void *arg, int opt, const char *v, char *why, size_t why_len)
{
    coord_settings *s = arg;
    s->set[opt] = true;
    switch (opt) {
    case 'v':
        return config_parse_log_level(v, &s->log_level, why, why_len);
    case 'f':
        return config_parse_log_format(v, &s->log_format, why, why_len);
    case 'a':
        return config_parse_onoff(v, &s->coord.auth, why, why_len);
    case 'b':
        return config_parse_onoff(v, &s->coord.metrics_labels, why, why_len);
    case 'w':
    case 'L':
    case 'E':
    case 'H':
    case 'R':
    case 'C':
    case 'W':
    case 'P':
    case 'K':
    case 'S':
    case 'T':
    case 'c':
    case 'i':
        return set_number(s, opt, v, why, why_len);
    default:
        return set_string(s, opt, v, why, why_len);
    }
}

int coord_settings_args(coord_settings *s, int argc, char **argv, bool *show_usage, char *err,
                        size_t errlen)
{
    config_argv_out out = {s->given, &s->config, &s->check_only, show_usage};
    int rc = config_argv(&spec, argc, argv, set_opt, s, &out, err, errlen);
    if (rc == CONFIG_ARGV_HELP) {
        coord_settings_usage(stdout);
    } else if (rc == CONFIG_ARGV_VERSION) {
        build_info_print(stdout, "escrow-coordinator");
    }
    return rc > 0 ? 1 : rc;
}

void coord_settings_fork(coord_settings *dst, const coord_settings *argv_only)
{
    *dst = *argv_only;
    memset(&dst->strs, 0, sizeof dst->strs);
    dst->region_cfg = NULL;
}

void coord_settings_free(coord_settings *s)
{
    config_strs_free(&s->strs);
    free(s->region_cfg);
    s->region_cfg = NULL;
}

/* The region file's [coordinator] tuning, where no option set it. */
static void apply_tuning(coord_settings *s, const region_cfg *r)
{
    coord_config *c = &s->coord;
    const struct {
        int opt; /* the option that overrides the file */
        bool in; /* set in the file */
        uint32_t v;
        uint32_t *field;
    } tuning[] = {{'L', r->lease_ms != 0, r->lease_ms, &c->lease_ms},
                  {'H', r->heartbeat_ms != 0, r->heartbeat_ms, &c->heartbeat_ms},
                  {'R', r->rebalance_ms != 0, r->rebalance_ms, &c->rebalance_ms},
                  {'P', r->catalog_poll_ms != 0, r->catalog_poll_ms, &c->catalog_poll_ms},
                  {'K', r->check_ms != 0, r->check_ms, &c->check_ms},
                  {'S', r->check_sweep_ms != 0, r->check_sweep_ms, &c->check_sweep_ms},
                  {'C', r->collapse_pct >= 0, (uint32_t)r->collapse_pct, &c->collapse_pct},
                  {'W', r->low_water_pct >= 0, (uint32_t)r->low_water_pct, &c->low_water_pct}};
    for (size_t i = 0; i < sizeof tuning / sizeof tuning[0]; i++) {
        if (tuning[i].in && !s->set[tuning[i].opt]) {
            *tuning[i].field = tuning[i].v;
        }
    }
    if (!s->set['m'] && r->metrics[0] != '\0') {
        c->metrics = r->metrics;
    }
}

/* The region file: dsn, listen, publish (never with their options), the
 * metrics address and the tuning unless an option set them. */
static int apply_region(coord_settings *s, bool *show_usage, char *err, size_t errlen)
{
    coord_config *c = &s->coord;
    if (s->set['d'] || s->set['l'] || s->set['p']) {
        *show_usage = true;
        snprintf(err, errlen, "%s excludes --dsn, --listen and --publish (the file names them)",
                 s->region_by);
        return -1;
    }
    s->region_cfg = esc_xmalloc(sizeof *s->region_cfg);
    char why[REGION_ERR_LEN];
    if (region_cfg_load(s->region, s->region_cfg, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    c->dsn = s->region_cfg->dsn;
    c->listen[0] = s->region_cfg->coordinator;
    c->nlisten = 1;
    c->publish = s->region_cfg->publish;
    apply_tuning(s, s->region_cfg);
    c->region = s->region_cfg;
    return 0;
}

/* --config: the coordinator's file, or (first section [region]) a region file. */
static int read_config(coord_settings *s, char *err, size_t errlen)
{
    const config_region_ref r = {&s->region, &s->region_by, s->region_by_buf,
                                 sizeof s->region_by_buf, 'r'};
    return config_load_or_region(&spec, s->config, s->given, set_opt, s, &r, err, errlen);
}

static int check(const coord_settings *s, char *err, size_t errlen)
{
    const coord_config *c = &s->coord;
    if (c->dsn == NULL || c->dsn[0] == '\0') {
        snprintf(err, errlen, "a DSN is required (--dsn or $ESCROW_DSN)");
        return -1;
    }
    if (c->nlisten == 0 || c->publish == NULL) {
        snprintf(err, errlen, "--listen and --publish are required");
        return -1;
    }
    if (c->heartbeat_ms >= c->lease_ms) {
        snprintf(err, errlen, "--heartbeat-ms (%u) must be below --lease-ms (%u)", c->heartbeat_ms,
                 c->lease_ms);
        return -1;
    }
    return 0;
}

/* The cluster key (--cluster-key FILE or $ESCROW_CLUSTER_KEY), required by
 * --auth on. */
static int load_cluster_key(coord_settings *s, char *err, size_t errlen)
{
    bool have = false;
    if (auth_cluster_keys_load(s->cluster_key_file, s->cluster_key, s->cluster_key_prev, &have, err,
                               errlen) != 0) {
        return -1;
    }
    if (s->coord.auth && !have) {
        snprintf(err, errlen,
                 "--auth on needs the cluster key (--cluster-key FILE or "
                 "$ESCROW_CLUSTER_KEY): nodes could not heartbeat");
        return -1;
    }
    s->coord.cluster_key = have ? s->cluster_key : NULL;
    s->coord.cluster_key_prev = s->cluster_key_prev[0] != '\0' ? s->cluster_key_prev : NULL;
    return 0;
}

int coord_settings_files(coord_settings *s, bool *show_usage, char *err, size_t errlen)
{
    *show_usage = false;
    if (s->region != NULL) {
        s->region_by = "--region";
    }
    if (s->config != NULL && read_config(s, err, errlen) != 0) {
        return -1;
    }
    if (s->region != NULL && apply_region(s, show_usage, err, errlen) != 0) {
        return -1;
    }
    if (s->coord.dsn == NULL) {
        s->coord.dsn = getenv("ESCROW_DSN");
    }
    if (check(s, err, errlen) != 0) {
        *show_usage = true;
        return -1;
    }
    return load_cluster_key(s, err, errlen);
}

static void u32_text(uint32_t v, char *out, size_t cap)
{
    snprintf(out, cap, "%u", v);
}

/* Every tuning value and endpoint: a restart takes them. */
static int diff_restart(const coord_config *x, const coord_config *y)
{
    const char *id = "COORD-RELOAD";
    const struct {
        const char *key;
        uint32_t a, b;
    } nums[] = {{"lease_ms", x->lease_ms, y->lease_ms},
                {"leader_lease_ms", x->leader_lease_ms, y->leader_lease_ms},
                {"heartbeat_ms", x->heartbeat_ms, y->heartbeat_ms},
                {"rebalance_ms", x->rebalance_ms, y->rebalance_ms},
                {"collapse_pct", x->collapse_pct, y->collapse_pct},
                {"low_water_pct", x->low_water_pct, y->low_water_pct},
                {"catalog_poll_ms", x->catalog_poll_ms, y->catalog_poll_ms},
                {"check_ms", x->check_ms, y->check_ms},
                {"check_sweep_ms", x->check_sweep_ms, y->check_sweep_ms},
                {"retention_s", x->retention_s, y->retention_s}};
    int n = 0;
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char a[16], b[16];
        u32_text(nums[i].a, a, sizeof a);
        u32_text(nums[i].b, b, sizeof b);
        n += config_note_change(id, nums[i].key, a, b, false, false);
    }
    char la[1200] = "", lb[1200] = "";
    for (int i = 0; i < x->nlisten; i++) {
        snprintf(la + strlen(la), sizeof la - strlen(la), "%s%s", i ? " " : "", x->listen[i]);
    }
    for (int i = 0; i < y->nlisten; i++) {
        snprintf(lb + strlen(lb), sizeof lb - strlen(lb), "%s%s", i ? " " : "", y->listen[i]);
    }
    n += config_note_change(id, "listen", la, lb, false, false);
    n += config_note_change(id, "publish", x->publish, y->publish, false, false);
    n += config_note_change(id, "dsn", x->dsn, y->dsn, false, true);
    n += config_note_change(id, "metrics", x->metrics, y->metrics, false, false);
    n += config_note_change(id, "auth", x->auth ? "on" : "off", y->auth ? "on" : "off", false,
                            false);
    return n;
}

int coord_settings_diff(const coord_settings *a, const coord_settings *b)
{
    const char *id = "COORD-RELOAD";
    int n = config_note_log_changes(id, a->log_level, b->log_level, a->log_format, b->log_format);
    char ka[32], kb[32];
    auth_key_id_text(a->coord.cluster_key, ka, sizeof ka);
    auth_key_id_text(b->coord.cluster_key, kb, sizeof kb);
    n += config_note_change(id, "cluster_key", ka, kb, true, false);
    auth_key_id_text(a->coord.cluster_key_prev, ka, sizeof ka);
    auth_key_id_text(b->coord.cluster_key_prev, kb, sizeof kb);
    n += config_note_change(id, "cluster_key (previous, accepted)", ka, kb, true, false);
    char ca[32], cb[32];
    snprintf(ca, sizeof ca, "%u:%u", a->coord.conn_per_peer, a->coord.conn_idle_s);
    snprintf(cb, sizeof cb, "%u:%u", b->coord.conn_per_peer, b->coord.conn_idle_s);
    n += config_note_change(id, "conn_per_peer:conn_idle_s", ca, cb, true, false);
    n += diff_restart(&a->coord, &b->coord);
    n += config_note_change(id, "region", a->region, b->region, false, false);
    return n;
}

void coord_settings_take_reloadable(coord_settings *running, const coord_settings *fresh)
{
    running->log_level = fresh->log_level;
    running->log_format = fresh->log_format;
    memcpy(running->cluster_key, fresh->cluster_key, sizeof running->cluster_key);
    memcpy(running->cluster_key_prev, fresh->cluster_key_prev, sizeof running->cluster_key_prev);
    coord_config *r = &running->coord;
    r->conn_per_peer = fresh->coord.conn_per_peer;
    r->conn_idle_s = fresh->coord.conn_idle_s;
    r->cluster_key = fresh->coord.cluster_key != NULL ? running->cluster_key : NULL;
    r->cluster_key_prev = fresh->coord.cluster_key_prev != NULL ? running->cluster_key_prev : NULL;
}
