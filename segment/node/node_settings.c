/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_settings.c - see node_settings.h. One setter (set_opt) takes every
 * value, from the command line and from the config file alike, so both
 * accept exactly the same values and say the same thing about a bad one.
 */
#include "node_settings.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "auth_guard.h"
#include "build_info.h"
#include "conn_guard.h"
#include "log.h"
#include "metrics_http.h"
#include "ratelim.h"
#include "seg_share.h"
#include "wire.h"

static const struct option opts[] = {{"node-id", required_argument, NULL, 'n'},
                                     {"listen", required_argument, NULL, 'l'},
                                     {"dsn", required_argument, NULL, 'd'},
                                     {"log-level", required_argument, NULL, 'v'},
                                     {"log-format", required_argument, NULL, 'f'},
                                     {"sweep-ms", required_argument, NULL, 's'},
                                     {"coordinator", required_argument, NULL, 'c'},
                                     {"advertise", required_argument, NULL, 'a'},
                                     {"metrics", required_argument, NULL, 'm'},
                                     {"config", required_argument, NULL, 'F'},
                                     {"region", required_argument, NULL, 'R'},
                                     {"auth", required_argument, NULL, 'A'},
                                     {"cluster-key", required_argument, NULL, 'K'},
                                     {"auth-window-ms", required_argument, NULL, 'W'},
                                     {"rate-tenant", required_argument, NULL, 'T'},
                                     {"rate-buyer", required_argument, NULL, 'B'},
                                     {"live-holds-tenant", required_argument, NULL, 'H'},
                                     {"fair-slots", required_argument, NULL, 'Q'},
                                     {"fair-slack", required_argument, NULL, 'G'},
                                     {"conn-per-peer", required_argument, NULL, 'P'},
                                     {"conn-idle-s", required_argument, NULL, 'I'},
                                     {"commit-streams", required_argument, NULL, 'S'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"version", no_argument, NULL, 'V'},
                                     {"check-config", no_argument, NULL, 'X'},
                                     {NULL, 0, NULL, 0}};

static const char *const not_keys[] = {"config", NULL};
static const char *const repeatable[] = {"listen", NULL};
static const config_spec spec = {"segment", opts, not_keys, repeatable};

void node_settings_usage(FILE *f)
{
    fprintf(f,
            "usage: escrow-segment --node-id ID --listen URL [--listen URL ...] [--dsn DSN]\n"
            "                      [--coordinator URL [--advertise URL]]\n"
            "                      [--log-level error|warn|info|debug] [--log-format text|json]\n"
            "                      [--sweep-ms MS] [--metrics [HOST:]PORT]\n"
            "                      [--auth on|off] [--cluster-key FILE] [--auth-window-ms MS]\n"
            "                      [--rate-tenant N[:BURST]] [--rate-buyer N[:BURST]]\n"
            "                      [--live-holds-tenant N] [--fair-slots MIN:MAX]\n"
            "                      [--fair-slack PCT] [--conn-per-peer N] [--conn-idle-s S]\n"
            "                      [--commit-streams N]\n"
            "       escrow-segment --region FILE --node-id ID [--advertise URL] [the options\n"
            "                      above but --dsn, --listen and --coordinator]\n"
            "       escrow-segment --config FILE [any option above]\n"
            "       escrow-segment --check-config [the options above]\n"
            "       escrow-segment --version | --help\n"
            "\n"
            "Static mode (no --coordinator): serves the escrow segments assigned to node ID\n"
            "in PostgreSQL; taking them raises their epoch, which fences any previous owner.\n"
            "Managed mode: heartbeats the coordinator and serves the segments it assigns.\n"
            "  --config       the node's config file (examples/config/segment.ini): section\n"
            "                 [segment], every option below is a key (node_id = n1); the\n"
            "                 command line overrides it; SIGHUP re-reads it. A region file\n"
            "                 (first section [region]) given here is read as --region\n"
            "  --region       the region's INI file (examples/regions/eu.ini): the dsn and\n"
            "                 the coordinator from [region], listen = advertise = the node's\n"
            "                 endpoint in [nodes]; excludes --dsn, --listen, --coordinator\n"
            "  --dsn          PostgreSQL connection string (default: $ESCROW_DSN)\n"
            "  --listen       nanomsg endpoint, e.g. tcp://127.0.0.1:7101 or ipc:///tmp/esc.sock\n"
            "  --coordinator  the coordinator's heartbeat endpoint (its --listen URL); with a\n"
            "                 standby coordinator both, comma-separated: the leader answers\n"
            "  --advertise    the endpoint clients use to reach this node (default: the first\n"
            "                 --listen)\n"
            "  --log-level    lowest level logged (default info)\n"
            "  --log-format   text (default) or json: one object per line\n"
            "  --sweep-ms     expiry sweeper period (default 50)\n"
            "  --metrics      serve Prometheus metrics over HTTP at http://HOST:PORT/metrics,\n"
            "                 and /healthz and /readyz (e.g. 9101 = 127.0.0.1:9101, the\n"
            "                 default host; 0.0.0.0:9101 listens on every interface; off\n"
            "                 when not given)\n"
            "  --auth         on: every request needs a valid signature (tenant key for its\n"
            "                 own tenant, admin key for operator release); off (default): none\n"
            "  --auth-window-ms  a signed frame is accepted this long before or after this\n"
            "                 node's clock (default 30000, 1000..600000)\n"
            "  --cluster-key  file with the cluster key the heartbeats carry (default:\n"
            "                 $ESCROW_CLUSTER_KEY), and optionally on its second line the\n"
            "                 previous key, still accepted; needed in managed mode when the\n"
            "                 coordinator runs with --auth on\n"
            "  --rate-tenant  requests per second per tenant on this node (token bucket, burst\n"
            "                 BURST, default one second's worth); over it: BUSY. 0 = off.\n"
            "                 Default 20000:40000; a tenant's own: escrowctl tenant limits\n"
            "  --rate-buyer   reserves per second per buyer of a tenant; 0 = off (default)\n"
            "  --live-holds-tenant  live holds per tenant on this node; over it a reserve is\n"
            "                 BUSY. 0 = only the node's own maximum (4194304). Default\n"
            "                 1048576; a tenant's own: escrowctl tenant limits\n"
            "  --fair-slots   while several tenants write on this node, each gets at most\n"
            "                 MAX decisions per group commit, fewer (down to MIN) while\n"
            "                 commits are slow; its further requests wait their turn.\n"
            "                 A tenant alone is never held back. Default 8:64; 64 (fixed)\n"
            "                 gives a flood its throughput back at the others' latency\n"
            "  --fair-slack   a commit slower than PCT %% of the node's fastest of the last\n"
            "                 5 to 10 s (and by over 1 ms) halves --fair-slots; a faster one\n"
            "                 gives one back. 100..10000, default 150\n"
            "  --conn-per-peer  TCP connections one IP address may hold open; more are\n"
            "                 closed at accept. 0 = no cap. Default 1024\n"
            "  --conn-idle-s  a connection that sent no byte for this long is closed.\n"
            "                 0 = never. Default 600\n"
            "  --commit-streams  PostgreSQL connections that commit batches at the same\n"
            "                 time, each on other segments: a request waits only for the\n"
            "                 commits of its own segment. 1..%d, default %d\n"
            "  --check-config read and check the settings and the files they name, print\n"
            "                 \"configuration ok\" and exit 0 (2 and the error if not); opens\n"
            "                 nothing\n"
            "  --version      print the version and the git commit, and exit\n"
            "Signals: SIGTERM/SIGINT stop cleanly; SIGHUP re-reads the config file and the\n"
            "cluster key file and applies the log level and format, the rate limits, the fair\n"
            "slots and slack and the cluster key (the rest needs a restart, as the log\n"
            "says).\n",
            NODE_STREAMS_MAX, NODE_STREAMS_DEFAULT);
}

void node_settings_init(node_settings *s)
{
    memset(s, 0, sizeof *s);
    s->log_level = ESC_LOG_INFO;
    s->log_format = ESC_LOG_TEXT;
    s->node.rate_tenant = NODE_FAIR_RATE_DEFAULT;
    s->node.rate_tenant_burst = NODE_FAIR_BURST_DEFAULT;
    s->node.live_holds_tenant = NODE_FAIR_LIVE_HOLDS_DEFAULT;
    /* the adaptive share by default: with two commit streams it keeps a
     * quiet tenant's p99 within 2x of its p99 alone while another floods
     * the node, at the flood's cost (docs/performance.md); --fair-slots 64
     * gives a flood its throughput back */
    s->node.fair_slots_min = SEG_SHARE_SLOTS_MIN;
    s->node.fair_slots_max = SEG_SHARE_SLOTS_MAX;
    s->node.fair_slack_pct = SEG_SHARE_SLACK_PCT;
    s->node.conn_per_peer = CONN_GUARD_PER_PEER_DEFAULT;
    s->node.conn_idle_s = CONN_GUARD_IDLE_S_DEFAULT;
    s->node.commit_streams = NODE_STREAMS_DEFAULT;
}

static int set_string(node_settings *s, int opt, const char *v, char *why, size_t why_len)
{
    const char *copy = config_strs_dup(&s->strs, v);
    switch (opt) {
    case 'n':
        s->node.node_id = copy;
        return 0;
    case 'l':
        if (s->node.nlisten == NODE_LISTEN_MAX) {
            snprintf(why, why_len, "at most %d endpoints", NODE_LISTEN_MAX);
            return -1;
        }
        s->node.listen[s->node.nlisten++] = copy;
        return 0;
    case 'd':
        s->node.dsn = copy;
        return 0;
    case 'c':
        s->node.coordinator = copy;
        return 0;
    case 'a':
        s->node.advertise = copy;
        return 0;
    case 'R':
        s->region = copy;
        return 0;
    default: /* 'K' */
        s->cluster_key_file = copy;
        return 0;
    }
}

/* --fair-slots MIN:MAX (or N: both), 1 <= MIN <= MAX <= ESC_BATCH_ROWS_MAX. */
static int set_fair_slots(node_config *c, const char *v, char *why, size_t why_len)
{
    char *end;
    long lo = strtol(v, &end, 10), hi = lo;
    if (*end == ':') {
        const char *h = end + 1;
        hi = strtol(h, &end, 10);
        if (*h == '\0') {
            end = (char *)h - 1;
        }
    }
    if (*v == '\0' || *end != '\0' || lo < 1 || hi < lo || hi > ESC_BATCH_ROWS_MAX) {
        snprintf(why, why_len, "takes MIN:MAX or N, 1 <= MIN <= MAX <= %d, not '%s'",
                 ESC_BATCH_ROWS_MAX, v);
        return -1;
    }
    c->fair_slots_min = (uint32_t)lo;
    c->fair_slots_max = (uint32_t)hi;
    return 0;
}

static int set_number(node_settings *s, int opt, const char *v, char *why, size_t why_len)
{
    if (opt == 'Q') {
        return set_fair_slots(&s->node, v, why, why_len);
    }
    if (opt == 's') {
        char *end;
        long x = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || x < 1 || x > 10000) {
            snprintf(why, why_len, "must be 1..10000, not '%s'", v);
            return -1;
        }
        s->node.sweep_ms = (uint32_t)x;
        return 0;
    }
    if (opt == 'W') {
        if (auth_parse_window(v, &s->node.auth_window_ms) != 0) {
            snprintf(why, why_len, "takes %u..%u, not '%s'", AUTH_WINDOW_MS_MIN, AUTH_WINDOW_MS_MAX,
                     v);
            return -1;
        }
        return 0;
    }
    if (opt == 'H' || opt == 'P' || opt == 'I' || opt == 'G' || opt == 'S') {
        long min = opt == 'G' ? 100 : opt == 'S' ? 1 : 0;
        long max = opt == 'H'   ? (long)ESC_LIVE_HOLDS_MAX
                   : opt == 'P' ? 1000000
                   : opt == 'G' ? 10000
                   : opt == 'S' ? NODE_STREAMS_MAX
                                : 86400;
        char *end;
        long x = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || x < min || x > max) {
            snprintf(why, why_len, "must be %ld..%ld, not '%s'", min, max, v);
            return -1;
        }
        uint32_t *to = opt == 'H'   ? &s->node.live_holds_tenant
                       : opt == 'P' ? &s->node.conn_per_peer
                       : opt == 'G' ? &s->node.fair_slack_pct
                       : opt == 'S' ? &s->node.commit_streams
                                    : &s->node.conn_idle_s;
        *to = (uint32_t)x;
        return 0;
    }
    node_config *c = &s->node;
    if (ratelim_parse(v, opt == 'T' ? &c->rate_tenant : &c->rate_buyer,
                      opt == 'T' ? &c->rate_tenant_burst : &c->rate_buyer_burst) != 0) {
        snprintf(why, why_len, "takes N or N:BURST (0..1000000 each), not '%s'", v);
        return -1;
    }
    return 0;
}

/* One option's value: the command line's and the config file's setter
 * (config_set_fn). */
static int set_opt(void *arg, int opt, const char *v, char *why, size_t why_len)
{
    node_settings *s = arg;
    char host[METRICS_HTTP_ADDR_LEN_MAX + 1];
    uint16_t port;
    switch (opt) {
    case 'v':
        return config_parse_log_level(v, &s->log_level, why, why_len);
    case 'f':
        return config_parse_log_format(v, &s->log_format, why, why_len);
    case 'A':
        return config_parse_onoff(v, &s->node.auth, why, why_len);
    case 'm':
        if (metrics_http_parse(v, host, sizeof host, &port) != 0) {
            snprintf(why, why_len, "takes PORT, HOST:PORT or [IPV6]:PORT, not '%s'", v);
            return -1;
        }
        s->node.metrics = config_strs_dup(&s->strs, v);
        return 0;
    case 's':
    case 'T':
    case 'B':
    case 'H':
    case 'P':
    case 'I':
    case 'W':
    case 'Q':
    case 'G':
    case 'S':
        return set_number(s, opt, v, why, why_len);
    default:
        return set_string(s, opt, v, why, why_len);
    }
}

int node_settings_args(node_settings *s, int argc, char **argv, bool *show_usage, char *err,
                       size_t errlen)
{
    config_argv_out out = {s->given, &s->config, &s->check_only, show_usage};
    int rc = config_argv(&spec, argc, argv, set_opt, s, &out, err, errlen);
    if (rc == CONFIG_ARGV_HELP) {
        node_settings_usage(stdout);
    } else if (rc == CONFIG_ARGV_VERSION) {
        build_info_print(stdout, "escrow-segment");
    }
    return rc > 0 ? 1 : rc;
}

void node_settings_fork(node_settings *dst, const node_settings *argv_only)
{
    *dst = *argv_only;
    memset(&dst->strs, 0, sizeof dst->strs);
    dst->region_cfg = NULL;
}

void node_settings_free(node_settings *s)
{
    config_strs_free(&s->strs);
    free(s->region_cfg);
    s->region_cfg = NULL;
}

/* The region file fills the dsn, the coordinator and the node's endpoint;
 * it excludes the options that name them. */
static int apply_region(node_settings *s, char *err, size_t errlen)
{
    node_config *c = &s->node;
    if (c->dsn != NULL || c->nlisten > 0 || c->coordinator != NULL) {
        snprintf(err, errlen,
                 "%s excludes --dsn, --listen and --coordinator (the region file names them)",
                 s->region_by);
        return -1;
    }
    s->region_cfg = esc_xmalloc(sizeof *s->region_cfg);
    char why[REGION_ERR_LEN];
    if (region_cfg_load(s->region, s->region_cfg, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    if (c->node_id == NULL) {
        snprintf(err, errlen, "%s needs --node-id ID (a key of [nodes] in %s)", s->region_by,
                 s->region);
        return -1;
    }
    const region_node *n = region_cfg_node(s->region_cfg, c->node_id);
    if (n == NULL) {
        snprintf(err, errlen, "%s: no node '%s' in [nodes]", s->region, c->node_id);
        return -1;
    }
    c->dsn = s->region_cfg->dsn;
    c->coordinator = s->region_cfg->coordinator;
    c->listen[0] = n->endpoint;
    c->nlisten = 1;
    if (c->advertise == NULL) {
        c->advertise = n->endpoint;
    }
    return 0;
}

/* --config: the node's file, or (first section [region]) a region file. */
static int read_config(node_settings *s, char *err, size_t errlen)
{
    const config_region_ref r = {&s->region, &s->region_by, s->region_by_buf,
                                 sizeof s->region_by_buf, 'R'};
    return config_load_or_region(&spec, s->config, s->given, set_opt, s, &r, err, errlen);
}

/* What needs every setting. */
static int check(const node_settings *s, bool *show_usage, char *err, size_t errlen)
{
    const node_config *c = &s->node;
    if (c->node_id == NULL || !wire_id_valid(c->node_id, ESC_TENANT_LEN_MAX) || c->nlisten == 0 ||
        c->dsn == NULL) {
        *show_usage = true;
        snprintf(err, errlen,
                 "--node-id (printable, <= 64 bytes), --listen and a DSN (--dsn or "
                 "$ESCROW_DSN) are required");
        return -1;
    }
    if ((c->advertise != NULL && c->coordinator == NULL) ||
        (c->advertise != NULL &&
         (c->advertise[0] == '\0' || strlen(c->advertise) > ESC_ENDPOINT_LEN_MAX)) ||
        (c->coordinator != NULL && c->coordinator[0] == '\0') ||
        (c->coordinator != NULL && c->advertise == NULL &&
         strlen(c->listen[0]) > ESC_ENDPOINT_LEN_MAX)) {
        snprintf(err, errlen, "--advertise needs --coordinator; endpoints are 1..%d bytes",
                 ESC_ENDPOINT_LEN_MAX);
        return -1;
    }
    return 0;
}

int node_settings_files(node_settings *s, bool *show_usage, char *err, size_t errlen)
{
    *show_usage = false;
    if (s->region != NULL) {
        s->region_by = "--region";
    }
    if (s->config != NULL && read_config(s, err, errlen) != 0) {
        return -1;
    }
    if (s->region != NULL && apply_region(s, err, errlen) != 0) {
        *show_usage = strstr(err, "excludes") != NULL;
        return -1;
    }
    if (s->node.dsn == NULL) {
        s->node.dsn = getenv("ESCROW_DSN");
    }
    if (check(s, show_usage, err, errlen) != 0) {
        return -1;
    }
    bool have = false;
    if (auth_cluster_keys_load(s->cluster_key_file, s->cluster_key, s->cluster_key_prev, &have, err,
                               errlen) != 0) {
        return -1;
    }
    s->node.cluster_key = have ? s->cluster_key : NULL;
    s->node.cluster_key_prev = s->cluster_key_prev[0] != '\0' ? s->cluster_key_prev : NULL;
    return 0;
}

/* "tcp://a tcp://b": the listen endpoints, for messages. */
static void listen_text(const node_config *c, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < c->nlisten && n < cap; i++) {
        int w = snprintf(out + n, cap - n, "%s%s", i ? " " : "", c->listen[i]);
        n += w > 0 ? (size_t)w : 0;
    }
}

static int diff_keys(const node_settings *a, const node_settings *b)
{
    char ka[32], kb[32], pa[32], pb[32];
    auth_key_id_text(a->node.cluster_key, ka, sizeof ka);
    auth_key_id_text(b->node.cluster_key, kb, sizeof kb);
    auth_key_id_text(a->cluster_key_prev, pa, sizeof pa);
    auth_key_id_text(b->cluster_key_prev, pb, sizeof pb);
    int n = config_note_change("SEG-RELOAD", "cluster_key", ka, kb, true, false);
    n += config_note_change("SEG-RELOAD", "cluster_key (previous, accepted)", pa, pb, true, false);
    if (n == 0 && a->node.cluster_key != NULL && b->node.cluster_key != NULL &&
        strcmp(a->node.cluster_key, b->node.cluster_key) != 0) {
        n += config_note_change("SEG-RELOAD", "cluster_key secret", "a", "b", true, true);
    }
    return n;
}

int node_settings_diff(const node_settings *a, const node_settings *b)
{
    const node_config *x = &a->node, *y = &b->node;
    char lx[1200], ly[1200], nx[64], ny[64];
    listen_text(x, lx, sizeof lx);
    listen_text(y, ly, sizeof ly);
    const char *id = "SEG-RELOAD";
    int n = config_note_log_changes(id, a->log_level, b->log_level, a->log_format, b->log_format);
    snprintf(nx, sizeof nx, "%u:%u", x->rate_tenant, x->rate_tenant_burst);
    snprintf(ny, sizeof ny, "%u:%u", y->rate_tenant, y->rate_tenant_burst);
    n += config_note_change(id, "rate_tenant", nx, ny, true, false);
    snprintf(nx, sizeof nx, "%u:%u", x->rate_buyer, x->rate_buyer_burst);
    snprintf(ny, sizeof ny, "%u:%u", y->rate_buyer, y->rate_buyer_burst);
    n += config_note_change(id, "rate_buyer", nx, ny, true, false);
    snprintf(nx, sizeof nx, "%u", x->live_holds_tenant);
    snprintf(ny, sizeof ny, "%u", y->live_holds_tenant);
    n += config_note_change(id, "live_holds_tenant", nx, ny, true, false);
    snprintf(nx, sizeof nx, "%u:%u %u%%", x->fair_slots_min, x->fair_slots_max, x->fair_slack_pct);
    snprintf(ny, sizeof ny, "%u:%u %u%%", y->fair_slots_min, y->fair_slots_max, y->fair_slack_pct);
    n += config_note_change(id, "fair_slots fair_slack", nx, ny, true, false);
    snprintf(nx, sizeof nx, "%u:%u", x->conn_per_peer, x->conn_idle_s);
    snprintf(ny, sizeof ny, "%u:%u", y->conn_per_peer, y->conn_idle_s);
    n += config_note_change(id, "conn_per_peer:conn_idle_s", nx, ny, true, false);
    n += diff_keys(a, b);
    n += config_note_change(id, "node_id", x->node_id, y->node_id, false, false);
    n += config_note_change(id, "listen", lx, ly, false, false);
    n += config_note_change(id, "dsn", x->dsn, y->dsn, false, true);
    n += config_note_change(id, "coordinator", x->coordinator, y->coordinator, false, false);
    n += config_note_change(id, "advertise", x->advertise, y->advertise, false, false);
    n += config_note_change(id, "metrics", x->metrics, y->metrics, false, false);
    n += config_note_change(id, "auth", x->auth ? "on" : "off", y->auth ? "on" : "off", false,
                            false);
    snprintf(nx, sizeof nx, "%u", x->commit_streams);
    snprintf(ny, sizeof ny, "%u", y->commit_streams);
    n += config_note_change(id, "commit_streams", nx, ny, false, false);
    snprintf(nx, sizeof nx, "%u", x->sweep_ms ? x->sweep_ms : 50);
    snprintf(ny, sizeof ny, "%u", y->sweep_ms ? y->sweep_ms : 50);
    n += config_note_change(id, "sweep_ms", nx, ny, false, false);
    n += config_note_change(id, "region", a->region, b->region, false, false);
    return n;
}

void node_settings_take_reloadable(node_settings *running, const node_settings *fresh)
{
    running->log_level = fresh->log_level;
    running->log_format = fresh->log_format;
    node_config *r = &running->node;
    const node_config *f = &fresh->node;
    r->rate_tenant = f->rate_tenant;
    r->rate_tenant_burst = f->rate_tenant_burst;
    r->rate_buyer = f->rate_buyer;
    r->rate_buyer_burst = f->rate_buyer_burst;
    r->live_holds_tenant = f->live_holds_tenant;
    r->fair_slots_min = f->fair_slots_min;
    r->fair_slots_max = f->fair_slots_max;
    r->fair_slack_pct = f->fair_slack_pct;
    r->conn_per_peer = f->conn_per_peer;
    r->conn_idle_s = f->conn_idle_s;
    memcpy(running->cluster_key, fresh->cluster_key, sizeof running->cluster_key);
    memcpy(running->cluster_key_prev, fresh->cluster_key_prev, sizeof running->cluster_key_prev);
    r->cluster_key = f->cluster_key != NULL ? running->cluster_key : NULL;
    r->cluster_key_prev = f->cluster_key_prev != NULL ? running->cluster_key_prev : NULL;
}
