/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_json.h - a small streaming JSON writer for escrowctl --json.
 *
 * Pure (writes to a FILE, no libpq), so the escaping is unit-tested. It
 * tracks commas per nesting level; the nesting depth is bounded and going
 * past it, or closing more than was opened, is a programmer error
 * (ESC_ASSERT). Keys are NULL inside arrays and at the top level.
 */
#ifndef CTL_JSON_H
#define CTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_JSON_DEPTH_MAX 8

typedef struct ctl_json {
    FILE *f; /* borrowed */
    int depth;
    bool need_comma[CTL_JSON_DEPTH_MAX + 1];
} ctl_json;

void ctl_json_init(ctl_json *j, FILE *f);
void ctl_json_begin_obj(ctl_json *j, const char *key);
void ctl_json_end_obj(ctl_json *j);
void ctl_json_begin_arr(ctl_json *j, const char *key);
void ctl_json_end_arr(ctl_json *j);
/* A string value; NULL writes null. Control bytes are escaped as \u00XX,
 * other bytes are copied (PostgreSQL sends UTF-8). */
void ctl_json_str(ctl_json *j, const char *key, const char *val);
/* A number given as decimal text (as PostgreSQL prints bigint). NULL writes
 * null; text that is not an integer is written as a string. */
void ctl_json_num(ctl_json *j, const char *key, const char *text);
void ctl_json_i64(ctl_json *j, const char *key, int64_t v);
/* A number with the given decimals (0..17); NaN and infinities write null. */
void ctl_json_f64(ctl_json *j, const char *key, double v, int decimals);
void ctl_json_bool(ctl_json *j, const char *key, bool v);
/* Ends the document with a newline; the depth must be back to 0. */
void ctl_json_finish(ctl_json *j);

#endif
