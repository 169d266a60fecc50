/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow-bench.c - escrow-bench's command line: one measurement per invocation
 * (tests/support/bench.sh runs them in order against the servers it
 * started, `make bench` runs bench.sh), plus `report`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "build_info.h"

static const char USAGE[] =
    "usage: escrow-bench COMMAND [OPTIONS]\n"
    "  pg     --dsn DSN [--rows N] [--conns N] [--sold-out]      baseline A (rows 1) / B\n"
    "  redis  --port P [--conns N] [--sold-out]                   baseline C (Lua gate)\n"
    "  escrow (--endpoint URL | --coordinator URL [--routes URL]) --tenant T --item I\n"
    "         [--inflight N] [--rate R] [--count N] [--mix-item I --mix-pct P]\n"
    "         [--ttl-ms MS] [--deadline-ms MS] [--key-prefix S] [--pids P,P] [--pg-pid P]\n"
    "         [--timeline FILE]   every answer in the window: t_ms,latency_us,kind (CSV)\n"
    "         [--key-order sequential|hashed]\n"
    "  report FILE                                               table, ratios, RESULT\n"
    "  --version                                                 the version, the git commit\n"
    "common: --label L (key prefix, required) --seconds S (5) --warmup-ms MS (1000)\n"
    "Every measurement prints one line: BENCH <label>_<key>=<value> ...\n"
    "The whole benchmark: make bench (tests/support/bench.sh).\n";

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v;
    if (parse_u64(s, lo, hi, &v) != 0) {
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* One "--name value" option; returns 0, or -1 for an unknown or bad one. */
static int parse_opt(bench_opts *o, const char *name, const char *v)
{
    uint32_t u;
    uint64_t u64;
    if (strcmp(name, "--label") == 0) {
        o->label = strlen(v) < BENCH_LABEL_MAX ? v : NULL;
        return o->label != NULL ? 0 : -1;
    }
#define STR_OPT(flag, field)                                                                       \
    if (strcmp(name, flag) == 0) {                                                                 \
        o->field = v;                                                                              \
        return 0;                                                                                  \
    }
#define U32_OPT(flag, field, lo, hi)                                                               \
    if (strcmp(name, flag) == 0) {                                                                 \
        return parse_u32(v, lo, hi, &o->field);                                                    \
    }
    STR_OPT("--dsn", dsn)
    STR_OPT("--endpoint", endpoint)
    STR_OPT("--coordinator", coordinator)
    STR_OPT("--routes", routes)
    STR_OPT("--tenant", tenant_id)
    STR_OPT("--item", item_id)
    STR_OPT("--mix-item", mix_item_id)
    STR_OPT("--key-prefix", key_prefix)
    STR_OPT("--timeline", timeline)
    U32_OPT("--seconds", seconds, 1, BENCH_SECONDS_MAX)
    U32_OPT("--warmup-ms", warmup_ms, 0, BENCH_WARMUP_MS_MAX)
    U32_OPT("--conns", conns, 1, BENCH_CONNS_MAX)
    U32_OPT("--inflight", inflight, 1, BENCH_INFLIGHT_MAX)
    U32_OPT("--rows", rows, 1, BENCH_ROWS_MAX)
    U32_OPT("--mix-pct", mix_pct, 0, 100)
    U32_OPT("--ttl-ms", ttl_ms, 0, 86400000u)
    U32_OPT("--deadline-ms", deadline_ms, 1, 600000u)
#undef STR_OPT
#undef U32_OPT
    if (strcmp(name, "--port") == 0 && parse_u32(v, 1, 65535, &u) == 0) {
        o->redis_port = (int)u;
        return 0;
    }
    if (strcmp(name, "--key-order") == 0) {
        o->key_hashed = strcmp(v, "hashed") == 0;
        return o->key_hashed || strcmp(v, "sequential") == 0 ? 0 : -1;
    }
    if (strcmp(name, "--count") == 0) {
        return parse_u64(v, 1, BENCH_COUNT_MAX, &o->count);
    }
    if (strcmp(name, "--rate") == 0 && parse_u64(v, 1, 10000000u, &u64) == 0) {
        o->rate = (double)u64;
        return 0;
    }
    if (strcmp(name, "--pids") == 0) {
        return bench_procs_parse(&o->procs, v);
    }
    if (strcmp(name, "--pg-pid") == 0 && parse_u32(v, 1, INT32_MAX, &u) == 0) {
        o->procs.pg_pid = (pid_t)u;
        return 0;
    }
    return -1;
}

static int check_opts(const char *cmd, const bench_opts *o)
{
    if (o->label == NULL) {
        return -1;
    }
    if (strcmp(cmd, "pg") == 0) {
        return o->dsn != NULL ? 0 : -1;
    }
    if (strcmp(cmd, "redis") == 0) {
        return o->redis_port > 0 ? 0 : -1;
    }
    if ((o->endpoint == NULL) == (o->coordinator == NULL) || o->tenant_id == NULL ||
        o->item_id == NULL || (o->mix_item_id != NULL && o->mix_pct == 0) ||
        (o->count > 0 && o->rate > 0)) {
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        build_info_print(stdout, "escrow-bench");
        return 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "report") == 0) {
        if (argc != 3) {
            fputs(USAGE, stderr);
            return 2;
        }
        return bench_report(argv[2]);
    }
    bench_opts o = {.seconds = 5,
                    .warmup_ms = 1000,
                    .conns = 128,
                    .inflight = 256,
                    .rows = 1,
                    .tenant_id = NULL,
                    .key_prefix = "bench",
                    .deadline_ms = 10000};
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--sold-out") == 0) {
            o.sold_out = true;
            continue;
        }
        if (i + 1 >= argc || parse_opt(&o, argv[i], argv[i + 1]) != 0) {
            fprintf(stderr, "escrow-bench: bad option %s%s%s\n%s", argv[i], i + 1 < argc ? " " : "",
                    i + 1 < argc ? argv[i + 1] : "", USAGE);
            return 2;
        }
        i++;
    }
    if (check_opts(cmd, &o) != 0) {
        fprintf(stderr, "escrow-bench: %s: missing or conflicting options\n%s", cmd, USAGE);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(cmd, "pg") == 0) {
        return bench_pg_run(&o);
    }
    if (strcmp(cmd, "redis") == 0) {
        return bench_redis_run(&o);
    }
    if (strcmp(cmd, "escrow") == 0) {
        return bench_esc_run(&o);
    }
    fprintf(stderr, "escrow-bench: unknown command %s\n%s", cmd, USAGE);
    return 2;
}
