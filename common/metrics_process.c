/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_process.c - see metrics_process.h. Everything below the
 * registration runs on the HTTP server's thread, at each scrape.
 */
#include "metrics_process.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "build_info.h"
#include "escrow_errors.h"

typedef struct process_series {
    metrics_series *cpu, *rss, *open_fds, *max_fds, *start;
} process_series;

static process_series ps; /* one process, one set */

static double cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0;
    }
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static double resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages_total = 0, pages_resident = 0;
    if (f == NULL) {
        return 0;
    }
    int n = fscanf(f, "%ld %ld", &pages_total, &pages_resident);
    fclose(f);
    return n == 2 ? (double)pages_resident * (double)sysconf(_SC_PAGESIZE) : 0;
}

static double open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return 0;
    }
    double n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static double max_fds(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        return 0;
    }
    return (double)rl.rlim_cur;
}

/* /proc/stat's btime plus /proc/self/stat's starttime (field 22, clock
 * ticks since boot); now when either cannot be read. */
static double start_time(void)
{
    double now = (double)time(NULL);
    FILE *f = fopen("/proc/self/stat", "r");
    char buf[1024];
    size_t len = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    buf[len] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ticks = 0;
    for (int field = 2; p != NULL && field < 22; field++) {
        p = strchr(p + 1, ' ');
    }
    if (p == NULL || sscanf(p + 1, "%llu", &ticks) != 1) {
        return now;
    }
    f = fopen("/proc/stat", "r");
    unsigned long long btime = 0;
    while (f != NULL && fgets(buf, sizeof buf, f) != NULL) {
        if (sscanf(buf, "btime %llu", &btime) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    long hz = sysconf(_SC_CLK_TCK);
    return btime > 0 && hz > 0 ? (double)btime + (double)ticks / (double)hz : now;
}

static void collect(void *arg)
{
    (void)arg;
    metrics_set(ps.cpu, cpu_seconds());
    metrics_set(ps.rss, resident_bytes());
    metrics_set(ps.open_fds, open_fds());
    metrics_set(ps.max_fds, max_fds());
}

static metrics_series *add(metrics_registry *r, metrics_type t, const char *name, const char *help)
{
    return metrics_get0(metrics_family_add(r, t, name, help, NULL, NULL, 0));
}

int metrics_process_register(metrics_registry *r)
{
    static const char *const labels[] = {"version", "commit", NULL};
    metrics_family *bi =
        metrics_family_add(r, METRICS_GAUGE, "escrow_build_info",
                           "Always 1: the version and git commit of this binary", labels, NULL, 0);
    metrics_set(metrics_get2(bi, build_info_version(), build_info_commit()), 1);
    ps.cpu = add(r, METRICS_COUNTER_SET, "process_cpu_seconds_total",
                 "Total user and system CPU time spent in seconds");
    ps.rss =
        add(r, METRICS_GAUGE, "process_resident_memory_bytes", "Resident memory size in bytes");
    ps.open_fds = add(r, METRICS_GAUGE, "process_open_fds", "Number of open file descriptors");
    ps.max_fds =
        add(r, METRICS_GAUGE, "process_max_fds", "Maximum number of open file descriptors");
    ps.start = add(r, METRICS_GAUGE, "process_start_time_seconds",
                   "Start time of the process since unix epoch in seconds");
    if (bi == NULL || ps.cpu == NULL || ps.rss == NULL || ps.open_fds == NULL ||
        ps.max_fds == NULL || ps.start == NULL) {
        return ESC_EINVAL;
    }
    metrics_set(ps.start, start_time());
    metrics_registry_on_render(r, collect, NULL);
    return 0;
}
