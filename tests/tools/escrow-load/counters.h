/* SPDX-License-Identifier: Apache-2.0 */
/*
 * counters.h - escrow-load's one question to PostgreSQL: the item's stock
 * counters from the conservation view, read once after the run with
 * synchronous libpq (the load itself never touches the database).
 */
#ifndef ESC_LOAD_COUNTERS_H
#define ESC_LOAD_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct load_counters {
    int64_t total;
    int64_t available;
    int64_t held;
    int64_t sold;
    int64_t in_flight;
    int64_t unallocated;
    bool ok; /* the view's verdict: conservation holds and held + sold <= total */
} load_counters;

/* Reads (tenant_id, item_id)'s row of the conservation view through dsn (a
 * libpq conninfo). Returns 0 and *out, ESC_ENOT_FOUND if the item has no
 * row, or ESC_EDB; why (why_len bytes) says what went wrong. */
int load_counters_read(const char *dsn, const char *tenant_id, const char *item_id,
                       load_counters *out, char *why, size_t why_len);

#endif
