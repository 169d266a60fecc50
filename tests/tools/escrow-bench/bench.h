/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h - escrow-bench, the benchmark against what a shop would pick
 * instead (docs/performance.md): one hot PostgreSQL row, the same
 * stock in 100 rows, a Redis Lua gate, and escrow end to end through
 * libescrow. tests/support/bench.sh starts the servers and runs one
 * measurement per invocation; `escrow-bench report` turns the collected
 * lines into the table, the ratios and the RESULT line.
 *
 * Every measurement runs on one libuv loop in one thread, with a fixed
 * number of requests in flight (one per connection for the baselines), a
 * warm-up, then a timed window: only answers that arrive inside the window
 * are counted, so connection set-up and the drain at the end never inflate
 * or deflate a rate. Each measurement prints one line
 *
 *   BENCH <label>_<key>=<value> ...
 *
 * on stdout; nothing here decides whether a figure is good.
 */
#ifndef ESC_BENCH_H
#define ESC_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "hist.h"

/* Bounds of the options (argv is validated against them). */
#define BENCH_CONNS_MAX 1024u        /* baseline connections (one process, one loop) */
#define BENCH_INFLIGHT_MAX 16384u    /* escrow requests in flight */
#define BENCH_SECONDS_MAX 600u       /* one measurement window */
#define BENCH_WARMUP_MS_MAX 60000u   /* before the window opens */
#define BENCH_PIDS_MAX 16u           /* processes whose CPU and memory are read */
#define BENCH_COUNT_MAX 100000000ULL /* holds of a counted run */
#define BENCH_ROWS_MAX 10000u        /* baseline B rows */
#define BENCH_LABEL_MAX 32u
#define BENCH_TIMELINE_MAX 50000000u /* answers a --timeline file records at most */

/* Answers, as the meter sorts them. */
enum { BENCH_OK = 0, BENCH_NO = 1, BENCH_ERR = 2 };

/* The timed window and what arrived in it. */
typedef struct bench_meter {
    int64_t t0_us; /* window opens (after the warm-up) */
    int64_t t1_us; /* window closes */
    uint64_t ok;   /* answers that did the work (a unit taken) */
    uint64_t no;   /* "no": sold out, try later, segment empty */
    uint64_t err;  /* anything else */
    hist lat_ok;   /* microseconds, per answer counted in ok */
    hist lat_no;
} bench_meter;

/* Opens the window warmup_ms from now for seconds. */
void bench_meter_init(bench_meter *m, uint32_t warmup_ms, uint32_t seconds);
/* Counts one answer (kind BENCH_*) that took start_us..end_us if it
 * arrived inside the window. */
void bench_meter_add(bench_meter *m, int kind, int64_t start_us, int64_t end_us);
/* Seconds the window lasted (for rates). */
double bench_meter_seconds(const bench_meter *m);
/* Prints " <label>_<key>=<v>" for ops/s of ok and of no, p50/p99 (ms) of
 * both, and the error count. */
void bench_meter_print(const bench_meter *m, const char *label);

/* --timeline: every answer in the window (timeline.c). */
typedef struct bench_timeline_rec {
    int64_t t_us;   /* answer, since the window opened */
    int64_t lat_us; /* from the send */
    int kind;       /* BENCH_* */
} bench_timeline_rec;

typedef struct bench_timeline {
    bench_timeline_rec *rec; /* owned */
    size_t n, cap;
    uint64_t dropped; /* not recorded (BENCH_TIMELINE_MAX or out of memory) */
} bench_timeline;

/* Records one answer if it arrived inside m's window. */
void bench_timeline_add(bench_timeline *tl, const bench_meter *m, int kind, int64_t start_us,
                        int64_t end_us);
/* Writes the CSV (timeline.c); t0_wall_us is the unix time of m->t0_us.
 * Returns 0, or -1 with a message on stderr. */
int bench_timeline_write(const bench_timeline *tl, const char *path, int64_t t0_wall_us);
void bench_timeline_free(bench_timeline *tl);

/* CPU time (utime + stime) and resident memory of a set of processes, and
 * optionally of a PostgreSQL postmaster and its children. */
typedef struct bench_procs {
    pid_t pids[BENCH_PIDS_MAX];
    uint32_t npids;
    pid_t pg_pid; /* 0: none */
} bench_procs;

typedef struct bench_proc_sample {
    uint64_t cpu_us;    /* sum over pids */
    uint64_t rss_bytes; /* sum over pids */
    uint64_t pg_cpu_us; /* the postmaster and its children */
    bool ok;            /* every pid could be read */
} bench_proc_sample;

/* Parses "PID[,PID...]" into p. Returns 0 or -1. */
int bench_procs_parse(bench_procs *p, const char *list);
/* Reads /proc now. Never fails: a pid that cannot be read clears s->ok. */
void bench_procs_sample(const bench_procs *p, bench_proc_sample *s);

/* Options shared by the subcommands (escrow-bench.c fills them from argv). */
typedef struct bench_opts {
    const char *label; /* borrowed; key prefix of the BENCH line */
    uint32_t seconds;
    uint32_t warmup_ms;
    uint32_t conns;    /* baselines: connections, one statement in flight each */
    uint32_t inflight; /* escrow: requests in flight (cap in rate mode) */
    /* PostgreSQL baselines */
    const char *dsn; /* borrowed */
    uint32_t rows;   /* 1: baseline A (one hot row); N: baseline B */
    bool sold_out;   /* start with nothing available: measures "no" */
    /* Redis baseline */
    int redis_port;
    /* escrow */
    const char *endpoint;    /* borrowed; single-node mode */
    const char *coordinator; /* borrowed; routing mode */
    const char *routes;      /* borrowed; optional */
    const char *tenant_id;   /* borrowed */
    const char *item_id;     /* borrowed */
    const char *mix_item_id; /* borrowed; optional: the flooded (sold-out) item */
    uint32_t mix_pct;        /* share of requests for mix_item_id */
    const char *key_prefix;  /* borrowed */
    bool key_hashed;         /* --key-order hashed: keys spread over the key space */
    uint64_t count;          /* 0: timed; N: exactly N requests, memory per hold */
    double rate;             /* 0: closed loop; R: R requests per second */
    uint32_t ttl_ms;
    uint32_t deadline_ms;
    const char *timeline; /* borrowed; optional: every answer's time and latency (CSV) */
    bench_procs procs;
} bench_opts;

/* The subcommands. Each returns 0 after printing its BENCH line, or
 * non-zero with a message on stderr when the measurement could not run. */
int bench_pg_run(const bench_opts *o);
int bench_redis_run(const bench_opts *o);
int bench_esc_run(const bench_opts *o);
/* Reads BENCH lines from path and prints the table, the ratios and the
 * RESULT line. Returns 0, or 1 if a measured key is missing. */
int bench_report(const char *path);

/* splitmix64, for deterministic per-request choices. */
uint64_t bench_mix64(uint64_t x);

#endif
