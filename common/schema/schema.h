/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema.h - the schema migrations embedded in the binary (escrow_schema).
 *
 * common/schema/migrations/NNNN_name.sql are read at build time, in name
 * order, by embed_migrations.cmake into a generated C file in the build tree.
 * The table is ordered by strictly increasing version; each sql is
 * NUL-terminated and may hold many statements (it is sent with the simple
 * query protocol). `escrowctl migrate` applies them (ctl_migrate.h).
 */
#ifndef ESC_SCHEMA_H
#define ESC_SCHEMA_H

#include <stddef.h>

typedef struct schema_migration {
    int version;      /* NNNN of the file name */
    const char *name; /* "0001_init": the file name without .sql */
    const char *sql;  /* static, NUL-terminated */
    size_t sql_len;   /* bytes, without the NUL */
} schema_migration;

extern const schema_migration schema_embedded[];
extern const size_t schema_embedded_count;

#endif
