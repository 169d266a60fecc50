/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_term.h - `escrowctl top`'s terminal and signals: the only part of
 * top that knows about termios, ANSI escape sequences and signal handlers.
 *
 * The live view takes the terminal over (ctl_top_term_open: no echo, keys
 * without Enter, the alternate screen, no cursor) and gives it back as it
 * found it (ctl_top_term_close), also after Ctrl-C, SIGTERM or a stop
 * (Ctrl-Z: the terminal is restored while stopped and taken again on
 * SIGCONT). Frames are drawn in place (cursor home, each line cleared to
 * its end), so nothing flickers and nothing scrolls.
 *
 * The signal flags serve plain output too: SIGINT and SIGTERM end the
 * current wait, and top stops after a complete snapshot.
 */
#ifndef CTL_TOP_TERM_H
#define CTL_TOP_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ctl_top_layout.h"

/* Events a wait can end with (bits). */
enum {
    CTL_TOP_EV_TIMEOUT = 1, /* the interval ran out */
    CTL_TOP_EV_KEYS = 2,    /* keys were read */
    CTL_TOP_EV_STOP = 4,    /* SIGINT or SIGTERM */
    CTL_TOP_EV_RESIZE = 8,  /* SIGWINCH, or back from a stop: draw again */
};

/* Installs the handlers of SIGINT and SIGTERM (and, for the live view,
 * SIGWINCH, SIGTSTP and SIGCONT) without SA_RESTART, so waits end early.
 * Returns 0 or ESC_EIO. */
int ctl_top_signals_install(bool live);
/* True once SIGINT or SIGTERM arrived. */
bool ctl_top_stop_requested(void);

/* Waits until deadline_us (esc_mono_us) or a signal; with keys_fd >= 0
 * also until keys arrive, read into keys[cap] (*nkeys bytes). Returns
 * CTL_TOP_EV_* bits. */
int ctl_top_wait(int keys_fd, int64_t deadline_us, char *keys, size_t cap, size_t *nkeys);

/* Takes the terminal (stdin for keys when it is one; stdout for drawing).
 * Returns 0, or ESC_EIO when stdout is not a terminal. *keys_fd is the fd
 * to read keys from, or -1 when stdin is not a terminal. */
int ctl_top_term_open(int *keys_fd);
/* Gives the terminal back (idempotent). */
void ctl_top_term_close(void);
/* The terminal's size (80 x 24 when it cannot be asked). */
void ctl_top_term_size(int *width, int *height);
/* Draws lines (borrowed) as one frame on out (the terminal); returns 0 or
 * ESC_EIO when out cannot be written. */
int ctl_top_term_draw(FILE *out, const ctl_top_lines *lines);

#endif
