/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_failpoint.c - see coord_failpoint.h. Each failpoint logs a
 * COORD-FAILPOINT line and leaves with _exit: no atexit handler, no flush
 * of anything but the log line, as a crash would.
 */
#include "coord_failpoint.h"

#include <inttypes.h>
#include <unistd.h>

#include "failpoint.h"
#include "log.h"

void coord_failpoint_xfer_sent(const coord_xfer *x)
{
    if (x->from != 0 && x->to != 0 && failpoint_coord_exit_after_sent()) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_COORD_EXIT_AFTER_SENT: transfer=%" PRIu64 " from=%" PRIu64
                " to=%" PRIu64 " qty=%" PRId64 " is sent; exiting before any RECEIVE",
                x->transfer_id, x->from, x->to, x->qty);
        _exit(FAILPOINT_EXIT_STATUS);
    }
}

void coord_failpoint_quota_sent(void)
{
    if (failpoint_quota_exit_after_sent()) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT: exiting before the offer");
        _exit(FAILPOINT_EXIT_STATUS);
    }
}

void coord_failpoint_quota_applied(void)
{
    if (failpoint_quota_exit_after_apply()) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY: exiting before the answer");
        _exit(FAILPOINT_EXIT_STATUS);
    }
}
