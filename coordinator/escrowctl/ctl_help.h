/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_help.h - `escrowctl --help` and `escrowctl COMMAND --help`.
 *
 * The whole synopsis is ctl_usage() followed by ctl_auth_usage(); the help
 * of one command is that synopsis's entries for it (an entry is a line
 * "  WORD [WORD] ARGS..." and the more indented lines under it), each under
 * its section's heading, so the two never disagree. Pure: no libpq, no
 * I/O but the FILE written to (tests/unit/test_ctl.c).
 */
#ifndef CTL_HELP_H
#define CTL_HELP_H

#include <stdbool.h>
#include <stdio.h>

/* Command words a help request may name ("item create"). */
#define CTL_HELP_WORDS_MAX 2

/* True if argv (argv[0] skipped; borrowed) asks for help: --help or -h
 * before any "--". Then words[0..*nwords) are the command words given
 * (option values skipped; borrowed from argv). */
bool ctl_help_wanted(int argc, char *const argv[], const char *words[CTL_HELP_WORDS_MAX],
                     int *nwords);

/* Writes the help for the command named by words[0..nwords) to f (every
 * command when nwords is 0). Returns 0, or -1 with nothing written when no
 * command starts with those words. */
int ctl_help(FILE *f, const char *const *words, int nwords);

#endif
