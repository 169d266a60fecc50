/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow_errors.h - the one table of escrow error codes.
 *
 * Every function in escrow returns 0 or a negative ESC_E* code from this
 * table; the same numbers travel on the wire (Reply.status). The table
 * generates the enum, esc_err_name() and esc_strerror(). It is part of the
 * public client API: installed beside escrow.h, which includes it, and
 * self-contained, so a code, once published, keeps its number forever.
 *
 * The first group are answers, not failures: "sold out" and "someone was
 * faster" are different messages and deserve different buttons.
 */
#ifndef ESCROW_ERRORS_H
#define ESCROW_ERRORS_H

/* ESC_EXPORT marks the client API: libescrow.so exports what it marks and
 * nothing else (everything escrow compiles is hidden by default). */
#ifndef ESC_EXPORT
#if defined(__GNUC__) || defined(__clang__)
#define ESC_EXPORT __attribute__((visibility("default")))
#else
#define ESC_EXPORT
#endif
#endif

#define ESC_ERROR_TABLE(X)                                                                         \
    X(SOLD_OUT, -1, "sold out: nothing is left and nothing held could come back")                  \
    X(TRY_LATER, -2, "all remaining units are held by other buyers; some may come back")           \
    X(SEGMENT_EMPTY, -3, "this segment is dry but the item is not; try another segment")           \
    X(EXPIRED, -4, "the hold expired before it was used")                                          \
    X(NOT_HELD, -5, "the hold is no longer held (it was converted, cancelled or expired)")         \
    X(IDEMPOTENCY_MISMATCH, -6, "this idempotency key was used with different parameters")         \
    X(BUYER_LIMIT, -7, "the buyer has reached the per-buyer maximum for this item")                \
    X(ORDER_LIMIT, -8, "the quantity exceeds the per-order maximum for this item")                 \
    X(ALREADY_EXTENDED, -9, "the hold was already extended once")                                  \
    X(NOT_FOUND, -10, "no such hold")                                                              \
    X(UNKNOWN_TENANT, -11, "unknown tenant")                                                       \
    X(UNKNOWN_ITEM, -12, "unknown item")                                                           \
    X(NOT_OWNER, -13, "this node does not own that segment (stale routing)")                       \
    X(FENCED, -14, "the segment was taken over by a newer owner; nothing was written")             \
    X(PAUSED, -15, "sales of this item are paused")                                                \
    X(INVAL, -16, "invalid argument")                                                              \
    X(TOOBIG, -17, "message or field exceeds its maximum size")                                    \
    X(PROTO, -18, "malformed or unsupported protocol message")                                     \
    X(UNAVAILABLE, -19, "storage is unavailable; nothing was written, retry with the same key")    \
    X(TIMEDOUT, -20,                                                                               \
      "the deadline passed before an answer arrived; outcome unknown, retry "                      \
      "with the same key")                                                                         \
    X(NOMEM, -21, "out of memory")                                                                 \
    X(IO, -22, "input/output or transport error")                                                  \
    X(INTERNAL, -23, "internal error")                                                             \
    X(BUSY, -24, "the node is overloaded; retry with the same key")                                \
    X(CLOSED, -25, "the client or server is shutting down")                                        \
    X(DB, -26, "database error")                                                                   \
    X(CONFIG, -27, "invalid configuration")                                                        \
    X(AUTH, -28, "credentials missing or not valid for this tenant")                               \
    X(CONFLICT, -29, "the request conflicts with the current state")                               \
    X(CART_ENDED, -30,                                                                             \
      "a hold of this cart key was already sold or released; start again with a new cart key")

enum esc_err {
    ESC_OK = 0,
#define ESC_ERR_ENUM_(name, code, msg) ESC_E##name = (code),
    ESC_ERROR_TABLE(ESC_ERR_ENUM_)
#undef ESC_ERR_ENUM_
        ESC_E_LAST_ = -31
};

/* "SOLD_OUT" for ESC_ESOLD_OUT, "OK" for 0, "UNKNOWN" otherwise. Never NULL. */
ESC_EXPORT const char *esc_err_name(int err);
/* A sentence for humans. Never NULL. */
ESC_EXPORT const char *esc_strerror(int err);
/* Code for a name as printed by esc_err_name(); ESC_EINVAL when unknown. */
ESC_EXPORT int esc_err_from_name(const char *name);

#endif
