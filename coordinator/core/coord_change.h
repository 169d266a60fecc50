/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_change.h - when the coordinator reads its catalog again. No I/O.
 *
 * Every statement that changes the catalog's tables takes a number from a
 * sequence (catalog_change_seq, migration 0013). The daemon reads that
 * number once per poll and asks coord_change_observe whether the whole
 * catalog must be read: when the number moved since the last poll; once
 * more at the poll after it stopped moving (a transaction may have taken
 * its number before a read and committed after it); and when the last full
 * read is full_us old, the safety net that also covers a transaction open
 * longer than one poll. An unchanged catalog costs one small query per poll.
 */
#ifndef ESC_COORD_CHANGE_H
#define ESC_COORD_CHANGE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct coord_change {
    bool known;     /* seen holds a value read from the database */
    uint64_t seen;  /* the counter at the last poll */
    int quiet;      /* polls since it last moved (saturates at 2) */
    uint64_t reads; /* observations that asked for a full read */
    uint64_t skips; /* observations that did not */
} coord_change;

/* Records the counter read at this poll (value); since_full_us is the time
 * since the last full read was queued. Returns true when the catalog must
 * be read now. */
bool coord_change_observe(coord_change *s, uint64_t value, int64_t since_full_us, int64_t full_us);

#endif
