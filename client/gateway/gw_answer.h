/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_answer.h - escrow-gateway's table of answers: every ESC_E* code of
 * common/escrow_errors.h, and the few answers only the gateway gives, as
 * an HTTP status, the JSON error code a client switches on, whether a
 * retry (with the same Idempotency-Key) may succeed, and the Retry-After
 * the answer carries. Pure: no I/O.
 *
 * The statuses are the ones an HTTP client library handles by default:
 * 409 for a definite "no" of the stock (sold_out), 503 with Retry-After for
 * "not now" (try_later, busy, unavailable), 504 for "outcome unknown"
 * (timed_out: retry with the same key), 410 for an expired hold, 404, 401,
 * 403, 422 for a key reused with another body, 429 for the per-tenant rate
 * limit, 400 for bad input. docs/gateway.md prints the table.
 */
#ifndef ESC_GW_ANSWER_H
#define ESC_GW_ANSWER_H

#include <stdbool.h>
#include <stddef.h>

/* Answers of the gateway's own, numbered above every ESC_E* code (those
 * are negative) so that one int names any answer. */
enum {
    GW_ENO_ROUTE = 1001,   /* no such path: 404 */
    GW_EMETHOD = 1002,     /* the path exists, not with this method: 405 */
    GW_ETOO_LARGE = 1003,  /* the body is over --body-bytes-max: 413 */
    GW_EFORBIDDEN = 1004,  /* a valid key that is not a shop's (admin, cluster): 403 */
    GW_ERATE = 1005,       /* the tenant's rate limit: 429 */
    GW_EOVERLOADED = 1006, /* every stream or client slot in use: 503 */
};

typedef struct gw_answer {
    int err;                /* ESC_E* or GW_E* */
    unsigned http;          /* HTTP status */
    const char *code;       /* JSON "code": lowercase, stable */
    bool retryable;         /* the same request (same key) may succeed later */
    unsigned retry_after_s; /* Retry-After header; 0 = none */
    const char *sentence;   /* the message; NULL: esc_strerror(err) */
} gw_answer;

/* The row of err; never NULL: a code without a row (a newer cluster's)
 * answers 502 "unknown_answer", retryable. */
const gw_answer *gw_answer_of(int err);
/* True if err has a row of its own (not the fallback). */
bool gw_answer_known(int err);
/* The rows, for documentation and tests: *n is set to their number. */
const gw_answer *gw_answer_table(size_t *n);

#endif
