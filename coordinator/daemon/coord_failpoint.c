/*
 * coord_failpoint.c - see coord_failpoint.h. Each failpoint logs a
 * COORD-FAILPOINT line and leaves with _exit(99): no atexit handler, no
 * flush of anything but the log line, as a crash would.
 */
#include "coord_failpoint.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && strcmp(v, "1") == 0;
}

void coord_failpoint_read(coord_failpoints *fp)
{
    fp->xfer_exit_after_sent = env_on("ESC_FAILPOINT_COORD_EXIT_AFTER_SENT");
    fp->quota_exit_after_sent = env_on("ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT");
    fp->quota_exit_after_apply = env_on("ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY");
}

void coord_failpoint_xfer_sent(const coord_failpoints *fp, const coord_xfer *x)
{
    if (x->from != 0 && x->to != 0 && fp->xfer_exit_after_sent) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_COORD_EXIT_AFTER_SENT: transfer=%" PRIu64 " from=%" PRIu64
                " to=%" PRIu64 " qty=%" PRId64 " is sent; exiting before any RECEIVE",
                x->transfer_id, x->from, x->to, x->qty);
        _exit(99);
    }
}

void coord_failpoint_quota_sent(const coord_failpoints *fp)
{
    if (fp->quota_exit_after_sent) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT: exiting before the offer");
        _exit(99);
    }
}

void coord_failpoint_quota_applied(const coord_failpoints *fp)
{
    if (fp->quota_exit_after_apply) {
        ESC_LOG(ESC_LOG_WARN, "COORD-FAILPOINT",
                "ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY: exiting before the answer");
        _exit(99);
    }
}
