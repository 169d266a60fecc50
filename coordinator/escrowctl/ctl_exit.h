/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_exit.h - escrowctl's exit codes, the contract with the scripts that
 * run it:
 *   0  done (for check: no violation)
 *   1  failed: refused by the coordinator or the node (unknown item, retired
 *      item, nothing to release...), not found, or check found a violation
 *   2  usage or database connection error: nothing was done
 *   3  no answer: the coordinator (or the node owning a hold) did not answer
 *      within the timeout or is down. Nothing was done if nothing could be
 *      sent; otherwise the outcome is unknown (look with status first).
 * Pure, unit-tested (tests/unit/test_ctl.c).
 */
#ifndef CTL_EXIT_H
#define CTL_EXIT_H

#include <stdbool.h>

#include "ctl_opts.h"

enum { CTL_EXIT_OK = 0, CTL_EXIT_FAIL = 1, CTL_EXIT_USAGE = 2, CTL_EXIT_NO_ANSWER = 3 };

/* Exit code for a command's result: rc is 0 or ESC_E*; violated is check's
 * verdict; refused is set when the coordinator or a node answered with an
 * error (whatever its code: the request was understood and declined -> 1).
 * Local usage and database connection errors are 2, and so is "check cannot
 * judge"; ESC_ETIMEDOUT (no answer in time) and ESC_ECLOSED (the node that
 * must act is down) are 3. */
int ctl_exit_code(ctl_cmd cmd, int rc, bool violated, bool refused);

#endif
