/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon_fds.c - see daemon_fds.h.
 */
#include "daemon_fds.h"

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
