/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn_guard.h - limits on the TCP connections a daemon accepts, for the
 * listeners nanomsg runs on its own threads (the client socket, the routes
 * feed, heartbeats).
 *
 * Why here: nanomsg hides its peers (no accept hook, no per-connection
 * state an application can read) and its accept loop spins a core when
 * descriptors run out: on EMFILE/ENFILE nanomsg 1.1.5 accepts again at once
 * (src/transports/tcp/atcp.c, NN_USOCK_ACCEPT_ERROR) while the pending
 * connection keeps the listening socket readable. We link the system's
 * libnanomsg, so the fix lives on our side: this module defines accept4(),
 * accept() and close() in the daemon's executable. The dynamic linker resolves
 * libnanomsg's calls to them (an executable's definitions come first in
 * ELF symbol lookup); each does its check and calls the C library's
 * (dlsym RTLD_NEXT). Once conn_guard_start ran:
 *
 *   out of descriptors   the classic reserve descriptor: accept4 closes a
 *                        spare descriptor it keeps, accepts the pending
 *                        connection, closes it and opens the spare again;
 *                        nanomsg hears ECONNABORTED, which it answers by
 *                        waiting for the next connection. No spin: each
 *                        pass takes one pending connection off the queue.
 *   total cap            at most conns_max accepted connections open (the
 *                        open files limit less a reserve for the daemon's
 *                        own files and database connections), so EMFILE is
 *                        not reached by clients alone;
 *   per-peer cap         at most per_peer_max from one IP address (peers
 *                        are counted in CONN_GUARD_BUCKETS buckets by a
 *                        keyed hash: two addresses that share a bucket
 *                        share its count, never more than the cap each);
 *   idle timeout         conn_guard_tick shuts down (shutdown(2); nanomsg
 *                        then closes it) a connection that received no byte
 *                        for idle_s (TCP_INFO's tcpi_last_data_recv): idle
 *                        connections and frames sent too slowly alike; it
 *                        looks at each once per tenth of idle_s (at least
 *                        1 s, at most 60 s), a share of them at each tick,
 *                        so a silent connection lives idle_s plus up to
 *                        that;
 *   memory back          after a burst of closes (CONN_GUARD_TRIM_CLOSES)
 *                        followed by a quiet second, conn_guard_tick calls
 *                        malloc_trim(0): the allocator keeps what nanomsg's
 *                        threads freed otherwise.
 *
 * A refused connection is closed at once (the peer sees a reset or EOF).
 * Refusals by reason, idle closes, and CONN_GUARD_FLOOD or more accepted
 * connections are logged at most once per CONN_GUARD_LOG_MS (CONN-FLOOD)
 * and exported (conn_guard_register).
 * Before conn_guard_start, and in processes that never call it (the
 * gateway links the same library), accept4 and close only pass through.
 */
#ifndef ESC_CONN_GUARD_H
#define ESC_CONN_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"

#define CONN_GUARD_BUCKETS 65536
#define CONN_GUARD_PER_PEER_DEFAULT 1024
#define CONN_GUARD_IDLE_S_DEFAULT 600
/* Descriptors kept out of the total cap for the daemon's own use. */
#define CONN_GUARD_FD_RESERVE 256
#define CONN_GUARD_LOG_MS 10000
#define CONN_GUARD_FLOOD 1000
#define CONN_GUARD_TRIM_CLOSES 256

typedef struct conn_guard_cfg {
    uint32_t per_peer_max; /* 0: no per-peer cap */
    uint32_t idle_s;       /* 0: no idle timeout */
} conn_guard_cfg;

typedef struct conn_guard_counts {
    uint64_t open, conns_max;
    uint64_t refused_peer, refused_total, refused_nofile, idle_closed, trims;
} conn_guard_counts;

/* Turns the guard on for every TCP listener of the process, with the open
 * files limit in force (fd_limit, daemon_fds_raise's answer; 0: read it).
 * Logs the limits (CONN-GUARD). Returns 0 or ESC_EIO (no reserve
 * descriptor). */
int conn_guard_start(const conn_guard_cfg *cfg, uint64_t fd_limit, const char *name);
/* Changes the caps while running (a reload). */
void conn_guard_set(const conn_guard_cfg *cfg);
/* From the daemon's loop, about once a second: the idle sweep, the
 * rate-limited CONN-FLOOD line, malloc_trim after a burst of closes. */
void conn_guard_tick(int64_t now_ms);
conn_guard_counts conn_guard_read(void);
/* True once conn_guard_start ran. */
bool conn_guard_on(void);
/* Adds escrow_conn_open, escrow_conn_max and
 * escrow_conn_refused_total{reason} to reg (read at each scrape). */
int conn_guard_register(metrics_registry *reg);

#endif
