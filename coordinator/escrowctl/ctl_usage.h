/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_usage.h - escrowctl's synopsis, for --help and usage errors: every
 * command, option, default and exit code (test_ctl checks that every
 * command is mentioned).
 */
#ifndef CTL_USAGE_H
#define CTL_USAGE_H

#include <stdio.h>

/* Writes the synopsis to f (borrowed). */
void ctl_usage(FILE *f);

#endif
