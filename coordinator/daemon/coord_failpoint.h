/*
 * coord_failpoint.h - the coordinator's failpoints: crash tests make it exit
 * (status 99) at the one moment a test needs, between two steps of a
 * protocol that must survive a crash there.
 *
 *   ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1   the first time a segment-to-segment
 *                                           transfer is known to be sent, before
 *                                           any RECEIVE (transfer_crash.sh)
 *   ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT=1   right after a donor's quota 'sent'
 *                                           committed, before it is offered
 *   ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY=1  right after a receiver's receipt
 *                                           committed, before the answer goes out
 *
 * The environment is read in one place, coord_failpoint_read, once, by
 * escrow-coordinator.c's main; the modules only test the flags it filled.
 */
#ifndef ESC_COORD_FAILPOINT_H
#define ESC_COORD_FAILPOINT_H

#include <stdbool.h>

#include "coord_cat.h"

typedef struct coord_failpoints {
    bool xfer_exit_after_sent;   /* ESC_FAILPOINT_COORD_EXIT_AFTER_SENT */
    bool quota_exit_after_sent;  /* ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT */
    bool quota_exit_after_apply; /* ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY */
} coord_failpoints;

/* Fills *fp from the environment ("1" arms a failpoint). */
void coord_failpoint_read(coord_failpoints *fp);

/* x (borrowed) reached 'sent': exits (99) when armed and x goes from a
 * segment to a segment. */
void coord_failpoint_xfer_sent(const coord_failpoints *fp, const coord_xfer *x);
/* A donor's quota transfer committed 'sent': exits (99) when armed. */
void coord_failpoint_quota_sent(const coord_failpoints *fp);
/* A receiver's receipt committed: exits (99) when armed. */
void coord_failpoint_quota_applied(const coord_failpoints *fp);

#endif
