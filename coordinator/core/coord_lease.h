/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_lease.h - when a segment node's lease has run out, and when the
 * coordinator itself was too stalled to judge it.
 *
 * A node is alive while its heartbeats arrive within lease_ms of each other,
 * as the coordinator sees them. The coordinator sees nothing while its own
 * loop is stalled (SIGSTOP, a frozen virtual machine, a slow host, a long
 * callback): the heartbeats wait in its socket. Silence during such a stall
 * says nothing about the nodes, so a stall longer than a fraction of the
 * lease (COORD_STALL_LEASE_DIV) gives every live node a lease of grace from
 * the moment the loop runs again, as a restarted coordinator does
 * (coord_db.c). A node that really died meanwhile loses its segments one
 * lease later; correctness never depended on the lease (the database's
 * epoch fence refuses a stale owner's writes), only availability does.
 *
 * Pure: values in, decisions out; no libuv, libpq or nanomsg (the daemon's
 * timer calls it, coord.c; test_coord_lease drives it).
 */
#ifndef ESC_COORD_LEASE_H
#define ESC_COORD_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord_cat.h"

/* A loop stall longer than lease_ms / COORD_STALL_LEASE_DIV grants grace:
 * a quarter of the lease is several heartbeats (the coordinator tells the
 * nodes heartbeat_ms < lease_ms), far more than a busy loop turn. */
#define COORD_STALL_LEASE_DIV 4

/* How long the loop was stalled, in microseconds: the time between two runs
 * of a timer due every every_ms, beyond every_ms. prev_us 0 (the first run)
 * or a clock that went backwards: 0. */
int64_t coord_lease_stall_us(int64_t prev_us, int64_t now_us, uint32_t every_ms);

/* True if a stall of stall_us is long enough to grant every node grace. */
bool coord_lease_stalled(int64_t stall_us, uint32_t lease_ms);

/* True if node n missed its lease at now_us (monotonic). */
bool coord_lease_missed(const coord_node *n, int64_t now_us, uint32_t lease_ms);

/* A lease of grace: every live node of cat counts as heard at now_us.
 * Returns how many nodes it extended. Dead nodes stay dead: their segments
 * were already revoked. */
size_t coord_lease_grace(coord_cat *cat, int64_t now_us);

#endif
