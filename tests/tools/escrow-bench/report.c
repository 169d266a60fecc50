/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c - `escrow-bench report FILE`: the BENCH lines of one run (written
 * by the measurements, collected by tests/support/bench.sh) become the
 * side-by-side table, the ratios and one RESULT line.
 *
 * Every figure comes from FILE; the only constants here are the figures
 * measured before escrow was written (docs/performance.md, "Measured before
 * the code"), printed next to the figures as text for comparison and never
 * used in a computation. A Redis figure is "skipped"
 * when the run says redis-server was not installed (redis_skipped=1); any
 * other missing figure is an error (exit 1), so a broken measurement cannot
 * pass as a result.
 *
 * bench.sh repeats each measurement and writes one line of medians, each key
 * with its range next to it (<key>_min, <key>_max); the table shows the
 * range, and the RESULT line carries every key with _min and _max (a run of
 * one repetition: all three equal). A ratio's range is the widest its two
 * figures' ranges allow (lowest numerator over highest denominator ...).
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_KEYS_MAX 4096u
#define REPORT_LINE_MAX 32768u
#define REPORT_KEY_LEN 64u

typedef struct kv {
    char key[REPORT_KEY_LEN];
    double value;
} kv;

typedef struct kvs {
    kv items[REPORT_KEYS_MAX];
    size_t n;
} kvs;

/* One figure of the table and of the RESULT line. */
typedef struct row {
    const char *result_key; /* name in the RESULT line */
    const char *source;     /* key in the BENCH lines, or NULL: computed */
    const char *what;
    const char *unit;
    const char *notes; /* measured before the code (docs/performance.md), for comparison only */
    bool redis;        /* skipped without redis-server */
} row;

static const row ROWS[] = {
    {"a1_tps", "a1_ok_s", "A: one hot row, conditional UPDATE, 1 connection", "tx/s", "4,900",
     false},
    {"a1_p99_ms", "a1_ok_p99_ms", "A: p99, 1 connection", "ms", "", false},
    {"a128_tps", "a128_ok_s", "A: one hot row, 128 connections", "tx/s", "1,300", false},
    {"a128_p99_ms", "a128_ok_p99_ms", "A: p99, 128 connections", "ms", "490", false},
    {"b100_tps", "b100_ok_s", "B: 100 rows, random row, 128 connections", "tx/s", "14,000", false},
    {"b100_p99_ms", "b100_ok_p99_ms", "B: p99", "ms", "", false},
    {"pg_no_s", "ano_no_s", "PostgreSQL's \"no\" (row at 0), 128 connections", "answers/s",
     "40,000", false},
    {"redis_mem_ops", "cmem_ok_s", "C: Redis Lua gate, no persistence (NOT durable)", "ops/s",
     "52,000", true},
    {"redis_mem_p99_ms", "cmem_ok_p99_ms", "C: p99, no persistence", "ms", "", true},
    {"redis_aof_ops", "caof_ok_s", "C: Redis Lua gate, appendfsync always", "ops/s", "26-33,000",
     true},
    {"redis_aof_p99_ms", "caof_ok_p99_ms", "C: p99, appendfsync always", "ms", "", true},
    {"redis_no_s", "cno_no_s", "C: Redis gate's \"no\" (stock 0), no persistence", "answers/s", "",
     true},
    {"esc1_holds_s", "e1_ok_s", "escrow, 1 node: durable holds", "holds/s", "", false},
    {"esc1_p50_ms", "e1_ok_p50_ms", "escrow, 1 node: hold p50", "ms", "", false},
    {"esc1_p99_ms", "e1_ok_p99_ms", "escrow, 1 node: hold p99", "ms", "", false},
    {"esc2_holds_s", "e2_ok_s", "escrow, 2 nodes: durable holds", "holds/s", "", false},
    {"esc2_p50_ms", "e2_ok_p50_ms", "escrow, 2 nodes: hold p50", "ms", "", false},
    {"esc2_p99_ms", "e2_ok_p99_ms", "escrow, 2 nodes: hold p99", "ms", "", false},
    {"esc1_cpu_us_per_hold", "e1_cpu_us_per_hold", "escrow, 1 node: node CPU per hold", "us", "",
     false},
    {"esc2_cpu_us_per_hold", "e2_cpu_us_per_hold", "escrow, 2 nodes: node CPU per hold", "us", "",
     false},
    {"esc1_pg_cpu_us_per_hold", "e1_pg_cpu_us_per_hold", "escrow, 1 node: PostgreSQL CPU per hold",
     "us", "", false},
    {"esc_bytes_per_hold", "mem_bytes_per_hold", "escrow: node memory per live hold (RSS)", "bytes",
     "", false},
    {"no_node_s", "nonode_no_s", "\"no\" once sold out, answered by a node (over the wire)",
     "answers/s", "", false},
    {"no_node_p99_ms", "nonode_no_p99_ms", "\"no\" by a node: p99", "ms", "", false},
    {"no_cached_s", "nocache_no_s", "\"no\" once sold out, from the client's cached flag",
     "answers/s", "", false},
    {"p80_peak_s", "r80peak_ok_s", "rate-limited run: the peak just before (closed loop)",
     "holds/s", "", false},
    {"p80_rate", "r80_rate", "rate-limited run: offered (80% of that peak)", "req/s", "", false},
    {"p80_holds_s", "r80_ok_s", "rate-limited run: holds", "holds/s", "", false},
    {"p80_p99_ms", "r80_ok_p99_ms", "rate-limited run: hold p99", "ms", "", false},
    {"mix_req_s", "mix_req_s", "mixed run: requests (sold-out flood + live item, 1 node)", "req/s",
     "", false},
    {"mix_reject_pct", "mix_reject_pct", "mixed run: share of \"no\"", "%", "", false},
    {"mix_holds_s", "mix_ok_s", "mixed run: durable holds", "holds/s", "", false},
    {"mix_p99_ms", "mix_ok_p99_ms", "mixed run: durable hold p99", "ms", "", false},
};

#define NROWS (sizeof ROWS / sizeof ROWS[0])

static const kv *find(const kvs *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->items[i].key, key) == 0) {
            return &t->items[i];
        }
    }
    return NULL;
}

/* One "key=value" token; a later value of the same key wins. */
static void put(kvs *t, const char *tok)
{
    const char *eq = strchr(tok, '=');
    if (eq == NULL || eq == tok || (size_t)(eq - tok) >= REPORT_KEY_LEN) {
        return;
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(eq + 1, &end);
    if (errno != 0 || end == eq + 1 || *end != '\0' || !isfinite(v)) {
        return;
    }
    char key[REPORT_KEY_LEN];
    memcpy(key, tok, (size_t)(eq - tok));
    key[eq - tok] = '\0';
    kv *k = (kv *)find(t, key);
    if (k == NULL) {
        if (t->n >= REPORT_KEYS_MAX) {
            return;
        }
        k = &t->items[t->n++];
        memcpy(k->key, key, sizeof key);
    }
    k->value = v;
}

static int load(const char *path, kvs *t)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "escrow-bench: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char line[REPORT_LINE_MAX];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "BENCH ", 6) != 0) {
            continue;
        }
        char *save = NULL;
        for (char *tok = strtok_r(line + 6, " \t\r\n", &save); tok != NULL;
             tok = strtok_r(NULL, " \t\r\n", &save)) {
            put(t, tok);
        }
    }
    int rc = ferror(f) ? -1 : 0;
    fclose(f);
    return rc;
}

static double get(const kvs *t, const char *key)
{
    const kv *k = find(t, key);
    return k != NULL ? k->value : NAN;
}

/* Sets a computed figure (NaN: left out). */
static void put_value(kvs *t, const char *key, double v)
{
    char tok[REPORT_KEY_LEN + 32];
    if (!isnan(v)) {
        snprintf(tok, sizeof tok, "%s=%.17g", key, v);
        put(t, tok);
    }
}

static void fmt_value(char *buf, size_t len, double v, const char *unit)
{
    if (isnan(v)) {
        snprintf(buf, len, "missing");
    } else if (strcmp(unit, "ms") == 0 || strcmp(unit, "us") == 0 || strcmp(unit, "%") == 0) {
        snprintf(buf, len, "%.2f", v);
    } else {
        snprintf(buf, len, "%.0f", v);
    }
}

/* key's _min or _max (suffix); the key itself when the line has no range. */
static double get_bound(const kvs *t, const char *key, const char *suffix)
{
    char name[REPORT_KEY_LEN];
    if ((size_t)snprintf(name, sizeof name, "%s%s", key, suffix) >= sizeof name) {
        return NAN;
    }
    double v = get(t, name);
    return isnan(v) ? get(t, key) : v;
}

/* "min-max" of key, or "" when there is none. */
static void fmt_range(char *buf, size_t len, const kvs *t, const char *key, const char *unit)
{
    char lo[24], hi[24];
    double a = get_bound(t, key, "_min"), b = get_bound(t, key, "_max");
    if (isnan(a) || isnan(b)) {
        snprintf(buf, len, "%s", "");
        return;
    }
    fmt_value(lo, sizeof lo, a, unit);
    fmt_value(hi, sizeof hi, b, unit);
    snprintf(buf, len, "%s-%s", lo, hi);
}

/* The table; returns how many figures are missing. */
static int print_table(const kvs *t, bool redis_skipped)
{
    int missing = 0;
    printf("%-66s %12s  %-21s %-10s %s\n", "what", "median", "min-max", "unit",
           "earlier notes (docs/performance.md)");
    for (size_t i = 0; i < NROWS; i++) {
        const row *r = &ROWS[i];
        char buf[32], range[56] = "";
        double v = get(t, r->source);
        if (r->redis && redis_skipped) {
            snprintf(buf, sizeof buf, "SKIPPED");
        } else {
            fmt_value(buf, sizeof buf, v, r->unit);
            fmt_range(range, sizeof range, t, r->source, r->unit);
            missing += isnan(v);
        }
        printf("%-66s %12s  %-21s %-10s %s\n", r->what, buf, range, r->unit, r->notes);
    }
    return missing;
}

/* A ratio of two figures of the run, with its target as text. */
typedef struct ratio {
    const char *result_key;
    const char *what;
    double num, den;
    double num_min, num_max, den_min, den_max;
    bool redis;
    double target; /* docs/performance.md; shown with the figure, never asserted */
    const char *target_text;
} ratio;

static double div_or_nan(double a, double b)
{
    return isnan(a) || isnan(b) || b <= 0 ? NAN : a / b;
}

/* text NULL: a figure for comparison, without a target. */
static void print_target(const char *what, double v, double target, bool at_most, const char *text)
{
    if (text == NULL) {
        printf("  %-62s %10.2f  (no target: for comparison)\n", what, v);
        return;
    }
    const char *verdict = isnan(v)                                ? "n/a"
                          : (at_most ? v <= target : v >= target) ? "met"
                                                                  : "NOT met";
    printf("  %-62s %10.2f  target %-8s %s\n", what, v, text, verdict);
}

static void print_ratios(const kvs *t, bool redis_skipped, double best, const ratio *rs, size_t n)
{
    printf("\nratios of the medians (escrow = the better of 1 and 2 nodes: %.0f holds/s)\n", best);
    for (size_t i = 0; i < n; i++) {
        if (rs[i].redis && redis_skipped) {
            printf("  %-62s %10s  target %-8s n/a\n", rs[i].what, "SKIPPED",
                   rs[i].target_text != NULL ? rs[i].target_text : "-");
            continue;
        }
        print_target(rs[i].what, div_or_nan(rs[i].num, rs[i].den), rs[i].target, false,
                     rs[i].target_text);
    }
    printf("\nlatency, cost and memory targets\n");
    print_target("hold p99 at ~80% of peak (ms)", get(t, "r80_ok_p99_ms"), 10, true, "<= 10");
    print_target("durable hold p99 while ~99% are \"no\" (ms)", get(t, "mix_ok_p99_ms"), 20, true,
                 "<= 20");
    print_target("node CPU per hold, 1 node (us)", get(t, "e1_cpu_us_per_hold"), 4, true, "<= 4");
    print_target("PostgreSQL CPU per hold, 1 node (us)", get(t, "e1_pg_cpu_us_per_hold"), 8, true,
                 "<= 8");
    print_target("node memory per live hold (bytes)", get(t, "mem_bytes_per_hold"), 256, true,
                 "<= 256");
}

static void print_one(const char *key, const char *suffix, double v, bool skipped)
{
    if (skipped) {
        printf(" %s%s=skipped", key, suffix);
    } else if (isnan(v)) {
        printf(" %s%s=missing", key, suffix);
    } else {
        printf(" %s%s=%.*f", key, suffix, fabs(v) >= 100 ? 0 : 3, v);
    }
}

/* key=median key_min=... key_max=... */
static void print_value(const char *key, double v, double lo, double hi, bool skipped)
{
    print_one(key, "", v, skipped);
    print_one(key, "_min", lo, skipped);
    print_one(key, "_max", hi, skipped);
}

static ratio make_ratio(const kvs *t, const char *key, const char *what, const char *num,
                        const char *den, bool redis, double target, const char *text)
{
    ratio r = {key,
               what,
               get(t, num),
               get(t, den),
               get_bound(t, num, "_min"),
               get_bound(t, num, "_max"),
               get_bound(t, den, "_min"),
               get_bound(t, den, "_max"),
               redis,
               target,
               text};
    return r;
}

int bench_report(const char *path)
{
    static kvs t;
    t.n = 0;
    if (load(path, &t) != 0) {
        return 1;
    }
    bool redis_skipped = get(&t, "redis_skipped") == 1.0;
    /* escrow's best: the better median of 1 and 2 nodes, with its range */
    double e1 = get(&t, "e1_ok_s"), e2 = get(&t, "e2_ok_s");
    const char *best_key = isnan(e1) || (!isnan(e2) && e2 > e1) ? "e2_ok_s" : "e1_ok_s";
    double best = get(&t, best_key);
    put_value(&t, "best_ok_s", best);
    put_value(&t, "best_ok_s_min", get_bound(&t, best_key, "_min"));
    put_value(&t, "best_ok_s_max", get_bound(&t, best_key, "_max"));
    const ratio rs[] = {
        make_ratio(&t, "ratio_esc_a128", "escrow / A (one hot row, 128 connections)", "best_ok_s",
                   "a128_ok_s", false, 20, ">= 20"),
        make_ratio(&t, "ratio_esc_b100", "escrow / B (100 rows)", "best_ok_s", "b100_ok_s", false,
                   3, ">= 3"),
        make_ratio(&t, "ratio_esc_redis_aof", "escrow / C (Redis, appendfsync always)", "best_ok_s",
                   "caof_ok_s", true, 1.5, ">= 1.5"),
        /* against 1 node measured in the same state (r80peak, right
         * before): e1 ran on emptier tables, and a hold costs PostgreSQL
         * more as they fill */
        make_ratio(&t, "ratio_esc2_esc1", "escrow, 2 nodes / 1 node just before (same tables)",
                   "e2_ok_s", "r80peak_ok_s", false, 1, ">= 1"),
        make_ratio(&t, "ratio_no_node_redis_no", "\"no\" by a node / the Redis gate's own \"no\"",
                   "nonode_no_s", "cno_no_s", true, 2, ">= 2"),
        /* for comparison: the target for a node's "no" is against the
         * Redis gate's own "no" (above), not against its holds */
        make_ratio(&t, "ratio_no_node_redis_mem", "\"no\" by a node / C (Redis, no persistence)",
                   "nonode_no_s", "cmem_ok_s", true, NAN, NULL),
        make_ratio(&t, "ratio_no_cached_redis_mem",
                   "\"no\" from the cached flag / C (no persistence)", "nocache_no_s", "cmem_ok_s",
                   true, NAN, NULL),
    };
    size_t nr = sizeof rs / sizeof rs[0];

    printf("\nescrow-bench: one machine, one private PostgreSQL (fsync on), loopback\n\n");
    int missing = print_table(&t, redis_skipped);
    print_ratios(&t, redis_skipped, best, rs, nr);
    if (redis_skipped) {
        printf("\nbaseline C SKIPPED: redis-server is not installed (nothing was measured)\n");
    } else {
        printf("\nnote: the Redis gate without persistence is not durable (a crash loses "
               "every sale since start);\n      with appendfsync always it fsyncs the AOF "
               "once per event-loop turn before replying.\n");
    }
    printf("\nRESULT");
    for (size_t i = 0; i < NROWS; i++) {
        const char *k = ROWS[i].source;
        print_value(ROWS[i].result_key, get(&t, k), get_bound(&t, k, "_min"),
                    get_bound(&t, k, "_max"), ROWS[i].redis && redis_skipped);
    }
    print_value("esc_best_holds_s", best, get(&t, "best_ok_s_min"), get(&t, "best_ok_s_max"),
                false);
    for (size_t i = 0; i < nr; i++) {
        const ratio *r = &rs[i];
        print_value(r->result_key, div_or_nan(r->num, r->den), div_or_nan(r->num_min, r->den_max),
                    div_or_nan(r->num_max, r->den_min), r->redis && redis_skipped);
    }
    printf(" redis_measured=%d\n", redis_skipped ? 0 : 1);
    if (missing > 0) {
        fprintf(stderr, "escrow-bench: %d figure(s) missing from %s\n", missing, path);
        return 1;
    }
    return 0;
}
