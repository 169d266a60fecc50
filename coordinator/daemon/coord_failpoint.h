/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_failpoint.h - what the coordinator does when one of its failpoints
 * fires: crash tests make it exit (status FAILPOINT_EXIT_STATUS, 99) at the
 * one moment a test needs, between two steps of a protocol that must
 * survive a crash there. Whether a failpoint is set is common/failpoint.h's
 * question (the ESC_FAILPOINT_* variables, read once); this module is the
 * answer's other half, the log line and the exit, shared by the files
 * where the steps happen.
 *
 *   ESC_FAILPOINT_COORD_EXIT_AFTER_SENT=1   a segment-to-segment transfer
 *       is known to be sent, before any RECEIVE (transfer_crash.sh)
 *   ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT=1   a donor's quota 'sent'
 *       committed, before it is offered
 *   ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY=1  a receiver's receipt committed,
 *       before the answer goes out
 */
#ifndef ESC_COORD_FAILPOINT_H
#define ESC_COORD_FAILPOINT_H

#include "coord_cat.h"

/* x (borrowed) reached 'sent': exits when armed and x goes from a segment
 * to a segment. */
void coord_failpoint_xfer_sent(const coord_xfer *x);
/* A donor's quota transfer committed 'sent': exits when armed. */
void coord_failpoint_quota_sent(void);
/* A receiver's receipt committed: exits when armed. */
void coord_failpoint_quota_applied(void);

#endif
