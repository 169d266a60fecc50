/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_exit.c - see ctl_exit.h.
 */
#include "ctl_exit.h"

#include "escrow_errors.h"

int ctl_exit_code(ctl_cmd cmd, int rc, bool violated, bool refused)
{
    if (rc == 0) {
        return violated ? CTL_EXIT_FAIL : CTL_EXIT_OK;
    }
    if (refused) {
        return CTL_EXIT_FAIL;
    }
    if (rc == ESC_ETIMEDOUT || rc == ESC_ECLOSED) {
        return CTL_EXIT_NO_ANSWER;
    }
    if (rc == ESC_EINVAL || rc == ESC_EUNAVAILABLE || cmd == CTL_CMD_CHECK) {
        return CTL_EXIT_USAGE;
    }
    return CTL_EXIT_FAIL;
}
