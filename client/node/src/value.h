/* SPDX-License-Identifier: Apache-2.0 */
/*
 * value.h - values between JavaScript and C: arguments in, holds, errors
 * and counters out. No libuv, no libescrow calls: conversions only.
 *
 * Hold ids travel as BigInt both ways: they exceed 2^53 (the segment id
 * sits in the high bits), so a JavaScript number would round them.
 * Argument readers return 0, ESC_EINVAL (a value of the right type that
 * libescrow would refuse anyway, such as an id over its byte limit: the
 * caller answers it like libescrow's own ESC_EINVAL) or NESC_THROWN (a
 * TypeError is pending: not a string, not a number, not a BigInt).
 */
#ifndef NESC_VALUE_H
#define NESC_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include <node_api.h>

#include "escrow.h"

/* A string into buf (cap bytes with the NUL). ESC_EINVAL when it has
 * cap bytes or more. */
int nesc_value_string(napi_env env, napi_value v, char *buf, size_t cap, const char *what);
/* null or undefined: *out = NULL; a string of at most max bytes: *out is a
 * copy (owned by the caller, free()); longer: ESC_EINVAL. */
int nesc_value_string_opt(napi_env env, napi_value v, size_t max, char **out, const char *what);
/* A number that is an integer (the JavaScript side checked the range). */
int nesc_value_u32(napi_env env, napi_value v, uint32_t *out, const char *what);
int nesc_value_i64(napi_env env, napi_value v, int64_t *out, const char *what);
/* A BigInt in 0..2^64-1. */
int nesc_value_hold_id(napi_env env, napi_value v, uint64_t *out);

/* The hold as a plain object { holdId, segmentId (BigInt), item, buyer,
 * qty, qtySold, state ('held', 'converted', ...), expiresAtMs, extended };
 * NULL with an exception pending. */
napi_value nesc_value_hold(napi_env env, const esc_hold *h);
/* An array of n holds; NULL with an exception pending. */
napi_value nesc_value_holds(napi_env env, const esc_hold *holds, size_t n);
/* new EscrowError(code name, status, message) from error_ctor (borrowed;
 * NULL: a plain Error with code and errno), with .hold when hold is not
 * NULL and .failedLine when failed_line < nlines. detail (NULL: none) is
 * added to the message. NULL with an exception pending. */
napi_value nesc_value_error(napi_env env, napi_ref error_ctor, int status, const char *detail,
                            const esc_hold *hold, size_t failed_line, size_t nlines);
/* The client's counters as an object of numbers. */
napi_value nesc_value_stats(napi_env env, const esc_stats *s);
/* { SOLD_OUT: -1, TRY_LATER: -2, ... }: every code esc_err_name() knows. */
napi_value nesc_value_codes(napi_env env);

#endif
