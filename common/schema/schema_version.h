/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema_version.h - which database schema a binary runs on, and the
 * rule the daemons apply at every connection to PostgreSQL.
 *
 * A schema's version is the highest migration applied
 * (schema_migrations.version, written by `escrowctl migrate`); a binary's
 * is the highest migration it embeds (schema.h). The rule, one version of
 * compatibility:
 *
 *   database == binary       runs
 *   database == binary + 1   runs: the database was migrated first and
 *                            this daemon is of the previous release (a
 *                            rolling upgrade, or a rollback of one node);
 *                            a migration never breaks the release before
 *                            it (docs/upgrading.md: add, never drop or
 *                            change what the previous release uses)
 *   database <  binary       refused: run `escrowctl migrate` first
 *   database >  binary + 1   refused: this binary is too old
 *
 * A daemon refuses by logging schema_version_message's sentence (it names
 * both versions and `escrowctl migrate`) and stopping with exit status 1.
 * Pure but for reading a PGresult; the blocking check is for the start of
 * a static node and for escrowctl.
 */
#ifndef ESC_SCHEMA_VERSION_H
#define ESC_SCHEMA_VERSION_H

#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

/* The database's version: 0 when schema_migrations is empty. A database
 * without the table answers SQLSTATE 42P01 (undefined_table): version 0. */
#define SCHEMA_VERSION_SQL                                                                         \
    "/* escrow:schema-version */ SELECT coalesce(max(version), 0) FROM schema_migrations"
#define SCHEMA_SQLSTATE_NO_TABLE "42P01"

typedef enum schema_verdict {
    SCHEMA_SAME = 0, /* runs */
    SCHEMA_NEXT,     /* runs: the database is one version ahead */
    SCHEMA_OLDER,    /* refused: migrate first */
    SCHEMA_TOO_NEW,  /* refused: the binary is too old */
} schema_verdict;

/* This binary's version: its newest embedded migration. */
int schema_version_binary(void);

/* The rule above. */
schema_verdict schema_version_compat(int db, int bin);
static inline bool schema_version_runs(schema_verdict v)
{
    return v == SCHEMA_SAME || v == SCHEMA_NEXT;
}

/* One sentence for the verdict, naming prog ("escrow-segment"), both
 * versions and, for a refusal, what to run. */
void schema_version_message(schema_verdict v, int db, int bin, const char *prog, char *out,
                            size_t cap);

/* The version from SCHEMA_VERSION_SQL's result res, or from the SQLSTATE
 * of its error (sqlstate, "" when none; res NULL then). Returns 0 and
 * *version, or -1 when neither says (another error, a malformed row). */
int schema_version_read(const PGresult *res, const char *sqlstate, int *version);

/* Blocking: runs SCHEMA_VERSION_SQL on conn. Returns 0 and *version, or -1
 * with the server's message in why. */
int schema_version_query(PGconn *conn, int *version, char *why, size_t why_len);

#endif
