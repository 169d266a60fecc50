/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_process.h - the metrics every daemon exports besides its own:
 * escrow_build_info{version,commit} (always 1; build_info.h) and the
 * standard process metrics of Prometheus's client libraries:
 *
 *   process_cpu_seconds_total       user + system CPU time (getrusage)
 *   process_resident_memory_bytes   resident set size (/proc/self/statm)
 *   process_open_fds                open file descriptors (/proc/self/fd)
 *   process_max_fds                 the soft RLIMIT_NOFILE
 *   process_start_time_seconds      when the process started, unix seconds
 *                                   (/proc/self/stat and the boot time)
 *
 * The process metrics are read when a scrape renders the registry (on the
 * HTTP server's thread, metrics.h's collector), never on the loop.
 */
#ifndef ESC_METRICS_PROCESS_H
#define ESC_METRICS_PROCESS_H

#include "metrics.h"

/* Registers the families on r and its collector. Returns 0 or ESC_EINVAL
 * (a family could not be added: a name taken, the registry full). */
int metrics_process_register(metrics_registry *r);

#endif
