/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow-load.c - escrow-load: replays a flash sale against a segment node
 * (--endpoint) or a cluster (--coordinator, libescrow's routing mode).
 *
 * Thin: parses argv, runs load_run() on one uv loop, reads the item's
 * counters from PostgreSQL when --dsn is given (counters.c; in routing mode
 * ESCROW_DSN is the default), prints a human summary and one
 * machine-readable RESULT line. stranded= is the units left available in a
 * segment, in flight between segments or unallocated when the run ended,
 * if any buyer was told SOLD_OUT (0 otherwise): a correct sellout leaves 0. Exit status: 0 the run
 * completed (rejections are outcomes, not failures), 1 oversold, conservation
 * violated or the counters could not be read, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_info.h"
#include "counters.h"
#include "escrow.h"
#include "esc_limits.h"
#include "load.h"

#define EXIT_USAGE 2
#define PREFIX_LEN_MAX (ESC_ID_MAX - 21) /* "-" and up to 20 digits of the index */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: escrow-load (--endpoint URL | --coordinator URL [--routes URL])\n"
            "         [--tenant T] [--item I] [--buyers N] [--skew HOT%%:SEGMENTS%% --segments N]\n"
            "         [--concurrency C] [--qty Q] [--think-ms MS] [--confirm P] [--release P]\n"
            "         [--ttl-ms MS] [--deadline-ms MS] [--seed N] [--dsn DSN]\n"
            "         [--key-prefix S] [--buyer-pool N] [--give-up-ms MS]\n"
            "         [--try-later-retries N] [--quiet] [--credential FILE]\n"
            "       escrow-load --version\n"
            "defaults: tenant t1, item item-1, buyers 100000, concurrency 1000, qty 1,\n"
            "  think-ms 0, confirm 0.7, release 0.2 (the rest abandons its hold), ttl-ms 0\n"
            "  (the item's), deadline-ms 0 (5000), seed 1, key-prefix load-<seed>-<item>,\n"
            "  buyer-pool 0 (every request a different buyer; N: buyer ids \"buyer-<i mod N>\",\n"
            "  shared by processes: exercises per-buyer maximums), give-up-ms 60000,\n"
            "  try-later-retries 0 (no count bound)\n"
            "TRY_LATER is asked again with the same key after a backoff with jitter (25-50 ms,\n"
            "  doubling up to 1-2 s); a buyer gives up --give-up-ms after its first TRY_LATER\n"
            "  (or after --try-later-retries retries). The run's time is run_s= in RESULT.\n"
            "--coordinator: routing mode (the coordinator's request endpoint; --routes its\n"
            "  route PUB endpoint); --dsn defaults to $ESCROW_DSN there.\n"
            "--skew 80:20 --segments 16: 80%% of the buyers get ids that hash onto the first\n"
            "  20%% of the 16 segment slots (esc_route_slot), the rest onto the others.\n"
            "--credential FILE: the tenant's key (escrowctl key create; default: $ESCROW_KEY),\n"
            "  needed when the daemons run with --auth on.\n");
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (s[0] == '-') {
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_ratio(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0.0 && v <= 1.0)) {
        return -1;
    }
    *out = v;
    return 0;
}

typedef struct cli_args {
    load_config cfg;
    const char *dsn;
    char prefix[ESC_ID_MAX + 1];
} cli_args;

static const struct option long_opts[] = {
    {"endpoint", required_argument, NULL, 'e'},
    {"coordinator", required_argument, NULL, 'o'},
    {"routes", required_argument, NULL, 'u'},
    {"skew", required_argument, NULL, 'S'},
    {"segments", required_argument, NULL, 'g'},
    {"tenant", required_argument, NULL, 't'},
    {"item", required_argument, NULL, 'i'},
    {"buyers", required_argument, NULL, 'n'},
    {"concurrency", required_argument, NULL, 'c'},
    {"qty", required_argument, NULL, 'q'},
    {"think-ms", required_argument, NULL, 'T'},
    {"confirm", required_argument, NULL, 'C'},
    {"release", required_argument, NULL, 'R'},
    {"ttl-ms", required_argument, NULL, 'L'},
    {"deadline-ms", required_argument, NULL, 'D'},
    {"seed", required_argument, NULL, 's'},
    {"dsn", required_argument, NULL, 'd'},
    {"key-prefix", required_argument, NULL, 'k'},
    {"try-later-retries", required_argument, NULL, 'r'},
    {"give-up-ms", required_argument, NULL, 'G'},
    {"buyer-pool", required_argument, NULL, 'P'},
    {"quiet", no_argument, NULL, 'Q'},
    {"credential", required_argument, NULL, 'K'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* "HOT:SEGS", each 1..100 (percent). */
static int parse_skew(load_config *cfg, const char *v)
{
    char *end = NULL;
    errno = 0;
    unsigned long hot = strtoul(v, &end, 10);
    if (errno != 0 || end == v || *end != ':' || hot < 1 || hot > 100 || v[0] == '-') {
        return -1;
    }
    const char *p = end + 1;
    unsigned long segs = strtoul(p, &end, 10);
    if (errno != 0 || end == p || *end != '\0' || segs < 1 || segs > 100 || p[0] == '-') {
        return -1;
    }
    cfg->hot_pct = (uint32_t)hot;
    cfg->hot_segments_pct = (uint32_t)segs;
    return 0;
}

static const char *opt_name(int ch)
{
    for (const struct option *o = long_opts; o->name != NULL; o++) {
        if (o->val == ch) {
            return o->name;
        }
    }
    return "?";
}

/* Numeric options: where each goes and its bounds. */
static int parse_number(load_config *cfg, int ch, const char *v)
{
    uint64_t u = 0;
    switch (ch) {
    case 's':
        return parse_u64(v, 0, UINT64_MAX, &cfg->seed);
    case 'n':
        return parse_u64(v, 1, LOAD_BUYERS_MAX, &cfg->buyers);
    case 'C':
        return parse_ratio(v, &cfg->confirm);
    case 'R':
        return parse_ratio(v, &cfg->release);
    default:
        break;
    }
    static const struct {
        int ch;
        uint64_t lo, hi;
    } bounds[] = {
        {'c', 1, LOAD_CONCURRENCY_MAX}, {'q', 1, ESC_QTY_MAX},
        {'T', 0, LOAD_THINK_MS_MAX},    {'L', 0, ESC_TTL_MS_MAX},
        {'D', 0, ESC_DEADLINE_MS_MAX},  {'r', 0, LOAD_TRY_LATER_RETRIES_MAX},
        {'P', 0, UINT32_MAX},           {'g', 1, LOAD_SEGMENTS_MAX},
        {'G', 0, LOAD_GIVE_UP_MS_MAX},
    };
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        if (bounds[i].ch != ch) {
            continue;
        }
        if (parse_u64(v, bounds[i].lo, bounds[i].hi, &u) < 0) {
            return -1;
        }
        uint32_t *dst[] = {&cfg->concurrency, NULL,
                           &cfg->think_ms,    &cfg->ttl_ms,
                           &cfg->deadline_ms, &cfg->try_later_retries,
                           &cfg->buyer_pool,  &cfg->segments,
                           &cfg->give_up_ms};
        if (dst[i] == NULL) {
            cfg->qty = (int64_t)u;
        } else {
            *dst[i] = (uint32_t)u;
        }
        return 0;
    }
    return -1;
}

/* One option; returns 0, or -1 with a message on stderr. */
/* --credential FILE: the first line, surrounding whitespace removed. */
static int read_credential(cli_args *a, const char *path)
{
    static char key[ESC_CREDENTIAL_LEN_MAX + 2];
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(key, sizeof key, f) == NULL) {
        fprintf(stderr, "escrow-load: cannot read a key from %s\n", path);
        if (f != NULL) {
            fclose(f);
        }
        return -1;
    }
    fclose(f);
    key[strcspn(key, "\r\n \t")] = '\0';
    a->cfg.credential = key;
    return 0;
}

static int parse_opt(cli_args *a, int ch, const char *v)
{
    switch (ch) {
    case 'e':
        a->cfg.endpoint = v;
        return 0;
    case 'o':
        a->cfg.coordinator = v;
        return 0;
    case 'u':
        a->cfg.routes = v;
        return 0;
    case 'S':
        if (parse_skew(&a->cfg, v) < 0) {
            fprintf(stderr,
                    "escrow-load: bad value '%s' for --skew (want HOT%%:SEGMENTS%%, 1..100)\n", v);
            return -1;
        }
        return 0;
    case 't':
        a->cfg.tenant_id = v;
        return 0;
    case 'i':
        a->cfg.item_id = v;
        return 0;
    case 'd':
        a->dsn = v;
        return 0;
    case 'k':
        a->cfg.key_prefix = v;
        return 0;
    case 'Q':
        a->cfg.quiet = true;
        return 0;
    case 'K':
        return read_credential(a, v);
    default:
        break;
    }
    if (parse_number(&a->cfg, ch, v) < 0) {
        fprintf(stderr, "escrow-load: bad value '%s' for --%s\n", v, opt_name(ch));
        return -1;
    }
    return 0;
}

static void defaults(cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->cfg.tenant_id = "t1";
    a->cfg.item_id = "item-1";
    a->cfg.buyers = 100000;
    a->cfg.concurrency = 1000;
    a->cfg.qty = 1;
    a->cfg.confirm = 0.7;
    a->cfg.release = 0.2;
    a->cfg.seed = 1;
    a->cfg.give_up_ms = 60000;
    a->cfg.try_later_retries = 0;
    a->cfg.credential = getenv("ESCROW_KEY");
}

/* 1..ESC_ID_MAX bytes of printable ASCII, as every escrow id. */
static bool id_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > ESC_ID_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) {
            return false;
        }
    }
    return true;
}

/* Cross-option checks after parsing. Returns 0 or -1 with a message. */
static int check_args(cli_args *a)
{
    const load_config *c = &a->cfg;
    if ((c->endpoint == NULL) == (c->coordinator == NULL)) {
        fprintf(stderr, "escrow-load: give exactly one of --endpoint and --coordinator\n");
        return -1;
    }
    if (c->routes != NULL && c->coordinator == NULL) {
        fprintf(stderr, "escrow-load: --routes goes with --coordinator\n");
        return -1;
    }
    if ((c->hot_pct != 0) != (c->segments != 0)) {
        fprintf(stderr, "escrow-load: --skew and --segments go together\n");
        return -1;
    }
    if (c->coordinator != NULL && a->dsn == NULL) {
        const char *env = getenv("ESCROW_DSN");
        a->dsn = env != NULL && env[0] != '\0' ? env : NULL;
    }
    if (!id_valid(c->tenant_id) || strlen(c->tenant_id) > ESC_TENANT_LEN_MAX ||
        !id_valid(c->item_id)) {
        fprintf(stderr, "escrow-load: --tenant and --item must be printable ASCII ids\n");
        return -1;
    }
    if (c->confirm + c->release > 1.0 + 1e-9) {
        fprintf(stderr, "escrow-load: --confirm plus --release must not exceed 1\n");
        return -1;
    }
    if (c->ttl_ms != 0 && c->ttl_ms < ESC_TTL_MS_MIN) {
        fprintf(stderr, "escrow-load: --ttl-ms must be 0 or at least 50\n");
        return -1;
    }
    if (c->key_prefix == NULL) {
        /* the item in the key: a rerun against another item of the same tenant
         * must not collide with the keys of an earlier run (a key is forever) */
        snprintf(a->prefix, sizeof a->prefix, "load-%" PRIu64 "-%.*s", c->seed, PREFIX_LEN_MAX - 26,
                 c->item_id);
        a->cfg.key_prefix = a->prefix;
    }
    /* Skewed buyer ids carry a "~<n>" suffix after the key. */
    int prefix_max = c->segments != 0 ? PREFIX_LEN_MAX - LOAD_SKEW_SUFFIX_LEN : PREFIX_LEN_MAX;
    if (!id_valid(c->key_prefix) || strlen(c->key_prefix) > (size_t)prefix_max) {
        fprintf(stderr, "escrow-load: --key-prefix must be printable ASCII, at most %d bytes\n",
                prefix_max);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, cli_args *a)
{
    defaults(a);
    int ch;
    while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            exit(0);
        }
        if (ch == 'V') {
            build_info_print(stdout, "escrow-load");
            exit(0);
        }
        if (ch == '?' || parse_opt(a, ch, optarg) < 0) {
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "escrow-load: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    return check_args(a);
}

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

static void print_summary(const load_config *c, const load_stats *st)
{
    double rate = st->run_s > 0 ? (double)st->holds_ok / st->run_s : 0.0;
    printf("escrow-load: %" PRIu64 " buyers for %s/%s, %u in flight, qty %" PRId64 ", %.2f s\n",
           c->buyers, c->tenant_id, c->item_id, c->concurrency, c->qty, st->run_s);
    printf("  holds ok         %10" PRIu64 "  (%.0f/s, p50 %.2f ms, p99 %.2f ms)\n", st->holds_ok,
           rate, ms(hist_quantile(&st->hold_latency_us, 0.50)),
           ms(hist_quantile(&st->hold_latency_us, 0.99)));
    printf("  then confirmed   %10" PRIu64 "  released %" PRIu64 ", abandoned %" PRIu64
           " (failed: confirm %" PRIu64 ", release %" PRIu64 ")\n",
           st->confirmed, st->released, st->abandoned, st->confirm_errors, st->release_errors);
    printf("  sold out         %10" PRIu64 "\n", st->rejected_sold_out);
    printf("  try later        %10" PRIu64 "  (still, after %" PRIu64 " retries in all)\n",
           st->rejected_try_later, st->try_later_retries);
    printf("  segment empty    %10" PRIu64 "\n", st->rejected_segment_empty);
    printf("  reserve errors   %10" PRIu64 "\n", st->reserve_errors);
    if (c->coordinator != NULL) {
        printf("  routing          sold out from cache %" PRIu64 ", route fetches %" PRIu64
               ", pushes %" PRIu64 ", retargets %" PRIu64 ", frames %" PRIu64 "\n",
               st->client.sold_out_cached, st->client.route_fetches, st->client.route_pushes,
               st->client.retargets, st->client.frames_sent);
    }
    if (c->segments != 0) {
        printf("  skew             %" PRIu64 " of %" PRIu64
               " buyers on the first %u%% of %u slots\n",
               st->hot_buyers, st->buyers_done, c->hot_segments_pct, c->segments);
    }
    for (int i = 0; i < LOAD_ERR_KINDS; i++) {
        if (st->errors_by_kind[i] != 0) {
            printf("    %-22s %" PRIu64 "\n", i == 0 ? "UNKNOWN" : esc_err_name(-i),
                   st->errors_by_kind[i]);
        }
    }
}

/* Prints the RESULT line; returns the exit status. */
static int print_result(const cli_args *a, const load_stats *st)
{
    char db[256];
    int status = 0;
    if (a->dsn == NULL) {
        snprintf(db, sizeof db,
                 "total=? sold=? held=? available=? oversold=? conservation=? stranded=?");
        if (!a->cfg.quiet) {
            printf("  no --dsn: stock counters not read from PostgreSQL\n");
        }
    } else {
        load_counters c;
        char why[512] = "";
        int rc = load_counters_read(a->dsn, a->cfg.tenant_id, a->cfg.item_id, &c, why, sizeof why);
        if (rc < 0) {
            fprintf(stderr, "escrow-load: cannot read counters (%s): %s\n", esc_err_name(rc), why);
            snprintf(db, sizeof db,
                     "total=? sold=? held=? available=? oversold=? conservation=? stranded=?");
            status = 1;
        } else {
            int64_t over = c.sold + c.held - c.total;
            over = over > 0 ? over : 0;
            /* Units a buyer could still have had while someone heard SOLD_OUT. */
            int64_t stranded =
                st->rejected_sold_out > 0 ? c.available + c.in_flight + c.unallocated : 0;
            snprintf(db, sizeof db,
                     "total=%" PRId64 " sold=%" PRId64 " held=%" PRId64 " available=%" PRId64
                     " oversold=%" PRId64 " conservation=%s stranded=%" PRId64,
                     c.total, c.sold, c.held, c.available, over, c.ok ? "ok" : "VIOLATED",
                     stranded);
            status = over > 0 || !c.ok ? 1 : 0;
        }
    }
    uint64_t errors = st->reserve_errors + st->confirm_errors + st->release_errors;
    printf("RESULT %s holds_ok=%" PRIu64 " holds_per_s=%.0f p50_ms=%.1f p99_ms=%.1f"
           " rejected_sold_out=%" PRIu64 " rejected_try_later=%" PRIu64
           " rejected_segment_empty=%" PRIu64 " errors=%" PRIu64 " sold_out_cached=%" PRIu64
           " run_s=%.1f\n",
           db, st->holds_ok, st->run_s > 0 ? (double)st->holds_ok / st->run_s : 0.0,
           ms(hist_quantile(&st->hold_latency_us, 0.50)),
           ms(hist_quantile(&st->hold_latency_us, 0.99)), st->rejected_sold_out,
           st->rejected_try_later, st->rejected_segment_empty, errors, st->client.sold_out_cached,
           st->run_s);
    return status;
}

int main(int argc, char **argv)
{
    static cli_args args;
    static load_stats stats;
    if (parse_args(argc, argv, &args) < 0) {
        return EXIT_USAGE;
    }
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "escrow-load: cannot create the event loop\n");
        return 1;
    }
    int rc = load_run(&loop, &args.cfg, &stats);
    if (uv_loop_close(&loop) != 0) {
        fprintf(stderr, "escrow-load: event loop still busy at exit\n");
    }
    if (rc < 0) {
        fprintf(stderr, "escrow-load: cannot start: %s (%s)\n", esc_strerror(rc), esc_err_name(rc));
        return rc == ESC_EINVAL ? EXIT_USAGE : 1;
    }
    if (!args.cfg.quiet) {
        print_summary(&args.cfg, &stats);
    }
    int status = print_result(&args, &stats);
    fflush(stdout);
    return status;
}
