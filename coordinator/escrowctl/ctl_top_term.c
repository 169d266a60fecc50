/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_term.c - see ctl_top_term.h.
 *
 * The terminal state lives in file-scope variables because signal handlers
 * must reach it; handlers only set flags, write escape sequences and call
 * tcsetattr, sigaction, sigprocmask and raise (all async-signal-safe).
 * Ctrl-Z follows the classic pattern: give the terminal back, stop for real
 * (SIGTSTP with its default action, unblocked), and take the terminal again
 * when continued.
 */
#include "ctl_top_term.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "escrow_errors.h"

/* Alternate screen and hidden cursor; their undoing. */
static const char enter_seq[] = "\033[?1049h\033[?25l\033[H\033[2J";
static const char leave_seq[] = "\033[?25h\033[?1049l";

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_resize;
static volatile sig_atomic_t g_taken; /* the terminal is ours */
static int g_keys_fd = -1;            /* the terminal's fd whose modes were changed */
static struct termios g_saved;

static void write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static void take_terminal(void)
{
    if (g_keys_fd >= 0) {
        struct termios raw = g_saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        (void)tcsetattr(g_keys_fd, TCSAFLUSH, &raw);
    }
    write_all(enter_seq, sizeof enter_seq - 1);
}

static void give_terminal(void)
{
    write_all(leave_seq, sizeof leave_seq - 1);
    if (g_keys_fd >= 0) {
        (void)tcsetattr(g_keys_fd, TCSAFLUSH, &g_saved);
    }
}

static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_winch(int sig)
{
    (void)sig;
    g_resize = 1;
}

static int set_handler(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a wait ends at once */
    return sigaction(sig, &sa, NULL) == 0 ? 0 : ESC_EIO;
}

static void on_tstp(int sig)
{
    int saved_errno = errno;
    if (g_taken) {
        give_terminal();
    }
    (void)set_handler(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTSTP);
    (void)sigprocmask(SIG_UNBLOCK, &set, NULL);
    (void)raise(SIGTSTP); /* stops here until SIGCONT */
    (void)set_handler(SIGTSTP, on_tstp);
    if (g_taken) {
        take_terminal();
    }
    g_resize = 1;
    errno = saved_errno;
}

int ctl_top_signals_install(bool live)
{
    int rc = set_handler(SIGINT, on_stop);
    rc = rc != 0 ? rc : set_handler(SIGTERM, on_stop);
    if (live) {
        rc = rc != 0 ? rc : set_handler(SIGWINCH, on_winch);
        rc = rc != 0 ? rc : set_handler(SIGTSTP, on_tstp);
    }
    return rc;
}

bool ctl_top_stop_requested(void)
{
    return g_stop != 0;
}

int ctl_top_wait(int keys_fd, int64_t deadline_us, char *keys, size_t cap, size_t *nkeys)
{
    *nkeys = 0;
    for (;;) {
        if (g_stop) {
            return CTL_TOP_EV_STOP;
        }
        if (g_resize) {
            g_resize = 0;
            return CTL_TOP_EV_RESIZE;
        }
        /* keys are looked at even when the deadline has passed: a sample
         * slower than the interval must not starve them */
        int64_t left_us = deadline_us - esc_mono_us();
        struct pollfd pfd = {.fd = keys_fd, .events = POLLIN};
        int r = poll(&pfd, keys_fd >= 0 ? 1 : 0, left_us > 0 ? (int)((left_us + 999) / 1000) : 0);
        if (r < 0 && errno != EINTR) {
            return CTL_TOP_EV_STOP; /* cannot wait: stop rather than spin */
        }
        if (r > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            ssize_t n = read(keys_fd, keys, cap);
            if (n > 0) {
                *nkeys = (size_t)n;
                return CTL_TOP_EV_KEYS;
            }
            if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                return CTL_TOP_EV_STOP; /* the terminal hung up */
            }
        }
        if (left_us <= 0 || (r == 0 && esc_mono_us() >= deadline_us)) {
            return CTL_TOP_EV_TIMEOUT;
        }
    }
}

int ctl_top_term_open(int *keys_fd)
{
    if (!isatty(STDOUT_FILENO)) {
        return ESC_EIO;
    }
    g_keys_fd = -1;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &g_saved) == 0) {
        g_keys_fd = STDIN_FILENO;
    }
    take_terminal();
    g_taken = 1;
    *keys_fd = g_keys_fd;
    return 0;
}

void ctl_top_term_close(void)
{
    if (g_taken) {
        g_taken = 0;
        give_terminal();
    }
}

void ctl_top_term_size(int *width, int *height)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *width = ws.ws_col;
        *height = ws.ws_row;
        return;
    }
    *width = 80;
    *height = 24;
}

static const char *style_of(ctl_top_line_kind kind)
{
    switch (kind) {
    case CTL_TOP_LINE_TITLE:
    case CTL_TOP_LINE_ITEM:
        return "\033[1m"; /* bold */
    case CTL_TOP_LINE_HEADER:
        return "\033[7m"; /* reverse video */
    default:
        return "";
    }
}

int ctl_top_term_draw(FILE *out, const ctl_top_lines *lines)
{
    fputs("\033[H", out);
    for (size_t i = 0; i < lines->n; i++) {
        const ctl_top_line *l = &lines->line[i];
        fprintf(out, "%s%s\033[0m\033[K%s", style_of(l->kind), l->text,
                i + 1 < lines->n ? "\r\n" : "");
    }
    fputs("\033[J", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : ESC_EIO;
}
