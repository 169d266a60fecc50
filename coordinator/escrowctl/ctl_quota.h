/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_quota.h - the arithmetic of global items in escrowctl: how `item
 * create --global` splits a global total into regional quotas, and the
 * `--quota eu=600,us=400` list.
 *
 * Pure: no libpq, no I/O, so every branch is unit-tested
 * (tests/unit/test_ctl.c). The split is deterministic: the same total,
 * shares and region names give the same quotas on every run, which is what
 * makes a re-run of an interrupted `item create --global` complete the same
 * item instead of creating a different one in the regions that were missing.
 */
#ifndef CTL_QUOTA_H
#define CTL_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "region_cfg.h"

/* Regions one command can name (--config files, --quota entries): a region
 * and its peers. */
#define CTL_REGIONS_MAX (REGION_PEERS_MAX + 1)
/* Bytes of a --quota list: CTL_REGIONS_MAX entries of NAME=UNITS. */
#define CTL_QUOTA_LIST_LEN_MAX (CTL_REGIONS_MAX * (REGION_NAME_LEN_MAX + 12))

typedef struct ctl_quota_part {
    char region[REGION_NAME_LEN_MAX + 1];
    int64_t units;
} ctl_quota_part;

/* Splits total over n regions in proportion to shares (largest remainder):
 * region i first gets floor(total * shares[i] / sum); the units left over
 * go one each to the largest remainders, ties broken by region name
 * (strcmp, smallest first). names and shares are borrowed, n entries each;
 * names are distinct. Writes out[0..n) (adding up to total) and returns 0,
 * or returns ESC_EINVAL (n not in 1..CTL_REGIONS_MAX, a share not in
 * 1..1000, total not in 0..ESC_TOTAL_MAX) and leaves out untouched. */
int ctl_quota_split(int64_t total, size_t n, const char *const names[], const uint32_t shares[],
                    int64_t out[]);

/* Parses "eu=600,us=400" (1..CTL_REGIONS_MAX entries, distinct region
 * names of 1..REGION_NAME_LEN_MAX printable bytes, units 0..ESC_TOTAL_MAX)
 * into parts[0..*n). Returns 0, or ESC_EINVAL with a sentence in why
 * (why_len bytes; parts and *n untouched). */
int ctl_quota_parse(const char *text, ctl_quota_part parts[CTL_REGIONS_MAX], size_t *n, char *why,
                    size_t why_len);

#endif
