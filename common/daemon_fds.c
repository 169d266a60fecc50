/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon_fds.c - see daemon_fds.h.
 */
#include "daemon_fds.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"

uint64_t daemon_fds_raise(const char *name)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        ESC_LOG(ESC_LOG_WARN, "DAEMON-FDS", "%s: cannot read the limit of open files: %s", name,
                strerror(errno));
        return 0;
    }
    uint64_t before = (uint64_t)rl.rlim_cur;
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            ESC_LOG(ESC_LOG_WARN, "DAEMON-FDS",
                    "%s: open files limit %" PRIu64 ", cannot raise it: %s", name, before,
                    strerror(errno));
            return before;
        }
    }
    ESC_LOG(ESC_LOG_INFO, "DAEMON-FDS",
            "%s: open files limit %" PRIu64 " (the hard limit; was %" PRIu64 ")", name,
            (uint64_t)rl.rlim_cur, before);
    return (uint64_t)rl.rlim_cur;
}

int64_t daemon_fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return -1;
    }
    int64_t n = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

void daemon_fds_register(daemon_fds *f, metrics_registry *reg)
{
    memset(f, 0, sizeof *f);
    if (reg == NULL) {
        return;
    }
    metrics_family *o = metrics_family_add(reg, METRICS_GAUGE, "escrow_process_open_fds",
                                           "File descriptors open (client connections "
                                           "included).",
                                           NULL, NULL, 0);
    metrics_family *m = metrics_family_add(reg, METRICS_GAUGE, "escrow_process_max_fds",
                                           "The limit of open files (RLIMIT_NOFILE, raised to "
                                           "the hard limit at start).",
                                           NULL, NULL, 0);
    f->open = o != NULL ? metrics_get0(o) : NULL;
    f->max = m != NULL ? metrics_get0(m) : NULL;
}

void daemon_fds_sample(daemon_fds *f, int64_t now_us)
{
    if (f->open == NULL ||
        (f->last_us != 0 && now_us - f->last_us < (int64_t)DAEMON_FDS_SAMPLE_MS * 1000)) {
        return;
    }
    f->last_us = now_us;
    struct rlimit rl;
    metrics_set(f->open, (double)daemon_fds_open());
    if (f->max != NULL && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        metrics_set(f->max, (double)rl.rlim_cur);
    }
}
