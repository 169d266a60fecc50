/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top.h - `escrowctl top`: a live view of the items and their segments
 * (like top(1)), or plain snapshots of it for scripts and pipes.
 *
 * Each sample reads one page of the matching items from PostgreSQL
 * (ctl_top_db.h) and the page's counters from the owners (ctl_top_stats.h);
 * rates come from two samples (ctl_top_snap.h); the rows are laid out by
 * ctl_top_layout.h and drawn by ctl_top_term.h (live) or printed by
 * ctl_top_print.h (plain text or JSON lines). The options are
 * ctl_top_opts.h.
 *
 * Live: refreshes every --interval-ms, pages with n/p (ctl_top_pager.h),
 * follows the terminal's size, quits on q or Ctrl-C and leaves the
 * terminal as it found it. Plain (stdout not a terminal, --once, --batch,
 * --json): a first sample, then one printed snapshot per interval, so even
 * the first printed one has rates.
 */
#ifndef CTL_TOP_H
#define CTL_TOP_H

#include <stdio.h>

#include "ctl_opts.h"

/* Runs `escrowctl top` with argv[0..argc) (the program name skipped, the
 * word "top" among them; --credential already taken out). env and out are
 * borrowed. Returns an exit code (CTL_EXIT_*, ctl_exit.h). */
int ctl_top_main(int argc, char *const argv[], const ctl_env *env, FILE *out);

#endif
