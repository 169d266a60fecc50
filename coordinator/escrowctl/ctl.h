/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl.h - escrowctl's dispatcher: runs one parsed command.
 *
 * Database commands: opens the connection named by the arguments, runs the
 * command, closes the connection. Coordinator commands (ctl_opts_is_admin):
 * one round trip to the coordinator, no database. Either way the outcome
 * becomes the process exit code (ctl_exit_code). escrowctl.c only parses argv and
 * calls ctl_run.
 */
#ifndef CTL_H
#define CTL_H

#include <stdio.h>

#include "ctl_opts.h"

/* a and out are borrowed; a was filled by ctl_opts_parse and a->help is
 * false. Errors go to stderr as sentences. Returns CTL_EXIT_* (ctl_exit.h). */
int ctl_run(const ctl_args *a, FILE *out);

#endif
