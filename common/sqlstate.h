/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sqlstate.h - the SQLSTATEs escrow's daemons and tools act on, by name.
 *
 * PostgreSQL reports an error's class as a five-character SQLSTATE
 * (pgx_err.sqlstate keeps it, pgx.h). Code compares against these names,
 * never against literals, so a reader sees what a branch is about and a
 * grep finds every place that handles one. Escrow's own codes (class ES)
 * are raised by the storage functions (escrow_commit_batch); their
 * meaning is the contract between those functions and the node.
 */
#ifndef ESC_SQLSTATE_H
#define ESC_SQLSTATE_H

#include <stdbool.h>
#include <string.h>

/* escrow_commit_batch: a segment of the batch has a newer epoch (another
 * owner) or was retired: the epoch fence refused the whole batch. */
#define SQLSTATE_ESC_FENCED "ES001"
/* escrow_commit_batch: a hold's state in the batch is not the one on
 * record (memory and database diverged): the whole batch is refused. */
#define SQLSTATE_ESC_HOLD_DIVERGED "ES002"
/* escrow_commit_batch: a transfer row names a segment outside the batch. */
#define SQLSTATE_ESC_XFER_OUTSIDE "ES003"
/* A coordinator's write while another coordinator leads (coord_leader,
 * migration 0014): the statement is refused. */
#define SQLSTATE_ESC_NOT_LEADER "ES004"

/* PostgreSQL's (Appendix A, "PostgreSQL Error Codes"). */
#define SQLSTATE_UNIQUE_VIOLATION "23505"
#define SQLSTATE_CHECK_VIOLATION "23514"
#define SQLSTATE_SERIALIZATION_FAILURE "40001"
#define SQLSTATE_DEADLOCK_DETECTED "40P01"
#define SQLSTATE_UNDEFINED_TABLE "42P01"
#define SQLSTATE_UNDEFINED_FUNCTION "42883"

/* True if sqlstate (as pgx_err keeps it; "" when none) is code. */
static inline bool sqlstate_is(const char *sqlstate, const char *code)
{
    return strcmp(sqlstate, code) == 0;
}

#endif
