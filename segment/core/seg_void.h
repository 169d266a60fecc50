/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_void.h - reserve attempts a node has voided, part of the segment core.
 *
 * A client that must answer "no" after some copy of its reserve went
 * unanswered first asks the segment to resolve the key (seg_core_reserve
 * with resolve set): that voids the call's attempt number here, then the
 * hold the key has, if any, is the answer. A copy of the call's frames that
 * reaches this node after the resolve (a slow link, an old connection
 * still draining through a proxy) finds its attempt void and reserves
 * nothing, so the client's "no" stays true.
 *
 * Pure: no I/O; time is a parameter. Marks are kept for ESC_VOID_MS, at
 * most ESC_VOIDS_MAX of them (esc_limits.h), oldest trimmed first.
 */
#ifndef ESC_SEG_VOID_H
#define ESC_SEG_VOID_H

#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"

typedef struct seg_void seg_void;

typedef struct seg_voids {
    hmap map;              /* seg_void by (tenant, key, attempt) */
    seg_void *head, *tail; /* oldest first; owned */
    uint32_t n;
} seg_voids;

/* Returns 0 or ESC_ENOMEM. */
int seg_voids_init(seg_voids *v);
void seg_voids_fini(seg_voids *v);
/* Voids attempt (non-zero) of key at now_ms; strings copied. Voiding twice
 * is a no-op. Returns 0, ESC_EBUSY (ESC_VOIDS_MAX marks younger than
 * ESC_VOID_MS) or ESC_ENOMEM; nothing is changed on error. */
int seg_voids_add(seg_voids *v, const char *tenant_id, const char *key, uint64_t attempt,
                  int64_t now_ms);
/* True if that attempt of key was voided (and not trimmed yet). */
bool seg_voids_has(const seg_voids *v, const char *tenant_id, const char *key, uint64_t attempt);
/* Drops marks older than ESC_VOID_MS. */
void seg_voids_trim(seg_voids *v, int64_t now_ms);

#endif
