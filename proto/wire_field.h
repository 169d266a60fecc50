/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_field.h - proto/'s own field rules, shared by its files (wire_request.c,
 * wire_cluster.c, wire_reply.c, wire_route.c); not for use outside proto/,
 * whose contract is wire.h (which also declares the public rules:
 * wire_id_valid, wire_ttl_valid, wire_hold_id_valid, wire_reserve_hash).
 *
 * Every check that refuses a field writes one sentence into why (when why is
 * not NULL) and returns the error code: the error reply quotes the sentence.
 */
#ifndef ESC_WIRE_FIELD_H
#define ESC_WIRE_FIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Writes msg into why (NULL: nowhere) and returns rc. */
int wire_why(char why[WIRE_WHY_MAX], int rc, const char *msg);

/* Copies the identifier src (borrowed, may be NULL) into dst (room for max
 * bytes and a NUL) when it is 1..max bytes of printable ASCII. Returns 0, or
 * ESC_EINVAL (missing, not printable) / ESC_ETOOBIG (longer than max) with a
 * sentence naming field. dst is written only on success. */
int wire_copy_id(char *dst, size_t max, const char *src, char why[WIRE_WHY_MAX], const char *field);

/* Copies at most max bytes of src (NULL = "") into dst and terminates it:
 * for strings that decoding has already bounded or that need no check. */
void wire_copy_str(char *dst, size_t max, const char *src);

/* wire_ttl_valid / wire_hold_id_valid with a sentence: 0 or ESC_EINVAL. */
int wire_check_ttl(uint32_t ttl_ms, char why[WIRE_WHY_MAX]);
int wire_check_hold_id(uint64_t hold_id, char why[WIRE_WHY_MAX]);

/* 1..ESC_SEGMENT_ID_MAX. */
bool wire_segment_id_valid(uint64_t id);
/* A node's endpoint: 1..ESC_ENDPOINT_LEN_MAX printable bytes. */
bool wire_endpoint_valid(const char *s);
/* A region's name: 1..ESC_REGION_LEN_MAX printable bytes (NULL: invalid). */
bool wire_region_valid(const char *s);

#endif
