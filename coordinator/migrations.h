/*
 * migrations.h - the schema migrations embedded in the binary.
 *
 * coordinator/migrations/NNNN_name.sql are read at build time, in name order,
 * by embed_migrations.cmake into a generated C file in the build tree. The
 * table is ordered by strictly increasing version; each sql is NUL-terminated
 * and may hold many statements (it is sent with the simple query protocol).
 */
#ifndef COORD_MIGRATIONS_H
#define COORD_MIGRATIONS_H

#include <stddef.h>

typedef struct coord_migration {
    int version;      /* NNNN of the file name */
    const char *name; /* "0001_init": the file name without .sql */
    const char *sql;  /* static, NUL-terminated */
    size_t sql_len;   /* bytes, without the NUL */
} coord_migration;

extern const coord_migration coord_migrations[];
extern const size_t coord_migrations_count;

#endif
