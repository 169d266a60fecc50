/*
 * log.h - leveled logging for the daemons and tools (not for libescrow,
 * which logs only through its host's callback).
 *
 * ESC_LOG checks the level before it formats. Lines are
 *   2026-12-01T02:19:10.123Z WARN SEG-COMMIT item=... seg=... message
 * with a stable message id so operators can grep and alert on it.
 */
#ifndef ESC_LOG_H
#define ESC_LOG_H

#include <stdlib.h>

#include "esc_assert.h" /* ESC_ASSERT, for every user of the log */

enum esc_log_level { ESC_LOG_ERROR = 0, ESC_LOG_WARN, ESC_LOG_INFO, ESC_LOG_DEBUG };

extern int esc_log_level_current;

void esc_log_set_level(int level);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int esc_log_level_parse(const char *name);
void esc_log_write(int level, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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
