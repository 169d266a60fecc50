/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - leveled logging for the daemons and tools (not for libescrow,
 * which logs only through its host's callback).
 *
 * ESC_LOG checks the level before it formats. Every call names a stable
 * message id (operators grep and alert on it) and writes its context as
 * key=value words: ESC_LOG(ESC_LOG_WARN, "SEG-FENCED", "seg=%d item=%s: a
 * newer owner exists", ...). One event is one line on stderr, in one of two
 * formats (--log-format, log_line.h):
 *   text  2026-12-01T02:19:10.123Z WARN SEG-FENCED seg=4 item=t1/tee: a newer owner exists
 *   json  {"ts":"2026-12-01T02:19:10.123Z","level":"warn","id":"SEG-FENCED",
 *          "msg":"a newer owner exists","seg":"4","item":"t1/tee"}
 *
 * Repeats are rate-limited: a line identical to one written less than
 * ESC_LOG_REPEAT_MS ago (same level, id and text) is counted, not written.
 * The next time it is written (the first repeat after the window, or
 * esc_log_flush_repeats once the window passed) it carries suppressed=N,
 * the number of identical lines left out since it was last written. So a
 * database outage that fails a reconnect every 100 ms writes one line per
 * connection and window, with the count, instead of ten a second. Lines
 * that differ (another segment, another batch) are never held back.
 *
 * Thread-safe: the loop and the metrics server's thread both log; one
 * mutex guards the repeat table and the write.
 */
#ifndef ESC_LOG_H
#define ESC_LOG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "esc_assert.h" /* ESC_ASSERT, for every user of the log */

enum esc_log_level { ESC_LOG_ERROR = 0, ESC_LOG_WARN, ESC_LOG_INFO, ESC_LOG_DEBUG };
enum esc_log_format { ESC_LOG_TEXT = 0, ESC_LOG_JSON };

/* An identical line is written at most once per this window. */
#define ESC_LOG_REPEAT_MS 10000
/* Distinct lines whose repeats are tracked at once (the least recently
 * written one makes room, its count written first); ~1.1 KiB each. */
#define ESC_LOG_REPEAT_SLOTS 64

extern int esc_log_level_current;

void esc_log_set_level(int level);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int esc_log_level_parse(const char *name);
/* The level's name in lower case ("warn"); "?" when out of range. */
const char *esc_log_level_name(int level);
void esc_log_set_format(int format);
int esc_log_format_current(void);
/* "text", "json" -> format; -1 if unknown. */
int esc_log_format_parse(const char *name);
const char *esc_log_format_name(int format);

void esc_log_write(int level, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes, with their counts, the lines whose repeats were left out and
 * whose window has passed. The daemons call it every second
 * (daemon.h), so a count is never lost when the repeats stop. */
void esc_log_flush_repeats(void);

/* For tests: where lines go (NULL: stderr) and the clock of the repeat
 * windows (NULL: the monotonic clock, ms). Both also reset the repeat
 * table. */
void esc_log_set_sink(FILE *f);
void esc_log_set_clock(int64_t (*now_ms)(void));

#define ESC_LOG(level, id, ...)                                                                    \
    do {                                                                                           \
        if ((level) <= esc_log_level_current) {                                                    \
            esc_log_write((level), (id), __VA_ARGS__);                                             \
        }                                                                                          \
    } while (0)

/* Daemons abort with a log line on out-of-memory; libescrow never does
 * (it returns ESC_ENOMEM). */
void *esc_xmalloc(size_t n);
void *esc_xcalloc(size_t n, size_t size);
void *esc_xrealloc(void *p, size_t n);
char *esc_xstrdup(const char *s);

#endif
