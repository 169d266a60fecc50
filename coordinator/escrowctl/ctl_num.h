/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_num.h - escrowctl's numbers: strict integers from the command line
 * and the environment, the even split of a total over segments, and
 * durations in sentences.
 *
 * Pure: no libpq, no I/O, unit-tested (tests/unit/test_ctl.c).
 */
#ifndef CTL_NUM_H
#define CTL_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Strict decimal integer in [min, max]: no sign games, no spaces, no
 * trailing bytes. Returns 0 and *out, or ESC_EINVAL. */
int ctl_num_parse(const char *s, int64_t min, int64_t max, int64_t *out);

/* Units given to segment seg_no when total is split over segments: an even
 * split, the remainder spread one unit each over the first segments. The
 * splits of seg_no 0..segments-1 add up to total. */
int64_t ctl_num_split(int64_t total, int segments, int seg_no);

/* "3 s" or "250 ms", for sentences about timeouts. */
void ctl_num_format_ms(int ms, char *buf, size_t cap);

#endif
