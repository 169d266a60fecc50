/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hist.h - a fixed-size log-linear latency histogram for escrow-load and
 * escrow-bench.
 *
 * Values (microseconds) land in one of HIST_BUCKETS buckets: exact below
 * 32, then 32 buckets per power of two (about 3% relative error). Memory is
 * constant (15 KiB) however many samples a run records, so a run of a
 * hundred million buyers costs no more than one of ten.
 */
#ifndef ESC_TOOLS_HIST_H
#define ESC_TOOLS_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

typedef struct hist {
    uint64_t counts[HIST_BUCKETS];
    uint64_t n;
} hist;

void hist_init(hist *h);
void hist_add(hist *h, uint64_t value);
/* The value at quantile q (0 < q <= 1), as the middle of its bucket; 0 for
 * an empty histogram. */
uint64_t hist_quantile(const hist *h, double q);

#endif
