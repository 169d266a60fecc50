/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_array.h - PostgreSQL array literals: building "{1,2,3}" and
 * "{\"a\",\"b\"}" as the text of one statement parameter (unnest($1::bigint[])
 * sends a whole batch in one round trip), and reading one back.
 *
 * Text only, no I/O (pg_result.h reads the integers). One dimension,
 * elements of one kind per array. Strings are always quoted on output, with
 * '"' and '\' escaped by a backslash, so any byte string but NUL
 * round-trips; integers are written in decimal. The parser reads what
 * PostgreSQL's array output function writes for one-dimensional arrays:
 * elements quoted or not, NULL, spaces around elements.
 *
 * Memory: a builder owns its buffer and grows it as needed; out of memory
 * aborts with a log line (esc_xrealloc), as the daemons and escrowctl do.
 * Used by the segment node (its commit call's parameters, the segments it
 * loads), the coordinator (segment lists of its writes), escrowctl (item
 * create's split, check --global's second look).
 */
#ifndef ESC_PG_ARRAY_H
#define ESC_PG_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pg_array {
    char *p;    /* owned: "{" and the elements so far; NULL before the first */
    size_t len; /* bytes in p, without the closing brace */
    size_t cap;
    size_t n; /* elements */
} pg_array;

/* An empty array; nothing is allocated until the first element. */
void pg_array_init(pg_array *a);
/* Frees the buffer; a is empty again (pg_array_init state). */
void pg_array_fini(pg_array *a);
/* Empties a and keeps its buffer, for the next literal (a commit's
 * parameters are rebuilt every batch). */
void pg_array_reset(pg_array *a);

/* Appends one element. */
void pg_array_i64(pg_array *a, int64_t v);
/* s (borrowed, NUL-terminated) quoted and escaped. */
void pg_array_str(pg_array *a, const char *s);

/* The literal, "{}" when empty. Borrowed from a: valid until the next change
 * or pg_array_fini. More elements may be appended afterwards. */
const char *pg_array_text(pg_array *a);

/* ---- reading ------------------------------------------------------------ */

/* Splits a one-dimensional literal into its elements, one at a time. */
typedef struct pg_array_iter {
    const char *p; /* borrowed: the next byte to read */
    bool started;
    bool done;
} pg_array_iter;

/* Starts reading text (borrowed; it must outlive the iterator). Returns 0,
 * or ESC_EINVAL when text does not start with '{'. */
int pg_array_iter_init(pg_array_iter *it, const char *text);
/* The next element, unescaped, into buf[cap] (NUL-terminated); *is_null for
 * an unquoted NULL (buf is then ""). Returns 1 with an element, 0 after the
 * last one, or ESC_EINVAL (malformed, or an element that does not fit in
 * cap - 1 bytes). */
int pg_array_iter_next(pg_array_iter *it, char *buf, size_t cap, bool *is_null);

/* Reads a bigint[] literal into out[0..*n). Returns 0, or ESC_EINVAL for a
 * malformed literal, a NULL or non-integer element, or more than cap
 * elements; out and *n are written only on success. */
int pg_array_parse_i64(const char *text, int64_t *out, size_t cap, size_t *n);

#endif
