/* SPDX-License-Identifier: Apache-2.0 */
/*
 * failpoint.h - every failpoint of escrow's daemons and escrowctl, in one
 * place: the crash and loss points the integration tests and the chaos
 * suite set through the environment. In production none is set.
 *
 * Each failpoint's variable is read once, on the first check of it (or
 * when a daemon validates it at start with failpoint_load), and kept for
 * the life of the process. The random ones draw from rand() only when the
 * failpoint is set, so an unset failpoint changes nothing, not even the
 * rand() sequence. What a failpoint does when it fires (exit 99, drop a
 * connection, kill the process) stays with the code at that point: this
 * module only answers "fire here?".
 *
 *   ESC_FAILPOINT_COMMIT_LOST_PCT=N      segment node: N % of committed
 *       batches lose their reply with the connection (reconciliation runs)
 *   ESC_FAILPOINT_NODE_EXIT=WHERE[:PCT]  segment node: exit at WHERE in PCT %
 *       (default 100) of the batches: before-commit, after-commit, after-give
 *   ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1   coordinator: exit once a
 *       segment-to-segment transfer is known to be sent
 *   ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT=1   coordinator: exit right after a
 *       quota offer to a peer region is recorded as sent
 *   ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY=1  coordinator: exit right after a
 *       receiving region applied a quota, before it answers
 *   ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT=1  coordinator: exit right after a
 *       global restock or reduce committed, before it answers or sends
 *   ESC_FAILPOINT_COORD_IGNORE_LEASE=1   coordinator: serve as if its leader
 *       lease always held (no check by its own clock, a renewal that finds
 *       another epoch only logged): only the database's fence is left
 *   ESC_FAILPOINT_FOLLOW_CRASH_BATCH=N   escrowctl events --follow: die
 *       after printing the Nth batch, before committing its cursor (0 = off)
 */
#ifndef ESC_FAILPOINT_H
#define ESC_FAILPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum failpoint_id {
    FAILPOINT_COMMIT_LOST_PCT = 0,
    FAILPOINT_NODE_EXIT,
    FAILPOINT_COORD_EXIT_AFTER_SENT,
    FAILPOINT_QUOTA_EXIT_AFTER_SENT,
    FAILPOINT_QUOTA_EXIT_AFTER_APPLY,
    FAILPOINT_FOLLOW_CRASH_BATCH,
    FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT,
    FAILPOINT_COORD_IGNORE_LEASE,
    FAILPOINT_COUNT
} failpoint_id;

/* Where ESC_FAILPOINT_NODE_EXIT fires. */
typedef enum failpoint_where {
    FAILPOINT_NOWHERE = 0,
    FAILPOINT_BEFORE_COMMIT, /* the batch never reaches PostgreSQL */
    FAILPOINT_AFTER_COMMIT,  /* committed, nobody answered */
    FAILPOINT_AFTER_GIVE,    /* a batch that gave units to a transfer committed */
} failpoint_where;

/* The exit status of a process a failpoint ended. */
#define FAILPOINT_EXIT_STATUS 99

/* Reads id's variable now unless it was read before. Returns 0, or
 * ESC_EINVAL with why (NUL-terminated, names the variable and what it
 * takes) when it is set but malformed; the failpoint stays off then. A
 * daemon calls it at start for its own failpoints, to refuse a bad value
 * before it opens anything. */
int failpoint_load(failpoint_id id, char *why, size_t why_len);

/* ESC_FAILPOINT_COMMIT_LOST_PCT: true in N % of the calls. */
bool failpoint_commit_lost(void);
/* ESC_FAILPOINT_NODE_EXIT: true when it names where, in PCT % of those calls. */
bool failpoint_node_exit(failpoint_where where);
/* "before-commit" ...; "" for FAILPOINT_NOWHERE. */
const char *failpoint_where_name(failpoint_where where);
/* The =1 failpoints of the coordinator. */
bool failpoint_coord_exit_after_sent(void);
bool failpoint_quota_exit_after_sent(void);
bool failpoint_quota_exit_after_apply(void);
bool failpoint_global_exit_after_commit(void);
/* ESC_FAILPOINT_COORD_IGNORE_LEASE=1: the coordinator serves as if its
 * leader lease always held (the fencing test: only the database's fence
 * stops a deposed leader's writes). */
bool failpoint_coord_ignore_lease(void);
/* ESC_FAILPOINT_FOLLOW_CRASH_BATCH: the batch to die after; 0 = off. */
int64_t failpoint_follow_crash_batch(void);

#endif
