/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon_fds.h - a daemon's file descriptors: at start it raises its limit
 * of open files (RLIMIT_NOFILE) to the hard limit and logs it
 * (DAEMON-FDS); with --metrics it exports how many are open and the limit
 * (escrow_process_open_fds, escrow_process_max_fds).
 *
 * Why: every client connection costs a daemon one descriptor (nanomsg
 * accepts on its own thread), and a default soft limit of 1024 is reached
 * by a thousand idle connections. Out of descriptors, nanomsg 1.1.5 spins:
 * its TCP endpoint answers an accept error (EMFILE, ENFILE) by accepting
 * again at once (src/transports/tcp/atcp.c: the listener's
 * NN_USOCK_ACCEPT_ERROR case calls nn_usock_accept again, and
 * usock_posix.inc's nn_usock_accept raises the same error again while the
 * listening socket stays readable), so its worker thread takes a core and
 * new clients cannot connect until a descriptor is free. The hard limit
 * pushes that point out as far as the system allows; the two metrics show
 * it coming. Nothing here caps connections per peer (nanomsg offers no
 * hook for it).
 */
#ifndef ESC_DAEMON_FDS_H
#define ESC_DAEMON_FDS_H

#include <stdint.h>

#include "metrics.h"

/* Open descriptors are counted (a read of /proc/self/fd) at most this often. */
#define DAEMON_FDS_SAMPLE_MS 1000

typedef struct daemon_fds {
    metrics_series *open, *max; /* borrowed from the registry */
    int64_t last_us;
} daemon_fds;

/* Raises the soft RLIMIT_NOFILE to the hard limit; logs the limit in force
 * (DAEMON-FDS, with the daemon's name), or a warning when it cannot.
 * Returns the soft limit in force (0 when unknown). */
uint64_t daemon_fds_raise(const char *name);
/* Descriptors open now, or -1 when unknown. */
int64_t daemon_fds_open(void);
/* Adds the two gauges to reg (NULL: f stays off). */
void daemon_fds_register(daemon_fds *f, metrics_registry *reg);
/* Refreshes them when DAEMON_FDS_SAMPLE_MS passed since the last time. */
void daemon_fds_sample(daemon_fds *f, int64_t now_us);

#endif
