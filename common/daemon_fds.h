/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon_fds.h - a daemon's limit of open files: at start it raises its
 * soft RLIMIT_NOFILE to the hard limit and logs it (DAEMON-FDS). The
 * process metrics export how many are open and the limit
 * (process_open_fds, process_max_fds: metrics_process.h).
 *
 * Why: every client connection costs a daemon one descriptor (nanomsg
 * accepts on its own thread), and a default soft limit of 1024 is reached
 * by a thousand idle connections. The connection guard (conn_guard.h)
 * keeps accepted connections below this limit and stops nanomsg's accept
 * spin when descriptors run out anyway.
 */
#ifndef ESC_DAEMON_FDS_H
#define ESC_DAEMON_FDS_H

#include <stdint.h>

/* Raises the soft RLIMIT_NOFILE to the hard limit; logs the limit in force
 * (DAEMON-FDS, with the daemon's name), or a warning when it cannot.
 * Returns the soft limit in force (0 when unknown). */
uint64_t daemon_fds_raise(const char *name);

#endif
