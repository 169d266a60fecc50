/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meter.c - the timed window (bench_meter) and the /proc readings
 * (bench_procs) that every escrow-bench measurement shares. See bench.h.
 *
 * CPU comes from /proc/PID/stat (utime + stime, in clock ticks: 10 ms
 * resolution at 100 Hz, so a window of a few seconds at one busy core is
 * read to about 1%), memory from VmRSS in /proc/PID/status.
 */
#include "bench.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

uint64_t bench_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void bench_meter_init(bench_meter *m, uint32_t warmup_ms, uint32_t seconds)
{
    memset(m, 0, sizeof *m);
    m->t0_us = esc_mono_us() + (int64_t)warmup_ms * 1000;
    m->t1_us = m->t0_us + (int64_t)seconds * 1000000;
    hist_init(&m->lat_ok);
    hist_init(&m->lat_no);
}

void bench_meter_add(bench_meter *m, int kind, int64_t start_us, int64_t end_us)
{
    if (end_us < m->t0_us || end_us > m->t1_us) {
        return;
    }
    uint64_t lat = end_us > start_us ? (uint64_t)(end_us - start_us) : 0;
    if (kind == BENCH_OK) {
        m->ok++;
        hist_add(&m->lat_ok, lat);
    } else if (kind == BENCH_NO) {
        m->no++;
        hist_add(&m->lat_no, lat);
    } else {
        m->err++;
    }
}

double bench_meter_seconds(const bench_meter *m)
{
    return (double)(m->t1_us - m->t0_us) / 1e6;
}

static double ms_at(const hist *h, double q)
{
    return (double)hist_quantile(h, q) / 1000.0;
}

void bench_meter_print(const bench_meter *m, const char *label)
{
    double s = bench_meter_seconds(m);
    printf(" %s_ok_s=%.0f %s_no_s=%.0f %s_ok_p50_ms=%.3f %s_ok_p99_ms=%.3f"
           " %s_no_p50_ms=%.3f %s_no_p99_ms=%.3f %s_errors=%" PRIu64 " %s_window_s=%.2f",
           label, (double)m->ok / s, label, (double)m->no / s, label, ms_at(&m->lat_ok, 0.50),
           label, ms_at(&m->lat_ok, 0.99), label, ms_at(&m->lat_no, 0.50), label,
           ms_at(&m->lat_no, 0.99), label, m->err, label, s);
}

int bench_procs_parse(bench_procs *p, const char *list)
{
    p->npids = 0;
    const char *s = list;
    while (*s != '\0') {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno != 0 || end == s || v <= 0 || v > INT32_MAX || p->npids >= BENCH_PIDS_MAX) {
            return -1;
        }
        p->pids[p->npids++] = (pid_t)v;
        if (*end == ',') {
            end++;
        } else if (*end != '\0') {
            return -1;
        }
        s = end;
    }
    return p->npids > 0 ? 0 : -1;
}

/* utime + stime (ticks) and the parent pid of pid. Returns 0 or -1. */
static int read_stat(pid_t pid, uint64_t *ticks, pid_t *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields count from
     * the last ')'. Then: state ppid ... utime is field 14, stime 15. */
    char *p = strrchr(buf, ')');
    if (p == NULL) {
        return -1;
    }
    char state;
    int pp;
    unsigned long ut, st;
    if (sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &state, &pp, &ut,
               &st) != 4) {
        return -1;
    }
    *ticks = (uint64_t)ut + (uint64_t)st;
    *ppid = (pid_t)pp;
    return 0;
}

static int read_rss(pid_t pid, uint64_t *bytes)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    int rc = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long kb;
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1) {
            *bytes = (uint64_t)kb * 1024u;
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* CPU ticks of the postmaster and of every process whose parent it is. */
static uint64_t pg_ticks(pid_t postmaster)
{
    uint64_t sum = 0, t;
    pid_t pp;
    if (read_stat(postmaster, &t, &pp) == 0) {
        sum += t;
    }
    DIR *d = opendir("/proc");
    if (d == NULL) {
        return sum;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0])) {
            continue;
        }
        pid_t pid = (pid_t)atoi(e->d_name);
        if (read_stat(pid, &t, &pp) == 0 && pp == postmaster) {
            sum += t;
        }
    }
    closedir(d);
    return sum;
}

void bench_procs_sample(const bench_procs *p, bench_proc_sample *s)
{
    memset(s, 0, sizeof *s);
    s->ok = true;
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t us_per_tick = hz > 0 ? 1000000u / (uint64_t)hz : 10000u;
    for (uint32_t i = 0; i < p->npids; i++) {
        uint64_t t, rss;
        pid_t pp;
        if (read_stat(p->pids[i], &t, &pp) != 0 || read_rss(p->pids[i], &rss) != 0) {
            s->ok = false;
            continue;
        }
        s->cpu_us += t * us_per_tick;
        s->rss_bytes += rss;
    }
    if (p->pg_pid > 0) {
        s->pg_cpu_us = pg_ticks(p->pg_pid) * us_per_tick;
    }
}
